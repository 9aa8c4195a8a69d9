"""The memory-hierarchy app (seed 001): edit a hierarchy (on-chip levels, their sizes, shared
or split per array), see every layer's per-level accesses and energy with the memory:compute
energy ratio, and drag an on-chip capacity budget to watch the co-designed hierarchy and its
energy change.

Every number comes from `workbench.hierarchy.codesign`: a layer's blocking is the exact
optimum on the hierarchy (`search`), energies from the level sizes by seed 001 table 3. The
co-design grid keeps the edited hierarchy's depth, widths and split, with each level's size
from `grid_kb`; its designs are computed once per hierarchy shape and memoized, so moving the
budget only re-selects. With `prefetch`, what the user may ask next (the size sliders' other
positions, the edited sizes after one other control's change with its grid) is searched ahead
in worker processes (`workbench.hierarchy.prefetch`) and taken into the memo; an edit gives
them the edited hierarchy from its last layer, and one with a layer of many slices makes them
drop what they search ahead and search that layer in shares with this process. With
`background` (the notebook's), edits are priced in a thread of the kernel and a newer edit
supersedes the one being priced (`ui.background`): quick presses and drags are priced once,
at the last position, and the controls stay live meanwhile.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import InitVar, astuple, dataclass

import ipywidgets as widgets
from bokeh.models import ColumnDataSource

from workbench import layers, spelling
from workbench.errors import WorkbenchError
from workbench.hierarchy import ElementBytes, Hierarchy, Level
from workbench.hierarchy.codesign import (
    Codesigner,
    Design,
    DesignSpace,
    best_within,
    pareto_front,
    space_around,
    table3_energy_pj,
)
from workbench.hierarchy.prefetch import Prefetcher
from workbench.ui.background import Latest
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.controls import area_steps, kb_log2, memory_slider, size_exponent
from workbench.ui.errors import error_html
from workbench.ui.hierarchy_controls import (
    BUDGET_LOG2,
    DATAPATHS,
    GRID_LEVELS,
    SEED001_MM2_PER_KB,
    SIZE_LOG2,
    WIDTHS_BITS,
    Shape,
    ahead,
    split_parts,
)
from workbench.ui.progress import busy, searching
from workbench.viz.hierarchy_plots import (
    MAX_LEVELS,
    describe_design,
    energy_bars,
    front_data,
    front_plot,
    level_energy_data,
    relabel_front,
    relabel_levels,
    show_layers,
    summary_html,
    traffic_html,
)

KB = 1024
STALE = "; the plots and summary still show the last hierarchy that worked"
_STYLE = {"description_width": "110px"}


@dataclass(frozen=True)
class HierarchySetup:
    """What the memory-hierarchy app starts from: the network (conv layers, and fc with
    `include_fc`); on-chip level sizes `memory_kb` (KB, outermost first), split I/W/O in
    `ratio` or shared, access width (bits); the capacity budget (KB) and the co-design grid of sizes
    (KB); element and partial-sum bytes; MAC and DRAM energies (pJ, DRAM per 16 bits); the
    datapath (a key of DATAPATHS); the budget's axis ("capacity" or "area": mm² at
    `mm2_per_kb`); whether to search ahead (`prefetch`) and in the background."""

    network: str = "lenet5"
    memory_kb: tuple[float, ...] = (32, 1)
    split: bool = False
    ratio: tuple[int, int, int] = (1, 16, 1)
    width_bits: int = 64
    budget_kb: float = 64
    grid_kb: tuple[float, ...] = (1, 4, 16, 64, 256)
    include_fc: bool = False
    elem_bytes: int = 2
    psum_bytes: int = 4
    mac_pj: float = 1.0
    dram_pj_per_16b: float = 320.0
    datapath: str = "1 MAC"
    axis: str = "capacity"
    area_budget_mm2: float = 0.5
    mm2_per_kb: float = SEED001_MM2_PER_KB
    prefetch: bool = False
    background: bool = False
    sizes_kb: InitVar[tuple[float, ...] | None] = None  # the old spelling of memory_kb

    def __post_init__(self, sizes_kb: tuple[float, ...] | None) -> None:
        spelling.old_keyword(self, "sizes_kb", "memory_kb", sizes_kb, "hierarchy_view")


class HierarchyView:
    """Widgets, bokeh sources and callbacks of the memory-hierarchy app."""

    def __init__(self, setup: HierarchySetup = HierarchySetup()) -> None:
        (network, memory_kb, split, ratio, width_bits, budget_kb, grid_kb, include_fc,
         elem_bytes, psum_bytes, mac_pj, dram_pj_per_16b, datapath, axis, area_budget_mm2,
         mm2_per_kb, prefetch, background) = astuple(setup)
        if not 1 <= len(memory_kb) <= MAX_LEVELS - 1:
            raise WorkbenchError(f"memory_kb: 1 to {MAX_LEVELS - 1} on-chip levels, got "
                                 f"{list(memory_kb)}")
        if width_bits not in WIDTHS_BITS:
            raise WorkbenchError(f"width_bits must be one of {WIDTHS_BITS}, got {width_bits}")
        if axis not in ("capacity", "area"):
            raise WorkbenchError(f"axis must be 'capacity' or 'area', got {axis!r}")
        if not 0 < area_budget_mm2 < math.inf:
            raise WorkbenchError(f"area_budget_mm2 must be > 0 mm², got {area_budget_mm2!r}")
        if not mm2_per_kb > 0:
            raise WorkbenchError(f"mm2_per_kb must be > 0, got {mm2_per_kb!r}")
        if datapath not in DATAPATHS:
            raise WorkbenchError(f"datapath must be one of {list(DATAPATHS)}, got {datapath!r}")
        for kb in memory_kb:
            size_exponent(kb, SIZE_LOG2, "memory_kb")
        size_exponent(budget_kb, BUDGET_LOG2, "budget_kb")
        net = layers.load_network(network)
        picked = tuple(lay for lay in net.tiled_layers() if lay.kind == "conv" or include_fc)
        self.designer = Codesigner(picked, ElementBytes(elem_bytes, elem_bytes, elem_bytes,
                                                        psum_bytes), table3_energy_pj)
        self.network_name, self.ratio, self.mac_pj = net.name, tuple(ratio), mac_pj
        self.mm2_per_kb = float(mm2_per_kb)
        self.macs = sum(lay.macs for lay in picked)
        self.grid_bytes = sorted({int(kb * KB) for kb in grid_kb})
        self.dram = Level("DRAM", None, 16, dram_pj_per_16b)
        self._grids: dict[tuple, list[Design]] = {}
        self.levels = widgets.IntSlider(value=len(memory_kb), min=1, max=MAX_LEVELS - 1,
                                        description="on-chip levels", style=_STYLE)
        self.sizes = [memory_slider(kb_log2(memory_kb[min(i, len(memory_kb) - 1)]), *SIZE_LOG2,
                                    f"L{i + 1} size") for i in range(MAX_LEVELS - 1)]
        self.split = widgets.Checkbox(value=split, description=f"split I/W/O {ratio}")
        self.width = widgets.Dropdown(options=WIDTHS_BITS, value=width_bits,
                                      description="access bits", style=_STYLE)
        self.datapath = widgets.Dropdown(options=list(DATAPATHS), value=datapath,
                                         description="MAC array", style=_STYLE)
        self.budget = memory_slider(kb_log2(budget_kb), *BUDGET_LOG2, "budget")
        self.axis = widgets.ToggleButtons(options=["capacity", "area"], value=axis,
                                          style={"button_width": "80px"})
        # its label beside it (a ToggleButtons' own description sits on a line of its own)
        self.axis_row = widgets.HBox([widgets.HTML(
            "<div style='text-align: right; padding-right: 8px'>budget by</div>",
            layout=widgets.Layout(width="110px")), self.axis])
        self.area_budget = widgets.SelectionSlider(
            options=[(f"{mm2:g} mm²", mm2) for mm2 in area_steps(area_budget_mm2)],
            value=area_budget_mm2, description="budget", style=_STYLE)
        self.status, self.summary, self.traffic = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.status.layout.width = "300px"  # a long error wraps: the plot beside stays put
        self.design: Design | None = None
        self.best: Design | None = None
        # the sliders' other positions, searched ahead on other cores (nearest first)
        self.prefetcher = Prefetcher(self.designer) if prefetch else None
        first = self.hierarchy()
        self.energy_source = ColumnDataSource(
            level_energy_data([], [lvl.name for lvl in first.levels]), name="level_energy")
        self.energy_figure = energy_bars(self.energy_source, [lvl.name for lvl in first.levels])
        self.every_source, self.front_source, self.best_source = (
            ColumnDataSource(d) for d in front_data([], [], None, 1))
        self.front_figure = front_plot(self.every_source, self.front_source, self.best_source)
        # edits after the first pricing: in a thread, the newest superseding (`background`);
        # a stop button ends a pricing under way, the controls going back to what is shown
        self.stop = widgets.Button(description="stop pricing", disabled=True,
                                   tooltip="end the pricing under way; the controls go back "
                                           "to the hierarchy shown")
        self.stop.on_click(lambda _: self._stop())
        self.background = Latest(self._priced, self._failed, "workbench-hierarchy-app",
                                 lambda on: setattr(self.stop, "disabled", not on)) \
            if background else None
        self._controls = (self.levels, *self.sizes, self.split, self.width, self.datapath)
        self._shown: list | None = None  # the controls' values the plots show
        self._quiet = False  # controls set back by `_stop`: nothing to price
        for control in self._controls:
            control.observe(lambda change: self._changed("edit"), names="value")
        for control in (self.budget, self.axis, self.area_budget):
            control.observe(lambda change: self._changed("budget"), names="value")
        self.update()

    def _changed(self, kind: str) -> None:
        """A control moved: reprice now, or ask the background thread (an edit supersedes
        the pricing under way; a budget move waits for it)."""
        if self._quiet:
            return
        if self.background is None:
            self._priced(frozenset({kind}))
        else:
            self.background.ask(kind, supersede=kind == "edit")

    def _priced(self, kinds: frozenset[str]) -> None:
        (self.update if "edit" in kinds else self.update_budget)()

    def _stop(self) -> None:
        """The stop button: the pricing under way ends at its search's next safe point (the
        layers it finished stay memoized); the controls go back to the hierarchy shown, or,
        stopped while a new shape's grid was priced, the status says the front is the
        previous shape's."""
        if self.background is None or not self.background.stop():
            return
        self.background.wait(60)
        back = self._shown is not None and self._shown != [c.value for c in self._controls]
        if back:
            self._quiet = True
            try:
                for control, value in zip(self._controls, self._shown, strict=True):
                    control.value = value
            finally:
                self._quiet = False
            for i, slider in enumerate(self.sizes):
                slider.layout.display = None if i < self.levels.value else "none"
        if self.prefetcher is not None:
            self.prefetcher.want(self._ahead())
        self.status.value = (
            f"<i>stopped: the controls are back at the hierarchy shown "
            f"({html.escape(describe_design(self.design))})</i>" if back else
            "<i>stopped: this shape's co-design grid is not priced; the front and the summary "
            "show the previous shape's</i>" if self._grid_space() is not None else "")

    def _failed(self, exc: Exception) -> None:
        self.status.value = error_html(WorkbenchError(f"{type(exc).__name__}: {exc}{STALE}"))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the edits made so far are priced and shown (at most `timeout` s);
        True if so (at once without `background`)."""
        return self.background is None or self.background.wait(timeout)

    def hierarchy(self) -> Hierarchy:
        """The edited hierarchy: DRAM, then the first `levels` sliders' sizes (outermost
        first), shared or split I:W:O, feeding the chosen MAC array."""
        return self._hierarchy_at(self._exponents())

    def _exponents(self) -> tuple[int, ...]:
        return tuple(slider.value for slider in self.sizes[:self.levels.value])

    def _shape(self) -> Shape:
        return self.split.value, self.width.value, self.datapath.value

    def _hierarchy_at(self, exponents: tuple[int, ...], shape: Shape | None = None) -> Hierarchy:
        """The edited hierarchy with these size exponents (bytes = 2**e, outermost first),
        in `shape` (split, access bits, MAC array; default: the controls')."""
        split, width, datapath = shape or self._shape()
        on_chip = []
        for i, exponent in enumerate(exponents):
            size = 1 << exponent
            cap = split_parts(size, self.ratio) if split else size
            on_chip.append(Level(f"L{i + 1}", cap, width, area_mm2_per_kb=self.mm2_per_kb))
        return Hierarchy((self.dram, *on_chip), name="edited", mac_energy_pj=self.mac_pj,
                         datapath=DATAPATHS[datapath])

    def _space(self, hierarchy: Hierarchy) -> DesignSpace:
        """The co-design grid around `hierarchy`, a split level divided in the app's ratio."""
        return space_around(hierarchy, self.grid_bytes, self.ratio)

    def _check_order(self) -> None:
        """Refuse an inner slider above the one outside it, in the sliders' own units."""
        for i in range(1, self.levels.value):
            inner, outer = self.sizes[i], self.sizes[i - 1]
            if inner.value > outer.value:
                raise WorkbenchError(f"L{i + 1} size: {inner.label} is larger than L{i}'s "
                                     f"{outer.label}; sizes must not increase inwards")

    def update(self) -> None:
        """Reprice the edited hierarchy, then the co-design for its shape."""
        for i, slider in enumerate(self.sizes):
            slider.layout.display = None if i < self.levels.value else "none"
        try:
            self._check_order()
            hierarchy = self.hierarchy()
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
        except WorkbenchError as exc:  # the schema's path levels[k] is slider Lk here
            said = re.sub(r"^levels\[(\d+)\]\.capacity: ", r"L\1 size: ", str(exc))
            self.status.value = error_html(WorkbenchError(f"{said}{STALE}"))
            return
        if design is None:
            self.status.value = error_html(WorkbenchError(
                f"some layer fits no blocking: a level is too small for its smallest block"
                f"{STALE}"))
            return
        self.design, self._shown = design, [c.value for c in self._controls]
        rows = self.designer.traffic_rows(design)
        names = [lvl.name for lvl in hierarchy.levels]
        relabel_levels(self.energy_figure, names)
        data = level_energy_data(rows, names)
        show_layers(self.energy_figure, data)
        self.energy_source.data = data
        self.traffic.value = traffic_html(rows)
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
        grid = list(self._space(self.hierarchy()).gen_hierarchies())
        return f"{sum(self.designer.known(h) for h in grid)} of {len(grid)} hierarchies done"

    def _ahead(self) -> list[Hierarchy]:
        """What to search ahead, most likely next first (`hierarchy_ahead.ahead`)."""
        at = self._exponents()
        following = self.sizes[len(at)].value if len(at) < MAX_LEVELS - 1 else None
        return ahead(at, self._shape(), following, self._hierarchy_at,
                     lambda hierarchy: self._space(hierarchy).gen_hierarchies())

    def close(self) -> None:
        """Stop the pricing under way and the searches done ahead (the widgets stay)."""
        if self.background is not None:
            self.background.close()
        if self.prefetcher is not None:
            self.prefetcher.close()

    def _grid(self) -> list[Design] | None:
        """The co-design grid's feasible designs for the edited shape (memoized), None past
        GRID_LEVELS on-chip levels."""
        if self.levels.value > GRID_LEVELS:
            return None
        key = (self.levels.value, *self._shape())
        space = self._grid_space()
        if space is not None:
            if self.prefetcher is not None:  # from this end, the workers from the other
                for hierarchy in space.gen_hierarchies():
                    self.prefetcher.design(hierarchy)
            self._grids[key] = self.designer.designs(space)
        return self._grids[key]

    def _grid_space(self) -> DesignSpace | None:
        """The edited shape's co-design grid when it is still to be priced (else None)."""
        key = (self.levels.value, *self._shape())
        if self.levels.value > GRID_LEVELS or key in self._grids:
            return None
        return self._space(self.hierarchy())

    def update_budget(self) -> None:
        """The best grid design within the budget (capacity or area), the front on that axis,
        and the summary (no grid past GRID_LEVELS on-chip levels: the summary says why)."""
        designs = self._grid()
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
        grid_note = None if designs is not None else (  # past GRID_LEVELS: why no grid
            f"co-design: the app prices its grid for 1 to {GRID_LEVELS} on-chip levels; the "
            f"{self._space(self.hierarchy()).size()} {self.levels.value}-level hierarchies of "
            f"this grid take minutes (<code>workbench hierarchy NETWORK --levels FILE "
            f"--budget-kb N</code> prices them)")
        self.summary.value = summary_html(
            self.network_name, len(self.designer.layers), self.macs, self.design, self.best,
            designs, budget, axis, self.grid_bytes, grid_note)

    @property
    def view(self) -> widgets.Widget:
        controls = widgets.VBox([*([self.stop] if self.background else []),  # where it
                                 self.levels, *self.sizes, self.split, self.width,  # stays
                                 self.datapath, self.axis_row, self.budget, self.area_budget,
                                 self.status])
        return widgets.VBox([widgets.HBox([controls, bokeh_widget(self.energy_figure)]),
                             bokeh_widget(self.front_figure), self.summary, self.traffic])


def hierarchy_view(**kwargs) -> HierarchyView:
    """Build the memory-hierarchy app (keyword arguments: the fields of `HierarchySetup`)."""
    return HierarchyView(HierarchySetup(**kwargs))
