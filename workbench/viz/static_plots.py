"""Figures for static pages (the HTML report, `workbench.report`): interactive through bokeh
widgets and CustomJS only (no kernel), so they keep working in a file opened without a server
or network."""

from __future__ import annotations

import pandas as pd
from bokeh.embed import components
from bokeh.layouts import column, row
from bokeh.models import CheckboxGroup, ColumnDataSource, CustomJS, Div, Select

from workbench.platforms import Platform
from workbench.tiling import SCHEDULES
from workbench.viz.common import OFFLINE
from workbench.viz.explore_plots import roofline, roofline_data, roofs

_FILTER_JS = """
const d = all.data;
const keep = checks.active.map((i) => checks.labels[i]);
const out = {};
for (const k of Object.keys(d)) out[k] = [];
for (let i = 0; i < d.layer.length; i++) {
  if (d.layer[i] === select.value && keep.includes(d.schedule[i])) {
    for (const k of Object.keys(d)) out[k].push(d[k][i]);
  }
}
shown.data = out;
const spots = new Set(out.ctc.map((x, i) => x + "," + out.throughput_gops[i])).size;
label.text = select.value + ": " + out.layer.length + " solutions shown" +
  (spots < out.layer.length ? " at " + spots + " distinct points (equal costs overlap)" : "");
"""


def shown_text(layer: str, data: dict[str, list]) -> str:
    """'conv1: 12 solutions shown at 6 distinct points (equal costs overlap)' (as _FILTER_JS)."""
    n = len(data["layer"])
    spots = len(set(zip(data["ctc"], data["throughput_gops"], strict=True)))
    return f"{layer}: {n} solutions shown" + (
        f" at {spots} distinct points (equal costs overlap)" if spots < n else "")


def interactive_roofline(solutions: pd.DataFrame, platform: Platform) -> object:
    """Roofline of many layers' solutions with a layer selector and schedule toggles."""
    data = roofline_data(solutions)
    layers = list(dict.fromkeys(data["layer"]))
    first = [i for i, name in enumerate(data["layer"]) if name == layers[0]]
    all_src = ColumnDataSource(data, name="report_all")
    shown = ColumnDataSource({k: [v[i] for i in first] for k, v in data.items()},
                             name="report_points")
    fig = roofline(shown, platform, title="Solutions of the selected layer")
    fig.select_one({"name": "roofs"}).data_source.data = roofs(platform, data["ctc"])
    select = Select(title="layer", value=layers[0], options=layers, name="layer_select")
    present = [s for s in SCHEDULES if s in set(data["schedule"])]
    checks = CheckboxGroup(labels=present, active=list(range(len(present))),
                           name="schedule_toggles")
    label = Div(text=shown_text(layers[0], shown.data), name="report_label")
    callback = CustomJS(args={"all": all_src, "shown": shown, "select": select,
                              "checks": checks, "label": label}, code=_FILTER_JS)
    select.js_on_change("value", callback)
    checks.js_on_change("active", callback)
    return row(column(select, checks, label), fig)


def bokeh_resources_html() -> str:
    """The BokehJS scripts, inline (display once at the top of a report)."""
    return OFFLINE.render()


def embed_html(layout) -> str:
    """A script + div pair for one layout; needs `bokeh_resources_html` on the page."""
    script, div = components(layout)
    return div + script
