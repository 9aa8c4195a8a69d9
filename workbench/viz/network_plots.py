"""Whole-network figures: workload and energy per layer, memory footprint, quantization."""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.layouts import gridplot
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    LinearColorMapper,
    LogAxis,
    NumeralTickFormatter,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from workbench.layers.network import Network
from workbench.perf import ENERGY_PARTS
from workbench.platforms import Platform
from workbench.viz.common import PART_COLORS, TOOLS, apply_labels, hover
from workbench.viz.explore_plots import axis_type, data_ranges
from workbench.viz.units import human_axes

HORIZONTAL_FROM = 30   # layers: from this many on, per-layer bars are horizontal
BAR_PITCH_PX = 16      # height of one horizontal bar's row (> LABEL_PITCH_PX)


def network_breakdown(per_layer: pd.DataFrame, kind: str = "cycles",
                      title: str | None = None, energy_known: bool = True) -> figure:
    """Seed 000 fig. 7.6/7.9: per-layer stacked bars of cycles or energy (µJ) by part
    (`energy_known` False: a platform without energy figures, said in the title).
    From HORIZONTAL_FROM layers on the bars are horizontal, one BAR_PITCH_PX row per layer
    (every name readable); below, vertical bars with labels turned or thinned to fit."""
    if kind == "cycles":
        parts = ["compute", "dma_setup", "bus_stall", "prolog_epilog"]
        values = {p: per_layer[f"cycles_{p}"].to_numpy(dtype=float) for p in parts}
        label = "cycles"
    else:
        parts = [p for p in ENERGY_PARTS if p != "static"  # static only where a platform has it
                 or (per_layer.get("energy_static_pj", pd.Series([0.0])) > 0).any()]
        values = {p: per_layer[f"energy_{p}_pj"].to_numpy(dtype=float) / 1e6 for p in parts}
        label = "energy (µJ)"
        if not energy_known:
            title = "energy per layer: n/a (the platform has no energy figures)"
    names = per_layer["layer"].astype(str).tolist()
    src = ColumnDataSource({"layer": names, **values})
    colors = [PART_COLORS[k] for k in parts]
    fmt = "{0,0}" if kind == "cycles" else "{0,0.000}"
    tips = [("layer", "@layer"), ("part", "$name"), (label, "@$name" + fmt)]
    if len(names) >= HORIZONTAL_FROM:
        p = figure(y_range=list(reversed(names)), title=title or f"{label} per layer",
                   tools=TOOLS, width=640, height=BAR_PITCH_PX * len(names) + 120,
                   x_axis_label=label, name=f"network_{kind}")
        bars = p.hbar_stack(parts, y="layer", height=0.8, source=src, color=colors,
                            legend_label=parts)
        p.yaxis.major_label_text_font_size = "8pt"
    else:
        p = figure(x_range=names, title=title or f"{label} per layer", tools=TOOLS, width=640,
                   height=360, y_axis_label=label, name=f"network_{kind}")
        bars = p.vbar_stack(parts, x="layer", width=0.8, source=src, color=colors,
                            legend_label=parts)
        apply_labels(p.xaxis[0], names, p.width - 80)
    p.legend.orientation = "horizontal"
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "above")  # over the plot area, never over a bar
    p.add_tools(hover(bars, tips))
    return human_axes(p)


def network_roofline(per_layer: pd.DataFrame, platform: Platform,
                     title: str | None = None) -> figure:
    """Every layer of a network plan on one roofline: x = work per external byte (ops/byte),
    y = GOps/s; roofs of all the platform's cores (MAC peak) and of the shared bus. Conv/fc
    work is 2 ops per MAC, the other layers' their vector ops; colour: compute- or I/O-bound.
    Layers with no external traffic (kept maps, folded activations) have no point."""
    rows = per_layer[(per_layer["cycles"] > 0) & np.isfinite(per_layer["ctc"])
                     & (per_layer["ctc"] > 0)]
    ctc = rows["ctc"].to_numpy(dtype=float)
    lo, hi = max(float(ctc.min()) / 4, 1e-3), float(ctc.max()) * 4
    peak = platform.peak_gops * platform.cores
    ridge = peak * 1e9 / platform.bus_bytes_per_s
    x = np.geomspace(min(lo, ridge / 4), max(hi, ridge * 4), 64)
    gops = rows["throughput_gops"].clip(lower=1e-6)
    cores = f"{platform.cores} core{'s' if platform.cores > 1 else ''}"
    p = figure(title=title or f"every layer on {platform.name} ({cores})",
               x_axis_type=axis_type(ctc), y_axis_type=axis_type(gops), tools=TOOLS,
               width=640, height=450, x_axis_label="work per external byte (ops/byte)",
               y_axis_label="throughput (GOps/s)", name="network_roofline")
    p.line(x, np.minimum(peak, platform.bus_bytes_per_s * x / 1e9), color="black",
           line_width=2, legend_label=f"MAC peak of {cores} and the shared bus")
    src = ColumnDataSource({"layer": rows["layer"].tolist(), "kind": rows["kind"].tolist(),
                            "cores": rows["cores"].tolist(), "bound": rows["bound"].tolist(),
                            "ctc": ctc.tolist(),
                            "gops": gops.tolist(),
                            "color": ["#1f77b4" if b == "compute" else "#d62728"
                                      for b in rows["bound"]]})
    dots = p.scatter("ctc", "gops", source=src, color="color", size=9, alpha=0.8,
                     legend_field="bound", name="layers")
    p.x_range, p.y_range = data_ranges([dots])
    p.add_tools(hover([dots], [
        ("layer", "@layer (@kind)"), ("cores", "@cores"), ("bound", "@bound"),
        ("GOps/s", "@gops{0,0.00}"), ("ops/byte", "@ctc{0,0.00}")]))
    p.legend.orientation = "horizontal"
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "above")  # never over a layer (it sat over the lower right)
    return human_axes(p)


def memory_footprint(net: Network, elem_bytes: int = 2) -> figure:
    """Seed 000 fig. 3.5: KB of inputs, weights and outputs per layer (log scale). From
    HORIZONTAL_FROM layers on the layers run down the y axis, one BAR_PITCH_PX row each (every
    name readable; mobilenet_v2's 99 turned names left its plot ~100 px of data)."""
    table = net.summary(elem_bytes)
    parts = ["input_bytes", "weight_bytes", "output_bytes"]
    names = table["layer"].tolist()
    across = len(names) >= HORIZONTAL_FROM
    title = f"{net.name}: memory footprint per layer"
    if across:
        p = figure(y_range=list(reversed(names)), x_axis_type="log", tools=TOOLS, width=640,
                   height=BAR_PITCH_PX * len(names) + 120, title=title, x_axis_label="KB",
                   name="memory_footprint")
        p.yaxis.major_label_text_font_size = "8pt"
        p.add_layout(LogAxis(), "above")  # a KB scale at both ends of a tall plot
    else:
        p = figure(x_range=names, y_axis_type="log", tools=TOOLS, width=640, height=360,
                   title=title, y_axis_label="KB", name="memory_footprint")
    colors = ["#1f77b4", "#d62728", "#2ca02c"]
    dots = []
    for offset, (part, color) in enumerate(zip(parts, colors, strict=True)):
        kb = table[part].astype(float) / 1024
        src = ColumnDataSource({"layer": table["layer"], "part": [part[:-6]] * len(table),
                                "value": kb.where(kb > 0)})  # no weights: no point
        at = {"x": "value", "y": "layer"} if across else {"x": "layer", "y": "value"}
        dots.append(p.scatter(**at, source=src, size=9, color=color,
                              legend_label=part.replace("_bytes", ""),
                              marker=["circle", "square", "triangle"][offset]))
    values = p.x_range if across else p.y_range  # markers whole at the ends, not cut
    values.range_padding = 0.15
    if not across:
        apply_labels(p.xaxis[0], names, p.width - 80)
    p.legend.orientation = "horizontal"
    p.add_layout(p.legend[0], "above")  # never over a point
    p.add_tools(hover(dots, [("layer", "@layer"), ("array", "@part"),
                             ("size", "@value{0,0.[00]} KB")]))
    return human_axes(p)


def quant_space(space: pd.DataFrame, layer: str) -> figure:
    """Seed 000 fig. 4.8: tested (BW(in), BW(w)) splits of one layer coloured by accuracy."""
    rows = space[space["layer"] == layer]
    mapper = LinearColorMapper(palette=Viridis256, low=float(rows["accuracy"].min()),
                               high=float(rows["accuracy"].max()))
    p = figure(title=f"{layer}: accuracy of each split", tools=TOOLS, width=420, height=380,
               x_axis_label="BW(in) bits", y_axis_label="BW(w) bits")
    src = ColumnDataSource(rows.to_dict("list"))  # a frame would make bokeh warn (pandas 3.1)
    dots = p.scatter("bw_in", "bw_w", source=src, size=14,
                     color={"field": "accuracy", "transform": mapper})
    p.add_tools(hover([dots], [("BW(in)", "@bw_in"), ("BW(w)", "@bw_w"),
                               ("accuracy", "@accuracy{0.0%}")]))
    p.add_layout(ColorBar(color_mapper=mapper, title="accuracy", width=10), "right")
    return p


def quant_spaces(space: pd.DataFrame, layer_names: list[str], page_px: int = 900,
                 per_row: int = 3):
    """Every layer's `quant_space` in a grid `per_row` wide that fits `page_px`."""
    figures = [quant_space(space, name) for name in layer_names]
    width = page_px // per_row
    for fig in figures:
        fig.width, fig.height = width, int(width * 0.85)
        fig.title.text_font_size = "9pt"
    return gridplot(figures, ncols=per_row, toolbar_location="right")


def accuracy_vs_width(table: pd.DataFrame) -> figure:
    """Accuracy vs accumulator bits, one line per (bound, overflow mode)."""
    p = figure(title="accuracy vs accumulator width", tools=TOOLS, width=560, height=360,
               x_axis_label="accumulator bits", y_axis_label="top-1 accuracy")
    styles = {"worst": "#d62728", "weights": "#ff7f0e", "data": "#2ca02c"}
    for (bound, overflow), rows in table.groupby(["bound", "overflow"]):
        src = ColumnDataSource({"x": rows["acc_bits"], "y": rows["test_accuracy"]})
        dash = "solid" if overflow == "wrap" else "dashed"
        p.line("x", "y", source=src, color=styles.get(bound, "black"), line_dash=dash,
               legend_label=f"{bound}, {overflow}", line_width=2)
        p.scatter("x", "y", source=src, color=styles.get(bound, "black"), size=6)
    p.legend.location = "bottom_right"
    p.yaxis.formatter = NumeralTickFormatter(format="0.[0]%")
    return p
