"""The one number formatter for everything a person reads: CLI tables and lines, sweep
messages, tooltips, axes and reports (the JS tick formatter in `viz.units` follows the same
rules in the browser).

Rules: never an exponent; counts (MACs, cycles, accesses, cases) are whole numbers with
thousands separators; other quantities three significant digits; memory sizes and footprints
in binary units (1 KB = 1024 B: '64 KB'), traffic volumes in decimal MB (10⁶ B, as the sweep's
traffic_mb), times as ns/µs/ms/s and energies as pJ/nJ/µJ/mJ/J chosen by magnitude, large
figures in engineering notation with an SI prefix ('15.5 G MACs'). 'n/a' stands for a value
that is missing, infinite or not a number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

NA = "n/a"
SI_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def finite(value) -> bool:
    """True for a number that is neither missing, NaN nor infinite."""
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def fmt_number(value: float, digits: int = 3, strip: bool = False) -> str:
    """`digits` significant digits below 10**(digits-1), whole numbers with separators above;
    never an exponent ('1,145,000,000,000', '12.3', '0.00123'); `strip`: no trailing
    zeros ('64' rather than '64.0')."""
    if not finite(value):
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
    """A whole count with thousands separators ('8,693'; 795,791.4 cycles read '795,791')."""
    return f"{round(float(value)):,}" if finite(value) else NA


def fmt_value(value: float) -> str:
    """A number of unknown kind: a count when it is whole ('64', not '64.0'), else
    `fmt_number`."""
    if not finite(value):
        return NA
    return fmt_count(value) if float(value) == round(float(value)) else fmt_number(value)


def fmt_si(value: float, things: str = "") -> str:
    """A count in engineering notation with an SI prefix from 10,000 on, `things` after it
    ('15.5 G MACs', '98.2 M', '1,024 params'): three significant digits, never an exponent;
    below 10,000 as `fmt_value`."""
    if not finite(value):
        return NA
    x = float(value)
    tail = f" {things}" if things else ""
    for prefix, scale in SI_PREFIXES:
        least = 10 * scale if prefix == "k" else scale  # '9,999', then '10.0 k'
        if abs(x) >= least:
            return f"{fmt_number(x / scale)} {prefix}{tail}"
    return f"{fmt_value(x)}{tail}"


def _scaled(value: float, units: Iterable[tuple[str, float]], strip: bool = False) -> str:
    if not finite(value):
        return NA
    x = float(value)
    units = list(units)
    for unit, scale in units:
        if abs(x) >= scale:
            return f"{fmt_number(x / scale, strip=strip)} {unit}"
    return f"{fmt_number(x / units[-1][1], strip=strip)} {units[-1][0]}"


def fmt_traffic(size_bytes: float) -> str:
    """A traffic volume in decimal MB: '3.34 MB' for 3,337,812 bytes (10⁶ B per MB)."""
    return NA if not finite(size_bytes) else f"{fmt_number(size_bytes / 1e6)} MB"


def fmt_bytes(size_bytes: float) -> str:
    """'512 B', '1.5 KB', '64 KB', '2.25 MB', '5 GB' (1 KB = 1024 bytes)."""
    return _scaled(size_bytes, (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20),
                                ("KB", 1 << 10), ("B", 1)), strip=True)


def fmt_seconds(seconds: float) -> str:
    """'1.23 s', '12.3 ms', '450 µs', '80.0 ns'."""
    return _scaled(seconds, (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)))


def fmt_ms(milliseconds: float) -> str:
    """A time given in ms, in the unit that reads best."""
    return fmt_seconds(float(milliseconds) / 1e3) if finite(milliseconds) else NA


def fmt_energy(energy_pj: float, known: bool = True) -> str:
    """'12.3 µJ', '4.50 mJ' from pJ; 'n/a' when the platform has no energy table."""
    if not known:
        return NA
    return _scaled(energy_pj, (("J", 1e12), ("mJ", 1e9), ("µJ", 1e6), ("nJ", 1e3),
                               ("pJ", 1)))


def fmt_gops(gops: float) -> str:
    """'12.3 GOps/s'."""
    return f"{fmt_number(gops)} GOps/s" if finite(gops) else NA


def fmt_shape(shape: Iterable[int]) -> str:
    """(C, H, W) → '3×32×32' (the network file's order)."""
    return "×".join(str(int(v)) for v in shape)


def fmt_tile(dims: Iterable[int]) -> str:
    """(TOx, TOy, TOc, TOn, TKc) → '14×16×32×1×16'."""
    return "×".join(str(int(v)) for v in dims)


def fmt_percent(share: float) -> str:
    """A share of 1 as a whole percent: 0.974 → '97%'."""
    return f"{100 * float(share):.0f}%" if finite(share) else NA
