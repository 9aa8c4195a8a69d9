"""Shared plotting helpers: palettes, offline BokehJS, standalone HTML."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bokeh.embed import file_html
from bokeh.models import ColumnDataSource, CustomJSTickFormatter, HoverTool
from bokeh.palettes import Category10_10
from bokeh.resources import Resources

from workbench.tiling import SCHEDULES

SCHEDULE_COLORS = dict(zip(SCHEDULES, Category10_10, strict=False))
PART_COLORS = {"compute": "#1f77b4", "dma_setup": "#d62728", "bus_stall": "#ff7f0e",
               "prolog_epilog": "#7f7f7f", "local": "#2ca02c", "external": "#9467bd",
               "static": "#8c564b"}
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


LABEL_PITCH_PX = 11  # a 7-8 pt label line: closer labels overlap
CHAR_PX = 6          # width of one character of a 7-8 pt label


MARKERS = ("circle", "square", "triangle", "diamond", "inverted_triangle", "hex")


def stacked_styles(n: int, thinnest_px: float = 2.0, smallest_px: float = 6.0,
                   step_px: float = 1.5) -> list[tuple[float, float, str]]:
    """(line width px, marker size px, marker) for n series drawn in order over the same x
    values: each earlier series is wider and larger, so a later one equal to it leaves its
    colour showing along both edges and as a ring (equal models' lines would hide each
    other), and each has its own marker."""
    return [(thinnest_px + step_px * (n - 1 - i), smallest_px + 2 * step_px * (n - 1 - i),
             MARKERS[i % len(MARKERS)]) for i in range(n)]


def hover(renderers: list, tooltips: list, **kwargs) -> HoverTool:
    """A hover tool that shows ONE point (the nearest under the pointer), never a stack."""
    return HoverTool(renderers=renderers, tooltips=tooltips, limit=1, **kwargs)


@dataclass(frozen=True, slots=True)
class LabelPlan:
    """How a categorical axis of layer names stays readable: label orientation (radians),
    font size and the step between shown labels (1: all, 2: every other one, ...)."""

    orientation: float
    font_size: str
    step: int


def plan_labels(names: list[str], length_px: float) -> LabelPlan:
    """Labels of `names` along an axis `length_px` long: horizontal when they fit side by
    side, else vertical; when even vertical lines would touch, only every step-th is shown
    (LABEL_PITCH_PX apart at least)."""
    n = max(len(names), 1)
    pitch = length_px / n
    longest = max((len(str(s)) for s in names), default=1)
    if pitch >= CHAR_PX * longest + 6:
        return LabelPlan(0.0, "8pt", 1)
    font = "8pt" if pitch >= 14 else "7pt"
    return LabelPlan(math.pi / 2, font, max(1, math.ceil(LABEL_PITCH_PX / pitch)))


def apply_labels(axis, names: list[str], length_px: float) -> LabelPlan:
    """Set a categorical axis' orientation, font and thinned labels (only every step-th
    factor named; the hover still names every layer) for `names`."""
    plan = plan_labels(names, length_px)
    for ax in axis if isinstance(axis, list) else [axis]:
        ax.major_label_orientation = plan.orientation
        ax.major_label_text_font_size = plan.font_size
        ax.formatter = CustomJSTickFormatter(args={"step": plan.step},
                                             code="return index % step ? '' : tick;")
    return plan


def source(frame) -> ColumnDataSource:
    """A ColumnDataSource from a DataFrame, index dropped (as columns: a frame makes bokeh
    warn under pandas 3.1)."""
    return ColumnDataSource(frame.reset_index(drop=True).to_dict("list"))


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
