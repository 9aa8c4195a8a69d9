"""Issue-slot Gantt charts of generated NVE programs (seed 003 figures 17, 24 and 26): one
row per VLIW field, one box per operation and cycle, one chart per code version."""

from __future__ import annotations

import pandas as pd
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from workbench.viz.common import TOOLS, hover

FIELD_ORDER = ("ACT", "VMAC", "IREG", "WREG", "MEMB", "MEMA")   # top to bottom: reversed
KIND_COLORS = {"wr": "#8c564b", "rdi": "#9467bd", "rdw": "#e377c2", "seti": "#2ca02c",
               "setsh": "#98df8a", "shi": "#bcbd22", "setw": "#d62728", "shw": "#ff9896",
               "setb": "#1f77b4", "mac": "#aec7e8", "act": "#ff7f0e", "init": "#7f7f7f"}
KIND_LABELS = {"wr": "pixel write", "rdi": "image read", "rdw": "coefficient read",
               "seti": "set ri", "setsh": "set-shift ri", "shi": "shift ri", "setw": "set rw",
               "shw": "shift rw", "setb": "set bias", "mac": "mac", "act": "activation",
               "init": "init write"}


def issue_gantt(frames: dict[str, pd.DataFrame], title: str = "issue slots",
                width: int = 1200) -> column:
    """One chart per version (frames: `simd.codegen.gantt_frame` tables by version name),
    sharing the cycle axis; hover names the operation, its iteration and program part."""
    end = max(float(f["cycle"].max()) + 1 for f in frames.values())
    x_range = Range1d(-0.5, end + 0.5)
    charts = []
    for name, frame in frames.items():
        data = frame.assign(color=[KIND_COLORS[k] for k in frame["kind"]],
                            what=[KIND_LABELS[k] for k in frame["kind"]])
        p = figure(y_range=list(FIELD_ORDER), x_range=x_range, width=width, height=190,
                   title=f"{title}: {name}", tools=TOOLS, x_axis_label="cycle")
        boxes = p.rect(x="cycle", y="field", width=0.9, height=0.8, color="color",
                       source=ColumnDataSource(data.to_dict("list")))
        p.add_tools(hover([boxes], [("cycle", "@cycle"), ("operation", "@what @label"),
                                    ("iteration", "@iteration"), ("part", "@part")]))
        p.grid.grid_line_alpha = 0.3
        charts.append(p)
    return column(*charts)
