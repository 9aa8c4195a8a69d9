"""Literal execution of an N-level blocking: the ground truth of `blocking.transfers`.

Walks every iteration of the full nested loop nest in order (all groups, outermost loop
first), computes the element of I, W and O each iteration touches (padded input coordinates,
blocks at full size), and for every holder of every array (each memory level holding it, then
the datapath) splits time into that holder's refills: a refill lasts while the loops outside
its buffering position stand still. Then, per holder:
- moved: the distinct elements each refill touches, summed over refills (what it loads, for
  O what it writes back);
- O partial reads: refill-elements whose element was touched in an earlier refill (it was
  written back before, so it is read back); final writes: each element's last refill;
- live: within a refill an element is live from its first to its last use; the most
  simultaneously live elements is the buffer the schedule needs. With an unrolled datapath
  time runs in steps: a step's iterations happen at once, steps in loop order (each loop at
  its own step, outermost first), so an element is live through every step from its first
  to its last.
The datapath's refills are its steps. Scalar (no datapath, or no unrolling): one per
iteration. Unrolled (`datapath.Datapath`, u_d lanes along d): the iterations sharing the
indices of every loop of groups ≥ 1, the kernel position (FX, FY) and, per dimension d,
⌊(group 0's index of d, the index within the t0 block) / u_d⌋ — counted as refills are (steps
need not be contiguous in time; only their partition matters for moved, partial reads and
final writes). Its live is the most distinct elements of one step (the operands a step reads)
and `steps` the number of steps.
Small layers only (the iteration space is materialized): over MAX_ITERATIONS it refuses.
For a grouped layer it runs one group and multiplies the per-layer counts by `groups`.
"""

from __future__ import annotations

import numpy as np

from workbench.errors import WorkbenchError
from workbench.hierarchy.blocking import ARRAYS, DIMS, KERNEL_LOOPS, Blocking, holders, trip_counts
from workbench.hierarchy.datapath import Datapath
from workbench.layers.spec import ConvLayer, as_grouped

MAX_ITERATIONS = 300_000


def _iterations(layer: ConvLayer, blocking: Blocking) -> tuple[dict, list[int]]:
    """Index of every loop at every iteration (time order), keyed by loop number."""
    n = trip_counts(layer, blocking)
    total = int(np.prod(n, dtype=np.int64))
    if total > MAX_ITERATIONS:
        raise WorkbenchError(f"the hierarchy executor runs at most {MAX_ITERATIONS} loop "
                             f"iterations (small layers only); this blocking has {total}")
    outer_first = list(reversed(range(len(n))))
    grids = np.indices([n[j] for j in outer_first]).reshape(len(n), -1)
    return {j: grids[i] for i, j in enumerate(outer_first)}, list(n)


def _elements(layer: ConvLayer, blocking: Blocking, it: dict) -> dict[str, tuple]:
    """(coordinates) of the I, W and O element of every iteration."""
    coord = {}
    for dim in DIMS + KERNEL_LOOPS:
        value = np.zeros_like(it[0])
        for j, (name, group) in enumerate(blocking.loops):
            if name == dim:
                step = blocking.tiles[group - 1][DIMS.index(dim)] if group else 1
                value = value + it[j] * step
        coord[dim] = value
    iy = coord["Y"] * layer.Sy + coord["FY"]
    ix = coord["X"] * layer.Sx + coord["FX"]
    return {"I": (coord["N"], coord["C"], iy, ix),
            "W": (coord["M"], coord["C"], coord["FY"], coord["FX"]),
            "O": (coord["N"], coord["M"], coord["Y"], coord["X"])}


def _key(columns) -> np.ndarray:
    dims = [int(col.max()) + 1 for col in columns]
    return np.ravel_multi_index(columns, dims)


def _holder_counts(period: np.ndarray, element: np.ndarray,
                   time: np.ndarray | None = None) -> dict[str, int]:
    """moved, partial reads, final writes, refills (periods) and those reading an element
    back, and the largest live set of one holder; time: when
    each iteration happens (default: its index; the step time with an unrolled datapath)."""
    steps = len(element)
    pair = period.astype(np.int64) * (int(element.max()) + 1) + element
    uniq, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    elem_of_pair = uniq % (int(element.max()) + 1)
    elems, elem_first = np.unique(element, return_index=True)
    ever = elem_first[np.searchsorted(elems, elem_of_pair)]
    time = np.arange(steps) if time is None else time
    start = np.full(len(uniq), steps, dtype=np.int64)
    end = np.full(len(uniq), -1, dtype=np.int64)
    np.minimum.at(start, inverse, time)
    np.maximum.at(end, inverse, time)
    start, end = _merged(elem_of_pair, start, end)
    events = np.zeros(steps + 1, dtype=np.int64)
    np.add.at(events, start, 1)
    np.add.at(events, end + 1, -1)
    period_of = uniq // (int(element.max()) + 1)
    return {"moved": int(len(uniq)), "partial_reads": int(np.sum(ever < first)),
            "refills": int(len(np.unique(period))),
            "reread_refills": int(len(np.unique(period_of[ever < first]))),
            "final_writes": int(len(elems)), "live": int(np.cumsum(events).max()),
            "distinct": int(len(elems))}


def _merged(element: np.ndarray, start: np.ndarray, end: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each element's live intervals [start, end] (one per refill) with those overlapping in
    time joined: an element is held once however many refills use it at once (a step spanning
    the refills of a buffer inside one of its lanes' loops)."""
    order = np.lexsort((start, element))
    e, st, en = element[order], start[order], end[order]
    big = int(en.max()) + 2
    reach = np.maximum.accumulate(e * big + en) - e * big  # the latest end so far, per element
    new = np.ones(len(e), dtype=bool)
    new[1:] = (e[1:] != e[:-1]) | (st[1:] > reach[:-1])
    group = np.cumsum(new) - 1
    last = np.full(int(group[-1]) + 1, -1, dtype=np.int64)
    np.maximum.at(last, group, en)
    return st[new], last


def _steps(blocking: Blocking, it: dict, datapath: Datapath) -> tuple[np.ndarray, np.ndarray]:
    """The datapath step of every iteration (see the module docstring), and its time: the
    step's rank in loop order, outermost first, each loop at its own step."""
    columns = []
    for j, (name, group) in enumerate(blocking.loops):
        lanes = datapath.lanes(name) if group == 0 and name in DIMS else 1
        columns.append(it[j] // lanes)
    time = np.unique(_key(tuple(reversed(columns))), return_inverse=True)[1]
    return _key(tuple(columns)), time.reshape(-1)


def _largest_step(period: np.ndarray, element: np.ndarray) -> int:
    """The most distinct elements any one period touches."""
    pairs = np.unique(np.stack([period, element]), axis=1)
    return int(np.bincount(np.unique(pairs[0], return_inverse=True)[1]).max())


def execute(layer: ConvLayer, blocking: Blocking, datapath: Datapath | None = None) -> \
        dict[tuple[str, int], dict[str, int]]:
    """Per (array, holder level) — level indices as in `blocking.transfers`, the datapath
    last — moved, partial_reads, final_writes (O; 0 for I and W), distinct (per layer),
    refills and, for O, reread_refills (refills reading a partial sum back; per layer) and
    live (elements, one group); the datapath's entries also give `steps` (per layer)."""
    layer = as_grouped(layer)  # a connection table's groups, if it has them
    it, n = _iterations(layer, blocking)
    elements = _elements(layer, blocking, it)
    steps = len(it[0])
    n_levels = blocking.on_chip_levels + 1
    dp_period, time = (None, None) if datapath is None or datapath.macs_per_step == 1 else \
        _steps(blocking, it, datapath)
    result: dict[tuple[str, int], dict[str, int]] = {}
    for array in ARRAYS:
        element = _key(elements[array])
        for level, position in holders(blocking, array, n_levels):
            outside = [j for j in reversed(range(position + 1, len(n)))]
            period = _key(tuple(it[j] for j in outside)) if outside else \
                np.zeros(steps, dtype=np.int64)
            if level == n_levels and dp_period is not None:
                period = dp_period
            counts = _holder_counts(period, element, time)
            if level == n_levels:
                counts["live"] = _largest_step(period, element)
                counts["steps"] = len(np.unique(period))
            if array != "O":
                counts["partial_reads"] = counts["final_writes"] = 0
            if array != "O":
                counts["reread_refills"] = 0
            for key in ("moved", "partial_reads", "final_writes", "distinct", "steps",
                        "refills", "reread_refills"):
                if key in counts:
                    counts[key] *= layer.groups
            result[(array, level)] = counts
    return result
