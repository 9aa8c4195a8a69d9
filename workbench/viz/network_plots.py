"""Whole-network figures: workload and energy per layer, memory footprint, quantization."""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from workbench.layers.network import Network
from workbench.platforms import Platform
from workbench.viz.common import PART_COLORS, TOOLS


def network_breakdown(per_layer: pd.DataFrame, kind: str = "cycles",
                      title: str | None = None) -> figure:
    """Seed 000 fig. 7.6/7.9: per-layer stacked bars of cycles or energy (µJ) by part."""
    if kind == "cycles":
        parts = ["compute", "dma_setup", "bus_stall", "prolog_epilog"]
        values = {p: per_layer[f"cycles_{p}"].to_numpy(dtype=float) for p in parts}
        label = "cycles"
    else:
        parts = ["compute", "dma_setup", "local", "external"]
        values = {p: per_layer[f"energy_{p}_pj"].to_numpy(dtype=float) / 1e6 for p in parts}
        label = "energy (µJ)"
    names = per_layer["layer"].astype(str).tolist()
    p = figure(x_range=names, title=title or f"{label} per layer", tools=TOOLS, width=640,
               height=360, y_axis_label=label)
    p.vbar_stack(parts, x="layer", width=0.8, source=ColumnDataSource({"layer": names, **values}),
                 color=[PART_COLORS[k] for k in parts], legend_label=parts)
    p.legend.location = "top_right"
    return p


def network_roofline(per_layer: pd.DataFrame, platform: Platform,
                     title: str | None = None) -> figure:
    """Every layer of a network plan on one roofline: x = work per external byte (ops/byte),
    y = GOps/s; roofs of all the platform's cores (MAC peak) and of the shared bus. Conv/fc
    work is 2 ops per MAC, the other layers' their vector ops; colour: compute- or I/O-bound.
    Layers with no external traffic (kept maps, folded activations) have no point."""
    rows = per_layer[(per_layer["cycles"] > 0) & np.isfinite(per_layer["ctc"])]
    ctc = rows["ctc"].to_numpy(dtype=float)
    lo, hi = max(float(ctc.min()) / 4, 1e-3), float(ctc.max()) * 4
    peak = platform.peak_gops * platform.cores
    ridge = peak * 1e9 / platform.bus_bytes_per_s
    x = np.geomspace(min(lo, ridge / 4), max(hi, ridge * 4), 64)
    p = figure(title=title or f"every layer on {platform.name} ({platform.cores} cores)",
               x_axis_type="log", y_axis_type="log", tools=TOOLS, width=640, height=400,
               x_axis_label="work per external byte (ops/byte)",
               y_axis_label="throughput (GOps/s)")
    p.line(x, np.minimum(peak, platform.bus_bytes_per_s * x / 1e9), color="black",
           line_width=2, legend_label=f"{platform.cores} cores' MAC peak and the shared bus")
    src = ColumnDataSource({"layer": rows["layer"].tolist(), "kind": rows["kind"].tolist(),
                            "cores": rows["cores"].tolist(), "bound": rows["bound"].tolist(),
                            "ctc": ctc.tolist(),
                            "gops": rows["throughput_gops"].clip(lower=1e-6).tolist(),
                            "color": ["#1f77b4" if b == "compute" else "#d62728"
                                      for b in rows["bound"]]})
    dots = p.scatter("ctc", "gops", source=src, color="color", size=9, alpha=0.8,
                     legend_field="bound")
    p.add_tools(HoverTool(renderers=[dots], tooltips=[
        ("layer", "@layer (@kind)"), ("cores", "@cores"), ("bound", "@bound"),
        ("GOps/s", "@gops{0.00}"), ("ops/byte", "@ctc{0.00}")]))
    p.legend.location = "bottom_right"
    return p


def memory_footprint(net: Network, elem_bytes: int = 2) -> figure:
    """Seed 000 fig. 3.5: bytes of inputs, weights and outputs per layer (log scale)."""
    table = net.summary(elem_bytes)
    parts = ["input_bytes", "weight_bytes", "output_bytes"]
    p = figure(x_range=table["layer"].tolist(), y_axis_type="log", tools=TOOLS, width=640,
               height=360, title=f"{net.name}: memory footprint per layer",
               y_axis_label="bytes")
    colors = ["#1f77b4", "#d62728", "#2ca02c"]
    for offset, (part, color) in enumerate(zip(parts, colors, strict=True)):
        src = ColumnDataSource({"layer": table["layer"],
                                "value": table[part].clip(lower=1).astype(float)})
        p.scatter(x="layer", y="value", source=src, size=9, color=color,
                  legend_label=part.replace("_bytes", ""), marker=["circle", "square",
                                                                  "triangle"][offset])
    p.xaxis.major_label_orientation = 0.8
    return p


def quant_space(space: pd.DataFrame, layer: str) -> figure:
    """Seed 000 fig. 4.8: tested (BW(in), BW(w)) splits of one layer coloured by accuracy."""
    rows = space[space["layer"] == layer]
    mapper = LinearColorMapper(palette=Viridis256, low=float(rows["accuracy"].min()),
                               high=float(rows["accuracy"].max()))
    p = figure(title=f"{layer}: accuracy of each split", tools=TOOLS, width=420, height=380,
               x_axis_label="BW(in) bits", y_axis_label="BW(w) bits")
    src = ColumnDataSource(rows)
    dots = p.scatter("bw_in", "bw_w", source=src, size=14,
                     color={"field": "accuracy", "transform": mapper})
    p.add_tools(HoverTool(renderers=[dots], tooltips=[("BW(in)", "@bw_in"), ("BW(w)", "@bw_w"),
                                                      ("accuracy", "@accuracy{0.0%}")]))
    p.add_layout(ColorBar(color_mapper=mapper, title="accuracy"), "right")
    return p


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
    return p
