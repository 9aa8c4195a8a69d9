"""The traffic-model explorer: off-accelerator traffic of a network's layers versus local
memory under the seed 000 schedules, the general dataflow model, Peemen's model and the cache
model (seed 002 figs. 4/5), with the element and partial-sum widths as controls; for one
layer, the loop nest of its least-traffic dataflow schedule at a chosen memory size.

Tables are computed once per (network, widths) and cached; choosing models or a layer only
filters them.
"""

from __future__ import annotations

import re

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource

from workbench import explore, layers
from workbench.errors import WorkbenchError
from workbench.layers.dims import (
    LAYER_DIMS,
    SEED000_LABEL,
    SEED000_LOOP,
    SEED002_LOOP,
    SEED002_TILE,
)
from workbench.tiling.dataflow import Precision
from workbench.ui import progress
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.controls import listing_html
from workbench.ui.errors import error_html
from workbench.ui.progress import busy
from workbench.viz.traffic_plots import traffic_curve_data, traffic_curves
from workbench.viz.units import fmt_bytes, readable

ALL_LAYERS = "all conv layers"
# seed 002's labels in the dataflow listing -> seed 000's, the ones the workbench shows
# (DESIGN.md, notebook 03), both read from the label tables of `layers.dims`
_TILE_NAMES = {SEED002_TILE[d]: SEED000_LABEL[d] for d in LAYER_DIMS}
_LOOP_NAMES = {SEED002_LOOP[loop]: SEED000_LOOP[loop] for loop in SEED002_LOOP}
_TILE_LABEL = re.compile(r"\b(" + "|".join(_TILE_NAMES) + r")=")
_ELEMENT_LABEL = re.compile(r"\b(" + "|".join(
    SEED002_LOOP[loop].lower() for loop in SEED002_LOOP if loop.level == 0) + r")\b")
_BUFFER_NAMES = {"B_I": "B_in", "B_W": "B_w", "B_O": "B_out"}
_WIDTH = {"description_width": "110px"}  # every control's name shown whole


def design_vocabulary(listing: str) -> str:
    """A dataflow listing in the workbench's names: tile sizes TOx, TOy, TOc, TOn, TKc, tile
    loops o_n, o_c, o_y, o_x, k_c (as `tiling.listing`), buffers B_in, B_w, B_out."""
    text = _TILE_LABEL.sub(lambda m: _TILE_NAMES[m.group(1)] + "=", listing)
    text = text.replace("tiles TO", "tile TO")
    text = re.sub(r"\bfor (\w+) in", lambda m: f"for {_LOOP_NAMES.get(m.group(1), m.group(1))} in",
                  text)
    text = re.sub(r"\[([^\]]*)\]", lambda m: "[" + _ELEMENT_LABEL.sub(
        lambda v: _LOOP_NAMES[v.group(1).upper()], m.group(1)) + "]", text)
    return re.sub(r"\bB_[IWO]\b", lambda m: _BUFFER_NAMES[m.group(0)], text)


class TrafficExplorer:
    """Widgets, the bokeh source and the callbacks of the traffic explorer."""

    def __init__(self, network: str = "lenet5", memory_kb: tuple[float, ...] = (
            1, 2, 4, 8, 16, 32, 64, 128, 256), models: tuple[str, ...] = explore.TRAFFIC_MODELS,
                 elem_bytes: int = 1, psum_bytes: int = 4, include_fc: bool = False) -> None:
        unknown = [m for m in models if m not in explore.TRAFFIC_MODELS]
        if unknown:
            raise WorkbenchError(f"unknown traffic model {unknown[0]!r}; valid: "
                                 + ", ".join(explore.TRAFFIC_MODELS))
        if not memory_kb or min(memory_kb) <= 0:
            raise WorkbenchError(f"memory_kb must be a non-empty list of positive sizes, "
                                 f"got {list(memory_kb)}")
        self.memory_bytes = [int(kb * 1024) for kb in memory_kb]
        self.include_fc = include_fc
        self._tables: dict[tuple, pd.DataFrame] = {}
        self.network = widgets.Combobox(value=str(network), options=layers.list_networks(),
                                        description="network", ensure_option=False,
                                        continuous_update=False)
        self.layer = widgets.Dropdown(description="layer")
        self.models = widgets.SelectMultiple(options=explore.TRAFFIC_MODELS, value=tuple(models),
                                             description="models")
        self.elem_bytes = widgets.Dropdown(options=[(f"{b} B", b) for b in (1, 2, 4)],
                                           value=elem_bytes, description="element")
        self.psum_bytes = widgets.Dropdown(options=[(f"{b} B", b) for b in (1, 2, 4)],
                                           value=psum_bytes, description="partial sum")
        self.memory = widgets.Dropdown(options=[(fmt_bytes(kb * 1024), kb) for kb in memory_kb],
                                       value=memory_kb[0], description="schedule at")
        for control in (self.network, self.layer, self.models, self.elem_bytes,
                        self.psum_bytes, self.memory):
            control.style = _WIDTH
        self.progress = widgets.IntProgress(description="layers done", style=_WIDTH,
                                            layout=widgets.Layout(display="none"))
        self.status = widgets.HTML()
        self.summary = widgets.HTML()
        self.listing = widgets.HTML()
        self._schedules: dict[tuple, str] = {}
        self.table = pd.DataFrame()  # tidy: layer, model, memory_bytes, traffic_bytes, ...
        self.frame = pd.DataFrame()  # what the summary shows: MB per model and memory size
        self.source = ColumnDataSource({"memory_kb": []}, name="traffic_curves")
        self.figure = traffic_curves(self.source)
        self.net, self._loading = None, False
        self._load(network)
        self.network.observe(lambda change: self._load(change["new"]), names="value")
        for control in (self.elem_bytes, self.psum_bytes):
            control.observe(lambda change: self.update(), names="value")
        for control in (self.layer, self.models):
            control.observe(lambda change: self.redraw(), names="value")
        self.memory.observe(lambda change: self.show_schedule(), names="value")

    def _load(self, name: str) -> None:
        """A zoo name or model file: offer its layers and recompute."""
        try:
            net = layers.load_network(name)
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        self.net, self.source_name = net, str(name)
        names = [lay.name for lay in self._layers()]
        self._loading = True  # the options change below resets the layer: no redraw yet
        try:
            self.layer.options = [ALL_LAYERS] + names
            self.layer.value = ALL_LAYERS
        finally:
            self._loading = False
        self.update()

    def _layers(self) -> list:
        return [lay for lay in self.net.tiled_layers()
                if lay.kind == "conv" or self.include_fc]

    def update(self) -> None:
        """Compute (or fetch) the table of every model for the current network and widths."""
        precision = self._precision()
        key = (self.source_name, precision)
        if key not in self._tables:
            self.progress.layout.display = None
            with busy(self.status, f"computing the traffic of {len(self._layers())} layers "
                      f"under {len(explore.TRAFFIC_MODELS)} models"):
                self._tables[key] = progress.traffic_table(
                    self._layers(), self.memory_bytes, explore.TRAFFIC_MODELS, precision,
                    progress=self.progress)
            self.progress.layout.display = "none"
        self.table = self._tables[key]
        self.redraw()

    def redraw(self) -> None:
        """Filter to the chosen layer and models and refresh the plot and summary."""
        if self._loading:
            return
        layer = None if self.layer.value == ALL_LAYERS else self.layer.value
        data = traffic_curve_data(self.table, layer)
        for model in explore.TRAFFIC_MODELS:
            shown = model in self.models.value
            for renderer in self.figure.select({"name": model}) + \
                    self.figure.select({"name": f"{model}_points"}):
                renderer.visible = shown
        self.source.data = data
        full = pd.DataFrame(data).set_index("memory_kb")
        chosen = [m for m in explore.TRAFFIC_MODELS if m in self.models.value]
        frame = full[chosen + ["compulsory"]].copy()
        if {"dataflow", "peemen"} <= set(chosen):
            frame["peemen over dataflow %"] = 100 * (full["peemen"] / full["dataflow"] - 1)
        if {"dataflow", "cache"} <= set(chosen):
            frame["cache / dataflow"] = full["cache"] / full["dataflow"]
        self.frame = frame
        shown = self.frame.copy()
        shown.index = [fmt_bytes(kb * 1024) for kb in shown.index]
        shown.index.name = "local memory"
        self.summary.value = (readable(shown).to_html() +
                              "<p><i>off-accelerator traffic in MB (10<sup>6</sup> bytes)</i></p>")
        self.show_schedule()
        what = layer or f"{len(self._layers())} conv layers"
        self.status.value = (f"{self.net.name}, {what}: traffic in MB, elements "
                             f"{self.elem_bytes.value} B, partial sums {self.psum_bytes.value} B")

    def _precision(self) -> Precision:
        return Precision(self.elem_bytes.value, self.elem_bytes.value, self.elem_bytes.value,
                         self.psum_bytes.value)

    def show_schedule(self) -> None:
        """The chosen layer's least-traffic dataflow schedule at the chosen memory size, as a
        loop nest with its buffer fills (tiling.dataflow_listing)."""
        if self._loading or self.layer.value == ALL_LAYERS:
            self.listing.value = "<i>choose a layer to see its best dataflow schedule</i>"
            return
        key = (self.source_name, self.layer.value, self.memory.value, self._precision())
        if key not in self._schedules:
            self._schedules[key] = explore.best_dataflow_listing(
                self.net[self.layer.value], self.memory.value * 1024, self._precision())
        self.listing.value = listing_html(design_vocabulary(self._schedules[key]))

    @property
    def view(self) -> widgets.Widget:
        controls = widgets.VBox([self.network, self.layer, self.models, self.elem_bytes,
                                 self.psum_bytes, self.memory, self.progress, self.status])
        return widgets.VBox([widgets.HBox([controls, bokeh_widget(self.figure)]),
                             self.summary, self.listing])


def traffic_explorer(**kwargs) -> TrafficExplorer:
    """Build the traffic-model explorer (keyword arguments as TrafficExplorer)."""
    return TrafficExplorer(**kwargs)
