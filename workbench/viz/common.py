"""Shared plotting helpers: palettes, INLINE BokehJS, standalone HTML."""

from __future__ import annotations

from bokeh.embed import file_html
from bokeh.models import ColumnDataSource
from bokeh.palettes import Category10_10
from bokeh.resources import INLINE

from workbench.tiling import SCHEDULES

SCHEDULE_COLORS = dict(zip(SCHEDULES, Category10_10, strict=False))
PART_COLORS = {"compute": "#1f77b4", "dma_setup": "#d62728", "bus_stall": "#ff7f0e",
               "prolog_epilog": "#7f7f7f", "local": "#2ca02c", "external": "#9467bd"}
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def source(frame) -> ColumnDataSource:
    """A ColumnDataSource from a DataFrame, index dropped."""
    return ColumnDataSource(frame.reset_index(drop=True))


def standalone_html(layout, title: str) -> str:
    """One self-contained HTML page: BokehJS inline, no network references."""
    return file_html(layout, resources=INLINE, title=title)
