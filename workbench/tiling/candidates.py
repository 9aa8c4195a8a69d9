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

Capped sets. A query at a known memory never uses a tile whose footprint F = Bin+Bw+Bout
exceeds it, so `candidate_set(..., cap=C)` is the set restricted to F ≤ C elements, built
without enumerating the tiles above C (`tiling.capped`: F is non-decreasing in every tile
dimension, so each prefix that passes C is dropped with all its extensions). Exact: row a
dominates row b (`dominance`) when a ≤ b in every column, and F is a column of the "cost" and
"arrays" vectors and the sum of the columns Bin, Bw, Bout of the "traffic" vector, so a tile
that dominates (or equals) a fitting tile fits too; hence the non-dominated tiles among the
fitting ones are exactly the fitting tiles of the whole set, and since the capped enumeration
visits the grid's fitting tiles in the grid's order, the tile kept for each vector (the first
in that order) is the same: the capped set is the whole set filtered to F ≤ C, row for row,
in the same (lexicographic) order, a prefix of "cost" and "arrays" sets (footprint first).
The same subset of the spatial pre-reduction's pairs is used (the argument holds for any
tile set). Callers turn bytes into a cap with `cap_elems` (÷ element bytes, ×2 buffers);
a caller weighing buffers at several widths ("traffic") must cap at ⌊memory / narrowest
width⌋. The up-front estimate of a capped request counts exactly the fitting tiles the capped
enumeration prices (`capped.capped_size`) when that is quick, else the uncapped figure.

Sets are cached in memory and on disk (`candidate_set` module: paths.cache_dir()), keyed by
the layer shape, the schedule, MODEL_VERSION and a hash of `tiling.model`'s source
(MODEL_VERSION 2: TOc may span groups, dilation enters the shape), a capped set also by its
cap; a set held for cap C (or whole) serves every cap ≤ C by `CandidateSet.restrict`, and
memory and disk keep the largest one built. A file that does not match its key, its
checksum, its cap or the counts recomputed from its tiles is rebuilt, never used.
"""

from __future__ import annotations

import functools
import math
import os
import threading

import numpy as np

from workbench import resources
from workbench.errors import SpecError
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU, Caches, caches_or_new
from workbench.numbers import fmt_bytes, fmt_number, fmt_si
from workbench.tiling.candidate_set import (  # noqa: F401  (re-exported: the public names)
    ARRAYS_VECTOR,
    MODEL_HASH,
    MODEL_VERSION,
    SHAPE_FIELDS,
    TRAFFIC_VECTOR,
    VECTOR,
    VECTORS,
    CandidateSet,
    DiskIndex,
    _checksum,
    _file,
    _load,
    cache_limit_bytes,
    cap_elems,
    count_vectors,
    prune,
    shape_key,
)
from workbench.tiling.capped import capped_size, gen_capped_tiles
from workbench.tiling.dominance import _keep_sorted, nondominated
from workbench.tiling.model import (
    SCHEDULES,
    check_grid,
    check_schedule,
    counts_array,
    dims,
    grid_size,
    n_tile_candidates,
    tile_candidates,
    toc_values,
)

CHUNK_ROWS = 1 << 19       # tiles priced and filtered at once (~100 MB of temporaries)
MAX_SET_ROWS = 1 << 22     # rows one set may keep while it is built (~0.4 GB)
MAX_REQUEST_TILES = 1 << 31  # tiles the missing sets of one request may enumerate (~1 h of a
SECONDS_PER_TILE = 2e-6      # core at about 2 µs a tile, measured on the 8192-map conv)
MEMORY_BYTES = 512 * 2**20  # in-memory sets of one session (`SetMemory`)


def _set_bytes(cs: CandidateSet) -> int:
    return cs.tiles.nbytes + cs.vectors.nbytes


class SetMemory:
    """A session's candidate sets (one per `memo.Caches`): in memory, keyed (shape, schedule,
    kind, cap), bounded by their bytes (MEMORY_BYTES), not their number: a 12-core platform's
    share shapes make hundreds of small sets per network (a count limit made a sweep re-read
    them all from disk for every case); one huge set still stays until the next one arrives.
    `held`: the caps held per (shape, schedule, kind) (None: whole), an index that may name
    sets the LRU has since dropped; `disk`: the session's view of the cache folders."""

    def __init__(self) -> None:
        self.sets = ByteLRU(MEMORY_BYTES, _set_bytes)
        self.held: dict[tuple, set] = {}
        self.disk = DiskIndex()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, caches: Caches | None) -> SetMemory:
        """The candidate sets kept in `caches` (none: a memory for one call)."""
        return caches_or_new(caches).store("candidate sets", cls)

    @property
    def nbytes(self) -> int:
        return self.sets.nbytes

    def find(self, key: tuple, cap: int | None) -> CandidateSet | None:
        """The smallest set in memory that covers `cap` (the whole set last), or None."""
        with self._lock:
            caps = sorted(self.held.get(key, ()), key=lambda c: (c is None, c or 0))
        for have in caps:
            if have is None or (cap is not None and cap <= have):
                cs = self.sets.get((*key, have))
                if cs is not None:
                    return cs
                with self._lock:  # dropped by the LRU
                    self.held.get(key, set()).discard(have)
        return None

    def keep(self, key: tuple, cs: CandidateSet) -> CandidateSet:
        """Hold the set (the one held already if another thread was first)."""
        with self._lock:
            self.held.setdefault(key, set()).add(cs.cap)
        return self.sets.put((*key, cs.cap), cs)


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


def enumerated_tiles(layer: ConvLayer, schedule: str, cap: int | None = None) -> int:
    """Tiles `build` prices (an upper bound): uncapped, the spatial pairs left by the
    pre-reduction (all pairs when there are over 2^22) × the (TOc, TOn, TKc) values; capped,
    the fitting tiles the capped enumeration visits (`capped.capped_size`, exact) when they
    can be counted quickly, else that uncapped figure."""
    ox, oy = dims(layer)[:2]
    all_pairs = n_tile_candidates(ox) * n_tile_candidates(oy)
    if all_pairs > 1 << 22:
        return grid_size(layer)
    pairs = _spatial_pairs(layer, schedule)
    full = len(pairs) * (grid_size(layer) // all_pairs)
    if cap is None:
        return full
    size = capped_size(layer, pairs, cap)
    return full if size is None else min(size, full)


ROW_BYTES = 8 * 12  # a kept row: 5 tile + up to 7 vector int64
CHUNK_BYTES = 200 * CHUNK_ROWS  # one chunk's tiles, counts and temporaries while it is priced
PAIR_BYTES = 512  # the (TOx, TOy) pre-reduction's atoms and temporaries per pair (measured)


def _pairs(layer: ConvLayer) -> int:
    """(TOx, TOy) pairs the pre-reduction weighs."""
    ox, oy = dims(layer)[:2]
    return n_tile_candidates(ox) * n_tile_candidates(oy)


def check_request(missing: list[tuple[ConvLayer, str]], cap: int | None = None,
                  jobs: int = 1) -> None:
    """Refuse up front (one line, with the estimate) building sets (capped at `cap` elements)
    whose enumeration together exceeds MAX_REQUEST_TILES, or whose kept rows (at most
    MAX_SET_ROWS a set) for the `jobs` sets built at once, with their chunks in flight,
    exceed the memory budget (an upper bound: the dominance pruning keeps far fewer rows;
    built sets go to disk and a bounded in-memory cache)."""
    if missing:  # first what the pre-reduction takes (the tile count below needs it too)
        pairs = sorted(((_pairs(layer), layer.name) for layer, _ in missing), reverse=True)
        resources.check(f"{len(missing)} candidate set(s) to build (largest layer "
                        f"{pairs[0][1]!r}, {pairs[0][0]:,} spatial tile pairs)",
                        sum(n for n, _ in pairs[:jobs]) * PAIR_BYTES)
    sizes = [(enumerated_tiles(layer, schedule, cap), layer.name) for layer, schedule in missing]
    if sizes:
        rows = sorted((min(size, MAX_SET_ROWS) for size, _ in sizes), reverse=True)[:jobs]
        resources.check(f"{len(missing)} candidate set(s) to build (largest layer "
                        f"{max(sizes)[1]!r}, up to {sum(rows):,} rows kept at once)",
                        sum(rows) * ROW_BYTES + len(rows) * CHUNK_BYTES)
    total = sum(size for size, _ in sizes)
    if total > MAX_REQUEST_TILES:
        largest = max(sizes)[1]
        raise SpecError(f"{len(missing)} candidate sets to build would price {fmt_si(total)} "
                        f"tiles (about {fmt_number(total * SECONDS_PER_TILE / 3600)} h of one "
                        f"core; largest layer {largest!r}), beyond the limit of "
                        f"{fmt_si(MAX_REQUEST_TILES)}; "
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
        raise SpecError(f"layer {layer.name!r}: the candidate set passed {fmt_si(MAX_SET_ROWS)} "
                        f"non-dominated tiles (about {fmt_bytes(rows * 96)}) while being "
                        "built; refused to bound memory")


def build(layer: ConvLayer, schedule: str, kind: str = "cost",
          cap: int | None = None) -> CandidateSet:
    """Enumerate and filter (no cache): the exact candidate set of the module docstring,
    streamed in chunks of CHUNK_ROWS tiles; with `cap`, of the tiles with footprint ≤ cap
    elements only (the others are never enumerated: "Capped sets")."""
    check_schedule(schedule)
    check_grid(layer)
    _, _, _, on, kc = dims(layer)
    pairs = _spatial_pairs(layer, schedule)
    if cap is None:
        chunks = _gen_grid([pairs, toc_values(layer)[:, None], tile_candidates(on)[:, None],
                            tile_candidates(kc)[:, None]], CHUNK_ROWS)
    else:
        chunks = gen_capped_tiles(layer, pairs, cap, CHUNK_ROWS)
    tiles = np.zeros((0, 5), dtype=np.int64)
    vectors = np.zeros((0, len(VECTORS[kind])), dtype=np.int64)
    clean = 0  # rows after the last clean-up
    for chunk in chunks:
        v = count_vectors(layer, chunk, schedule, kind)
        keep = _covered_by_earlier(np.concatenate([vectors, v]))[len(vectors):]
        tiles, vectors = np.concatenate([tiles, chunk[keep]]), np.concatenate([vectors, v[keep]])
        if len(vectors) > 2 * clean + CHUNK_ROWS // 2:
            keep = np.sort(nondominated(vectors))  # enumeration order stays
            tiles, vectors, clean = tiles[keep], vectors[keep], len(keep)
            _check_rows(layer, clean)
    keep = nondominated(vectors)
    return CandidateSet(shape_key(layer), schedule, tiles[keep], vectors[keep],
                        grid_size(layer), kind, cap)


def _fetch(layer: ConvLayer, schedule: str, kind: str, cap: int | None,
           disk: DiskIndex | None) -> CandidateSet:
    """A set covering `cap`: from disk (`disk`: the session's view of it; None: not used; the
    smallest file that covers it), else built and stored (capped files it makes redundant
    are removed)."""
    key = shape_key(layer)
    if disk is not None:
        for have in disk.caps(key, schedule, kind):
            if have is None or (cap is not None and cap <= have):
                cs = _load(_file(key, schedule, kind, have), layer, schedule, kind, have)
                if cs is not None:
                    return cs
    check_request([(layer, schedule)], cap)  # refuse before building, by its estimate
    cs = build(layer, schedule, kind, cap)
    if disk is not None:
        disk.store(_file(key, schedule, kind, cap), cs)
        disk.prune_after_write(_file(key, schedule, kind, cap))
        for have in disk.caps(key, schedule, kind):
            if have is not None and (cap is None or have < cap):
                disk.remove(_file(key, schedule, kind, have))
    return cs


def candidate_set(layer: ConvLayer, schedule: str, kind: str = "cost",
                  use_disk: bool = True, cap: int | None = None,
                  caches: Caches | None = None) -> CandidateSet:
    """The layer's candidate set of a kind ("cost", "traffic", "arrays") under a schedule,
    restricted to footprint ≤ cap elements (None: whole; see "Capped sets"): from memory
    (`caches`' `SetMemory`; none: this call's), else disk, else built. A set held for a
    larger cap (or whole) serves a smaller one. Thread-safe; the filter runs without the
    GIL, so threads build sets in parallel."""
    check_schedule(schedule)
    if kind not in VECTORS:
        raise ValueError(f"candidate-set kind must be one of {sorted(VECTORS)}, got {kind!r}")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int | np.integer)
                            or cap < 0):
        raise ValueError(f"candidate-set cap must be a non-negative integer, got {cap!r}")
    cap = None if cap is None else int(cap)
    key = (shape_key(layer), schedule, kind)
    memory = SetMemory.of(caches)
    cs = memory.find(key, cap)
    if cs is None:
        cs = memory.keep(key, _fetch(layer, schedule, kind, cap,
                                     memory.disk if use_disk else None))
    return cs.restrict(cap)


def candidate_sets(pairs: list[tuple[ConvLayer, str]], jobs: int | None = None,
                   progress: bool = False, kind: str = "cost",
                   cap: int | None = None, caches: Caches | None = None) -> list:
    """`candidate_set` of many (layer, schedule) pairs (capped at `cap` elements), missing
    ones built once per shape by `jobs` threads (default: one per core); `progress` shows a
    bar (stderr) while building; `caches`: where the sets are kept (none: for this call)."""
    caches = caches_or_new(caches)
    memory = SetMemory.of(caches)
    from tqdm import tqdm

    jobs = jobs or os.cpu_count() or 1
    unique = {(shape_key(layer), schedule): (layer, schedule) for layer, schedule in pairs}
    for layer, _ in unique.values():  # refuse before building anything
        check_grid(layer)

    def size(key: tuple) -> int:  # largest first keeps both threads busy to the end
        return -grid_size(unique[key][0])

    def held(key: tuple) -> bool:  # in memory or on disk
        return (memory.find((*key, kind), cap) is not None
                or memory.disk.on_disk(key[0], key[1], kind, cap))

    def get(key: tuple) -> CandidateSet:
        return candidate_set(*unique[key], kind=kind, cap=cap, caches=caches)

    order = sorted(unique, key=size)
    todo = [unique[key] for key in order if not held(key)]
    check_request(todo, cap, jobs)
    missing = len(todo)
    bar = tqdm(total=len(order), unit="set", desc="candidate sets",
               disable=not progress or missing == 0)
    done = {}
    if jobs == 1 or len(order) < 2 or missing == 0:  # all in memory or on disk: no threads
        for key in order:
            done[key] = get(key)
            bar.update()
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for key, cs in zip(order, pool.map(get, order), strict=True):
                done[key] = cs
                bar.update()
    bar.close()
    return [done[(shape_key(layer), schedule)] for layer, schedule in pairs]


@functools.lru_cache(maxsize=4096)
def local_accesses(layer: ConvLayer, register_file_bytes: int, elem_bytes: int) -> int:
    """Best-case DSP↔local-memory traffic (elements): the access functions one level down,
    with the register file as the small memory, minimized over schedules and register tiles
    (seed 000 §5.4). Exact: the least accesses of a fitting tile is attained in each
    schedule's candidate set (tiling.candidates)."""
    limit = int(register_file_bytes // elem_bytes)
    best = None
    for schedule in SCHEDULES:  # sets capped at the register file: only tiles that fit
        cs = candidate_set(layer, schedule, cap=limit)
        if len(cs.tiles):
            low = int(cs.column("ext_accesses").min())
            best = low if best is None else min(best, low)
    if best is None:  # not even a 1x1x1x1x1 tile fits the register file: every operand streams
        c = counts_array(layer, np.ones((1, 5), dtype=np.int64), "intra")
        best = int(c["in_accesses"][0] + c["w_accesses"][0] + c["out_accesses"][0])
    return best
