"""One line in the single-level apps (tile explorer, design space, cores view) when the edited
platform has memory levels: what they show is the single-level model of its outermost on-chip
level, and where the plan over all its levels is (the plan app, notebook 11)."""

from __future__ import annotations

import html

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.platforms import Platform
from workbench.ui.platform_panel import PlatformPanel
from workbench.viz.units import fmt_bytes


def levels_note_html(platform: Platform, app: str) -> str:
    """'' for a single-level platform; else the one line (HTML)."""
    if not platform.has_levels:
        return ""
    names = " | ".join(lvl.name for lvl in platform.memory.levels)
    return (f"<i>{html.escape(platform.name)} has memory levels ({html.escape(names)}): "
            f"the {html.escape(app)} shows the single-level model of its "
            f"{html.escape(platform.memory.levels[1].name)} "
            f"({fmt_bytes(platform.local_mem_bytes)}); its plan over every level, with the "
            "cores, DMA and fusion, is in the plan app (ui.plan_view, notebook 11).</i>")


class LevelsNote:
    """The line, kept up to date with a platform panel (`widget`)."""

    def __init__(self, panel: PlatformPanel, app: str) -> None:
        self.panel, self.app = panel, app
        self.widget = widgets.HTML()
        panel.on_change(self.update)
        self.update()

    def update(self) -> None:
        try:
            self.widget.value = levels_note_html(self.panel.platform(), self.app)
        except WorkbenchError:
            pass  # the panel shows the error; the app's own callback says it too
