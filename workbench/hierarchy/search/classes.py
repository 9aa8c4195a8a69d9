"""Best-first search over classes of tile chains, for two or more on-chip levels (proof in
docs/search.md, "Class floors").

A dimension has far more tile chains than classes of what one role sees: with three or more
levels the innermost role's (t_0, t_1, P) (lenet5's conv2 on three levels: 4.2 × 10⁶ class
combinations for 4.3 × 10⁷ tile points), with two the outer role's (t_1, P) (on two: 3.5 × 10⁴
for 1.25 × 10⁶). A lower bound per class combination on `relaxed_floor` at every point of it
(`search.class_floors.ClassFloors`) orders them; they are taken lowest bound first, a batch at
a time; with two levels a batch keeps the classes and patterns whose bound with the outer
role's own best placement is below the best energy found (`ClassFloors.outer_floor`); their
points' own floors next, and the points left priced as a slice's are
(`search.points.price_points`). Once the next class's bound reaches the best energy found, no point
left can beat it.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.bounds import relaxed_floor
from workbench.hierarchy.search.class_floors import ClassFloors, flat_grid
from workbench.hierarchy.search.context import RoleSearch
from workbench.hierarchy.search.levels import datapath_side, smallest_blocks
from workbench.hierarchy.search.points import price_points
from workbench.hierarchy.search.pricing import side_cost
from workbench.hierarchy.search.roles import Pattern
from workbench.layers.spec import ConvLayer


def search_classes(search: RoleSearch, patterns: dict[Pattern, float], best: float,
                   floors: ClassFloors, share: tuple[int, int], stage: tuple[int, int]):
    """S's part under one role order, class combinations lowest bound first (`ClassFloors`):
    (energy pJ, where) of its least blocking below `best`, or None. `patterns`: each holder
    pattern's floor (pJ, `pattern_floor`); those below the best energy found are searched, and
    once a lower best leaves at most 3/4 of the patterns the bound was taken over, it is taken
    again over those (a least over fewer holder chains: higher). With no best energy yet, the
    first pattern alone is priced first, at the classes of lowest bound holding about SEED
    points (found by a partition, not a sort of all), for a start. `share` (k, n): only the
    class combinations k, k + n, … (flat index); mirror: only points whose X chain index is
    at most their Y chain index (lemma 5; the search's `mirror`); the search's `memory`: the
    innermost level's bounds kept from other searches of the layer (one slice:
    `search.memory`), raising its floor and noted here as `search.points.price_points` does."""
    layer, pj_bit, alone = search.space.layer, search.space.pj_bit, search.alone
    live = [p for p, f in patterns.items() if f < best]
    if not live:
        return None
    interrupt.progress(stage[0] / stage[1])
    bound = floors.floor(alone, pj_bit, live) * layer.groups
    taken = len(live)
    todo = np.nonzero(bound < best)[0]
    todo = todo[todo % share[1] == share[0]]
    found, total = None, max(1, len(todo))
    points = int(floors.points(todo).sum())
    if len(todo) and (not math.isfinite(best) or  # a start, or a weak one (an incumbent)
                      points > tuning.WEAK * tuning.SEED):  # the first pattern
        # (R's holders under the identity) at the classes of lowest bound, about SEED points
        m = max(1, min(len(todo), tuning.SEED * len(todo) // max(1, points)))
        first = np.argpartition(bound[todo], m - 1)[:m] if m < len(todo) else \
            np.arange(len(todo))
        found = _price_classes(search, live[:1], best, todo[first], floors)
        best = best if found is None else found[0]
    ends, i = None, 0
    while True:
        live = [p for p in live if patterns[p] < best]
        if not live:
            break
        if 4 * len(live) <= 3 * taken:  # fewer patterns: a higher bound, taken again
            interrupt.check()
            bound, taken, ends = floors.floor(alone, pj_bit, live) * layer.groups, len(live), None
        if ends is None:  # the classes left, lowest bound first
            todo = todo[i:]
            todo = todo[bound[todo] < best]
            todo = todo[np.argsort(bound[todo], kind="stable")]
            ends, i = np.cumsum(floors.points(todo)), 0
        if i >= len(todo) or bound[todo[i]] >= best:
            break
        interrupt.progress((stage[0] + 1 - (len(todo) - i) / total) / stage[1])
        j = max(i + 1, int(np.searchsorted(ends, (ends[i - 1] if i else 0) + tuning.BATCH)))
        batch = todo[i:j]
        i = j
        batch, here = batch[bound[batch] < best], live
        if floors.gamma == 2 and len(batch):  # the outer role's own best placements: the
            # classes and patterns of the batch whose bound with them is below the best
            below = floors.outer_floor(search.tables, alone, pj_bit, live, batch) * \
                layer.groups < best
            batch = batch[below.any(axis=0)]
            here = [p for p, row in zip(live, below, strict=True) if row.any()]
        priced = _price_classes(search, here, best, batch, floors)
        if priced is not None:
            found, best = priced, priced[0]
    return found


def _price_classes(search: RoleSearch, live: list[Pattern], best: float, batch: np.ndarray,
                   floors: ClassFloors):
    """Every point of the class combinations `batch` whose `relaxed_floor` (the unit alone
    floors gathered from the tables) is below `best`, priced as a slice's points are
    (`search.points.price_points`)."""
    layer, hierarchy, per_dim, extent, _, pj_bit, precision = search.space.unpacked()
    alone, mirror = search.alone, search.mirror
    interrupt.check()  # a safe point: nothing half-stored (`interrupt`)
    chain_at = floors.expand(batch)
    if mirror:
        keep = chain_at["X"] <= chain_at["Y"]
        chain_at = {d: v[keep] for d, v in chain_at.items()}
    on_chip = len(hierarchy.levels) - 1
    n = len(chain_at["X"])
    unit = {}  # unit alone floors per (array, holder) at the points: tabled ones gathered
    for a_idx, array in enumerate(ARRAYS):
        for holder in {k for p in live for k in p[a_idx]}:
            ids = alone.ids.get(on_chip + 1 - holder)
            if ids is None:
                continue
            table = alone.table(array, holder)
            unit[array, holder] = np.broadcast_to(table[tuple(
                ids[d][chain_at[d]] if table.shape[axis] > 1 else 0
                for axis, d in enumerate(DIMS))], (n,))
    grid, side = _points_side(layer, hierarchy, per_dim, extent, precision, chain_at)
    if math.isfinite(best) and n:  # the points' own floors first: most of them reach the best
        points = {d: ([t.reshape(n) for t in tiles], p.reshape(n))
                  for d, (tiles, p) in grid.items()}  # one axis, as the gathered floors
        flat = {a: np.broadcast_to(v, grid["X"][1].shape).reshape(n) for a, v in side[1].items()}
        floor = np.broadcast_to(side[0], grid["X"][1].shape).reshape(n) + \
            relaxed_floor(layer, hierarchy, points, pj_bit, precision, live, flat, unit)
        keep = np.nonzero(floor * layer.groups < best)[0]
        if len(keep) < n:  # the floors priced here are kept for the points left
            chain_at = {d: v[keep] for d, v in chain_at.items()}
            unit = {key: np.broadcast_to(v, (n,))[keep] for key, v in unit.items()}
            grid, side = _points_side(layer, hierarchy, per_dim, extent, precision, chain_at)
    n = len(chain_at["X"])
    if not n:
        return None
    rows = (np.arange(n),) + (np.zeros(n, dtype=np.intp),) * (len(DIMS) - 1)
    return price_points(search, grid, rows, live, slice(0, len(per_dim["X"])), chain_at, best, side,
                  unit, lift=False)


def _points_side(layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike, chain_at: dict) -> tuple[dict, tuple]:
    """The flat grid of the points `chain_at` (all along axis 0) and, on it, their MAC energy,
    datapath fetches at unit pJ/bit and smallest blocks (`search.points.price_points`'s `side`)."""
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    grid = flat_grid(per_dim, extent, chain_at)
    mac, fetched, outputs = datapath_side(layer, hierarchy, grid)
    return grid, (mac, {a: side_cost(a, fetched[a], 1.0, outputs, precision) for a in ARRAYS},
                  smallest_blocks(layer, grid, len(hierarchy.levels) - 1, width))


__all__ = ["search_classes"]
