"""`CandidateSet`: one layer shape's candidate set under one schedule, its count vectors, and
its disk cache files (the argument for the sets is in `tiling.candidates`).

Files live in `paths.cache_dir()`, one folder per MODEL_VERSION and hash of `tiling.model`'s
source. A whole set is `{kind}-{schedule}-{hash of the shape}.npz` (the name and checksum of
before caps: such files stay valid); a set capped at C elements of footprint adds `-capC` and
records `cap` in its meta data (and checksum). A file that does not match its key, its
checksum, its cap or the counts recomputed from its tiles is never used. The files are kept
within $WORKBENCH_CACHE_MAX_MB (default 1 GB), least recently used deleted first (`prune`,
after a write that may pass the limit: `prune_after_write`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.paths import cache_dir
from workbench.tiling import model
from workbench.tiling.model import counts_array, dims, final_outputs, valid_tiles

MODEL_VERSION = 2  # bump when the candidate-set format or the dominance argument changes
# tiling.model's source: a change to the count formulas invalidates every cached set
MODEL_HASH = hashlib.sha256(inspect.getsource(model).encode()).hexdigest()
VECTOR = ("footprint_elems", "ext_accesses", "dma_transfers", "n_tiles", "tile_elems")
TRAFFIC_VECTOR = ("bin", "bw", "bout", "in_accesses", "w_accesses", "final_out", "psum_out")
ARRAYS_VECTOR = ("footprint_elems", "in_accesses", "w_accesses", "out_accesses",
                 "dma_transfers", "n_tiles", "tile_elems")
VECTORS = {"cost": VECTOR, "traffic": TRAFFIC_VECTOR, "arrays": ARRAYS_VECTOR}
SHAPE_FIELDS = ("Ox", "Oy", "Oc", "On", "Kx", "Ky", "Kc", "Sx", "Sy", "groups", "Dx", "Dy")
# np.load parses .npy headers with ast.literal_eval, which CPython 3.11 does not make safe across
# threads ("SystemError: AST constructor recursion depth mismatch", python/cpython#106905):
# cache files are read one at a time (building sets stays parallel)
_PARSE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class CandidateSet:
    """The non-dominated tiles of one layer shape under one schedule, sorted by footprint.

    tiles: (N, 5) int64 (TOx, TOy, TOc, TOn, TKc); vectors: int64, columns VECTORS[kind];
    grid_size: tiles in the full reduced enumeration (`tiling.gen_tiles`); cap: None for the
    whole set, else the largest footprint (elements) it was built for (the set restricted to
    footprint ≤ cap, see "Capped sets")."""

    shape: tuple[int, ...]
    schedule: str
    tiles: np.ndarray
    vectors: np.ndarray
    grid_size: int
    kind: str = "cost"
    cap: int | None = None

    def column(self, name: str) -> np.ndarray:
        if name == "footprint_elems" and self.kind == "traffic":
            return self.vectors[:, :3].sum(axis=1)  # Bin + Bw + Bout
        return self.vectors[:, VECTORS[self.kind].index(name)]

    def covers(self, cap: int | None) -> bool:
        """Whether this set holds every candidate with footprint ≤ cap (None: all)."""
        return self.cap is None or (cap is not None and cap <= self.cap)

    def restrict(self, cap: int | None) -> CandidateSet:
        """This set restricted to footprint ≤ cap elements (a set that covers the cap): the
        set capped at `cap`, row for row (a prefix of "cost" and "arrays" sets, which are
        sorted by footprint; a subsequence of "traffic" sets)."""
        if not self.covers(cap):
            raise ValueError(f"a set capped at {self.cap} cannot serve cap {cap}")
        if cap is None or cap == self.cap:
            return self
        fp = self.column("footprint_elems")
        if self.kind == "traffic":
            keep = np.flatnonzero(fp <= cap)
        else:
            keep = slice(0, int(np.searchsorted(fp, cap, side="right")))
        return CandidateSet(self.shape, self.schedule, self.tiles[keep], self.vectors[keep],
                            self.grid_size, self.kind, cap)


def cap_elems(memory_bytes: float | None, bytes_per_elem: int) -> int | None:
    """The footprint cap (elements) of a memory size (bytes) at `bytes_per_elem` bytes per
    footprint element (element bytes, ×2 when double-buffered): ⌊memory / bytes⌋, None (no
    cap) for no or an infinite memory."""
    if memory_bytes is None or not math.isfinite(memory_bytes):
        return None
    return max(int(memory_bytes // bytes_per_elem), 0)


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

def _checksum(meta: dict, tiles: np.ndarray, vectors: np.ndarray) -> str:
    """SHA-256 over the key fields and both arrays (guards against damage, not forgery)."""
    head = repr((meta.get("version"), meta.get("model"), meta.get("shape"),
                 meta.get("schedule"), meta.get("kind"), meta.get("grid_size"))).encode()
    if meta.get("cap") is not None:  # whole sets keep the checksum of before caps
        head += repr(("cap", meta["cap"])).encode()
    return hashlib.sha256(head + tiles.tobytes() + vectors.tobytes()).hexdigest()


def _file(key: tuple[int, ...], schedule: str, kind: str, cap: int | None = None) -> Path:
    """Cache file of a set: the whole set's name as before caps, a capped one's `-capN`."""
    name = hashlib.sha256(repr((key, schedule, kind)).encode()).hexdigest()[:24]
    folder = cache_dir() / f"candidates-v{MODEL_VERSION}-{MODEL_HASH[:12]}"
    return folder / f"{kind}-{schedule}-{name}{'' if cap is None else f'-cap{cap}'}.npz"


def _stamp(folder: Path) -> int | None:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return None


def _stem_cap(stem: str) -> tuple[str, int | None]:
    """A file stem's whole-set stem and cap (None: the whole set)."""
    head, sep, tail = stem.rpartition("-cap")
    return (head, int(tail)) if sep and tail.isdigit() else (stem, None)


def _load(path: Path, layer: ConvLayer, schedule: str, kind: str,
          cap: int | None = None) -> CandidateSet | None:
    """The cached set (capped at `cap`) at `path` if it is whole, current and consistent."""
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
          and meta.get("cap") == cap
          and tiles.dtype == vectors.dtype == np.int64
          and tiles.ndim == vectors.ndim == 2 and tiles.shape == (len(vectors), 5)
          and vectors.shape[1] == len(VECTORS[kind]) and (len(tiles) > 0 or cap is not None)
          and meta.get("checksum") == _checksum(meta, tiles, vectors))
    if not ok or not valid_tiles(layer, tiles).all():
        return None
    if not np.array_equal(count_vectors(layer, tiles, schedule, kind), vectors):
        return None
    cs = CandidateSet(key, schedule, tiles, vectors, int(meta["grid_size"]), kind, cap)
    if cap is not None and (cs.column("footprint_elems") > cap).any():
        return None
    try:
        os.utime(path)  # used now: `prune` deletes least recently used files first
    except OSError:
        pass
    return cs


CACHE_MAX_MB = 1024.0  # default bound on the cache's candidate files ($WORKBENCH_CACHE_MAX_MB)
_STALE_TMP_S = 3600.0  # a temporary file this old is a crashed write's


def cache_limit_bytes() -> float:
    """The bound on the candidate files' total size: $WORKBENCH_CACHE_MAX_MB (MB) if set."""
    value = os.environ.get("WORKBENCH_CACHE_MAX_MB", "")
    try:
        mb = float(value) if value else CACHE_MAX_MB
    except ValueError:
        raise WorkbenchError(f"WORKBENCH_CACHE_MAX_MB must be a number of megabytes, got "
                             f"{value!r}") from None
    if not mb >= 0:
        raise WorkbenchError(f"WORKBENCH_CACHE_MAX_MB must be >= 0, got {value!r}")
    return mb * 2**20


def prune(limit_bytes: float | None = None, keep: Path | None = None,
          index: DiskIndex | None = None) -> int:
    """Delete candidate files, least recently used first (loading a file marks it used), until
    those left total at most `limit_bytes` (default `cache_limit_bytes()`); files of other
    MODEL_VERSION or model hashes and crashed writes go first, `keep` never. Another process
    reading a deleted file only rebuilds its set; `index` (a session's view of the folders)
    is told what was found and removed. Returns the bytes deleted."""
    limit = cache_limit_bytes() if limit_bytes is None else limit_bytes
    current = _file((), "", "").parent
    now = time.time()
    found = []
    try:
        for folder in current.parent.glob("candidates-v*"):
            for path in folder.iterdir():
                info = path.stat()
                stale = folder != current or (path.suffix == ".tmp" and
                                              now - info.st_mtime > _STALE_TMP_S)
                if path.suffix == ".npz" or stale:
                    found.append((not stale, info.st_mtime, info.st_size, path))
    except OSError:
        return 0
    total, removed = sum(size for *_, size, _ in found), 0
    for _, _, size, path in sorted(found):
        if total <= limit:
            break
        if path == keep:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        total, removed = total - size, removed + size
    if index is not None:
        index.scanned(current, total, removed > 0)
    for folder in current.parent.glob("candidates-v*"):
        if folder != current:
            try:
                folder.rmdir()  # only when emptied
            except OSError:
                pass
    return removed





PRUNE_RESCAN_S = 10.0  # seconds a scan of the cache's size is trusted (other processes write)


class DiskIndex:
    """A session's view of the cache folders (one per `memo.Caches`, held by the in-memory
    sets: `candidates.SetMemory`); thread-safe.

    Listings: per folder, {file stem of a whole set: its caps on disk (None: the whole
    file)}, with the folder's mtime when listed. Looking a set up by globbing scanned the
    whole folder every time, and thousands of files made each lookup cost milliseconds. A
    listing is read again when the folder's mtime moves; this session's own writes and
    deletions update it in place. It only guides lookups: a listed file that is gone fails
    to load, and a file another process wrote in the same clock tick as the listing, or
    while this session wrote, is missed and rebuilt (never a wrong count).

    Sizes: per folder, (monotonic time of the last full scan by `prune`, bytes found then
    plus what this session wrote since). A scan stats every file: run after each write, it
    made a cache of thousands of files cost milliseconds per set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listings: dict[Path, tuple[int, dict[str, set[int | None]]]] = {}
        self._scanned: dict[Path, tuple[float, float]] = {}

    def listing(self, folder: Path) -> dict[str, set[int | None]]:
        """The folder's {whole-set stem: caps on disk}."""
        stamp = _stamp(folder)
        if stamp is None:
            return {}
        with self._lock:
            held = self._listings.get(folder)
        if held is not None and held[0] == stamp:
            return held[1]
        found: dict[str, set[int | None]] = {}
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".npz"):
                        head, cap = _stem_cap(entry.name[:-4])
                        found.setdefault(head, set()).add(cap)
        except OSError:
            return {}
        with self._lock:
            self._listings[folder] = (stamp, found)
        return found

    def _noted(self, path: Path, before: int | None, added: bool) -> None:
        """Update the listing of `path`'s folder after this session wrote (`added`) or
        deleted `path`, the folder's mtime having been `before` just ahead of it; a listing
        older than that is dropped instead (read again at the next lookup)."""
        after = _stamp(path.parent)
        with self._lock:
            held = self._listings.pop(path.parent, None)
            if held is None or before is None or after is None or held[0] != before:
                return
            head, cap = _stem_cap(path.stem)
            caps = held[1].setdefault(head, set())
            if added:
                caps.add(cap)
            else:
                caps.discard(cap)
            self._listings[path.parent] = (after, held[1])

    def forget(self) -> None:
        """Read the cache folders again at the next lookup."""
        with self._lock:
            self._listings.clear()

    def caps(self, key: tuple[int, ...], schedule: str, kind: str) -> list[int | None]:
        """Caps of the files on disk for a set, the best first: the smallest capped ones,
        then the whole set (None)."""
        whole = _file(key, schedule, kind)
        caps = self.listing(whole.parent).get(whole.stem, set())
        return [*sorted(c for c in caps if c is not None), *([None] if None in caps else [])]

    def on_disk(self, key: tuple[int, ...], schedule: str, kind: str, cap: int | None) -> bool:
        """Whether a file on disk may serve the set capped at `cap` (None: the whole set)."""
        return any(c is None or (cap is not None and cap <= c)
                   for c in self.caps(key, schedule, kind))

    def remove(self, path: Path) -> None:
        """Delete a cache file if it is there."""
        before = _stamp(path.parent)
        try:
            path.unlink()
        except OSError:
            pass
        self._noted(path, before, added=False)

    def store(self, path: Path, cs: CandidateSet) -> None:
        """Write atomically (a temporary file renamed into place); an unwritable cache is
        skipped."""
        meta = {"version": MODEL_VERSION, "model": MODEL_HASH, "shape": list(cs.shape),
                "schedule": cs.schedule, "kind": cs.kind, "grid_size": cs.grid_size}
        if cs.cap is not None:
            meta["cap"] = cs.cap
        meta["checksum"] = _checksum(meta, cs.tiles, cs.vectors)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            before = _stamp(path.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as out:
                np.savez(out, meta=json.dumps(meta), tiles=cs.tiles, vectors=cs.vectors)
            os.replace(tmp, path)
            self._noted(path, before, added=True)
        except OSError:
            try:
                os.unlink(tmp)
            except (OSError, UnboundLocalError):
                pass

    def prune_after_write(self, path: Path) -> int:
        """`prune` (keeping `path`, just written) when this session's view says the cache
        may be over its limit: its last scan's total plus what it wrote since passes the
        limit, or that scan is older than PRUNE_RESCAN_S (other processes write too: the
        cache may pass its limit by what they wrote in that time). Returns the bytes
        deleted."""
        limit = cache_limit_bytes()
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        with self._lock:
            seen = self._scanned.get(path.parent)
            if seen is not None and time.monotonic() - seen[0] < PRUNE_RESCAN_S \
                    and seen[1] + size <= limit:
                self._scanned[path.parent] = (seen[0], seen[1] + size)
                return 0
        return prune(limit, keep=path, index=self)

    def scanned(self, folder: Path, total: float, removed: bool) -> None:
        """`prune` found `total` bytes in `folder` (and deleted files when `removed`)."""
        with self._lock:
            self._scanned[folder] = (time.monotonic(), total)
        if removed:
            self.forget()
