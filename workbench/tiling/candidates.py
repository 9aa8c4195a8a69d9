"""Candidate sets: per layer shape and schedule, the tiles that can be optimal on some platform.

Why a small set is exact. For a layer and a schedule, every cost the engine reports depends on
a tile only through five platform-independent counts, its *count vector*

    (footprint Bin+Bw+Bout, external accesses, DMA transfers, number of tiles, tile elements)

(tile elements TOx·TOy·TOc·TOn·TKc times Kx·Ky is the per-tile compute). `perf.price` is
non-decreasing in each of them for every platform with positive fields (clock, bus, MACs per
cycle, DMA setup, element bytes, energies, single or double buffering): cycles, energy,
energy × delay and external accesses, and the footprint in bytes that decides whether a tile
fits. Accesses per array and the prolog/epilog buffers enter today's costs only through their
sums (external accesses; prolog + epilog = footprint), so the sums are the vector. Hence if
tile A's vector is ≤ tile B's in every count, A fits wherever B fits and costs no more under
any platform, memory size and objective: B is never needed. The candidate set keeps the tiles
whose vectors no other vector dominates (one tile per distinct vector), found exactly by
`dominance.nondominated`.

Before that, an exact pre-reduction of the (TOx, TOy) pairs: every count is a sum of products
of a non-negative factor of (TOc, TOn, TKc) with one of the spatial quantities
nx·ny, TOx·TOy, X·Y, nx·ny·X·Y, nx·ny·TOx·TOy (X = (TOx−1)·Sx+(Kx−1)·Dx+1, Y likewise,
n = ⌈O/T⌉) and, for `inter_oxoyon_dirx`'s halo reuse, nx·ny·TOx·Y, ny·Y and ny (the halo is
max((Kx−1)·Dx+1−Sx, 0) columns, so X minus the halo is TOx·Sx or X). A pair dominated in those
quantities gives, with any (TOc, TOn, TKc), a tile dominated in the count vector. On grouped
layers the factor of (TOc, TOn, TKc) includes the groups a tile spans g, its output-map tiles
nc and blocks ⌈G/g⌉ (`model.oc_split`), all functions of TOc, non-negative: the argument holds.

The enumerated values per dimension are `model.tile_candidates` (TOx, TOy, TOn, TKc) and
`model.toc_values` (TOc: inside a group the smallest TOc per ⌈Ocg/TOc⌉; spanning g whole groups
the smallest g per ⌈G/g⌉, since the counts depend on g through ⌈G/g⌉ and through buffers and
tile elements non-decreasing in g). Each dropped value has a kept one with the same tile counts
and no larger buffers, hence a no larger count vector.

Memory. The grid (spatial pairs × (TOc, TOn, TKc)) is priced in chunks of CHUNK_ROWS tiles
in enumeration order; a tile is dropped when a tile kept before it is ≤ it in every count
(dominated, or equal to an earlier tile: the one the one-shot filter keeps). `nondominated`
cleans the kept rows now and then and at the end: the set is the one-shot set, bit for bit.
Refused in one line, before anything is built: counts that could leave int64
(`model.check_int64`), a grid over `model.MAX_GRID_TILES`, and a request whose missing sets
would price over MAX_REQUEST_TILES (with the estimate); while building, over MAX_SET_ROWS
kept rows.

A second kind of set, "traffic", serves traffic under mixed precisions (`explore.traffic_table`:
inputs, weights, final outputs and partial sums of different widths, each buffer at its own
width). Traffic = Σ width × (input, weight, final-output, partial-sum accesses) and buffer =
Σ width × (Bin, Bw, Bout), both non-decreasing in the vector (Bin, Bw, Bout, input accesses,
weight accesses, final-output accesses, partial-sum accesses) for any non-negative widths, so
the same argument and the same spatial pre-reduction hold for it.

A third kind, "arrays", keeps the external accesses apart per array: (footprint, input,
weight, output accesses, DMA transfers, tiles, tile elements). Multi-core pricing weighs the
shared array's traffic apart from the private arrays' (`perf.Contention`, a broadcast crosses
the bus once), and a fused layer drops its input or output traffic (`explore.fusion`): both
are non-negative weightings of the per-array accesses, non-decreasing in this vector.

Sets are cached in memory and on disk (`paths.cache_dir()`), keyed by the layer shape, the
schedule, MODEL_VERSION and a hash of `tiling.model`'s source (MODEL_VERSION 2: TOc may span
groups, dilation enters the shape); a file that does not match its
key, its checksum, or the counts recomputed from its tiles is rebuilt, never used.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.errors import SpecError
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU
from workbench.paths import cache_dir
from workbench.tiling import model
from workbench.tiling.dominance import _keep_sorted, nondominated
from workbench.tiling.model import (
    SCHEDULES,
    check_grid,
    check_schedule,
    counts_array,
    dims,
    final_outputs,
    grid_size,
    n_tile_candidates,
    tile_candidates,
    toc_values,
    valid_tiles,
)

MODEL_VERSION = 2  # bump when the candidate-set format or the dominance argument changes
# tiling.model's source: a change to the count formulas invalidates every cached set
MODEL_HASH = hashlib.sha256(inspect.getsource(model).encode()).hexdigest()
VECTOR = ("footprint_elems", "ext_accesses", "dma_transfers", "n_tiles", "tile_elems")
TRAFFIC_VECTOR = ("bin", "bw", "bout", "in_accesses", "w_accesses", "final_out", "psum_out")
ARRAYS_VECTOR = ("footprint_elems", "in_accesses", "w_accesses", "out_accesses",
                 "dma_transfers", "n_tiles", "tile_elems")
VECTORS = {"cost": VECTOR, "traffic": TRAFFIC_VECTOR, "arrays": ARRAYS_VECTOR}
SHAPE_FIELDS = ("Ox", "Oy", "Oc", "On", "Kx", "Ky", "Kc", "Sx", "Sy", "groups", "Dx", "Dy")
CHUNK_ROWS = 1 << 19       # tiles priced and filtered at once (~100 MB of temporaries)
MAX_SET_ROWS = 1 << 22     # rows one set may keep while it is built (~0.4 GB)
MAX_REQUEST_TILES = 1 << 31  # tiles the missing sets of one request may enumerate (~1 h of a
SECONDS_PER_TILE = 2e-6      # core at about 2 µs a tile, measured on the 8192-map conv)
# the in-memory sets are bounded by their bytes, not their number: a 12-core platform's share
# shapes make hundreds of small sets per network (a count limit made a sweep re-read them all
# from disk for every case); one huge set still stays until the next one arrives
_MEMORY = ByteLRU(512 * 2**20, lambda cs: cs.tiles.nbytes + cs.vectors.nbytes)
# np.load parses .npy headers with ast.literal_eval, which CPython 3.11 does not make safe across
# threads ("SystemError: AST constructor recursion depth mismatch", python/cpython#106905):
# cache files are read one at a time (building sets stays parallel)
_PARSE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class CandidateSet:
    """The non-dominated tiles of one layer shape under one schedule, sorted by footprint.

    tiles: (N, 5) int64 (TOx, TOy, TOc, TOn, TKc); vectors: int64, columns VECTORS[kind];
    grid_size: tiles in the full reduced enumeration (`tiling.gen_tiles`)."""

    shape: tuple[int, ...]
    schedule: str
    tiles: np.ndarray
    vectors: np.ndarray
    grid_size: int
    kind: str = "cost"

    def column(self, name: str) -> np.ndarray:
        return self.vectors[:, VECTORS[self.kind].index(name)]


def shape_key(layer: ConvLayer) -> tuple[int, ...]:
    """The layer fields the counts depend on (names and padding do not enter them)."""
    dims(layer)  # only tiled layers have candidate sets
    return tuple(int(getattr(layer, f)) for f in SHAPE_FIELDS)


def count_vectors(layer: ConvLayer, tiles: np.ndarray, schedule: str,
                  kind: str = "cost") -> np.ndarray:
    """Count vectors of tiles under a schedule, columns VECTORS[kind]."""
    c = counts_array(layer, tiles, schedule)
    if kind == "traffic":
        final = final_outputs(layer, tiles)
        return np.column_stack([c["bin"], c["bw"], c["bout"], c["in_accesses"],
                                c["w_accesses"], final, c["out_accesses"] - final])
    if kind == "arrays":
        return np.column_stack([c["bin"] + c["bw"] + c["bout"], c["in_accesses"],
                                c["w_accesses"], c["out_accesses"], c["dma_transfers"],
                                c["n_tiles"], tiles.prod(axis=1)])
    return np.column_stack([c["bin"] + c["bw"] + c["bout"],
                            c["in_accesses"] + c["w_accesses"] + c["out_accesses"],
                            c["dma_transfers"], c["n_tiles"], tiles.prod(axis=1)])


def _spatial_pairs(layer: ConvLayer, schedule: str) -> np.ndarray:
    """(TOx, TOy) pairs left by the exact pre-reduction of the module docstring."""
    tx, ty = np.meshgrid(tile_candidates(layer.Ox), tile_candidates(layer.Oy), indexing="ij")
    tx, ty = tx.ravel(), ty.ravel()
    nxy = -(-layer.Ox // tx) * -(-layer.Oy // ty)
    ny = -(-layer.Oy // ty)
    x_in = (tx - 1) * layer.Sx + layer.Kx_span
    y_in = (ty - 1) * layer.Sy + layer.Ky_span
    atoms = [nxy, tx * ty, x_in * y_in, nxy * x_in * y_in, nxy * tx * ty]
    if schedule == "inter_oxoyon_dirx":
        atoms += [nxy * tx * y_in, ny * y_in, ny]
    keep = nondominated(np.column_stack(atoms))
    return np.column_stack([tx[keep], ty[keep]])


def enumerated_tiles(layer: ConvLayer, schedule: str) -> int:
    """Tiles `build` prices: the spatial pairs left by the pre-reduction (all pairs when there
    are over 2^22) × the (TOc, TOn, TKc) values."""
    ox, oy = dims(layer)[:2]
    all_pairs = n_tile_candidates(ox) * n_tile_candidates(oy)
    pairs = len(_spatial_pairs(layer, schedule)) if all_pairs <= 1 << 22 else all_pairs
    return pairs * (grid_size(layer) // all_pairs)


def check_request(missing: list[tuple[ConvLayer, str]]) -> None:
    """Refuse up front (one line, with the estimate) building sets whose enumeration together
    exceeds MAX_REQUEST_TILES."""
    sizes = [(enumerated_tiles(layer, schedule), layer.name) for layer, schedule in missing]
    total = sum(size for size, _ in sizes)
    if total > MAX_REQUEST_TILES:
        largest = max(sizes)[1]
        raise SpecError(f"{len(missing)} candidate sets to build would price {total:.3g} tiles "
                        f"(about {total * SECONDS_PER_TILE / 3600:.2g} h of one core; largest "
                        f"layer {largest!r}), beyond the limit of {MAX_REQUEST_TILES:.3g}; "
                        "use a smaller layer or batch")


def _covered_by_earlier(v: np.ndarray) -> np.ndarray:
    """Keep-mask of the rows of v (in enumeration order) that no earlier kept row is ≤ in
    every column (a 0 column first: `dominance._keep_sorted` leaves column 0 untested)."""
    z = np.zeros((len(v), v.shape[1] + 1), dtype=np.int64)
    z[:, 1:] = v
    return _keep_sorted(z)


def _gen_grid(axes: list[np.ndarray], rows: int):
    """The product of `axes` (arrays of shape (n_i, k_i)) in row-major order (the first axis
    outermost), `rows` at a time: the grid is never held whole."""
    sizes = [len(a) for a in axes]
    total = math.prod(sizes)
    for start in range(0, total, rows):
        index = np.unravel_index(np.arange(start, min(start + rows, total)), sizes)
        yield np.column_stack([a[i] for a, i in zip(axes, index, strict=True)])


def _check_rows(layer: ConvLayer, rows: int) -> None:
    if rows > MAX_SET_ROWS:  # each kept row: 5 tile + up to 7 vector int64
        raise SpecError(f"layer {layer.name!r}: the candidate set passed {MAX_SET_ROWS:.3g} "
                        f"non-dominated tiles (about {rows * 96 / 2**30:.3g} GiB) while being "
                        "built; refused to bound memory")


def build(layer: ConvLayer, schedule: str, kind: str = "cost") -> CandidateSet:
    """Enumerate and filter (no cache): the exact candidate set of the module docstring,
    streamed in chunks of CHUNK_ROWS tiles."""
    check_schedule(schedule)
    check_grid(layer)
    _, _, _, on, kc = dims(layer)
    axes = [_spatial_pairs(layer, schedule), toc_values(layer)[:, None],
            tile_candidates(on)[:, None], tile_candidates(kc)[:, None]]
    tiles = np.zeros((0, 5), dtype=np.int64)
    vectors = np.zeros((0, len(VECTORS[kind])), dtype=np.int64)
    clean = 0  # rows after the last clean-up
    for chunk in _gen_grid(axes, CHUNK_ROWS):
        v = count_vectors(layer, chunk, schedule, kind)
        keep = _covered_by_earlier(np.concatenate([vectors, v]))[len(vectors):]
        tiles, vectors = np.concatenate([tiles, chunk[keep]]), np.concatenate([vectors, v[keep]])
        if len(vectors) > 2 * clean + CHUNK_ROWS // 2:
            keep = np.sort(nondominated(vectors))  # enumeration order stays
            tiles, vectors, clean = tiles[keep], vectors[keep], len(keep)
            _check_rows(layer, clean)
    keep = nondominated(vectors)
    return CandidateSet(shape_key(layer), schedule, tiles[keep], vectors[keep],
                        grid_size(layer), kind)


def _checksum(meta: dict, tiles: np.ndarray, vectors: np.ndarray) -> str:
    """SHA-256 over the key fields and both arrays (guards against damage, not forgery)."""
    head = repr((meta.get("version"), meta.get("model"), meta.get("shape"),
                 meta.get("schedule"), meta.get("kind"), meta.get("grid_size"))).encode()
    return hashlib.sha256(head + tiles.tobytes() + vectors.tobytes()).hexdigest()


def _file(key: tuple[int, ...], schedule: str, kind: str) -> Path:
    name = hashlib.sha256(repr((key, schedule, kind)).encode()).hexdigest()[:24]
    folder = cache_dir() / f"candidates-v{MODEL_VERSION}-{MODEL_HASH[:12]}"
    return folder / f"{kind}-{schedule}-{name}.npz"


def _load(path: Path, layer: ConvLayer, schedule: str, kind: str) -> CandidateSet | None:
    """The cached set at `path` if it is whole, current and consistent; else None."""
    try:
        with _PARSE_LOCK, np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"]))
            tiles, vectors = f["tiles"], f["vectors"]
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile):
        return None
    key = shape_key(layer)
    ok = (meta.get("version") == MODEL_VERSION and meta.get("model") == MODEL_HASH
          and tuple(meta.get("shape", ())) == key
          and meta.get("schedule") == schedule and meta.get("kind") == kind
          and tiles.dtype == vectors.dtype == np.int64
          and tiles.ndim == vectors.ndim == 2 and tiles.shape == (len(vectors), 5)
          and vectors.shape[1] == len(VECTORS[kind]) and len(tiles) > 0
          and meta.get("checksum") == _checksum(meta, tiles, vectors))
    if not ok or not valid_tiles(layer, tiles).all():
        return None
    if not np.array_equal(count_vectors(layer, tiles, schedule, kind), vectors):
        return None
    return CandidateSet(key, schedule, tiles, vectors, int(meta["grid_size"]), kind)


def _store(path: Path, cs: CandidateSet) -> None:
    """Write atomically (a temporary file renamed into place); an unwritable cache is skipped."""
    meta = {"version": MODEL_VERSION, "model": MODEL_HASH, "shape": list(cs.shape),
            "schedule": cs.schedule, "kind": cs.kind, "grid_size": cs.grid_size}
    meta["checksum"] = _checksum(meta, cs.tiles, cs.vectors)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            np.savez(out, meta=json.dumps(meta), tiles=cs.tiles, vectors=cs.vectors)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


def candidate_set(layer: ConvLayer, schedule: str, kind: str = "cost",
                  use_disk: bool = True) -> CandidateSet:
    """The layer's candidate set of a kind ("cost", "traffic", "arrays") under a schedule: from
    memory, else disk, else built. Thread-safe; the filter runs without the GIL, so threads
    build sets in parallel."""
    check_schedule(schedule)
    if kind not in VECTORS:
        raise ValueError(f"candidate-set kind must be one of {sorted(VECTORS)}, got {kind!r}")
    mem_key = (shape_key(layer), schedule, kind)
    cs = _MEMORY.get(mem_key)
    if cs is not None:
        return cs
    path = _file(*mem_key)
    cs = _load(path, layer, schedule, kind) if use_disk else None
    if cs is None:
        cs = build(layer, schedule, kind)
        if use_disk:
            _store(path, cs)
    return _MEMORY.put(mem_key, cs)


def candidate_sets(pairs: list[tuple[ConvLayer, str]], jobs: int | None = None,
                   progress: bool = False, kind: str = "cost") -> list:
    """`candidate_set` of many (layer, schedule) pairs, missing ones built once per shape by
    `jobs` threads (default: one per core); `progress` shows a bar (stderr) while building."""
    from tqdm import tqdm

    jobs = jobs or os.cpu_count() or 1
    unique = {(shape_key(layer), schedule): (layer, schedule) for layer, schedule in pairs}
    for layer, _ in unique.values():  # refuse before building anything
        check_grid(layer)

    def size(key: tuple) -> int:  # largest first keeps both threads busy to the end
        return -grid_size(unique[key][0])

    order = sorted(unique, key=size)
    todo = [unique[key] for key in order  # neither in memory nor on disk
            if _MEMORY.get((key[0], key[1], kind)) is None
            and not _file(key[0], key[1], kind).exists()]
    check_request(todo)
    missing = len(todo)
    bar = tqdm(total=len(order), unit="set", desc="candidate sets",
               disable=not progress or missing == 0)
    done = {}
    if jobs == 1 or len(order) < 2 or missing == 0:  # all in memory or on disk: no threads
        for key in order:
            done[key] = candidate_set(*unique[key], kind=kind)
            bar.update()
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            built = pool.map(lambda k: candidate_set(*unique[k], kind=kind), order)
            for key, cs in zip(order, built, strict=True):
                done[key] = cs
                bar.update()
    bar.close()
    return [done[(shape_key(layer), schedule)] for layer, schedule in pairs]


def clear_memory_cache() -> None:
    """Forget the in-memory sets (the disk cache stays)."""
    _MEMORY.clear()


@functools.lru_cache(maxsize=4096)
def local_accesses(layer: ConvLayer, register_file_bytes: int, elem_bytes: int) -> int:
    """Best-case DSP↔local-memory traffic (elements): the access functions one level down,
    with the register file as the small memory, minimized over schedules and register tiles
    (seed 000 §5.4). Exact: the least accesses of a fitting tile is attained in each
    schedule's candidate set (tiling.candidates)."""
    limit = register_file_bytes // elem_bytes
    best = None
    for schedule in SCHEDULES:
        cs = candidate_set(layer, schedule)
        fits = cs.column("footprint_elems") <= limit
        if fits.any():
            low = int(cs.column("ext_accesses")[fits].min())
            best = low if best is None else min(best, low)
    if best is None:  # not even a 1x1x1x1x1 tile fits the register file: every operand streams
        c = counts_array(layer, np.ones((1, 5), dtype=np.int64), "intra")
        best = int(c["in_accesses"][0] + c["w_accesses"][0] + c["out_accesses"][0])
    return best
