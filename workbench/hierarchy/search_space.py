"""What `search` enumerates: the holder patterns (which on-chip levels hold each array) and the
per-level buffer placements: for one memory level, the loop
order of its group and a buffering position per array it holds, reduced to the placements that
can be optimal (proofs in `workbench.hierarchy.search`'s docstring).

A placement of level k in its group γ (loops X, Y, C, M, N in some order π, innermost first)
gives each held array A a prefix S_A of π: the loops of γ inside A's buffer (S = ∅: the end of
group γ−1, seed 001's whole block; S = all five: the end of group γ). Sets are bitmasks over
DIMS (X = 1, Y = 2, C = 4, M = 8, N = 16).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy, SplitCapacity

BATCH = 1 << 16  # points priced per numpy pass
Pattern = tuple[tuple[int, ...], ...]  # per array (ARRAYS order): on-chip levels holding it
_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}
BIT = {d: 1 << i for i, d in enumerate(DIMS)}
FULL = (1 << len(DIMS)) - 1
# dimensions of a group ≥ 1 each array's index depends on (seed 002 table II): a loop over any
# other dimension re-uses the array's block unchanged
RELEVANT = {"I": BIT["X"] | BIT["Y"] | BIT["C"] | BIT["N"],
            "W": BIT["M"] | BIT["C"],
            "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
# per array: (bits only the footprint grows with, bits only the refills shrink with); the rest
# (I's X, Y: halo reuse) move both and must match for one placement to dominate another
_FOOT_ONLY = {"I": BIT["C"] | BIT["N"], "W": BIT["M"] | BIT["C"],
              "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
_REFILL_ONLY = {"I": BIT["M"], "W": BIT["X"] | BIT["Y"] | BIT["N"], "O": BIT["C"]}


def mask(loops) -> int:
    """Bitmask of a collection of dimension names."""
    return sum(BIT[d] for d in loops)


def canonical_prefixes(order: tuple[str, ...], array: str) -> list[int]:
    """Prefixes of `order` directly followed by a loop relevant to `array`, and the whole
    group (the only positions that can be optimal: see the search docstring, lemma 1)."""
    out = [mask(order[:i]) for i, d in enumerate(order) if BIT[d] & RELEVANT[array]]
    return out + [FULL]


@functools.lru_cache(maxsize=16)
def placements(held: tuple[str, ...]) -> tuple[tuple[tuple[int, ...], tuple[str, ...]], ...]:
    """Non-dominated placements of the arrays `held` (ARRAYS order) in one group: (one prefix
    bitmask per held array, an order of DIMS realizing them), every order's canonical prefixes
    considered, one per distinct tuple, dominated tuples dropped (lemma 2)."""
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order in itertools.permutations(DIMS):
        for combo in itertools.product(*(canonical_prefixes(order, a) for a in held)):
            found.setdefault(combo, order)
    keys = sorted(found)
    if not held:
        return tuple((k, found[k]) for k in keys)
    sets = np.array(keys, dtype=np.int64).reshape(len(keys), len(held))
    dominated = np.zeros(len(keys), dtype=bool)
    for i in range(len(keys)):  # does some other tuple dominate tuple i?
        ok = np.ones(len(keys), dtype=bool)
        for j, array in enumerate(held):
            a, b = sets[:, j], sets[i, j]
            both = FULL & ~(_FOOT_ONLY[array] | _REFILL_ONLY[array])
            ok &= ((a & both) == (b & both)) & ((a & _FOOT_ONLY[array] & ~b) == 0) \
                & ((b & _REFILL_ONLY[array] & ~a) == 0)
        ok[i] = False
        dominated[i] = ok.any()
    kept = [k for k, out in zip(keys, dominated, strict=True) if not out]
    return tuple((k, found[k]) for k in sorted(kept))


def realizes(order: tuple[str, ...], prefixes: tuple[int, ...]) -> bool:
    """Is every bitmask a prefix of `order`?"""
    heads = {mask(order[:i]) for i in range(len(order) + 1)}
    return all(p in heads for p in prefixes)


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
                 precision) -> None:
        self.layer, self.coef, self.precision = layer, coef, precision
        self.p = {d: grid[d][1] for d in DIMS}
        self.lo = {d: grid[d][0][gamma - 1] for d in DIMS}
        self.hi = {d: grid[d][0][gamma] if gamma < on_chip else self.p[d] for d in DIMS}
        self.outputs = self.p["N"] * self.p["M"] * self.p["Y"] * self.p["X"]
        self._memo: dict[tuple[str, int], tuple] = {}

    def block(self, array: str, prefix: int) -> tuple:
        """(energy pJ, footprint bytes) of `array` with the loops `prefix` inside its buffer."""
        key = (array, prefix)
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


@functools.lru_cache(maxsize=16)
def _columns(held: tuple[str, ...]) -> tuple[tuple[tuple[int, ...], np.ndarray], ...]:
    """Per held array: its distinct prefixes among `placements(held)` and, per placement, the
    index of its prefix there."""
    table = placements(held)
    out = []
    for j in range(len(held)):
        distinct = tuple(sorted({prefixes[j] for prefixes, _ in table}))
        where = {p: i for i, p in enumerate(distinct)}
        out.append((distinct, np.array([where[prefixes[j]] for prefixes, _ in table])))
    return tuple(out)


def best_placements(hierarchy: Hierarchy, level_idx: int, blocks: LevelBlocks,
                    held: tuple[str, ...]):
    """Per point, the least energy (pJ, one group) of a fitting placement of level
    `level_idx` holding `held`, and its index in `placements(held)` (inf, −1: none fits; ties:
    the first)."""
    level = hierarchy.levels[level_idx]
    split = isinstance(level.capacity_bytes, SplitCapacity)
    n = len(blocks.p["X"])
    best = np.full(n, np.inf)
    at = np.full(n, -1, dtype=np.int16)
    if not held:
        return np.zeros(n), np.zeros(n, dtype=np.int16)
    # each distinct (array, prefix) priced once: (energy, footprint or fits its part)
    parts = []
    for array, (distinct, _) in zip(held, _columns(held), strict=True):
        priced = [blocks.block(array, p) for p in distinct]
        parts.append([(e, f <= level.bytes_for(array)) if split else (e, f) for e, f in priced])
    columns = [idx for _, idx in _columns(held)]
    for i in range(len(columns[0])):
        energy, used = parts[0][columns[0][i]]
        for j in range(1, len(held)):
            e, f = parts[j][columns[j][i]]
            energy, used = energy + e, (used & f) if split else used + f
        ok = used if split else used <= level.total_bytes
        better = ok & (energy < best)
        best = np.where(better, energy, best)
        at = np.where(better, np.int16(i), at)
    return best, at


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


__all__ = ["ARRAYS", "BIT", "FULL", "RELEVANT", "LevelBlocks", "Pattern", "best_placements",
           "canonical_prefixes", "holder_patterns", "mask", "placements", "realizes",
           "side_cost", "take", "variant"]
