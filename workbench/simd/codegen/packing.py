"""Coefficient packing (seed 003 §5.1): how many coefficients each weight-register load
carries.

The automatic layout fills the 4-coefficient register on every load. When a weight load and
an image load want port A in the same cycle, the list scheduler backs one off and the MAC
field idles. Packing loads one coefficient fewer in the load before the conflicting one, so
that the conflicting load (and every later one, refilled to 4) happens one MAC earlier; this
repeats, conflict after conflict in coefficient order, until the list schedule has none. When
the load before a conflict already carries a single coefficient the conflict cannot be moved
(a 1×1 kernel loads the image register before every MAC, so no cycle is free of image loads):
no packing exists and the full layout is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.simd.codegen.graph import Shape, build_graph, full_chunks
from workbench.simd.codegen.listsched import Schedule, list_schedule


@dataclass(frozen=True)
class Packing:
    """Chunk sizes per weight-register load of one output, whether they are conflict-free,
    and how many repacking steps were taken."""

    chunks: tuple[int, ...]
    found: bool
    steps: int


def _conflicting_chunk(schedule: Schedule, o: int) -> int | None:
    """Index of the earliest (in coefficient order) weight load of output o in a conflict."""
    ops = schedule.graph.ops
    hits = [ops[i].arg[1] for pair in schedule.conflicts for i in pair
            if ops[i].kind == "setw" and ops[i].arg[0] == o]
    return min(hits) if hits else None


def pack_output(shape: Shape, o: int, load_latency: int = 2) -> Packing:
    """Packing of output o of a program shape (the other outputs keep their chunks)."""
    taps = shape.taps(o)
    prefix: list[int] = []
    chunks = full_chunks(taps)
    for step in range(4 * (taps + 1) + 1):
        trial = replace(shape, chunks=shape.chunks[:o] + (chunks,) + shape.chunks[o + 1:])
        schedule = list_schedule(build_graph(trial), load_latency)
        c = _conflicting_chunk(schedule, o)
        if c is None:
            return Packing(chunks, True, step)
        if c == 0 or chunks[c - 1] == 1:
            break
        prefix = list(chunks[:c - 1]) + [chunks[c - 1] - 1]
        rest = taps + 1 - sum(prefix)
        chunks = tuple(prefix) + full_chunks(rest - 1)
    return Packing(full_chunks(taps), False, step)


def pack(shape: Shape, load_latency: int = 2) -> tuple[Shape, tuple[Packing, ...]]:
    """Every output packed in turn (seed 003 §5.1); returns the packed shape and the result
    per output."""
    results = []
    for o in range(len(shape.inputs)):
        result = pack_output(shape, o, load_latency)
        shape = replace(shape, chunks=shape.chunks[:o] + (result.chunks,)
                        + shape.chunks[o + 1:])
        results.append(result)
    return shape, tuple(results)
