"""Multi-core mapping: per layer, the split, the number of cores used, and every core's tile and
schedule, exactly, from candidate sets.

A layer is split by output maps, rows, batch or groups over k = 1…cores cores
(`tiling.partition`); each share is tiled like a layer of its own and priced by `perf.price`
under `perf.Contention`
(k cores share the bus and the DMA channels; a broadcast array crosses the bus once per share).
The cores of one share run the same program (one tile, one schedule); the slowest share sets
the layer's time, energies and bus traffic add up over cores.

Exact search. A share's cycles, energy and bus traffic are non-decreasing in its candidate
vector ("arrays" kind when the DMA broadcasts, so the shared array's traffic stays apart), so
its optimum is a candidate (`tiling.candidates`). With two shares the layer's cycles are the
larger share's and the rest add up, so for the objective's value the search sweeps the layer
time T over every candidate's cycles and takes, per share, the cheapest row not slower than T
(for cycles, energy and accesses this reduces to one pick per share; for EDP the sweep is
needed because T·(E_A + E_B) does not separate). Ties: cycles, then bus traffic.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.errors import SpecError
from workbench.explore.query import check_objective, ranking
from workbench.explore.solutions import too_small
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU, Caches, caches_or_new
from workbench.perf import ENERGY_PARTS, Contention, CountVector, layer_local_accesses, price
from workbench.platforms import Platform
from workbench.tiling.candidates import candidate_sets, cap_elems, shape_key
from workbench.tiling.model import SCHEDULES, TILE_DIMS, counts_array
from workbench.tiling.partition import SHARED, SPLITS, max_cores, shares

ARRAYS = ("in", "w", "out")


@dataclass(frozen=True, eq=False)
class ShareRows:
    """Candidate rows of one share shape over the schedules, in elements per core: straight
    from the candidate sets' count vectors (per-array accesses only for the "arrays" kind)."""

    schedule: np.ndarray    # index into the schedules
    tiles: np.ndarray       # (N, 5)
    acc: np.ndarray | None  # (N, 3) input, weight, output accesses ("arrays" kind)
    ext: np.ndarray         # external accesses (their sum)
    dma: np.ndarray
    n: np.ndarray
    footprint: np.ndarray   # Bin+Bw+Bout
    tile_macs: np.ndarray
    cap: float = np.inf     # rows with footprint up to this many elements are all here

    def take(self, rows: np.ndarray | slice) -> ShareRows:
        arrays = [None if f is None else f[rows] for f in
                  (getattr(self, name) for name in list(self.__dataclass_fields__)[:-1])]
        return ShareRows(*arrays, cap=self.cap)


ROWS_LIMIT = 2048   # share shapes whose rows a session keeps
OPTION_ROWS = 4096  # chosen options (small dicts of scalars) a session keeps


def _priced_bytes(value: tuple | None) -> int:
    if value is None:
        return 0
    return sum(a.nbytes for p in value[2] for a in p.values())


class CoresMemo:
    """What a session's multi-core mappings keep (one per `memo.Caches`): per share shape the
    candidate rows up to a footprint cap (`share_rows`), the prices of a split's rows
    (`_priced_shares`, 256 MB: they do not depend on the objective, so a sweep's objectives
    price them once) and the chosen options' rows. Thread-safe."""

    def __init__(self) -> None:
        self.priced = ByteLRU(256 * 2**20, _priced_bytes)
        self._rows: OrderedDict[tuple, ShareRows] = OrderedDict()
        self._options: OrderedDict[tuple, dict] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, caches: Caches) -> CoresMemo:
        return caches.store("multi-core mappings", cls)

    @property
    def nbytes(self) -> int:
        return self.priced.nbytes

    def rows(self, key: tuple, cap: float, make: Callable[[], ShareRows]) -> ShareRows:
        """The rows of `key` covering `cap`, made (`make`) when none held cover it."""
        with self._lock:
            rows = self._rows.get(key)
        if rows is None or rows.cap < cap:
            rows = make()
        with self._lock:
            self._rows[key] = rows
            self._rows.move_to_end(key)
            while len(self._rows) > ROWS_LIMIT:
                self._rows.popitem(last=False)
        return rows

    def option(self, key: tuple, make: Callable[[], dict]) -> dict:
        with self._lock:
            row = self._options.get(key)
        if row is None:
            row = make()
            with self._lock:
                self._options[key] = row
                while len(self._options) > OPTION_ROWS:
                    self._options.popitem(last=False)
        return row


def _rows_up_to(layer: ConvLayer, schedules: tuple[str, ...], kind: str,
                cap: int | None, caches: Caches) -> ShareRows:
    """The candidate rows with footprint ≤ cap (elements; None: all), sorted by footprint:
    from the sets capped there (no tile above the cap is enumerated)."""
    sets = candidate_sets([(layer, s) for s in schedules], kind=kind, cap=cap, caches=caches)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([cs.column(name) for cs in sets])

    acc = None
    if kind == "arrays":
        acc = np.column_stack([cat(f"{a}_accesses") for a in ARRAYS])
        ext = acc.sum(axis=1)
    else:
        ext = cat("ext_accesses")
    rows = ShareRows(np.concatenate([np.full(len(cs.tiles), i) for i, cs in enumerate(sets)]),
                     np.concatenate([cs.tiles for cs in sets]),
                     acc, ext, cat("dma_transfers"), cat("n_tiles"), cat("footprint_elems"),
                     cat("tile_elems") * (layer.Kx * layer.Ky))
    return rows.take(np.argsort(rows.footprint, kind="stable"))


def broadcasts(platform: Platform) -> bool:
    """Whether shared fetches cross the bus once per share (then rows are of "arrays" kind)."""
    return platform.dma_broadcast and platform.cores > 1


def share_rows(layer: ConvLayer, platform: Platform, schedules: Sequence[str] = SCHEDULES,
               memory_bytes: float | None = None, kind: str | None = None,
               caches: Caches | None = None) -> ShareRows:
    """Candidate rows of a (share) layer that fit one core's memory, in footprint order; kind
    "arrays" when an array's traffic is weighed apart (default: when the DMA broadcasts).
    Kept (`caches`' `CoresMemo`; none: for this call) per shape up to the largest memory
    asked so far: a smaller memory is a prefix. The rows come from candidate sets capped at
    that memory (`tiling.candidates`): no tile that cannot fit it is enumerated."""
    caches = caches_or_new(caches)
    scale = platform.elem_bytes * (2 if platform.double_buffer else 1)
    limit = platform.local_mem_bytes if memory_bytes is None else memory_bytes
    if kind is None:
        kind = "arrays" if broadcasts(platform) else "cost"
    cap_int = cap_elems(limit, scale)
    cap = np.inf if cap_int is None else float(cap_int)
    rows = CoresMemo.of(caches).rows(
        (shape_key(layer), tuple(schedules), kind), cap, lambda: dataclasses.replace(
            _rows_up_to(layer, tuple(schedules), kind, cap_int, caches), cap=cap))
    end = int(np.searchsorted(rows.footprint, cap, side="right"))
    return rows.take(slice(0, end))


def pick_accesses(rows: ShareRows, i: int, layer: ConvLayer,
                  schedules: Sequence[str]) -> np.ndarray:
    """Input, weight and output accesses (elements, one core) of row i."""
    if rows.acc is not None:
        return rows.acc[i]
    c = counts_array(layer, rows.tiles[i:i + 1], schedules[int(rows.schedule[i])])
    return np.array([c["in_accesses"][0], c["w_accesses"][0], c["out_accesses"][0]])


def _price_share(rows: ShareRows, layer: ConvLayer, platform: Platform, split: str, k: int,
                 m: int, n_shares: int, local_traffic: bool,
                 picks: np.ndarray | slice = slice(None)) -> dict[str, np.ndarray]:
    """Cycles of one core and energy (pJ), bus traffic (elements) of all m cores of a share,
    per row (only `picks`; with parts when picks are given)."""
    p = platform
    broadcast = broadcasts(p)
    ext = rows.ext[picks]
    shared = rows.acc[picks, ARRAYS.index(SHARED[split])] if broadcast and SHARED[split] \
        else 0 * ext  # a group split shares nothing
    v = CountVector.of(rows.footprint[picks], ext, rows.dma[picks], rows.n[picks],
                       rows.tile_macs[picks], shared_accesses=shared)
    cont = Contention(k, n_shares if broadcast else k, p.dma_channels)
    n_local = layer_local_accesses(layer, p, local_traffic)
    out = price(p, v, n_local, parts=not isinstance(picks, slice), contention=cont)
    bus = m * ext - (m - 1) * shared if broadcast else m * ext
    if m > 1:  # m cores' energy, with the external part that of the bus traffic
        def ext_pj(x: np.ndarray) -> np.ndarray:
            return np.ceil(x * p.elem_bytes / p.ext_access_bytes) * p.ext_access_pj
        out["energy_pj"] = m * (out["energy_pj"] - ext_pj(ext)) + ext_pj(bus)
    out["ext_accesses"] = bus
    return out


def _pick(priced: list[dict], objective: str) -> list[int]:
    """Per share the chosen row: exact for the objective (module docstring)."""
    c = [p["cycles"] for p in priced]
    e = [p["energy_pj"] for p in priced]
    a = [p["ext_accesses"] for p in priced]
    if objective == "cycles":
        t = max(float(x.min()) for x in c)
        return [_first(ci <= t, ai, ci) for ci, ai in zip(c, a, strict=True)]
    if objective in ("energy", "accesses"):
        key = e if objective == "energy" else a
        second = a if objective == "energy" else e
        return [int(np.lexsort((s, ci, ki))[0]) for ki, ci, s in zip(key, c, second,
                                                                     strict=True)]
    # edp: sweep the layer time over every row's cycles
    times = np.unique(np.concatenate(c))
    times = times[times >= max(float(x.min()) for x in c)]
    best_e = np.zeros(len(times))
    arg = []
    for ci, ei in zip(c, e, strict=True):
        order = np.lexsort((ei, ci))
        es = ei[order]
        prefix = np.minimum.accumulate(es)
        where = np.searchsorted(ci[order], times, side="right") - 1
        best_e += prefix[where]
        new_min = np.r_[True, es[1:] < prefix[:-1]]   # the row attaining each prefix minimum
        arg.append(order[np.maximum.accumulate(np.where(new_min, np.arange(len(es)), 0))][where])
    j = int(np.argmin(times * best_e))
    return [int(x[j]) for x in arg]


def _first(ok: np.ndarray, acc: np.ndarray, cyc: np.ndarray) -> int:
    """Among rows with ok, the least accesses, then the least cycles."""
    low = acc[ok].min()
    tie = ok & (acc == low)
    return int(np.flatnonzero(tie)[np.argmin(cyc[tie])])


def split_options(layer: ConvLayer, platform: Platform, objective: str = "cycles",
                  schedules: Sequence[str] = SCHEDULES, splits: Sequence[str] = SPLITS,
                  cores: Sequence[int] | None = None, memory_bytes: float | None = None,
                  local_traffic: bool = True, caches: Caches | None = None) -> pd.DataFrame:
    """The best mapping of a layer for every split and every number of cores (1…cores), one
    row each: cycles, energy, bus traffic, the chosen tile per share, speed-up over one core
    (`caches`: what it keeps for later calls)."""
    return pd.DataFrame(_options(layer, platform, objective, schedules, splits, cores,
                                 memory_bytes, local_traffic, caches_or_new(caches)))


def _options(layer: ConvLayer, platform: Platform, objective: str, schedules: Sequence[str],
             splits: Sequence[str], cores: Sequence[int] | None, memory_bytes: float | None,
             local_traffic: bool, caches: Caches) -> list[dict]:
    """`split_options` rows as dicts (no table: a network plan asks for thousands)."""
    check_objective(objective)
    if cores is not None and not any(
            c <= max_cores(layer, s, platform.cores) for c in cores for s in splits):
        most = {s: max_cores(layer, s, platform.cores) for s in splits}
        raise SpecError(f"layer {layer.name!r}: no split of {', '.join(splits)} can use "
                        f"{', '.join(map(str, cores))} cores; at most "
                        + ", ".join(f"{n} by {s}" for s, n in most.items())
                        + f" (the platform has {platform.cores})")
    rows = []
    for split in splits:
        top = max_cores(layer, split, platform.cores)
        for k in (range(1, top + 1) if cores is None else [c for c in cores if c <= top]):
            if k == 1 and split != splits[0] and rows:
                continue  # one core: every split is the whole layer
            rows.append(_option(layer, platform, objective, schedules, split, k,
                                memory_bytes, local_traffic, caches))
    if not rows or any(r is None for r in rows):  # a share fits wherever the layer fits
        raise too_small(layer, memory_bytes or platform.local_mem_bytes, platform.elem_bytes,
                        platform.double_buffer)
    base = [r["cycles"] for r in rows if r["cores"] == 1]
    for r in rows:
        r["speedup"] = base[0] / r["cycles"] if base else np.nan
    return rows


def _priced_shares(layer: ConvLayer, platform: Platform, schedules: tuple[str, ...],
                   split: str, k: int, memory_bytes: float | None,
                   local_traffic: bool, caches: Caches) -> tuple[list, list, list] | None:
    """(shares, their fitting rows, every row priced) of one split over k cores, or None when
    a share has no fitting row. It does not depend on the objective, so the objectives of
    one layer and platform (a sweep's innermost axis) price the rows once (kept in
    `CoresMemo.priced`; the rows themselves in its share rows)."""
    key = (layer, platform, schedules, split, k, memory_bytes, local_traffic)
    priced = CoresMemo.of(caches).priced
    missing = object()
    found = priced.get(key, missing)
    if found is missing:
        found = priced.put(key, _price_shares(*key, caches))
    return found


def _price_shares(layer: ConvLayer, platform: Platform, schedules: tuple[str, ...],
                  split: str, k: int, memory_bytes: float | None,
                  local_traffic: bool, caches: Caches) -> tuple[list, list, list] | None:
    parts = shares(layer, split, k)
    found, priced = [], []
    for share in parts:
        r = share_rows(share.layer, platform, schedules, memory_bytes, caches=caches)
        if len(r.n) == 0:
            return None
        found.append(r)
        priced.append(_price_share(r, share.layer, platform, split, k, share.cores,
                                   len(parts), local_traffic))
    return parts, found, priced


def _option(layer: ConvLayer, platform: Platform, objective: str, schedules: Sequence[str],
            split: str, k: int, memory_bytes: float | None, local_traffic: bool,
            caches: Caches) -> dict | None:
    key = (layer, platform, tuple(schedules), split, k, memory_bytes, local_traffic)
    priced_shares = _priced_shares(*key, caches)
    if priced_shares is None:
        return None
    picks = tuple(_pick(priced_shares[2], objective))
    # objectives choosing alike share the row
    return dict(CoresMemo.of(caches).option((*key, picks), lambda: _option_row(
        *key, picks, priced_shares)))


def _option_row(layer: ConvLayer, platform: Platform, schedules: tuple[str, ...], split: str,
                k: int, memory_bytes: float | None, local_traffic: bool,
                picks: tuple[int, ...], priced_shares: tuple[list, list, list]) -> dict:
    """The split's row for the chosen row of every share (`priced_shares`: the split's
    shares, their fitting rows and prices)."""
    parts, found, _ = priced_shares
    sel = [_price_share(r, sh.layer, platform, split, k, sh.cores, len(parts), local_traffic,
                        np.array([i])) for r, sh, i in zip(found, parts, picks, strict=True)]
    sel = [{key: val[0] for key, val in s.items()} for s in sel]
    for s, r, i, sh in zip(sel, found, picks, parts, strict=True):
        copies = np.full(3, sh.cores)
        if broadcasts(platform) and SHARED[split]:
            copies[ARRAYS.index(SHARED[split])] = 1
        s["bus"] = pick_accesses(r, i, sh.layer, schedules) * copies
        for part in ("compute", "dma_setup", "local", "static"):
            s[f"energy_{part}_pj"] = sh.cores * s[f"energy_{part}_pj"]
        s["energy_external_pj"] = s["energy_pj"] - (s["energy_compute_pj"]
                                                    + s["energy_dma_setup_pj"]
                                                    + s["energy_local_pj"]
                                                    + s["energy_static_pj"])
    slow = int(np.argmax([s["cycles"] for s in sel]))
    bus = sum(s["bus"] for s in sel)
    cycles = float(sel[slow]["cycles"])
    compute = max(float(s["cycles_compute"]) for s in sel)
    io = float(bus.sum()) / platform.bus_elems_per_cycle
    first = found[0]
    row = {"layer": layer.name, "split": split, "cores": k, "cycles": cycles,
           "energy_pj": float(sum(s["energy_pj"] for s in sel)),
           "ext_accesses": int(bus.sum()), "in_accesses": int(bus[0]),
           "w_accesses": int(bus[1]), "out_accesses": int(bus[2]),
           "dma_transfers": int(sum(int(f.dma[i]) * sh.cores
                                    for f, i, sh in zip(found, picks, parts, strict=True))),
           "schedule": schedules[int(first.schedule[picks[0]])],
           **{d: int(first.tiles[picks[0], j]) for j, d in enumerate(TILE_DIMS)},
           "footprint_bytes": int(max(int(f.footprint[i]) for f, i in zip(found, picks,
                                                                          strict=True))
                                  * platform.elem_bytes * (2 if platform.double_buffer else 1)),
           "compute_cycles": compute, "bus_cycles": io,
           "bound": "compute" if compute >= io else "I/O",
           "shares": tuple((sh.cores, schedules[int(f.schedule[i])],
                            tuple(int(x) for x in f.tiles[i]))
                           for sh, f, i in zip(parts, found, picks, strict=True))}
    for part in ("compute", "dma_setup", "bus_stall", "prolog_epilog"):
        row[f"cycles_{part}"] = float(sel[slow][f"cycles_{part}"])
    for part in ENERGY_PARTS:  # all cores
        row[f"energy_{part}_pj"] = float(sum(s[f"energy_{part}_pj"] for s in sel))
    ops = 2.0 * layer.macs
    row["throughput_gops"] = platform.clock_mhz * ops / cycles * 1e-3
    row["utilization"] = (layer.macs / (platform.macs_per_cycle * k)) / cycles
    row["edp"] = row["energy_pj"] * cycles
    return row


def best_split(layer: ConvLayer, platform: Platform, objective: str = "cycles",
               schedules: Sequence[str] = SCHEDULES, splits: Sequence[str] = SPLITS,
               memory_bytes: float | None = None, local_traffic: bool = True,
               caches: Caches | None = None) -> pd.Series:
    """The best split and number of cores of a layer under `objective` (fewer cores win ties)."""
    return pd.Series(best_option(layer, platform, objective, schedules, splits, memory_bytes,
                                 local_traffic, caches))


def best_option(layer: ConvLayer, platform: Platform, objective: str = "cycles",
                schedules: Sequence[str] = SCHEDULES, splits: Sequence[str] = SPLITS,
                memory_bytes: float | None = None, local_traffic: bool = True,
                caches: Caches | None = None) -> dict:
    """`best_split` as a dict: the first of the options ranked by the objective, then its
    ties, then fewer cores (a stable sort, as the table's); `caches`: what it keeps for
    later calls (none: for this call)."""
    rows = _options(layer, platform, objective, schedules, splits, None, memory_bytes,
                    local_traffic, caches_or_new(caches))
    order = list(ranking(objective)) + ["cores"]
    return min(rows, key=lambda r: tuple(r[c] for c in order))


def network_cores(layer_list: Sequence[ConvLayer], platform: Platform,
                  objective: str = "cycles", schedules: Sequence[str] = SCHEDULES,
                  splits: Sequence[str] = SPLITS, memory_bytes: float | None = None,
                  local_traffic: bool = True, progress: bool = False,
                  caches: Caches | None = None) -> pd.DataFrame:
    """`best_split` of every layer, in order (one row each)."""
    caches = caches_or_new(caches)
    if progress:
        prebuild(layer_list, platform, schedules, splits, memory_bytes=memory_bytes,
                 caches=caches)
    return pd.DataFrame([best_split(layer, platform, objective, schedules, splits,
                                    memory_bytes, local_traffic, caches)
                         for layer in layer_list]).reset_index(drop=True)


def prebuild(layer_list: Sequence[ConvLayer], platform: Platform,
             schedules: Sequence[str] = SCHEDULES, splits: Sequence[str] = SPLITS,
             single_core_arrays: bool = False, memory_bytes: float | None = None,
             caches: Caches | None = None) -> None:
    """Build the missing candidate sets of every share with a progress bar (stderr); with
    `single_core_arrays` also the whole layers' "arrays" sets (fusion's kept variants). The
    sets are capped at one core's memory (bytes; default the platform's): `share_rows` at
    that size or below uses them."""
    kind = "arrays" if broadcasts(platform) else "cost"
    limit = platform.local_mem_bytes if memory_bytes is None else memory_bytes
    cap = cap_elems(limit, platform.elem_bytes * (2 if platform.double_buffer else 1))
    pairs = [(sh.layer, s) for layer in layer_list for split in splits
             for k in range(1, max_cores(layer, split, platform.cores) + 1)
             for sh in shares(layer, split, k) for s in schedules]
    candidate_sets(pairs, progress=True, kind=kind, cap=cap, caches=caches)
    if single_core_arrays:
        candidate_sets([(layer, s) for layer in layer_list for s in schedules],
                       progress=True, kind="arrays", cap=cap, caches=caches)
