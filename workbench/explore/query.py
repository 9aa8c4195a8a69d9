"""Exact queries on candidate sets: the best mapping of every layer for many memory sizes and
platform variants at once, with no tile enumerated again.

Each (layer, schedule) candidate set (`tiling.candidates`) is priced on a platform by
`perf.price`, then one pass in footprint order per set picks, for every memory size, the row
that ranks first under the objective (ties: cycles, then external accesses, then footprint).
Exact because every cost and the footprint are non-decreasing in the count vector: the
optimum over all tiles that fit is attained by a candidate (argument in `tiling.candidates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.memo import ByteLRU, Caches, caches_or_new
from workbench.perf import CountVector, layer_local_accesses, price, rates, sized_platforms
from workbench.platforms import Platform
from workbench.tiling.candidates import candidate_sets, cap_elems
from workbench.tiling.model import SCHEDULES, TILE_DIMS, check_schedule, counts_array

OBJECTIVES = ("cycles", "energy", "accesses", "edp")
OBJECTIVE_COLUMNS = {"cycles": "cycles", "energy": "energy_pj", "accesses": "ext_accesses",
                     "edp": "edp"}
COUNT_COLUMNS = ("in_accesses", "w_accesses", "out_accesses", "dma_transfers", "n_tiles",
                 "bin", "bw", "bout")


def check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise WorkbenchError(f"unknown objective {objective!r}; valid: " + ", ".join(OBJECTIVES))


def ranking(objective: str) -> tuple[str, ...]:
    """Columns that rank mappings, most significant first: the objective, then the ties."""
    check_objective(objective)
    head = OBJECTIVE_COLUMNS[objective]
    return (head,) + tuple(c for c in ("cycles", "ext_accesses", "footprint_bytes") if c != head)


@dataclass(frozen=True, eq=False)
class CandidateTable:
    """Candidate sets of several layers × schedules end to end, one segment per pair; rows of a
    segment in footprint order. Counts are per layer, in elements (`tiling.Counts` names)."""

    layers: tuple[ConvLayer, ...]
    schedules: tuple[str, ...]
    starts: np.ndarray          # segment s holds rows starts[s]:starts[s+1]
    seg_layer: np.ndarray       # layer index of each segment
    seg_schedule: np.ndarray    # schedule index of each segment
    row_layer: np.ndarray       # layer index of each row
    tiles: np.ndarray           # (N, 5)
    counts: dict[str, np.ndarray]
    grid_sizes: np.ndarray      # full reduced enumeration size of each segment
    vector: CountVector         # the rows' count vectors as floats, for pricing

    @property
    def footprint_elems(self) -> np.ndarray:
        c = self.counts
        return c["bin"] + c["bw"] + c["bout"]

    @property
    def ext_accesses(self) -> np.ndarray:
        c = self.counts
        return c["in_accesses"] + c["w_accesses"] + c["out_accesses"]


TABLE_BYTES = 768 * 2**20  # candidate tables a session keeps (a VGG16 batch-8 one: ~180 MB)


def _table_bytes(table: CandidateTable) -> int:
    return (table.tiles.nbytes + sum(c.nbytes for c in table.counts.values())
            + sum(np.asarray(getattr(table.vector, f)).nbytes
                  for f in CountVector.__dataclass_fields__))


def candidate_table(layer_list: tuple[ConvLayer, ...],
                    schedules: tuple[str, ...] = SCHEDULES,
                    cap: int | None = None, caches: Caches | None = None) -> CandidateTable:
    """The candidate sets of every layer and schedule, concatenated (kept per argument in
    `caches`, TABLE_BYTES at most; none: for this call); with `cap`, only the rows with
    footprint ≤ cap elements (`tiling.candidates`: sets capped there, exact for every memory
    whose cap is ≤ it)."""
    caches = caches_or_new(caches)
    tables = caches.store("candidate tables", lambda: ByteLRU(TABLE_BYTES, _table_bytes))
    key = (tuple(layer_list), tuple(schedules), cap)
    table = tables.get(key)
    if table is None:
        table = tables.put(key, _candidate_table(*key, caches))
    return table


def _candidate_table(layer_list: tuple[ConvLayer, ...], schedules: tuple[str, ...],
                     cap: int | None, caches: Caches) -> CandidateTable:
    for schedule in schedules:
        check_schedule(schedule)
    tiles, counts, seg_layer, seg_schedule, grid = [], [], [], [], []
    pairs = [(layer, schedule) for layer in layer_list for schedule in schedules]
    sets = iter(candidate_sets(pairs, cap=cap, caches=caches))
    for li, layer in enumerate(layer_list):
        for si, schedule in enumerate(schedules):
            cs = next(sets)
            tiles.append(cs.tiles)
            counts.append(counts_array(layer, cs.tiles, schedule))
            seg_layer.append(li)
            seg_schedule.append(si)
            grid.append(cs.grid_size)
    sizes = [len(t) for t in tiles]
    seg_layer = np.asarray(seg_layer, dtype=np.int64)
    row_layer = np.repeat(seg_layer, sizes)
    tiles = np.concatenate(tiles)
    counts = {k: np.concatenate([c[k] for c in counts]) for k in COUNT_COLUMNS}
    kxky = np.array([lay.Kx * lay.Ky for lay in layer_list], dtype=np.int64)
    vector = CountVector.of(counts["bin"] + counts["bw"] + counts["bout"],
                            counts["in_accesses"] + counts["w_accesses"] + counts["out_accesses"],
                            counts["dma_transfers"], counts["n_tiles"],
                            tiles.prod(axis=1) * kxky[row_layer])
    return CandidateTable(
        tuple(layer_list), tuple(schedules), np.concatenate([[0], np.cumsum(sizes)]),
        seg_layer, np.asarray(seg_schedule, dtype=np.int64), row_layer, tiles, counts,
        np.asarray(grid, dtype=np.int64), vector)


def _local(table: CandidateTable, platform: Platform, local_traffic: bool) -> np.ndarray:
    """N_local of each layer of the table (elements)."""
    return np.array([layer_local_accesses(lay, platform, local_traffic) for lay in table.layers])


def _scale(platform: Platform) -> int:
    """Bytes per footprint element: element bytes, ×2 when double-buffered."""
    return platform.elem_bytes * (2 if platform.double_buffer else 1)


def table_cap(platforms: Sequence[Platform], memory_bytes: Sequence[float] | None) -> int | None:
    """The footprint cap (elements) that serves every (platform, memory size) of a query: the
    largest of their `cap_elems` (sizes default to each platform's own); None if one has none."""
    caps = [cap_elems(size, _scale(p)) for p in platforms
            for size in (memory_bytes if memory_bytes is not None else [p.local_mem_bytes])]
    return None if not caps or None in caps else max(caps)


def rank_columns(table: CandidateTable, platform: Platform, objective: str,
                 local_traffic: bool = True) -> dict[str, np.ndarray]:
    """Only the columns that rank all rows under `objective` on one platform (the fast path
    of `best_mappings`; the same floats as `price_rows`)."""
    v = table.vector
    priced = price(platform, v, _local(table, platform, local_traffic), parts=False,
                   energy=objective in ("energy", "edp"), layer_of=table.row_layer)
    if objective == "edp":
        priced["edp"] = priced["energy_pj"] * priced["cycles"]
    return priced | {"ext_accesses": v.ext, "footprint_bytes": v.footprint * _scale(platform)}


def price_rows(table: CandidateTable, platform: Platform, rows: np.ndarray | slice = slice(None),
               local_traffic: bool = True) -> dict[str, np.ndarray]:
    """Counts, footprint (bytes), cycles and energy by part, and EDP of table rows on one
    platform."""
    v = table.vector
    v = CountVector(*(getattr(v, f)[rows] for f in CountVector.__dataclass_fields__))
    c = {k: col[rows] for k, col in table.counts.items()}
    out = price(platform, v, _local(table, platform, local_traffic),
                layer_of=table.row_layer[rows])
    out["edp"] = out["energy_pj"] * out["cycles"]
    out["ext_accesses"] = c["in_accesses"] + c["w_accesses"] + c["out_accesses"]
    out["footprint_bytes"] = (c["bin"] + c["bw"] + c["bout"]) * _scale(platform)
    return out | c


@numba.njit(cache=True, nogil=True)
def _less(k0, k1, k2, k3, a, b):
    """Row a ranks strictly before row b (keys compared in order)."""
    if k0[a] != k0[b]:
        return k0[a] < k0[b]
    if k1[a] != k1[b]:
        return k1[a] < k1[b]
    if k2[a] != k2[b]:
        return k2[a] < k2[b]
    return k3[a] < k3[b]


@numba.njit(cache=True, nogil=True)
def _best_per_size(starts, k0, k1, k2, k3, sizes):
    """Per segment and size (ascending), the first-ranked row whose footprint k3 ≤ size, or
    −1. Rows of a segment are in footprint order, so one pass serves every size."""
    out = np.full((len(starts) - 1, len(sizes)), -1, np.int64)
    for s in range(len(starts) - 1):
        best, j = -1, 0
        for r in range(starts[s], starts[s + 1]):
            while j < len(sizes) and k3[r] > sizes[j]:
                out[s, j] = best
                j += 1
            if j == len(sizes):
                break
            if best < 0 or _less(k0, k1, k2, k3, r, best):
                best = r
        while j < len(sizes):
            out[s, j] = best
            j += 1
    return out


@numba.njit(cache=True, nogil=True)
def _best_of_segments(picks, seg_layer, n_layers, k0, k1, k2, k3):
    """Per layer and size, the first-ranked of its segments' picks (earlier segment on ties)."""
    out = np.full((n_layers, picks.shape[1]), -1, np.int64)
    for s in range(picks.shape[0]):
        li = seg_layer[s]
        for j in range(picks.shape[1]):
            r = picks[s, j]
            if r >= 0 and (out[li, j] < 0 or _less(k0, k1, k2, k3, r, out[li, j])):
                out[li, j] = r
    return out


def best_rows(table: CandidateTable, priced: dict[str, np.ndarray], objective: str,
              memory_bytes: Sequence[float], per_schedule: bool) -> np.ndarray:
    """Row indices of the best mappings: (segments or layers) × sizes, −1 where none fits.
    `priced` holds at least the `ranking(objective)` columns of every row."""
    names = ranking(objective)
    keys = [np.asarray(priced[c], dtype=np.float64) for c in names[:-1]]
    keys = ([keys[0]] * (3 - len(keys)) + keys)[-3:]  # pad at the front: same order
    fp = np.asarray(priced["footprint_bytes"], dtype=np.float64)
    sizes = np.asarray(memory_bytes, dtype=np.float64)
    order = np.argsort(sizes, kind="stable")
    picks = _best_per_size(table.starts, *keys, fp, sizes[order])
    if not per_schedule:
        picks = _best_of_segments(picks, table.seg_layer, len(table.layers), *keys, fp)
    out = np.empty_like(picks)
    out[:, order] = picks
    return out


def _frame(table: CandidateTable, platform: Platform, rows: np.ndarray,
           local_traffic: bool) -> pd.DataFrame:
    """One DataFrame row per table row: layer, schedule, tile, counts and every metric."""
    priced = price_rows(table, platform, rows, local_traffic)
    layer_of = table.row_layer[rows]
    seg = np.searchsorted(table.starts, rows, side="right") - 1
    macs = np.array([lay.macs for lay in table.layers], dtype=np.float64)[layer_of]
    cols = {"layer": np.array([lay.name for lay in table.layers], dtype=object)[layer_of],
            "schedule": np.array(table.schedules, dtype=object)[table.seg_schedule[seg]]}
    cols |= {name: table.tiles[rows, i] for i, name in enumerate(TILE_DIMS)}
    cols |= {k: priced[k] for k in COUNT_COLUMNS}
    cols |= {"ext_accesses": priced["ext_accesses"], "footprint_bytes": priced["footprint_bytes"]}
    cols |= {k: v for k, v in priced.items() if k not in cols}
    ops_rates = rates(macs, platform, priced["cycles"], priced["ext_accesses"])
    return pd.DataFrame(cols | ops_rates)


def best_mappings(layer_list: Sequence[ConvLayer], platforms: Platform | Sequence[Platform],
                  memory_bytes: Sequence[float] | None = None,
                  schedules: Sequence[str] = SCHEDULES, objective: str = "cycles",
                  per_schedule: bool = False, local_traffic: bool = True,
                  progress: bool = False, caches: Caches | None = None) -> pd.DataFrame:
    """Best mapping per layer (per schedule too if per_schedule), memory size (bytes) and
    platform, ranked by `objective` (one of OBJECTIVES). One row each, with tile, counts,
    cycles, energy, EDP, throughput, CTC, `buffer_bytes`, `objective` and `platform` (index
    into `platforms`); sizes no tile fits have no row. Default sizes: each platform's own.
    `progress`: a bar on stderr while missing candidate sets are built; `caches`: what it
    keeps for later calls (none: for this call)."""
    check_objective(objective)
    caches = caches_or_new(caches)
    single = isinstance(platforms, Platform)
    plats = [platforms] if single else list(platforms)
    if not plats:
        raise WorkbenchError("best_mappings: no platform given")
    cap = table_cap(plats, memory_bytes)  # tiles above the largest memory are never built
    if progress:  # build what is missing with a progress bar first (then all cached)
        candidate_sets([(lay, s) for lay in layer_list for s in schedules], progress=True,
                       cap=cap, caches=caches)
    table = candidate_table(tuple(layer_list), tuple(schedules), cap, caches)
    frames = []
    for pi, plat in enumerate(plats):
        sizes = list(memory_bytes) if memory_bytes is not None else [plat.local_mem_bytes]
        groups = sized_platforms(plat, sizes)  # one per size when energy depends on size
        parts, first = [], 0
        for sized, group in groups:
            priced = rank_columns(table, sized, objective, local_traffic)
            picks = best_rows(table, priced, objective, group, per_schedule)
            found = picks >= 0
            part = _frame(table, sized, picks[found], local_traffic)
            part["buffer_bytes"] = np.broadcast_to(np.asarray(group, dtype=np.int64),
                                                   picks.shape)[found]
            row, col = np.nonzero(found)  # the order of one group: (segment or layer, size)
            parts.append(part.assign(_order=row * len(sizes) + first + col))
            first += len(group)
        frame = pd.concat(parts, ignore_index=True)
        if len(groups) > 1:
            frame = frame.sort_values("_order", kind="stable", ignore_index=True)
        frame = frame.drop(columns="_order")
        frame["objective"] = objective
        frame["platform"] = pi
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def fitting_candidates(layer: ConvLayer, platform: Platform, schedules: Sequence[str] = SCHEDULES,
                       memory_bytes: float | None = None, local_traffic: bool = True,
                       max_rows: int | None = None,
                       caches: Caches | None = None) -> pd.DataFrame:
    """Every candidate of the layer that fits the memory (default: the platform's), priced:
    the mappings that can be optimal, one row each (same columns as `best_mappings`). When
    more than `max_rows` fit, only each schedule's (cycles, accesses) Pareto rows are priced
    and returned; df.attrs["fitting"] counts all that fit. `caches`: as `best_mappings`."""
    from workbench.explore.solutions import pareto_mask

    limit = platform.local_mem_bytes if memory_bytes is None else memory_bytes
    table = candidate_table((layer,), tuple(schedules), cap_elems(limit, _scale(platform)),
                            caches)
    rows = np.flatnonzero(table.footprint_elems * _scale(platform) <= limit)
    fitting = len(rows)
    if max_rows is not None and fitting > max_rows:
        v = table.vector
        cycles = price(platform, CountVector(*(getattr(v, f)[rows] for f in
                                               CountVector.__dataclass_fields__)),
                       _local(table, platform, local_traffic), parts=False,
                       energy=False, layer_of=np.zeros(len(rows), dtype=np.int64))["cycles"]
        seg = np.searchsorted(table.starts, rows, side="right") - 1
        keep = np.zeros(fitting, dtype=bool)
        for s in np.unique(seg):
            mine = np.flatnonzero(seg == s)
            values = np.column_stack([cycles[mine], v.ext[rows[mine]]])
            keep[mine[pareto_mask(values, [False, False])]] = True
        rows = rows[keep]
    frame = _frame(table, platform, rows, local_traffic)
    frame["buffer_bytes"] = int(limit)
    frame.attrs["fitting"] = fitting
    return frame
