"""Whole-network design-space figures: per-layer cycle and energy breakdowns, each layer's best
mapping on the roofline, and the network's memory/energy/time trade-off over memory sizes.

The "data" functions reshape what `workbench.explore` returns into ColumnDataSource dicts; the
figure factories draw given sources, so an app updates them in place (`source.data = ...`).
Nothing here computes a model number: energies are converted from pJ to µJ, sizes to labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.core.properties import field
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJSTickFormatter,
    FactorRange,
    LabelSet,
    LinearColorMapper,
    TapTool,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure
from bokeh.transform import factor_cmap

from workbench.perf import CYCLE_PARTS, ENERGY_PARTS
from workbench.tiling import SCHEDULES
from workbench.viz.common import PART_COLORS, SCHEDULE_COLORS, TOOLS, apply_labels, hover
from workbench.viz.explore_plots import data_ranges, roofline_data
from workbench.viz.labels import Scene, place_labels
from workbench.viz.units import TILE_HEADER, fmt_bytes, fmt_energy, fmt_ms, human_axes, log_ticks

MEMORY_COLUMNS = ("memory_bytes", "memory", "log2", "time_ms", "energy_uj", "throughput_gops",
                  "traffic_mb", "time_text", "energy_text")
# plot areas (px) the labels are placed in: the figures' sizes less axes, title, colour bar
ROOFLINE_FRAME = (414, 286)
TRADEOFF_FRAME = (377, 286)
_LOG2_RANGE = (7, 24)  # colour scale of memory sizes: 128 B .. 16 MB
# a tick in the unit that reads best: UNITS lists (scale, suffix), largest first
_UNIT_TICKS_JS = """
const units = UNITS;
for (const [scale, suffix] of units) {
  if (Math.abs(tick) >= scale || scale === units[units.length - 1][0]) {
    const v = Number((tick / scale).toPrecision(3));
    return v.toLocaleString("en-US") + suffix;
  }
}
"""
_LOG2_TICKS_JS = """
const b = Math.pow(2, tick);
return b >= 1048576 ? (b / 1048576) + " MB" : b >= 1024 ? (b / 1024) + " KB" : b + " B";
"""


def memory_label(size_bytes: float) -> str:
    """A memory size as '128 B', '64 KB' or '2 MB' (`workbench.numbers.fmt_bytes`)."""
    return fmt_bytes(size_bytes)


def breakdown_parts(kind: str) -> tuple[str, ...]:
    """The stacked parts of a breakdown: cycles (compute, dma_setup, bus_stall, prolog_epilog)
    or energy (compute, dma_setup, local, external, static)."""
    return CYCLE_PARTS if kind == "cycles" else ENERGY_PARTS


def breakdown_data(per_layer: pd.DataFrame, kind: str, layer_names: list[str]) -> dict[str, list]:
    """Per layer of `layer_names` (network order) the cycles or energy (µJ) of each part of its
    chosen mapping; layers without a row (no tile fits) get zeros."""
    parts = breakdown_parts(kind)
    pattern, scale = ("cycles_{}", 1.0) if kind == "cycles" else ("energy_{}_pj", 1e-6)
    data: dict[str, list] = {"layer": list(layer_names)}
    where = pd.Index(layer_names).get_indexer(per_layer["layer"]) if len(per_layer) else []
    for part in parts:
        values = np.zeros(len(layer_names))
        if len(where):
            values[where] = per_layer[pattern.format(part)].to_numpy(dtype=float) * scale
        data[part] = values.tolist()
    return data


def memory_points_data(sizes: pd.DataFrame) -> dict[str, list]:
    """One point per memory size from a table with memory_bytes, time_ms, energy_pj,
    throughput_gops and traffic_mb (network totals per size)."""
    if sizes.empty:
        return {k: [] for k in MEMORY_COLUMNS}
    memory = sizes["memory_bytes"].to_numpy(dtype=float)
    log2 = np.log2(memory)
    return {"memory_bytes": memory.tolist(), "memory": [memory_label(m) for m in memory],
            "log2": log2.tolist(),
            "time_ms": sizes["time_ms"].astype(float).tolist(),
            "energy_uj": (sizes["energy_pj"].to_numpy(dtype=float) / 1e6).tolist(),
            "throughput_gops": sizes["throughput_gops"].astype(float).tolist(),
            "traffic_mb": sizes["traffic_mb"].astype(float).tolist(),
            "time_text": [fmt_ms(t) for t in sizes["time_ms"]],
            "energy_text": [fmt_energy(e) for e in sizes["energy_pj"]]}


def front_points_data(front: pd.DataFrame, sizes: pd.DataFrame) -> dict[str, list]:
    """`memory_points_data` of the Pareto sizes with their labels placed (`place_labels`)
    over the range of every size's point, off the grey line joining them in order."""
    data = memory_points_data(front)
    others = memory_points_data(sizes)
    return data | place_labels(data["time_ms"], data["energy_uj"], data["memory"],
                               TRADEOFF_FRAME, Scene(
                                   others=(others["time_ms"], others["energy_uj"]),
                                   paths=[(others["time_ms"], others["energy_uj"])],
                                   marker_px=22, padding=0.1))  # the selected size's cross


def roofline_points_data(per_layer: pd.DataFrame, roofs: dict | None) -> dict[str, list]:
    """`roofline_data` of each layer's mapping with its label placed (`place_labels`) off
    the roof line, `roofs` (`viz.roofs`: x, y, peak), whose peak the y range reaches."""
    data = roofline_data(per_layer)
    peak = [] if roofs is None else list(roofs["peak"][:1])
    paths = [] if roofs is None else [(list(roofs["x"]), list(roofs["y"]))]
    return data | place_labels(data["ctc"], data["throughput_gops"], data["layer"],
                               ROOFLINE_FRAME, Scene(extra_y=peak, paths=paths))


def selected_memory_data(sizes: pd.DataFrame, memory_bytes: float) -> dict[str, list]:
    """The point of the selected memory size (empty when that size is infeasible)."""
    return memory_points_data(sizes[sizes["memory_bytes"] == memory_bytes]
                              if len(sizes) else sizes)


def layer_breakdown(source: ColumnDataSource, kind: str = "cycles",
                    title: str | None = None) -> figure:
    """Stacked bars per layer (seed 000 fig. 7.6/7.9): cycles or energy (µJ) by part. The
    x range is a FactorRange of the source's layers: set `fig.x_range.factors` on a new
    network."""
    parts = list(breakdown_parts(kind))
    label = "cycles" if kind == "cycles" else "energy (µJ)"
    p = figure(x_range=FactorRange(factors=list(source.data.get("layer", []))),
               title=title or f"{label} per layer, by part", tools=TOOLS, width=530, height=340,
               y_axis_label=label, name=f"breakdown_{kind}")
    bars = p.vbar_stack(parts, x="layer", width=0.8, source=source,
                        color=[PART_COLORS[k] for k in parts], legend_label=parts)
    fmt = "{0,0}" if kind == "cycles" else "{0,0.000}"
    p.add_tools(hover(bars, [("layer", "@layer"), ("part", "$name"),
                             (label, "@$name" + fmt)]))
    human_axes(p)
    fit_layer_labels(p, list(p.x_range.factors))
    p.legend.label_text_font_size = "8pt"
    p.legend.orientation = "horizontal"
    p.add_layout(p.legend[0], "above")  # over the plot area, never over the bars
    p.y_range.start = 0
    return p


def fit_layer_labels(fig: figure, names: list[str]) -> None:
    """Turn or thin the layer labels of a per-layer figure so `names` never overlap (call
    again after changing `fig.x_range.factors`)."""
    apply_labels(fig.xaxis[0], names, fig.width - 90)


def layer_roofline(points: ColumnDataSource, roofs: ColumnDataSource,
                   title: str = "Best mapping of each layer on the roofline") -> figure:
    """x = CTC (ops/byte), y = GOps/s: one point per layer (`roofline_data` columns), coloured
    by schedule and labelled with the layer; `roofs` holds `viz.roofs(platform, ctc)`."""
    p = figure(title=title, x_axis_type="log", y_axis_type="log", tools=TOOLS,
               x_axis_label="CTC (ops/byte)", y_axis_label="throughput (GOps/s)",
               width=600, height=360, name="design_roofline")
    p.line("x", "y", source=roofs, color="black", line_width=2, legend_label="roofs",
           name="roofs")
    cmap = factor_cmap("schedule", palette=[SCHEDULE_COLORS[s] for s in SCHEDULES],
                       factors=list(SCHEDULES))
    dots = p.scatter("ctc", "throughput_gops", source=points, color=cmap, size=10, alpha=0.8,
                     legend_field="schedule", name="layers")
    p.add_layout(LabelSet(x="ctc", y="throughput_gops", text="label", source=points,
                          text_align=field("label_align"), x_offset=field("label_dx"),
                          y_offset=field("label_dy"), text_font_size="7pt"))
    peak = p.scatter("x", "peak", source=roofs, visible=False)  # the roof stays in view
    p.x_range, p.y_range = data_ranges([dots])
    p.y_range.renderers = [dots, peak]
    p.add_tools(hover([dots], [
        ("layer", "@layer"), ("schedule", "@schedule"), (TILE_HEADER, "@tile"),
        ("GOps/s", "@throughput_gops{0,0.00}"), ("CTC", "@ctc{0,0.0} ops/B")]))
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "right")  # beside the plot, never over a layer
    return human_axes(p)  # 1-2-5 ticks: a range of a decade or two is read


def memory_tradeoff(points: ColumnDataSource, front: ColumnDataSource,
                    selected: ColumnDataSource,
                    title: str = "Network time vs energy per local-memory size") -> figure:
    """x = network time (ms), y = network energy (µJ): one point per feasible memory size
    (`memory_points_data`) coloured by memory; the non-dominated sizes (memory, energy, time)
    ringed and labelled with their size; the selected size marked with a red cross."""
    p = figure(title=title, x_axis_type="log", y_axis_type="log", tools=TOOLS + ",tap",
               x_axis_label="network time", y_axis_label="network energy",
               width=560, height=360, name="design_tradeoff")
    mapper = LinearColorMapper(palette=Viridis256, low=_LOG2_RANGE[0], high=_LOG2_RANGE[1])
    p.line("time_ms", "energy_uj", source=points, color="#bbbbbb", line_width=1)
    dots = p.scatter("time_ms", "energy_uj", source=points, size=10, alpha=0.8,
                     color={"field": "log2", "transform": mapper}, name="sizes",
                     nonselection_alpha=0.8)
    p.scatter("time_ms", "energy_uj", source=front, size=16, fill_alpha=0, line_color="black",
              line_width=2, legend_label="Pareto (memory, energy, time)", name="front",
              nonselection_alpha=1.0)
    p.scatter("time_ms", "energy_uj", source=selected, size=22, marker="x", line_color="red",
              line_width=3, legend_label="selected", name="selected")
    p.add_layout(LabelSet(x="time_ms", y="energy_uj", text="label", source=front,
                          text_align=field("label_align"), x_offset=field("label_dx"),
                          y_offset=field("label_dy"), text_font_size="7pt"))
    p.select_one(TapTool).renderers = [dots]  # a tap picks a size; rings do not fade
    p.add_tools(hover([dots], [
        ("memory", "@memory"), ("time", "@time_text"), ("energy", "@energy_text"),
        ("GOps/s", "@throughput_gops{0,0.0}")]))
    p.add_layout(ColorBar(color_mapper=mapper, title="local memory", width=8,
                          formatter=CustomJSTickFormatter(code=_LOG2_TICKS_JS)), "right")
    p.legend.location = "bottom_right"
    p.legend.label_text_font_size = "8pt"
    p.xaxis[0].formatter = CustomJSTickFormatter(code=_UNIT_TICKS_JS.replace(  # ms: µs, ms, s
        "UNITS", '[[1e3, " s"], [1, " ms"], [1e-3, " µs"]]'))
    p.yaxis[0].formatter = CustomJSTickFormatter(code=_UNIT_TICKS_JS.replace(  # µJ: nJ … J
        "UNITS", '[[1e6, " J"], [1e3, " mJ"], [1, " µJ"], [1e-3, " nJ"]]'))
    p.xaxis[0].ticker, p.yaxis[0].ticker = log_ticks(), log_ticks()
    return p

