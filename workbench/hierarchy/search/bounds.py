"""The bounds `search` prunes with (proofs in docs/search.md, "Bounds: exact skips",
"Incumbents: an exact start", "Lifted and kept bounds"): lower bounds per holder pattern
(`pattern_floor`), per tile point (`relaxed_floor`, `chain_terms`), where R's blocks fit
(`r_blocks_fit`, `least_held`), the innermost level's raised bound (`lifted`), and the upper
bound of a known blocking of S (`incumbent`)."""

from __future__ import annotations

import functools
import math

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike, energy_pj
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, OPERANDS, Blocking, transfers
from workbench.hierarchy.datapath import fetches
from workbench.hierarchy.levels import Hierarchy, SizeEnergy, banks_fit, capacity_banks
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.calls import floors_under
from workbench.hierarchy.search.chains import dim_extents
from workbench.hierarchy.search.dominance import alone_prefixes
from workbench.hierarchy.search.grid import LazyPoints
from workbench.hierarchy.search.merged import in_merged
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import LevelBlocks, side_cost
from workbench.hierarchy.search.roles import Pattern, in_roles, role_orders, to_roles, variant
from workbench.layers.spec import ConvLayer


def alone_floor(level_bytes: float, blocks: LevelBlocks, array: str) -> np.ndarray:
    """Per point, the least energy of `array`'s transfer into the level (blocks' coef, pJ one
    group) with its block fitting `level_bytes` alone, over every position (inf: none fits).
    A lower bound on that transfer in any fitting placement (others' blocks only take room)."""
    best = np.inf
    for prefix in alone_prefixes(array, blocks.gamma == 1, blocks.lanes):
        interrupt.check()  # a safe point (`interrupt`)
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
                                         {array: 1.0}, precision,
                                         unrolled_dims(hierarchy.datapath))
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
                 pattern: Pattern, masks: dict | None = None) -> np.ndarray:
    """Points where the smallest blocks of the arrays each level holds under the pattern fit
    it (bytes `feet[k]` at level k: R's blocks, seed 001's whole blocks, at the outer levels,
    whose every placement's blocks contain R's; one element each at the innermost level, whose
    buffers may lie inside group 0): elsewhere no placement fits. `masks`: each level's
    points per held arrays, kept between calls on the same feet."""
    masks = {} if masks is None else masks
    ok = np.ones(shape, dtype=bool)
    for k in sorted(feet, reverse=True):  # innermost first
        held = variant(pattern, k)[0]
        if not held:
            continue
        if (k, held) not in masks:
            bank, sizes = capacity_banks(hierarchy.levels[k], held)
            masks[k, held] = functools.reduce(np.logical_and, [
                sum(feet[k][a] for a, b in zip(held, bank, strict=True) if b == i) <= size
                for i, size in enumerate(sizes)])
        ok &= masks[k, held]
    return ok



def least_held(patterns: list[Pattern], on_chip: int) -> list[Pattern]:
    """The patterns no other one holds less than at every level (per level, a subset of its
    arrays): where a pattern's R blocks fit, those of one holding less at each level fit too
    (a level's blocks do not depend on the pattern), so these decide where any fits."""
    return list(_least_held(tuple(patterns), on_chip))


@functools.lru_cache(maxsize=256)
def _least_held(patterns: tuple[Pattern, ...], on_chip: int) -> tuple[Pattern, ...]:
    held = [tuple(frozenset(variant(p, k)[0]) for k in range(1, on_chip + 1))
            for p in patterns]
    return tuple(p for i, p in enumerate(patterns)
                 if not any(j != i and all(a <= b for a, b in zip(held[j], held[i], strict=True))
                            and (held[j] != held[i] or j < i) for j in range(len(patterns))))



def pattern_floor(layer: ConvLayer, hierarchy: Hierarchy, pj_bit: np.ndarray,
           precision: PrecisionLike, pattern: Pattern) -> float:
    """A lower bound (pJ, one group) on every blocking under the pattern, whatever its tiles:
    MACs of the unpadded layer; every holder receives each element of its array at least once
    (outputs: written back at least once); the datapath takes at least `fetches` over the
    unpadded extents with one block (steps_along(E, E, u) = ⌈E/u⌉ ≤ (P/t0)·⌈t0/u⌉)."""
    e = dim_extents(layer)
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
    """Is the blocking one of S's on the hierarchy: under some role order (`search.roles`; the
    identity only when not `bypass`), one group per on-chip level and group 0, tiles at most
    the layer's extents, every held array's position in its level's role's own group (from the
    end of the group inside to the group's end; the innermost role's from −1, group 0 too, its
    block there holding a step's operands of the datapath), holders any level able to hold the
    array (every such level when not `bypass`)?"""
    return any((seen := to_roles(blocking, roles)) is not None
               and _in_part(layer, seen, in_roles(hierarchy, roles), bypass)
               for roles in role_orders(hierarchy, bypass))


def _in_part(layer: ConvLayer, blocking: Blocking, hierarchy, bypass: bool) -> bool:
    """`in_s` under one role order, the blocking and hierarchy seen under it."""
    on_chip = len(hierarchy.levels) - 1
    if len(blocking.orders) != on_chip + 1:
        return False
    extent = dim_extents(layer)
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
            top = low + len(DIMS)
            if k == on_chip:
                low = -1
                inside = {name for name, g in blocking.loops[:position + 1] if g == 0}
                if any(blocking.tiles[0][DIMS.index(d)] > 1 and d not in inside
                       for d in OPERANDS[array] if d in unrolled_dims(hierarchy.datapath)):
                    return False  # its block would not hold a datapath step's operands
            if not able or not low <= position <= top:
                return False
    return True



def incumbent(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike,
              size_energy: SizeEnergy | None, bypass: bool,
              candidates) -> tuple[float, Blocking] | None:
    """The least-energy candidate blocking (pJ, whole layer; e.g. the layer's optima on other
    hierarchies) that is in S (`in_s`, any role order; with `bypass` also its merged part:
    `search.merged.in_merged`) and fits as the search fits (footprints), or None: an energy
    S's optimum is at most, so the search may start from it."""
    if size_energy is not None:  # a pure rule, asked once per (size, width) here
        size_energy = functools.lru_cache(maxsize=None)(size_energy)
    best = None
    extent = dim_extents(layer)
    lanes = unrolled_dims(hierarchy.datapath)
    for blocking in candidates:
        if not in_s(layer, blocking, hierarchy, bypass) and not (
                bypass and in_merged(blocking, hierarchy, extent, lanes)):
            continue
        moved = _transfers(layer, blocking, len(hierarchy.levels), hierarchy.datapath)
        if not fits_by_footprints(moved, hierarchy, precision):
            continue
        energy = sum(energy_pj(moved, hierarchy, precision, size_energy).values())
        if best is None or energy < best[0]:
            best = energy, blocking
    return best



def fits_by_footprints(moved, hierarchy: Hierarchy, precision: PrecisionLike) -> bool:
    """Whether every on-chip level holds the footprints (bytes) of the buffers in `moved` (a
    blocking's transfers): the search's fit rule, stricter than eq. 2's buffers that
    `accesses.evaluate` checks."""
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    used: dict[int, dict[str, float]] = {}
    for t in moved:
        if 0 < t.level < len(hierarchy.levels):
            used.setdefault(t.level, {})[t.array] = t.footprint * width[t.array]
    return all(_holds(hierarchy.levels[k], feet) for k, feet in used.items())


@functools.lru_cache(maxsize=1024)
def _transfers(layer: ConvLayer, blocking: Blocking, n_levels: int, datapath) -> tuple:
    """`blocking.transfers`, kept: the same incumbents are offered to many searches."""
    return tuple(transfers(layer, blocking, n_levels, datapath))



def _holds(level, feet: dict[str, float]) -> bool:
    return banks_fit(level, feet)



def lifted(layer: ConvLayer, hierarchy: Hierarchy, flat: LazyPoints, pj_bit: np.ndarray,
            precision: PrecisionLike, prepared: list, best: float) -> list:
    """The patterns' (pattern, points, energy outside the innermost level, picks, innermost
    lower bound), the bounds raised where patterns share the innermost level's held arrays H:
    with c_p the pJ/bit of each array's transfer into that level under pattern p and
    c = min_p c_p, the level's energy E_p = min over fitting placements of Σ_A c_p,A·u_A
    (u ≥ 0: the unit cost of A's transfer; fits do not depend on c) is at least ρ_p·E_c with
    ρ_p = min_A c_p,A / c_A ≥ 1; E_c is priced once where some pattern could still win:
    exactly below the cap max_p (best / groups − outside_p) / ρ_p, where it prunes no pattern;
    a bound at least the cap above it (`floors_under`: the relaxations stop there)."""
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
        cap = np.full(len(flat.rows[0]), -np.inf)
        for i, coef in zip(members, coefs, strict=True):
            _, sub, outside, _, inner = prepared[i]
            ok = (outside + inner) * layer.groups < best
            rho = min(coef[a] / least[a] for a in held)
            cap[sub[ok]] = np.fmax(cap[sub[ok]], (best / layer.groups - outside[ok]) / rho)
        points = np.nonzero(cap > -np.inf)[0]
        reference = np.full(len(flat.rows[0]), np.nan)
        for start in range(0, len(points), tuning.BATCH):
            at = points[start:start + tuning.BATCH]
            blocks = LevelBlocks(layer, flat.take(at), 1, on_chip, least, precision,
                                 unrolled_dims(hierarchy.datapath))
            reference[at] = floors_under(hierarchy, blocks, held, cap[at] * (1 + 1e-9))
        for i, coef in zip(members, coefs, strict=True):
            pattern, sub, outside, picks, inner = prepared[i]
            rho = min(coef[a] / least[a] for a in held)
            known = reference[sub]
            raised = np.where(np.isnan(known), inner, np.fmax(inner, rho * known))
            out[i] = (pattern, sub, outside, picks, raised)
    return out


__all__ = ["alone_floor", "chain_terms", "fits_by_footprints", "in_s", "incumbent", "least_held",
           "lifted", "pattern_floor", "r_blocks_fit", "relaxed_floor"]
