"""Literal execution of a dataflow schedule: every iteration of the 12-deep loop nest in order,
each array refilled whenever a loop outside its buffering level advances.

Counts, per array, the distinct elements each refill touches (what it loads; for O also what
it writes back), and tracks live data: within a refill, an element is live from its first to
its last use, so the most simultaneously live elements is the buffer the schedule needs.
Small layers only (the iteration space is materialized); it is the check of the model.
"""

from __future__ import annotations

import numpy as np

from workbench.layers.dims import Dim, Loop
from workbench.layers.spec import ConvLayer
from workbench.tiling.dataflow import ARRAYS, DataflowSchedule, trip_counts

MAX_ITERATIONS = 2_000_000


def _indices(layer: ConvLayer, schedule: DataflowSchedule) -> tuple[dict, list[Loop], list]:
    n = {k: int(v) for k, v in trip_counts(layer, schedule.tiles).items()}
    outer_first = list(reversed(schedule.order))
    sizes = [n[loop] for loop in outer_first]
    total = int(np.prod(sizes))
    if total > MAX_ITERATIONS:
        raise ValueError(f"{total} iterations: the executor is meant for small layers")
    grids = np.indices(sizes).reshape(len(sizes), -1)
    return {loop: grids[i] for i, loop in enumerate(outer_first)}, outer_first, sizes


def _elements(layer: ConvLayer, schedule: DataflowSchedule, it: dict) -> dict[str, tuple]:
    t = schedule.tiles
    m, c, y, x, n = (it[Loop(d, 1)] * t[d] + it[Loop(d, 0)]
                     for d in (Dim.M, Dim.C, Dim.Y, Dim.X, Dim.N))
    fy, fx = it[Loop(Dim.FY, 0)], it[Loop(Dim.FX, 0)]
    iy, ix = y * layer.Sy + fy, x * layer.Sx + fx  # padded input coordinates
    return {"I": (n, c, iy, ix), "W": (m, c, fy, fx), "O": (n, m, y, x)}


def _key(columns: tuple) -> np.ndarray:
    dims = [int(col.max()) + 1 for col in columns]
    return np.ravel_multi_index(columns, dims)


def execute(layer: ConvLayer, schedule: DataflowSchedule) -> dict[str, int]:
    """Per array: loads (I, W) or writes (O) counted refill by refill, the distinct elements,
    and the largest live set ('live_X'); for one group of a grouped layer."""
    it, outer_first, sizes = _indices(layer, schedule)
    elements = _elements(layer, schedule, it)
    time = np.arange(len(next(iter(it.values()))))
    result: dict[str, int] = {}
    for array in ARRAYS:
        level = schedule.levels[array]
        period_loops = outer_first[:len(outer_first) - (level + 1)]
        period = _key(tuple(it[loop] for loop in period_loops)) if period_loops else \
            np.zeros_like(time)
        element = _key(elements[array])
        pair = period.astype(np.int64) * (int(element.max()) + 1) + element
        uniq, first = np.unique(pair, return_index=True)
        last = len(pair) - 1 - np.unique(pair[::-1], return_index=True)[1]
        result[f"moved_{array}"] = int(len(uniq))
        result[f"distinct_{array}"] = int(len(np.unique(element)))
        events = np.zeros(len(time) + 1, dtype=np.int64)
        np.add.at(events, first, 1)
        np.add.at(events, last + 1, -1)
        result[f"live_{array}"] = int(np.cumsum(events).max())
    return result
