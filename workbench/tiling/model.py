"""Analytical access counts of the five seed 000 schedules (§5.2), vectorized over tiles.

All counts are in elements (accesses) or transfers, per layer, with every tile counted at full
size and halos including padding ("model" counts): an input box spans (TOx − 1)·Sx + (Kx − 1)·Dx
+ 1 columns (likewise rows) wherever it lies, so start/end padding and dilation enter only
through that span; `physical` traces clip to the real Ix × Iy. A sparse connection table is
tiled as the dense layer (an upper bound). `tiling.trace` executes the loop nests and must agree.

Grouped convolutions (G groups of Ocg = Oc/G output maps, each reading its own Kc input maps).
A tile either stays inside one group (TOc ≤ Ocg: the layer is G independent convolutions of Ocg
maps, each tiled alike) or spans g whole groups (TOc = g·Ocg, 1 ≤ g ≤ G): its output tile holds
TOc maps, its input tile TKc maps of each of its g groups (g·TKc maps), its weights TKc per
output map; the groups are cut into ⌈G/g⌉ blocks (the last one partial, counted at full size
like any edge tile) and every block is one convolution with a single output-map tile
(`oc_split`). A box spanning groups is one DMA transfer, like every box (a strided descriptor
when TKc < Kc). Input tiles of different blocks hold different maps, so no schedule reuses an
input tile across blocks. TOc = Ocg is both cases and counts the same either way; dense layers
(G = 1) are the first case with today's counts.

64-bit limit. The vectorized counts are int64. `count_bound` bounds every count, buffer and
intermediate product of `counts_array` over all tiles of a layer from its extents alone (the
argument is in its docstring); a layer whose bound reaches INT64_SAFE is refused by the
vectorized path with a one-line error, and `counts` (one tile) computes it exactly with Python
integers instead. No count is ever wrapped or negative.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from workbench.errors import SpecError, UnknownNameError
from workbench.layers.dims import SEED000_LABEL, SEED000_ORDER, Dim, seed000_columns
from workbench.layers.spec import ConvLayer
from workbench.numbers import fmt_bytes, fmt_count, fmt_si

SCHEDULES = ("intra", "inter_kc", "inter_oc", "inter_oxoyon", "inter_oxoyon_dirx")
TILE_DIMS = seed000_columns()  # a tile's columns as users see them: TOx TOy TOc TOn TKc
# every int64 count stays below this: 2^60 leaves room for ×8 (bytes, double buffering, sums
# of a few layers) before the 2^63 of int64
INT64_SAFE = 1 << 60
MAX_GRID_TILES = 1 << 31  # reduced-grid tiles one candidate set may enumerate
MAX_AXIS = 1 << 15  # tile sizes per dimension (2·√extent): extents up to 2.7e8
EXACT_ROWS = 4096  # tiles `counts_array` computes with Python integers past INT64_SAFE


@dataclass(frozen=True, slots=True)
class Tile:
    """Tile sizes in elements per `layers.dims.Dim`: output columns X, rows Y, maps M, images
    N, and input maps per group C (positional order X, Y, M, N, C, the seed's TOx, TOy, TOc,
    TOn, TKc; `dims.SEED000_LABEL` names the columns users see).

    M ≤ Oc/groups stays inside one group; a multiple of Oc/groups spans that many groups."""

    X: int
    Y: int
    M: int
    N: int
    C: int

    def as_tuple(self) -> tuple[int, int, int, int, int]:
        """Sizes in the seed's column order (`dims.SEED000_ORDER`: X, Y, M, N, C)."""
        return (self.X, self.Y, self.M, self.N, self.C)

    def __getitem__(self, dim: Dim) -> int:
        """The size along one dimension (`layers.dims.Dim`: X, Y, C, M or N)."""
        if dim not in SEED000_ORDER:
            raise KeyError(f"a tile has no dimension {dim!r}; dimensions: X Y C M N")
        return getattr(self, dim)

    @classmethod
    def of(cls, sizes: Mapping) -> Tile:
        """A tile from sizes keyed by Dim (X, Y, C, M, N)."""
        return cls(*(sizes[d] for d in SEED000_ORDER))


@dataclass(frozen=True, slots=True)
class Counts:
    """External traffic of one layer under one schedule; accesses split by array (elements)."""

    in_accesses: int
    w_accesses: int
    out_accesses: int
    dma_transfers: int
    n_tiles: int
    bin: int
    bw: int
    bout: int

    @property
    def ext_accesses(self) -> int:
        return self.in_accesses + self.w_accesses + self.out_accesses

    @property
    def footprint_elems(self) -> int:
        """Bin + Bw + Bout (single-buffered)."""
        return self.bin + self.bw + self.bout


def dims(layer: ConvLayer) -> tuple[int, int, int, int, int]:
    """(Ox, Oy, Oc per group, On, Kc): the extents a tile is cut from inside one group."""
    if not getattr(layer, "tiled", False):
        raise SpecError(f"layer {layer.name!r}: only conv and fc layers are tiled, "
                        f"not {layer.kind!r}")
    return (layer.Ox, layer.Oy, layer.Oc // layer.groups, layer.On, layer.Kc)


def tile_limits(layer: ConvLayer) -> tuple[int, int, int, int, int]:
    """Largest tile per dimension: (Ox, Oy, Oc, On, Kc); TOc > Oc/groups spans whole groups."""
    ox, oy, _, on, kc = dims(layer)
    return (ox, oy, layer.Oc, on, kc)


def toc_values(layer: ConvLayer, reduced: bool = True) -> np.ndarray:
    """Valid TOc (output maps per tile), sorted: 1..Ocg inside a group, then g·Ocg for g whole
    groups. reduced=True keeps the smallest TOc per tile count: `tile_candidates(Ocg)` and
    g·Ocg for g in `tile_candidates(G)` (exact: counts depend on g only through ⌈G/g⌉ and
    through buffers non-decreasing in g, see `oc_split`)."""
    ocg, groups = dims(layer)[2], layer.groups
    inside = tile_candidates(ocg) if reduced else np.arange(1, ocg + 1, dtype=np.int64)
    spans = tile_candidates(groups) if reduced else np.arange(1, groups + 1, dtype=np.int64)
    return np.unique(np.concatenate([inside, ocg * spans]))


def oc_split(layer: ConvLayer, toc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(g, nc, blocks) per TOc: groups one tile spans (1 inside a group), output-map tiles per
    block, and blocks (independent convolutions: G, or ⌈G/g⌉ when spanning)."""
    toc = np.asarray(toc)
    toc = toc if toc.dtype == object else toc.astype(np.int64)
    ocg = layer.Oc // layer.groups
    span = np.where(toc > ocg, toc // ocg, 1)
    return span, -(-(span * ocg) // toc), -(-layer.groups // span)


def check_schedule(schedule: str) -> None:
    if schedule not in SCHEDULES:
        raise UnknownNameError(f"unknown schedule {schedule!r}; valid: " + ", ".join(SCHEDULES))


def check_tile(layer: ConvLayer, tile: Tile) -> None:
    for name, size, limit in zip(TILE_DIMS, tile.as_tuple(), tile_limits(layer), strict=True):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or not (
                1 <= size <= limit):
            raise SpecError(f"layer {layer.name!r}: tile {name}={size} must be an integer in "
                            f"1..{limit}")
    ocg = layer.Oc // layer.groups
    if tile.M > ocg and tile.M % ocg:
        raise SpecError(f"layer {layer.name!r}: tile {SEED000_LABEL[Dim.M]}={tile.M} must be "
                        f"at most the {ocg} maps of a group or a multiple of them (whole groups)")


def valid_tiles(layer: ConvLayer, tiles: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows of an (N, 5) array that are valid tiles of the layer."""
    tiles = np.asarray(tiles).reshape(-1, 5)
    ocg = layer.Oc // layer.groups
    toc = tiles[:, 2]
    return ((tiles >= 1) & (tiles <= np.array(tile_limits(layer)))).all(axis=1) & (
        (toc <= ocg) | (toc % ocg == 0))


def buffers(layer: ConvLayer, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin, Bw, Bout in elements for tiles given as an (N, 5) integer array."""
    tox, toy, toc, ton, tkc = tiles.T
    span = oc_split(layer, toc)[0]
    b_in = ((tox - 1) * layer.Sx + layer.Kx_span) * ((toy - 1) * layer.Sy + layer.Ky_span) \
        * tkc * span * ton
    return b_in, layer.Kx * layer.Ky * tkc * toc, tox * toy * toc * ton


def final_outputs(layer: ConvLayer, tiles: np.ndarray) -> np.ndarray:
    """Final output writes (elements, full-size tiles): one put of Bout per output tile."""
    tiles = tile_array(layer, tiles)
    _, nc, blocks = oc_split(layer, tiles[:, 2])
    nx, ny, _, nn, _ = (-(-d // tiles[:, i]) for i, d in enumerate(dims(layer)))
    return blocks * nx * ny * nc * nn * buffers(layer, tiles)[2]


@functools.lru_cache(maxsize=1024)
def count_bound(layer: ConvLayer) -> int:
    """An upper bound (elements, a Python int) of every count, buffer and intermediate product
    `counts_array` forms for any valid tile of the layer.

    With N = blocks·nx·ny·nc·nn·nk tiles, every schedule's input accesses are ≤ N·Bin, weight
    accesses ≤ N·Bw, output accesses ≤ 2·N·Bout ((2·nk − 1) puts and reloads per output tile;
    `inter_oxoyon_dirx`'s nx·Bin_nol + Bin_ol ≤ nx·Bin) and DMA transfers ≤ 5·N; buffers, tile
    counts and tile elements are ≤ these; every intermediate is a partial product of one of
    them. Per dimension, ⌈O/T⌉·T < 2·O and ⌈O/T⌉·((T−1)·S + K) ≤ O·(2·S + K); over the map
    dimension blocks·nc·g and blocks·nc·TOc are < 2·Oc (`oc_split`). Hence
    N·Bin ≤ 2Oc·Ox(2Sx+Kx')·Oy(2Sy+Ky')·2On·2Kc, N·Bw ≤ 2Oc·Ox·Oy·On·2Kc·Kx·Ky,
    N·Bout ≤ 2Oc·2Ox·2Oy·2On·Kc (K' the dilated spans) and N ≤ Oc·Ox·Oy·On·Kc."""
    ox, oy, _, on, kc = dims(layer)
    oc = layer.Oc
    n_bin = 2 * oc * ox * (2 * layer.Sx + layer.Kx_span) * oy * (2 * layer.Sy + layer.Ky_span) \
        * 2 * on * 2 * kc
    n_bw = 2 * oc * ox * oy * on * 2 * kc * layer.Kx * layer.Ky
    n_bout = 2 * oc * 2 * ox * 2 * oy * 2 * on * kc
    return n_bin + n_bw + 2 * n_bout + 5 * oc * ox * oy * on * kc


def fits_int64(layer: ConvLayer) -> bool:
    """True when every count of the layer stays below INT64_SAFE (`count_bound`)."""
    return count_bound(layer) < INT64_SAFE


def check_int64(layer: ConvLayer) -> None:
    """Refuse (one line) a layer whose counts could leave the vectorized int64 range."""
    if not fits_int64(layer):
        raise SpecError(f"layer {layer.name!r}: its counts may reach "
                        f"{fmt_si(count_bound(layer))} elements, beyond the 2^60 limit of "
                        "the vectorized model (tiling.counts computes one tile exactly)")


def tile_array(layer: ConvLayer, tiles: np.ndarray) -> np.ndarray:
    """Tiles as an (N, 5) array: int64, or Python integers (object) when the layer's counts
    may pass INT64_SAFE (exact, for up to EXACT_ROWS tiles; more are refused)."""
    tiles = np.asarray(tiles).reshape(-1, 5)
    if fits_int64(layer):
        return tiles.astype(np.int64, copy=False)
    if len(tiles) > EXACT_ROWS:
        check_int64(layer)
    return np.array([[int(v) for v in row] for row in tiles.tolist()], dtype=object)


def counts_array(layer: ConvLayer, tiles: np.ndarray, schedule: str) -> dict[str, np.ndarray]:
    """Counts for many tiles at once: arrays keyed like the `Counts` fields (int64; Python
    integers in object arrays for the few tiles of a layer beyond INT64_SAFE)."""
    check_schedule(schedule)
    tiles = tile_array(layer, tiles)
    b_in, b_w, b_out = buffers(layer, tiles)
    nx, ny, _, nn, nk = (-(-d // tiles[:, i]) for i, d in enumerate(dims(layer)))
    span, nc, g = oc_split(layer, tiles[:, 2])  # g: independent blocks of nc map tiles
    out_tiles = nx * ny * nc * nn
    one = np.ones_like(b_in)
    if schedule == "inter_oxoyon_dirx":
        rows = ((tiles[:, 1] - 1) * layer.Sy + layer.Ky_span) * tiles[:, 4] * span * tiles[:, 3]
        overlap = max(layer.Kx_span - layer.Sx, 0)
        b_ol = overlap * rows
        b_nol = b_in - b_ol
    out_mult = 2 * nk - 1  # puts of every kc step plus reloads of all but the first

    def traffic(b_i, b_w_, b_o, b_ol_=None, b_nol_=None) -> tuple:
        if schedule == "intra":
            return out_tiles * nk * b_i, out_tiles * nk * b_w_, out_tiles * out_mult * b_o
        if schedule == "inter_kc":
            return out_tiles * nk * b_i, out_tiles * nk * b_w_, out_tiles * b_o
        if schedule == "inter_oc":
            return nx * ny * nn * nk * b_i, out_tiles * nk * b_w_, out_tiles * out_mult * b_o
        if schedule == "inter_oxoyon":
            return out_tiles * nk * b_i, nc * nk * b_w_, out_tiles * out_mult * b_o
        return (nc * nk * nn * ny * (nx * b_nol_ + b_ol_), nc * nk * b_w_,
                out_tiles * out_mult * b_o)

    if schedule == "inter_oxoyon_dirx":
        acc = traffic(b_in, b_w, b_out, b_ol, b_nol)
        dma = traffic(one, one, one, one if overlap else 0 * one, one)
    else:
        acc = traffic(b_in, b_w, b_out)
        dma = traffic(one, one, one)
    return {"in_accesses": g * acc[0], "w_accesses": g * acc[1], "out_accesses": g * acc[2],
            "dma_transfers": g * (dma[0] + dma[1] + dma[2]),
            "n_tiles": g * out_tiles * nk, "bin": b_in, "bw": b_w, "bout": b_out}


def counts(layer: ConvLayer, tile: Tile, schedule: str) -> Counts:
    """External accesses and DMA transfers of one layer, one tile, one schedule (model)."""
    check_tile(layer, tile)
    arrays = counts_array(layer, np.array([tile.as_tuple()], dtype=object), schedule)
    result = Counts(**{key: int(value[0]) for key, value in arrays.items()})
    if min(result.ext_accesses, result.dma_transfers, result.n_tiles, result.bin) < 0:
        raise AssertionError(f"layer {layer.name!r}: negative count {result}")  # never
    return result


def tile_candidates(extent: int) -> np.ndarray:
    """Tile sizes of one dimension that can be optimal: the smallest T for each ⌈O/T⌉.

    Every count depends on T only through n = ⌈O/T⌉ and through buffer sizes that grow with T
    (with non-negative coefficients), and the footprint grows with T; so for equal n the
    smallest T = ⌈O/n⌉ is no worse in accesses, transfers, cycles, energy and footprint. There
    are at most 2·√O distinct values of n, hence of these T.

    They are the values ⌈O/n⌉, n = 1..O, found in O(√O) time and memory: T is one of them
    exactly when ⌈O/⌈O/T⌉⌉ = T (n = ⌈O/T⌉ gives it; conversely T = ⌈O/n⌉ implies n ≥ ⌈O/T⌉,
    so ⌈O/⌈O/T⌉⌉ ≥ T, and ⌈O/T⌉ ≥ O/T gives ≤). With k = ⌊√O⌋ + 1, a value T > k comes from
    n = ⌈O/T⌉ ≤ k, so the values are the T ≤ k passing that test and ⌈O/n⌉ for n ≤ k.
    """
    k = min(math.isqrt(extent) + 1, extent)
    small = np.arange(1, k + 1, dtype=np.int64)
    small = small[-(-extent // -(-extent // small)) == small]
    return np.unique(np.concatenate([small, -(-extent // np.arange(1, k + 1, dtype=np.int64))]))


def n_tile_candidates(extent: int) -> int:
    """len(tile_candidates(extent)), without building it: ⌈O/n⌉ = ⌊(O−1)/n⌋ + 1, and ⌊M/n⌋
    (n = 1..M) takes 2·⌊√M⌋ values, one fewer when ⌊√M⌋ = ⌊M/⌊√M⌋⌋; n = O adds the 0."""
    m = extent - 1
    if m == 0:
        return 1
    k = math.isqrt(m)
    return 2 * k - (k == m // k) + 1


def grid_size(layer: ConvLayer) -> int:
    """Tiles in the reduced enumeration: candidates per dimension, TOc from `toc_values`
    (counted, not built: `model.n_tile_candidates`; TOc = Ocg is in both of its parts)."""
    ox, oy, ocg, on, kc = dims(layer)
    n_toc = n_tile_candidates(ocg) + n_tile_candidates(layer.groups) - 1
    return (n_tile_candidates(ox) * n_tile_candidates(oy) * n_toc * n_tile_candidates(on)
            * n_tile_candidates(kc))


def check_grid(layer: ConvLayer) -> None:
    """Refuse up front (one line, nothing allocated) a layer whose counts could leave int64, a
    dimension with over MAX_AXIS tile sizes (its candidate set would grow with them), or a
    reduced grid over MAX_GRID_TILES, with the size."""
    check_int64(layer)
    extents = zip(("Ox", "Oy", "Oc per group", "groups", "On", "Kc"),
                  (*dims(layer)[:3], layer.groups, *dims(layer)[3:]), strict=True)
    for name, extent in extents:
        if n_tile_candidates(extent) > MAX_AXIS:
            raise SpecError(f"layer {layer.name!r}: {name} = {fmt_si(extent)} gives "
                            f"{fmt_si(n_tile_candidates(extent))} tile sizes, beyond the "
                            f"{fmt_count(MAX_AXIS)} one dimension may have (extents up to "
                            f"{fmt_si(MAX_AXIS**2 // 4)})")
    grid = grid_size(layer)
    if grid > MAX_GRID_TILES:
        raise SpecError(f"layer {layer.name!r}: {fmt_si(grid)} tiles to enumerate per schedule "
                        f"(about {fmt_bytes(grid * 80)} as one table), beyond the limit "
                        f"of {fmt_si(MAX_GRID_TILES)} tiles")


def gen_tiles(layer: ConvLayer, max_footprint_elems: float = np.inf, reduced: bool = True,
              batch: int = 1 << 20):
    """Yield (N, 5) int64 arrays of candidate tiles whose single-buffered footprint fits.

    reduced=True enumerates only `tile_candidates` per dimension and `toc_values` (exact, see
    there); reduced=False enumerates every tile (brute force), TOc over every valid value.
    """
    check_int64(layer)
    axes = [tile_candidates(d) if reduced else np.arange(1, d + 1, dtype=np.int64)
            for d in dims(layer)]
    axes[2] = toc_values(layer, reduced)
    sizes = [len(a) for a in axes]
    total = math.prod(sizes)
    for start in range(0, total, batch):  # the grid in row-major order, `batch` tiles at once
        index = np.unravel_index(np.arange(start, min(start + batch, total)), sizes)
        tiles = np.column_stack([a[i] for a, i in zip(axes, index, strict=True)])
        b_in, b_w, b_out = buffers(layer, tiles)
        keep = (b_in + b_w + b_out) <= max_footprint_elems
        if keep.any():
            yield tiles[keep]
