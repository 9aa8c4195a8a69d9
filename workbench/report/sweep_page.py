"""The sweep results browser as one self-contained, offline HTML page (`workbench report
--sweep DIR`; the caller reads the sweep directory, so this module never imports `sweep`).

The page holds every completed case of the sweep (one row each) and runs the same selection as
`sweep_plots.reduce_points` in JavaScript (CustomJS, no kernel): the filters (one checkbox group
per grid axis) and the x / y / colour metric menus recompute the Pareto front of the filtered
cases and the thinned rest (at most one case per screen bin). Selecting a case (on the plot or
in the table, which share one source) shows its row and its per-layer cycles and energy by
part; those breakdowns are stored for at most `max_breakdowns` cases (all cases when the sweep
has no more, else the Pareto cases of the first two metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import CheckboxGroup, ColumnDataSource, CustomJS, Div, Select
from bokeh.palettes import Category10_10, Viridis256

from workbench import spelling
from workbench.errors import WorkbenchError
from workbench.report.output import write_text
from workbench.viz import sweep_plots as sp
from workbench.viz.common import standalone_html

_RECOMPUTE_JS = """
const d = all.data, n = d.case_id.length;
const keep = new Uint8Array(n).fill(1);
for (const axis of Object.keys(boxes)) {
  const on = new Set(boxes[axis].active), codes = d["_code_" + axis];
  for (let i = 0; i < n; i++) if (!on.has(codes[i])) keep[i] = 0;
}
const X = d[xsel.value], Y = d[ysel.value];
const sx = dirs[xsel.value] === "max" ? -1 : 1, sy = dirs[ysel.value] === "max" ? -1 : 1;
const rows = [];
for (let i = 0; i < n; i++) {
  if (keep[i] && Number.isFinite(X[i]) && Number.isFinite(Y[i])) rows.push(i);
}
// exact Pareto front: sorted by x then y (better first), keep strict new bests of y and
// the copies of a front point
const sorted = rows.slice().sort((a, b) =>
  (sx * X[a] - sx * X[b]) || (sy * Y[a] - sy * Y[b]) || (a - b));
const isFront = new Uint8Array(n), front = [];
let best = Infinity, last = -1;
for (const i of sorted) {
  const v = sy * Y[i];
  if (v < best) { best = v; last = i; isFront[i] = 1; front.push(i); }
  else if (last >= 0 && X[i] === X[last] && Y[i] === Y[last]) { isFront[i] = 1; front.push(i); }
}
// the rest: the first case of each of nx x ny cells over the rest's range
const rest = rows.filter((i) => !isFront[i]);
let xl = Infinity, xh = -Infinity, yl = Infinity, yh = -Infinity;
for (const i of rest) {
  xl = Math.min(xl, X[i]); xh = Math.max(xh, X[i]);
  yl = Math.min(yl, Y[i]); yh = Math.max(yh, Y[i]);
}
const cell = (v, lo, hi, k) => hi > lo ? Math.min(k - 1, Math.floor((v - lo) / (hi - lo) * k)) : 0;
const seen = new Set(), drawn = front.slice();
for (const i of rest) {
  const c = cell(X[i], xl, xh, bins[0]) * bins[1] + cell(Y[i], yl, yh, bins[1]);
  if (!seen.has(c)) { seen.add(c); drawn.push(i); }
}
// colours over all cases: numbers on Viridis (log when positive and spanning 8x), else Category10
const C = csel.value, color = new Array(n).fill("#1f77b4");
if (C !== "" && numeric[C]) {
  const V = d[C];
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < n; i++) {
    if (Number.isFinite(V[i])) { lo = Math.min(lo, V[i]); hi = Math.max(hi, V[i]); }
  }
  const log = lo > 0 && hi >= 8 * lo, f = (v) => log ? Math.log(v) : v;
  for (const i of drawn) {
    if (!Number.isFinite(V[i])) { color[i] = "#999999"; continue; }
    const t = f(hi) > f(lo) ? (f(V[i]) - f(lo)) / (f(hi) - f(lo)) : 0;
    color[i] = viridis[Math.max(0, Math.min(255, Math.floor(t * 256)))];
  }
} else if (C !== "") {
  const codes = d["_code_" + C];
  for (const i of drawn) color[i] = cat10[codes[i] % 10];
}
const out = {x: [], y: [], front: [], front_alpha: [], color: []};
for (const c of cols) out[c] = [];
for (const i of drawn) {
  out.x.push(X[i]); out.y.push(Y[i]); out.front.push(isFront[i] === 1);
  out.front_alpha.push(isFront[i]); out.color.push(color[i]);
  for (const c of cols) out[c].push(d[c][i]);
}
shown.selected.indices = [];
shown.data = out;
line.data = {x: front.map((i) => X[i]), y: front.map((i) => Y[i])};
xaxis.axis_label = titles[xsel.value];
yaxis.axis_label = titles[ysel.value];
legend.text = C === "" ? "" : legends[C];
count.text = summary(rows.length, n, front.length, drawn.length - front.length);
"""

_SUMMARY_JS = """(shown, total, front, thinned) => `${shown} of ${total} cases match the filters;
drawn: ${front} on the Pareto front + ${thinned} others (at most one per cell of BINS)`"""

_SELECT_JS = """
const sel = shown.selected.indices;
const empty = {layer: []};
for (const k of parts_c) empty[k] = [];
if (!sel.length) { info.text = "select a case on the plot or in the table"; return; }
const i = sel[0], id = shown.data.case_id[i];
info.text = "<b>case " + id + "</b>: " + cols.filter((c) => c !== "case_id")
  .map((c) => {
    const v = shown.data[c][i];
    const shown_v = typeof v === "number"
      ? v.toLocaleString("en", {maximumSignificantDigits: 4}) : v;
    return c + " " + shown_v;
  }).join(" · ");
const b = layers[id];
for (const [src, xr, kind] of [[cyc, xr_c, "cycles"], [en, xr_e, "energy"]]) {
  src.data = Object.fromEntries(Object.keys(src.data).map((k) => [k, []]));
  if (b) { xr.factors = b[kind].layer; src.data = b[kind]; }
}
if (!b) info.text += " (no per-layer breakdown stored in this page for this case)";
"""


def _all_columns(frame: pd.DataFrame, axes: Sequence[str], table: Sequence[str],
                 metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Every case: table columns (labels or floats), metrics as float64, axis codes."""
    data: dict[str, np.ndarray] = {}
    for c in dict.fromkeys([*table, *metrics]):
        values = frame[c]
        data[c] = (values.to_numpy(dtype=float) if pd.api.types.is_numeric_dtype(values)
                   else np.array([sp.label(v) for v in values], dtype=object))
    for axis in axes:
        data[f"_code_{axis}"] = sp.axis_codes(frame, axis)[0]
    return data


def sweep_view(frame: pd.DataFrame, axes: Sequence[str], x: str = "time_ms",
               y: str = "energy_uj", color: str = "memory_kb",
               bins: tuple[int, int] = sp.DEFAULT_BINS,
               breakdowns: dict[str, pd.DataFrame] | None = None) -> object:
    """The page's bokeh layout for a results frame (see the module docstring); `breakdowns`
    maps case ids to their per-layer plans."""
    metrics = sp.metrics_of(frame)
    for name in (x, y):
        if name not in metrics:
            raise WorkbenchError(f"sweep page: no metric {name!r} in this sweep; metrics: "
                                 + ", ".join(metrics))
    table = sp.table_columns(frame, axes)
    palette_options = [""] + list(dict.fromkeys([*axes, *metrics]))
    data = sp.points_data(frame, x, y, color or None, table, bins)
    shown = ColumnDataSource(data, name="sweep_points")
    line = ColumnDataSource(sp.front_line(data), name="sweep_front")
    everything = ColumnDataSource(_all_columns(frame, axes, table, metrics), name="sweep_all")
    fig = sp.pareto_scatter(shown, line, x, y)
    grid = sp.case_table(shown, table)
    boxes = {a: CheckboxGroup(labels=[sp.label(v) for v in sp.axis_codes(frame, a)[1]],
                              active=list(range(len(sp.axis_codes(frame, a)[1]))),
                              name=f"filter_{a}") for a in axes}
    xsel = Select(title="x", value=x, options=metrics, name="metric_x")
    ysel = Select(title="y", value=y, options=metrics, name="metric_y")
    csel = Select(title="colour", value=color or "", options=palette_options,
                  name="metric_color")
    legend = Div(text=sp.color_legend(frame[color], color) if color else "",
                 name="sweep_legend")
    front = int(np.sum(data["front"]))
    count = Div(text=sp.summary_line(sp.drawable(frame, x, y), len(frame), front,
                                  len(data["x"]) - front, bins), name="sweep_count")
    recompute = CustomJS(args={
        "all": everything, "shown": shown, "line": line, "boxes": boxes, "xsel": xsel,
        "ysel": ysel, "csel": csel, "dirs": {m: sp.direction(m) for m in metrics},
        "bins": list(bins), "viridis": list(Viridis256), "cat10": list(Category10_10),
        "numeric": {c: bool(pd.api.types.is_numeric_dtype(frame[c]))
                    for c in palette_options if c},
        "cols": table, "xaxis": fig.xaxis[0], "yaxis": fig.yaxis[0],
        "titles": {m: sp.axis_title(m) for m in metrics},
        "legends": {c: sp.color_legend(frame[c], c) for c in palette_options if c},
        "legend": legend, "count": count},
        code=f"const summary = {_SUMMARY_JS.replace('BINS', f'{bins[0]}×{bins[1]}')};\n"
             + _RECOMPUTE_JS)
    for box in boxes.values():
        box.js_on_change("active", recompute)
    for sel in (xsel, ysel, csel):
        sel.js_on_change("value", recompute)
    info, cycles_fig, energy_fig = _case_panel(shown, table, breakdowns or {})
    filters = column([Div(text="<b>filters</b>")] + [
        column(Div(text=f"<i>{a}</i>"), box) for a, box in boxes.items()], width=170)
    return row(filters, column(row(xsel, ysel, csel), legend, count, fig, grid),
               column(info, cycles_fig, energy_fig))


def _case_panel(shown: ColumnDataSource, table: Sequence[str],
                breakdowns: dict[str, pd.DataFrame]) -> tuple:
    """The selected case's line and breakdown figures, filled by CustomJS on a selection."""
    cycles, energy = (ColumnDataSource(d, name=f"sweep_{k}") for d, k in
                      zip(sp.breakdown_sources(None), ("cycles", "energy"), strict=True))
    cycles_fig, energy_fig = sp.breakdown_figures(cycles, energy)
    info = Div(text="select a case on the plot or in the table", width=620, name="sweep_info")
    stored = {cid: dict(zip(("cycles", "energy"), sp.breakdown_sources(per_layer),
                            strict=True)) for cid, per_layer in breakdowns.items()}
    shown.selected.js_on_change("indices", CustomJS(args={
        "shown": shown, "info": info, "layers": stored, "cols": list(table), "cyc": cycles,
        "en": energy, "xr_c": cycles_fig.x_range, "xr_e": energy_fig.x_range,
        "parts_c": list(cycles.data)}, code=_SELECT_JS))
    return info, cycles_fig, energy_fig


def sweep_page(frame: pd.DataFrame, overrides: Sequence[str], path: str | Path,
               x: str = "time_ms", y: str = "energy_uj", color: str = "memory_kb",
               bins: tuple[int, int] = sp.DEFAULT_BINS, max_breakdowns: int = 100,
               case_layers: Callable[[str], pd.DataFrame] | None = None) -> Path:
    """Write a sweep's results (`sweep.collect`, with the grid's `overrides` axes) as one
    offline HTML page at `path` (BokehJS inline, no URL); returns the path. `case_layers`
    gives a case's per-layer plan (`sweep.case_layers` of the sweep directory). See the
    module docstring."""
    if frame.empty:
        raise WorkbenchError("sweep page: no completed case to show")
    frame, (x, y, color) = spelling.renamed_columns(frame, [x, y, color], "sweep page")
    axes = sp.sweep_axes(frame, list(overrides))
    color = color if color in frame else ""
    ids = frame["case_id"].tolist()
    if len(ids) > max_breakdowns:
        xv, yv = (pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in (x, y))
        front = sp.pareto_front(xv, yv, sp.direction(x), sp.direction(y))
        ids = frame["case_id"][front].tolist()[:max_breakdowns]
    breakdowns = {cid: case_layers(cid) for cid in ids} if case_layers else None
    layout = sweep_view(frame, axes, x, y, color, bins, breakdowns)
    return write_text(path, standalone_html(layout, "Sweep results"))
