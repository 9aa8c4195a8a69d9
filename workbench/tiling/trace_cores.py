"""Literal multi-core trace: every core runs the single-core loop nest on its share of a layer.

A layer split by `partition.shares` over k cores is executed core by core with `trace`'s
machine, each core in the absolute coordinates of the full layer: input (n, c, y, x) with the
layer's padding, weights (oc, kc), outputs (n, oc, y, x) (a grouped layer's with the group
apart: (n, group, kc, y, x), (group, oc, kc), (n, group, oc, y, x); see `trace`). Every
DMA get/put is an `Event`; the traffic over the shared bus is the sum of the events' elements,
except that with a broadcast DMA a get of the shared array issued by all cores of one share at
the same step with the same box crosses the bus once (checked box by box). Units: elements
(accesses, bus traffic), DMA transfers, tiles and MACs, as in `trace` ("model" or "physical"
mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.errors import SpecError, WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.tiling import partition
from workbench.tiling.model import Counts, Tile
from workbench.tiling.trace import Box, _execute, _inside, _volume


@dataclass(frozen=True, slots=True)
class Event:
    """One DMA operation of one core: the `step`-th of its program, moving `elements`."""

    core: int
    step: int
    array: str      # "in", "w" or "out"
    direction: str  # "get" or "put"
    box: Box
    elements: int


@dataclass(frozen=True, slots=True)
class CoreTrace:
    """Per core (in the order of `partition.shares`): where its share starts along the split,
    its Counts and MACs; `bus`: elements per array ("in", "w", "out") crossing the shared bus;
    `events`: every DMA operation when asked for, else empty."""

    starts: tuple[int, ...]
    counts: tuple[Counts, ...]
    macs: tuple[int, ...]
    bus: dict[str, int]
    events: tuple[Event, ...] = ()


def _base(kind: str, start: int) -> tuple[int, int, int, int]:
    """Offset (images, output maps per group, output rows, groups) of a share starting at
    `start`."""
    return {"on": (start, 0, 0, 0), "oc": (0, start, 0, 0), "xy": (0, 0, start, 0),
            "g": (0, 0, 0, start)}[kind]


def _cover(covered: np.ndarray, machines: list, tile: Tile) -> None:
    """Add one to every output element a core completed, inside the part it computes (a
    model-mode edge tile also writes padding beyond it)."""
    whole = tuple((0, n) for n in covered.shape)
    for m in machines:
        part = m.part()
        if not _inside(part, whole):
            raise WorkbenchError(f"trace_cores: a core computes {part}, outside the layer's "
                                 f"outputs {whole}")
        all_kc = frozenset(range(0, m.Kc, tile.C))
        for key, state in m.stored.items():
            if state != all_kc:
                raise WorkbenchError(f"trace_cores: output tile {key} lacks Kc steps")
            box = tuple((max(b[0], p[0]), min(b[1], p[1])) for b, p in zip(key, part,
                                                                            strict=True))
            if _volume(box):
                covered[tuple(slice(lo, hi) for lo, hi in box)] += 1


def _bus(logs: list[list[tuple]], shared: str, broadcast: bool, bus: dict[str, int]) -> None:
    """Add one share's traffic (`logs`: the DMA log of each of its cores) to `bus`."""
    for step in range(max(len(log) for log in logs)):
        ops = [log[step] for log in logs if step < len(log)]
        if (broadcast and len(ops) == len(logs) and all(
                op[0] == shared and op[1] == "get" and op[2] == ops[0][2] for op in ops)):
            bus[shared] += ops[0][3]  # same box (hence same elements): one bus transfer
        else:
            for array, _, _, elements in ops:
                bus[array] += elements


def trace_cores(layer: ConvLayer, kind: str, k: int, tiles: Sequence[Tile],
                schedule: str | Sequence[str], broadcast: bool = False, mode: str = "model",
                events: bool = False) -> CoreTrace:
    """Execute `layer` split `kind` ("oc", "xy", "on", "g") over k cores, share i tiled by
    tiles[i] under `schedule` (one for all shares, or one per share); raises WorkbenchError
    unless the cores' outputs together cover every output element of the layer exactly once,
    each with all its Kc contributions."""
    parts = partition.shares(layer, kind, k)
    tiles = tuple(tiles)
    schedules = [schedule] * len(parts) if isinstance(schedule, str) else list(schedule)
    if len(tiles) != len(parts):
        raise SpecError(f"trace_cores: {len(parts)} shares need {len(parts)} tiles, got "
                        f"{len(tiles)}")
    maps = (layer.groups, layer.Oc // layer.groups) if layer.groups > 1 else (layer.Oc,)
    covered = np.zeros((layer.On, *maps, layer.Oy, layer.Ox), dtype=np.int64)
    bus = {"in": 0, "w": 0, "out": 0}
    starts, counts, macs, logs = [], [], [], []
    if len(schedules) != len(parts):
        raise SpecError(f"trace_cores: {len(parts)} shares need 1 or {len(parts)} schedules, "
                        f"got {len(schedules)}")
    for share, tile, schedule in zip(parts, tiles, schedules, strict=True):
        share_logs = []
        for start in share.starts:
            log: list = []
            *base, first_group = _base(kind, start)
            core_counts, machines = _execute(share.layer, tile, schedule, mode, full=layer,
                                             base=tuple(base), log=log, group_base=first_group)
            _cover(covered, machines, tile)
            starts.append(start)
            counts.append(core_counts)
            macs.append(sum(m.macs for m in machines))
            share_logs.append(log)
        _bus(share_logs, partition.SHARED[kind], broadcast, bus)
        logs.extend(share_logs)
    if not (covered == 1).all():
        bad = np.argwhere(covered != 1)[0]
        where = "(n, group, oc, y, x)" if layer.groups > 1 else "(n, oc, y, x)"
        raise WorkbenchError(f"trace_cores: output {where} = {tuple(bad.tolist())} is "
                             f"computed {covered[tuple(bad)]} times, not once")
    trail = tuple(Event(core, step, *op) for core, log in enumerate(logs)
                  for step, op in enumerate(log)) if events else ()
    return CoreTrace(starts=tuple(starts), counts=tuple(counts), macs=tuple(macs), bus=bus,
                     events=trail)
