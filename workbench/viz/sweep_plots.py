"""Sweep results: which cases to draw, and the figures that draw them.

A sweep can hold 100,000 cases; the browser gets a bounded, deterministic selection of them,
chosen here on the Python side (`reduce_points`):

- every case on the exact Pareto front of the two plotted metrics (each minimized or maximized
  as `METRICS` says), however many there are, and
- of the other cases, at most one per screen bin: the plot area over the filtered cases' range
  is cut into `bins = (nx, ny)` equal cells and the first case (in frame order) of each cell is
  kept. So at most |front| + nx·ny points are sent (default 100·64 = 6,400 besides the front).

`sweep_page` (workbench.report.sweep_page) runs the same selection in JavaScript on a static page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from bokeh.models import (
    ColumnDataSource,
    DataTable,
    HoverTool,
    NumberFormatter,
    StringFormatter,
    TableColumn,
)
from bokeh.palettes import Category10_10, Viridis256
from bokeh.plotting import figure

from workbench.explore import pareto_mask
from workbench.numbers import fmt_count, fmt_number
from workbench.viz import design_plots as dp
from workbench.viz.common import TOOLS
from workbench.viz.units import fmt_named, number_tooltips

# the metrics a sweep row can carry, and which way is better ("min": smaller is better):
# hardware size (local memory, accumulator width, cores) counts as a cost to minimize
METRICS: dict[str, str] = {
    "time_ms": "min", "energy_uj": "min", "cycles": "min", "throughput_gops": "max",
    "ext_accesses": "min", "dma_transfers": "min", "conv_fc_energy_uj": "min",
    "accuracy": "max", "traffic_mb": "min", "compulsory_mb": "min", "io_bound_layers": "min",
    "memory_kb": "min", "acc_bits": "min", "cores": "min", "most_cores_used": "min",
    "hierarchy_energy_uj": "min", "hierarchy_mac_uj": "min", "memory_to_compute": "min",
    "hierarchy_cycles": "min"}
LEVEL_METRIC = ("hierarchy_", "_uj")  # hierarchy_<level>_uj: one per level, lower is better
AXIS_COLUMNS = ("network", "platform", "hierarchy", "memory_kb", "acc_bits", "objective",
                "fusion", "traffic_model")
DEFAULT_BINS = (100, 64)
TABLE_METRICS = ("time_ms", "energy_uj", "throughput_gops", "cycles", "ext_accesses",
                 "accuracy", "traffic_mb", "hierarchy_energy_uj", "memory_to_compute")
_PALETTE = np.array(Viridis256)


def sweep_axes(frame: pd.DataFrame, override_keys: Sequence[str] = ()) -> list[str]:
    """The grid axes of a results frame: the AXIS_COLUMNS it has, then each override key."""
    axes = [c for c in AXIS_COLUMNS if c in frame]
    return axes + [k for k in override_keys if k in frame and k not in axes]


def metrics_of(frame: pd.DataFrame) -> list[str]:
    """The METRICS columns of `frame`, then its per-level hierarchy energies
    (hierarchy_<level>_uj), each with at least one finite value."""
    levels = [c for c in frame.columns if isinstance(c, str) and c not in METRICS
              and c.startswith(LEVEL_METRIC[0]) and c.endswith(LEVEL_METRIC[1])]
    return [m for m in [*METRICS, *levels] if m in frame
            and np.isfinite(pd.to_numeric(frame[m], errors="coerce")).any()]


def direction(metric: str) -> str:
    """'min' or 'max': which way a metric is better (every hierarchy level energy: min)."""
    return METRICS.get(metric, "min")


def label(value: object) -> str:
    """How an axis value is shown: 16.0 -> '16', 1048576.0 -> '1,048,576', 0.5 -> '0.5',
    None/NaN -> '—' (numbers by `workbench.numbers`, never an exponent)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if isinstance(value, float | np.floating):
        x = float(value)
        return fmt_count(x) if x == round(x) else fmt_number(x, strip=True)
    return str(value)


def axis_codes(frame: pd.DataFrame, axis: str) -> tuple[np.ndarray, list]:
    """Integer code per row (int32) and the sorted distinct values of one axis (NaN last)."""
    codes, values = pd.factorize(frame[axis], sort=True, use_na_sentinel=False)
    return codes.astype(np.int32), list(values)


def filter_mask(frame: pd.DataFrame, selections: Mapping[str, Sequence]) -> np.ndarray:
    """Rows whose value on every selected axis is one of the selected values (an axis not in
    `selections` keeps all rows; an empty selection keeps none)."""
    keep = np.ones(len(frame), dtype=bool)
    for axis, values in selections.items():
        column = frame[axis]
        wanted = list(values)
        inside = column.isin([v for v in wanted if label(v) != "—"]).to_numpy()
        if any(label(v) == "—" for v in wanted):
            inside = inside | column.isna().to_numpy()
        keep &= inside
    return keep


def pareto_front(x: np.ndarray, y: np.ndarray, x_dir: str, y_dir: str) -> np.ndarray:
    """Mask of the non-dominated points of (x, y), each "min" or "max": no other point is as
    good in both and better in one. Identical points are all kept; non-finite ones never."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    finite = np.isfinite(x) & np.isfinite(y)
    mask = np.zeros(len(x), dtype=bool)
    where = np.flatnonzero(finite)
    if len(where):
        values = np.column_stack([x[where], y[where]])
        mask[where] = pareto_mask(values, [x_dir == "max", y_dir == "max"])
    return mask


def thin(x: np.ndarray, y: np.ndarray, candidates: np.ndarray,
         bins: tuple[int, int] = DEFAULT_BINS) -> np.ndarray:
    """Mask keeping, of the `candidates` rows, the first (lowest index) in each of nx × ny
    equal cells over the finite candidates' (x, y) range: at most nx·ny rows."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rows = np.flatnonzero(candidates & np.isfinite(x) & np.isfinite(y))
    keep = np.zeros(len(x), dtype=bool)
    if not len(rows):
        return keep
    cells = np.zeros(len(rows), dtype=np.int64)
    for values, count in ((x[rows], bins[0]), (y[rows], bins[1])):
        low, high = values.min(), values.max()
        span = (values - low) / (high - low) * count if high > low else values * 0.0
        cells = cells * count + np.minimum(count - 1, np.floor(span)).astype(np.int64)
    keep[rows[np.unique(cells, return_index=True)[1]]] = True
    return keep


def reduce_points(x: np.ndarray, y: np.ndarray, x_dir: str, y_dir: str,
                  bins: tuple[int, int] = DEFAULT_BINS) -> tuple[np.ndarray, np.ndarray]:
    """Row indices to draw: the Pareto front (sorted by x, then y, better first), then one
    thinned row per bin among the rest (frame order; the cells span the range of the rest);
    and a mask of which drawn rows are front. At most |front| + nx·ny rows."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    front = pareto_front(x, y, x_dir, y_dir)
    sign_x, sign_y = (-1 if x_dir == "max" else 1), (-1 if y_dir == "max" else 1)
    front_rows = np.flatnonzero(front)
    order = np.lexsort((front_rows, sign_y * y[front_rows], sign_x * x[front_rows]))
    finite = np.isfinite(x) & np.isfinite(y)
    rest = np.flatnonzero(thin(x, y, ~front & finite, bins))
    drawn = np.concatenate([front_rows[order], rest])
    return drawn, np.arange(len(drawn)) < len(front_rows)


def colors(values: pd.Series) -> np.ndarray:
    """One hex colour per value: numbers on Viridis (log scale when all positive and spanning
    8× or more), anything else one Category10 colour per distinct value (sorted)."""
    if pd.api.types.is_numeric_dtype(values):
        v = values.to_numpy(dtype=float)
        finite = np.isfinite(v)
        if not finite.any():
            return np.full(len(v), "#999999", dtype=object)
        low, high = v[finite].min(), v[finite].max()
        if low > 0 and high >= 8 * low:
            v, low, high = np.log(np.where(finite, v, 1.0)), np.log(low), np.log(high)
        t = (v - low) / (high - low) if high > low else np.zeros(len(v))
        index = np.clip(np.floor(np.nan_to_num(t) * 256), 0, 255).astype(int)
        return np.where(finite, _PALETTE[index], "#999999")
    codes, _ = pd.factorize(values, sort=True, use_na_sentinel=False)
    return np.array(Category10_10, dtype=object)[codes % 10]


def color_legend(values: pd.Series, name: str) -> str:
    """HTML line saying what the colours mean (range or one swatch per value)."""
    if name == "" or values.empty:
        return ""
    if pd.api.types.is_numeric_dtype(values):
        v = values.to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not len(v):
            return f"colour: {name} (no values)"
        scale = " (log scale)" if v.min() > 0 and v.max() >= 8 * v.min() else ""
        low, high = fmt_named(name, v.min())[1], fmt_named(name, v.max())[1]
        return (f"colour: <b>{name}</b> from <span style='color:{Viridis256[0]}'>■</span> "
                f"{low} to <span style='color:{Viridis256[-1]}'>■</span> {high}{scale}")
    _, distinct = pd.factorize(values, sort=True, use_na_sentinel=False)
    swatches = [f"<span style='color:{Category10_10[i % 10]}'>■</span> {label(v)}"
                for i, v in enumerate(distinct)]
    return f"colour: <b>{name}</b> " + " ".join(swatches)


def points_data(frame: pd.DataFrame, x: str, y: str, color: str | None,
                columns: Sequence[str], bins: tuple[int, int] = DEFAULT_BINS,
                mask: np.ndarray | None = None, palette: np.ndarray | None = None
                ) -> dict[str, np.ndarray]:
    """The ColumnDataSource columns of the cases to draw (`reduce_points` of the rows in
    `mask`, default all): x, y, color (hex, `palette` or `colors` over ALL rows, so a filter
    never recolours a case), front (bool), front_alpha (1 on the front) and `columns` of each
    drawn case (numbers as float64, anything else as labels)."""
    xv = pd.to_numeric(frame[x], errors="coerce").to_numpy(dtype=float)
    yv = pd.to_numeric(frame[y], errors="coerce").to_numpy(dtype=float)
    if mask is not None:
        xv, yv = np.where(mask, xv, np.nan), np.where(mask, yv, np.nan)
    drawn, front = reduce_points(xv, yv, direction(x), direction(y), bins)
    rows = frame.iloc[drawn]
    data: dict[str, np.ndarray] = {"x": xv[drawn], "y": yv[drawn], "front": front,
                                   "front_alpha": front.astype(float)}
    if palette is None:
        palette = colors(frame[color]) if color else np.full(len(frame), "#1f77b4",
                                                             dtype=object)
    data["color"] = palette[drawn]
    for c in columns:
        values = rows[c]
        data[c] = (values.to_numpy(dtype=float) if pd.api.types.is_numeric_dtype(values)
                   else np.array([label(v) for v in values], dtype=object))
    return data


def drawable(frame: pd.DataFrame, x: str, y: str, mask: np.ndarray | None = None) -> int:
    """How many cases (in `mask`) have finite x and y: those the filters let through."""
    ok = np.ones(len(frame), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    for c in (x, y):
        ok &= np.isfinite(pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float))
    return int(ok.sum())


def summary_line(matching: int, total: int, front: int, thinned: int,
                 bins: tuple[int, int]) -> str:
    """The count line under the filters (sweep_page's JavaScript writes the same)."""
    return (f"{matching} of {total} cases match the filters;\ndrawn: {front} on the Pareto "
            f"front + {thinned} others (at most one per cell of {bins[0]}×{bins[1]})")


def front_line(data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The front points of `points_data` (already sorted by x) for a staircase line."""
    front = np.asarray(data["front"], dtype=bool)
    return {"x": np.asarray(data["x"])[front], "y": np.asarray(data["y"])[front]}


def pareto_scatter(points: ColumnDataSource, line: ColumnDataSource, x: str, y: str,
                   title: str = "Sweep cases: Pareto front ringed") -> figure:
    """x, y = two metrics of the drawn cases (`points_data`), coloured by `color`; the Pareto
    cases ringed in black and joined by a line. Tap or box-select cases to pick them."""
    p = figure(title=title, tools=TOOLS + ",tap,box_select", width=620, height=420,
               x_axis_label=axis_title(x), y_axis_label=axis_title(y), name="sweep_scatter")
    p.step("x", "y", source=line, mode="after", color="black", line_width=1, alpha=0.6,
           name="sweep_front_line")
    dots = p.scatter("x", "y", source=points, color="color", size=8, alpha=0.8,
                     line_color="black", line_alpha="front_alpha", line_width=2,
                     nonselection_alpha=0.25, selection_line_color="red",
                     selection_line_alpha=1.0, name="sweep_dots")
    shown = [c for c in points.data
             if c not in ("x", "y", "color", "front", "front_alpha", "case_id")][:10]
    numeric = [c for c in shown if np.asarray(points.data[c]).dtype.kind in "fiu"]
    tips, formatters = number_tooltips(numeric)  # human units, never '1.185e+3'
    by_column = dict(zip(numeric, tips, strict=True))
    hover = [("case", "@case_id")] + [by_column.get(c, (c, f"@{{{c}}}")) for c in shown]
    p.add_tools(HoverTool(renderers=[dots], tooltips=hover, formatters=formatters,
                          limit=1))  # one point per hover
    return p


def axis_title(metric: str) -> str:
    """An axis label with the unit and which way is better."""
    better = "lower is better" if direction(metric) == "min" else "higher is better"
    return f"{metric} ({better})"


def case_table(points: ColumnDataSource, columns: Sequence[str]) -> DataTable:
    """The drawn cases as a table sharing the plot's source, so selections are linked."""
    cols = [TableColumn(field=c, title=c, formatter=NumberFormatter(format="0,0.[000]")
                        if c in METRICS else StringFormatter()) for c in columns]
    return DataTable(source=points, columns=cols, width=900, height=260, selectable=True,
                     index_position=None, name="sweep_table")


def table_columns(frame: pd.DataFrame, axes: Sequence[str]) -> list[str]:
    """The table's columns: case id, the axes, then the main metrics the frame has."""
    return ["case_id", *axes, *(m for m in TABLE_METRICS if m in frame and m not in axes)]


def breakdown_sources(per_layer: pd.DataFrame | None) -> tuple[dict, dict]:
    """Cycles and energy (µJ) by part of every layer of one case's plan (`case_layers`)."""
    if per_layer is None or per_layer.empty:
        return dp.breakdown_data(pd.DataFrame(), "cycles", []), \
            dp.breakdown_data(pd.DataFrame(), "energy", [])
    names = per_layer["layer"].astype(str).tolist()
    return dp.breakdown_data(per_layer, "cycles", names), \
        dp.breakdown_data(per_layer, "energy", names)


def breakdown_figures(cycles: ColumnDataSource,
                      energy: ColumnDataSource) -> tuple[figure, figure]:
    """The selected case's per-layer stacked cycles and energy (design_plots.layer_breakdown)."""
    return (dp.layer_breakdown(cycles, "cycles", "selected case: cycles per layer, by part"),
            dp.layer_breakdown(energy, "energy", "selected case: energy (µJ) per layer, by part"))
