"""Streamed layers (pool, LRN, eltwise, concat, activation, softmax, and the imported scale,
affine, shuffle, resize and generic layers): chunked on one or k cores, priced by the DMA/bus
pipeline of `perf` (sizes in elements, time in DSP cycles, energy in pJ).

Geometry. Output maps are split over cores: core j of k takes a contiguous range [a, b) of
them (the first C mod k cores one more). Softmax normalizes across the maps, so it has one
unit (all maps, a "row" is W pixels × C maps) and runs on one core.

A chunk (rows, maps) is `rows` consecutive full-width output rows of `maps` consecutive output
maps of the core's range, of one image (the last band of rows and the last group of maps may be
shorter). For each input tensor a chunk fetches one block: the input rows, columns and maps
from its first window's start to its last window's end, clipped to the input (padding is not
fetched). Pool bands refetch their Ky − Sy halo rows, LRN groups their ±size//2 neighbour
maps, eltwise reads each of its `inputs`, concat copies (one block per input part the chunk
touches). One DMA get per block and one put per chunk. Buffers hold the largest chunk's input
and output (footprint = their sum). The vector unit runs ops_per_output ops per output element,
simd_lanes ops per cycle, and reads every fetched element and writes every output once in local
memory (concat: none, DMA only). CC_tile = ops of a full chunk / simd_lanes.

Imported layers: a scale layer also fetches its maps' vector values per chunk (one more get);
an affine layer keeps its constants local, and so does a prelu its slopes (not fetched); a
shuffle or a transpose is a DMA-only copy like concat (one gather per chunk); a layer norm
keeps its scales and shifts local and normalizes whole W-long rows (chunks hold full rows); a
row softmax is split over maps like an activation; a resize is chunked over its
input grid, each point writing Fy·Fx outputs; a generic layer is element-wise on its output
shape with `inputs` inputs of that shape, except a product of two data tensors (attention's
Q·Kᵀ and scores·V: out G × M × N = A G × M × K times B G × K × N, MACs = out elements × K),
whose chunk fetches its A rows, K columns each, and the whole K × N block of B for each of its
maps (one more get), at 2·K ops per output element.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from workbench import perf, resources
from workbench.errors import WorkbenchError
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    EltwiseLayer,
    Layer,
    LRNLayer,
    PoolLayer,
    SoftmaxLayer,
)
from workbench.layers.stream_spec import (
    AffineLayer,
    GenericLayer,
    LayerNormLayer,
    ResizeLayer,
    RowSoftmaxLayer,
    ScaleLayer,
    ShuffleLayer,
    TransposeLayer,
)
from workbench.platforms import Platform

STREAMED = (PoolLayer, ActivationLayer, LRNLayer, SoftmaxLayer, EltwiseLayer, ConcatLayer,
            ScaleLayer, AffineLayer, ShuffleLayer, ResizeLayer, GenericLayer, LayerNormLayer,
            RowSoftmaxLayer, TransposeLayer)
OBJECTIVES = ("cycles", "energy", "accesses", "edp")
Window = tuple[int, int, int, int]  # kernel, stride, pad, input extent


@dataclass(frozen=True, slots=True)
class Geometry:
    """A streamed layer as outputs (units maps × out_rows × out_cols per image) and the input
    window of each axis."""

    units: int
    out_rows: int
    out_cols: int
    map_win: Window
    row_win: Window
    col_win: Window
    images: int
    inputs: int
    ops_per_output: int
    vector: bool
    boundaries: tuple[int, ...] = ()  # concat: first maps of parts 2..n
    side: int = 0  # elements per map fetched with each chunk: scale 1, a product's B K·N
    in_cols: int = 0  # input columns read per row when all are (a product's K), else 0
    out_scale: int = 1  # resize: output elements written per grid point


def geometry(layer: Layer) -> Geometry:
    """The chunking geometry of a streamed layer (WorkbenchError for conv/fc)."""
    if not isinstance(layer, STREAMED):
        raise WorkbenchError(f"layer {layer.name!r} is a {layer.kind} layer; streaming covers "
                             "pool, lrn, eltwise, concat, activation, softmax, scale, affine, "
                             "shuffle, resize, layernorm, transpose and generic layers")
    n = layer.On
    if isinstance(layer, ResizeLayer):
        c, h, w = layer.in_shape
        return Geometry(c, h, w, (1, 1, 0, c), (1, 1, 0, h), (1, 1, 0, w), n, 1,
                        layer.ops_per_output, True, out_scale=layer.Fy * layer.Fx)
    if isinstance(layer, PoolLayer):
        return Geometry(layer.C, layer.Oy, layer.Ox, (1, 1, 0, layer.C),
                        (layer.Ky, layer.Sy, layer.Py, layer.Iy),
                        (layer.Kx, layer.Sx, layer.Px, layer.Ix), n, 1, layer.Kx * layer.Ky, True)
    c, h, w = layer.out_shape
    if isinstance(layer, SoftmaxLayer):
        return Geometry(1, h, c * w, (1, 1, 0, 1), (1, 1, 0, h), (1, 1, 0, c * w), n, 1, 3, True)
    same, cols = (1, 1, 0, h), (1, 1, 0, w)
    if isinstance(layer, LRNLayer):
        lrn = (layer.size, 1, layer.size // 2, c)
        return Geometry(c, h, w, lrn, same, cols, n, 1, 2 * layer.size + 3, True)
    if isinstance(layer, ConcatLayer | ShuffleLayer | TransposeLayer):
        starts = tuple(int(s) for s in np.cumsum(layer.parts)[:-1]) \
            if isinstance(layer, ConcatLayer) else ()
        return Geometry(c, h, w, (1, 1, 0, c), same, cols, n, 1, 0, False, starts)
    k = layer.product_k if isinstance(layer, GenericLayer) else 0
    if k:  # A's rows (K columns) as the input, B's K × N block per map as the side fetch
        return Geometry(c, h, w, (1, 1, 0, c), same, cols, n, 1, layer.ops // layer.elements,
                        True, side=k * w, in_cols=k)
    inputs = layer.inputs if isinstance(layer, EltwiseLayer | GenericLayer) else 1
    return Geometry(c, h, w, (1, 1, 0, c), same, cols, n, inputs, layer.ops // layer.elements,
                    True, side=int(isinstance(layer, ScaleLayer)))



@dataclass(frozen=True)
class StreamCounts:
    """Counts of one core's share at one chunk size (ints, or arrays over chunk sizes)."""

    in_elems: np.ndarray | int        # elements fetched (halos included)
    out_elems: np.ndarray | int       # elements written
    dma_transfers: np.ndarray | int   # gets + puts
    chunks: np.ndarray | int
    in_buffer: np.ndarray | int       # elements, the largest chunk's inputs
    out_buffer: np.ndarray | int      # elements, the largest chunk's outputs
    ops_per_chunk: np.ndarray | int   # vector ops of the largest chunk
    ops: np.ndarray | int             # vector ops of the share
    local_accesses: np.ndarray | int  # elements the vector unit reads and writes locally

    @property
    def footprint(self) -> np.ndarray | int:
        return self.in_buffer + self.out_buffer


def split_maps(units: int, k: int) -> list[tuple[int, int]]:
    """Map ranges [a, b) of k cores; the first units mod k cores take one more map."""
    q, r = divmod(units, k)
    bounds = np.cumsum([0] + [q + (j < r) for j in range(k)])
    return [(int(bounds[j]), int(bounds[j + 1])) for j in range(k)]


def _clip_ap_sum(first, step, count, lo, hi):
    """Σ_{i<count} clip(first + i·step, lo, hi) for step > 0, element-wise, exact integers."""
    n_lo = np.clip(-((first - lo) // step), 0, count)
    n_hi = count - np.clip((hi - first) // step + 1, 0, count)
    mid = count - n_lo - n_hi
    return n_lo * lo + n_hi * hi + mid * first + step * (mid * (2 * n_lo + mid - 1) // 2)


def _bands(a: int, b: int, t: np.ndarray, win: Window) -> tuple[np.ndarray, ...]:
    """Outputs [a, b) in bands of t: (bands, input extent fetched in all, largest band's)."""
    k, s, p, n = win
    t = np.minimum(t, b - a)
    nb = -(-(b - a) // t)
    x0, d, span = a * s - p, t * s, (t - 1) * s + k  # first band's input start, step, length
    total = (_clip_ap_sum(x0 + span, d, nb - 1, 0, n) + np.clip((b - 1) * s - p + k, 0, n)
             - _clip_ap_sum(x0, d, nb, 0, n))
    largest = np.clip((b - 1) * s - p + k, 0, n) - np.clip(x0 + (nb - 1) * d, 0, n)  # last
    # a full band's extent is unimodal in its start: the best one is next to min(0, n − span)
    before = (np.minimum(0, n - span) - x0) // d
    for i in (before, before + 1):
        x = x0 + np.clip(i, 0, np.maximum(nb - 2, 0)) * d
        full = np.clip(x + span, 0, n) - np.clip(x, 0, n)
        largest = np.where(nb >= 2, np.maximum(largest, full), largest)
    return nb, total, largest


def _check_chunk(layer: Layer, g: Geometry, rows, maps, share) -> tuple[int, int]:
    a, b = share if share is not None else (0, g.units)
    if not 0 <= a < b <= g.units:
        raise WorkbenchError(f"layer {layer.name!r}: map range {share} not within 0..{g.units}")
    if np.any(np.asarray(rows) < 1) or np.any(np.asarray(maps) < 1):
        raise WorkbenchError(f"layer {layer.name!r}: chunk rows and maps must be >= 1")
    return a, b


def chunk_counts(layer: Layer, rows: int | np.ndarray, maps: int | np.ndarray,
                 share: tuple[int, int] | None = None) -> StreamCounts:
    """Counts of output maps `share` = [a, b) (default all) in chunks (rows, maps), by formula;
    rows and maps may be arrays (one result per pair)."""
    g = geometry(layer)
    a, b = _check_chunk(layer, g, rows, maps, share)
    scalar = np.ndim(rows) == 0 and np.ndim(maps) == 0
    r, m = np.broadcast_arrays(np.asarray(rows, np.int64), np.asarray(maps, np.int64))
    groups, in_maps, big_maps = _bands(a, b, m, g.map_win)
    bands, in_rows, big_rows = _bands(0, g.out_rows, r, g.row_win)
    in_cols = g.in_cols or _bands(0, g.out_cols, np.int64(g.out_cols), g.col_win)[1]
    chunks = g.images * groups * bands
    gets = chunks * (g.inputs + (g.side > 0))
    for p in g.boundaries:  # concat: a group straddling a part boundary reads two blocks
        gets = gets + g.images * bands * ((a < p < b) & ((p - a) % np.minimum(m, b - a) != 0))
    out = g.images * (b - a) * g.out_rows * g.out_cols * g.out_scale
    fetched = (g.images * g.inputs * in_maps * in_rows * in_cols
               + g.side * g.images * bands * (b - a))
    chunk_out = np.minimum(m, b - a) * np.minimum(r, g.out_rows) * g.out_cols * g.out_scale
    counts = StreamCounts(
        in_elems=fetched, out_elems=np.broadcast_to(out, r.shape), dma_transfers=gets + chunks,
        chunks=chunks, out_buffer=chunk_out,
        in_buffer=g.inputs * big_maps * big_rows * in_cols + g.side * np.minimum(m, b - a),
        ops_per_chunk=chunk_out * g.ops_per_output,
        ops=np.broadcast_to(out * g.ops_per_output, r.shape),
        local_accesses=(fetched + out) if g.vector else np.zeros_like(fetched))
    if scalar:
        counts = StreamCounts(*(int(getattr(counts, f.name)) for f in fields(counts)))
    return counts


def _block(outs: range, win: Window) -> range:
    """The input block of outputs `outs`: first window's start to last window's end, clipped."""
    k, s, p, n = win
    starts = [o * s - p for o in outs]
    return range(min(max(min(starts), 0), n), max(min(max(starts) + k, n), 0))


def trace_counts(layer: Layer, rows: int, maps: int,
                 share: tuple[int, int] | None = None) -> StreamCounts:
    """`chunk_counts` by walking every chunk, summing what each DMA get and put moves, and
    checking that every output element of the share is written exactly once."""
    g = geometry(layer)
    a, b = _check_chunk(layer, g, rows, maps, share)
    written = np.zeros((g.images, g.units, g.out_rows, g.out_cols), dtype=np.int64)
    cols = g.in_cols or len(_block(range(g.out_cols), g.col_win))
    part_of = np.searchsorted(np.array(g.boundaries, dtype=np.int64), np.arange(g.units), "right")
    fetched = out = dma = chunks = in_buf = out_buf = big = ops = 0
    for image in range(g.images):
        for m0 in range(a, b, maps):
            group = range(m0, min(m0 + maps, b))
            in_maps = len(_block(group, g.map_win))
            for y0 in range(0, g.out_rows, rows):
                band = range(y0, min(y0 + rows, g.out_rows))
                got = g.inputs * in_maps * len(_block(band, g.row_win)) * cols \
                    + g.side * len(group)
                gets = (len(set(part_of[list(group)])) if g.boundaries else g.inputs) + (
                    g.side > 0)
                put = len(group) * len(band) * g.out_cols * g.out_scale
                written[image, group.start:group.stop, band.start:band.stop, :] += 1
                fetched, out, dma, chunks = fetched + got, out + put, dma + gets + 1, chunks + 1
                in_buf, out_buf = max(in_buf, got), max(out_buf, put)
                big, ops = max(big, put * g.ops_per_output), ops + put * g.ops_per_output
    if not (written[:, a:b] == 1).all() or written.sum() != written[:, a:b].sum():
        raise AssertionError(f"layer {layer.name!r}: chunks do not write every output once")
    return StreamCounts(fetched, out, dma, chunks, in_buf, out_buf, big, ops,
                        fetched + out if g.vector else 0)


def stream_counts(layer: Layer) -> dict[str, int]:
    """Whole-layer counts: input elements read once, output elements, vector ops (rooflines)."""
    g = geometry(layer)
    c = chunk_counts(layer, g.out_rows, g.units)
    return {"in_elems": c.in_elems, "out_elems": c.out_elems, "ops": c.ops}


def _needed_bytes(footprint: np.ndarray | int, platform: Platform) -> np.ndarray | int:
    """Local memory a chunk's buffers take (bytes), twice if double-buffered."""
    return footprint * (2 if platform.double_buffer else 1) * platform.elem_bytes


def kept_bytes(layer: Layer, platform: Platform, kept: tuple[bool, bool]) -> int:
    """Local memory (bytes) of the whole input and/or output maps kept on chip (fusion)."""
    maps = (kept[0] * int(np.prod(layer.in_shape)) + kept[1] * int(np.prod(layer.out_shape)))
    return maps * layer.On * platform.elem_bytes


def _count_matrix(layer: Layer, k: int, rows: np.ndarray,
                  maps: np.ndarray) -> dict[str, np.ndarray]:
    """`chunk_counts` of every core (axis 0) and chunk (axis 1), platform-free."""
    per = [chunk_counts(layer, rows, maps, s) for s in split_maps(geometry(layer).units, k)]
    mat = {f.name: np.stack([np.broadcast_to(getattr(c, f.name), rows.shape) for c in per])
           for f in fields(StreamCounts)}
    mat["footprint"] = mat["in_buffer"] + mat["out_buffer"]
    return mat


@functools.lru_cache(maxsize=512)
def _grid(layer: Layer, k: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every chunk (rows, maps) of k cores' shares and its counts (cached: platform-free)."""
    g = geometry(layer)
    r, m = np.meshgrid(np.arange(1, g.out_rows + 1), np.arange(1, -(-g.units // k) + 1),
                       indexing="ij")
    return r.ravel(), m.ravel(), _count_matrix(layer, k, r.ravel(), m.ravel())


def _evaluate(layer: Layer, platform: Platform, k: int, rows: np.ndarray, maps: np.ndarray,
              parts: bool = True, fitting: bool = False,
              kept: tuple[bool, bool] = (False, False),
              counted: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Chunk sizes (rows[i], maps[i]) on k cores (`counted`: their `_count_matrix`; only
    those fitting local memory if `fitting`): cycles and cycle parts of the slowest core;
    energy, accesses, transfers and chunks summed over the cores; footprint the largest
    core's. A kept input or output map (`kept`, fusion) stays in local memory beside the
    buffers: no external traffic."""
    mat = _count_matrix(layer, k, rows, maps) if counted is None else counted
    need = _needed_bytes(mat["footprint"].max(axis=0), platform)
    room = platform.local_mem_bytes - kept_bytes(layer, platform, kept)
    keep = need <= room if fitting else np.ones(len(rows), dtype=bool)
    mat = {key: value[:, keep] for key, value in mat.items()}
    ext = (not kept[0]) * mat["in_elems"] + (not kept[1]) * mat["out_elems"]
    tile = (mat["ops_per_chunk"] / platform.simd_lanes).ravel()
    contention = perf.Contention(cores=k, shared_copies=k, dma_channels=platform.dma_channels)
    full = perf.CountVector.of(mat["footprint"].ravel(), ext.ravel(),
                               mat["dma_transfers"].ravel(), mat["chunks"].ravel(),
                               np.zeros(tile.size))
    local = mat["local_accesses"].ravel().astype(np.float64)
    res = perf.price(platform, full, local, tile_cycles=tile, parts=parts,
                     layer_of=np.arange(tile.size), contention=contention)
    n = int(keep.sum())
    slow = res["cycles"].reshape(k, n).argmax(axis=0) if n else np.zeros(0, dtype=np.int64)
    out = {"cores": np.full(n, k), "rows": rows[keep], "maps": maps[keep]}
    for key, value in res.items():
        value = value.reshape(k, n)
        out[key] = value[slow, np.arange(n)] if key.startswith("cycles") else value.sum(axis=0)
    return out | {"ext_accesses": ext.sum(axis=0), "footprint_elems": mat["footprint"].max(0),
                  "dma_transfers": mat["dma_transfers"].sum(0), "chunks": mat["chunks"].sum(0),
                  "bytes": need[keep]}


def price_stream(layer: Layer, platform: Platform, cores: int, rows: int,
                 maps: int, kept: tuple[bool, bool] = (False, False)) -> dict[str, float]:
    """One configuration: k = `cores` cores, chunks of (rows, maps), fitting or not; keys
    of `perf.price` (slowest core's cycles, all cores' energy) plus ext_accesses (elements),
    footprint_elems (largest core), bytes (its buffers in local memory), dma_transfers, chunks."""
    _check_cores(cores, geometry(layer).units)
    return dict(_priced_chunk(layer, platform, cores, rows, maps, kept))


@functools.lru_cache(maxsize=1024)
def _priced_chunk(layer: Layer, platform: Platform, cores: int, rows: int, maps: int,
                  kept: tuple[bool, bool]) -> dict[str, float]:
    res = _evaluate(layer, platform, cores, np.array([rows]), np.array([maps]), kept=kept)
    return {key: float(value[0]) for key, value in res.items()}


def _check_cores(cores: object, most: int | None = None) -> None:
    if (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1
            or (most is not None and cores > most)):
        rule = "a positive integer" if most is None else f"an integer in 1..{most} (map units)"
        raise WorkbenchError(f"cores must be {rule}, got {cores!r}")


CELL_BYTES = 8 * 24  # int64 counts and their temporaries per chunk size and core (measured)


def _check_grid(layer: Layer, cores: int) -> None:
    """Refuse by estimate (`resources.check`, one line) a layer whose chunk sizes (rows ×
    maps, for every core count up to `cores`) would take more memory than the budget."""
    g = geometry(layer)
    cells = sum(k * g.out_rows * -(-g.units // k) for k in range(1, cores + 1))
    resources.check(f"layer {layer.name!r}: pricing its {g.out_rows:,} × {g.units:,} chunk "
                    f"sizes ({layer.kind} layer, up to {cores} core(s))", cells * CELL_BYTES)


def _candidates(layer: Layer, platform: Platform, cores: int | None,
                kept: tuple[bool, bool] = (False, False)) -> list[dict]:
    """Every fitting chunk (rows, maps) of every k ≤ min(cores, units), one dict per k; a
    WorkbenchError naming the layer when not even the smallest chunk fits."""
    g = geometry(layer)
    limit = platform.cores if cores is None else cores
    _check_cores(limit)
    smallest = _needed_bytes(chunk_counts(layer, 1, 1).footprint, platform) \
        + kept_bytes(layer, platform, kept)
    if smallest > platform.local_mem_bytes:
        raise WorkbenchError(
            f"layer {layer.name!r}: no chunk of this {layer.kind} layer fits "
            f"{platform.local_mem_bytes} B of local memory (the smallest needs {smallest} B"
            f"{', double-buffered' if platform.double_buffer else ''})")
    _check_grid(layer, min(limit, g.units))
    out = []
    for k in range(1, min(limit, g.units) + 1):
        rows, maps, counted = _grid(layer, k)
        out.append(_evaluate(layer, platform, k, rows, maps, parts=False, fitting=True,
                             kept=kept, counted=counted))
    return out


@functools.lru_cache(maxsize=256)
def _merged(layer: Layer, platform: Platform, cores: int | None,
            kept: tuple[bool, bool]) -> dict[str, np.ndarray]:
    """`_candidates` of every k in one table. It does not depend on the objective, so the
    objectives of one layer and platform (a sweep's innermost axis) price the chunks once."""
    per_k = _candidates(layer, platform, cores, kept)
    return {key: np.concatenate([res[key] for res in per_k]) for key in per_k[0]}


def _check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise WorkbenchError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


def _pick(res: dict[str, np.ndarray], objective: str) -> tuple[int, int, int]:
    """(k, rows, maps) of the best row: objective, then cycles, accesses, footprint, k, rows,
    maps (rows all fit)."""
    score = {"cycles": res["cycles"], "energy": res["energy_pj"],
             "accesses": res["ext_accesses"], "edp": res["energy_pj"] * res["cycles"]}[objective]
    keys = [res[key] for key in ("maps", "rows", "cores", "footprint_elems", "ext_accesses",
                                 "cycles")]
    best = np.lexsort([*keys, score])[0]
    return int(res["cores"][best]), int(res["rows"][best]), int(res["maps"][best])


@dataclass(frozen=True, slots=True)
class StreamChoice:
    """The best (k, chunk) of a streamed layer: cycles (slowest core), energy (pJ, all cores),
    external accesses (elements, all cores), footprint (elements per buffer set), breakdown."""

    layer: str
    cores: int
    rows: int
    maps: int
    cycles: float
    energy_pj: float
    ext_accesses: int
    footprint_elems: int
    dma_transfers: int
    chunks: int
    breakdown: dict[str, float]
    local_accesses: int = 0  # elements the vector unit reads and writes in local memory


def best_stream(layer: Layer, platform: Platform, objective: str = "cycles",
                cores: int | None = None,
                kept: tuple[bool, bool] = (False, False)) -> StreamChoice:
    """The best cores k ≤ min(cores or platform.cores, maps) and chunk (rows, maps) whose
    footprint (×2 if double-buffered) fits local memory, by objective ("cycles", "energy",
    "accesses", "edp"); ties by cycles, then accesses, then footprint. `kept`: the input
    and/or output map stays in local memory (fusion; its bytes are reserved there)."""
    _check_objective(objective)
    k, rows, maps = _pick(_merged(layer, platform, cores, kept), objective)
    best = _priced_chunk(layer, platform, k, rows, maps, kept)
    return StreamChoice(layer.name, k, rows, maps, best["cycles"], best["energy_pj"],
                        int(best["ext_accesses"]), int(best["footprint_elems"]),
                        int(best["dma_transfers"]), int(best["chunks"]),
                        {key: value for key, value in best.items()
                         if key.startswith(("cycles_", "energy_")) and key != "energy_pj"},
                        int(best["local_accesses"]))


def cores_table(layer: Layer, platform: Platform, objective: str = "cycles",
                cores: int | None = None) -> pd.DataFrame:
    """One row per k (the best chunk for k cores): cores, rows, maps, cycles, speedup (vs one
    core), energy_pj, ext_accesses, footprint_elems, bytes, dma_transfers, chunks, and the
    cycle (slowest core) and energy (all cores) parts of `perf.price`."""
    _check_objective(objective)
    table = pd.DataFrame([price_stream(layer, platform, *_pick(res, objective))
                          for res in _candidates(layer, platform, cores)])
    for key in ("cores", "rows", "maps", "ext_accesses", "footprint_elems", "bytes",
                "dma_transfers", "chunks", "local_accesses"):
        table[key] = table[key].astype(np.int64)
    table.insert(4, "speedup", table["cycles"].iloc[0] / table["cycles"])
    return table
