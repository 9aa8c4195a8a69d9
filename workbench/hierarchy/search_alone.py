"""Unit alone floors (`search_bounds.alone_floor`) priced once per class of chains instead of
once per slice of a search sliced into many parts, or per point of a one-slice search: an
on-chip level playing group γ sees of a dimension's chain only (t_{γ−1}, t_γ, P)
(`LevelBlocks` reads nothing else), so its floor for an array is a function of the five
dimensions' classes (`search_grid.chain_classes`). A table over every class combination is
priced the first time a slice needs it and gathered at each slice's points (or lemma 5's (X,
Y) chain pairs): the same numbers as pricing there, element for element (the same operations
on the same tiles)."""

from __future__ import annotations

import math

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search_bounds import alone_floor
from workbench.hierarchy.search_grid import chain_classes, grid_of
from workbench.hierarchy.search_space import LevelBlocks, Pattern, unrolled_dims
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU

TABLE_LIMIT = 1 << 23  # class combinations up to which a level's table is priced (64 MB)
SHARE = 4              # ... and only when the slices' points are at least SHARE × as many
# per (layer, levels, γ, the level's capacity for the array, array, widths, lanes): the tables
# of other searches (another role order seeing a level of the same size in the same role, or
# an edit keeping a level's size in the app); 512 MB: lenet5 on 3 on-chip levels, its L1 edited
# to 16 KB in the app, takes 13.0 s, 17.3 s at 256 MB (tables evicted, priced again)
_TABLES = ByteLRU(512 * 2**20, lambda a: a.nbytes)


class AloneTables:
    """Per (array, holder level) the unit alone floor per class combination (pJ at 1 pJ/bit,
    one group; inf: no block fits), for the levels whose class grid is small enough to keep
    (TABLE_LIMIT) and SHARE × smaller than the layer's tile grid; the others are priced per
    slice as before."""

    def __init__(self, layer: ConvLayer, hierarchy: Hierarchy, per_dim: dict, extent: dict,
                 precision: PrecisionLike) -> None:
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
            if size <= TABLE_LIMIT and SHARE * size <= points:
                self.ids[gamma], self.first[gamma] = ids, first
        self._tables: dict[tuple[str, int], np.ndarray] = {}

    def fill(self, unit: dict, patterns: list[Pattern], chains: dict[str, np.ndarray],
             paired: bool = False) -> None:
        """Put in `unit` (`search_bounds.chain_terms`' dict) each tabled (array, holder) floor
        the patterns' chains need, at the slice whose chain indices per dimension (axes X, Y,
        C, M, N) are `chains`: the table taken along one axis at a time, those it shrinks
        first (a slice has one X chain), axes it does not vary along left at length 1.
        paired: `chains` X and Y are (X, Y) chain pairs, laid along axis 0 (lemma 5's grid,
        `search_grid.grid_of`); axis 1 is left at length 1."""
        for a_idx, array in enumerate(ARRAYS):
            for holder in {k for p in patterns for k in p[a_idx]}:
                gamma = self.on_chip + 1 - holder
                if (array, holder) in unit or gamma not in self.ids:
                    continue
                interrupt.check()  # a safe point: a table is stored whole (`interrupt`)
                out = self._table(array, holder)
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

    def _table(self, array: str, holder: int) -> np.ndarray:
        key = (array, holder)
        gamma = self.on_chip + 1 - holder
        prec = self.precision
        kept = (self.layer, self.on_chip, gamma, self.hierarchy.levels[holder].bytes_for(array),
                array, (prec.inputs, prec.weights, prec.outputs, prec.partial_sums),
                unrolled_dims(self.hierarchy.datapath))
        if key not in self._tables and (found := _TABLES.get(kept)) is not None:
            self._tables[key] = found
        if key not in self._tables:
            grid = grid_of({d: self.per_dim[d][self.first[gamma][d]] for d in DIMS},
                           self.extent)
            blocks = LevelBlocks(self.layer, grid, gamma, self.on_chip, {array: 1.0},
                                 self.precision, unrolled_dims(self.hierarchy.datapath))
            floor = alone_floor(self.hierarchy.levels[holder].bytes_for(array), blocks, array)
            self._tables[key] = _TABLES.put(kept, np.asarray(floor).reshape(
                (1,) * (len(DIMS) - np.ndim(floor)) + np.shape(floor)))
        return self._tables[key]


__all__ = ["SHARE", "TABLE_LIMIT", "AloneTables"]
