"""The sweep results browser: filter a sweep's cases by its grid axes, plot any two metrics
with their Pareto front, and pick a case to see its per-layer cycles and energy.

The results frame is read once (`sweep.collect`); each axis is coded to integers, so a filter
or metric change is a lookup, one Pareto sweep and one binning over the rows in numpy
(`viz.sweep_plots.reduce_points`): at most the front plus one case per screen bin is sent to
the browser, whatever the number of cases. A selected case's plan is recomputed by
`sweep.case_layers` (memoized).
"""

from __future__ import annotations

import atexit
import functools
import html
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource

from workbench import spelling, sweep
from workbench.errors import WorkbenchError
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.errors import error_html
from workbench.viz import design_plots as dp
from workbench.viz import sweep_plots as sp
from workbench.viz.units import fmt_named

_KEEP = 32  # memoized per-layer plans


def demo_sweep(out_dir: str | Path | None = None) -> Path:
    """Run a small sweep (LeNet5, batch 2, on idsp: 5 memory sizes × 2 objectives × 1 or 4
    cores, 20 cases, seconds) into `out_dir` (default: a new temporary directory, removed when
    the process (the notebook's kernel) exits: the browser reads per-layer plans from it)."""
    if out_dir is None:
        out = Path(tempfile.mkdtemp(prefix="sweep-demo-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
    else:
        out = Path(out_dir)
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=2,
                      memory_kb=[8, 16, 32, 64, 128], acc_bits=[16],
                      objectives=["cycles", "energy"], overrides={"cores": [1, 4]})
    sweep.run(grid, out)
    return out


def _check_metric(name: str, metrics: Sequence[str]) -> None:
    if name not in metrics:
        raise WorkbenchError(f"sweep browser: no metric {name!r} in this sweep; metrics: "
                             + ", ".join(metrics))


def case_html(r: pd.Series, axes: Sequence[str], metrics: Sequence[str]) -> str:
    """One case as two lines: its grid settings, then its metrics."""
    settings = " · ".join(f"{a} <b>{html.escape(sp.label(r[a]))}</b>" for a in axes)
    values = " · ".join(" ".join(fmt_named(m, r[m])) for m in metrics
                        if m not in axes and np.isfinite(float(r[m])))
    return f"case <b>{html.escape(str(r['case_id']))}</b>: {settings}<br>{values}"


class SweepBrowser:
    """Widgets, bokeh sources and callbacks of the sweep browser (module docstring).

    `frame` holds every case; after each update `mask` marks the cases the filters keep, and
    `points.data` the drawn ones; after `select`, `selected_case` and `per_layer` (its plan)."""

    def __init__(self, out_dir: str | Path | None = None, frame: pd.DataFrame | None = None,
                 x: str = "time_ms", y: str = "energy_uj", color: str | None = "memory_kb",
                 axes: Sequence[str] | None = None,
                 bins: tuple[int, int] = sp.DEFAULT_BINS) -> None:
        if frame is None:
            if out_dir is None:
                raise WorkbenchError("sweep browser: give a sweep directory or a results frame")
            frame = sweep.collect(out_dir)
        if frame.empty:
            raise WorkbenchError(f"sweep {str(out_dir)!r}: no completed case to show")
        frame, (x, y, color) = spelling.renamed_columns(frame, [x, y, color], "sweep browser")
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.frame = frame.reset_index(drop=True)
        if axes is None:
            overrides = list(sweep.load_grid(out_dir).overrides) if out_dir is not None else []
            axes = sp.sweep_axes(self.frame, overrides)
        self.axes, self.bins = list(axes), bins
        self.metrics = sp.metrics_of(self.frame)
        for name in (x, y):
            _check_metric(name, self.metrics)
        self.columns = sp.table_columns(self.frame, self.axes)
        self._codes = {a: sp.axis_codes(self.frame, a) for a in self.axes}
        self._palettes: dict[str, np.ndarray] = {}
        self._layers: OrderedDict[str, pd.DataFrame] = OrderedDict()
        self.mask = np.ones(len(self.frame), dtype=bool)
        self.selected_case: str | None = None
        self.per_layer = pd.DataFrame()
        self._quiet = False
        self._build_widgets(x, y, color)
        self._build_figures()
        self._connect()
        self.refresh()

    def _build_widgets(self, x: str, y: str, color: str | None) -> None:
        self.filters = {a: widgets.SelectMultiple(
            options=[(sp.label(v), i) for i, v in enumerate(values)],
            value=tuple(range(len(values))), description=a, rows=min(6, max(2, len(values))))
            for a, (_, values) in self._codes.items()}
        self.x = widgets.Dropdown(options=self.metrics, value=x, description="x")
        self.y = widgets.Dropdown(options=self.metrics, value=y, description="y")
        choices = [("none", "")] + [(c, c) for c in dict.fromkeys([*self.axes, *self.metrics])]
        self.color = widgets.Dropdown(options=choices, description="colour",
                                      value=color if color in dict(choices).values() else "")
        self.status, self.legend, self.info = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.info.add_class("wb-sweep-case")
        self.status.add_class("wb-sweep-status")

    def _build_figures(self) -> None:
        """Empty sources and the figures and table drawing them."""
        empty = {k: [] for k in ("x", "y", "color", "front", "front_alpha", *self.columns)}
        self.points = ColumnDataSource(empty, name="sweep_points")
        self.line = ColumnDataSource({"x": [], "y": []}, name="sweep_front")
        cycles, energy = sp.breakdown_sources(None)
        self.cycles_source = ColumnDataSource(cycles, name="sweep_cycles")
        self.energy_source = ColumnDataSource(energy, name="sweep_energy")
        self.figure = sp.pareto_scatter(self.points, self.line, self.x.value, self.y.value)
        self.table = sp.case_table(self.points, self.columns)
        self.cycles_figure, self.energy_figure = sp.breakdown_figures(self.cycles_source,
                                                                      self.energy_source)
        self.figure.width = 540  # plot and breakdowns side by side in a notebook's width
        for fig in (self.cycles_figure, self.energy_figure):
            fig.width, fig.height = 440, 240

    def _connect(self) -> None:
        for control in (*self.filters.values(), self.x, self.y, self.color):
            control.observe(lambda change: None if self._quiet else self.refresh(),
                            names="value")
        self.points.selected.on_change("indices", self._on_pick)

    # callbacks -----------------------------------------------------------------------------
    def _on_pick(self, attr: str, old: list[int], new: list[int]) -> None:
        """A case picked on the plot or in the table (the browser) shows its breakdown."""
        if new and not self._quiet:
            self.select(self.points.data["case_id"][new[0]])

    def set_filter(self, axis: str, values: Iterable) -> None:
        """Keep only the cases whose `axis` value is one of `values` (axis values as in the
        frame, e.g. 64.0 or "energy"); `values=None`-like empty keeps none."""
        if axis not in self.filters:
            raise WorkbenchError(f"sweep browser: no axis {axis!r}; axes: "
                                 + ", ".join(self.axes))
        known = self._codes[axis][1]
        labels = [sp.label(v) for v in known]
        wanted = {sp.label(v) for v in values}
        unknown = wanted - set(labels)
        if unknown:
            raise WorkbenchError(f"sweep browser: axis {axis!r} has no value "
                                 f"{sorted(unknown)}; values: " + ", ".join(labels))
        self.filters[axis].value = tuple(i for i, lab in enumerate(labels) if lab in wanted)

    def set_metrics(self, x: str | None = None, y: str | None = None,
                    color: str | None = None) -> None:
        """Plot `x` against `y` coloured by `color` (None: unchanged; "" colours nothing)."""
        for name in (x, y):
            if name is not None:
                _check_metric(name, self.metrics)
        self._quiet = True  # one refresh for the three controls
        try:
            for control, value in ((self.x, x), (self.y, y), (self.color, color)):
                if value is not None:
                    control.value = value
        finally:
            self._quiet = False
        self.refresh()

    # computation ---------------------------------------------------------------------------
    def _filter_mask(self) -> np.ndarray:
        mask = np.ones(len(self.frame), dtype=bool)
        for axis, box in self.filters.items():
            codes, values = self._codes[axis]
            wanted = np.zeros(len(values), dtype=bool)
            wanted[list(box.value)] = True
            mask &= wanted[codes]
        return mask

    def refresh(self) -> None:
        """Apply the filters and metrics: new drawn cases, front line, labels and status."""
        x, y, color = self.x.value, self.y.value, self.color.value
        self.mask = self._filter_mask()
        if color and color not in self._palettes:  # colours of every case, once per column
            self._palettes[color] = sp.colors(self.frame[color])
        data = sp.points_data(self.frame, x, y, color or None, self.columns, self.bins,
                              self.mask, self._palettes.get(color))
        self._quiet = True  # the browser's selection is reset with the data, not a pick
        try:
            self.points.selected.indices = []
            self.points.data = data
            self.line.data = sp.front_line(data)
        finally:
            self._quiet = False
        self.figure.xaxis[0].axis_label = sp.axis_title(x)
        self.figure.yaxis[0].axis_label = sp.axis_title(y)
        self.legend.value = sp.color_legend(self.frame[color], color) if color else ""
        front = int(np.sum(data["front"]))
        self.status.value = sp.summary_line(sp.drawable(self.frame, x, y, self.mask),
                                            len(self.frame), front, len(data["x"]) - front,
                                            self.bins)
        if self.selected_case is not None:
            self._mark(self.selected_case)

    @property
    def front(self) -> pd.DataFrame:
        """The rows of the drawn Pareto cases (filtered, plotted metrics), in front order."""
        front = np.asarray(self.points.data["front"], dtype=bool)
        ids = np.asarray(self.points.data["case_id"])[front]
        return self.frame.set_index("case_id").loc[ids].reset_index()

    @property
    def drawn(self) -> int:
        """Number of cases sent to the plot and table."""
        return len(self.points.data["x"])

    def _mark(self, case_id: str) -> None:
        """Select the case's point and table row, if drawn."""
        where = np.flatnonzero(np.asarray(self.points.data["case_id"]) == case_id)
        self._quiet = True
        try:
            self.points.selected.indices = [int(where[0])] if len(where) else []
        finally:
            self._quiet = False

    def select(self, case_id: str) -> None:
        """Show one case: its row, its point and table row selected, and its per-layer cycles
        and energy by part (`sweep.case_layers`). Errors are shown in one line."""
        rows = self.frame[self.frame["case_id"] == case_id]
        if rows.empty:
            self.status.value = error_html(WorkbenchError(f"no case {case_id!r} in this sweep"))
            return
        self.selected_case = case_id
        self._mark(case_id)
        self.info.value = case_html(rows.iloc[0], self.axes, self.metrics)
        try:
            self.per_layer = self._case_layers(case_id)
        except WorkbenchError as exc:
            self.per_layer = pd.DataFrame()
            self.info.value += "<br>" + error_html(exc)
        cycles, energy = sp.breakdown_sources(self.per_layer)
        for src, fig, data in ((self.cycles_source, self.cycles_figure, cycles),
                               (self.energy_source, self.energy_figure, energy)):
            src.data = {k: [] for k in src.data}  # no glyph refers to a missing layer
            fig.x_range.factors = data["layer"]
            dp.fit_layer_labels(fig, list(data["layer"]))  # readable at 50+ layers
            src.data = data

    def _case_layers(self, case_id: str) -> pd.DataFrame:
        if self.out_dir is None:
            raise WorkbenchError("no sweep directory: per-layer plans are not available")
        if case_id not in self._layers:
            self._layers[case_id] = sweep.case_layers(self.out_dir, case_id)
            while len(self._layers) > _KEEP:
                self._layers.popitem(last=False)
        self._layers.move_to_end(case_id)
        return self._layers[case_id]

    # layout --------------------------------------------------------------------------------
    @functools.cached_property
    def view(self) -> widgets.Widget:
        """Filters, metric menus, status, the plot and table, and the breakdown area."""
        filters = widgets.HBox(list(self.filters.values()),
                               layout=widgets.Layout(flex_flow="row wrap"))
        figures = column(row(self.figure, column(self.cycles_figure, self.energy_figure)),
                         self.table)
        return widgets.VBox([filters, widgets.HBox([self.x, self.y, self.color]),
                             self.legend, self.status, self.info, bokeh_widget(figures)])


def sweep_browser(out_dir: str | Path | None = None, frame: pd.DataFrame | None = None,
                  x: str = "time_ms", y: str = "energy_uj", color: str | None = "memory_kb",
                  axes: Sequence[str] | None = None,
                  bins: tuple[int, int] = sp.DEFAULT_BINS) -> SweepBrowser:
    """Build the sweep browser on a sweep directory (or a results `frame`; then per-layer
    breakdowns need `out_dir` too). Arguments as SweepBrowser."""
    return SweepBrowser(out_dir=out_dir, frame=frame, x=x, y=y, color=color, axes=axes,
                        bins=bins)
