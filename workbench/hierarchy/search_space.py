"""What `search` enumerates: the holder patterns (which on-chip levels hold each array) with a
lower bound per pattern, and the per-level buffer placements: for one memory level, the loop
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
import math

import numpy as np

from workbench.hierarchy.accesses import PrecisionLike, energy_pj
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking, extents, transfers
from workbench.hierarchy.datapath import fetches
from workbench.hierarchy.levels import Hierarchy, SizeEnergy, SplitCapacity
from workbench.layers.spec import ConvLayer

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


def alone_prefixes(array: str) -> list[int]:
    """The prefixes that can be best for `array` alone in a buffer: every refill-only loop
    inside, no footprint-only loop, any subset of the loops moving both (I's X, Y). Any other
    prefix S is no better: S ∪ refill-only ∖ footprint-only fits wherever S does (footprint
    never larger) and moves no more (refills never more)."""
    both = FULL & ~(_FOOT_ONLY[array] | _REFILL_ONLY[array])
    return [_REFILL_ONLY[array] | s for s in range(FULL + 1) if not s & ~both]


def alone_floor(level_bytes: float, blocks: LevelBlocks, array: str) -> np.ndarray:
    """Per point, the least energy of `array`'s transfer into the level (blocks' coef, pJ one
    group) with its block fitting `level_bytes` alone, over every position (inf: none fits).
    A lower bound on that transfer in any fitting placement (others' blocks only take room)."""
    best = np.inf
    for prefix in alone_prefixes(array):
        energy, foot = blocks.block(array, prefix)
        best = np.where(foot <= level_bytes, np.minimum(best, energy), best)
    return best


def chain_terms(layer: ConvLayer, hierarchy: Hierarchy, flat: dict, pj_bit: np.ndarray,
                precision: PrecisionLike, patterns: list[Pattern], fetch_unit: dict,
                unit: dict | None = None) -> list[dict[tuple[int, ...], np.ndarray]]:
    """Per array (ARRAYS order), per holder chain it has among the patterns, a lower bound
    (pJ, one group, per point) on its energy in any fitting blocking of S with that chain:
    Σ_holders coef × `alone_floor` + the datapath's fetches from the innermost holder
    (`fetch_unit`: pJ per unit pJ/bit). `unit`: the alone floors per (array, holder) at unit
    pJ/bit on these points, and the terms per ("term", array, chain), kept between calls."""
    on_chip = len(hierarchy.levels) - 1
    unit = {} if unit is None else unit
    out = []
    for a_idx, array in enumerate(ARRAYS):
        terms = {}
        for chain in {p[a_idx] for p in patterns}:
            if ("term", array, chain) in unit:
                terms[chain] = unit["term", array, chain]
                continue
            term = pj_bit[chain[-1] if chain else 0, a_idx] * fetch_unit[array]
            for source, holder in zip((0,) + chain, chain, strict=False):
                if (array, holder) not in unit:
                    blocks = LevelBlocks(layer, flat, on_chip + 1 - holder, on_chip,
                                         {array: 1.0}, precision)
                    unit[array, holder] = alone_floor(
                        hierarchy.levels[holder].bytes_for(array), blocks, array)
                term = term + (pj_bit[source, a_idx] + pj_bit[holder, a_idx]) * \
                    unit[array, holder]
            terms[chain] = unit["term", array, chain] = term
        out.append(terms)
    return out


def relaxed_floor(layer: ConvLayer, hierarchy: Hierarchy, flat: dict, pj_bit: np.ndarray,
                  precision: PrecisionLike, patterns: list[Pattern], fetch_unit: dict,
                  unit: dict | None = None) -> np.ndarray:
    """Per point (flat or broadcasting grid), a lower bound (pJ, one group, MACs excluded) on
    every fitting blocking of S there under any of the patterns: per array, the least over its
    holder chains among the patterns of its `chain_terms`. An exact relaxation: the capacity a
    level shares and the one order a group's prefixes come from are dropped; a pattern's
    energy is a sum over arrays, each term at least its array's term for the pattern's chain
    (so Σ_A term_A(chain_A) also bounds one pattern alone). `unit`: as `chain_terms`."""
    total = 0.0
    for terms in chain_terms(layer, hierarchy, flat, pj_bit, precision, patterns, fetch_unit,
                             unit):
        total = total + functools.reduce(np.minimum, terms.values())
    return total


def r_blocks_fit(hierarchy: Hierarchy, feet: dict[int, dict], shape: tuple,
                 pattern: Pattern) -> np.ndarray:
    """Points where R's blocks (seed 001's whole blocks, bytes `feet[k]` at level k) of the
    arrays each level holds under the pattern fit it: every placement's blocks contain R's, so
    elsewhere none fits."""
    ok = np.ones(shape, dtype=bool)
    for k in sorted(feet, reverse=True):  # innermost (smallest, most selective) first
        held = variant(pattern, k)[0]
        level = hierarchy.levels[k]
        if not held:
            continue
        if isinstance(level.capacity_bytes, SplitCapacity):
            for a in held:
                ok &= feet[k][a] <= level.bytes_for(a)
        else:
            ok &= sum(feet[k][a] for a in held) <= level.total_bytes
    return ok


def least_held(patterns: list[Pattern], on_chip: int) -> list[Pattern]:
    """The patterns no other one holds less than at every level (per level, a subset of its
    arrays): where a pattern's R blocks fit, those of one holding less at each level fit too
    (a level's blocks do not depend on the pattern), so these decide where any fits."""
    held = [tuple(frozenset(variant(p, k)[0]) for k in range(1, on_chip + 1))
            for p in patterns]
    return [p for i, p in enumerate(patterns)
            if not any(j != i and all(a <= b for a, b in zip(held[j], held[i], strict=True))
                       and (held[j] != held[i] or j < i) for j in range(len(patterns)))]


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


def pattern_floor(layer: ConvLayer, hierarchy: Hierarchy, pj_bit: np.ndarray,
           precision: PrecisionLike, pattern: Pattern) -> float:
    """A lower bound (pJ, one group) on every blocking under the pattern, whatever its tiles:
    MACs of the unpadded layer; every holder receives each element of its array at least once
    (outputs: written back at least once); the datapath takes at least `fetches` over the
    unpadded extents with one block (steps_along(E, E, u) = ⌈E/u⌉ ≤ (P/t0)·⌈t0/u⌉)."""
    e = {d: extents(layer)[_EXTENT[d]] for d in DIMS}
    kk = layer.Kx * layer.Ky
    macs = kk * math.prod(e.values())
    fetched = fetches(kk, e, e, hierarchy.datapath) if hierarchy.datapath is not None \
        and hierarchy.datapath.macs_per_step > 1 else dict.fromkeys(ARRAYS, macs)
    wy = (e["Y"] - 1) * layer.Sy + layer.Ky if layer.Sy < layer.Ky else e["Y"] * layer.Ky
    wx = (e["X"] - 1) * layer.Sx + layer.Kx if layer.Sx < layer.Kx else e["X"] * layer.Kx
    outputs = e["N"] * e["M"] * e["Y"] * e["X"]
    distinct = {"I": e["N"] * e["C"] * wy * wx, "W": kk * e["M"] * e["C"], "O": outputs}
    total = macs * hierarchy.mac_energy_pj
    for a_idx, (array, chain) in enumerate(zip(ARRAYS, pattern, strict=True)):
        for source, holder in zip((0,) + chain, chain, strict=False):
            coef = pj_bit[source, a_idx] + pj_bit[holder, a_idx]
            total += side_cost(array, distinct[array], coef, outputs, precision)
        last = chain[-1] if chain else 0
        total += side_cost(array, fetched[array], pj_bit[last, a_idx], outputs, precision)
    return total


def in_s(layer: ConvLayer, blocking: Blocking, hierarchy: Hierarchy, bypass: bool) -> bool:
    """Is the blocking one of S's on the hierarchy: one group per on-chip level and group 0,
    tiles at most the layer's extents, every held array's position in its level's own group
    (from the end of the group inside to the group's end), holders any level able to hold the
    array (every such level when not `bypass`)?"""
    on_chip = len(hierarchy.levels) - 1
    if len(blocking.orders) != on_chip + 1:
        return False
    extent = {d: extents(layer)[_EXTENT[d]] for d in DIMS}
    if blocking.tiles and any(t > extent[d] for d, t in zip(DIMS, blocking.tiles[-1],
                                                               strict=True)):
        return False
    for array in ARRAYS:
        for k, position in enumerate(blocking.positions(array), start=1):
            able = hierarchy.levels[k].bytes_for(array) > 0
            if position is None:
                if able and not bypass:
                    return False
                continue
            low = len(GROUP0) + len(DIMS) * (on_chip - k) - 1  # the end of group γ − 1
            if not able or not low <= position <= low + len(DIMS):
                return False
    return True


def incumbent(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike,
              size_energy: SizeEnergy | None, bypass: bool,
              candidates) -> tuple[float, Blocking] | None:
    """The least-energy candidate blocking (pJ, whole layer; e.g. the layer's optima on other
    hierarchies) that is in S (`in_s`) and fits as the search fits (footprints), or None: an
    energy S's optimum is at most, so the search may start from it."""
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    if size_energy is not None:  # a pure rule, asked once per (size, width) here
        size_energy = functools.lru_cache(maxsize=None)(size_energy)
    best = None
    for blocking in candidates:
        if not in_s(layer, blocking, hierarchy, bypass):
            continue
        moved = _transfers(layer, blocking, len(hierarchy.levels), hierarchy.datapath)
        used: dict[int, dict[str, float]] = {}
        for t in moved:
            if 0 < t.level < len(hierarchy.levels):
                used.setdefault(t.level, {})[t.array] = t.footprint * width[t.array]
        if not all(_holds(hierarchy.levels[k], feet) for k, feet in used.items()):
            continue
        energy = sum(energy_pj(moved, hierarchy, precision, size_energy).values())
        if best is None or energy < best[0]:
            best = energy, blocking
    return best


@functools.lru_cache(maxsize=1024)
def _transfers(layer: ConvLayer, blocking: Blocking, n_levels: int, datapath) -> tuple:
    """`blocking.transfers`, kept: the same incumbents are offered to many searches."""
    return tuple(transfers(layer, blocking, n_levels, datapath))


def _holds(level, feet: dict[str, float]) -> bool:
    if isinstance(level.capacity_bytes, SplitCapacity):
        return all(f <= level.bytes_for(a) for a, f in feet.items())
    return sum(feet.values()) <= level.total_bytes


def take(flat: dict, idx) -> dict:
    """The points `idx` of a flat grid."""
    return {d: ([t[idx] for t in tiles], p[idx]) for d, (tiles, p) in flat.items()}


def lifted(layer: ConvLayer, hierarchy: Hierarchy, flat: dict, pj_bit: np.ndarray,
            precision: PrecisionLike, prepared: list, best: float) -> list:
    """The patterns' (pattern, points, energy outside the innermost level, picks, innermost
    lower bound), the bounds raised where patterns share the innermost level's held arrays H:
    with c_p the pJ/bit of each array's transfer into that level under pattern p and
    c = min_p c_p, the level's energy E_p = min over fitting placements of Σ_A c_p,A·u_A
    (u ≥ 0: the unit cost of A's transfer; fits do not depend on c) is at least ρ_p·E_c with
    ρ_p = min_A c_p,A / c_A ≥ 1; E_c is priced once where some pattern could still win."""
    on_chip = len(hierarchy.levels) - 1
    groups: dict[tuple, list[int]] = {}
    for i, (pattern, *_rest) in enumerate(prepared):
        groups.setdefault(variant(pattern, on_chip)[0], []).append(i)
    out = list(prepared)
    for held, members in groups.items():
        coefs = []
        for i in members:
            sources = variant(prepared[i][0], on_chip)[1]
            coefs.append({a: pj_bit[src, ARRAYS.index(a)] + pj_bit[on_chip, ARRAYS.index(a)]
                          for a, src in zip(held, sources, strict=True)})
        least = {a: min(c[a] for c in coefs) for a in held}
        if len(members) < 2 or not held or min(least.values()) <= 0:
            continue
        wanted = [sub[(outside + inner) * layer.groups < best]
                  for _, sub, outside, _, inner in (prepared[i] for i in members)]
        points = np.unique(np.concatenate(wanted))
        reference = np.full(len(flat["X"][1]), np.nan)
        for start in range(0, len(points), BATCH):
            at = points[start:start + BATCH]
            blocks = LevelBlocks(layer, take(flat, at), 1, on_chip, least, precision)
            reference[at] = best_placements(hierarchy, on_chip, blocks, held)[0]
        for i, coef in zip(members, coefs, strict=True):
            pattern, sub, outside, picks, inner = prepared[i]
            rho = min(coef[a] / least[a] for a in held)
            known = reference[sub]
            raised = np.where(np.isnan(known), inner, np.fmax(inner, rho * known))
            out[i] = (pattern, sub, outside, picks, raised)
    return out


__all__ = ["ARRAYS", "BIT", "FULL", "RELEVANT", "LevelBlocks", "Pattern", "alone_floor",
           "alone_prefixes", "best_placements", "canonical_prefixes", "chain_terms",
           "holder_patterns", "in_s", "incumbent", "least_held", "lifted", "mask",
           "pattern_floor", "placements", "r_blocks_fit", "realizes", "relaxed_floor",
           "side_cost", "take", "variant"]
