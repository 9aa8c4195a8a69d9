"""Pricing slices of `search`'s tile points under its live holder patterns (proofs in
docs/search.md): the relaxed floor over a slice, R's blocks fitting,
the outer levels looked up per class, and the innermost level last, lowest bound first, a batch
at a time in the compiled `search.kernel.least_total`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.bounds import (
    alone_floor,
    chain_terms,
    least_held,
    lifted,
    r_blocks_fit,
    relaxed_floor,
)
from workbench.hierarchy.search.calls import least_total_at
from workbench.hierarchy.search.context import RoleSearch
from workbench.hierarchy.search.grid import (
    LazyPoints,
    at_rows,
    chains_at,
    grid_of,
    grid_shape,
)
from workbench.hierarchy.search.levels import (
    class_ids,
    datapath_side,
    level_blocks,
    level_table,
    smallest_blocks,
)
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import LevelBlocks, side_cost
from workbench.hierarchy.search.roles import Pattern, variant


def price_slice(search: RoleSearch, live: list[Pattern], xs: slice, ys: slice, best: float,
            alone: dict, later: list[Pattern]):
    """Price slices of the X and Y chains under every live pattern: (energy pJ, where) of a
    blocking below `best`, or None, and the least floor (pJ) over the slice of the patterns
    `later` (inf if none). Points whose `relaxed_floor` reaches the best energy found are
    dropped (with no best yet, or more than WEAK × SEED points below it, the SEED points of
    lowest floor are priced first to get a lower one: an order only).
    `alone`: `chain_terms`' arrays, kept for the next call on the same slice (and gathered at
    the points priced), and the floor of `later` under the key "later" (with its patterns): a
    floor over a superset of the patterns (a least over more holder chains) bounds the live
    ones too. The search's `pairs`: (X, Y) chain index pairs searched instead of xs × ys
    (lemma 5); its `memory`: the innermost level's bounds kept from other searches of the
    layer, and where this one's are noted (`search.memory`); its `alone`: the alone floors
    priced per class of chains, gathered into `alone` at the slice (`search.alone`)."""
    layer, hierarchy, per_dim, extent, classes, pj_bit, precision = search.space.unpacked()
    pairs, floors = search.pairs, search.alone
    on_chip = len(hierarchy.levels) - 1
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    chosen = {d: per_dim[d][{"X": xs, "Y": ys}.get(d, slice(None))] for d in DIMS}
    if pairs is not None:
        chosen["X"], chosen["Y"] = per_dim["X"][pairs[0]], per_dim["Y"][pairs[1]]
    grid = grid_of(chosen, extent, pairs is not None)
    shape = grid_shape(grid)
    feet = smallest_blocks(layer, grid, on_chip, width)
    union, masks = np.zeros(shape, dtype=bool), {}
    for pattern in least_held(live, on_chip):
        union |= r_blocks_fit(hierarchy, feet, shape, pattern, masks)
    if floors is not None:
        index = {d: np.arange(len(per_dim[d]))[{"X": xs, "Y": ys}.get(d, slice(None))]
                 for d in DIMS}
        if pairs is not None:
            index["X"], index["Y"] = pairs
        floors.fill(alone, live + later, index, pairs is not None)
    interrupt.check()
    mac, fetched, outputs = datapath_side(layer, hierarchy, grid)
    fetch_unit = {a: side_cost(a, fetched[a], 1.0, outputs, precision) for a in ARRAYS}
    kept = alone.get("later")
    if kept is not None and set(live) <= set(kept[0]):
        relaxed = kept[1]
    else:
        relaxed = mac + relaxed_floor(layer, hierarchy, grid, pj_bit, precision, live,
                                      fetch_unit, alone)
    interrupt.check()
    floor = np.where(union, relaxed, np.inf).ravel()
    least_later = math.inf
    if later:
        later_floor = mac + relaxed_floor(layer, hierarchy, grid, pj_bit, precision, later,
                                          fetch_unit, alone)
        least_later = float(np.min(later_floor)) * layer.groups
        alone["later"] = (tuple(later), later_floor)
    found = None
    side = mac, fetch_unit, feet  # gathered at the points priced
    seeds = (tuning.WEAK if math.isfinite(best) else 1) * tuning.SEED
    if np.count_nonzero(floor * layer.groups < best) > seeds:
        seed = np.argpartition(floor, tuning.SEED)[:tuning.SEED]
        rows = np.unravel_index(seed, shape)
        found = price_points(search, grid, rows, live, xs, chains_at(rows, xs, ys, pairs), best,
                       side)
        best = best if found is None else found[0]
    rows = np.unravel_index(np.nonzero(floor * layer.groups < best)[0], shape)
    if len(rows[0]):
        keys = {("term", a, p[i]) for p in live for i, a in enumerate(ARRAYS)} | \
            {(a, on_chip) for a in ARRAYS}  # and the innermost level's unit alone floors
        alone_at = {key: at_rows(alone[key], rows) for key in keys if key in alone}
        found = price_points(search, grid, rows, live, xs, chains_at(rows, xs, ys, pairs), best,
                       side, alone_at) or found
    return found, least_later


def price_points(search: RoleSearch, grid: dict, rows: tuple, live: list[Pattern], xs: slice,
           chain_at: dict, best: float, side: tuple, alone_at: dict | None = None,
           lift: bool = True):
    """`price_slice` at the grid points `rows` (index arrays over the axes X … N of the slice;
    `chain_at`: their chain index per dimension; `side`: the grid's MAC energy, datapath
    fetches at unit pJ/bit and smallest blocks, `price_slice`').
    Outer levels are looked up in tables per class of their (t_{γ−1}, t_γ, P) (per X chain's
    class when the slice has one X chain). With a best energy, a pattern is priced only at
    the points where its own relaxed floor (`chain_terms` of its chains; `alone_at`: their alone
    floors at these points, when known) is below it. The innermost level's floor is raised
    to the bounds the search's `memory` keeps, and the kernel's bounds are noted in it.
    `lift`: whether to take the lifted bounds (`search.bounds.lifted`) when there is no
    `memory`."""
    layer, hierarchy, per_dim, extent, classes, pj_bit, precision = search.space.unpacked()
    tables, memory = search.tables, search.memory
    on_chip = len(hierarchy.levels) - 1
    one_x = xs.stop - xs.start == 1
    flat = LazyPoints(grid, rows)  # gathered only where a count needs the tiles themselves
    mac = at_rows(side[0], rows)
    fetch_unit = {a: at_rows(v, rows) for a, v in side[1].items()}
    feet = {k: {a: at_rows(v, rows) for a, v in per.items()} for k, per in side[2].items()}
    n = len(rows[0])
    ids = {k: class_ids(classes, on_chip + 1 - k, chain_at, one_x) for k in range(1, on_chip)}
    outer: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # (k, variant): at every point
    terms = None if not math.isfinite(best) else chain_terms(
        layer, hierarchy, flat, pj_bit, precision, live, fetch_unit, alone_at)
    prepared = []
    known = {} if alone_at is None else alone_at
    floor_in: dict[str, np.ndarray] = {}  # unit alone floors at the innermost level
    points = None if memory is None else memory.flat(chain_at)
    masks: dict = {}
    for pattern in live:
        interrupt.check()
        ok = r_blocks_fit(hierarchy, feet, (n,), pattern, masks)
        if terms is not None:
            own = np.broadcast_to(mac, (n,)) + sum(t[c] for t, c in zip(terms, pattern,
                                                                         strict=True))
            ok &= own * layer.groups < best
        sub = np.nonzero(ok)[0]
        if not len(sub):
            continue
        bound = np.broadcast_to(mac, (n,))[sub]
        for a_idx, (array, chain) in enumerate(zip(ARRAYS, pattern, strict=True)):
            bound = bound + pj_bit[chain[-1] if chain else 0, a_idx] * fetch_unit[array][sub]
        picks = {}
        for k in range(1, on_chip):  # outer levels: looked up per (t_{γ−1}, t_γ, P) class
            held_by = variant(pattern, k)
            if (k, held_by) not in outer:
                key = (k, held_by, classes["X"][on_chip + 1 - k][xs.start] if one_x else None)
                table = tables[key] = level_table(
                    search.space, k, xs.start if one_x else None, pattern, tables.get(key),
                    ids[k][0])
                outer[k, held_by] = (table[0][ids[k][0]][ids[k][1]],
                                     table[1][ids[k][0]][ids[k][1]])
            energy, at = outer[k, held_by]
            bound = bound + energy[sub]
            picks[k] = at[sub]
        # the innermost level last: its energy is at least, per held array, that of its
        # least-moving block fitting the level alone (inf: none fits)
        inner = np.zeros(len(sub))
        for array, src in zip(*variant(pattern, on_chip), strict=True):
            a_idx = ARRAYS.index(array)
            if array not in floor_in and (array, on_chip) in known:
                floor_in[array] = known[array, on_chip]
            elif array not in floor_in:
                unit = LevelBlocks(layer, flat, 1, on_chip, {array: 1.0}, precision,
                                   unrolled_dims(hierarchy.datapath))
                floor_in[array] = alone_floor(hierarchy.levels[on_chip].bytes_for(array),
                                              unit, array)
            inner = inner + (pj_bit[src, a_idx] + pj_bit[on_chip, a_idx]) * \
                floor_in[array][sub]
        if memory is not None:
            inner = memory.raise_floor(variant(pattern, on_chip)[0],
                                       _into_inner(pj_bit, pattern, on_chip), points, sub, inner)
        prepared.append((pattern, sub, bound, picks, inner))
    found = None
    interrupt.check()
    # lifted bounds cost more than they prune on one slice (lenet5's app edits on 2 levels:
    # jumps 152-169 ms median with them, 135-141 without, 4 runs each); on many slices the
    # difference is within run-to-run noise (VGG16's 13 conv layers on 3 levels: 301.7 and
    # 306.7 s with, 305.0 s without), so they are kept there; a bound skipped is exact
    if memory is None and lift:
        prepared = lifted(layer, hierarchy, flat, pj_bit, precision, prepared, best)
    for pattern, sub, outside, picks, inner in prepared:
        # lowest bounds first, a batch at a time (the first small: its best usually stops the
        # rest early); points whose bound reaches the best energy found cannot beat it
        bound = outside + inner
        keep = np.nonzero(bound * layer.groups < best)[0]
        size = tuning.FIRST
        lowers = np.full(len(sub), np.nan)
        here = None  # (position in sub, placement) of this pattern's least point found
        while len(keep):
            interrupt.check()  # a safe point: nothing half-stored (`interrupt`)
            if len(keep) > size:
                lowest = np.argpartition(bound[keep], size)[:size]
                rest = np.ones(len(keep), dtype=bool)
                rest[lowest] = False
                idx, keep = keep[lowest], keep[rest]
            else:
                idx, keep = keep, keep[:0]
            size = min(tuning.BATCH, 4 * size)
            blocks, held = level_blocks(layer, hierarchy, on_chip, flat.take(sub[idx]), pj_bit,
                                   precision, pattern)
            total, i, at, lower = least_total_at(hierarchy, blocks, held, outside[idx],
                                                 inner[idx], layer.groups, best)
            lowers[idx] = lower
            if memory is not None:
                memory.note(*variant(pattern, on_chip), _into_inner(pj_bit, pattern, on_chip),
                            points[sub[idx]], lower)
            if i >= 0:
                best, here = total, (int(idx[i]), at)
            keep = keep[bound[keep] * layer.groups < best]
        if here is not None:  # of equal optima, one chosen by what they are
            here = _first_of_equals(PatternPoints(pattern, sub, outside, inner, lowers),
                                    here, best, search.space, flat)
        if here is not None:
            j = int(sub[here[0]])
            found = best, ({d: int(chain_at[d][j]) for d in DIMS},
                           {**{k: int(v[here[0]]) for k, v in picks.items()},
                            on_chip: here[1]}, pattern)
    return found


@dataclass(frozen=True)
class PatternPoints:
    """One pattern's points as `price_points` priced them: positions `sub` in the slice, the
    energy outside the innermost level (pJ, one group), the innermost level's floor there
    (raised to the kept bounds) and its kernel lower bounds where priced (NaN: not)."""

    pattern: Pattern
    sub: np.ndarray
    outside: np.ndarray
    floor: np.ndarray
    lowers: np.ndarray


def _first_of_equals(pts: PatternPoints, here: tuple[int, int], least: float, space,
                     flat: LazyPoints) -> tuple[int, int]:
    """Of the pattern's points whose total is `least` (its least, found at position here[0]
    in batches whose order the kept bounds may have set), the one with the fewest blocks at
    the outermost on-chip level (the fewest DRAM refills), then at each level inwards, then
    the first position: the same one whatever earlier searches kept (docs/search.md, "One
    answer among equal optima"). Every such point is a candidate here: its floor and its
    kernel lower bound are at most its total; candidates are priced in that order, and the
    kernel returns the first of least total."""
    layer, hierarchy, groups = space.layer, space.hierarchy, space.layer.groups
    lows = np.where(np.isnan(pts.lowers), pts.floor, pts.lowers)
    cand = np.flatnonzero(((pts.outside + pts.floor) * groups <= least)
                          & ((pts.outside + lows) * groups <= least))
    if len(cand) <= 1:
        return here
    tiles = flat.take(pts.sub[cand])
    on_chip = len(hierarchy.levels) - 1
    blocks_at = [np.prod([p / t[g] for t, p in tiles.values()], axis=0)
                 for g in range(on_chip)]  # innermost level first
    cand = cand[np.lexsort((cand, *blocks_at))]
    blocks, held = level_blocks(layer, hierarchy, on_chip, flat.take(pts.sub[cand]),
                                space.pj_bit, space.precision, pts.pattern)
    total, i, at, _ = least_total_at(hierarchy, blocks, held, pts.outside[cand],
                                     pts.floor[cand], groups, least * tuning.TIE)
    return (int(cand[i]), at) if i >= 0 and total <= least else here


def _into_inner(pj_bit: np.ndarray, pattern: Pattern, on_chip: int) -> np.ndarray:
    """pJ per bit of each array the innermost level holds, into it (from its source)."""
    held, sources = variant(pattern, on_chip)
    return np.array([pj_bit[src, ARRAYS.index(a)] + pj_bit[on_chip, ARRAYS.index(a)]
                     for a, src in zip(held, sources, strict=True)], dtype=float)


__all__ = ["PatternPoints", "price_slice", "price_points"]
