"""SIMD mapping figures: lane utilization and cycles per plan, local transfers by cause."""

from __future__ import annotations

import pandas as pd
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure
from bokeh.transform import dodge

from workbench.viz.common import TOOLS

TRANSFER_PARTS = ("model_transfers", "redundant_loads_stores", "spilling", "unaligned_loads",
                  "other")
TRANSFER_COLORS = ("#2ca02c", "#d62728", "#ff7f0e", "#9467bd", "#7f7f7f")


def plan_overview(plans: pd.DataFrame, title: str = "plans of one tile") -> figure:
    """Cycles (bars) and lane utilization (text) of each (vector dimension, unroll) plan."""
    labels = [f"{d}×{u}" for d, u in zip(plans["vector_dim"], plans["unroll"], strict=True)]
    src = ColumnDataSource(plans.assign(label=labels,
                                        util=(100 * plans["lane_utilization"]).round(1)))
    p = figure(x_range=labels, title=title, tools=TOOLS, width=680, height=340,
               y_axis_label="cycles per tile", x_axis_label="vector dimension × unroll")
    bars = p.vbar(x="label", top="cycles", width=0.8, source=src, color="#1f77b4")
    p.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("plan", "@label"), ("cycles", "@cycles{0,0}"), ("MII", "@mii{0.0}"),
        ("lanes used", "@util %"), ("vector transfers", "@vector_transfers{0,0}"),
        ("spilled vectors", "@spilled_vectors")]))
    p.xaxis.major_label_orientation = 0.9
    return p


def transfer_breakdown(mapping: pd.DataFrame) -> figure:
    """Seed 000 fig. 7.2/7.4: local vector transfers per layer by cause (stacked)."""
    names = mapping["layer"].astype(str).tolist()
    data = {"layer": names, **{k: mapping[k].clip(lower=0).tolist() for k in TRANSFER_PARTS}}
    p = figure(x_range=names, title="local vector transfers by cause", tools=TOOLS, width=640,
               height=340, y_axis_label="vector transfers")
    p.vbar_stack(list(TRANSFER_PARTS), x="layer", width=0.8, source=ColumnDataSource(data),
                 color=list(TRANSFER_COLORS), legend_label=list(TRANSFER_PARTS))
    util = ColumnDataSource({"layer": names, "u": (100 * mapping["lane_utilization"]).round(0)
                             .astype(int).astype(str).add(" % lanes").tolist(),
                             "y": mapping["total"].tolist()})
    p.text(x=dodge("layer", 0, range=p.x_range), y="y", text="u", source=util,
           text_font_size="9pt", text_align="center", y_offset=-4)
    p.legend.location = "top_right"
    return p
