"""Seed 001 table 3: the access energy of an SRAM by its size and width
(data/energy/yang_memory_energy.yaml), with the rows the seed does not print derived (above
1 MB, and below 1 KB on request). Read once per version of the file on disk."""

from __future__ import annotations

import bisect
import functools
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import FileFormatError, WorkbenchError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file


@dataclass(frozen=True, slots=True)
class EnergyTable:
    """Seed 001 table 3 (pJ per 16 bits) with its derived rows: `rows_kb` ascending, one energy
    per width of `widths_bits` in each of `rows_pj`; DRAM `dram_pj` above `dram_above_kb`."""

    widths_bits: tuple[int, ...]
    rows_kb: tuple[float, ...]
    rows_pj: tuple[tuple[float, ...], ...]
    dram_above_kb: float
    dram_pj: float


def energy_table() -> EnergyTable:
    """The table as read from the data folder (the current version on disk)."""
    path = data_file("energy", "yang_memory_energy.yaml")
    return _read_energy_table(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_energy_table(path: str, mtime_ns: int) -> EnergyTable:
    """The table file parsed once per version on disk, with the rows above the last printed
    one derived by the extension rule (see `memory_energy_pj_per_16b`)."""
    doc = read_yaml(Path(path), "energy table")
    try:
        widths = tuple(int(w) for w in doc["widths_bits"])
        printed = {float(kb): tuple(float(e) for e in row) for kb, row in doc["sram"].items()}
        fit_kb, dram_kb, dram = (float(doc["extension"]["fit_from_kb"]),
                                 float(doc["dram_above_kb"]), float(doc["dram"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FileFormatError(f"energy table {path!r}: malformed ({exc!r})") from None
    rows_kb = sorted(printed)
    rows = [printed[kb] for kb in rows_kb]
    if any(len(row) != len(widths) for row in rows) or fit_kb not in printed:
        raise FileFormatError(f"energy table {path!r}: a row has not one value per width, or "
                              "extension.fit_from_kb is not a printed row")
    ratios = [last / first for last, first in zip(rows[-1], printed[fit_kb], strict=True)]
    growth = math.prod(ratios) ** (1 / (len(ratios) * math.log2(rows_kb[-1] / fit_kb)))
    while rows_kb[-1] < dram_kb:  # doublings up to the DRAM threshold (the last may be less)
        size_kb = min(2 * rows_kb[-1], dram_kb)
        step = growth ** math.log2(size_kb / rows_kb[-1])
        rows_kb.append(size_kb)
        rows.append(tuple(e * step for e in rows[-1]))
    steps = zip(rows, [*rows[1:], (dram,) * len(widths)], strict=True)
    if any(b < a for row_a, row_b in steps for a, b in zip(row_a, row_b, strict=True)):
        raise FileFormatError(f"energy table {path!r}: energy must not decrease with size")
    return EnergyTable(widths, tuple(rows_kb), tuple(rows), dram_kb, dram)


SMALL_FIT_KB = (1.0, 8.0)   # the printed rows whose growth extends table 3 below 1 KB
SMALL_FLOOR_KB = 0.25       # seed 001 table 3's caption: SRAMs from 0.25 KB


@functools.lru_cache(maxsize=4)
def _rows_below_1kb(table: EnergyTable) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """Rows 0.25 and 0.5 KB (ascending): each the row above divided by g, the geometric mean
    of the per-doubling growth over the 1 → 8 KB rows and every width (g = 1.402)."""
    lo, hi = (table.rows_pj[table.rows_kb.index(kb)] for kb in SMALL_FIT_KB)
    octaves = math.log2(SMALL_FIT_KB[1] / SMALL_FIT_KB[0])
    growth = math.prod(b / a for a, b in zip(lo, hi, strict=True)) ** (1 / (len(lo) * octaves))
    rows_kb, rows = [SMALL_FIT_KB[0]], [lo]
    while rows_kb[0] > SMALL_FLOOR_KB:
        rows_kb.insert(0, rows_kb[0] / 2)
        rows.insert(0, tuple(e / growth for e in rows[0]))
    return tuple(rows_kb[:-1]), tuple(rows[:-1])


def memory_energy_pj_per_16b(size_bytes: float, width_bits: int, *,
                             extend_below_1kb: bool = False) -> float:
    """Access energy (pJ per 16 bits) of a memory of `size_bytes` read `width_bits` at a time,
    seed 001 table 3 (data/energy/yang_memory_energy.yaml).

    The row of the smallest listed size holding `size_bytes` (below 1 KB the 1 KB row, or with
    `extend_below_1kb` derived rows at 0.5 and 0.25 KB: each the row above divided by the
    geometric-mean growth per doubling of the 1 → 8 KB rows over the four widths, g = 1.402;
    the 0.25 KB row, the seed's smallest SRAM, below that), at the tabulated width: the
    printed values exactly at 1 KB … 1 MB. Rows 2, 4, 8 and 16 MB are derived (the seed prints
    none): each is the row before times one growth factor g, the
    geometric mean of the per-doubling growth over the last three printed octaves (128 KB →
    1 MB) and the four widths: g = 1.495, a power law ∝ size^0.58 (about √size, the wire-length
    growth seed 001 §3.4 credits for large SRAMs' energy). One g for every width keeps the
    table's order across widths (wider words cheaper per 16 bits). DRAM (320) above 16 MB at
    every width. Non-decreasing in size for every width (checked when the table is read).
    """
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, numbers.Real) \
            or not math.isfinite(size_bytes) or size_bytes <= 0:
        raise WorkbenchError(f"memory size must be a positive number of bytes, got {size_bytes!r}")
    table = energy_table()
    if isinstance(width_bits, bool) or width_bits not in table.widths_bits:
        raise WorkbenchError(f"memory width {width_bits!r} bits not tabulated; widths: "
                             f"{list(table.widths_bits)}")
    size_kb = size_bytes / 1024
    if size_kb > table.dram_above_kb:
        return table.dram_pj
    column = table.widths_bits.index(width_bits)
    if extend_below_1kb:
        small_kb, small = _rows_below_1kb(table)
        if size_kb <= small_kb[-1]:
            return small[bisect.bisect_left(small_kb, size_kb)][column]
    row = bisect.bisect_left(table.rows_kb, size_kb)
    return table.rows_pj[row][column]
