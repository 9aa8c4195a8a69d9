"""The plan app: one network on one editable platform, planned by the one engine
(`explore.network_plan`: on a platform with memory levels, `explore.composed`): per layer its
split over cores, its blocks per level (or its seed 000 tile on one level), fusion, bound,
traffic, cycles and energy; the totals; and each level's accesses or energy per conv/fc layer.

A change of the platform (the shared platform panel: levels, cores, DMA, energies), objective,
fusion or network plans again; plans are kept in the app's `caches`, so returning to a setting
costs nothing. The status line says what is being planned while it runs and how long it took.

"pin" keeps the plan shown; after an edit of the platform or objective, the compare box shows
both totals and, per layer, both designs' cycles, energy and DRAM traffic with the change
(`designs.compare`). The design bar saves and loads the session (network, batch, objective,
fusion, the figure's quantity and the whole platform; `designs.session`) and exports the plan
as CSV and YAML (`designs.export`); its format switch makes the figure's save tool write SVG.
"""

from __future__ import annotations

import html
from contextlib import contextmanager
from pathlib import Path

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource

from workbench import explore, layers
from workbench.designs import compare, export
from workbench.designs.session import Session, check_choice, load_session, save_session
from workbench.errors import FileFormatError, WorkbenchError
from workbench.explore.network import FUSION_MODES
from workbench.explore.query import OBJECTIVE_COLUMNS
from workbench.memo import Caches
from workbench.report import summary
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.design_bar import DesignBar
from workbench.ui.errors import error_html
from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.progress import busy
from workbench.viz import plan_plots
from workbench.viz.units import fmt_seconds, has_energy

TABLE_STYLE = "max-width:1240px;overflow-x:auto;font-size:12px"


class PlanView:
    """Controls, the platform panel, the plan table, totals and the per-level figure."""

    def __init__(self, network: str = "lenet5", platform: str = "shave_cmx",
                 objective: str = "cycles", fusion: str = "auto", batch: int = 1,
                 quantity: str = "accesses") -> None:
        self.caches = Caches()
        self.panel = PlatformPanel(platform)
        self.network = widgets.Dropdown(options=layers.list_networks(), value=network,
                                        description="network")
        self.batch = widgets.BoundedIntText(value=batch, min=1, max=1024,
                                            description="batch")
        self.objective = widgets.Dropdown(options=list(OBJECTIVE_COLUMNS), value=objective,
                                          description="objective")
        self.fusion = widgets.Dropdown(options=list(FUSION_MODES), value=fusion,
                                       description="fusion")
        self.quantity = widgets.ToggleButtons(options=list(plan_plots.QUANTITIES),
                                              value=quantity, description="by level")
        self.status = widgets.HTML()
        self.totals = widgets.HTML()
        self.table = widgets.HTML()
        self.source = ColumnDataSource(plan_plots.level_data(pd.DataFrame(), []))
        self.figure_box = widgets.Box()
        self.plan: pd.DataFrame | None = None
        self.figure = None
        self._levels: tuple[str, ...] | None = None
        self._holding = False  # a session being loaded: one plan at the end
        self.pinned: tuple[pd.DataFrame, object, str] | None = None  # plan, platform, label
        self.compared: pd.DataFrame | None = None  # the comparison's numbers
        self.compare_box = widgets.HTML()
        self.pin_button = widgets.Button(description="pin", icon="thumb-tack",
                                         tooltip="keep this design to compare the next with",
                                         layout=widgets.Layout(width="80px"))
        self.unpin_button = widgets.Button(description="unpin", disabled=True,
                                           layout=widgets.Layout(width="80px"))
        self.pin_button.on_click(lambda _: self.pin())
        self.unpin_button.on_click(lambda _: self.unpin())
        self.bar = DesignBar("plan", self.save, self.load, self.export,
                             lambda: [self.figure])
        for control in (self.network, self.batch, self.objective, self.fusion):
            control.observe(lambda _: self.update(), names="value")
        self.quantity.observe(lambda _: self.redraw(), names="value")
        self.panel.on_change(self.update)
        self.update()

    def update(self) -> None:
        """Plan the network on the edited platform (one line on a bad value, the last plan
        kept) and redraw."""
        if self._holding:
            return
        try:
            plat = self.panel.platform()
            net = layers.load_network(self.network.value, batch=self.batch.value)
            text = f"planning {net.name} on {plat.name}"
            with busy(self.status, text) as took:
                plan = explore.network_plan(net, plat, self.objective.value,
                                            self.fusion.value, caches=self.caches)
        except WorkbenchError as exc:
            self.status.value = error_html(exc)
            return
        self.plan, self.platform = plan, plat
        totals = explore.network_totals(plan, plat)
        self.totals.value = f"<b>{html.escape(summary.totals_text(totals, plat))}</b>"
        table = summary.per_layer_table(plan, plat)
        self.table.value = f"<div style='{TABLE_STYLE}'>{table.to_html(index=False)}</div>"
        self.status.value = (f"<i>{html.escape(text)}: {fmt_seconds(took['seconds'])}, "
                             f"best by {self.objective.value}</i>")
        self.redraw()
        self.show_comparison()

    # -- compare ----------------------------------------------------------------------------
    def _label(self) -> str:
        return (f"{self.network.value} on {self.platform.name}, best by "
                f"{self.objective.value}")

    def pin(self) -> None:
        """Keep the plan shown as the design the next ones are compared with."""
        if self.plan is not None:
            self.pinned = (self.plan, self.platform, self._label())
            self.unpin_button.disabled = False
            self.show_comparison()

    def unpin(self) -> None:
        self.pinned, self.compared = None, None
        self.unpin_button.disabled = True
        self.compare_box.value = ""

    def show_comparison(self) -> None:
        """Both totals and the per-layer differences of the pinned and the current plan."""
        if self.pinned is None or self.plan is None:
            return
        plan, plat, label = self.pinned
        self.compared = compare.compare_plans(plan, plat, self.plan, self.platform)
        known = has_energy(plat) and has_energy(self.platform)
        table = compare.compare_table(self.compared, known).to_html(index=False)
        lines = [(f"pinned: {label}", summary.totals_text(
                      explore.network_totals(plan, plat), plat)),
                 (f"now: {self._label()}", summary.totals_text(
                     explore.network_totals(self.plan, self.platform), self.platform))]
        head = "".join(f"<div><b>{html.escape(a)}</b>: {html.escape(b)}</div>" for a, b in lines)
        self.compare_box.value = f"{head}<div style='{TABLE_STYLE}'>{table}</div>"

    # -- sessions and export ----------------------------------------------------------------
    def session(self) -> Session:
        """What the app shows, as a session (the panel's platform must be valid)."""
        return Session("plan", self.network.value, self.batch.value, self.objective.value,
                       self.panel.platform(), {"fusion": self.fusion.value,
                                               "quantity": self.quantity.value})

    def save(self, path: str | Path) -> Path:
        return save_session(self.session(), path)

    def load(self, path: str | Path) -> None:
        """Show the session of a file (checked whole before anything changes) and plan it."""
        s = load_session(path, "plan")
        origin = f"session file {str(path)!r}"
        if s.network not in self.network.options:
            raise FileFormatError(f"{origin}: network: not in the zoo: {s.network!r}")
        if not self.batch.min <= s.batch <= self.batch.max:
            raise FileFormatError(f"{origin}: batch: the plan app takes {self.batch.min}.."
                                  f"{self.batch.max:,}, got {s.batch:,}")
        unknown = sorted(set(s.selections) - {"fusion", "quantity"})
        if unknown:
            raise FileFormatError(f"{origin}: selections.{unknown[0]}: unknown; known: "
                                  "fusion, quantity")
        fusion = check_choice(origin, "fusion", s.selections.get("fusion", self.fusion.value),
                              self.fusion.options)
        quantity = check_choice(origin, "quantity",
                                s.selections.get("quantity", self.quantity.value),
                                self.quantity.options)
        with self._held():
            self.network.value, self.batch.value = s.network, s.batch
            self.objective.value, self.fusion.value = s.objective, fusion
            self.quantity.value = quantity
            self.panel.load(s.platform)
        self.update()

    @contextmanager
    def _held(self):
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    def export(self, stem: str) -> list[Path]:
        """The plan shown as <stem>.csv and <stem>.yaml (`designs.export`)."""
        if self.plan is None:
            raise WorkbenchError("export: no plan to export (the platform does not build)")
        csv, yml = Path(f"{stem}.csv"), Path(f"{stem}.yaml")
        try:
            csv.write_text(export.mapping_csv(self.plan, self.platform), encoding="utf-8")
            yml.write_text(export.mapping_yaml(self.plan, self.platform, self.network.value,
                                               self.objective.value), encoding="utf-8")
        except OSError as exc:
            raise WorkbenchError(f"export {stem!r}: cannot write ({exc.strerror or exc})") \
                from None
        return [csv, yml]

    def redraw(self) -> None:
        """The per-level figure of the current plan (rebuilt when the levels change)."""
        if self.plan is None:
            return
        levels = tuple(lvl.name for lvl in self.platform.memory.levels)
        data = plan_plots.level_data(self.plan, levels, self.quantity.value)
        key = (levels, self.quantity.value, tuple(data["layer"]))
        if key != self._levels:
            self.source = ColumnDataSource(data)
            self.figure = plan_plots.level_figure(self.source, levels, self.quantity.value)
            self.bar.style(self.figure)
            self.figure_box.children = (bokeh_widget(self.figure),)
            self._levels = key
        else:
            self.source.data = data

    def view(self) -> widgets.Widget:
        """The platform panel and controls, status, totals, table and figure (≤ 1260 px)."""
        controls = widgets.VBox([self.network, self.batch, self.objective, self.fusion,
                                 self.quantity,
                                 widgets.HBox([self.pin_button, self.unpin_button])])
        return widgets.VBox([
            widgets.HBox([widgets.Accordion([self.panel.view], titles=("platform",)),
                          controls]),
            self.bar.view, self.status, self.totals, self.compare_box, self.table,
            self.figure_box],
            layout=widgets.Layout(max_width="1260px"))


def plan_view(**kwargs) -> PlanView:
    """Build the plan app (keyword arguments as PlanView)."""
    return PlanView(**kwargs)
