"""The tile explorer app: one layer's solutions on an editable platform, with linked views.

Moving a control prices the layer's candidate sets (the tiles that can be optimal for some
platform, `tiling.candidates`) on the edited platform and updates the bokeh sources: no tile
is enumerated again. Selecting a point on the roofline shows that solution's loop nest and its
cycle and energy breakdown.

The design bar saves and loads the session (network, batch, layer, schedules, objective, memory
sweep, the selected point and the whole platform) and exports the layer's solutions as CSV and
the chosen tile as YAML (`ui.tile_session`); its format switch makes the save tools write SVG.
"""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource, LogScale

from workbench import explore, layers, perf, spelling, tiling, viz
from workbench.errors import WorkbenchError
from workbench.memo import Caches
from workbench.ui import tile_session
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.controls import listing_html, memory_slider, range_slider, size_exponent
from workbench.ui.design_bar import DesignBar
from workbench.ui.errors import error_html
from workbench.ui.levels_note import LevelsNote
from workbench.ui.live_table import LiveTable, mapping_frames
from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.progress import busy, took
from workbench.viz.units import (
    TILE_HEADER,
    fmt_count,
    fmt_energy,
    fmt_number,
    fmt_tile,
    has_energy,
)

TOP_COLUMNS = ("schedule", *tiling.TILE_DIMS, "footprint_bytes", "cycles",
               "ext_accesses", "dma_transfers", "throughput_gops", "ctc", "energy_pj")
TOP_ROWS = 100  # the live table: the best solutions under the objective
MAX_POINTS = 5000  # larger candidate sets are drawn as their per-schedule Pareto fronts
KB = 1024
SWEEP_LOG2 = (7, 24)  # the memory sweep's range slider: 128 B .. 16 MB


def best_tile(row) -> str:
    """'tile TOx×TOy×TOc×TOn×TKc 14×16×32×1×16' of a solutions row."""
    return f"{TILE_HEADER} {fmt_tile(row[d] for d in tiling.TILE_DIMS)}"


class TileExplorer:
    """Widgets, bokeh sources and callbacks of the tile explorer (see the module docstring).
    `sweep_memory_kb`: the smallest and largest local memory (KB, powers of two) of the
    memory sweep; `buffer_range_log2` (log2 of bytes) is its old spelling, read with one
    notice."""

    def __init__(self, network: str = "lenet5", layer: str | None = None,
                 platform: str = "idsp", batch: int | None = 8,
                 sweep_memory_kb: tuple[float, float] = (1, 512),
                 objective: str = "cycles",
                 buffer_range_log2: tuple[int, int] | None = None) -> None:
        if buffer_range_log2 is not None:
            spelling.notice("buffer_range_log2", "sweep_memory_kb", "tile_explorer")
            sweep_memory_kb = tuple((1 << k) / KB for k in buffer_range_log2)
        if len(sweep_memory_kb) != 2:
            raise WorkbenchError(f"sweep_memory_kb: two sizes (smallest, largest), got "
                                 f"{sweep_memory_kb!r}")
        lo, hi = (size_exponent(kb, SWEEP_LOG2, "sweep_memory_kb") for kb in sweep_memory_kb)
        if lo > hi:
            raise WorkbenchError(f"sweep_memory_kb: the smallest size first, got "
                                 f"{sweep_memory_kb!r}")
        self.batch = batch
        self.caches = Caches()  # what the engine keeps between this app's edits
        self.net = layers.load_network(network, batch=batch)
        names = [lay.name for lay in self.net.tiled_layers()]
        self.network = widgets.Combobox(value=str(network), options=layers.list_networks(),
                                        description="network", ensure_option=False,
                                        continuous_update=False,
                                        placeholder="zoo name or .onnx/.prototxt/.yaml path")
        self.panel = PlatformPanel(platform)
        self.layer = widgets.Dropdown(options=names, value=layer or names[0],
                                      description="layer")
        self.schedules = widgets.SelectMultiple(options=tiling.SCHEDULES,
                                                value=tiling.SCHEDULES, description="schedules")
        explore.check_objective(objective)
        self.objective = widgets.Dropdown(options=explore.OBJECTIVES, value=objective,
                                          description="best by")
        self.memory_log2 = memory_slider(
            int(self.panel.fields["local_mem_bytes"].value).bit_length() - 1)
        self.buffer_range = range_slider((lo, hi), *SWEEP_LOG2)
        self.status = widgets.HTML()
        self.listing = widgets.HTML("<i>select a point on the roofline</i>")
        self.breakdown = widgets.HTML()
        empty = {k: [] for k in viz.explore_plots.ROOFLINE_COLUMNS}
        self.points = ColumnDataSource(dict(empty), name="explorer_points")
        self.front = ColumnDataSource(dict(empty), name="explorer_front")
        self.roofline = viz.roofline(self.points, self.panel.platform(), self.front)
        self.sweep_box = widgets.VBox()
        self.sweep_figure = None
        self.solutions = pd.DataFrame()
        self.points.selected.on_change("indices", self._on_select)
        self._roofs = self.roofline.select_one({"name": "roofs"}).data_source
        self._peak = self.roofline.select_one({"name": "peak"})
        self._switching = False  # a network switch replaces the layer options
        self._syncing = False  # the memory slider follows the panel
        self._holding = False  # a session being shown: one update at the end
        self.selected_index: int | None = None  # the row of `solutions` selected
        self.top_table = LiveTable("tiles_top")  # the best TOP_ROWS, following the controls
        self.bar = DesignBar("tiles", lambda path: tile_session.save(self, path), self.load,
                             lambda stem: tile_session.write(self, stem),
                             lambda: [self.roofline, self.sweep_figure])
        for control in (self.layer, self.schedules):
            control.observe(lambda change: None if self._switching else self.update(),
                            names="value")
        self.objective.observe(lambda change: self.update_all(), names="value")
        self.buffer_range.observe(lambda change: self.update_sweep(), names="value")
        self.panel.on_change(self.update_all)
        self.levels_note = LevelsNote(self.panel, "tile explorer")
        self.network.observe(self._load_network, names="value")
        self.memory_log2.observe(self._memory_moved, names="value")
        self.update_all()

    # callbacks -----------------------------------------------------------------------------
    def _load_network(self, change) -> None:
        """A zoo name or a model file: reload, offer its conv/fc layers, re-explore (the
        status line says so meanwhile: a big network's candidate sets take seconds)."""
        if self._holding:
            return
        try:
            with busy(self.status, f"loading {change['new']} and pricing its first layer"):
                net = layers.load_network(change["new"], batch=self.batch)
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        names = [lay.name for lay in net.tiled_layers()]
        if not names:
            self.status.value = error_html(WorkbenchError(
                f"network {net.name!r} has no conv or fc layer to explore"))
            return
        self.net, self._switching = net, True
        try:  # new options first (ipywidgets moves the value to the first one), no update yet
            self.layer.options = names
            self.layer.value = names[0]
        finally:
            self._switching = False
        self.update_all()

    def _memory_moved(self, change) -> None:
        """The slider sets the panel's memory quietly and re-prices once; the buffer-size
        sweep does not depend on it."""
        if self._syncing or self._holding:
            return
        self.panel.set_quietly("local_mem_bytes", 1 << change["new"])
        self.update()

    def _slider_from_panel(self) -> None:
        """The memory slider at the panel's local memory (a preset, an undo) when the slider
        has that size."""
        size = int(self.panel.fields["local_mem_bytes"].value)
        k = size.bit_length() - 1
        if size == 1 << k and k in [v for _, v in self.memory_log2.options]:
            self._syncing = True
            try:
                self.memory_log2.value = k
            finally:
                self._syncing = False

    def update_all(self) -> None:
        if self._holding:
            return
        self._slider_from_panel()
        self.update()
        self.update_sweep()

    def update(self) -> None:
        """Price the layer's candidates at the chosen memory and refresh the roofline sources."""
        try:
            plat = self.panel.platform().replace(local_mem_bytes=1 << self.memory_log2.value)
            layer = self.net[self.layer.value]
            with busy(self.status, f"pricing the candidate tiles of {layer.name}") as timing:
                df = explore.fitting_candidates(layer, plat, self.schedules.value,
                                                max_rows=MAX_POINTS, caches=self.caches)
            if df.empty:
                raise explore.too_small(layer, plat.local_mem_bytes, plat.elem_bytes,
                                                  plat.double_buffer)
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        total = df.attrs["fitting"]
        self.solutions, self.selected_index = df.reset_index(drop=True), None
        self.top_table.show(*self._top(TOP_ROWS))
        front = explore.pareto(self.solutions)
        self.points.selected.indices = []
        self.points.data = viz.roofline_data(self.solutions)
        self.front.data = viz.roofline_data(front)
        self._roofs.data = viz.roofs(plat, list(self.solutions["ctc"]))
        axis = "log" if isinstance(self.roofline.y_scale, LogScale) else "linear"
        self._peak.visible = viz.roof_in_view(self.points.data["throughput_gops"],
                                              plat.peak_gops, axis)
        objective = self.objective.value
        best = self.solutions.sort_values(list(explore.ranking(objective))).iloc[0]
        drawn = "" if total == len(df) else f" (drawn: the {len(df)} per-schedule Pareto points)"
        self.status.value = (
            f"{total:,} candidate mappings fit{drawn}, {len(front)} on the Pareto front; "
            f"best by {objective}: {best['schedule']} {best_tile(best)} at "
            f"{fmt_count(best['cycles'])} cycles, "
            f"{fmt_energy(best['energy_pj'], has_energy(plat))}, "
            f"{fmt_count(best['ext_accesses'])} accesses{took(timing['seconds'])}")

    def update_sweep(self) -> None:
        """Redraw the buffer-size sweep over the chosen range."""
        lo, hi = self.buffer_range.value
        try:
            plat = self.panel.platform()
            layer = self.net[self.layer.value]
            best = explore.explore_layer(layer, plat, self.schedules.value,
                                         [1 << k for k in range(lo, hi + 1)], keep="best",
                                         objective=self.objective.value, caches=self.caches)
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        summary = explore.sweep_summary(layer, best, self.objective.value)
        self.sweep_figure = viz.buffer_sweep(summary, "cycles_rel",
                                             title=f"{layer.name}: cycles vs local memory")
        self.bar.style(self.sweep_figure)
        self.sweep_box.children = [bokeh_widget(self.sweep_figure)]

    def _on_select(self, attr, old, new) -> None:
        if new:
            self.select(new[0])

    def select(self, index: int) -> None:
        """Show the loop nest and breakdown of solution `index` (a row of `solutions`)."""
        row = self.solutions.iloc[index]
        self.selected_index = index
        layer = self.net[self.layer.value]
        tile = tiling.Tile(*(int(row[d]) for d in tiling.TILE_DIMS))
        plat = self.panel.platform().replace(local_mem_bytes=1 << self.memory_log2.value)
        e = perf.estimate(layer, tile, row["schedule"], plat)
        self.listing.value = listing_html(tiling.listing(layer, tile, row["schedule"]))
        parts = "".join(f"<tr><td>{k}</td><td>{fmt_count(v)} cycles</td></tr>"
                        for k, v in e.breakdown.items())
        energy = "".join(f"<tr><td>{k}</td><td>{fmt_energy(v, has_energy(plat))}</td></tr>"
                         for k, v in e.energy_pj.items())
        self.breakdown.value = (f"<b>{row['schedule']}, {best_tile(row)}</b>: "
                                f"{fmt_count(e.cycles)} cycles, {fmt_number(e.throughput_gops)} "
                                f"GOps/s, CTC {fmt_number(e.ctc)} ops/B"
                                f"<table>{parts}{energy}</table>")

    def chosen_row(self) -> pd.Series:
        """The selected solution, or the best under the objective."""
        if self.selected_index is not None:
            return self.solutions.iloc[self.selected_index]
        return tile_session.ranked(self).iloc[0]

    def load(self, path: str) -> None:
        """Show the session of a file (checked whole before anything changes)."""
        s, net, sel = tile_session.read(path, SWEEP_LOG2)
        self._holding, self._switching = True, True
        try:
            self.net, self.batch = net, s.batch
            self.network.value = s.network
            self.layer.options = [lay.name for lay in net.tiled_layers()]
            self.layer.value = sel["layer"]
            self.schedules.value = sel["schedules"]
            self.objective.value = s.objective
            self.buffer_range.value = sel["sweep"]
            self.panel.load(s.platform)
        finally:
            self._holding, self._switching = False, False
        self.update_all()
        tile_session.select_tile(self, sel["selected"])

    def top(self, n: int = 10) -> pd.DataFrame:
        """The n best solutions under the objective, readable (tile named in the header)."""
        return self._top(n)[0]

    def _top(self, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = self.solutions.sort_values(list(explore.ranking(self.objective.value))).head(n)
        return mapping_frames(rows, TOP_COLUMNS, has_energy(self.panel.platform()))

    # layout --------------------------------------------------------------------------------
    @property
    def view(self) -> widgets.Widget:
        controls = widgets.VBox([self.network, self.layer, self.schedules, self.objective,
                                 self.memory_log2, self.buffer_range, self.status,
                                 self.levels_note.widget])
        return widgets.VBox([
            widgets.HBox([widgets.Accordion([self.panel.view], titles=("platform",)), controls]),
            self.bar.view,
            bokeh_widget(self.roofline), widgets.HBox([self.listing, self.breakdown]),
            self.top_table.view,
            self.sweep_box])


def tile_explorer(**kwargs) -> TileExplorer:
    """Build the tile explorer app (keyword arguments as TileExplorer)."""
    return TileExplorer(**kwargs)
