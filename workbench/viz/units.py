"""Human units for everything a user reads: tables, totals lines, tooltips and plot axes.

Memory sizes and footprints as B/KB/MB/GB (1 KB = 1024 B), traffic volumes in decimal MB
(10⁶ B, as the sweep's traffic_mb and `workbench traffic`), time as ns/µs/ms/s, energy as
pJ/nJ/µJ/mJ/J, throughput in GOps/s, counts with thousands separators, and never scientific
notation. Energy of a
platform without an energy table (all its pJ fields 0, e.g. the `nve` preset) reads "n/a".
Shapes are C×H×W (as the network YAML says [C, H, W]); tiles TOx×TOy×TOc×TOn×TKc.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workbench.platforms import Platform

if TYPE_CHECKING:
    from bokeh.models import CustomJSTicker, CustomJSTickFormatter

NA = "n/a"
TILE_HEADER = "tile TOx×TOy×TOc×TOn×TKc"   # the one place a tile string is named
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


def _finite(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def fmt_number(value: float, digits: int = 3, strip: bool = False) -> str:
    """`digits` significant digits below 1,000, whole numbers with separators above;
    never an exponent ('1,145,000,000,000', '12.3', '0.00123'); `strip`: no trailing
    zeros ('64' rather than '64.0')."""
    if not _finite(value):
        return NA
    x = float(value)
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if strip and "." in text else text


def fmt_count(value: float) -> str:
    """A whole count with thousands separators ('8,693')."""
    return f"{round(float(value)):,}" if _finite(value) else NA


def _scaled(value: float, units: Iterable[tuple[str, float]], strip: bool = False) -> str:
    if not _finite(value):
        return NA
    x = float(value)
    units = list(units)
    for unit, scale in units:
        if abs(x) >= scale:
            return f"{fmt_number(x / scale, strip=strip)} {unit}"
    return f"{fmt_number(x / units[-1][1], strip=strip)} {units[-1][0]}"


def fmt_traffic(size_bytes: float) -> str:
    """A traffic volume in decimal MB: '3.34 MB' for 3,337,812 bytes (10⁶ B per MB)."""
    return NA if not _finite(size_bytes) else f"{fmt_number(size_bytes / 1e6)} MB"


def fmt_bytes(size_bytes: float) -> str:
    """'512 B', '1.5 KB', '64 KB', '2.25 MB' (1 KB = 1024 bytes)."""
    return _scaled(size_bytes, (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)),
                   strip=True)


def fmt_seconds(seconds: float) -> str:
    """'1.23 s', '12.3 ms', '450 µs', '80.0 ns'."""
    return _scaled(seconds, (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)))


def fmt_ms(milliseconds: float) -> str:
    """A time given in ms, in the unit that reads best."""
    return fmt_seconds(float(milliseconds) / 1e3) if _finite(milliseconds) else NA


def fmt_energy(energy_pj: float, known: bool = True) -> str:
    """'12.3 µJ', '4.50 mJ' from pJ; 'n/a' when the platform has no energy table."""
    if not known:
        return NA
    return _scaled(energy_pj, (("J", 1e12), ("mJ", 1e9), ("µJ", 1e6), ("nJ", 1e3),
                               ("pJ", 1)))


def fmt_gops(gops: float) -> str:
    """'12.3 GOps/s'."""
    return f"{fmt_number(gops)} GOps/s" if _finite(gops) else NA


def fmt_shape(shape: Iterable[int]) -> str:
    """(C, H, W) → '3×32×32' (the network file's order)."""
    return "×".join(str(int(v)) for v in shape)


def fmt_tile(dims: Iterable[int]) -> str:
    """(TOx, TOy, TOc, TOn, TKc) → '14×16×32×1×16' (header: TILE_HEADER)."""
    return "×".join(str(int(v)) for v in dims)


def fmt_percent(share: float) -> str:
    return f"{100 * float(share):.0f}%" if _finite(share) else NA


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


def readable(frame: pd.DataFrame, energy_known: bool = True) -> pd.DataFrame:
    """A display copy of a table: columns named `*_bytes`, `*_kb`, `*_pj`, `*_uj`, `*_ms`,
    `*_mb`, `*_gops` in human units (header without the suffix; traffic volumes, TRAFFIC_SUFFIXES,
    in decimal MB as `*_mb`, sizes in binary KB/MB), whole numbers with separators, other
    floats to 3 significant digits; text columns unchanged."""
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
            whole = len(whole) > 0 and bool(np.all(np.mod(whole, 1) == 0)) and \
                float(whole.abs().max()) >= 1000
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


TILE_COLUMNS = ("TOx", "TOy", "TOc", "TOn", "TKc")


def mapping_table(rows: pd.DataFrame, columns: Iterable[str], energy_known: bool = True
                  ) -> pd.DataFrame:
    """Readable rows of an exploration table: the tile dimensions joined into one column
    headed TILE_HEADER (in place of TOx), the other `columns` as `readable` shows them."""
    columns = list(columns)
    frame = rows[[c for c in columns if c not in TILE_COLUMNS[1:]]].copy()
    if "TOx" in columns:
        tiles = [fmt_tile(t) if all(_finite(v) for v in t) else "-"
                 for t in zip(*(rows[d] for d in TILE_COLUMNS), strict=True)]
        frame["TOx"] = tiles
        frame = frame.rename(columns={"TOx": TILE_HEADER})
    return readable(frame, energy_known)


def network_table(net, elem_bytes: int = 2) -> pd.DataFrame:
    """`net.summary()` for reading: shapes C×H×W (the YAML's order), bytes in KB/MB."""
    table = net.summary(elem_bytes)
    table["input"] = [fmt_shape(layer.in_shape) for layer in net.layers]
    table["output"] = [fmt_shape(layer.out_shape) for layer in net.layers]
    table["kernel"] = table["kernel"].str.replace("x", "×")
    return readable(table.rename(columns={"input": f"input {SHAPE_HEADER}",
                                          "output": f"output {SHAPE_HEADER}"}))


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
