"""Lower bounds per class combination of tile chains, for `search_classes` (proof in
docs/search.md, "Class floors"): `relaxed_floor`'s terms each at its
least over a class's chains (`ClassFloors.floor`, summed by a compiled kernel), and with two
on-chip levels, per holder pattern, the same with the outer role's own best fitting placement
(`ClassFloors.outer_floor`: its blocks see only the class)."""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.alone import AloneTables, inner_bound_grid
from workbench.hierarchy.search.chains import chain_classes
from workbench.hierarchy.search.context import SearchMemo, Space
from workbench.hierarchy.search.levels import datapath_side, level_table
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import side_cost
from workbench.hierarchy.search.roles import Pattern, variant
from workbench.layers.spec import ConvLayer


def _along(axis: int) -> tuple[int, ...]:
    shape = [1] * len(DIMS)
    shape[axis] = -1
    return tuple(shape)


def flat_grid(per_dim: dict, extent: dict, chain_at: dict[str, np.ndarray]) -> dict:
    """Per dimension: tiles t[g] and padded extent P of the points whose chain index per
    dimension is `chain_at` (one point per row, all along axis 0), as `search.grid.grid_of`."""
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
    (`_inner_bound`; fetches at the fewest datapath steps). `memo`: what searches keep for
    later ones (the inner-bound tables, the outer levels' tables)."""

    def __init__(self, layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike, memo: SearchMemo) -> None:
        self.memo = memo
        self.layer, self.precision = layer, precision
        self.per_dim, self.extent = per_dim, extent
        self.on_chip = len(hierarchy.levels) - 1
        self.gamma = 1 if self.on_chip >= 3 else 2  # the role whose class is the key
        self.ids = {d: chain_classes(per_dim[d], extent[d], self.gamma) for d in DIMS}
        self.classes = {d: {self.gamma: self.ids[d]} for d in DIMS}  # `level_table`'s
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
        mac, fetched, outputs = datapath_side(layer, hierarchy, grid)
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
        return math.prod(len(np.unique(tables.ids[key][d])) for d in DIMS) <= tuning.CLASS_LIMIT

    def _inner_bound(self, tables: AloneTables, array: str, holder: int) -> np.ndarray:
        """Two levels: per class (t_1, P), a lower bound on the innermost level's unit alone
        floor at every t_0 | t_1 (`search.alone.inner_bound_grid`: each alone code's energy
        with its t_0 extents at t_1 where its footprint with them at 1 fits)."""
        interrupt.check()
        return inner_bound_grid(self.layer, {d: np.ravel(self.grid[d][0][1]) for d in DIMS},
                                {d: np.ravel(self.grid[d][1]) for d in DIMS},
                                tables.hierarchy.levels[holder].bytes_for(array), array,
                                self.precision, unrolled_dims(tables.hierarchy.datapath))

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
            if gamma < self.gamma:  # kept for other searches, as the alone tables are
                prec = self.precision
                kept = ("inner bound", self.layer, self.on_chip, key[1], array, (
                    prec.inputs, prec.weights, prec.outputs, prec.partial_sums),
                    unrolled_dims(tables.hierarchy.datapath))
                table = self.memo.tables.get(kept)
                if table is None:
                    table = self.memo.tables.put(kept, np.ascontiguousarray(
                        self._inner_bound(tables, array, holder)))
                self._unit[key] = table, [np.arange(n, dtype=np.int64) for n in self.shape]
                return self._unit[key]
            table = tables.table(array, holder)
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

    def outer_floor(self, tables: dict, alone: AloneTables, pj_bit: np.ndarray,
                    patterns: list[Pattern], flat: np.ndarray) -> np.ndarray:
        """Two levels: per class combination `flat`, a lower bound (pJ, one group) on every
        fitting blocking at any point of it under any of the patterns, at least `floor`'s:
        per pattern MAC + datapath fetches (the fewest steps) + the outer role's best fitting
        placement (exact: its blocks are c ∈ {t_1, P}, the class; `level_table`, kept in
        `tables` for the points priced later; holding one array, its alone floor, the same
        least) + the innermost role's held arrays'
        `_inner_bound`s, summed in `search.points.price_points`'s order (each term at most the
        point's): one row per pattern."""
        hierarchy = alone.hierarchy
        at = np.unravel_index(flat, self.shape)
        out = np.empty((len(patterns), len(flat)))
        outer: dict[tuple, np.ndarray] = {}
        for row, pattern in enumerate(patterns):
            held_by = variant(pattern, 1)
            if held_by not in outer and len(held_by[0]) < 2:  # none or one: its alone floor
                outer[held_by] = sum((pj_bit[0, ARRAYS.index(a)] + pj_bit[1, ARRAYS.index(a)])
                                     * self._unit_at(alone, a, 1, at) for a in held_by[0])
            if held_by not in outer:
                key = (1, held_by, None)
                space = Space(self.layer, hierarchy, self.per_dim, self.extent, self.classes,
                              pj_bit, self.precision, self.memo)
                tables[key] = level_table(space, 1, None, pattern, tables.get(key), flat)
                outer[held_by] = tables[key][0][flat]
            bound = self.mac[flat]
            for a_idx, chain in enumerate(pattern):
                bound = bound + pj_bit[chain[-1] if chain else 0, a_idx] * \
                    self.fetch[a_idx, flat]
            bound = bound + outer[held_by]
            inner = np.zeros(len(flat))
            for array, src in zip(*variant(pattern, 2), strict=True):
                a_idx = ARRAYS.index(array)
                inner = inner + (pj_bit[src, a_idx] + pj_bit[2, a_idx]) * \
                    self._unit_at(alone, array, 2, at)
            out[row] = bound + inner
        return out

    def _unit_at(self, tables: AloneTables, array: str, holder: int, at: tuple) -> np.ndarray:
        """`unit`'s table at the class combinations `at` (an index array per axis)."""
        table, maps = self.unit(tables, array, holder)
        return table[tuple(m[i] for m, i in zip(maps, at, strict=True))]

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


__all__ = ["ClassFloors", "flat_grid"]
