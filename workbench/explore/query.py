"""Exact queries on candidate sets: the best mapping of every layer for many memory sizes and
platform variants at once, with no tile enumerated again.

Each (layer, schedule) candidate set (`tiling.candidates`) is priced on a platform by
`perf.price`, then one pass in footprint order per set picks, for every memory size, the row
that ranks first under the objective (ties: cycles, then external accesses, then footprint).
Exact because every cost and the footprint are non-decreasing in the count vector: the
optimum over all tiles that fit is attained by a candidate (argument in `tiling.candidates`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.perf import layer_local_accesses, price, rates
from workbench.platforms import Platform
from workbench.tiling.candidates import candidate_sets
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

    @property
    def footprint_elems(self) -> np.ndarray:
        c = self.counts
        return c["bin"] + c["bw"] + c["bout"]

    @property
    def ext_accesses(self) -> np.ndarray:
        c = self.counts
        return c["in_accesses"] + c["w_accesses"] + c["out_accesses"]


@functools.lru_cache(maxsize=16)
def candidate_table(layer_list: tuple[ConvLayer, ...],
                    schedules: tuple[str, ...] = SCHEDULES) -> CandidateTable:
    """The candidate sets of every layer and schedule, concatenated (cached per argument)."""
    for schedule in schedules:
        check_schedule(schedule)
    tiles, counts, seg_layer, seg_schedule, grid = [], [], [], [], []
    pairs = [(layer, schedule) for layer in layer_list for schedule in schedules]
    sets = iter(candidate_sets(pairs))
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
    return CandidateTable(
        tuple(layer_list), tuple(schedules), np.concatenate([[0], np.cumsum(sizes)]),
        seg_layer, np.asarray(seg_schedule, dtype=np.int64), np.repeat(seg_layer, sizes),
        np.concatenate(tiles), {k: np.concatenate([c[k] for c in counts]) for k in COUNT_COLUMNS},
        np.asarray(grid, dtype=np.int64))


def price_rows(table: CandidateTable, platform: Platform, rows: np.ndarray | slice = slice(None),
               local_traffic: bool = True) -> dict[str, np.ndarray]:
    """Counts, footprint (bytes), cycles, energy and EDP of table rows on one platform."""
    kxky = np.array([lay.Kx * lay.Ky for lay in table.layers], dtype=np.int64)
    local = np.array([layer_local_accesses(lay, platform, local_traffic) for lay in table.layers])
    layer_of = table.row_layer[rows]
    tiles = table.tiles[rows]
    c = {k: v[rows] for k, v in table.counts.items()}
    fp = c["bin"] + c["bw"] + c["bout"]
    ext = c["in_accesses"] + c["w_accesses"] + c["out_accesses"]
    out = price(platform, fp, ext, c["dma_transfers"], c["n_tiles"],
                tiles.prod(axis=1) * kxky[layer_of], local[layer_of])
    out["edp"] = out["energy_pj"] * out["cycles"]
    out["ext_accesses"] = ext
    out["footprint_bytes"] = fp * (platform.elem_bytes * (2 if platform.double_buffer else 1))
    return out | c


@numba.njit(cache=True, nogil=True)
def _less(keys, a, b):
    """Row a ranks strictly before row b (keys compared in column order)."""
    for k in range(keys.shape[0]):
        if keys[k, a] != keys[k, b]:
            return keys[k, a] < keys[k, b]
    return False


@numba.njit(cache=True, nogil=True)
def _best_per_size(starts, footprint, keys, sizes):
    """Per segment and size (ascending), the first-ranked row with footprint ≤ size, or −1.
    Rows of a segment are in footprint order, so one pass serves every size."""
    out = np.full((len(starts) - 1, len(sizes)), -1, np.int64)
    for s in range(len(starts) - 1):
        best, j = -1, 0
        for r in range(starts[s], starts[s + 1]):
            while j < len(sizes) and footprint[r] > sizes[j]:
                out[s, j] = best
                j += 1
            if j == len(sizes):
                break
            if best < 0 or _less(keys, r, best):
                best = r
        while j < len(sizes):
            out[s, j] = best
            j += 1
    return out


@numba.njit(cache=True, nogil=True)
def _best_of_segments(picks, seg_layer, n_layers, keys):
    """Per layer and size, the first-ranked of its segments' picks (earlier segment on ties)."""
    out = np.full((n_layers, picks.shape[1]), -1, np.int64)
    for s in range(picks.shape[0]):
        li = seg_layer[s]
        for j in range(picks.shape[1]):
            r = picks[s, j]
            if r >= 0 and (out[li, j] < 0 or _less(keys, r, out[li, j])):
                out[li, j] = r
    return out


def best_rows(table: CandidateTable, priced: dict[str, np.ndarray], objective: str,
              memory_bytes: Sequence[float], per_schedule: bool) -> np.ndarray:
    """Row indices of the best mappings: (segments or layers) × sizes, −1 where none fits."""
    keys = np.vstack([np.asarray(priced[c], dtype=np.float64) for c in ranking(objective)])
    sizes = np.asarray(memory_bytes, dtype=np.float64)
    order = np.argsort(sizes, kind="stable")
    picks = _best_per_size(table.starts, keys[-1], keys, sizes[order])
    if not per_schedule:
        picks = _best_of_segments(picks, table.seg_layer, len(table.layers), keys)
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
                  per_schedule: bool = False, local_traffic: bool = True) -> pd.DataFrame:
    """Best mapping per layer (per schedule too if per_schedule), memory size (bytes) and
    platform, ranked by `objective` (one of OBJECTIVES). One row each, with tile, counts,
    cycles, energy, EDP, throughput, CTC, `buffer_bytes`, `objective` and `platform` (index
    into `platforms`); sizes no tile fits have no row. Default sizes: each platform's own."""
    check_objective(objective)
    single = isinstance(platforms, Platform)
    plats = [platforms] if single else list(platforms)
    if not plats:
        raise WorkbenchError("best_mappings: no platform given")
    table = candidate_table(tuple(layer_list), tuple(schedules))
    frames = []
    for pi, plat in enumerate(plats):
        sizes = list(memory_bytes) if memory_bytes is not None else [plat.local_mem_bytes]
        priced = price_rows(table, plat, local_traffic=local_traffic)
        picks = best_rows(table, priced, objective, sizes, per_schedule)
        found = picks >= 0
        frame = _frame(table, plat, picks[found], local_traffic)
        frame["buffer_bytes"] = np.broadcast_to(np.asarray(sizes, dtype=np.int64),
                                                picks.shape)[found]
        frame["objective"] = objective
        frame["platform"] = pi
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def fitting_candidates(layer: ConvLayer, platform: Platform, schedules: Sequence[str] = SCHEDULES,
                       memory_bytes: float | None = None,
                       local_traffic: bool = True) -> pd.DataFrame:
    """Every candidate of the layer that fits the memory (default: the platform's), priced:
    the mappings that can be optimal, one row each (same columns as `best_mappings`)."""
    table = candidate_table((layer,), tuple(schedules))
    limit = platform.local_mem_bytes if memory_bytes is None else memory_bytes
    fp = table.footprint_elems * (platform.elem_bytes * (2 if platform.double_buffer else 1))
    rows = np.flatnonzero(fp <= limit)
    frame = _frame(table, platform, rows, local_traffic)
    frame["buffer_bytes"] = int(limit)
    return frame
