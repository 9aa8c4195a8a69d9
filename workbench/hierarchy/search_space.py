"""What `search` prices per level: the holder patterns (which on-chip levels hold each array),
each (array, position) block's transfer energy and footprint over many tile points
(`LevelBlocks`), and a level's best fitting placement per point (`best_placements`) among those
of `search_placements` (re-exported here)."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy, SplitCapacity
from workbench.hierarchy.search_placements import (
    _FOOT_ONLY,
    _PAIRS,
    _REFILL_ONLY,
    BIT,
    FULL,
    G0_FOOT,
    G0_REFILL,
    G0BIT,
    INNER,
    OPERANDS,
    RELEVANT,
    canonical_prefixes,
    grades,
    inner_placements,
    inner_prefixes,
    level_placements,
    mask,
    placements,
    realizes,
    step_bits,
    unrolled_dims,
)

BATCH = 1 << 16  # points priced per numpy pass
Pattern = tuple[tuple[int, ...], ...]  # per array (ARRAYS order): on-chip levels holding it
_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}
def _window(c, stride: int, kernel: int):
    return np.where(stride >= kernel, c * kernel, (c - 1) * stride + kernel)


def side_cost(array: str, moved, coef: float, outputs, precision):
    """pJ of one transfer moving `moved` elements (O: write-backs, partial sums read back
    twice at partial-sum width), coef = pJ per bit of both sides together."""
    if array == "O":
        return coef * (outputs * 8 * precision.outputs
                       + 2 * (moved - outputs) * 8 * precision.partial_sums)
    bits = 8 * (precision.inputs if array == "I" else precision.weights)
    return coef * moved * bits


class LevelBlocks:
    """One on-chip level over a set of grid points (flat float arrays): for every (array,
    prefix) its transfer energy (pJ, one group) and footprint (bytes), computed once and shared
    by the placements using it. gamma: the level's group; lo, hi = t_{γ−1}, t_γ (t_L = P)."""

    def __init__(self, layer, grid: dict, gamma: int, on_chip: int, coef: dict,
                 precision, lanes: frozenset[str] = frozenset()) -> None:
        self.layer, self.coef, self.precision, self.gamma = layer, coef, precision, gamma
        self.lanes = lanes  # the datapath's unrolled dimensions (`step_bits`)
        self.p = {d: grid[d][1] for d in DIMS}
        self.lo = {d: grid[d][0][gamma - 1] for d in DIMS}
        self.hi = {d: grid[d][0][gamma] if gamma < on_chip else self.p[d] for d in DIMS}
        self.outputs = self.p["N"] * self.p["M"] * self.p["Y"] * self.p["X"]
        self._memo: dict[tuple[str, int], tuple] = {}

    def block(self, array: str, prefix: int) -> tuple:
        """(energy pJ, footprint bytes) of `array` with the loops `prefix` inside its buffer."""
        key = (array, prefix)
        if key not in self._memo and prefix >= INNER:
            self._memo[key] = self._inside_group0(array, prefix)
        if key not in self._memo:
            c = {d: self.hi[d] if prefix & BIT[d] else self.lo[d] for d in DIMS}
            p, lay, prec = self.p, self.layer, self.precision
            if array == "W":
                foot = c["M"] * c["C"] * (lay.Kx * lay.Ky * prec.weights)
                moved = lay.Kx * lay.Ky * p["M"] * p["C"] * (p["X"] / c["X"]) * \
                    (p["Y"] / c["Y"]) * (p["N"] / c["N"])
            elif array == "O":
                foot = c["N"] * c["M"] * c["Y"] * c["X"] * prec.partial_sums
                moved = self.outputs * (p["C"] / c["C"])
            else:
                wy, wx = _window(c["Y"], lay.Sy, lay.Ky), _window(c["X"], lay.Sx, lay.Kx)
                foot = c["N"] * c["C"] * wy * wx
                moved = p["N"] * p["C"] * (p["M"] / c["M"]) * (wy * p["Y"] / c["Y"]) * \
                    (wx * p["X"] / c["X"])
                foot = foot * prec.inputs
            self._memo[key] = (side_cost(array, moved, self.coef[array], self.outputs, prec),
                               foot)
        return self._memo[key]

    def _inside_group0(self, array: str, code: int) -> tuple:
        """`block` of an innermost-level code inside group 0: c_d = t_0 (d inside) or 1, kernel
        k = K or 1; moved = footprint × refills, refills = (Kx/kx)(Ky/ky)·Π_d P_d/c_d."""
        if self.gamma != 1:
            raise ValueError("only the innermost level's buffers lie inside group 0")
        lay, prec, p = self.layer, self.precision, self.p
        c = {d: self.lo[d] if code & G0BIT[d] else 1.0 for d in DIMS}
        kx = lay.Kx if code & G0BIT["FX"] else 1
        ky = lay.Ky if code & G0BIT["FY"] else 1
        if array == "W":
            foot = c["M"] * c["C"] * (kx * ky)
        elif array == "O":
            foot = c["N"] * c["M"] * c["Y"] * c["X"]
        else:
            foot = c["N"] * c["C"] * _window(c["Y"], lay.Sy, ky) * _window(c["X"], lay.Sx, kx)
        refills = (lay.Kx // kx) * (lay.Ky // ky) * (p["X"] / c["X"]) * (p["Y"] / c["Y"]) * \
            (p["C"] / c["C"]) * (p["M"] / c["M"]) * (p["N"] / c["N"])
        width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}[array]
        return (side_cost(array, foot * refills, self.coef[array], self.outputs, prec),
                foot * width)


    def many(self, array: str, codes) -> tuple[np.ndarray, np.ndarray]:
        """`block` of every code at once on flat points: (energy, footprint), each (codes,
        points). The same counts in one form: moved = footprint × (Kx/kx)(Ky/ky)·Π_d P_d/c_d
        (kx = Kx, c_d ∈ {t_{γ−1}, t_γ} outside group 0; kx ∈ {1, Kx}, c_d ∈ {1, t_0} inside)."""
        lay, prec = self.layer, self.precision
        codes = np.asarray(codes, dtype=np.int64)[:, None]
        inside = codes >= INNER
        n = np.broadcast(*self.p.values(), *self.lo.values(), *self.hi.values()).shape
        c, refills = {}, 1.0
        for d in DIMS:
            lo, hi, p = (np.broadcast_to(v[d], n) for v in (self.lo, self.hi, self.p))
            outer = np.where(codes & BIT[d], hi, lo)
            c[d] = np.where(inside, np.where(codes & G0BIT[d], lo, 1.0), outer)
            refills = refills * (p / c[d])
        kx = np.where(inside & ~(codes & G0BIT["FX"]).astype(bool), 1, lay.Kx)
        ky = np.where(inside & ~(codes & G0BIT["FY"]).astype(bool), 1, lay.Ky)
        refills = refills * (lay.Kx // kx) * (lay.Ky // ky)
        if array == "W":
            foot = c["M"] * c["C"] * (kx * ky)
        elif array == "O":
            foot = c["N"] * c["M"] * c["Y"] * c["X"]
        else:
            foot = c["N"] * c["C"] * _window(c["Y"], lay.Sy, ky) * _window(c["X"], lay.Sx, kx)
        width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}[array]
        energy = side_cost(array, foot * refills, self.coef[array], self.outputs, prec)
        return np.broadcast_to(energy, foot.shape), foot * width


FEW = 512  # points up to which every placement is priced in one numpy pass


@functools.lru_cache(maxsize=32)
def _columns(held: tuple[str, ...], inner: bool,
             lanes: frozenset[str]) -> tuple[tuple[tuple[int, ...], np.ndarray], ...]:
    """Per held array: its distinct prefixes among `level_placements(held, inner, lanes)` and,
    per placement, the index of its prefix there."""
    table = level_placements(held, inner, lanes)
    out = []
    for j in range(len(held)):
        distinct = tuple(sorted({prefixes[j] for prefixes, _ in table}))
        where = {p: i for i, p in enumerate(distinct)}
        out.append((distinct, np.array([where[prefixes[j]] for prefixes, _ in table])))
    return tuple(out)


def best_placements(hierarchy: Hierarchy, level_idx: int, blocks: LevelBlocks,
                    held: tuple[str, ...]):
    """Per point, the least energy (pJ, one group) of a fitting placement of level
    `level_idx` holding `held`, and its index in `level_placements(held, inner, lanes)`
    (inner: the blocks are the innermost level's, lanes theirs; inf, −1: none fits; ties: the
    first)."""
    level = hierarchy.levels[level_idx]
    split = isinstance(level.capacity_bytes, SplitCapacity)
    n = len(blocks.p["X"])
    best = np.full(n, np.inf)
    at = np.full(n, -1, dtype=np.int16)  # ≤ 960 placements
    if not held:
        return np.zeros(n), np.zeros(n, dtype=np.int16)
    # each distinct (array, prefix) priced once: (energy, footprint or fits its part)
    inner = blocks.gamma == 1
    columns = _columns(held, inner, blocks.lanes)
    parts = []
    for array, (distinct, _) in zip(held, columns, strict=True):
        if n > FEW:  # many points: each code's arrays apart (smaller temporaries)
            priced = [blocks.block(array, p) for p in distinct]
            energy, foot = [e for e, _ in priced], [f for _, f in priced]
            fits = [f <= level.bytes_for(array) for f in foot] if split else foot
        else:
            energy, foot = blocks.many(array, distinct)
            fits = foot <= level.bytes_for(array) if split else foot
        parts.append((energy, fits))
    rows = len(columns[0][1])
    if n > FEW:  # one placement at a time over all the points (no gathered copies)
        for i in range(rows):
            energy, used = (v[columns[0][1][i]] for v in parts[0])
            for (_, idx), (e, f) in zip(columns[1:], parts[1:], strict=True):
                energy = energy + e[idx[i]]
                used = (used & f[idx[i]]) if split else used + f[idx[i]]
            better = (used if split else used <= level.total_bytes) & (energy < best)
            best = np.where(better, energy, best)
            at = np.where(better, np.int16(i), at)
        return best, at
    energy, used = (v[columns[0][1]] for v in parts[0])  # few: every placement at once
    for (_, idx), (e, f) in zip(columns[1:], parts[1:], strict=True):
        energy = energy + e[idx]
        used = (used & f[idx]) if split else used + f[idx]
    energy = np.where(used if split else used <= level.total_bytes, energy, np.inf)
    i = np.argmin(energy, axis=0)  # ties: the first placement
    best = energy[i, np.arange(n)]
    return best, np.where(np.isfinite(best), i, -1).astype(np.int16)


def holder_patterns(hierarchy: Hierarchy) -> list[Pattern]:
    """Every choice of the on-chip levels holding each array (a level whose split part for an
    array is 0 never holds it), R's (every level that can) first."""
    options = []
    for array in ARRAYS:
        able = [k for k in range(1, len(hierarchy.levels))
                if hierarchy.levels[k].bytes_for(array) > 0]
        options.append([c for r in range(len(able), -1, -1)
                        for c in itertools.combinations(able, r)])
    return list(itertools.product(*options))


def variant(pattern: Pattern, k: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """On-chip level k under a pattern: the arrays it holds and, per array, its source (the
    next level outwards holding it; 0 = DRAM)."""
    held, sources = [], []
    for array, chain in zip(ARRAYS, pattern, strict=True):
        if k in chain:
            held.append(array)
            sources.append(([0] + list(chain))[chain.index(k)])
    return tuple(held), tuple(sources)


def take(flat: dict, idx) -> dict:
    """The points `idx` of a flat grid."""
    return {d: ([t[idx] for t in tiles], p[idx]) for d, (tiles, p) in flat.items()}


__all__ = ["ARRAYS", "BIT", "FULL", "G0BIT", "G0_FOOT", "G0_REFILL", "INNER", "OPERANDS",
           "RELEVANT", "_FOOT_ONLY", "_PAIRS", "_REFILL_ONLY", "step_bits", "unrolled_dims",
           "LevelBlocks", "Pattern",
           "best_placements", "canonical_prefixes", "grades", "inner_placements",
           "inner_prefixes", "level_placements", "holder_patterns", "mask", "placements",
           "realizes", "side_cost", "take", "variant"]
