"""Shared plotting helpers: palettes, offline BokehJS, standalone HTML."""

from __future__ import annotations

from bokeh.embed import file_html
from bokeh.models import ColumnDataSource
from bokeh.palettes import Category10_10
from bokeh.resources import Resources

from workbench.tiling import SCHEDULES

SCHEDULE_COLORS = dict(zip(SCHEDULES, Category10_10, strict=False))
PART_COLORS = {"compute": "#1f77b4", "dma_setup": "#d62728", "bus_stall": "#ff7f0e",
               "prolog_epilog": "#7f7f7f", "local": "#2ca02c", "external": "#9467bd"}
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def source(frame) -> ColumnDataSource:
    """A ColumnDataSource from a DataFrame, index dropped."""
    return ColumnDataSource(frame.reset_index(drop=True))


# The only URLs in BokehJS a browser could fetch, each on demand for a feature the workbench
# never uses: MathJax for TeX labels, the Tabler icon font, Google Maps plots, and a SlickGrid
# remote-data example. Blanked, nothing in a page or notebook refers to the network.
EXTERNAL_URLS = ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js",
                 "https://cdn.jsdelivr.net/npm/@tabler/icons-webfont@latest",
                 "https://maps.googleapis.com/maps/api/js",
                 "http://octopart.com/api/v3/parts/search")


class OfflineResources(Resources):
    """BokehJS inline, with EXTERNAL_URLS removed from its code."""

    def __init__(self, components: list | None = None) -> None:
        super().__init__(mode="inline", components=components)

    def clone(self, *, components: list | None = None) -> OfflineResources:
        """Bokeh's embedding clones the resources per document: stay offline."""
        return OfflineResources(list(self.components) if components is None else components)

    @property
    def js_raw(self) -> list[str]:
        raw = super().js_raw
        for url in EXTERNAL_URLS:
            raw = [js.replace(url, "") for js in raw]
        return raw


OFFLINE = OfflineResources()


def standalone_html(layout, title: str) -> str:
    """One self-contained HTML page: BokehJS inline, no network references."""
    return file_html(layout, resources=OFFLINE, title=title)
