"""Unit alone floors (`search.bounds.alone_floor`; docs/search.md, "Shared work") priced once
per class of chains instead of once per slice of a search sliced into many parts, or per
point of a one-slice search: an on-chip level playing group γ sees of a dimension's chain
only (t_{γ−1}, t_γ, P) (`LevelBlocks` reads nothing else), so its floor for an array is a
function of the five dimensions' classes (`search.chains.chain_classes`). A table over every
class combination is priced the first time a slice needs it and gathered at each slice's
points (or lemma 5's (X, Y) chain pairs): the same numbers as pricing there, element for
element. The table is priced compiled (`alone_grid`: every count a product of exact integer
factors per dimension, the energy `side_cost`'s expression), bit for bit `alone_floor`'s
numpy pricing of the same tiles; lenet5's conv2 on 3 levels, the innermost role's inputs
over 29 x 29 x 50 x 100 classes: 35 ms against 667 ms."""

from __future__ import annotations

import math

import numba
import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.calls import alone_tables
from workbench.hierarchy.search.chains import chain_classes
from workbench.hierarchy.search.kernel import O, W, kernel_extent, window
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import lane_count
from workbench.hierarchy.search.roles import Pattern
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU


class AloneTables:
    """Per (array, holder level) the unit alone floor per class combination (pJ at 1 pJ/bit,
    one group; inf: no block fits), for the levels whose class grid is small enough to keep
    (TABLE_LIMIT) and SHARE × smaller than the layer's tile grid; the others are priced per
    slice as before. `kept` (`SearchMemo.tables`): per (layer, levels, γ, the level's
    capacity for the array, array, widths, lanes), the tables of other searches (another role
    order seeing a level of the same size in the same role, or an edit keeping a level's size
    in the app); at 512 MB, lenet5 on 3 on-chip levels with its L1 edited to 16 KB in the app
    took 13.0 s, at 256 MB 17.3 s (tables evicted, priced again)."""

    def __init__(self, layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike, kept: ByteLRU) -> None:
        self.kept = kept
        self.layer, self.hierarchy, self.precision = layer, hierarchy, precision
        self.per_dim, self.extent = per_dim, extent
        self.on_chip = len(hierarchy.levels) - 1
        points = math.prod(len(per_dim[d]) for d in DIMS)
        self.ids: dict[int, dict[str, np.ndarray]] = {}   # per γ, per dimension: chain → class
        self.first: dict[int, dict[str, np.ndarray]] = {}  # per γ: a chain of every class
        for gamma in range(1, self.on_chip + 1):
            ids = {d: chain_classes(per_dim[d], extent[d], gamma) for d in DIMS}
            first = {d: np.unique(ids[d], return_index=True)[1] for d in DIMS}
            size = math.prod(len(first[d]) for d in DIMS)
            if size <= tuning.TABLE_LIMIT and tuning.SHARE * size <= points:
                self.ids[gamma], self.first[gamma] = ids, first
        self._tables: dict[tuple[str, int], np.ndarray] = {}

    def fill(self, unit: dict, patterns: list[Pattern], chains: dict[str, np.ndarray],
             paired: bool = False) -> None:
        """Put in `unit` (`search.bounds.chain_terms`' dict) each tabled (array, holder) floor
        the patterns' chains need, at the slice whose chain indices per dimension (axes X, Y,
        C, M, N) are `chains`: the table taken along one axis at a time, those it shrinks
        first (a slice has one X chain), axes it does not vary along left at length 1.
        paired: `chains` X and Y are (X, Y) chain pairs, laid along axis 0 (lemma 5's grid,
        `search.grid.grid_of`); axis 1 is left at length 1."""
        for a_idx, array in enumerate(ARRAYS):
            for holder in {k for p in patterns for k in p[a_idx]}:
                gamma = self.on_chip + 1 - holder
                if (array, holder) in unit or gamma not in self.ids:
                    continue
                interrupt.check()  # a safe point: a table is stored whole (`interrupt`)
                out = self.table(array, holder)
                ids = self.ids[gamma]
                axes = list(enumerate(DIMS))
                if paired:
                    axes = axes[2:]
                    if out.shape[0] > 1 or out.shape[1] > 1:
                        at = [ids[d][chains[d]] if out.shape[axis] > 1 else
                              np.zeros(len(chains[d]), dtype=np.intp)
                              for axis, d in enumerate(("X", "Y"))]
                        out = out[at[0], at[1]][:, None]
                takes = sorted((len(chains[d]) / out.shape[axis], axis, d)
                               for axis, d in axes if out.shape[axis] > 1)
                for _, axis, d in takes:
                    out = np.take(out, ids[d][chains[d]], axis=axis)
                unit[array, holder] = out

    def table(self, array: str, holder: int) -> np.ndarray:
        key = (array, holder)
        gamma = self.on_chip + 1 - holder
        prec = self.precision
        kept = (self.layer, self.on_chip, gamma, self.hierarchy.levels[holder].bytes_for(array),
                array, (prec.inputs, prec.weights, prec.outputs, prec.partial_sums),
                unrolled_dims(self.hierarchy.datapath))
        if key not in self._tables and (found := self.kept.get(kept)) is not None:
            self._tables[key] = found
        if key not in self._tables:
            chains = {d: self.per_dim[d][self.first[gamma][d]] for d in DIMS}
            floor = unit_alone_grid(self.layer, chains, self.extent, gamma, self.on_chip,
                                    self.hierarchy.levels[holder].bytes_for(array), array,
                                    self.precision, unrolled_dims(self.hierarchy.datapath))
            self._tables[key] = self.kept.put(kept, floor)
        return self._tables[key]


@numba.njit(cache=True, nogil=True, inline="always")
def _factor(kind, d, c, stride, kernel):
    """Dimension d's factor of a block's elements (eq. 1) at extent c along it, kernel window
    `kernel` along its kernel loop (X, Y: the input's window, I only)."""
    if kind == W:
        return c if d == 2 or d == 3 else 1.0
    if kind == O:
        return 1.0 if d == 2 else c
    if d == 0 or d == 1:
        return window(c, stride, kernel)
    return 1.0 if d == 3 else c


@numba.njit(cache=True, nogil=True)
def alone_grid(grid, table, cap, held):
    """Per point of a grid (grid: (lo, hi, step, p, sizes); axes X, Y, C, M, N; dimension d's
    t_{γ−1}, t_γ, a datapath step's min(u, t_{γ−1}), P at index i: lo[d, i], hi[d, i],
    step[d, i], p[d, i], i < sizes[d]), the least energy (pJ) over the codes (table: (which,
    kfull, kind, coef, width, bits, layer) as `search.kernel.best_fitting`'s) of a block whose
    buffer fits `cap` bytes alone (inf: none fits); the buffer is priced with t_{γ−1} and the
    step at held = (lo_held, step_held) (lo, step: the block's own; other values:
    `inner_bound_grid`).

    Every count is a product of per-dimension integer factors (elements: `_elements`' per
    dimension, refills P_d / c_d) and a code's constant (kernel windows), exact in any order,
    so each point's moved and buffer are `_price`'s, and its energy the same expression: the
    numbers of pricing each point (`LevelBlocks.block`), bit for bit. Dimensions are nested
    largest innermost; a code whose partial buffer (a product of factors ≥ 1) already exceeds
    `cap` is dropped for the points inside."""
    lo, hi, step, p, sizes = grid
    which, kfull, kind, coef, width, bits, layer = table
    lo_held, step_held = held
    nq = which.shape[0]
    kx_full, ky_full, sx, sy = layer[0], layer[1], layer[2], layer[3]
    out_bytes, psum_bytes = layer[4], layer[5]
    most = 1
    for d in range(5):
        most = max(most, sizes[d])
    moved_f = np.ones((5, nq, most))   # per dimension, code, index: moved's factor
    held_f = np.ones((5, nq, most))    # ... and the buffer's bytes' factor
    outs_f = np.ones((5, most))        # outputs' factor (P along N, M, Y, X)
    tiles = np.empty(4)
    for q in range(nq):
        kx = kx_full if kfull[q, 0] else 1.0
        ky = ky_full if kfull[q, 1] else 1.0
        bx, by = kx, ky
        if kfull[q, 2]:
            bx = kernel_extent(kfull[q, 3], kx_full, sx)
            by = kernel_extent(kfull[q, 4], ky_full, sy)
        for d in range(5):
            stride = sx if d == 0 else sy
            for i in range(sizes[d]):
                tiles[0], tiles[1], tiles[2], tiles[3] = lo[d, i], hi[d, i], 1.0, step[d, i]
                c = tiles[which[q, d]]
                moved_f[d, q, i] = _factor(kind[q], d, c, stride, kx if d == 0 else ky) * \
                    (p[d, i] / c)
                tiles[0], tiles[3] = lo_held[d, i], step_held[d, i]
                cb = tiles[which[q, 5 + d]] if kfull[q, 2] else tiles[which[q, d]]
                held_f[d, q, i] = _factor(kind[q], d, cb, stride, bx if d == 0 else by)
        # the windows' constants, on dimension X's factors (any order: exact integers)
        for i in range(sizes[0]):
            moved_f[0, q, i] *= ((kx * ky) if kind[q] == W else 1.0) * \
                ((kx_full / kx) * (ky_full / ky))
            held_f[0, q, i] *= ((bx * by) if kind[q] == W else 1.0) * width[q]
    for d in range(5):
        for i in range(sizes[d]):
            outs_f[d, i] = 1.0 if d == 2 else p[d, i]
    order = np.argsort(sizes, kind="mergesort")  # nesting: the largest dimension innermost
    stride_of = np.empty(5, dtype=np.int64)
    step = 1
    for d in range(4, -1, -1):
        stride_of[d] = step
        step *= sizes[d]
    best = np.full(step, np.inf)
    row, outs = np.empty(most), np.empty(most)  # the innermost dimension's points
    pm = np.ones((6, nq))
    ph = np.ones((6, nq))
    po = np.ones(6)
    live = np.empty((6, nq), dtype=np.int64)  # per depth: the codes still fitting
    count = np.zeros(6, dtype=np.int64)
    count[0] = nq
    for q in range(nq):
        live[0, q] = q
    at = np.zeros(5, dtype=np.int64)   # index per depth
    base = np.zeros(6, dtype=np.int64)  # flat offset per depth
    depth = 0
    while depth >= 0:
        if depth == 4:  # the innermost dimension: every point along it, code by code
            d = order[4]
            for i in range(sizes[d]):
                row[i] = np.inf
                outs[i] = po[4] * outs_f[d, i]
            for k in range(count[4]):
                q = live[4, k]
                h0, m0, c0, b0 = ph[4, q], pm[4, q], coef[q], bits[q]
                if kind[q] == O:
                    for i in range(sizes[d]):
                        moved = m0 * moved_f[d, q, i]
                        e = c0 * (outs[i] * 8 * out_bytes + 2 * (moved - outs[i]) * 8 *
                                  psum_bytes)
                        if h0 * held_f[d, q, i] <= cap and e < row[i]:
                            row[i] = e
                else:
                    for i in range(sizes[d]):
                        e = c0 * (m0 * moved_f[d, q, i]) * b0
                        if h0 * held_f[d, q, i] <= cap and e < row[i]:
                            row[i] = e
            for i in range(sizes[d]):
                best[base[4] + i * stride_of[d]] = row[i]
            depth -= 1
            if depth >= 0:
                at[depth] += 1
            continue
        d = order[depth]
        i = at[depth]
        if i >= sizes[d]:
            at[depth] = 0
            depth -= 1
            if depth >= 0:
                at[depth] += 1
            continue
        n = 0
        for k in range(count[depth]):
            q = live[depth, k]
            h = ph[depth, q] * held_f[d, q, i]
            if h <= cap:
                ph[depth + 1, q] = h
                pm[depth + 1, q] = pm[depth, q] * moved_f[d, q, i]
                live[depth + 1, n] = q
                n += 1
        count[depth + 1] = n
        po[depth + 1] = po[depth] * outs_f[d, i]
        base[depth + 1] = base[depth] + i * stride_of[d]
        depth += 1
    return best.reshape((sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]))

def unit_alone_grid(layer: ConvLayer, chains: dict[str, np.ndarray], extent: dict, gamma: int,
                    on_chip: int, level_bytes: float, array: str, precision: PrecisionLike,
                    lanes: frozenset[str]) -> np.ndarray:
    """`search.bounds.alone_floor` at 1 pJ/bit over the grid of the chains given per dimension
    (axes X, Y, C, M, N; a level playing group γ), compiled (`alone_grid`): per grid point the
    least energy (pJ, one group) of the array's transfer with its block fitting `level_bytes`
    alone (inf: none fits), the same numbers."""
    sizes = np.array([len(chains[d]) for d in DIMS], dtype=np.int64)
    lo, hi, p = (np.zeros((len(DIMS), int(sizes.max()))) for _ in range(3))
    for k, d in enumerate(DIMS):
        tiles = chains[d].astype(float)
        p[k, :sizes[k]] = -(-extent[d] // chains[d][:, -1]) * chains[d][:, -1]
        lo[k, :sizes[k]] = tiles[:, gamma - 1]
        hi[k, :sizes[k]] = tiles[:, gamma] if gamma < on_chip else p[k, :sizes[k]]
    step = np.minimum(np.array([[lane_count(lanes, d)] for d in DIMS], dtype=float), lo)
    return _alone_grid(layer, (lo, hi, step, p, sizes), (lo, step), level_bytes, array,
                       precision, (lanes, gamma == 1))


def inner_bound_grid(layer: ConvLayer, t1: dict[str, np.ndarray], padded: dict[str, np.ndarray],
                     level_bytes: float, array: str, precision: PrecisionLike,
                     lanes: frozenset[str]) -> np.ndarray:
    """Two on-chip levels, the innermost's unit alone floor bounded over every t_0 | t_1 on
    the grid of t_1 and P given per dimension (axes X, Y, C, M, N): per point the least energy
    of an alone code with its t_0 extents at t_1 (moved never grows with a block's extent)
    whose buffer with them at 1 (never larger) fits `level_bytes` (inf: none), compiled
    (`alone_grid`): the numbers of pricing those blocks with `LevelBlocks.block`."""
    sizes = np.array([len(t1[d]) for d in DIMS], dtype=np.int64)
    hi, p = np.ones((len(DIMS), int(sizes.max()))), np.ones((len(DIMS), int(sizes.max())))
    for k, d in enumerate(DIMS):
        hi[k, :sizes[k]], p[k, :sizes[k]] = t1[d], padded[d]
    units = np.array([[lane_count(lanes, d)] for d in DIMS], dtype=float)
    ones = np.ones_like(hi)  # every argument (5, most): the kernel reads [d, i] unchecked
    return _alone_grid(layer, (hi, hi, np.minimum(units, hi), p, sizes),
                       (ones, np.minimum(units, ones)), level_bytes, array, precision,
                       (lanes, True))


def _alone_grid(layer: ConvLayer, grid: tuple, held: tuple, level_bytes: float, array: str,
                precision: PrecisionLike, lanes_inner: tuple[frozenset[str], bool]) -> np.ndarray:
    """`alone_grid` with the array's alone codes and widths (1 pJ/bit); grid (lo, hi, step, p,
    sizes), held (lo_held, step_held) as its own; lanes_inner: the datapath's unrolled
    dimensions and whether the level is the innermost."""
    lo, hi, step, p, _ = grid
    if len({np.shape(a) for a in (lo, hi, step, p, *held)}) > 1:
        raise ValueError("alone_grid's tile arrays must share one shape (read unchecked)")
    which, kfull, kind = alone_tables(array, lanes_inner[1], lanes_inner[0])
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}[array]
    n = len(kind)
    table = (which, kfull, kind, np.ones(n), np.full(n, width, dtype=float),
             np.full(n, 8.0 * width), np.array([layer.Kx, layer.Ky, layer.Sx, layer.Sy,
                                                precision.outputs, precision.partial_sums],
                                               dtype=float))
    return alone_grid(grid, table, float(level_bytes), held)


__all__ = ["AloneTables", "alone_grid", "inner_bound_grid",
           "unit_alone_grid"]
