"""SIMD mapping figures: lane utilization and cycles per plan, local transfers by cause."""

from __future__ import annotations

import math

import pandas as pd
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure
from bokeh.transform import dodge

from workbench.viz.common import TOOLS, apply_labels, hover
from workbench.viz.units import human_axes

TRANSFER_PARTS = ("input_loads", "unaligned_loads", "weight_loads", "output_stores",
                  "redundant_psums", "spills")   # simd.TRANSFER_CAUSES
TRANSFER_LABELS = ("input loads", "unaligned extra loads", "weight loads", "output stores",
                   "redundant partial sums", "spills")
TRANSFER_COLORS = ("#4c72b0", "#9467bd", "#dd8452", "#55a868", "#d62728", "#ff7f0e")


def plan_overview(plans: pd.DataFrame, title: str = "plans of one tile") -> figure:
    """Cycles of each (vector dimension, unroll) plan as bars on a log axis (conv1's best
    plans take 17,920 cycles beside 1.45 M: linear, they were slivers), from the power of ten
    below the fewest; lane utilization and the rest in the hover."""
    labels = [f"{d}×{u}" for d, u in zip(plans["vector_dim"], plans["unroll"], strict=True)]
    src = ColumnDataSource(plans.assign(  # a dict: a frame makes bokeh warn (pandas 3.1)
        label=labels, util=(100 * plans["lane_utilization"]).round(1)).to_dict("list"))
    floor = 10.0 ** math.floor(math.log10(max(float(plans["cycles"].min()), 1.0)))
    p = figure(x_range=labels, title=title, tools=TOOLS, width=680, height=340,
               y_axis_type="log", y_axis_label="cycles per tile",
               x_axis_label="vector dimension × unroll")
    bars = p.vbar(x="label", top="cycles", bottom=floor, width=0.8, source=src,
                  color="#1f77b4")
    p.y_range.start = floor
    p.add_tools(hover([bars], [
        ("plan", "@label"), ("cycles", "@cycles{0,0}"), ("MII", "@mii{0.0}"),
        ("lanes used", "@util{0.[0]}%"), ("vector transfers", "@vector_transfers{0,0}"),
        ("spilled vectors", "@spilled_vectors{0,0}")]))
    apply_labels(p.xaxis[0], labels, p.width - 80)
    return human_axes(p)


def transfer_breakdown(causes: pd.DataFrame) -> figure:
    """Seed 000 fig. 7.2/7.4: each layer's local vector transfers by array and cause
    (`explore.network_mapping`), stacked, with seed 000's best case (register reuse, no
    redundancy) as a black bar and the lanes used above."""
    names = causes["layer"].astype(str).tolist()
    data = {"layer": names, **{k: causes[k].clip(lower=0).tolist() for k in TRANSFER_PARTS},
            "total": causes["total"].tolist(), "model": causes["model_transfers"].tolist(),
            "u": (100 * causes["lane_utilization"]).round(0).astype(int).astype(str)
            .add(" % lanes").tolist()}
    src = ColumnDataSource(data)
    top = max([*causes["total"], *causes["model_transfers"], 1])
    p = figure(x_range=names, title="local vector transfers by cause", tools=TOOLS, width=680,
               height=360, y_axis_label="vector transfers", name="transfer_breakdown",
               y_range=Range1d(0, 1.12 * top))  # room for the lanes text over the highest
    bars = p.vbar_stack(list(TRANSFER_PARTS), x="layer", width=0.8, source=src,
                        color=list(TRANSFER_COLORS), legend_label=list(TRANSFER_LABELS))
    p.scatter(x="layer", y="model", source=src, marker="dash", size=40, line_width=3,
              color="black", legend_label="seed 000 best case")
    p.text(x=dodge("layer", 0, range=p.x_range), y="total", text="u", source=src,
           text_font_size="9pt", text_align="center", y_offset=-4)
    p.add_tools(hover(bars, [("layer", "@layer"), ("cause", "$name"),
                             ("transfers", "@$name{0,0}"), ("layer total", "@total{0,0}"),
                             ("best case", "@model{0,0}")]))
    apply_labels(p.xaxis[0], names, p.width - 200)
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "right")
    return human_axes(p)
