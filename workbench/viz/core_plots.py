"""Multi-core figures: a layer's speed-up over the cores per split, the K-vs-XY comparison per
layer (bus traffic and cycles, DMA broadcast off and on), and the split and cores chosen per
layer, coloured compute- or I/O-bound.

The "data" functions reshape `explore.cores` tables (`split_options`, `network_cores`, or
`ui.split_comparison`) into ColumnDataSource dicts; the figure factories draw given sources, so
an app updates them in place. Nothing here computes a model number: traffic is shown in
millions of elements, and the ideal line is speed-up = cores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import (
    CategoricalPatternMapper,
    ColumnDataSource,
    FactorRange,
    LabelSet,
    Range1d,
)
from bokeh.plotting import figure
from bokeh.transform import factor_cmap

from workbench.tiling.partition import SPLITS
from workbench.viz.common import CHAR_PX, LABEL_PITCH_PX, TOOLS, apply_labels, hover
from workbench.viz.units import fmt_tile, human_axes, readable

SPLIT_COLORS = {"oc": "#1f77b4", "xy": "#ff7f0e", "on": "#2ca02c", "g": "#9467bd"}
SPLIT_NAMES = {"oc": "K (output maps)", "xy": "XY (image rows)", "on": "N (batch)",
               "g": "G (groups)"}
SPLIT_SHORT = {"oc": "K", "xy": "XY", "on": "N", "g": "G"}
BOUND_COLORS = {"compute": "#2ca02c", "I/O": "#d62728"}
ARRAY_COLORS = {"in": "#4c72b0", "w": "#dd8452", "out": "#55a868"}
SPEEDUP_COLUMNS = ("cores", "speedup", "cycles", "traffic_m", "bound", "schedule")
CHOSEN_COLUMNS = ("layer", "cores", "split", "split_name", "label", "bound", "cycles",
                  "speedup", "traffic_m", "schedule")
COMPARISON_VARIANTS = (("oc", False), ("oc", True), ("xy", False), ("xy", True))
COMPARISON_COLUMNS = ("x", "layer", "variant", "split", "broadcast", "cores", "cycles",
                      "traffic_m", "in", "w", "out", "cycles_rel", "traffic_rel", "in_rel",
                      "w_rel", "out_rel", "bound", "color", "missing")
COMPARISON_WIDTH, COMPARISON_HEIGHT = 860, 330  # px: the comparison figures for a few layers
COMPARISON_MARGIN_PX = 170  # px of a comparison figure besides its bars (axis, legend)
BAR_PX = LABEL_PITCH_PX + 3  # px a comparison bar keeps: its turned variant label readable


def variant_label(split: str, broadcast: bool) -> str:
    """'K · bcast off', 'XY · bcast on', …: one bar of the comparison."""
    return f"{SPLIT_SHORT[split]} · bcast {'on' if broadcast else 'off'}"


def shares_text(shares) -> str:
    """A split's shares in words: '8 × inter_kc 9×27×11×1×8; 4 × inter_kc 9×27×10×1×8'
    (cores × schedule and tile TOx×TOy×TOc×TOn×TKc of each)."""
    return "; ".join(f"{k} × {schedule} {fmt_tile(tile)}" for k, schedule, tile in shares)


def chosen_table(chosen: pd.DataFrame) -> pd.DataFrame:
    """`network_cores` rows as read: the split named as in the plots ('K (output maps)'),
    the shares in words (`shares_text`), numbers in human units (`units.readable`)."""
    frame = chosen[["layer", "split", "cores", "speedup", "cycles", "ext_accesses", "bound",
                    "schedule", "shares"]].assign(
        split=chosen["split"].map(SPLIT_NAMES), shares=chosen["shares"].map(shares_text))
    return readable(frame.rename(columns={"ext_accesses": "bus traffic (elements)"}))


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """`split_comparison` as one row per layer: bus traffic (elements) and cycles per split and
    broadcast, headed as the plots' bars ('K · bcast off'), in human units."""
    frame = comparison.assign(variant=[variant_label(s, b) for s, b in
                                       zip(comparison["split"], comparison["broadcast"],
                                           strict=True)])
    order = [variant_label(s, b) for b in (False, True) for s in SPLIT_SHORT
             if variant_label(s, b) in set(frame["variant"])]
    wide = frame.pivot_table(index="layer", columns="variant", values=["ext_accesses",
                                                                        "cycles"], sort=False)
    wide = wide.reindex(columns=[(v, o) for v in ("ext_accesses", "cycles") for o in order])
    wide.columns = [f"{'bus traffic' if v == 'ext_accesses' else 'cycles'}, {o}"
                    for v, o in wide.columns]
    return readable(wide)


# speed-up vs cores -------------------------------------------------------------------------
def speedup_data(options: pd.DataFrame, split: str) -> dict[str, list]:
    """The speed-up line of one split from a `split_options` table: its rows by cores, led by
    the one-core row (the whole layer, listed under the first split only)."""
    if options.empty:
        return {k: [] for k in SPEEDUP_COLUMNS}
    rows = options[(options["split"] == split) | (options["cores"] == 1)]
    rows = rows.drop_duplicates("cores").sort_values("cores")
    if (rows["cores"] > 1).sum() == 0:  # the split cannot use two cores: no line
        return {k: [] for k in SPEEDUP_COLUMNS}
    return {"cores": rows["cores"].astype(int).tolist(),
            "speedup": rows["speedup"].astype(float).tolist(),
            "cycles": rows["cycles"].astype(float).tolist(),
            "traffic_m": (rows["ext_accesses"].to_numpy(dtype=float) / 1e6).tolist(),
            "bound": rows["bound"].tolist(), "schedule": rows["schedule"].tolist()}


def ideal_data(max_cores: int) -> dict[str, list]:
    """The ideal (linear) speed-up line, 1…max_cores."""
    cores = list(range(1, max(int(max_cores), 1) + 1))
    return {"cores": cores, "speedup": [float(k) for k in cores]}


def speedup_figure(lines: Mapping[str, ColumnDataSource], ideal: ColumnDataSource,
                   title: str = "Speed-up over one core") -> figure:
    """x = cores, y = speed-up over one core: one line per split (`speedup_data` sources keyed
    by split) and the ideal linear speed-up dashed."""
    p = figure(title=title, tools=TOOLS, width=520, height=340, x_axis_label="cores",
               y_axis_label="speed-up over one core", name="core_speedup")
    p.line("cores", "speedup", source=ideal, color="black", line_dash="dashed",
           legend_label="ideal (linear)", name="ideal")
    drawn = []
    for split, src in lines.items():
        color = SPLIT_COLORS[split]
        p.line("cores", "speedup", source=src, color=color, line_width=2,
               legend_label=SPLIT_NAMES[split], name=f"speedup_{split}")
        drawn.append(p.scatter("cores", "speedup", source=src, color=color, size=6,
                               legend_label=SPLIT_NAMES[split]))
    p.add_tools(hover(drawn, [
        ("cores", "@cores"), ("speed-up", "@speedup{0.00}×"), ("cycles", "@cycles{0,0}"),
        ("bus traffic", "@traffic_m{0.000} M elements"), ("bound", "@bound"),
        ("schedule", "@schedule")]))
    p.legend.location = "top_left"
    p.legend.label_text_font_size = "8pt"
    p.legend.click_policy = "hide"
    show_splits(p, lines)
    p.x_range.start = p.y_range.start = 0
    return human_axes(p)


def show_splits(fig: figure, lines: Mapping[str, ColumnDataSource]) -> None:
    """List in the legend only the splits whose line has points (a layer with one image has
    no N line: its entry stood with nothing drawn)."""
    for item in fig.legend[0].items:
        split = next((s for s in lines if item.label.value == SPLIT_NAMES[s]), None)
        if split is not None:
            item.visible = len(lines[split].data["cores"]) > 0


def speedup_plot(options: pd.DataFrame, title: str,
                 splits: Sequence[str] = SPLITS) -> figure:
    """A static speed-up figure of one `split_options` table (splits without a line omitted)."""
    lines = {s: ColumnDataSource(speedup_data(options, s)) for s in splits}
    lines = {s: src for s, src in lines.items() if src.data["cores"]}
    top = int(options["cores"].max()) if len(options) else 1
    return speedup_figure(lines, ColumnDataSource(ideal_data(top)), title)


# K vs XY ------------------------------------------------------------------------------------
def comparison_factors(layer_names: Sequence[str]) -> list[tuple[str, str]]:
    """The nested x factors of the comparison: (layer, variant) for every layer."""
    return [(name, variant_label(s, b)) for name in layer_names
            for s, b in COMPARISON_VARIANTS]


def comparison_data(comparison: pd.DataFrame, layer_names: Sequence[str]) -> dict[str, list]:
    """One bar per (layer, split, broadcast) from a table with layer, split, broadcast,
    cores, cycles, ext_accesses, in/w/out_accesses and bound: traffic in M elements, and
    "_rel" columns scaled by the layer's largest bar (so every layer spans 0…1). A split that
    cannot use that many cores (no row) gets NaN (no bar) and "n/a" in `missing`."""
    variants = [v for _ in layer_names for v in COMPARISON_VARIANTS]
    index = {} if comparison.empty else {
        (r.layer, r.split, bool(r.broadcast)): r for r in comparison.itertuples(index=False)}
    rows = [index.get((name, split, broadcast)) for name in layer_names
            for split, broadcast in COMPARISON_VARIANTS]
    values = np.array([(np.nan,) * 6 if r is None else (
        r.cores, r.cycles, r.ext_accesses / 1e6, r.in_accesses / 1e6, r.w_accesses / 1e6,
        r.out_accesses / 1e6) for r in rows], dtype=float).reshape(-1, 6)
    per_layer = values.reshape(len(layer_names), len(COMPARISON_VARIANTS), 6)
    with np.errstate(invalid="ignore", divide="ignore"):
        largest = np.fmax.reduce(per_layer, axis=1, initial=-np.inf)  # NaN-free max
        largest[:, 3:] = largest[:, 2:3]  # the arrays' parts stack to the traffic's share
        rel = (per_layer / largest[:, None, :]).reshape(-1, 6)
    out = {"x": comparison_factors(layer_names),
           "layer": [name for name in layer_names for _ in COMPARISON_VARIANTS],
           "variant": [variant_label(s, b) for s, b in variants],
           "split": [s for s, _ in variants],
           "broadcast": ["on" if b else "off" for _, b in variants],
           "bound": ["—" if r is None else r.bound for r in rows],
           "color": [SPLIT_COLORS[s] for s, _ in variants],
           "missing": ["n/a" if r is None else "" for r in rows]}
    for j, key in enumerate(("cores", "cycles", "traffic_m", "in", "w", "out")):
        out[key] = values[:, j].tolist()
    for j, key in ((1, "cycles_rel"), (2, "traffic_rel"), (3, "in_rel"), (4, "w_rel"),
                   (5, "out_rel")):
        out[key] = rel[:, j].tolist() if len(rel) else []
    return {k: out[k] for k in COMPARISON_COLUMNS}


def fit_comparison(fig: figure, layer_names: Sequence[str]) -> None:
    """Size a comparison figure for `layer_names`: wide enough that every bar keeps BAR_PX
    (a notebook scrolls a wide figure sideways; MobileNetV2's 53 layers: 212 bars, 3,138 px),
    the layer names turned vertical when a layer's bars are narrower than its name, and the
    figure then taller by the longest name."""
    n = max(len(layer_names), 1)
    fig.width = max(COMPARISON_WIDTH,
                    COMPARISON_MARGIN_PX + n * len(COMPARISON_VARIANTS) * BAR_PX)
    longest = max((len(str(name)) for name in layer_names), default=1)
    fits = (fig.width - COMPARISON_MARGIN_PX) / n >= CHAR_PX * longest + 6
    fig.xaxis[0].group_label_orientation = 0.0 if fits else math.pi / 2
    fig.height = COMPARISON_HEIGHT + (0 if fits else CHAR_PX * longest)  # the bars keep theirs


def _comparison_base(source: ColumnDataSource, title: str, label: str, name: str) -> figure:
    p = figure(x_range=FactorRange(factors=list(source.data.get("x", []))), title=title,
               tools=TOOLS, width=COMPARISON_WIDTH, height=COMPARISON_HEIGHT,
               y_axis_label=label, name=name)
    p.xaxis.major_label_orientation = 1.0
    p.xaxis.major_label_text_font_size = "7pt"
    fit_comparison(p, list(dict.fromkeys(source.data.get("layer", []))))
    p.y_range.start = 0
    # an empty slot says why: the split cannot use that many cores (XY on an fc layer)
    p.text(x="x", y=0, text="missing", source=source, angle=math.pi / 2, y_offset=-4,
           text_baseline="middle", text_font_size="8pt", text_color="#777777", name="missing")
    return human_axes(p)


def comparison_traffic(source: ColumnDataSource,
                       title: str = "Bus traffic per layer: K vs XY, broadcast off / on"
                       ) -> figure:
    """Stacked bars of the bus traffic by array (input, weights, outputs) per layer and
    (split, broadcast) from `comparison_data`, each layer scaled by its largest bar (the
    hover shows M elements)."""
    p = _comparison_base(source, title, "bus traffic ÷ the layer's largest",
                         "comparison_traffic")
    arrays = list(ARRAY_COLORS)
    bars = p.vbar_stack([f"{a}_rel" for a in arrays], x="x", width=0.8, source=source,
                        color=[ARRAY_COLORS[a] for a in arrays],
                        legend_label=["input", "weights", "outputs"])
    p.add_tools(hover(bars, [
        ("layer", "@layer"), ("split", "@variant"), ("cores", "@cores"),
        ("bus traffic", "@traffic_m{0.000} M elements"), ("input", "@in{0.000} M"),
        ("weights", "@w{0.000} M"), ("outputs", "@out{0.000} M")]))
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "right")
    return p


def comparison_cycles(source: ColumnDataSource,
                      title: str = "Cycles per layer: K vs XY, broadcast off / on") -> figure:
    """Bars of the layer's cycles per (split, broadcast), each layer scaled by its slowest
    bar, coloured by split; broadcast-on bars hatched (the hover shows cycles)."""
    p = _comparison_base(source, title, "cycles ÷ the layer's slowest", "comparison_cycles")
    bars = p.vbar(x="x", top="cycles_rel", width=0.8, source=source, color="color",
                  hatch_pattern={"field": "broadcast", "transform": CategoricalPatternMapper(
                      factors=["off", "on"], patterns=[" ", "/"])},
                  hatch_color="white", hatch_alpha=0.6)
    p.add_tools(hover([bars], [
        ("layer", "@layer"), ("split", "@variant"), ("cores", "@cores"),
        ("cycles", "@cycles{0,0}"), ("bound", "@bound")]))
    return p


def comparison_plots(comparison: pd.DataFrame, layer_names: Sequence[str]):
    """Static traffic and cycles comparison figures of one table, stacked vertically."""
    source = ColumnDataSource(comparison_data(comparison, layer_names))
    return column(comparison_traffic(source), comparison_cycles(source))


# chosen split and cores ----------------------------------------------------------------------
def chosen_data(chosen: pd.DataFrame, layer_names: Sequence[str]) -> dict[str, list]:
    """Per layer of `layer_names` its chosen split and cores (`network_cores` rows); layers
    without a row are left out."""
    if chosen.empty:
        return {k: [] for k in CHOSEN_COLUMNS}
    rows = chosen.set_index("layer").reindex([n for n in layer_names
                                              if n in set(chosen["layer"])])
    splits = rows["split"].tolist()
    cores = rows["cores"].astype(int).tolist()
    return {"layer": rows.index.tolist(), "cores": cores, "split": splits,
            "split_name": [SPLIT_NAMES[s] for s in splits],
            "label": [f"{SPLIT_SHORT[s]}×{k}" for s, k in zip(splits, cores, strict=True)],
            "bound": rows["bound"].tolist(), "cycles": rows["cycles"].astype(float).tolist(),
            "speedup": rows["speedup"].astype(float).tolist(),
            "traffic_m": (rows["ext_accesses"].to_numpy(dtype=float) / 1e6).tolist(),
            "schedule": rows["schedule"].tolist()}


def chosen_split(source: ColumnDataSource, max_cores: int,
                 title: str = "Chosen split and cores per layer") -> figure:
    """Bars of the cores each layer uses, labelled with its split (K, XY, N) and coloured
    compute-bound or I/O-bound. The x range holds the source's layers: set
    `fig.x_range.factors` on a new network."""
    p = figure(x_range=FactorRange(factors=list(source.data.get("layer", []))), title=title,
               tools=TOOLS, width=560, height=330, y_axis_label="cores used",
               name="chosen_split",  # fixed: BokehJS keeps a DataRange1d's first end
               y_range=Range1d(0, max_cores + 1.5))
    cmap = factor_cmap("bound", palette=list(BOUND_COLORS.values()),
                       factors=list(BOUND_COLORS))
    bars = p.vbar(x="layer", top="cores", width=0.8, source=source, color=cmap,
                  legend_field="bound")
    p.add_layout(LabelSet(x="layer", y="cores", text="label", source=source, y_offset=2,
                          text_font_size="7pt", text_align="center"))
    p.add_tools(hover([bars], [
        ("layer", "@layer"), ("split", "@split_name"), ("cores", "@cores"),
        ("speed-up", "@speedup{0.00}×"), ("cycles", "@cycles{0,0}"),
        ("bus traffic", "@traffic_m{0.000} M"), ("bound", "@bound"),
        ("schedule", "@schedule")]))
    apply_labels(p.xaxis[0], list(p.x_range.factors), p.width - 160)
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "right")
    return human_axes(p)


def cores_overview(speedup: figure, chosen: figure, traffic: figure, cycles: figure):
    """The app's figures in one layout: speed-up and chosen split side by side, the K-vs-XY
    traffic and cycles below."""
    return column(row(speedup, chosen), traffic, cycles)
