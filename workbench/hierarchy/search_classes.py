"""Best-first search over classes of tile chains, for two or more on-chip levels (proof in
`workbench.hierarchy.search`'s docstring, "Class floors").

A dimension has far more tile chains than classes of what one role sees: with three or more
levels the innermost role's (t_0, t_1, P) (lenet5's conv2 on three levels: 4.2 × 10⁶ class
combinations for 4.3 × 10⁷ tile points), with two the outer role's (t_1, P) (on two: 3.5 × 10⁴
for 1.25 × 10⁶). A lower bound per class combination on `relaxed_floor` at every point of it
(`ClassFloors`, summed by a compiled kernel) orders them; they are taken lowest bound first, a
batch at a time, their points' own floors next, and the points left priced as a slice's are
(`search_points._price`). Once the next class's bound reaches the best energy found, no point
left can beat it.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search_alone import AloneTables
from workbench.hierarchy.search_bounds import relaxed_floor
from workbench.hierarchy.search_dominance import alone_prefixes
from workbench.hierarchy.search_grid import chain_classes
from workbench.hierarchy.search_levels import _datapath_side, _smallest
from workbench.hierarchy.search_memory import InnerMemory
from workbench.hierarchy.search_points import SEED, _price
from workbench.hierarchy.search_space import (
    BATCH,
    LevelBlocks,
    Pattern,
    side_cost,
    unrolled_dims,
)
from workbench.layers.spec import ConvLayer

CLASS_LIMIT = 1 << 23  # class combinations up to which the bound is tabled (64 MB a table)


def _along(axis: int) -> tuple[int, ...]:
    shape = [1] * len(DIMS)
    shape[axis] = -1
    return tuple(shape)


def flat_grid(per_dim: dict, extent: dict, chain_at: dict[str, np.ndarray]) -> dict:
    """Per dimension: tiles t[g] and padded extent P of the points whose chain index per
    dimension is `chain_at` (one point per row, all along axis 0), as `search_grid.grid_of`."""
    out = {}
    shape = (-1,) + (1,) * (len(DIMS) - 1)
    for dim in DIMS:
        chains = per_dim[dim][chain_at[dim]]
        p = -(-extent[dim] // chains[:, -1]) * chains[:, -1]
        out[dim] = ([chains[:, g].reshape(shape).astype(float)
                     for g in range(chains.shape[1])], p.reshape(shape).astype(float))
    return out


@numba.njit(cache=True, nogil=True)
def _class_floor(shape, mac, fetch, flat, offs, count, fpj, hold, coef, out):
    """out[q] = mac[q] + Σ_A min over A's chains h of (fpj[A, h]·fetch[A, q]
    + Σ_j coef[A, h, j]·table_{hold[A, h, j]}[q]), in `relaxed_floor`'s order of operations;
    table t's value at class (i0 … i4) is flat[Σ_axis offs[t, axis, i_axis]]. The largest
    axis is innermost, its points priced a row at a time (the same operations per point, so
    the same numbers: lenet5's conv2 on 3 levels, 29 x 29 x 50 x 100 classes, 80-128 ms
    against 236-326 ms nested point by point, equal bit for bit)."""
    inner = 0
    for axis in range(5):
        if shape[axis] > shape[inner]:
            inner = axis
    n = shape[inner]
    strides = np.empty(5, dtype=np.int64)
    step = 1
    for axis in range(4, -1, -1):
        strides[axis] = step
        step *= shape[axis]
    tables = offs.shape[0]
    vals = np.empty((tables, n))
    term, least, total = np.empty(n), np.empty(n), np.empty(n)
    at = np.empty(n, dtype=np.int64)
    for o in range(step // n):
        rest, qbase = o, 0
        base = np.zeros(tables, dtype=np.int64)
        for axis in range(4, -1, -1):
            if axis == inner:
                continue
            i = rest % shape[axis]
            rest //= shape[axis]
            qbase += i * strides[axis]
            for t in range(tables):
                base[t] += offs[t, axis, i]
        for t in range(tables):
            for i in range(n):
                vals[t, i] = flat[base[t] + offs[t, inner, i]]
        for i in range(n):
            at[i] = qbase + i * strides[inner]
            total[i] = 0.0
        for a in range(3):
            for i in range(n):
                least[i] = np.inf
            for h in range(count[a]):
                f = fpj[a, h]
                for i in range(n):
                    term[i] = f * fetch[a, at[i]]
                for j in range(hold.shape[2]):
                    t = hold[a, h, j]
                    if t < 0:
                        break
                    c = coef[a, h, j]
                    for i in range(n):
                        term[i] = term[i] + c * vals[t, i]
                for i in range(n):
                    least[i] = min(least[i], term[i])
            for i in range(n):
                total[i] = total[i] + least[i]
        for i in range(n):
            out[at[i]] = mac[at[i]] + total[i]

class ClassFloors:
    """The classes of a search's chains that its bound is taken over and the bound: per
    dimension chain → class (`ids`), the chains of each class (`members`), the MAC energy and
    datapath fetches per class, and per (array, role, capacity) the unit alone floor's least
    over each class's chains (`unit`). With three or more on-chip levels a class is the
    innermost role's (t_0, t_1, P) (MAC and fetches exact); with two, the outer role's
    (t_1, P), whose own floors are exact and the innermost role's bounded over t_0 | t_1
    (`_inner_bound`; fetches at the fewest datapath steps)."""

    def __init__(self, layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike) -> None:
        self.layer, self.precision = layer, precision
        self.per_dim, self.extent = per_dim, extent
        self.on_chip = len(hierarchy.levels) - 1
        self.gamma = 1 if self.on_chip >= 3 else 2  # the role whose class is the key
        self.ids = {d: chain_classes(per_dim[d], extent[d], self.gamma) for d in DIMS}
        self.shape = tuple(int(self.ids[d].max()) + 1 for d in DIMS)
        # per chain, an id of its (t_1, P); per class, that id (one per class)
        self.outer = {d: np.unique(np.stack(
            [per_dim[d][:, 1], -(-extent[d] // per_dim[d][:, -1]) * per_dim[d][:, -1]],
            axis=1), axis=0, return_inverse=True)[1].reshape(-1) for d in DIMS}
        self.outer_of = {}
        for d, n in zip(DIMS, self.shape, strict=True):
            self.outer_of[d] = np.zeros(n, dtype=np.int64)
            self.outer_of[d][self.ids[d]] = self.outer[d]
        order = {d: np.argsort(self.ids[d], kind="stable") for d in DIMS}
        counts = {d: np.bincount(self.ids[d], minlength=n) for d, n in zip(DIMS, self.shape,
                                                                          strict=True)}
        self.members = {d: (order[d], np.concatenate(([0], np.cumsum(counts[d])[:-1])),
                            counts[d]) for d in DIMS}
        first = {d: order[d][self.members[d][1]] for d in DIMS}  # a chain of each class
        self.mult = functools.reduce(np.multiply.outer, [counts[d] for d in DIMS]).ravel()
        self.grid = {d: ([t.reshape(_along(axis)) for t in tiles], p.reshape(_along(axis)))
                     for axis, (d, (tiles, p)) in
                     enumerate(flat_grid(per_dim, extent, first).items())}
        # two levels: fetches at t_0 = t_1, the fewest steps along each dimension (t | t_1:
        # ⌈(t_1/t)·t/u⌉ ≤ (t_1/t)·⌈t/u⌉), so the least fetches over the class's chains
        grid = self.grid if self.gamma == 1 else self._at_t0({d: self.grid[d][0][1] for d in DIMS})
        mac, fetched, outputs = _datapath_side(layer, hierarchy, grid)
        self.mac = np.broadcast_to(mac, self.shape).ravel()
        self.fetch = np.stack([np.broadcast_to(side_cost(a, fetched[a], 1.0, outputs, precision),
                                               self.shape).ravel() for a in ARRAYS])
        self._unit: dict[tuple, tuple[np.ndarray, list[np.ndarray]]] = {}

    def _at_t0(self, t0: dict[str, np.ndarray]) -> dict:
        """The class grid with t_0 replaced per dimension (t_1 and P kept)."""
        return {d: ([t0[d].reshape(_along(axis)).astype(float)] + tiles[1:], p)
                for axis, (d, (tiles, p)) in enumerate(self.grid.items())}

    @staticmethod
    def applies(tables: AloneTables) -> bool:
        """Two or more on-chip levels, the floors of every role taken over classes tabled
        (two levels: the outer role's, whose classes are the key), and few enough classes."""
        if tables.on_chip < 2:
            return False
        key = 1 if tables.on_chip >= 3 else 2
        if any(g not in tables.ids for g in range(key, tables.on_chip + 1)):
            return False
        return math.prod(len(np.unique(tables.ids[key][d])) for d in DIMS) <= CLASS_LIMIT

    def _inner_bound(self, tables: AloneTables, array: str, holder: int) -> np.ndarray:
        """Two levels: per class (t_1, P), a lower bound on the innermost level's unit alone
        floor at every t_0 | t_1: each alone code's energy with its t_0 extents at t_1 (moved
        never grows with a block's extent) where its footprint with them at 1 (never larger)
        fits."""
        hi = LevelBlocks(self.layer, self._at_t0({d: self.grid[d][0][1] for d in DIMS}), 1,
                         self.on_chip, {array: 1.0}, self.precision,
                         unrolled_dims(tables.hierarchy.datapath))
        lo = LevelBlocks(self.layer, self._at_t0({d: np.ones(self.shape[a], dtype=np.int64)
                                                  for a, d in enumerate(DIMS)}), 1,
                         self.on_chip, {array: 1.0}, self.precision,
                         unrolled_dims(tables.hierarchy.datapath))
        capacity = tables.hierarchy.levels[holder].bytes_for(array)
        best = np.inf
        for prefix in alone_prefixes(array, True, lo.lanes):
            interrupt.check()
            best = np.where(lo.block(array, prefix)[1] <= capacity,
                            np.minimum(best, hi.block(array, prefix)[0]), best)
        return np.broadcast_to(best, self.shape)

    def unit(self, tables: AloneTables, array: str, holder: int
             ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The unit alone floor of `array` at `holder` (`tables`: its role order's), at most
        its least over each class's chains, and per axis the index of each class in it. The
        key role's table is per class already; an outer role's (per class of its (t_{γ−1},
        t_γ, P)) is taken to its least per (t_1, P) of the chains, one axis at a time (each
        class has one (t_1, P)); two levels' innermost role's is `_inner_bound`."""
        gamma = tables.on_chip + 1 - holder
        key = (gamma, tables.hierarchy.levels[holder].bytes_for(array), array)
        if key not in self._unit:
            if gamma < self.gamma:
                table = np.ascontiguousarray(self._inner_bound(tables, array, holder))
                self._unit[key] = table, [np.arange(n, dtype=np.int64) for n in self.shape]
                return self._unit[key]
            table = tables._table(array, holder)
            maps = []
            for axis, d in enumerate(DIMS):
                if table.shape[axis] == 1:
                    maps.append(np.zeros(self.shape[axis], dtype=np.int64))
                elif gamma == self.gamma:
                    maps.append(np.arange(self.shape[axis], dtype=np.int64))
                else:
                    pairs = np.unique(np.stack([self.outer[d], tables.ids[gamma][d]], axis=1),
                                      axis=0)
                    starts = np.nonzero(np.diff(pairs[:, 0], prepend=-1))[0]
                    table = np.minimum.reduceat(np.take(table, pairs[:, 1], axis=axis),
                                                starts, axis=axis)
                    maps.append(self.outer_of[d])
            self._unit[key] = np.ascontiguousarray(table), maps
        return self._unit[key]

    def floor(self, tables: AloneTables, pj_bit: np.ndarray,
              patterns: list[Pattern]) -> np.ndarray:
        """Per class combination (flat), a lower bound (pJ, one group) on every fitting
        blocking of S at any point of it under any of the patterns (`tables`, `pj_bit`: their
        role order's): `relaxed_floor`'s terms, each at its least over the class's chains,
        summed in its order (float sums of non-negative terms are monotone, so the bound is at
        most the floor of each point, rounding included)."""
        chains = [sorted({p[a] for p in patterns}) for a in range(len(ARRAYS))]
        used = sorted({(a, k) for a in range(len(ARRAYS)) for c in chains[a] for k in c})
        index = {key: t for t, key in enumerate(used)}
        parts, offs, start = [], np.zeros((len(used), len(DIMS), max(self.shape)),
                                          dtype=np.int64), 0
        for t, (a, k) in enumerate(used):
            table, maps = self.unit(tables, ARRAYS[a], k)
            strides = np.array(table.strides) // table.itemsize
            for axis, m in enumerate(maps):
                offs[t, axis, :len(m)] = m * strides[axis] + (start if axis == 0 else 0)
            parts.append(table.ravel())
            start += table.size
        most = max(len(c) for c in chains)
        deep = max([len(c) for cs in chains for c in cs] + [1])
        fpj = np.zeros((len(ARRAYS), most))
        hold = np.full((len(ARRAYS), most, deep), -1, dtype=np.int64)
        coef = np.zeros((len(ARRAYS), most, deep))
        for a, cs in enumerate(chains):
            for h, chain in enumerate(cs):
                fpj[a, h] = pj_bit[chain[-1] if chain else 0, a]
                for j, (source, k) in enumerate(zip((0,) + chain, chain, strict=False)):
                    hold[a, h, j] = index[a, k]
                    coef[a, h, j] = pj_bit[source, a] + pj_bit[k, a]
        out = np.empty(math.prod(self.shape))
        interrupt.check()
        _class_floor(np.array(self.shape, dtype=np.int64), self.mac, self.fetch,
                     np.concatenate(parts) if parts else np.zeros(1), offs,
                     np.array([len(c) for c in chains], dtype=np.int64), fpj, hold, coef, out)
        return out

    def points(self, flat: np.ndarray) -> np.ndarray:
        """Tile points (chain combinations) of each class combination `flat`."""
        return self.mult[flat]

    def expand(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The chain index per dimension of every point of the class combinations `flat`."""
        at = np.unravel_index(flat, self.shape)
        sizes = [self.members[d][2][c] for d, c in zip(DIMS, at, strict=True)]
        per = np.prod(np.stack(sizes), axis=0)
        owner = np.repeat(np.arange(len(flat)), per)
        offset = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
        out = {}
        for d, c, size in zip(reversed(DIMS), reversed(at), reversed(sizes), strict=True):
            order, start, _ = self.members[d]
            n = size[owner]
            out[d] = order[start[c[owner]] + offset % n]
            offset = offset // n
        return out


def search_classes(layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                   classes: dict, tables: dict, pj_bit: np.ndarray, precision: PrecisionLike,
                   patterns: dict[Pattern, float], best: float, floors: ClassFloors,
                   alone: AloneTables, mirror: bool, share: tuple[int, int],
                   stage: tuple[int, int], memory: InnerMemory | None = None):
    """S's part under one role order, class combinations lowest bound first (`ClassFloors`):
    (energy pJ, where) of its least blocking below `best`, or None. `patterns`: each holder
    pattern's floor (pJ, `pattern_floor`); those below the best energy found are searched, and
    once a lower best leaves at most 3/4 of the patterns the bound was taken over, it is taken
    again over those (a least over fewer holder chains: higher). With no best energy yet, the
    first pattern alone is priced first, at the classes of lowest bound holding about SEED
    points (found by a partition, not a sort of all), for a start. `share` (k, n): only the
    class combinations k, k + n, … (flat index); mirror: only points whose X chain index is
    at most their Y chain index (lemma 5);
    `memory`: the innermost level's bounds kept from other searches of the layer (one slice:
    `search_memory`), raising its floor and noted here as `search_points._price` does."""
    live = [p for p, f in patterns.items() if f < best]
    if not live:
        return None
    interrupt.progress(stage[0] / stage[1])
    bound = floors.floor(alone, pj_bit, live) * layer.groups
    taken = len(live)
    todo = np.nonzero(bound < best)[0]
    todo = todo[todo % share[1] == share[0]]
    found, total = None, max(1, len(todo))
    if len(todo) and not math.isfinite(best):  # a start: the first pattern (R's holders
        # under the identity) at the classes of lowest bound holding about SEED points
        m = max(1, min(len(todo), SEED * len(todo) // max(1, int(floors.points(todo).sum()))))
        first = np.argpartition(bound[todo], m - 1)[:m] if m < len(todo) else \
            np.arange(len(todo))
        found = _price_classes(layer, hierarchy, per_dim, extent, classes, tables, pj_bit,
                               precision, live[:1], best, alone, mirror, todo[first], floors,
                               memory)
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
        j = max(i + 1, int(np.searchsorted(ends, (ends[i - 1] if i else 0) + BATCH)))
        batch = todo[i:j]
        i = j
        priced = _price_classes(layer, hierarchy, per_dim, extent, classes, tables, pj_bit,
                                precision, live, best, alone, mirror,
                                batch[bound[batch] < best], floors, memory)
        if priced is not None:
            found, best = priced, priced[0]
    return found


def _price_classes(layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                   classes: dict, tables: dict, pj_bit: np.ndarray, precision: PrecisionLike,
                   live: list[Pattern], best: float, alone: AloneTables, mirror: bool,
                   batch: np.ndarray, floors: ClassFloors, memory: InnerMemory | None = None):
    """Every point of the class combinations `batch` whose `relaxed_floor` (the unit alone
    floors gathered from the tables) is below `best`, priced as a slice's points are
    (`search_points._price`)."""
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
            table = alone._table(array, holder)
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
    return _price(layer, hierarchy, grid, rows, classes, tables, per_dim, extent, pj_bit,
                  precision, live, slice(0, len(per_dim["X"])), chain_at, best, side, unit,
                  memory, lift=False)


def _points_side(layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike, chain_at: dict) -> tuple[dict, tuple]:
    """The flat grid of the points `chain_at` (all along axis 0) and, on it, their MAC energy,
    datapath fetches at unit pJ/bit and smallest blocks (`search_points._price`'s `side`)."""
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    grid = flat_grid(per_dim, extent, chain_at)
    mac, fetched, outputs = _datapath_side(layer, hierarchy, grid)
    return grid, (mac, {a: side_cost(a, fetched[a], 1.0, outputs, precision) for a in ARRAYS},
                  _smallest(layer, grid, len(hierarchy.levels) - 1, width))


__all__ = ["CLASS_LIMIT", "ClassFloors", "flat_grid", "search_classes"]
