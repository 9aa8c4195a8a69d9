"""The apps' session and export controls: a session file's path with save and load, a file
stem with export (the chosen mapping as <stem>.csv and <stem>.yaml), and the figures' format
for the toolbar's save button (PNG, or SVG for papers: Bokeh draws the figures as SVG and its
save tool writes what it draws, in the browser, nothing downloaded). Files go where the path
says, relative to the notebook's folder; the line below says what was written or what went
wrong (one line)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.ui.errors import error_html

FORMATS = {"png": "canvas", "svg": "svg"}  # the save tool's format: Bokeh's output backend
_BUTTON = widgets.Layout(width="80px")


class DesignBar:
    """Save, load and export through the app's callbacks; `figures()` gives the app's figures
    now (an app that builds new figures calls `style` on them)."""

    def __init__(self, stem: str, save: Callable[[str], Path], load: Callable[[str], None],
                 export: Callable[[str], Sequence[Path]],
                 figures: Callable[[], Sequence] = lambda: ()) -> None:
        self._save, self._load, self._export, self._figures = save, load, export, figures
        self.path = widgets.Text(value=f"{stem}_session.yaml", description="session",
                                 layout=widgets.Layout(width="330px"))
        self.save_button = widgets.Button(description="save", icon="save", layout=_BUTTON)
        self.load_button = widgets.Button(description="load", icon="folder-open",
                                          layout=_BUTTON)
        self.stem = widgets.Text(value=f"{stem}_mapping", description="export",
                                 layout=widgets.Layout(width="330px"),
                                 tooltip="writes <stem>.csv and <stem>.yaml")
        self.export_button = widgets.Button(description="export", icon="download",
                                            layout=_BUTTON)
        self.figure_format = widgets.ToggleButtons(
            options=list(FORMATS), value="png", description="figures",
            tooltips=["the save tool writes PNG", "the save tool writes SVG (for papers)"],
            style={"button_width": "50px"})
        self.message = widgets.HTML()
        self.save_button.on_click(lambda _: self.run(lambda: [self._save(self.path.value)],
                                                     "saved"))
        self.load_button.on_click(lambda _: self.run(lambda: self._load(self.path.value),
                                                     "loaded"))
        self.export_button.on_click(lambda _: self.run(lambda: self._export(self.stem.value),
                                                       "wrote"))
        self.figure_format.observe(lambda _: self.restyle(), names="value")
        self.view = widgets.VBox([
            widgets.HBox([self.path, self.save_button, self.load_button]),
            widgets.HBox([self.stem, self.export_button, self.figure_format]), self.message])

    def run(self, action: Callable[[], Sequence[Path] | None], done: str) -> None:
        """Run a save, load or export; one line says what it wrote or read, or what was
        wrong."""
        try:
            written = action()
        except WorkbenchError as exc:
            self.message.value = error_html(exc)
            return
        names = ", ".join(str(p) for p in written) if written else self.path.value
        self.message.value = f"<i>{done} {html.escape(names)}</i>"

    @property
    def backend(self) -> str:
        return FORMATS[self.figure_format.value]

    def style(self, figure) -> None:
        """Draw `figure` (a bokeh figure or layout) for the chosen format."""
        for fig in figure.select({"type": _plot_class()}):
            fig.output_backend = self.backend

    def restyle(self) -> None:
        for figure in self._figures():
            if figure is not None:
                self.style(figure)


def _plot_class() -> type:
    from bokeh.models import Plot

    return Plot
