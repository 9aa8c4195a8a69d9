"""Capped enumeration: the tiles of a reduced grid whose footprint fits a cap, without visiting
the others.

The grid of `tiling.candidates.build` is (TOx, TOy) pairs × TOc × TOn × TKc in row-major order.
The footprint Bin + Bw + Bout (`model.buffers`, elements) is non-decreasing in every tile
dimension (TOc too: the groups a tile spans grow with it), and every axis starts at 1. So the
tiles are grown one dimension at a time from their prefixes, the dimensions not yet set at 1:
a prefix whose footprint passes the cap has no fitting extension and is dropped with all of
them. The last dimension is not enumerated either: Bin and Bw are proportional to TKc and Bout
does not depend on it, so with a = Bin + Bw and b = Bout at TKc = 1 the fitting TKc are the
axis values up to ⌊(cap − b)/a⌋. The tiles come out in the grid's order (a subsequence of it),
`rows` or so at a time; memory is bounded by a few blocks of `rows` tiles.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from workbench.layers.spec import ConvLayer
from workbench.tiling.model import buffers, dims, tile_candidates, toc_values

COUNT_BUDGET = 1 << 24  # prefixes `capped_size` examines before it settles for a bound


def footprint(layer: ConvLayer, tiles: np.ndarray) -> np.ndarray:
    """Bin + Bw + Bout (elements, single-buffered) of (N, 5) int64 tiles."""
    b_in, b_w, b_out = buffers(layer, tiles)
    return b_in + b_w + b_out


def _inner_axes(layer: ConvLayer) -> list[np.ndarray]:
    """The TOc, TOn, TKc values of the grid, in enumeration order."""
    _, _, _, on, kc = dims(layer)
    return [toc_values(layer), tile_candidates(on), tile_candidates(kc)]


def _roots(layer: ConvLayer, pairs: np.ndarray, cap: int) -> np.ndarray:
    """(TOx, TOy, 1, 1, 1) of the pairs whose smallest tile fits, in pair order."""
    tiles = np.ones((len(pairs), 5), dtype=np.int64)
    tiles[:, :2] = pairs
    return tiles[footprint(layer, tiles) <= cap]


def _expand(prefix: np.ndarray, dim: int, axis: np.ndarray) -> np.ndarray:
    """Every prefix row × every axis value in column `dim`, row-major."""
    tiles = np.repeat(prefix, len(axis), axis=0)
    tiles[:, dim] = np.tile(axis, len(prefix))
    return tiles


def _tkc_fits(layer: ConvLayer, prefix: np.ndarray, tkc: np.ndarray, cap: int) -> np.ndarray:
    """How many TKc values (a prefix of the axis) fit with each prefix row (its TKc = 1)."""
    b_in, b_w, b_out = buffers(layer, prefix)
    return np.searchsorted(tkc, (cap - b_out) // (b_in + b_w), side="right")


def _gen_prefixes(layer: ConvLayer, prefix: np.ndarray, axes: list[np.ndarray], dim: int,
                  cap: int, rows: int) -> Iterator[np.ndarray]:
    """Blocks of the fitting (pair, TOc, TOn) prefixes (TKc = 1) grown from `prefix`
    (dimensions ≥ dim still 1), in grid order, each under about `rows` tiles."""
    if dim == 4:
        block = max(1, rows // len(axes[2]))
        for start in range(0, len(prefix), block):
            yield prefix[start:start + block]
        return
    axis = axes[dim - 2]
    block = max(1, rows // len(axis))
    for start in range(0, len(prefix), block):
        tiles = _expand(prefix[start:start + block], dim, axis)
        yield from _gen_prefixes(layer, tiles[footprint(layer, tiles) <= cap], axes, dim + 1,
                                 cap, rows)


def gen_capped_tiles(layer: ConvLayer, pairs: np.ndarray, cap: int,
                     rows: int) -> Iterator[np.ndarray]:
    """Yield (N, 5) int64 arrays of the grid's tiles (pairs × TOc × TOn × TKc, row-major)
    whose footprint is ≤ cap elements, in grid order, `rows` at a time (the last fewer)."""
    axes = _inner_axes(layer)
    held: list[np.ndarray] = []
    count = 0
    for prefix in _gen_prefixes(layer, _roots(layer, pairs, cap), axes, 2, cap, rows):
        n_fit = _tkc_fits(layer, prefix, axes[2], cap)
        tiles = np.repeat(prefix, n_fit, axis=0)
        first = np.repeat(np.cumsum(n_fit) - n_fit, n_fit)
        tiles[:, 4] = axes[2][np.arange(len(tiles)) - first]
        if len(tiles):
            held.append(tiles)
            count += len(tiles)
        if count >= rows:  # whole chunks of `rows` tiles; the rest waits for more
            block = np.concatenate(held)
            cut = len(block) - len(block) % rows
            yield from (block[i:i + rows] for i in range(0, cut, rows))
            held, count = [block[cut:]], len(block) - cut
    if count:
        yield np.concatenate(held)


def capped_size(layer: ConvLayer, pairs: np.ndarray, cap: int) -> int | None:
    """Tiles `gen_capped_tiles` yields, counted without building them (the fitting TKc of
    each (pair, TOc, TOn) prefix counted as there); None when over COUNT_BUDGET prefixes
    would have to be examined (the caller then uses a bound)."""
    axes = _inner_axes(layer)
    seen = total = 0
    for prefix in _gen_prefixes(layer, _roots(layer, pairs, cap), axes, 2, cap, 1 << 20):
        seen += len(prefix)
        if seen > COUNT_BUDGET:
            return None
        total += int(_tkc_fits(layer, prefix, axes[2], cap).sum())
    return total
