"""The design-space app: a whole network's best mappings on an editable platform, for every
local-memory size at once.

A change of network, batch, platform field or objective runs ONE engine query
(`explore.best_mappings` over all slider sizes, 2^7..2^24 bytes) and keeps its rows and the
network totals per size; moving the memory slider only selects the kept rows of that size and
updates the bokeh sources in place (no engine call). Results are memoized per (layers,
platform, objective), so going back to an earlier setting costs nothing.
"""

from __future__ import annotations

import functools
import math
import time
from collections import OrderedDict

import ipywidgets as widgets
import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource

from workbench import explore, layers, viz
from workbench.errors import WorkbenchError
from workbench.memo import Caches
from workbench.platforms import Platform
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.controls import memory_slider
from workbench.ui.errors import error_html
from workbench.ui.levels_note import LevelsNote
from workbench.ui.live_table import LiveTable, mapping_frames
from workbench.ui.platform_panel import PlatformPanel
from workbench.viz import design_plots as dp
from workbench.viz import units

MEMORY_LOG2 = (7, 24)
SIZES = tuple(1 << k for k in range(MEMORY_LOG2[0], MEMORY_LOG2[1] + 1))  # bytes
_KEEP = 8  # memoized (layers, platform, objective) results
_TOTALS_COLUMNS = ("cycles", "throughput_gops", "ext_accesses", "dma_transfers", "energy_pj")
LAYER_COLUMNS = ("layer", "schedule", *units.TILE_COLUMNS, "footprint_bytes",
                 "cycles", "energy_pj", "throughput_gops", "ctc")


def log2_size(size_bytes: float) -> int:
    """Exponent of the power of two nearest to `size_bytes`, clipped to the slider range."""
    k = round(math.log2(max(float(size_bytes), 1.0)))
    return int(min(max(k, MEMORY_LOG2[0]), MEMORY_LOG2[1]))


class DesignSpaceApp:
    """Widgets, bokeh sources and callbacks of the design-space app (see the module docstring).

    After each update: `best` (every layer × feasible size, `best_mappings` columns), `sizes`
    (network totals per feasible size, with `pareto`), `per_layer` (rows of the selected size)
    and `current` (its totals, None when some layer has no fitting tile)."""

    def __init__(self, network: str = "vgg16", batch: int = 8, platform: str = "idsp",
                 objective: str = "cycles", memory_kb: float | None = None,
                 compute: bool = True) -> None:
        explore.check_objective(objective)
        self.net = layers.load_network(network, batch=batch)
        self.network_name = str(network)
        self.network = widgets.Combobox(value=str(network), options=layers.list_networks(),
                                        description="network", ensure_option=False,
                                        continuous_update=False,
                                        placeholder="zoo name or .onnx/.prototxt/.yaml path")
        self.batch = widgets.IntText(value=batch, description="batch")
        self.panel = PlatformPanel(platform)
        self.platform: Platform = self.panel.platform()  # the last valid platform
        self.objective = widgets.Dropdown(options=explore.OBJECTIVES, value=objective,
                                          description="objective")
        memory = memory_kb * 1024 if memory_kb else self.platform.local_mem_bytes
        self.memory_log2 = memory_slider(log2_size(memory), *MEMORY_LOG2)
        self.status = widgets.HTML()
        self.totals = widgets.HTML()
        self.totals.add_class("wb-design-totals")
        self.best = pd.DataFrame()
        self.sizes = pd.DataFrame(columns=["memory_bytes", "pareto"])
        self.per_layer = pd.DataFrame()
        self.current: dict[str, float] | None = None
        self._rows: dict[int, np.ndarray] = {}
        self._memo: OrderedDict[tuple, pd.DataFrame] = OrderedDict()
        self.caches = Caches()  # what the engine keeps between this app's edits
        self._summary = ""
        self.layer_live = LiveTable("design_layers")  # the selected size's mappings
        self._build_figures()
        self._set_layers()
        self._memory_to_panel()
        self.panel.forget_history()  # the memory asked for is where undo stops
        self._connect()
        if compute:
            self.recompute()

    def _build_figures(self) -> None:
        """Empty sources and the four figures drawing them."""
        self.cycles_source = ColumnDataSource({"layer": []}, name="design_cycles")
        self.energy_source = ColumnDataSource({"layer": []}, name="design_energy")
        self.points = ColumnDataSource(dp.roofline_points_data(pd.DataFrame(), None),
                                       name="design_points")
        self.roofs = ColumnDataSource(viz.roofs(self.platform), name="design_roofs")
        empty = dp.memory_points_data(pd.DataFrame())
        self.memory_points = ColumnDataSource(dict(empty), name="design_sizes")
        self.front = ColumnDataSource(dp.front_points_data(pd.DataFrame(), pd.DataFrame()),
                                      name="design_front")
        self.selected = ColumnDataSource(dict(empty), name="design_selected")
        for src, kind in ((self.cycles_source, "cycles"), (self.energy_source, "energy")):
            src.data = dp.breakdown_data(pd.DataFrame(), kind, [])
        self.cycles_figure = dp.layer_breakdown(self.cycles_source, "cycles")
        self.energy_figure = dp.layer_breakdown(self.energy_source, "energy")
        self.roofline = dp.layer_roofline(self.points, self.roofs)
        self.tradeoff = dp.memory_tradeoff(self.memory_points, self.front, self.selected)

    def _connect(self) -> None:
        self.network.observe(lambda change: self._load(change["new"]), names="value")
        self.batch.observe(lambda change: self._load(self.network_name), names="value")
        self.objective.observe(lambda change: self.recompute(), names="value")
        self.memory_log2.observe(lambda change: self._on_memory(), names="value")
        self.panel.on_change(self._platform_changed)
        self.levels_note = LevelsNote(self.panel, "design space")
        self.memory_points.selected.on_change("indices", self._on_tap)

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
        self._set_layers()
        self.recompute()

    def _set_layers(self) -> None:
        """Give the breakdown figures the network's layers: the sources are emptied before the
        factors change, so no glyph ever refers to a layer its range does not hold."""
        names = self.layer_names
        for src, fig in ((self.cycles_source, self.cycles_figure),
                         (self.energy_source, self.energy_figure)):
            src.data = {k: [] for k in src.data}
            fig.x_range.factors = names
            dp.fit_layer_labels(fig, names)
        self.points.data = dp.roofline_points_data(pd.DataFrame(), None)

    def _platform_changed(self) -> None:
        """A panel edit: recompute unless only local_mem_bytes moved (then select that size)."""
        try:
            plat = self.panel.platform()
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        self.panel.message.value = ""
        others_changed = plat.replace(local_mem_bytes=self.platform.local_mem_bytes) \
            != self.platform
        self.platform = plat
        if others_changed:
            self.recompute(select=False)
        self._set_memory(plat.local_mem_bytes)

    def _set_memory(self, size_bytes: float) -> None:
        """Move the slider to the size (snapped to a power of two) and select it."""
        k = log2_size(size_bytes)
        if self.memory_log2.value != k:
            self.memory_log2.value = k  # -> _on_memory
        else:
            self._on_memory()

    def _on_memory(self) -> None:
        self._memory_to_panel()
        self.select()

    def _memory_to_panel(self) -> None:
        """Show the selected size in the panel's local_mem_bytes field (no recompute)."""
        size = 1 << self.memory_log2.value
        self.panel.set_quietly("local_mem_bytes", size)
        self.platform = self.platform.replace(local_mem_bytes=size)

    def _on_tap(self, attr: str, old: list[int], new: list[int]) -> None:
        """A memory size tapped on the trade-off plot becomes the selected size."""
        if new:
            size = self.memory_points.data["memory_bytes"][new[0]]
            self.memory_points.selected.indices = []
            self._set_memory(size)

    # computation ---------------------------------------------------------------------------
    @property
    def layer_names(self) -> list[str]:
        return [lay.name for lay in self.net.tiled_layers()]

    def recompute(self, select: bool = True) -> None:
        """Best mapping of every layer at every slider size (one engine query, memoized), the
        network totals per feasible size and their Pareto front; then select the slider size."""
        tiled = tuple(self.net.tiled_layers())
        objective = self.objective.value
        key = (tiled, self.platform.replace(local_mem_bytes=SIZES[0]), objective)
        start = time.perf_counter()
        if key not in self._memo:
            self.status.value = (f"<i>computing the best mappings of {len(tiled)} layers "
                                 f"for {len(SIZES)} memory sizes (a new network's candidate "
                                 "sets take a few seconds the first time)…</i>")
            try:
                best = explore.best_mappings(tiled, self.platform, SIZES, objective=objective,
                                             caches=self.caches)
            except WorkbenchError as exc:
                self.status.value = error_html(exc)
                self._rows = {}  # nothing valid to select until the next change
                return
            self._memo[key] = best
            while len(self._memo) > _KEEP:
                self._memo.popitem(last=False)
        self._memo.move_to_end(key)
        self.best = self._memo[key]
        self._rows = {int(s): i for s, i in self.best.groupby("buffer_bytes").indices.items()}
        self.sizes = self._size_totals()
        self.memory_points.data = dp.memory_points_data(self.sizes)
        self.front.data = dp.front_points_data(self.sizes[self.sizes["pareto"]], self.sizes)
        self.roofs.data = viz.roofs(self.platform, self.best["ctc"].tolist())
        self._summary = self._describe(time.perf_counter() - start)
        if select:
            self.select()

    def _size_totals(self) -> pd.DataFrame:
        """Network totals (`explore.network_totals`) per memory size where every layer fits,
        traffic in MB, and `pareto`: non-dominated in (memory, energy, time), all minimized."""
        n_layers = len(self.net.tiled_layers())
        columns = {k: self.best[k].to_numpy() for k in _TOTALS_COLUMNS}
        rows = []
        for size, index in sorted(self._rows.items()):
            if len(index) == n_layers:
                # the columns network_totals reads, as arrays: a DataFrame per size would
                # cost more than the engine query itself
                per_layer = {k: v[index] for k, v in columns.items()}
                totals = explore.network_totals(per_layer, self.platform)
                rows.append({"memory_bytes": size, **totals, "traffic_mb":
                             totals["ext_accesses"] * self.platform.elem_bytes / 1e6})
        sizes = pd.DataFrame(rows, columns=["memory_bytes", "cycles", "ext_accesses",
                                            "dma_transfers", "energy_pj", "throughput_gops",
                                            "time_ms", "traffic_mb"])
        values = sizes[["memory_bytes", "energy_pj", "time_ms"]].to_numpy(dtype=float)
        sizes["pareto"] = explore.pareto_mask(values, maximize=[False, False, False]) \
            if len(sizes) else np.zeros(0, dtype=bool)
        return sizes

    def _describe(self, seconds: float) -> str:
        feasible = self.sizes["memory_bytes"]
        reach = (f"every layer fits from {dp.memory_label(feasible.min())}, "
                 f"{int(self.sizes['pareto'].sum())} sizes on the Pareto front"
                 if len(feasible) else "no size up to 16 MB fits every layer")
        return (f"{self.net.name}, batch {self.net.batch}: {len(self.layer_names)} conv/fc "
                f"layers × {len(SIZES)} memory sizes in {units.fmt_seconds(seconds)}; {reach}")

    def select(self) -> None:
        """Show the kept rows of the slider's size: totals line, status and every source."""
        if not self._rows:  # nothing computed yet
            return
        size = 1 << self.memory_log2.value
        names = self.layer_names
        per_layer = self.best.iloc[self._rows.get(size, [])].reset_index(drop=True)
        self.per_layer = per_layer
        self.layer_live.show(*self._layer_frames())
        self.cycles_source.data = dp.breakdown_data(per_layer, "cycles", names)
        self.energy_source.data = dp.breakdown_data(per_layer, "energy", names)
        self.points.data = dp.roofline_points_data(per_layer, self.roofs.data)
        self.selected.data = dp.selected_memory_data(self.sizes, size)
        fits = set(per_layer["layer"]) if len(per_layer) else set()
        missing = [name for name in names if name not in fits]
        label = dp.memory_label(size)
        if missing:
            self.current = None
            self.status.value = error_html(WorkbenchError(
                f"infeasible at {label}: no tile of {', '.join(missing)} fits; "
                + (f"every layer fits from {dp.memory_label(self.sizes['memory_bytes'].min())}"
                   if len(self.sizes) else "no size up to 16 MB fits every layer")))
            self.totals.value = f"<b>{self.net.name}</b> does not fit in {label}"
            return
        self.current = self.sizes.set_index("memory_bytes").loc[size].to_dict()
        self.status.value = self._summary
        self.totals.value = self._totals_html(label)

    def _totals_html(self, label: str) -> str:
        t = self.current
        energy = units.fmt_energy(t["energy_pj"], units.has_energy(self.platform))
        return (f"<b>{self.net.name}</b>, batch {self.net.batch}, {label} local memory: "
                f"<b>{units.fmt_ms(t['time_ms'])}</b> · <b>{energy}</b> · "
                f"{units.fmt_gops(t['throughput_gops'])} · "
                f"{units.fmt_number(t['traffic_mb'])} MB external "
                f"traffic — mappings chosen by <b>{self.objective.value}</b>"
                + (f" · conv/fc layers on one of the {self.platform.cores} cores (splits over "
                   "cores: notebook 10, <code>workbench explore</code>)"
                   if self.platform.cores > 1 else ""))

    def layer_table(self) -> pd.DataFrame:
        """The per-layer mappings of the selected size, readable (tile named in the header)."""
        return self._layer_frames()[0]

    def _layer_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        if self.per_layer.empty:
            return pd.DataFrame(), pd.DataFrame()
        return mapping_frames(self.per_layer, LAYER_COLUMNS, units.has_energy(self.platform))

    # layout --------------------------------------------------------------------------------
    @functools.cached_property
    def view(self) -> widgets.Widget:
        """Controls, totals line and the four figures (one bokeh document)."""
        controls = widgets.VBox([self.network, self.batch, self.objective, self.memory_log2,
                                 self.status, self.levels_note.widget])
        figures = column(row(self.cycles_figure, self.energy_figure),
                         row(self.roofline, self.tradeoff))
        return widgets.VBox([
            widgets.HBox([widgets.Accordion([self.panel.view], titles=("platform",)),
                          controls]),
            self.totals, bokeh_widget(figures), self.layer_live.view])


def design_space(**kwargs) -> DesignSpaceApp:
    """Build the design-space app (keyword arguments as DesignSpaceApp)."""
    return DesignSpaceApp(**kwargs)
