"""The tile points `search` prices: the chains of each dimension (`search.chains`) laid out as a
broadcasting grid over the axes X, Y, C, M, N (or, with lemma 5, (X, Y) chain pairs along
axis 0: docs/search.md, "Lemma 5: mirror"), and gathered at index arrays."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from workbench.hierarchy.blocking import DIMS
from workbench.hierarchy.levels import Hierarchy
from workbench.layers.spec import ConvLayer


def mirrored(layer: ConvLayer, hierarchy: Hierarchy) -> bool:
    """Does lemma 5 hold: layer and datapath alike along X and Y?"""
    dp = hierarchy.datapath
    lanes = (1, 1) if dp is None else (dp.lanes("X"), dp.lanes("Y"))
    return (layer.Ox, layer.Kx, layer.Sx) == (layer.Oy, layer.Ky, layer.Sy) and \
        lanes[0] == lanes[1]



def chains_at(rows: tuple, xs: slice, ys: slice, pairs) -> dict[str, np.ndarray]:
    """The chain index per dimension of the grid points `rows` (pairs: the grid's axis 0
    runs over (X, Y) chain pairs, axis 1 is unused)."""
    at = {"C": rows[2], "M": rows[3], "N": rows[4]}
    if pairs is None:
        return {"X": xs.start + rows[0], "Y": ys.start + rows[1], **at}
    return {"X": pairs[0][rows[0]], "Y": pairs[1][rows[0]], **at}



def grid_shape(grid: dict) -> tuple[int, ...]:
    return np.broadcast_shapes(*(grid[d][1].shape for d in DIMS))



def at_rows(values, rows: tuple) -> np.ndarray:
    """A broadcasting grid array's values at the points `rows` (one index array per axis),
    indexed only along its own non-unit axes (a tile array is then a one-axis take)."""
    values = np.asarray(values)
    values = values.reshape((1,) * (len(rows) - values.ndim) + values.shape)
    own = [axis for axis, size in enumerate(values.shape) if size > 1]
    if not own:
        return np.broadcast_to(values.reshape(()), rows[0].shape)
    return values[tuple(rows[axis] if axis in own else 0 for axis in range(len(rows)))]


def gather(grid: dict, rows: tuple) -> dict:
    """The grid's points at index arrays `rows` (axes X, Y, C, M, N) as flat float arrays."""
    return {d: ([at_rows(t, rows) for t in tiles], at_rows(p, rows))
            for d, (tiles, p) in grid.items()}



class LazyPoints(Mapping):
    """The grid's points at `rows` as a flat grid (`gather`), gathered when first read;
    `take(idx)` gathers only the points idx of them."""

    def __init__(self, grid: dict, rows: tuple) -> None:
        self.grid, self.rows, self._flat = grid, rows, None

    def take(self, idx) -> dict:
        return gather(self.grid, tuple(r[idx] for r in self.rows))

    def __getitem__(self, dim: str):
        if self._flat is None:
            self._flat = gather(self.grid, self.rows)
        return self._flat[dim]

    def __iter__(self):
        return iter(self.grid)

    def __len__(self) -> int:
        return len(self.grid)


def grid_of(chains_of: dict[str, np.ndarray], extent: dict, paired: bool = False) -> dict:
    """Per dimension: tiles t[g] and padded extent P of the given chains (rows), over the
    axes (X, Y, C, M, N); paired: X and Y chains given pairwise, both along axis 0."""
    out = {}
    for axis, dim in enumerate(DIMS):
        chains = chains_of[dim]
        shape = [1] * len(DIMS)
        shape[0 if paired and dim == "Y" else axis] = len(chains)
        p = -(-extent[dim] // chains[:, -1]) * chains[:, -1]
        out[dim] = ([chains[:, g].reshape(shape).astype(float)
                     for g in range(chains.shape[1])], p.reshape(shape).astype(float))
    return out


__all__ = ["LazyPoints", "at_rows", "chains_at", "gather", "grid_of",
           "grid_shape", "mirrored"]
