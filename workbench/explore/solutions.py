"""Exploration: tiles × schedules × buffer sizes as tidy DataFrames, Pareto fronts, best tiles.

Exact: "best" answers come from the candidate sets (`explore.query`); "all" and "pareto" rows
from `tiling.gen_tiles` (reduced per dimension by an argument that loses no optimum, see
`tiling.tile_candidates`), every tile that fits evaluated.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.explore.query import best_mappings, ranking
from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches
from workbench.perf import estimate_array, sized_platforms
from workbench.platforms import Platform
from workbench.tiling.candidates import candidate_set
from workbench.tiling.model import (
    SCHEDULES,
    TILE_DIMS,
    Tile,
    buffers,
    check_schedule,
    counts_array,
    gen_tiles,
)

DEFAULT_OBJECTIVES = {"throughput_gops": "max", "ctc": "max"}
BEST_ORDER = ranking("cycles")  # ("cycles", "ext_accesses", "footprint_bytes")


def _footprint_bytes(footprint_elems: np.ndarray, elem_bytes: int, double: bool) -> np.ndarray:
    return footprint_elems * elem_bytes * (2 if double else 1)


def smallest_footprint_bytes(layer: ConvLayer, elem_bytes: int, double_buffer: bool) -> int:
    """Footprint of the 1×1×1×1×1 tile: the least memory any tile needs (bytes)."""
    b_in, b_w, b_out = buffers(layer, np.ones((1, 5), dtype=np.int64))
    return int(_footprint_bytes(b_in + b_w + b_out, elem_bytes, double_buffer)[0])


def too_small(layer: ConvLayer, memory: float, elem_bytes: int, double: bool) -> WorkbenchError:
    need = smallest_footprint_bytes(layer, elem_bytes, double)
    return WorkbenchError(f"layer {layer.name!r}: memory of {memory:g} bytes is too small for any "
                          f"tile; the smallest tile (1x1x1x1x1) needs {need} bytes")


def evaluate_arrays(layer: ConvLayer, platform: Platform, schedule: str, max_bytes: float,
                    local_traffic: bool = True) -> dict[str, np.ndarray]:
    """Every candidate tile fitting `max_bytes`: tile columns, counts and metrics as arrays."""
    check_schedule(schedule)
    scale = platform.elem_bytes * (2 if platform.double_buffer else 1)
    chunks = []
    for tiles in gen_tiles(layer, max_footprint_elems=max_bytes / scale):
        c = counts_array(layer, tiles, schedule)
        cols = {name: tiles[:, i] for i, name in enumerate(TILE_DIMS)} | c
        cols["ext_accesses"] = c["in_accesses"] + c["w_accesses"] + c["out_accesses"]
        cols["footprint_bytes"] = (c["bin"] + c["bw"] + c["bout"]) * scale
        chunks.append(cols | estimate_array(layer, tiles, schedule, platform, local_traffic,
                                            counted=c))
    if not chunks:
        raise too_small(layer, max_bytes, platform.elem_bytes, platform.double_buffer)
    return {key: np.concatenate([chunk[key] for chunk in chunks]) for key in chunks[0]}


def _frame(layer: ConvLayer, schedule: str, arrays: dict[str, np.ndarray],
           rows: np.ndarray | slice = slice(None)) -> pd.DataFrame:
    df = pd.DataFrame({key: value[rows] for key, value in arrays.items()})
    df.insert(0, "schedule", schedule)
    df.insert(0, "layer", layer.name)
    return df


def evaluate(layer: ConvLayer, platform: Platform, schedule: str, max_bytes: float,
             local_traffic: bool = True) -> pd.DataFrame:
    """Every candidate tile fitting `max_bytes`, with all counts and metrics (one row each)."""
    return _frame(layer, schedule, evaluate_arrays(layer, platform, schedule, max_bytes,
                                                   local_traffic))


def _front_per_size(values: np.ndarray, maximize: Sequence[bool], footprint: np.ndarray,
                    sizes: Sequence[int]) -> list[np.ndarray]:
    """Row indices of the 2-objective Pareto front among rows with footprint ≤ size, per size.

    One sort for all sizes; per size a staircase sweep over the fitting rows in sorted order.
    """
    v = np.where(np.asarray(maximize), -values, values).astype(np.float64)
    order = np.lexsort((v[:, 1], v[:, 0]))
    fronts = []
    for size in sizes:
        idx = order[footprint[order] <= size]
        a, b = v[idx, 0], v[idx, 1]
        prev = np.concatenate([[np.inf], np.minimum.accumulate(b)[:-1]])
        strict = b < prev
        same = np.zeros(len(idx), dtype=bool)
        same[1:] = (a[1:] == a[:-1]) & (b[1:] == b[:-1])
        run_start = np.maximum.accumulate(np.where(same, 0, np.arange(len(idx))))
        fronts.append(idx[strict[run_start]])
    return fronts


def pareto_mask(values: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    """Boolean mask of the non-dominated rows of an (N, k) array (seed 000 eq. 5.24).

    A row is dominated when another is at least as good in every objective and better in one;
    of rows with identical objective values all are kept.
    """
    v = np.where(np.asarray(maximize), -values, values).astype(np.float64)  # minimize all
    n = len(v)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if v.shape[1] == 2:  # staircase: sorted by the first objective, keep strict new minima
        keep = np.zeros(n, dtype=bool)
        keep[_front_per_size(values, maximize, np.zeros(n), [0])[0]] = True
        return keep
    order = np.lexsort(v.T[::-1])
    keep = np.zeros(n, dtype=bool)
    front = np.empty((0, v.shape[1]))
    for idx in order:
        row = v[idx]
        dominated = np.any(np.all(front <= row, axis=1) & np.any(front < row, axis=1))
        if not dominated:
            keep[idx] = True
            front = np.vstack([front, row])
    return keep


def pareto(df: pd.DataFrame, objectives: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The non-dominated rows of `df` for objectives {column: "max" | "min"}."""
    objectives = dict(objectives or DEFAULT_OBJECTIVES)
    bad = {k: v for k, v in objectives.items() if v not in ("max", "min") or k not in df}
    if bad:
        raise WorkbenchError(f"pareto: objectives must name columns with 'max' or 'min', got {bad}")
    mask = pareto_mask(df[list(objectives)].to_numpy(), [v == "max" for v in objectives.values()])
    return df[mask]


def explore_layer(layer: ConvLayer, platform: Platform, schedules: Iterable[str] = SCHEDULES,
                  buffer_sizes: Iterable[int] | None = None, keep: str = "pareto",
                  objectives: Mapping[str, str] | None = None,
                  local_traffic: bool = True, objective: str = "cycles",
                  caches: Caches | None = None) -> pd.DataFrame:
    """Tidy DataFrame of solutions per (schedule, buffer size in bytes); `caches`: what
    keep="best" keeps for later calls (none: for this call).

    keep="all": every fitting tile; "pareto": the non-dominated ones for `objectives`
    (default max throughput, max CTC); "best": one row, first under `objective` (cycles,
    energy, accesses or edp; ties: cycles, accesses, footprint), from the candidate sets.
    Buffer sizes no tile fits are listed in df.attrs["infeasible_buffer_sizes"]; an error is
    raised only when no size fits.
    """
    if keep not in ("all", "pareto", "best"):
        raise WorkbenchError(f"keep must be 'all', 'pareto' or 'best', got {keep!r}")
    sizes = sorted(set(buffer_sizes or [platform.local_mem_bytes]))
    schedules = list(schedules)
    for schedule in schedules:
        check_schedule(schedule)
    need = smallest_footprint_bytes(layer, platform.elem_bytes, platform.double_buffer)
    feasible = [m for m in sizes if m >= need]
    if not feasible:
        raise too_small(layer, sizes[-1], platform.elem_bytes, platform.double_buffer)
    if keep == "best":
        df = best_mappings([layer], platform, feasible, schedules, objective, per_schedule=True,
                           local_traffic=local_traffic, caches=caches).drop(columns=["platform"])
    else:
        df = _enumerated(layer, platform, schedules, feasible, keep, objectives, local_traffic)
    df.attrs["infeasible_buffer_sizes"] = [m for m in sizes if m < need]
    return df


def _enumerated(layer: ConvLayer, platform: Platform, schedules: list[str], feasible: list[int],
                keep: str, objectives: Mapping[str, str] | None,
                local_traffic: bool) -> pd.DataFrame:
    """keep="all" / "pareto" rows of `explore_layer`, from the full reduced enumeration."""
    objectives = dict(objectives or DEFAULT_OBJECTIVES)
    parts = []
    for schedule in schedules:
        for sized, group in sized_platforms(platform, feasible):  # per size if energy needs
            parts += _enumerated_sizes(layer, sized, schedule, group, keep, objectives,
                                       local_traffic)
    return pd.concat(parts, ignore_index=True)


def _enumerated_sizes(layer: ConvLayer, platform: Platform, schedule: str, sizes: list[int],
                      keep: str, objectives: dict[str, str],
                      local_traffic: bool) -> list[pd.DataFrame]:
    """The frames of `_enumerated` for one schedule and the sizes one platform prices."""
    arrays = evaluate_arrays(layer, platform, schedule, sizes[-1], local_traffic)
    fp = arrays["footprint_bytes"]
    unknown = [k for k in objectives if k not in arrays]
    if keep == "pareto" and unknown:
        raise WorkbenchError(f"pareto: unknown objective column(s) {unknown}")
    if keep == "pareto" and len(objectives) != 2:  # general case: per size on a frame
        return [pareto(_frame(layer, schedule, arrays, np.flatnonzero(fp <= size)),
                       objectives).assign(buffer_bytes=size) for size in sizes]
    if keep == "pareto":
        bad = {k: v for k, v in objectives.items() if v not in ("max", "min")}
        if bad:
            raise WorkbenchError(f"pareto: objectives must be 'max' or 'min', got {bad}")
        values = np.column_stack([arrays[k] for k in objectives])
        picks = _front_per_size(values, [v == "max" for v in objectives.values()], fp, sizes)
    else:
        picks = [np.flatnonzero(fp <= size) for size in sizes]
    frame = _frame(layer, schedule, arrays, np.concatenate(picks))
    frame["buffer_bytes"] = np.repeat(np.asarray(sizes, dtype=np.int64), [len(p) for p in picks])
    return [frame]


def best_tiles(layer: ConvLayer, schedule: str, memory_bytes: float | None = None,
               elem_bytes: int = 2, double_buffer: bool = False) -> tuple[Tile, int, int]:
    """Seed 000 appendix C: the tile with least external accesses under a memory size, ties
    to the smaller footprint. Returns (tile, accesses in elements, footprint in bytes).
    Exact over every tile: searched in the candidate set."""
    check_schedule(schedule)
    scale = elem_bytes * (2 if double_buffer else 1)
    cs = candidate_set(layer, schedule)
    fp = cs.column("footprint_elems")
    rows = np.flatnonzero(fp * scale <= (np.inf if memory_bytes is None else memory_bytes))
    if len(rows) == 0:
        raise too_small(layer, memory_bytes, elem_bytes, double_buffer)
    acc = cs.column("ext_accesses")[rows]
    i = rows[np.lexsort((fp[rows], acc))[0]]
    return Tile(*(int(v) for v in cs.tiles[i])), int(acc.min()), int(fp[i]) * scale


def _worker_start() -> None:
    """A worker's start: SIGTERM back to its default action. A broken pool ends its workers
    with SIGTERM; a Python-level handler inherited through the fork (the CLI's) only sets a
    flag, which a worker about to block on the call queue may never act on."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _explore_one(args: tuple) -> pd.DataFrame:
    layer, platform, schedules, sizes, keep, objectives, local_traffic = args
    return explore_layer(layer, platform, schedules, sizes, keep, objectives, local_traffic)


def explore_layers(layer_list: Sequence[ConvLayer], platform: Platform,
                   schedules: Iterable[str] = SCHEDULES,
                   buffer_sizes: Iterable[int] | None = None, keep: str = "best",
                   objectives: Mapping[str, str] | None = None, local_traffic: bool = True,
                   jobs: int = 1, objective: str = "cycles",
                   caches: Caches | None = None) -> pd.DataFrame:
    """`explore_layer` for several layers; one DataFrame. keep="best" is answered for all
    layers at once from the candidate sets (`caches`: what it keeps for later calls);
    "all"/"pareto" in `jobs` worker processes."""
    if keep == "best":
        sizes = sorted(set(buffer_sizes or [platform.local_mem_bytes]))
        for layer in layer_list:  # a layer no size fits is an error, as in explore_layer
            if smallest_footprint_bytes(layer, platform.elem_bytes,
                                        platform.double_buffer) > sizes[-1]:
                raise too_small(layer, sizes[-1], platform.elem_bytes, platform.double_buffer)
        return best_mappings(layer_list, platform, sizes, tuple(schedules), objective,
                             per_schedule=True, local_traffic=local_traffic, caches=caches
                             ).drop(columns=["platform"])
    tasks = [(layer, platform, tuple(schedules), tuple(buffer_sizes or ()) or None, keep,
              objectives, local_traffic) for layer in layer_list]
    if jobs > 1 and len(tasks) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)),
                                 initializer=_worker_start) as pool:
            frames = list(pool.map(_explore_one, tasks))
    else:
        frames = [_explore_one(task) for task in tasks]
    return pd.concat(frames, ignore_index=True)


def explore_network(net: Network, platform: Platform, schedules: Iterable[str] = SCHEDULES,
                    memory_bytes: int | None = None, local_traffic: bool = True,
                    jobs: int = 1, objective: str = "cycles",
                    progress: bool = False) -> pd.DataFrame:
    """Per tiled layer, in network order, the best solution over the schedules under one
    shared memory size (bytes), ranked by `objective` (ties: cycles, accesses, footprint).
    `jobs` is accepted for compatibility: the candidate-set query needs no workers."""
    memory = memory_bytes or platform.local_mem_bytes
    tiled = net.tiled_layers()
    for layer in tiled:
        if smallest_footprint_bytes(layer, platform.elem_bytes, platform.double_buffer) > memory:
            raise too_small(layer, memory, platform.elem_bytes, platform.double_buffer)
    return best_mappings(tiled, platform, [memory], tuple(schedules), objective,
                         local_traffic=local_traffic, progress=progress
                         ).drop(columns=["platform"])


def network_totals(per_layer: pd.DataFrame | Mapping[str, np.ndarray],
                   platform: Platform) -> dict[str, float]:
    """Whole-network sums of a per-layer table (a DataFrame, or its columns as arrays):
    cycles, accesses, energy (pJ), throughput (GOps/s of conv/fc MACs) and time (ms)."""
    cycles = float(per_layer["cycles"].sum())
    if "macs" in per_layer:  # throughput counts MAC work (2 ops per MAC) over every layer's time
        ops = 2.0 * float(per_layer["macs"].sum()) * platform.clock_mhz * 1e-3
    else:
        ops = float((per_layer["throughput_gops"] * per_layer["cycles"]).sum())  # ∝ ops
    return {"cycles": cycles, "ext_accesses": int(per_layer["ext_accesses"].sum()),
            "dma_transfers": int(per_layer["dma_transfers"].sum()),
            "energy_pj": float(per_layer["energy_pj"].sum()),
            "throughput_gops": ops / cycles, "time_ms": cycles / (platform.clock_mhz * 1e3)}


def sweep_summary(layer: ConvLayer, df: pd.DataFrame, objective: str = "cycles") -> pd.DataFrame:
    """Per (schedule, buffer size) the best row under `objective`, with accesses relative to
    the compulsory minimum and cycles relative to compute-only cycles (seed 000 fig. 5.5–5.10
    axes)."""
    from workbench.tiling.listing import compulsory_accesses

    best = (df.sort_values(list(ranking(objective)), kind="stable")
            .groupby(["schedule", "buffer_bytes"], sort=True).head(1)
            .sort_values(["schedule", "buffer_bytes"]).reset_index(drop=True))
    best["accesses_rel"] = best["ext_accesses"] / compulsory_accesses(layer)
    best["cycles_rel"] = 1.0 / best["utilization"]
    return best
