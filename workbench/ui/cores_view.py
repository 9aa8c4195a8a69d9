"""The multi-core app: how each layer of a network scales over the cores of an editable
platform, and which split (K: output maps, XY: image rows, N: batch, G: groups) and how many
cores it gets.

A change of network, batch, platform field or objective runs the engine (`explore.cores`):
`network_cores` for the chosen split and cores of every layer, `split_comparison` (K vs XY on
all the platform's cores, DMA broadcast off and on) and the selected layer's `split_options`.
Results are memoized per (layers, platform, objective), so going back to a setting costs
nothing; picking another layer only runs (or recalls) that layer's `split_options`. The bokeh
sources are updated in place.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Sequence

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource

from workbench import explore, layers
from workbench.errors import WorkbenchError
from workbench.explore import cores as engine
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches
from workbench.platforms import Platform
from workbench.tiling.partition import SPLITS, max_cores
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.errors import error_html
from workbench.ui.levels_note import LevelsNote
from workbench.ui.platform_panel import PlatformPanel
from workbench.viz import core_plots as cp
from workbench.viz.common import apply_labels

_KEEP = 8  # memoized results per kind
QUICK_FIELDS = ("cores", "dma_channels", "dma_broadcast", "bus_elems_per_cycle",
                "local_mem_bytes")


def split_comparison(layer_list: Sequence[ConvLayer], platform: Platform,
                     objective: str = "cycles", cores: int | None = None,
                     splits: Sequence[str] = ("oc", "xy"),
                     caches: Caches | None = None) -> pd.DataFrame:
    """Each layer's best mapping per split on `cores` cores (default: all the platform's),
    with the DMA broadcast off and on: `split_options` rows plus `broadcast`. A split that
    cannot use that many cores (fewer maps or rows than cores) has no row; none below 2 cores."""
    k = platform.cores if cores is None else int(cores)
    frames = []
    for broadcast in (False, True):
        if k < 2:
            break
        plat = platform.replace(cores=k, dma_broadcast=broadcast)
        for layer in layer_list:
            usable = [s for s in splits if max_cores(layer, s, k) == k]
            if usable:
                df = engine.split_options(layer, plat, objective, splits=usable, cores=[k],
                                          caches=caches)
                frames.append(df.drop(columns="speedup").assign(broadcast=broadcast))
    if not frames:
        return pd.DataFrame(columns=["layer", "split", "cores", "broadcast", "cycles",
                                     "ext_accesses", "in_accesses", "w_accesses",
                                     "out_accesses", "bound"])
    return pd.concat(frames, ignore_index=True)


class CoresExplorer:
    """Widgets, bokeh sources and callbacks of the multi-core app (module docstring).

    After each update: `options` (the selected layer's `split_options`), `chosen`
    (`network_cores`: one row per layer) and `comparison` (`split_comparison`)."""

    def __init__(self, network: str = "alexnet_oxford102", batch: int = 1,
                 platform: str = "shave", objective: str = "cycles", layer: str | None = None,
                 cores: int | None = None, compute: bool = True) -> None:
        explore.check_objective(objective)
        self.net = layers.load_network(network, batch=batch)
        self.network_name = str(network)
        names = self.layer_names
        if layer is not None and layer not in names:
            raise WorkbenchError(f"network {self.net.name!r} has no conv/fc layer {layer!r}; "
                                 "layers: " + ", ".join(names))
        self.network = widgets.Combobox(value=str(network), options=layers.list_networks(),
                                        description="network", ensure_option=False,
                                        continuous_update=False,
                                        placeholder="zoo name or .onnx/.prototxt/.yaml path")
        self.batch = widgets.IntText(value=batch, description="batch")
        self.layer = widgets.Dropdown(options=names, value=layer or names[0],
                                      description="layer")
        self.objective = widgets.Dropdown(options=explore.OBJECTIVES, value=objective,
                                          description="objective")
        self.panel = PlatformPanel(platform)
        if cores is not None:
            self.panel.set_quietly("cores", cores)
        self.panel.forget_history()  # the cores asked for are where undo stops
        self.platform: Platform = self.panel.platform()  # the last valid platform
        self.quick = widgets.VBox()
        self._quick_fields()
        self.status = widgets.HTML()
        self.summary = widgets.HTML()
        self.options = pd.DataFrame()
        self.chosen = pd.DataFrame()
        self.comparison = pd.DataFrame()
        self._network_memo: OrderedDict[tuple, tuple[pd.DataFrame, pd.DataFrame]] = \
            OrderedDict()
        self._layer_memo: OrderedDict[tuple, pd.DataFrame] = OrderedDict()
        self.caches = Caches()  # what the engine keeps between this app's edits
        self._loading = False
        self._build_figures()
        self._connect()
        if compute:
            self.recompute()

    def _build_figures(self) -> None:
        """Empty sources and the four figures drawing them."""
        names = self.layer_names
        self.lines = {s: ColumnDataSource(cp.speedup_data(pd.DataFrame(), s),
                                          name=f"cores_speedup_{s}") for s in SPLITS}
        self.ideal = ColumnDataSource(cp.ideal_data(self.platform.cores), name="cores_ideal")
        self.chosen_source = ColumnDataSource(cp.chosen_data(pd.DataFrame(), names),
                                              name="cores_chosen")
        self.comparison_source = ColumnDataSource(cp.comparison_data(pd.DataFrame(), names),
                                                  name="cores_comparison")
        self.speedup_figure = cp.speedup_figure(self.lines, self.ideal)
        self.chosen_figure = cp.chosen_split(self.chosen_source, self.platform.cores)
        self.traffic_figure = cp.comparison_traffic(self.comparison_source)
        self.cycles_figure = cp.comparison_cycles(self.comparison_source)
        self._set_factors(names)

    def _set_factors(self, names: list[str]) -> None:
        """Give the per-layer figures the network's layers; their sources are emptied first,
        so no glyph ever refers to a layer its range does not hold."""
        for src in (self.chosen_source, self.comparison_source):
            src.data = {k: [] for k in src.data}
        self.chosen_figure.x_range.factors = names
        apply_labels(self.chosen_figure.xaxis[0], names, self.chosen_figure.width - 160)
        self.traffic_figure.x_range.factors = self.cycles_figure.x_range.factors = \
            cp.comparison_factors(names)
        for fig in (self.traffic_figure, self.cycles_figure):
            cp.fit_comparison(fig, names)  # wider for many layers: readable bars and names

    def _connect(self) -> None:
        self.network.observe(lambda change: self._load(change["new"]), names="value")
        self.batch.observe(lambda change: self._load(self.network_name), names="value")
        self.layer.observe(lambda change: self._on_layer(), names="value")
        self.objective.observe(lambda change: self.recompute(), names="value")
        self.panel.on_change(self._platform_changed)
        self.levels_note = LevelsNote(self.panel, "cores view")

    # callbacks -----------------------------------------------------------------------------
    def _load(self, name: str) -> None:
        """A zoo name or model file at the batch size: reload, redraw its layers, recompute."""
        try:
            net = layers.load_network(name, batch=self.batch.value)
            if not net.tiled_layers():
                raise WorkbenchError(f"network {net.name!r} has no conv or fc layer to map")
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        self.net, self.network_name = net, str(name)
        names, kept = self.layer_names, self.layer.value
        self._loading = True  # the dropdown's own value change must not compute
        try:
            self.layer.options = names  # resets the value
            self.layer.value = kept if kept in names else names[0]
        finally:
            self._loading = False
        self._set_factors(names)
        self.recompute()

    def _quick_fields(self) -> None:
        """The multi-core fields beside the controls: the panel's own widgets (a preset or an
        undo builds them anew)."""
        self.cores, self.dma_channels, self.dma_broadcast, self.bus, self.memory = (
            self.panel.fields[f] for f in QUICK_FIELDS)
        self.quick.children = [self.cores, self.dma_channels, self.dma_broadcast, self.bus,
                               self.memory]

    def _platform_changed(self) -> None:
        self._quick_fields()
        try:
            self.platform = self.panel.platform()
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        self.panel.message.value = ""
        self.recompute()

    def _on_layer(self) -> None:
        if self._loading:
            return
        try:
            self._show_layer()
        except WorkbenchError as exc:
            self.status.value = error_html(exc)

    # computation ---------------------------------------------------------------------------
    @property
    def layer_names(self) -> list[str]:
        return [lay.name for lay in self.net.tiled_layers()]

    @property
    def selected_layer(self) -> ConvLayer:
        return next(lay for lay in self.net.tiled_layers() if lay.name == self.layer.value)

    def recompute(self) -> None:
        """Chosen split and cores of every layer, the K-vs-XY comparison and the selected
        layer's options on the current platform and objective (memoized)."""
        tiled = tuple(self.net.tiled_layers())
        objective = self.objective.value
        key = (tiled, self.platform, objective)
        start = time.perf_counter()
        try:
            if key not in self._network_memo:
                self.status.value = (f"<i>mapping {len(tiled)} layers on 1…{self.platform.cores}"
                                     " cores (a new network's candidate sets take a few "
                                     "seconds the first time)…</i>")
                chosen = engine.network_cores(tiled, self.platform, objective,
                                              caches=self.caches)
                self._network_memo[key] = (chosen, split_comparison(
                    tiled, self.platform, objective, caches=self.caches))
                while len(self._network_memo) > _KEEP:
                    self._network_memo.popitem(last=False)
            self._network_memo.move_to_end(key)
            self.chosen, self.comparison = self._network_memo[key]
            self._show_layer()
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        names = self.layer_names
        self.chosen_source.data = cp.chosen_data(self.chosen, names)
        self.comparison_source.data = cp.comparison_data(self.comparison, names)
        self.chosen_figure.y_range.end = self.platform.cores + 1.5
        self.status.value = self._network_line(time.perf_counter() - start)

    def _show_layer(self) -> None:
        """The selected layer's speed-up lines, ideal line, title and summary line."""
        layer = self.selected_layer
        key = (layer, self.platform, self.objective.value)
        if key not in self._layer_memo:
            self._layer_memo[key] = engine.split_options(layer, self.platform,
                                                         self.objective.value,
                                                         caches=self.caches)
            while len(self._layer_memo) > 4 * _KEEP:
                self._layer_memo.popitem(last=False)
        self.options = self._layer_memo[key]
        for split, src in self.lines.items():
            src.data = cp.speedup_data(self.options, split)
        cp.show_splits(self.speedup_figure, self.lines)
        self.ideal.data = cp.ideal_data(self.platform.cores)
        self.speedup_figure.title.text = (f"{layer.name}: speed-up over one core on "
                                          f"{self.platform.name} ({self.platform.cores} cores)")
        self.summary.value = self._layer_line()

    def _layer_line(self) -> str:
        """The selected layer's chosen split (`network_cores` row) as one line."""
        rows = self.chosen[self.chosen["layer"] == self.layer.value] if len(self.chosen) \
            else self.chosen
        if rows.empty:
            return ""
        r = rows.iloc[0]
        return (f"<b>{r['layer']}</b>: best split <b>{cp.SPLIT_NAMES[r['split']]}</b> over "
                f"<b>{int(r['cores'])}</b> of {self.platform.cores} cores — "
                f"{r['speedup']:,.2f}× one core, {r['cycles']:,.0f} cycles, "
                f"{r['ext_accesses'] / 1e6:,.3f} M elements of bus traffic, "
                f"{r['bound']}-bound (best by <b>{self.objective.value}</b>)")

    def _network_line(self, seconds: float) -> str:
        p = self.platform
        counts = self.chosen["split"].value_counts()
        splits = ", ".join(f"{cp.SPLIT_SHORT[s]} on {counts[s]}" for s in SPLITS
                           if s in counts)
        io = int((self.chosen["bound"] == "I/O").sum())
        return (f"{self.net.name}, batch {self.net.batch} on {p.name}: {p.cores} cores, "
                f"{p.dma_channels} DMA channels, broadcast {'on' if p.dma_broadcast else 'off'}"
                f", bus {p.bus_elems_per_cycle:g} elements/cycle; {len(self.chosen)} conv/fc "
                f"layers ({splits}; {io} I/O-bound) in {seconds * 1e3:,.0f} ms")

    # layout --------------------------------------------------------------------------------
    @functools.cached_property
    def view(self) -> widgets.Widget:
        """Controls, summary line and the four figures (one bokeh document)."""
        controls = widgets.VBox([self.network, self.batch, self.layer, self.objective])
        figures = cp.cores_overview(self.speedup_figure, self.chosen_figure,
                                    self.traffic_figure, self.cycles_figure)
        return widgets.VBox([
            widgets.HBox([controls, self.quick,
                          widgets.Accordion([self.panel.view], titles=("platform",))]),
            self.levels_note.widget, self.status, self.summary, bokeh_widget(figures)])


def cores_explorer(network: str = "alexnet_oxford102", batch: int = 1, platform: str = "shave",
                   objective: str = "cycles", layer: str | None = None,
                   cores: int | None = None, compute: bool = True) -> CoresExplorer:
    """Build the multi-core app (arguments as CoresExplorer; `cores` overrides the preset's)."""
    return CoresExplorer(network=network, batch=batch, platform=platform, objective=objective,
                         layer=layer, cores=cores, compute=compute)

