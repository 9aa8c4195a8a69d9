"""The plan app: one network on one editable platform, planned by the one engine
(`explore.network_plan`: on a platform with memory levels, `explore.composed`): per layer its
split over cores, its blocks per level (or its seed 000 tile on one level), fusion, bound,
traffic, cycles and energy; the totals; and each level's accesses or energy per conv/fc layer.

A change of the platform (the shared platform panel: levels, cores, DMA, energies), objective,
fusion or network plans again; plans are kept in the app's `caches`, so returning to a setting
costs nothing. The status line says what is being planned while it runs and how long it took.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource

from workbench import explore, layers
from workbench.errors import WorkbenchError
from workbench.explore.network import FUSION_MODES
from workbench.explore.query import OBJECTIVE_COLUMNS
from workbench.memo import Caches
from workbench.report import summary
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.errors import error_html
from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.progress import busy
from workbench.viz import plan_plots
from workbench.viz.units import fmt_seconds

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
        self._levels: tuple[str, ...] | None = None
        for control in (self.network, self.batch, self.objective, self.fusion):
            control.observe(lambda _: self.update(), names="value")
        self.quantity.observe(lambda _: self.redraw(), names="value")
        self.panel.on_change(self.update)
        self.update()

    def update(self) -> None:
        """Plan the network on the edited platform (one line on a bad value, the last plan
        kept) and redraw."""
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

    def redraw(self) -> None:
        """The per-level figure of the current plan (rebuilt when the levels change)."""
        if self.plan is None:
            return
        levels = tuple(lvl.name for lvl in self.platform.memory.levels)
        data = plan_plots.level_data(self.plan, levels, self.quantity.value)
        key = (levels, self.quantity.value, tuple(data["layer"]))
        if key != self._levels:
            self.source = ColumnDataSource(data)
            fig = plan_plots.level_figure(self.source, levels, self.quantity.value)
            self.figure_box.children = (bokeh_widget(fig),)
            self._levels = key
        else:
            self.source.data = data

    def view(self) -> widgets.Widget:
        """The platform panel and controls, status, totals, table and figure (≤ 1260 px)."""
        controls = widgets.VBox([self.network, self.batch, self.objective, self.fusion,
                                 self.quantity])
        return widgets.VBox([
            widgets.HBox([widgets.Accordion([self.panel.view], titles=("platform",)),
                          controls]),
            self.status, self.totals, self.table, self.figure_box],
            layout=widgets.Layout(max_width="1260px"))


def plan_view(**kwargs) -> PlanView:
    """Build the plan app (keyword arguments as PlanView)."""
    return PlanView(**kwargs)
