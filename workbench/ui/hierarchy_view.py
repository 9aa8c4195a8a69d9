"""The memory-hierarchy app (seed 001): edit a platform's memory hierarchy in the platform
panel (its levels, their sizes on sliders, widths and energies, the MAC array's platform),
see every layer's per-level accesses and energy with the memory:compute energy ratio, and
drag an on-chip capacity budget to watch the co-designed hierarchy and its energy change.

The hardware is the panel's platform, as in every app: the hierarchy priced is the
platform's (`explore.hierarchy_plan.platform_hierarchy`, elements at its widths,
`platform_precision`); the app's old hardware keywords are read onto the platform
(`ui.hierarchy_setup`). Every number comes from `workbench.hierarchy.codesign`: a layer's
blocking is the exact optimum on the hierarchy (`search`), energies from the level sizes by
seed 001 table 3 where a level gives none. The co-design grid keeps the edited hierarchy's
depth, widths and split, with each level's size from `grid_kb`; its designs are computed once
per hierarchy shape and memoized, so moving the budget only re-selects. With `prefetch`, what
the user may ask next (the level sliders' other positions, a level fewer or more with its
grid) is searched ahead in worker processes (`workbench.hierarchy.prefetch`) and taken into
the memo; an edit gives them the edited hierarchy from its last layer, and one with a layer
of many slices makes them drop what they search ahead and search that layer in shares with
this process. With `background` (the notebook's), edits are priced in a thread of the kernel
and a newer edit supersedes the one being priced (`ui.background`): quick presses and drags
are priced once, at the last position, and the controls stay live meanwhile.
"""

from __future__ import annotations

import dataclasses
import html
import math
from typing import Any

import ipywidgets as widgets
from bokeh.models import ColumnDataSource

from workbench import layers
from workbench.errors import WorkbenchError
from workbench.explore.hierarchy_plan import platform_hierarchy, platform_precision
from workbench.hierarchy import Hierarchy
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.codesign import (
    Codesigner,
    Design,
    DesignSpace,
    best_within,
    pareto_front,
    scaled_capacity,
    space_around,
    table3_energy_pj,
)
from workbench.hierarchy.prefetch import Prefetcher
from workbench.memo import Caches
from workbench.platforms import Platform
from workbench.ui.background import Latest
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.controls import area_steps, kb_log2, memory_slider, size_exponent
from workbench.ui.errors import error_html
from workbench.ui.hierarchy_controls import BUDGET_LOG2, GRID_LEVELS, SIZE_LOG2, ahead
from workbench.ui.hierarchy_setup import HierarchySetup
from workbench.ui.live_table import LiveTable
from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.progress import busy, searching
from workbench.viz.hierarchy_plots import (
    MAX_LEVELS,
    TRAFFIC_NOTE,
    describe_design,
    energy_bars,
    front_data,
    front_plot,
    level_energy_data,
    relabel_front,
    relabel_levels,
    show_layers,
    summary_html,
    traffic_frames,
)

KB = 1024
STALE = "; the plots and summary still show the last hierarchy that worked"
_STYLE = {"description_width": "110px"}


class HierarchyView:
    """Widgets, bokeh sources and callbacks of the memory-hierarchy app."""

    def __init__(self, setup: HierarchySetup | None = None) -> None:
        setup = setup or HierarchySetup()
        axis, area_budget_mm2, mm2_per_kb = setup.axis, setup.area_budget_mm2, setup.mm2_per_kb
        if axis not in ("capacity", "area"):
            raise WorkbenchError(f"axis must be 'capacity' or 'area', got {axis!r}")
        if not 0 < area_budget_mm2 < math.inf:
            raise WorkbenchError(f"area_budget_mm2 must be > 0 mm², got {area_budget_mm2!r}")
        if not mm2_per_kb > 0:
            raise WorkbenchError(f"mm2_per_kb must be > 0, got {mm2_per_kb!r}")
        size_exponent(setup.budget_kb, BUDGET_LOG2, "budget_kb")
        self.panel = PlatformPanel(setup.platform, capacity_steps=SIZE_LOG2)
        net = layers.load_network(setup.network)
        self.layers = tuple(lay for lay in net.tiled_layers()
                            if lay.kind == "conv" or setup.include_fc)
        self.caches = Caches()  # the app's searches, whatever the element widths
        self._designers: dict[Any, Codesigner] = {}
        self.network_name, self.mm2_per_kb = net.name, float(mm2_per_kb)
        self.macs = sum(lay.macs for lay in self.layers)
        self.grid_bytes = sorted({int(kb * KB) for kb in setup.grid_kb})
        self._grids: dict[tuple, list[Design] | str] = {}
        self.budget = memory_slider(kb_log2(setup.budget_kb), *BUDGET_LOG2, "budget")
        self.axis = widgets.ToggleButtons(options=["capacity", "area"], value=axis,
                                          style={"button_width": "80px"})
        # its label beside it (a ToggleButtons' own description sits on a line of its own)
        self.axis_row = widgets.HBox([widgets.HTML(
            "<div style='text-align: right; padding-right: 8px'>budget by</div>",
            layout=widgets.Layout(width="110px")), self.axis])
        self.area_budget = widgets.SelectionSlider(
            options=[(f"{mm2:g} mm²", mm2) for mm2 in area_steps(area_budget_mm2)],
            value=area_budget_mm2, description="budget", style=_STYLE)
        self.status, self.summary = widgets.HTML(), widgets.HTML()
        self.traffic = LiveTable("hierarchy_traffic", note=TRAFFIC_NOTE)  # follows each edit
        self.status.layout.width = "300px"  # a long error wraps: the plot beside stays put
        self.design: Design | None = None
        self.best: Design | None = None
        self.prefetch = setup.prefetch
        self.prefetcher: Prefetcher | None = None
        # the hierarchy the panel says, its platform and element widths (set by `update`)
        self.edited, self._platform, self._precision = self._edited()
        self.designer = self._designer(self._precision)
        self.energy_source = ColumnDataSource(
            level_energy_data([], [lvl.name for lvl in self.edited.levels]), name="level_energy")
        self.energy_figure = energy_bars(self.energy_source,
                                         [lvl.name for lvl in self.edited.levels])
        self.every_source, self.front_source, self.best_source = (
            ColumnDataSource(d) for d in front_data([], [], None, 1))
        self.front_figure = front_plot(self.every_source, self.front_source, self.best_source)
        # edits after the first pricing: in a thread, the newest superseding (`background`);
        # a stop button ends a pricing under way, the panel going back to what is shown
        self.stop = widgets.Button(description="stop pricing", disabled=True,
                                   tooltip="end the pricing under way; the panel goes back "
                                           "to the hierarchy shown")
        self.stop.on_click(lambda _: self._stop())
        self.background = Latest(self._priced, self._failed, "workbench-hierarchy-app",
                                 lambda on: setattr(self.stop, "disabled", not on)) \
            if setup.background else None
        self._shown: Platform | None = None  # the platform the plots show
        self.panel.on_change(lambda: self._changed("edit"))
        for control in (self.budget, self.axis, self.area_budget):
            control.observe(lambda change: self._changed("budget"), names="value")
        self.update()

    @property
    def sizes(self) -> list[widgets.Widget]:
        """The on-chip levels' size sliders (the panel's, outermost first; values in bytes)."""
        return [row.capacity for row in self.panel.rows[1:]]

    def _edited(self) -> tuple[Hierarchy, Platform, PrecisionLike]:
        """The panel's platform's hierarchy (each on-chip level without an area of its own
        charged at mm2_per_kb), the platform and its element widths. WorkbenchError (one
        line) for an invalid platform or one the app cannot show."""
        plat = self.panel.platform()
        hierarchy = platform_hierarchy(plat)
        if not 1 <= len(hierarchy.on_chip) <= MAX_LEVELS - 1:
            raise WorkbenchError(f"memory levels: the app shows 1 to {MAX_LEVELS - 1} on-chip "
                                 f"levels, got {len(hierarchy.on_chip)}; remove one")
        return dataclasses.replace(hierarchy, levels=tuple(
            lvl if i == 0 or lvl.area_mm2_per_kb is not None
            else dataclasses.replace(lvl, area_mm2_per_kb=self.mm2_per_kb)
            for i, lvl in enumerate(hierarchy.levels))), plat, platform_precision(plat)

    def _designer(self, precision: PrecisionLike) -> Codesigner:
        """The app's designer for these element widths (its memo kept for a return to
        them); with `prefetch`, the workers search for it."""
        designer = self._designers.get(precision)
        if designer is None:
            designer = self._designers[precision] = Codesigner(
                self.layers, precision, table3_energy_pj, caches=self.caches)
        if self.prefetch and (self.prefetcher is None or self.prefetcher.designer is not
                              designer):
            if self.prefetcher is not None:
                self.prefetcher.close()
            self.prefetcher = Prefetcher(designer)
        return designer

    def _changed(self, kind: str) -> None:
        """A control moved: reprice now, or ask the background thread (an edit supersedes
        the pricing under way; a budget move waits for it)."""
        if self.background is None:
            self._priced(frozenset({kind}))
        else:
            self.background.ask(kind, supersede=kind == "edit")

    def _priced(self, kinds: frozenset[str]) -> None:
        (self.update if "edit" in kinds else self.update_budget)()

    def _stop(self) -> None:
        """The stop button: the pricing under way ends at its search's next safe point (the
        layers it finished stay memoized); the panel goes back to the platform shown, or,
        stopped while a new shape's grid was priced, the status says the front is the
        previous shape's."""
        if self.background is None or not self.background.stop():
            return
        self.background.wait(60)
        back = self._shown is not None and self._shown != self._panel_platform()
        if back:
            self.panel.show(self._shown)
            self.edited, self._platform, self._precision = self._edited()
            self.designer = self._designer(self._precision)
        if self.prefetcher is not None:
            self.prefetcher.want(self._ahead())
        self.status.value = (
            f"<i>stopped: the panel is back at the hierarchy shown "
            f"({html.escape(describe_design(self.design))})</i>" if back else
            "<i>stopped: this shape's co-design grid is not priced; the front and the summary "
            "show the previous shape's</i>" if self._grid_space() is not None else "")

    def _panel_platform(self) -> Platform | None:
        try:
            return self.panel.platform()
        except WorkbenchError:
            return None

    def _failed(self, exc: Exception) -> None:
        self.status.value = error_html(WorkbenchError(f"{type(exc).__name__}: {exc}{STALE}"))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the edits made so far are priced and shown (at most `timeout` s);
        True if so (at once without `background`)."""
        return self.background is None or self.background.wait(timeout)

    def hierarchy(self) -> Hierarchy:
        """The edited hierarchy: the panel's platform's levels, DRAM first, feeding its MAC
        array (as last priced: `update` reads the panel)."""
        return self.edited

    def _hierarchy_at(self, exponents: tuple[int, ...]) -> Hierarchy:
        """The edited hierarchy with its on-chip levels' totals 2**e bytes (outermost first;
        a split level keeps its proportions; levels past the edited ones copy its innermost
        as the panel's "+ level inside" does)."""
        on_chip = list(self.edited.on_chip)
        rows = len(self.edited.levels)
        while len(on_chip) < len(exponents):
            on_chip.append(dataclasses.replace(on_chip[-1], name=f"L{rows}"))
            rows += 1
        levels = [dataclasses.replace(lvl, capacity_bytes=scaled_capacity(lvl.capacity_bytes,
                                                                          1 << e))
                  for lvl, e in zip(on_chip, exponents, strict=False)]
        return dataclasses.replace(self.edited, levels=(self.edited.levels[0], *levels))

    def _space(self, hierarchy: Hierarchy) -> DesignSpace:
        """The co-design grid around `hierarchy`: its levels at the grid's sizes, a split
        level divided in its proportions."""
        return space_around(hierarchy, self.grid_bytes)

    def update(self) -> None:
        """Reprice the edited hierarchy, then the co-design for its shape."""
        try:
            self.edited, self._platform, self._precision = self._edited()
            hierarchy = self.edited
            self.designer = self._designer(self._precision)
            self.panel.message.value = ""
            with busy(self.status, "pricing the edited hierarchy"), \
                    searching(self.status, "pricing the edited hierarchy",
                              lambda: self._layers_done(hierarchy)):  # shown while it runs
                if self.prefetcher is None:
                    design = self.designer.design(hierarchy)
                else:  # the workers from its last layer, then a new shape's grid from its end
                    grid = self._grid_space()
                    # a layer of many slices is shared at once (the workers drop what they
                    # search ahead); other searches ahead are short and the workers' memos
                    # colder than these: a worker's search is no quicker than this process's
                    shared = any(self.designer.shares(lay, hierarchy)
                                 for lay in self.designer.layers)
                    self.prefetcher.want([hierarchy, *([] if grid is None else
                                                       list(grid.gen_hierarchies())[::-1])],
                                         last_layer_first=True, preempt=shared, shared=True)
                    design = self.prefetcher.design(hierarchy)
        except WorkbenchError as exc:
            self.status.value = error_html(WorkbenchError(f"{exc}{STALE}"))
            return
        if design is None:
            self.status.value = error_html(WorkbenchError(
                f"some layer fits no blocking: a level is too small for its smallest block"
                f"{STALE}"))
            return
        self.design, self._shown = design, self._platform
        rows = self.designer.traffic_rows(design)
        names = [lvl.name for lvl in hierarchy.levels]
        relabel_levels(self.energy_figure, names)
        data = level_energy_data(rows, names)
        show_layers(self.energy_figure, data)
        self.energy_source.data = data
        self.traffic.show(*traffic_frames(rows))
        if self._grid_space() is not None:  # a new shape: its co-design grid is priced now
            text = "pricing this shape's co-design grid (the summary and the front follow)"
            with busy(self.status, text), searching(self.status, text, self._grid_done):
                self.update_budget()
        else:
            self.status.value = ""
            self.update_budget()
        self.status.value = ""
        if self.prefetcher is not None:
            self.prefetcher.want(self._ahead())

    def _layers_done(self, hierarchy: Hierarchy) -> str:
        done = sum(self.designer.known_layer(lay, hierarchy) for lay in self.designer.layers)
        return f"{done} of {len(self.designer.layers)} layers done"

    def _grid_done(self) -> str:
        grid = list(self._space(self.edited).gen_hierarchies())
        return f"{sum(self.designer.known(h) for h in grid)} of {len(grid)} hierarchies done"

    def _ahead(self) -> list[Hierarchy]:
        """What to search ahead, most likely next first (`hierarchy_controls.ahead`)."""
        at = tuple(max(SIZE_LOG2[0], min(SIZE_LOG2[1], int(lvl.total_bytes).bit_length() - 1))
                   for lvl in self.edited.on_chip)
        return ahead(at, self._hierarchy_at,
                     lambda hierarchy: self._space(hierarchy).gen_hierarchies())

    def close(self) -> None:
        """Stop the pricing under way and the searches done ahead (the widgets stay)."""
        if self.background is not None:
            self.background.close()
        if self.prefetcher is not None:
            self.prefetcher.close()

    def _grid_key(self) -> tuple | None:
        """The edited shape (its grid, and the element widths), None past GRID_LEVELS."""
        if len(self.edited.on_chip) > GRID_LEVELS:
            return None
        return self._space(self.edited), self._precision

    def _grid(self) -> list[Design] | str | None:
        """The co-design grid's feasible designs for the edited shape (memoized), None past
        GRID_LEVELS on-chip levels, or why it cannot be priced (a level's width that table 3
        has no energy for: the grid's levels are priced by their size)."""
        key = self._grid_key()
        if key is None:
            return None
        space = self._grid_space()
        if space is not None:
            try:
                if self.prefetcher is not None:  # from this end, the workers from the other
                    for hierarchy in space.gen_hierarchies():
                        self.prefetcher.design(hierarchy)
                self._grids[key] = self.designer.designs(space)
            except WorkbenchError as exc:
                self._grids[key] = f"co-design: no grid for this shape: {html.escape(str(exc))}"
        return self._grids[key]

    def _grid_space(self) -> DesignSpace | None:
        """The edited shape's co-design grid when it is still to be priced (else None)."""
        key = self._grid_key()
        return None if key is None or key in self._grids else key[0]

    def update_budget(self) -> None:
        """The best grid design within the budget (capacity or area), the front on that axis,
        and the summary (no grid past GRID_LEVELS on-chip levels: the summary says why)."""
        grid = self._grid()
        designs = grid if isinstance(grid, list) else None
        axis = self.axis.value
        shown = designs is not None  # no grid past GRID_LEVELS: no budget to move
        self.axis_row.layout.display = None if shown else "none"
        self.budget.layout.display = None if shown and axis == "capacity" else "none"
        self.area_budget.layout.display = None if shown and axis == "area" else "none"
        budget = (1 << self.budget.value) if axis == "capacity" else self.area_budget.value
        self.best = None if designs is None else best_within(designs, budget, axis)
        every, front, best = front_data(designs or [], pareto_front(designs or [], axis),
                                        self.best, self.macs, axis)
        relabel_front(self.front_figure, axis)
        self.every_source.data, self.front_source.data, self.best_source.data = \
            every, front, best
        self.front_figure.visible = designs is not None  # no grid: no empty plot
        grid_note = grid if isinstance(grid, str) else None if designs is not None else (
            f"co-design: the app prices its grid for 1 to {GRID_LEVELS} on-chip levels; the "
            f"{self._space(self.edited).size()} {len(self.edited.on_chip)}-level hierarchies "
            f"of this grid take minutes (<code>workbench hierarchy NETWORK --levels FILE "
            f"--budget-kb N</code> prices them)")  # past GRID_LEVELS: why no grid
        self.summary.value = summary_html(
            self.network_name, len(self.designer.layers), self.macs, self.design, self.best,
            designs, budget, axis, self.grid_bytes, grid_note)

    @property
    def view(self) -> widgets.Widget:
        """The panel's levels on top, its other parts folded below them; then the budget
        controls beside the bars, the front, the summary and the table (1280 px wide at
        most)."""
        parts = widgets.Accordion([self.panel.parts_view],
                                  titles=("platform: datapath, DMA, cluster, energy",))
        controls = widgets.VBox([*([self.stop] if self.background else []),  # where it
                                 self.axis_row, self.budget, self.area_budget,  # stays
                                 self.status])
        return widgets.VBox([self.panel.memory_view, parts,
                             widgets.HBox([controls, bokeh_widget(self.energy_figure)]),
                             bokeh_widget(self.front_figure), self.summary,
                             self.traffic.view])


def hierarchy_view(**kwargs) -> HierarchyView:
    """Build the memory-hierarchy app (keyword arguments: the fields of `HierarchySetup`)."""
    return HierarchyView(HierarchySetup(**kwargs))
