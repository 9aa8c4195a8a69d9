"""Human units in tables and plots: `readable` tables whose column names carry their units,
mapping and network tables, and bokeh axis ticks. The numbers themselves are formatted by
`workbench.numbers` (the one definition, re-exported here for the plots and apps).

Energy of a platform without an energy table (all its pJ fields 0, e.g. the `nve` preset)
reads "n/a". Shapes are C×H×W (as the network YAML says [C, H, W]); tiles TOx×TOy×TOc×TOn×TKc.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workbench.layers.dims import seed000_columns
from workbench.numbers import (  # noqa: F401  (re-exported: the plots' and apps' units)
    NA,
    fmt_bytes,
    fmt_count,
    fmt_energy,
    fmt_gops,
    fmt_ms,
    fmt_number,
    fmt_percent,
    fmt_seconds,
    fmt_shape,
    fmt_si,
    fmt_tile,
    fmt_traffic,
    fmt_value,
)
from workbench.numbers import finite as _finite
from workbench.platforms import Platform

if TYPE_CHECKING:
    from bokeh.models import CustomJSTicker, CustomJSTickFormatter

TILE_COLUMNS = seed000_columns()   # a tile's columns (TOx TOy TOc TOn TKc, layers.dims)
TILE_HEADER = "tile " + "×".join(TILE_COLUMNS)   # the one place a tile string is named
SHAPE_HEADER = "C×H×W"

# Tick labels with thousands separators and no exponent, on linear and log axes alike; from a
# million on, the axis counts in M, G or T (chosen by its largest tick) so labels stay short.
NUMBER_TICKS_JS = """
if (tick === 0) return "0";
const all = (ticks && ticks.length) ? ticks : [tick];
const top = Math.max(...all.map(Math.abs));
const [scale, unit] = top >= 1e12 ? [1e12, " T"] : top >= 1e9 ? [1e9, " G"] :
  top >= 1e6 ? [1e6, " M"] : [1, ""];
let step = Infinity;  // as many decimals as the closest two ticks need to differ
for (let i = 1; i < all.length; i++) step = Math.min(step, Math.abs(all[i] - all[i - 1]) / scale);
const value = tick / scale;
const need = Math.max(0, step > 0 && isFinite(step) ? Math.ceil(-Math.log10(step) - 1e-9) : 2);
let digits = need;  // then as many more as the tick itself needs to read exactly (1.25 M)
while (digits < Math.min(20, need + 6) &&
       Math.abs(Number(value.toFixed(digits)) - value) > 1e-9 * Math.abs(value)) digits++;
return value.toLocaleString("en-US", {maximumFractionDigits: digits}) + unit;
"""


def has_energy(platform: Platform) -> bool:
    """False when the platform prices no event (core, local and external pJ all 0)."""
    return any(v > 0 for v in (platform.core_pj_per_cycle, platform.effective_local_access_pj,
                               platform.ext_access_pj))


TRAFFIC_SUFFIXES = ("traffic_bytes", "compulsory_bytes")  # volumes moved, not sizes


def _column(name: str, values: pd.Series, energy_known: bool) -> tuple[str, list[str]] | None:
    """Header and formatted values of one column whose name carries its unit."""
    rules = ((TRAFFIC_SUFFIXES, 1.0, fmt_traffic), ("_bytes", 1.0, fmt_bytes),
             ("_kb", 1024.0, fmt_bytes), ("_pj", 1.0, None),
             ("_uj", 1e6, None), ("_ms", 1.0, fmt_ms), ("_gops", 1.0, fmt_gops))
    for suffixes, scale, fmt in rules:
        suffix = next((x for x in np.atleast_1d(suffixes) if name.endswith(x)), None)
        if suffix is not None:
            head = (name[: -len("_bytes")] if fmt is fmt_traffic else name[: -len(suffix)]) \
                or name
            if fmt is None:
                return head, [fmt_energy(v * scale, energy_known) for v in values]
            return head, [fmt(v * scale) for v in values]
    if name.endswith("_mb"):  # traffic in 10^6 bytes
        return name[:-3], [NA if not _finite(v) else f"{fmt_number(v)} MB" for v in values]
    return None


def fmt_named(name: str, value: float, energy_known: bool = True) -> tuple[str, str]:
    """One value of a column whose name carries its unit, as `readable` shows it: (name
    without the unit suffix, value in human units): ('energy', '2.17 mJ') for energy_uj."""
    if str(name).endswith("accuracy"):
        return name, NA if not _finite(value) else f"{100 * float(value):.1f}%"
    shown = _column(str(name), pd.Series([value], dtype=float), energy_known)
    return (shown[0], shown[1][0]) if shown is not None else (name, fmt_value(value))


def readable(frame: pd.DataFrame, energy_known: bool = True) -> pd.DataFrame:
    """A display copy of a table: columns named `*_bytes`, `*_kb`, `*_pj`, `*_uj`, `*_ms`,
    `*_mb`, `*_gops` in human units (header without the suffix; traffic volumes, TRAFFIC_SUFFIXES,
    in decimal MB as `*_mb`, sizes in binary KB/MB), integer columns and float columns of whole
    values with separators and no '.0', other floats to 3 significant digits; text columns
    unchanged."""
    out = {}
    for name in frame.columns:
        values = frame[name]
        converted = _column(str(name), values, energy_known) if \
            pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) \
            else None
        if converted is None and str(name).endswith("accuracy") and \
                pd.api.types.is_float_dtype(values):
            converted = name, [NA if not _finite(v) else f"{100 * v:.1f}%" for v in values]
        if converted is not None:
            out[converted[0]] = converted[1]
        elif pd.api.types.is_integer_dtype(values) and not pd.api.types.is_bool_dtype(values):
            out[name] = [fmt_count(v) for v in values]
        elif pd.api.types.is_float_dtype(values):
            whole = values.dropna()
            whole = len(whole) > 0 and bool(np.all(np.mod(whole, 1) == 0))  # '16', not '16.0'
            out[name] = [fmt_count(v) if whole else fmt_number(v) for v in values]
        else:
            out[name] = list(values)
    index = frame.index  # a named index by the same rules ('16 KB', not 16.0)
    if index.name is not None and pd.api.types.is_numeric_dtype(index) and \
            not pd.api.types.is_bool_dtype(index):
        shown = _column(str(index.name), pd.Series(index), energy_known)
        if shown is not None:
            index = pd.Index(shown[1], name=shown[0])
        elif bool(np.all(np.mod(index.to_numpy(dtype=float), 1) == 0)):
            index = pd.Index([fmt_count(v) for v in index], name=index.name)
    return pd.DataFrame(out, index=index)



def mapping_table(rows: pd.DataFrame, columns: Iterable[str], energy_known: bool = True
                  ) -> pd.DataFrame:
    """Readable rows of an exploration table: the tile dimensions joined into one column
    headed TILE_HEADER (in place of TOx), the other `columns` as `readable` shows them."""
    columns = list(columns)
    frame = rows[[c for c in columns if c not in TILE_COLUMNS[1:]]].copy()
    first = TILE_COLUMNS[0]
    if first in columns:
        tiles = [fmt_tile(t) if all(_finite(v) for v in t) else "-"
                 for t in zip(*(rows[d] for d in TILE_COLUMNS), strict=True)]
        frame[first] = tiles
        frame = frame.rename(columns={first: TILE_HEADER})
    return readable(frame, energy_known)


def network_table(net, elem_bytes: int = 2) -> pd.DataFrame:
    """`net.summary()` for reading: shapes C×H×W (the YAML's order), bytes in KB/MB."""
    table = net.summary(elem_bytes)
    table["input"] = [fmt_shape(layer.in_shape) for layer in net.layers]
    table["output"] = [fmt_shape(layer.out_shape) for layer in net.layers]
    table["kernel"] = table["kernel"].str.replace("x", "×")
    return readable(table.rename(columns={"input": f"input {SHAPE_HEADER}",
                                          "output": f"output {SHAPE_HEADER}"}))


# Tooltip values in the browser by the rules of `workbench.numbers` (the same digits, units and
# 'n/a'; tests run this code beside the Python functions): `kind` names the function, `scale`
# converts the column's unit to the function's (µJ → pJ: 1e6).
HOVER_JS = """
const v = Number(value) * scale;
if (value === null || value === undefined || value === "" || !isFinite(v)) return "n/a";
const number = (x, strip) => {  // numbers.fmt_number(x, 3, strip)
  if (x === 0) return "0";
  if (Math.abs(x) >= 100) return x.toLocaleString("en-US", {maximumFractionDigits: 0});
  const d = Math.min(20, 2 - Math.floor(Math.log10(Math.abs(x))));
  const text = x.toLocaleString("en-US", {minimumFractionDigits: d, maximumFractionDigits: d});
  return strip && text.includes(".") ? text.replace(/0+$/, "").replace(/\\.$/, "") : text;
};
const count = (x) => {  // round half to even, as Python's round()
  let r = Math.round(x);
  if (Math.abs(x % 1) === 0.5 && r % 2 !== 0) r -= 1;
  return (r === 0 ? 0 : r).toLocaleString("en-US");
};
const scaled = (x, units, strip) => {  // numbers._scaled
  for (const [unit, s] of units) if (Math.abs(x) >= s) return number(x / s, strip) + " " + unit;
  const [unit, s] = units[units.length - 1];
  return number(x / s, strip) + " " + unit;
};
switch (kind) {
  case "count": return count(v);
  case "bytes": return scaled(v, [["TB", 2 ** 40], ["GB", 2 ** 30], ["MB", 2 ** 20],
                                  ["KB", 1024], ["B", 1]], true);
  case "traffic": return number(v / 1e6, false) + " MB";
  case "energy": return scaled(v, [["J", 1e12], ["mJ", 1e9], ["µJ", 1e6], ["nJ", 1e3],
                                   ["pJ", 1]], false);
  case "time": return scaled(v, [["s", 1], ["ms", 1e-3], ["µs", 1e-6], ["ns", 1e-9]], false);
  case "gops": return number(v, false) + " GOps/s";
  case "accuracy": return (100 * v).toFixed(1) + "%";
  default: return v === Math.round(v) ? count(v) : number(v, false);  // numbers.fmt_value
}
"""
# a column's unit from its name (as `readable` reads it): (suffix, kind, scale to the kind's unit)
HOVER_UNITS = (("traffic_bytes", "traffic", 1.0), ("compulsory_bytes", "traffic", 1.0),
               ("_bytes", "bytes", 1.0), ("_kb", "bytes", 1024.0), ("_pj", "energy", 1.0),
               ("_uj", "energy", 1e6), ("_ms", "time", 1e-3), ("_mb", "traffic", 1e6),
               ("_gops", "gops", 1.0), ("accuracy", "accuracy", 1.0))


def hover_kind(column: str) -> tuple[str, float]:
    """(kind, scale) of HOVER_JS for a numeric column, from its name's unit suffix."""
    return next(((kind, scale) for suffix, kind, scale in HOVER_UNITS
                 if column.endswith(suffix)), ("value", 1.0))


def number_tooltips(columns: Iterable[str], labels: Iterable[str] | None = None
                    ) -> tuple[list[tuple[str, str]], dict]:
    """(tooltips, formatters) for a HoverTool showing numeric `columns` (labelled `labels`,
    default the column names) in human units (HOVER_JS: never an exponent, counts whole,
    sizes, times and energies scaled by the unit the column's name carries)."""
    from bokeh.models import CustomJSHover

    columns = list(columns)
    tips, formatters = [], {}
    for column, name in zip(columns, columns if labels is None else labels, strict=True):
        kind, scale = hover_kind(column)
        field = f"@{{{column}}}"
        tips.append((name, f"{field}{{custom}}"))
        formatters[field] = CustomJSHover(code=HOVER_JS, args={"kind": kind, "scale": scale})
    return tips, formatters


def number_ticks() -> CustomJSTickFormatter:
    """Axis ticks with thousands separators, never '2.500e+6'."""
    from bokeh.models import CustomJSTickFormatter  # here: printing numbers needs no bokeh

    return CustomJSTickFormatter(code=NUMBER_TICKS_JS)


# Log-axis ticks that never leave a stretch of the axis unmarked. BokehJS's LogTicker turns
# linear when its range spans a decade or two (CTC 7.7 to 150 read 50, 100, 150 only). Here:
# up to LOG_DECADES_125 decades, ticks at 1, 2 and 5 per decade (consecutive ticks at most
# 2.5x apart), or at 1-9 when that gives fewer than 3; a range narrower than those gets linear
# round ticks; up to LOG_DECADES_13, ticks at 1 and 3 (at most 3.33x apart); wider ranges get
# powers of ten, every k-th so at most 8 show.
LOG_DECADES_125 = 2.2
LOG_DECADES_13 = 3.5
LOG_TICKS_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !isFinite(hi) || !(hi > lo)) return [];
const e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi));
const decades = Math.log10(hi / lo);
const at = (ms, every) => {
  const ticks = [];
  for (let e = e0; e <= e1; e++) {
    if ((e - e0) % every) continue;
    for (const m of ms) {
      const t = Number((m * Math.pow(10, e)).toPrecision(12));
      if (t >= lo && t <= hi) ticks.push(t);
    }
  }
  return ticks;
};
if (decades > DECADES_13) return at([1], Math.ceil(decades / 8));
if (decades > DECADES) return at([1, 3], 1);
for (const [ms, least] of [[[1, 2, 5], 3], [[1, 2, 3, 4, 5, 6, 7, 8, 9], 2]]) {
  const ticks = at(ms, 1);
  if (ticks.length >= least) return ticks;
}
const span = hi - lo, unit = Math.pow(10, Math.floor(Math.log10(span / 4)));
const step = [1, 2, 5, 10].map((k) => k * unit).find((s) => span / s <= 6);
const ticks = [];
for (let i = Math.ceil(lo / step); i * step <= hi; i++)
  ticks.push(Number((i * step).toPrecision(12)));
return ticks;
""".replace("DECADES_13", str(LOG_DECADES_13)).replace("DECADES", str(LOG_DECADES_125))
LOG_MINOR_TICKS_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !isFinite(hi) || Math.log10(hi / lo) > 6) return [];
const ticks = [];
for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
  for (let m = 1; m <= 9; m++) {
    const t = Number((m * Math.pow(10, e)).toPrecision(12));
    if (t >= lo && t <= hi) ticks.push(t);
  }
return ticks;
"""


def log_ticks() -> CustomJSTicker:
    """Ticks for a log axis: 1-2-5 per decade over up to two decades, 1-3 up to three and a
    half, never a linear fallback with one tick in its lower half (`LOG_TICKS_JS`)."""
    from bokeh.models import CustomJSTicker

    return CustomJSTicker(major_code=LOG_TICKS_JS, minor_code=LOG_MINOR_TICKS_JS)


def human_axes(fig) -> object:
    """Give every numeric axis of a figure `number_ticks`, and every log axis `log_ticks`
    (categorical axes untouched)."""
    from bokeh.models import CategoricalAxis, LogAxis

    for axis in [*fig.xaxis, *fig.yaxis]:
        if not isinstance(axis, CategoricalAxis):
            axis.formatter = number_ticks()
        if isinstance(axis, LogAxis):
            axis.ticker = log_ticks()
    return fig
