"""A schedule laid out as the NVE runs it: an init part (coefficient words and the first
input rows written once), then the loop as prologue, steady state (one II-cycle kernel the
hardware loop repeats) and epilogue. Operations of the kernel are tagged with their stage: in
repetition k, an operation of stage s works on iteration k + stages − 1 − s.

The local buffer keeps `rows_per_map` input rows of every input map of the program, used
circularly (the k-th row written goes to slot k mod rows_per_map); `buffer_rows` finds the
fewest rows for which no write lands before the last read of the row it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.simd.codegen.graph import WRITE_LATENCY
from workbench.simd.codegen.listsched import Schedule

WORD_BYTES = 8   # a local-buffer word: 8 pixels of 8 bits, or 4 coefficients of 16 bits
Bundle = tuple[tuple[int, int], ...]   # (op, iteration) or, in the kernel, (op, offset)


@dataclass(frozen=True)
class Program:
    """The VLIW program of one strip of `iterations` output rows."""

    schedule: Schedule
    iterations: int
    init: tuple[tuple, ...]   # a buffer write per bundle: ("coef", o, c) | ("img", p, row, w)
    prologue: tuple[Bundle, ...]
    kernel: tuple[Bundle, ...]
    repeats: int
    epilogue: tuple[Bundle, ...]
    rows_per_map: int

    @property
    def init_cycles(self) -> int:
        """Init writes, then WRITE_LATENCY − 1 idle cycles before the loop may read them."""
        return len(self.init) + WRITE_LATENCY - 1

    @property
    def cycles(self) -> int:
        return (self.init_cycles + len(self.prologue) + self.repeats * len(self.kernel)
                + len(self.epilogue))

    @property
    def buffer_words(self) -> int:
        shape = self.schedule.graph.shape
        coef = sum(len(c) for c in shape.chunks)
        return shape.n_union * self.rows_per_map * shape.words_per_row + coef


def row_index(shape, row: int) -> int:
    """Position of an input row among the rows written into the buffer: every row when the
    stride does not exceed the kernel, else min(Ky, Sy) rows of every Sy."""
    if shape.sy <= shape.ky:
        return row
    return row // shape.sy * shape.new_rows + row % shape.sy


def index_row(shape, index: int) -> int:
    """The input row written index-th (inverse of row_index)."""
    if shape.sy <= shape.ky:
        return index
    return index // shape.new_rows * shape.sy + index % shape.new_rows


def program_ops(program: Program) -> list[tuple[int, str, int, int]]:
    """Every operation the program issues: (cycle, part, op index, iteration), in order;
    init writes are op index −1 (they are not in the task graph) with iteration −1."""
    out = [(c, "init", -1, -1) for c in range(len(program.init))]
    cycle = program.init_cycles
    for bundle in program.prologue:
        out += [(cycle, "prologue", op, i) for op, i in bundle]
        cycle += 1
    for k in range(program.repeats):
        for bundle in program.kernel:
            out += [(cycle, "steady state", op, off + k) for op, off in bundle]
            cycle += 1
    for bundle in program.epilogue:
        out += [(cycle, "epilogue", op, i) for op, i in bundle]
        cycle += 1
    return out


def gantt_frame(program: Program) -> pd.DataFrame:
    """One row per issued operation: cycle, field, kind, label (its operands), iteration
    and program part (init writes: field MEMA, kind "init")."""
    ops = program.schedule.graph.ops
    rows = []
    for cycle, part, op, i in program_ops(program):
        if op < 0:
            tag = program.init[cycle]
            rows.append((cycle, "MEMA", "init", " ".join(map(str, tag)), i, part))
        else:
            o = ops[op]
            rows.append((cycle, o.field, o.kind, str(o.arg), i, part))
    return pd.DataFrame(rows, columns=["cycle", "field", "kind", "label", "iteration", "part"])


def buffer_rows(schedule: Schedule) -> int:
    """Fewest input rows per map the circular buffer needs (see the module docstring)."""
    g, ii = schedule.graph, schedule.ii
    shape = g.shape
    first_new = shape.ky - shape.new_rows
    writes = [(i, op) for i, op in enumerate(g.ops) if op.kind == "wr"]
    reads = {}
    for i, op in enumerate(g.ops):
        if op.kind == "rdi":
            _, p, ky, w = op.arg
            reads.setdefault((p, w), []).append((ky, schedule.times[i]))
    base = shape.ky + schedule.stages + 2   # an iteration far enough from the start
    for rows in range(shape.ky, shape.ky + shape.sy * (schedule.stages + 2) + 2):
        ok = True
        for i, op in writes:
            p, s, w = op.arg
            t_write = base * ii + schedule.times[i]
            new = shape.sy * base + first_new + s
            old = index_row(shape, row_index(shape, new) - rows)   # the row it replaces
            for ky, t in reads.get((p, w), ()):
                if (old - ky) % shape.sy == 0 and (old - ky) // shape.sy >= 0 and \
                        (old - ky) // shape.sy * ii + t >= t_write + WRITE_LATENCY:
                    ok = False
        if ok:
            return rows
    raise WorkbenchError("no circular buffer size fits the schedule")  # II >= 1 always fits


def layout(schedule: Schedule, iterations: int, capacity_bytes: int | None = None) -> Program:
    """Lay a schedule out for `iterations` iterations; with capacity_bytes, check that the
    buffer (input rows and coefficients) fits the local memory."""
    if iterations < 1:
        raise WorkbenchError(f"iterations must be at least 1, got {iterations}")
    g, ii = schedule.graph, schedule.ii
    shape = g.shape
    first_new = shape.ky - shape.new_rows
    init = [("coef", o, c) for o, sizes in enumerate(shape.chunks) for c in range(len(sizes))]
    init += [("img", p, row, w) for p in range(shape.n_union) for row in range(first_new)
             for w in range(shape.words_per_row)]
    stages, times = schedule.stages, schedule.times
    n_ops = range(len(g.ops))
    if iterations < stages:   # too short to reach a steady state: all of it is prologue
        total = (iterations - 1) * ii + schedule.length
        prologue = tuple(_bundle(times, ii, c, iterations, n_ops) for c in range(total))
        kernel, repeats, epilogue = (), 0, ()
    else:
        prologue = tuple(_bundle(times, ii, c, iterations, n_ops)
                         for c in range((stages - 1) * ii))
        kernel = tuple(tuple((op, stages - 1 - times[op] // ii) for op in n_ops
                             if times[op] % ii == r) for r in range(ii))
        repeats = iterations - stages + 1
        start = (stages - 1 + repeats) * ii
        epilogue = tuple(_bundle(times, ii, c, iterations, n_ops)
                         for c in range(start, (iterations - 1) * ii + schedule.length))
    program = Program(schedule, iterations, tuple(init), prologue, kernel, repeats, epilogue,
                      buffer_rows(schedule))
    if capacity_bytes is not None and program.buffer_words * WORD_BYTES > capacity_bytes:
        raise WorkbenchError(f"the program's local buffer needs {program.buffer_words} words "
                             f"of {WORD_BYTES} bytes; the platform has {capacity_bytes} bytes")
    return program


def _bundle(times: tuple[int, ...], ii: int, cycle: int, iterations: int,
            ops: range) -> Bundle:
    out = []
    for op in ops:
        k, rem = divmod(cycle - times[op], ii)
        if rem == 0 and 0 <= k < iterations:
            out.append((op, k))
    return tuple(out)
