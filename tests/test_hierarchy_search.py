"""Exact search (workbench.hierarchy.search) over its space S: per level a loop order of its group
and a buffering position per array inside it, any choice of the levels holding each array
(bypass), all tile chains, the levels' groups nested in any role order that keeps each array's
holders in memory order. Its optimum equals a brute force pricing every blocking of S with
`accesses.evaluate` (and, with bypass=False, the brute force over R's holders); it never
exceeds the old space R's (`search_r`, itself equal to its brute force in
test_hierarchy_model) and beats it on hand-built cases, bypass included; with one on-chip level
it equals the brute force over positions anywhere in the nest (R+), buffers inside group 0
included; and the facts the brute forces' de-duplication rests on (orders, trip-1 loops)
are checked on the model."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from budget import examples
from every_blocking import level_banks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import WorkbenchError
from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    BankedCapacity,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
    transfers,
)
from workbench.hierarchy.accesses import energy_by_array_pj, energy_pj
from workbench.hierarchy.blocking import footprint, trip_counts
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import NoFitError, gen_chains, search, search_r
from workbench.hierarchy.search.bounds import (
    chain_terms,
    least_held,
    pattern_floor,
    r_blocks_fit,
    relaxed_floor,
)
from workbench.hierarchy.search.grid import grid_of
from workbench.hierarchy.search.levels import datapath_side
from workbench.hierarchy.search.merged import in_merged, merged_levels
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import pj_per_bit, side_cost
from workbench.hierarchy.search.r import footprints
from workbench.hierarchy.search.roles import holder_patterns
from workbench.layers import ConvLayer

ONE = ElementBytes(1, 1, 1, 1)


def _extent(layer: ConvLayer, dim: str) -> int:
    return {"X": layer.Ox, "Y": layer.Oy, "C": layer.Kc, "M": layer.Oc // layer.groups,
            "N": layer.On}[dim]


def _fits(layer: ConvLayer, blocking: Blocking, hier: Hierarchy, prec,
          moved: tuple | None = None, inner: int | None = None,
          roles: tuple[int, ...] | None = None) -> bool:
    """Every on-chip level holds its buffers by the search's rule under the role order
    `roles` (the memory level playing each role, outermost first; default: under some order
    whose roles' groups hold every position): footprints, but at the level playing the
    innermost role every buffer by eq. 2 (`transfers`' buffer, in step time on an unrolled
    datapath: S reaches every position's there, with a buffer rolling along or ending after
    its outermost loop carrying reuse), and the inputs' at the others without the outermost
    loop of trip count > 1 of their own group inside it when that loop is X or Y
    (`_outer_input_buffer`); inner=0: footprints everywhere. `moved`: the blocking's transfers
    when known."""
    if moved is None:
        moved = transfers(layer, blocking, len(hier.levels), hier.datapath)
    on_chip = len(hier.levels) - 1
    if inner == 0:
        return _fits_by(layer, blocking, hier, prec, moved, None)
    for order in [roles] if roles is not None else itertools.permutations(range(1, on_chip + 1)):
        groups = {k: on_chip - r for r, k in enumerate(order)}
        if _in_groups(blocking, groups) and _fits_by(layer, blocking, hier, prec, moved, groups):
            return True
    return False


def _group_span(gamma: int) -> tuple[int, int]:
    """The positions of a buffer in group γ: from the end of group γ − 1 (−1 for γ = 1: one
    element per MAC) to the end of group γ."""
    top = len(GROUP0) + len(DIMS) * gamma - 1
    return (-1 if gamma == 1 else top - len(DIMS)), top


def _in_groups(blocking: Blocking, groups: dict[int, int]) -> bool:
    """Does every held array's position at level k lie in group `groups[k]`?"""
    for positions in blocking.buffers:
        for k, p in enumerate(positions, start=1):
            low, top = _group_span(groups[k])
            if p is not None and not low <= p <= top:
                return False
    return True


def _outer_input_buffer(layer: ConvLayer, blocking: Blocking, position: int, gamma: int,
                        full: int) -> int:
    """Elements the inputs' buffer at `position` of an outer level's group γ holds: its
    footprint `full`, or, when its outermost loop of trip count > 1 in group γ is X or Y, the
    footprint of every loop inside but that one (the window rolling along it)."""
    low, _ = _group_span(gamma)
    n = trip_counts(layer, blocking)
    own = [j for j in range(low + 1, position + 1) if n[j] > 1]
    if not own or blocking.loops[own[-1]][0] not in ("X", "Y"):
        return full
    inside = set(range(position + 1)) - {own[-1]}
    return min(full, int(footprint(layer, blocking.loops, n, inside, "I")))


def _fits_by(layer: ConvLayer, blocking: Blocking, hier: Hierarchy, prec, moved: tuple,
             groups: dict[int, int] | None) -> bool:
    """`_fits` with each level k playing group `groups[k]` (None: footprints everywhere)."""
    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    for k in range(1, len(hier.levels)):
        used = {}
        for t in moved:
            if t.level != k:
                continue
            held = t.footprint
            if groups is not None and groups[k] == 1:
                held = t.buffer
            elif t.array == "I" and groups is not None:
                held = _outer_input_buffer(layer, blocking, blocking.positions("I")[k - 1],
                                           groups[k], t.footprint)
            used[t.array] = held * width[t.array]
        if any(sum(used.get(a, 0) for a in arrays) > size
               for arrays, size in level_banks(hier.levels[k])):
            return False
    return True


def _tiles(combo, levels: int) -> list[dict[str, int]]:
    return [{d: int(c[g]) for d, c in zip(DIMS, combo, strict=True)} for g in range(levels)]


def _held(hier: Hierarchy, k: int) -> list[str]:
    return [a for a in ARRAYS if hier.levels[k].bytes_for(a) > 0]


def _cheapest(layer: ConvLayer, hier: Hierarchy, prec, size_energy, candidates,
              inner: int | None = None) -> float:
    """Least energy (`accesses.energy_pj` of the blocking's `transfers`, as `evaluate` prices
    it) over the candidate blockings that fit (`_fits`; a candidate may come with its role
    order: (blocking, the memory level playing each role, outermost first); `inner` 0:
    footprints everywhere) (inf if none)."""
    best = math.inf
    for candidate in candidates:
        blocking, roles = candidate if isinstance(candidate, tuple) else (candidate, None)
        moved = transfers(layer, blocking, len(hier.levels), hier.datapath)
        if _fits(layer, blocking, hier, prec, moved, inner, roles):
            best = min(best, sum(energy_pj(moved, hier, prec, size_energy).values()))
    return best


def _nontrivial(layer: ConvLayer, blocking: Blocking) -> set[tuple[str, int]]:
    n = trip_counts(layer, blocking)
    return {loop for loop, trips in zip(blocking.loops, n, strict=True) if trips > 1}


def _patterns(hier: Hierarchy):
    """Every choice of holders: per array, any subset of the on-chip levels that can hold it
    (`_held`), written as the arrays each level holds."""
    levels = len(hier.levels) - 1
    options = [[c for r in range(levels + 1)
                for c in itertools.combinations([k for k in range(1, levels + 1)
                                                 if a in _held(hier, k)], r)] for a in ARRAYS]
    for chains in itertools.product(*options):
        yield {k: [a for a, chain in zip(ARRAYS, chains, strict=True) if k in chain]
               for k in range(1, levels + 1)}


def _level_options(held, gamma: int, real: set, start: list[int], datapath=None) -> list:
    """One level's choices in S: ({group: order}, absolute position per held array). Group γ's
    order is any permutation of DIMS, each position 0 … 5 of its loops inside; the innermost
    level (γ = 1) also orders group 0 (its loops of trip count > 1 first: where trip-1 loops
    sit changes nothing) and may place a buffer anywhere from −1 on. Options whose buffers
    enclose the same loops of trip count > 1 are kept once (`test_*_only_through_*`). A buffer
    inside group 0 encloses group 0's loops over the dimensions the datapath unrolls among its
    array's operands (its block holds a step's operands: `_holds_a_step`)."""
    seen: dict = {}
    if gamma > 1:  # positions inside group γ only
        for order in itertools.permutations(DIMS):
            loops = [(d, gamma) for d in order]
            for lengths in itertools.product(range(len(loops) + 1), repeat=len(held)):
                key = tuple(frozenset(lp for lp in loops[:n] if lp in real) for n in lengths)
                seen.setdefault(key, ({gamma: order}, tuple(start[gamma] - 1 + n
                                                            for n in lengths)))
        return list(seen.values())
    # the innermost level: from −1 on, through groups 0 and 1. Per held array the set of
    # loops of trip count > 1 inside its buffer: any subset of group 0's, or all of them and a
    # non-empty subset of group 1's; a tuple of such sets is realized by some orders iff the
    # sets are nested (orders: the smallest set's loops first, then each next set's new ones,
    # then the rest, trip-1 loops last: where they sit changes nothing)
    real0 = [n for n in GROUP0 if (n, 0) in real]
    real1 = [d for d in DIMS if (d, 1) in real]
    sets = [frozenset((n, 0) for n in c) for r in range(len(real0) + 1)
            for c in itertools.combinations(real0, r)]
    sets += [frozenset([(n, 0) for n in real0] + [(d, 1) for d in c])
             for r in range(1, len(real1) + 1) for c in itertools.combinations(real1, r)]
    whole0 = frozenset((n, 0) for n in real0)
    options = [[c for c in sets if whole0 <= c or _step_loops(array, datapath, real) <= c]
               for array in held]
    for key in itertools.product(*options):
        chain = sorted(set(key), key=len)
        if any(not a <= b for a, b in zip(chain, chain[1:], strict=False)):
            continue
        # the inputs' buffer holds less by eq. 2 when its window rolls along its outermost
        # loop: every loop new to its set may be that one
        mine = key[held.index("I")] if "I" in held else frozenset()
        below = max((c for c in chain if c < mine), key=len, default=frozenset())
        for last in sorted(mine - below, key=str) or [None]:
            seq: list = []
            for part in chain + [frozenset((n, 0) for n in real0) | {(d, 1) for d in real1}]:
                seq += sorted(part - set(seq),
                              key=lambda lp: (lp == last, lp[1], GROUP0.index(lp[0])))
            first = tuple(n for n, g in seq if g == 0) + tuple(n for n in GROUP0
                                                                 if n not in real0)
            order = tuple(d for d, g in seq if g == 1) + tuple(d for d in DIMS
                                                               if d not in real1)
            loops = [(n, 0) for n in first] + [(d, 1) for d in order]
            positions = tuple(max((loops.index(lp) for lp in part), default=-1) for part in key)
            seen[key, last] = ({0: first, 1: order}, positions)
    return list(seen.values())


def _step_loops(array: str, datapath, real: set) -> frozenset:
    """Group 0's loops of trip count > 1 over the dimensions the datapath unrolls among the
    array's operands (a step fetches I over N, C, Y, X; W over M, C; O over N, M, Y, X)."""
    dims = {"I": "NCYX", "W": "MC", "O": "NMYX"}[array]
    return frozenset((d, 0) for d in dims if datapath is not None and
                     datapath.lanes(d) > 1 and (d, 0) in real)


def _holds_a_step(layer: ConvLayer, blocking: Blocking, hier: Hierarchy) -> bool:
    """Does every buffer of the innermost on-chip level enclose `_step_loops`?"""
    real = _nontrivial(layer, blocking)
    for array, positions in zip(ARRAYS, blocking.buffers, strict=True):
        p = positions[-1]
        if p is not None and not _step_loops(array, hier.datapath, real) <= \
                set(blocking.loops[:p + 1]):
            return False
    return True


def _s_blockings(layer: ConvLayer, hier: Hierarchy, bypass: bool = True,
                 with_inner: bool = False):
    """Every blocking of S: under every role order of the on-chip levels (only the identity
    when not `bypass`), every divisor chain, every choice of holders (only R's, every level
    holding every array it can, when not `bypass`) whose holders of each array play roles in
    memory order (under another order than the identity: with the innermost role holding some
    array), every order of each role's group, every position of each held array inside it (0 …
    5 loops of the group inside; the innermost role's also inside group 0, in any order of it:
    `_level_options`); positions listed per memory level (with_inner: pairs (blocking, the
    memory level playing each role, outermost first))."""
    levels = len(hier.levels) - 1
    own = tuple(range(1, levels + 1))
    for roles in itertools.permutations(own) if bypass else [own]:
        seen = SimpleNamespace(levels=(hier.levels[0],) + tuple(hier.levels[k] for k in roles),
                               datapath=hier.datapath)

        def keep(pattern: dict, roles=roles) -> bool:
            chains = [[r for r in sorted(pattern) if a in pattern[r]] for a in ARRAYS]
            if any(roles[i - 1] > roles[j - 1] for c in chains
                   for i, j in zip(c, c[1:], strict=False)):
                return False  # an array's holders out of memory order
            return roles == own or bool(pattern[levels])  # the innermost role holds some

        for blocking in _s_part(layer, seen, bypass, keep):
            buffers = {a: [None] * levels for a in ARRAYS}
            for r, k in enumerate(roles):
                for a in ARRAYS:
                    buffers[a][k - 1] = blocking.positions(a)[r]
            out = Blocking(blocking.orders, blocking.tiles,
                           tuple(tuple(buffers[a]) for a in ARRAYS))
            yield (out, roles) if with_inner else out


def _s_part(layer: ConvLayer, hier, bypass: bool = True, keep=lambda pattern: True,
            with_inner: bool = False):
    """`_s_blockings` under one role order, `hier` its levels in role order (positions per
    role), the holder patterns `keep` accepts only (with_inner: pairs (blocking, the identity
    role order))."""
    levels = len(hier.levels) - 1
    start = [len(GROUP0) + len(DIMS) * (g - 1) for g in range(levels + 1)]
    patterns = [p for p in _patterns(hier) if keep(p)] if bypass else \
        [{k: _held(hier, k) for k in range(1, levels + 1)}]
    for combo in itertools.product(*(gen_chains(_extent(layer, d), levels) for d in DIMS)):
        tiles = _tiles(combo, levels)
        probe = Blocking.of([GROUP0] + [DIMS] * levels, tiles,
                            {a: [None] * levels for a in ARRAYS})
        real = _nontrivial(layer, probe)
        options: dict = {}
        for pattern in patterns:
            per_level = []
            for k in range(1, levels + 1):
                key = (k, tuple(pattern[k]))
                if key not in options:
                    options[key] = _level_options(pattern[k], levels + 1 - k, real, start,
                                                  hier.datapath)
                per_level.append(options[key])
            for choice in itertools.product(*per_level):
                orders = [GROUP0] + [DIMS] * levels
                buffers = {a: [None] * levels for a in ARRAYS}
                for k, (groups, positions) in enumerate(choice, start=1):
                    for g, order in groups.items():
                        orders[g] = order
                    for array, p in zip(pattern[k], positions, strict=True):
                        buffers[array][k - 1] = p
                out = Blocking.of(orders, tiles, buffers)
                yield (out, tuple(range(1, levels + 1))) if with_inner else out


def _r_plus_blockings(layer: ConvLayer, hier: Hierarchy, bypass: bool = False):
    """Every blocking with one on-chip level and its positions anywhere in the nest: every
    chain, every order of each group's loops of trip count > 1 (trip-1 loops after them: where
    they sit changes no count and, not carrying reuse, no eq. 2 buffer but by making a kernel
    loop's partner carry by name, which never shrinks it), every position −1 … last loop per
    held array (priced once per set of enclosed loops of trip count > 1 and outermost one);
    with `bypass`, each array the level can hold may also bypass it."""
    assert len(hier.levels) == 2
    held = _held(hier, 1)
    for combo in itertools.product(*(gen_chains(_extent(layer, d), 1) for d in DIMS)):
        tiles = _tiles(combo, 1)
        probe = Blocking.of([GROUP0, DIMS], tiles, {a: [None] for a in ARRAYS})
        real = _nontrivial(layer, probe)
        groups = [[lp[0] for lp in probe.loops if lp[1] == g] for g in (0, 1)]
        seen = set()
        for o0, o1 in itertools.product(
                *(itertools.permutations([n for n in names if (n, g) in real])
                  for g, names in enumerate(groups))):
            orders = [tuple(o) + tuple(n for n in names if (n, g) not in real)
                      for g, (o, names) in enumerate(zip((o0, o1), groups, strict=True))]
            loops = Blocking.of(orders, tiles, {a: [None] for a in ARRAYS}).loops
            choices = [*([None] if bypass else []), *range(-1, len(loops))]
            # per position: the enclosed loops of trip count > 1 and the outermost of them
            # (eq. 2's buffer: which loop is outermost); None: bypassed
            priced = {p: None if p is None else
                      (frozenset(lp for lp in loops[:p + 1] if lp in real),
                       max(((j, loops[j]) for j in range(p + 1) if loops[j] in real),
                           default=None)) for p in choices}
            for positions in itertools.product(choices, repeat=len(held)):
                key = tuple(priced[p] for p in positions)
                if key in seen:
                    continue
                seen.add(key)
                buffers = {a: [None] for a in ARRAYS}
                for array, p in zip(held, positions, strict=True):
                    buffers[array] = [p]
                yield Blocking.of(orders, tiles, buffers)


def brute_force_s(layer: ConvLayer, hier: Hierarchy, prec, size_energy=None,
                  bypass: bool = True, merged: bool = True) -> float:
    """The least `evaluate` energy over every fitting blocking of S (only R's holders when not
    `bypass`; tiny layers only), with two on-chip levels and `bypass` its merged part too
    (`merged_least`), with three or more the least over each hierarchy of two adjacent levels
    merged (`search.merged.merged_levels`; tests/test_hierarchy_merged.py checks that their
    blockings price as the blockings they are, `unmerged`); `merged` False: S's role orders
    only."""
    least = _cheapest(layer, hier, prec, size_energy,
                      _s_blockings(layer, hier, bypass, with_inner=True))
    if bypass and merged and len(hier.levels) == 3:
        least = min(least, merged_least(layer, hier, prec, size_energy))
    elif bypass and merged and len(hier.levels) > 3:  # adjacent levels as one, brute-forced
        for _, _, virtual in merged_levels(hier):  # whole: its blockings price as unmerged
            least = min(least, brute_force_s(layer, virtual, prec, size_energy))
    return least


def merged_least(layer: ConvLayer, hier: Hierarchy, prec, size_energy=None) -> float:
    """The least `evaluate` energy (pJ) over the two-level blockings holding no array at both
    levels, each level some array, with t_1 = t_0 (group 1 runs once): every one-level
    blocking with positions anywhere (`_r_plus_blockings`), group 1's trip-1 loops inserted
    past group 0, each held array given to either level able to hold it; fitting by
    `evaluate`'s rule, every buffer inside group 0 holding a datapath step. An array's
    transfers depend on its own positions only, so each array is priced alone (energy, bytes
    at its level) and the sums combined; the least found is re-priced whole by `evaluate`."""
    one = SimpleNamespace(levels=(hier.levels[0], Level("any", 1, 8)), datapath=None)
    able = {a: [k for k in (1, 2) if hier.levels[k].bytes_for(a) > 0] for a in ARRAYS}
    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    least, arg, alone = math.inf, None, {}

    def priced(orders, tiles, array, k, p) -> tuple[float, float]:
        """(pJ, bytes at level k) of the array held at level k only, at position p (None:
        nowhere); array None: the MACs'."""
        key = (orders, tiles, array, k, p)
        if key not in alone:
            buffers = {a: [None, None] for a in ARRAYS}
            if p is not None:
                buffers[array][k - 1] = p
            moved = transfers(layer, Blocking.of(orders, [dict(t) for t in tiles], buffers), 3,
                              hier.datapath)
            by_array = energy_by_array_pj(moved, hier, prec, size_energy)
            used = sum(t.buffer for t in moved if t.level == k and t.array == array)
            alone[key] = (energy_pj(moved, hier, prec, size_energy)["mac"] if array is None
                          else sum(v[array] for v in by_array.values()),
                          used * width.get(array, 0))
        return alone[key]

    for blocking in _r_plus_blockings(layer, one, bypass=True):
        shifted = {a: p if p is None or p < len(GROUP0) else p + len(DIMS)
                   for a, (p,) in zip(ARRAYS, blocking.buffers, strict=True)}
        orders = (blocking.orders[0], DIMS, blocking.orders[1])
        tiles = (dict(zip(DIMS, blocking.tiles[0], strict=True)),) * 2
        probe = Blocking.of(orders, tiles, {a: [shifted[a]] * 2 for a in ARRAYS})
        if not _steps_held(layer, probe, hier):
            continue
        key = tuple(tuple(sorted(t.items())) for t in tiles)
        held = [a for a in ARRAYS if shifted[a] is not None]
        for hosts in itertools.product(*(able[a] for a in held)):
            if set(hosts) != {1, 2}:
                continue
            parts = [priced(orders, key, a, k, shifted[a])
                     for a, k in zip(held, hosts, strict=True)]
            total = sum(e for e, _ in parts) + priced(orders, key, None, 1, None)[0] + \
                sum(priced(orders, key, a, 1, None)[0] for a in ARRAYS if a not in held)
            if total >= least or any(sum(b for a, h, (_, b) in zip(held, hosts, parts,
                                                                  strict=True)
                                         if h == k and a in arrays) > size
                                     for k in set(hosts)
                                     for arrays, size in level_banks(hier.levels[k])):
                continue
            least = total
            arg = Blocking.of(orders, tiles, {a: [shifted[a] if hosts[held.index(a)] == k
                                                  else None for k in (1, 2)]
                                              if a in held else [None, None] for a in ARRAYS})
    if arg is not None:  # the arrays priced apart add up to the blocking priced whole
        whole = evaluate(layer, arg, hier, prec, size_energy)
        assert whole.fits and whole.total_energy_pj == pytest.approx(least, rel=1e-9)
    return least


def _steps_held(layer: ConvLayer, blocking: Blocking, hier: Hierarchy) -> bool:
    """Does every buffer at any level enclose `_step_loops` when it lies inside group 0?"""
    real = _nontrivial(layer, blocking)
    return all(p is None or p >= len(GROUP0) - 1 or
               _step_loops(a, hier.datapath, real) <= set(blocking.loops[:p + 1])
               for a, positions in zip(ARRAYS, blocking.buffers, strict=True)
               for p in positions)


def _r_optimum(layer, hier, prec, size_energy, bypass: bool = False) -> float:
    """search_r's energy (bypass=False: search over R's holders), inf when nothing fits."""
    try:
        if bypass:
            return search(layer, hier, prec, size_energy, bypass=False).energy_pj
        return search_r(layer, hier, prec, size_energy).energy_pj
    except NoFitError:
        return math.inf


def _check_search(layer, hier, prec, size_energy=None, bypass: bool = True) -> float:
    """search == brute force over S (with or without bypass), its blocking re-priced by
    `evaluate` fits and costs the same, and it is never above R's optimum nor, with bypass,
    above the search over R's holders; returns the energy."""
    found = search(layer, hier, prec, size_energy, bypass=bypass)
    assert found.energy_pj == pytest.approx(
        brute_force_s(layer, hier, prec, size_energy, bypass), rel=1e-9)
    again = evaluate(layer, found.blocking, hier, prec, size_energy)
    assert again.fits and (_fits(layer, found.blocking, hier, prec) or in_merged(
        found.blocking, hier, {d: _extent(layer, d) for d in DIMS},
        unrolled_dims(hier.datapath)) or len(hier.levels) > 3)  # (or `unmerged`'s)
    assert again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
    assert found.energy_pj <= _r_optimum(layer, hier, prec, size_energy) * (1 + 1e-12)
    if bypass:
        assert found.energy_pj <= _r_optimum(layer, hier, prec, size_energy, True) * \
            (1 + 1e-12)
    return found.energy_pj


CASES = {
    "one level": (ConvLayer(name="s1", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=2, Sx=2),
                  Hierarchy((Level("DRAM", None, 32, 100.0), Level("L1", 24, 16, 2.0)),
                            mac_energy_pj=0.5), None),
    "two levels shared": (ConvLayer(name="s2", Ox=3, Oy=1, Oc=2, Kx=2, Ky=1, Kc=1),
                          Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", 40, 64, 6.0),
                                     Level("RF", 12, 16, 0.5)), mac_energy_pj=1.0), None),
    "two levels split, size-derived": (
        ConvLayer(name="s2s", Ox=2, Oy=1, Oc=2, Kx=2, Ky=1, Kc=1, On=2),
        Hierarchy((Level("DRAM", None, 64, 200.0),
                   Level("SRAM", SplitCapacity(12, 8, 0), 64, None),
                   Level("RF", 10, 16, None)), mac_energy_pj=1.0),
        lambda size, bits: 0.05 * math.sqrt(size) * bits / 16),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_search_over_r_holders_equals_brute_force(name: str) -> None:
    layer, hier, size_energy = CASES[name]
    _check_search(layer, hier, ElementBytes(1, 1, 1, 2), size_energy, bypass=False)


@pytest.mark.parametrize("name", ["one level", "two levels split, size-derived"])
def test_search_with_bypass_equals_brute_force(name: str) -> None:
    layer, hier, size_energy = CASES[name]
    _check_search(layer, hier, ElementBytes(1, 1, 1, 2), size_energy)


def test_bypass_by_choice_beats_r_holders() -> None:
    """Bypass pays: a 29 B SRAM and an 11 B register file, 1 B elements. Holding every array at
    both levels (R's holders) costs 706.9 pJ at best; streaming the weights from DRAM and
    keeping inputs and partial sums in the register file only costs 683.8 pJ. Both optima are
    brute forces; the search finds the second and its blocking bypasses as described."""
    layer = ConvLayer(name="b2", Ox=1, Oy=1, Oc=2, Kx=3, Ky=1, Kc=2, Sx=2)
    hier = Hierarchy((Level("DRAM", None, 64, 265.0), Level("SRAM", 29, 64, 3.9),
                      Level("RF", 11, 16, 0.3)), mac_energy_pj=1.0)
    prec = ElementBytes(1, 1, 1, 2)
    r_holders = brute_force_s(layer, hier, prec, bypass=False)
    energy = _check_search(layer, hier, prec)
    assert energy == pytest.approx(683.8, rel=1e-9) and r_holders == pytest.approx(706.9)
    found = search(layer, hier, prec).blocking
    assert found.positions("W") == (None, None)
    assert found.positions("I")[0] is None and found.positions("O")[0] is None


@st.composite
def search_case(draw: st.DrawFn):
    """A tiny layer (few loops of trip count > 1: the register level orders groups 0 and 1),
    1 or 2 on-chip levels, shared, split or banked capacities, with or without an unrolled
    datapath."""
    on_chip = draw(st.integers(1, 2))
    k = draw(st.integers(1, 3))
    if on_chip == 1:  # at most four dimensions above 1, the kernel's included
        big = draw(st.sampled_from(["Oy", "On", "Ky", "Kc"]))
        layer = ConvLayer(name="h", Ox=draw(st.integers(1, 4)), Oc=draw(st.integers(1, 2)),
                          Kx=k, Sx=draw(st.integers(1, 2)), Sy=draw(st.integers(1, 2)),
                          **{d: draw(st.integers(1, 2)) if d == big else 1
                             for d in ("Oy", "On", "Ky", "Kc")})
    else:  # three groups to order: at most two dimensions above 1
        layer = ConvLayer(name="h", Ox=draw(st.integers(1, 3)), Oy=1,
                          Oc=draw(st.integers(1, 2)) if k == 1 else 1, Kx=k, Ky=1, Kc=1,
                          Sx=draw(st.integers(1, 2)))
    levels = [Level("DRAM", None, 64, draw(st.floats(50, 300)))]
    cap = 64
    for i in range(on_chip):  # capacities never grow inwards
        cap = draw(st.integers(1, cap))
        parts = []  # a split level's parts never add up to more than the level outside it
        for _ in ARRAYS:
            parts.append(draw(st.integers(0, min(cap // 2, cap - sum(parts)))))
        kind = draw(st.sampled_from(["shared", "split", "IO|W", "IW|O", "WO|I"]))
        capacity = cap if kind == "shared" or sum(parts) == 0 else \
            SplitCapacity(*parts) if kind == "split" else BankedCapacity(tuple(
                (arrays, sum(parts[ARRAYS.index(a)] for a in arrays))
                for arrays in kind.split("|")))  # banks: two arrays share one
        levels.append(Level(f"L{i + 1}", capacity, 16, draw(st.floats(0.1, 10))))
        cap = int(levels[-1].total_bytes)
    unroll = draw(st.sampled_from([None, {"M": 2}, {"X": 2, "C": 2}, {"Y": 3, "N": 2}]))
    hier = Hierarchy(tuple(levels), mac_energy_pj=draw(st.floats(0, 2)),
                     datapath=None if unroll is None else Datapath(unroll))
    return layer, hier


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case())
def test_search_equals_brute_force_on_random_layers(case) -> None:
    layer, hier = case
    _check_search(layer, hier, ElementBytes(1, 1, 1, 2))


@st.composite
def window_case(draw: st.DrawFn):
    """A row of 3-6 outputs under a 2- or 3-wide kernel (stride 1 or 2), 1 or 2 output maps
    and at most one more dimension of 2, on one small level (4-12 elements, shared or split)
    beside DRAM: the inputs' window, larger than its stride, competes for the level."""
    extra = draw(st.sampled_from([None, None, "Oy", "Kc"]))
    layer = ConvLayer(name="r", Ox=draw(st.integers(3, 6)), Kx=draw(st.integers(2, 3)),
                      Sx=draw(st.integers(1, 2)), Oc=draw(st.integers(1, 2)),
                      **{d: 2 if d == extra else 1 for d in ("Oy", "Ky", "Kc")})
    cap = draw(st.integers(4, 12))
    if draw(st.booleans()):
        i = draw(st.integers(1, cap - 2))
        w = draw(st.integers(1, cap - i - 1))
        cap = SplitCapacity(i, w, cap - i - w)
    hier = Hierarchy((Level("DRAM", None, 64, draw(st.floats(50, 300))),
                      Level("L1", cap, 16, draw(st.floats(0.1, 10)))),
                     mac_energy_pj=draw(st.floats(0, 2)))
    return layer, hier


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window_case())
def test_one_level_scalar_search_is_the_least_blocking_fitting_by_evaluate(case) -> None:
    """One on-chip level, a scalar datapath: the search's energy is the least `evaluate`
    energy over every blocking that `evaluate` itself says fits (eq. 2's buffers for every
    array), with each array held at any position in the nest, in any loop order, or bypassing
    the level (R+ with bypass): what `search`'s docstring argues S reaches there. On 6 of
    these 10 cases fitting every buffer by its footprint costs 3-17% more."""
    layer, hier = case
    every = (evaluate(layer, b, hier, ONE) for b in _r_plus_blockings(layer, hier, bypass=True))
    least = min(r.total_energy_pj for r in every if r.fits)
    found = search(layer, hier, ONE)
    assert found.energy_pj == pytest.approx(least, rel=1e-9)
    assert evaluate(layer, found.blocking, hier, ONE).fits


@st.composite
def unrolled_case(draw: st.DrawFn):
    """A row of 2-4 outputs under a 1- to 3-wide kernel, 1-4 output maps, 1-3 input maps, on
    one small level (2-16 B, 1 B elements) beside DRAM, with a datapath unrolling M, X or C
    (lanes fewer than the maps or columns they step over, or more)."""
    layer = ConvLayer(name="u", Ox=draw(st.integers(2, 4)), Oy=1, Kx=draw(st.integers(1, 3)),
                      Oc=draw(st.integers(1, 4)), Kc=draw(st.integers(1, 3)),
                      Sx=draw(st.integers(1, 2)))
    unroll = draw(st.sampled_from([{"M": 2}, {"X": 2}, {"C": 2}, {"C": 2, "M": 2},
                                   {"X": 3, "M": 2}, {"X": 2, "C": 2}]))
    return layer, Hierarchy((Level("DRAM", None, 16, draw(st.floats(50, 300))),
                             Level("L1", draw(st.integers(2, 16)), 16,
                                   draw(st.floats(0.1, 10)))),
                            mac_energy_pj=draw(st.floats(0, 2)), datapath=Datapath(unroll))


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unrolled_case())
def test_one_level_unrolled_search_is_the_least_blocking_fitting_by_evaluate(case) -> None:
    """One on-chip level, an unrolled datapath: the search's energy is the least `evaluate`
    energy over every blocking whose buffers hold a datapath step and that `evaluate` says
    fits (eq. 2 in step time for every array), each array at any position in any loop order
    or bypassing the level. Before LANE codes S held weights around an M loop a step spans
    by M's whole block, not its lanes: 0.56% above on 2 columns of 4 maps (M by 2, 12 B)."""
    layer, hier = case
    every = (evaluate(layer, b, hier, ONE) for b in _r_plus_blockings(layer, hier, bypass=True)
             if _holds_a_step(layer, b, hier))
    least = min(r.total_energy_pj for r in every if r.fits)
    found = search(layer, hier, ONE)
    assert found.energy_pj == pytest.approx(least, rel=1e-9)
    assert evaluate(layer, found.blocking, hier, ONE).fits


def test_weights_held_by_a_step_of_lanes() -> None:
    """2 output columns, 4 maps, a 3-wide kernel, 2 input maps, M unrolled by 2, a 12 B
    register file: the least blocking keeps 2 weights (M's lanes) while X walks inside M
    (eq. 2 in step time), which S reaches with a LANE code: 2148 pJ, the brute force's
    (2160 pJ held by M's whole block of 4)."""
    layer = ConvLayer(name="g", Ox=2, Oy=1, Oc=4, Kx=3, Ky=1, Kc=2)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 12, 16, 1.0)),
                     mac_energy_pj=1.0, datapath=Datapath({"M": 2}))
    found = search(layer, hier, ONE)
    assert found.energy_pj == pytest.approx(2148.0, rel=1e-12)
    assert found.energy_pj == pytest.approx(brute_force_s(layer, hier, ONE), rel=1e-12)
    held = {t.array: t for t in evaluate(layer, found.blocking, hier, ONE).transfers
            if t.level == 1}
    assert held["W"].buffer == 2 < held["W"].footprint


@pytest.mark.parametrize("unroll", [None, {"X": 2}])
def test_one_level_searches_every_position(unroll) -> None:
    """With one on-chip level S holds every buffer position (its group and group 0) whose
    block holds a datapath step's operands: the search equals the brute force over those
    positions anywhere in the nest (R+, enumerated over every order of both groups and every
    position −1 … last loop, sharing nothing with S's)."""
    layer = ConvLayer(name="a", Ox=3, Oy=1, Oc=2, Kx=2, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 8, 16, 1.0)),
                     mac_energy_pj=1.0, datapath=None if unroll is None else Datapath(unroll))
    s_opt = _check_search(layer, hier, ONE)
    every = [b for b in _r_plus_blockings(layer, hier) if _holds_a_step(layer, b, hier)]
    assert s_opt == pytest.approx(_cheapest(layer, hier, ONE, None, every), rel=1e-12)


def test_outer_levels_inputs_window_rolls(monkeypatch) -> None:
    """A row of 4 outputs under a 3-wide kernel at stride 1 on a 6 B SRAM and a 2 B register
    file, 1 B elements: with the SRAM's inputs window rolling along X of its group (eq. 2),
    S's optimum is 367.75 pJ, the brute force's; held by their footprints at the SRAM, the
    least under S's role orders is 421.25 pJ (12.7% more, the same brute force with that
    rule; the merged part, fitting by eq. 2, reaches 367.75 too). The blocking found
    fits by `evaluate` and not by footprints."""
    layer = ConvLayer(name="w", Ox=4, Oy=1, Oc=1, Kx=3, Ky=1, Kc=1, Sx=1)
    hier = Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", 6, 64, 6.0),
                      Level("RF", 2, 16, 0.5)), mac_energy_pj=1.0)
    energy = _check_search(layer, hier, ONE)
    assert energy == pytest.approx(367.75, rel=1e-12)
    found = search(layer, hier, ONE).blocking
    assert evaluate(layer, found, hier, ONE).fits and not _fits(layer, found, hier, ONE,
                                                                  inner=0)
    monkeypatch.setattr(f"{__name__}._outer_input_buffer", lambda *args: args[-1])
    assert _cheapest(layer, hier, ONE, None, _s_blockings(layer, hier, with_inner=True)) == \
        pytest.approx(421.25, rel=1e-12)


def test_buffers_inside_group_0_are_searched() -> None:
    """Buffers inside the innermost loops pay, and are found: one level of 8 B, 1 B elements.
    Fitting every buffer by its footprint, every blocking keeping its buffers at or outside
    the end of group 0 costs at least 1,963 pJ, and one with buffers anywhere 1,482 pJ (brute
    forces, bypass included). The inputs' window rolling along its outermost loop (eq. 2)
    beats both: the search's 1,381 pJ is the least over every position anywhere fitting by
    `evaluate`'s own rule. With the level split into 2 B of weights and 6 B of outputs (no
    inputs), buffers at or outside the end of group 0 cost at least 2,848 pJ; the search's
    1,963 pJ is the least anywhere, its weights' buffer inside group 0 (seed 001: "Fw, Fh are
    not required to be the innermost loops")."""
    layer = ConvLayer(name="b", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1)

    def whole_group_0(b: Blocking, p: int | None) -> bool:  # every real loop of group 0 inside
        real = {lp for lp in _nontrivial(layer, b) if lp[1] == 0}
        return p is None or real <= set(b.loops[:p + 1])

    for capacity, outside_pj, anywhere_pj, found_pj in ((8, 1963, 1482, 1381),
                                                        (SplitCapacity(0, 2, 6), 2848, 1963,
                                                         1963)):
        hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", capacity, 16, 1.0)),
                         mac_energy_pj=1.0)
        every = list(_r_plus_blockings(layer, hier))
        outside = [b for b in _s_blockings(layer, hier)  # bypass included
                   if all(whole_group_0(b, p) for ps in b.buffers for p in ps)]
        assert _cheapest(layer, hier, ONE, None, outside, inner=0) == pytest.approx(outside_pj)
        assert _cheapest(layer, hier, ONE, None, every, inner=0) == pytest.approx(anywhere_pj)
        found = search(layer, hier, ONE)
        assert found.energy_pj == pytest.approx(found_pj)
        assert evaluate(layer, found.blocking, hier, ONE).total_energy_pj == \
            pytest.approx(found_pj)
        by_eq_2 = [r.total_energy_pj for r in (evaluate(layer, b, hier, ONE) for b in every)
                   if r.fits]
        assert min(by_eq_2) == pytest.approx(found_pj)
    assert found.blocking.positions("W")[0] < len(GROUP0) - 1


def test_weights_fetched_once_per_block_beat_r() -> None:
    """One level of 5 B, 1 B per element, 8-bit ports, DRAM 100 pJ, L1 1 pJ, no MAC energy. A
    1×1 conv with X = 4 outputs, C = 1, M = 2 (8 MACs). By hand, tiles X 2, M 1 (footprints
    I 2 + W 1 + O 2 = 5 B), group 1 ordered X1 M1 …, I and O at group 0's end (refilled per
    (X1, M1): 4 times), W just outside X1 (refilled per M1: twice). DRAM: I 8 + W 2 read, O 8
    written = 18 accesses, 1800 pJ; L1: those 18, plus the datapath's 8 I and 8 W reads and 8
    O writes = 42 pJ; 1842 pJ. In R (every buffer at a group end) every fitting tiling moves
    at least 20 elements from or to DRAM (X 2 M 1: I 8, W 4, O 8; X 1 M 2: I 4, W 8, O 8;
    X 1 M 1: 24; anything larger overflows), so R costs at least 2000 pJ."""
    layer = ConvLayer(name="w", Ox=4, Oy=1, Oc=2, Kx=1, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 8, 100.0), Level("L1", 5, 8, 1.0)))
    hand = Blocking.of([GROUP0, ("X", "M", "Y", "C", "N")],
                       [{"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}],
                       {"I": [6], "W": [7], "O": [6]})
    priced = evaluate(layer, hand, hier, ONE)
    assert priced.fits and priced.total_energy_pj == pytest.approx(1842)
    found = search(layer, hier, ONE)
    assert found.energy_pj <= 1842 + 1e-9
    assert search_r(layer, hier, ONE).energy_pj >= 2000 - 1e-9
    assert found.energy_pj == pytest.approx(brute_force_s(layer, hier, ONE))


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_counts_depend_on_orders_only_through_prefixes(data) -> None:
    """Shuffling the loops each buffer holds alike, and moving trip-1 loops anywhere in their
    group, changes no moved, footprint, refill or partial-sum count: what the brute forces'
    de-duplication relies on."""
    layer = ConvLayer(name="o", Ox=data.draw(st.integers(1, 4)), Oy=data.draw(st.integers(1, 3)),
                      Oc=data.draw(st.integers(1, 3)), Kx=data.draw(st.integers(1, 3)),
                      Ky=1, Kc=data.draw(st.integers(1, 2)), Sx=data.draw(st.integers(1, 2)))
    tiles = [{d: data.draw(st.integers(1, _extent(layer, d))) for d in DIMS}]
    orders = [data.draw(st.permutations(GROUP0)), data.draw(st.permutations(DIMS))]
    base = Blocking.of(orders, tiles, {a: [data.draw(st.integers(-1, 11))] for a in ARRAYS})
    real = _nontrivial(layer, base)
    inside = {a: {lp for lp in base.loops[:base.positions(a)[0] + 1] if lp in real}
              for a in ARRAYS}
    rnd = data.draw(st.randoms(use_true_random=False))
    new_orders = []
    for g, order in enumerate(orders):
        # real loops: held by more buffers first (prefixes are nested), ties shuffled
        ranked = sorted((-sum((name, g) in inside[a] for a in ARRAYS), rnd.random(), name)
                         for name in order if (name, g) in real)
        names = [name for _, _, name in ranked]
        for name in order:
            if (name, g) not in real:
                names.insert(rnd.randint(0, len(names)), name)
        new_orders.append(tuple(names))
    probe = Blocking.of(new_orders, tiles, {a: [None] for a in ARRAYS})
    positions = {a: [max((i for i, lp in enumerate(probe.loops) if lp in inside[a]),
                         default=-1)] for a in ARRAYS}
    other = Blocking.of(new_orders, tiles, positions)

    def counts(b):
        return [(t.array, t.level, t.footprint, t.refills, t.moved, t.partial_reads,
                 t.final_writes) for t in transfers(layer, b)]

    assert counts(other) == counts(base)


def test_r_holders_refuse_when_nothing_fits_bypass_streams() -> None:
    """A 5 B register file cannot hold one input, one weight and one 4 B partial sum (the
    default widths), its smallest blocks: holding every array there is refused in one line;
    with bypass by choice the search still answers, never above streaming everything from
    DRAM (priced by `evaluate`)."""
    layer = ConvLayer(name="big", Ox=4, Oy=4, Oc=2, Kx=5, Ky=5, Kc=2)
    hier = Hierarchy((Level("DRAM", None, 64, 100.0), Level("RF", 5, 16, 1.0)))
    with pytest.raises(WorkbenchError, match="no blocking fits"):
        search(layer, hier, bypass=False)
    found = search(layer, hier, ONE)
    streamed = Blocking.of([GROUP0, DIMS], [{d: _extent(layer, d) for d in DIMS}],
                           {a: [None] for a in ARRAYS})
    assert evaluate(layer, found.blocking, hier, ONE).fits
    assert found.energy_pj <= evaluate(layer, streamed, hier, ONE).total_energy_pj


def _random_blocking(layer: ConvLayer, hier: Hierarchy, pattern, data) -> Blocking:
    """A blocking of S under the holder pattern: random tile chains, orders and positions
    (each holder's inside its own level's group)."""
    levels = len(hier.levels) - 1
    combo = [data.draw(st.sampled_from([tuple(c) for c in gen_chains(_extent(layer, d), levels)]))
             for d in DIMS]
    orders = [GROUP0] + [tuple(data.draw(st.permutations(DIMS))) for _ in range(levels)]
    start = [len(GROUP0) + len(DIMS) * (g - 1) for g in range(levels + 1)]
    buffers = {a: [None] * levels for a in ARRAYS}
    for array, chain in zip(ARRAYS, pattern, strict=True):
        for k in chain:
            buffers[array][k - 1] = start[levels + 1 - k] - 1 + data.draw(st.integers(0, 5))
    return Blocking.of(orders, _tiles(combo, levels), buffers)


@settings(max_examples=examples(40), deadline=None)
@given(search_case(), st.data())
def test_pattern_floor_is_below_every_blocking_of_its_pattern(case, data) -> None:
    """`pattern_floor` (the search skips a holder pattern whose floor reaches the best energy
    found) never exceeds `evaluate`'s energy of a blocking with those holders, whatever its
    tiles, orders and positions, fitting or not."""
    layer, hier = case
    prec = ElementBytes(1, 1, 1, 2)
    pattern = data.draw(st.sampled_from(holder_patterns(hier)))
    blocking = _random_blocking(layer, hier, pattern, data)
    floor = pattern_floor(layer, hier, pj_per_bit(hier, None), prec, pattern) * layer.groups
    assert floor <= evaluate(layer, blocking, hier, prec).total_energy_pj * (1 + 1e-12)


@settings(max_examples=examples(60), deadline=None)
@given(search_case(), st.data())
def test_relaxed_floor_is_below_every_fitting_blocking_at_its_tiles(case, data) -> None:
    """`relaxed_floor` (the search drops tile points where it reaches the best energy found)
    plus the MACs never exceeds `evaluate`'s energy of a fitting blocking of S at those tiles,
    under any pattern it is given; a level's capacity is what makes it tight, so fitting
    blockings are what it must bound."""
    layer, hier = case
    prec = ElementBytes(1, 1, 1, 2)
    patterns = holder_patterns(hier)
    pattern = data.draw(st.sampled_from(patterns))
    blocking = _random_blocking(layer, hier, pattern, data)
    if not _fits(layer, blocking, hier, prec):
        return
    levels = len(hier.levels) - 1
    flat = {}
    for d in DIMS:
        tiles = [float(blocking.tiles[g][DIMS.index(d)]) for g in range(levels)]
        padded = -(-_extent(layer, d) // tiles[-1]) * tiles[-1]
        flat[d] = ([np.array([t]) for t in tiles], np.array([padded]))
    mac, fetched, outputs = datapath_side(layer, hier, flat)
    unit = {a: side_cost(a, fetched[a], 1.0, outputs, prec) for a in ARRAYS}
    others = [data.draw(st.sampled_from(patterns)) for _ in range(data.draw(st.integers(0, 3)))]
    pj_bit = pj_per_bit(hier, None)
    floor = (mac + relaxed_floor(layer, hier, flat, pj_bit, prec, [pattern, *others], unit))
    energy = evaluate(layer, blocking, hier, prec).total_energy_pj
    assert float(np.ravel(floor)[0]) * layer.groups <= energy * (1 + 1e-12)
    # the pattern's own terms (what `price_points` filters each pattern's points by) bound it too
    terms = chain_terms(layer, hier, flat, pj_bit, prec, [pattern, *others], unit)
    own = mac + sum(t[chain] for t, chain in zip(terms, pattern, strict=True))
    assert float(np.ravel(own)[0]) * layer.groups <= energy * (1 + 1e-12)
    assert float(np.ravel(own)[0]) >= float(np.ravel(floor)[0])


@settings(max_examples=examples(40), deadline=None)
@given(search_case(), st.data())
def test_least_held_patterns_decide_where_any_pattern_fits(case, data) -> None:
    """`least_held` keeps only the patterns no other one holds less than at every level; the
    points where one of them fits are the points where any of the patterns fits, checked on
    every tile point of the layer against the patterns one by one."""
    layer, hier = case
    prec = ElementBytes(1, 1, 1, 2)
    all_patterns = holder_patterns(hier)
    chosen = data.draw(st.lists(st.sampled_from(all_patterns), min_size=1, max_size=12,
                                unique=True))
    levels = len(hier.levels) - 1
    chains = {d: np.array(gen_chains(_extent(layer, d), levels)) for d in DIMS}
    grid = grid_of(chains, {d: _extent(layer, d) for d in DIMS})
    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    feet = {k: {a: f * width[a] for a, f in footprints(layer, grid, levels - k).items()}
            for k in range(1, levels + 1)}
    shape = np.broadcast_shapes(*(grid[d][1].shape for d in DIMS))
    kept = least_held(chosen, levels)
    assert set(kept) <= set(chosen)
    union = np.zeros(shape, dtype=bool)
    for pattern in chosen:
        union |= r_blocks_fit(hier, feet, shape, pattern)
    least = np.zeros(shape, dtype=bool)
    for pattern in kept:
        least |= r_blocks_fit(hier, feet, shape, pattern)
    np.testing.assert_array_equal(least, union)
