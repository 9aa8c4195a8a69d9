"""Cycle-by-cycle execution of an NVE program (seed 003 §3): local buffer, read ports, weight
and image registers, vector MAC accumulators and the activation stage.

Timing: a buffer write lands `WRITE_LATENCY` cycles after it issues; a read puts its word on
the port `load_latency` cycles after it issues and the word stays there until the next read
of that port lands; register operations take effect the next cycle; a MAC reads the
registers as they are at the start of its cycle; a vector's last MAC hands the accumulators
to the activation stage act_latency cycles later, where they stay until the next vector's
arrive. Every value carries a tag (which row, coefficient or partial sum it is); an
operation that finds another tag than its own (a word overwritten too early, a port reused,
a register clobbered by an overlapping iteration) stops the run with an error: that is how
the layout's register and buffer capacity is checked. The activation itself is the identity
here: outputs are the accumulator codes (the LUT is not part of the check)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError
from workbench.quant.fixed import saturate, wrap
from workbench.simd.codegen.graph import LANES, MAX_EXTRA, WRITE_LATENCY
from workbench.simd.codegen.program import Program, row_index


@dataclass(frozen=True)
class Run:
    """Outputs (outputs, iterations, lanes) and what the run measured."""

    outputs: np.ndarray
    cycles: int
    mac_ops: int         # vector MAC operations issued (each 16 lane-MACs)
    vmac_busy: int       # cycles with an operation in the VMAC field (set-bias included)


class ProgramError(WorkbenchError):
    """The program violates a timing or capacity rule of the NVE."""


class _Machine:
    def __init__(self, program: Program, image: np.ndarray, coefs: list[np.ndarray],
                 acc_bits: int, overflow: str) -> None:
        self.p, self.g = program, program.schedule.graph
        self.shape, self.ll = self.g.shape, program.schedule.load_latency
        self.image, self.coefs, self.bits = image, coefs, acc_bits
        self.register = wrap if overflow == "wrap" else saturate
        self.starts = [np.cumsum((0,) + c)[:-1] for c in self.shape.chunks]
        self.buffer: dict[tuple, tuple] = {}
        self.pending: deque = deque()           # (cycle, kind, key/port, tag, value)
        self.port: dict[str, tuple] = {}
        self.reg = np.zeros(LANES * self.shape.sx + MAX_EXTRA, dtype=np.int64)
        self.reg_tags: list = [None] * self.shape.sx
        self.shifts, self.extra_tag = 0, None
        self.rw, self.rw_tag = np.zeros(4, dtype=np.int64), None
        self.acc, self.acc_tag = np.zeros(LANES, dtype=np.int64), None
        n_out = len(self.shape.inputs)
        self.out = np.zeros((n_out, program.iterations, LANES), dtype=np.int64)
        self.done: set = set()
        self.mac_ops = self.vmac_busy = 0

    # --- words ------------------------------------------------------------------------------
    def word(self, tag: tuple) -> np.ndarray:
        if tag[0] == "coef":
            _, o, c = tag
            vals = self.coefs[o][self.starts[o][c]:self.starts[o][c] + self.shape.chunks[o][c]]
            return np.pad(vals, (0, 4 - len(vals)))
        _, p, row, w = tag
        x = 8 * w if w < 2 * self.shape.sx else LANES * self.shape.sx
        return self.image[p, row, x:x + 8]

    def slot(self, tag: tuple) -> tuple:
        if tag[0] == "coef":
            return tag
        return ("img", tag[1], row_index(self.shape, tag[2]) % self.p.rows_per_map, tag[3])

    def write(self, cycle: int, tag: tuple) -> None:
        self.pending.append((cycle + WRITE_LATENCY, "buf", self.slot(tag), tag, self.word(tag)))

    # --- one cycle ----------------------------------------------------------------------------
    def step(self, cycle: int, bundle, iteration_of) -> None:
        for item in [x for x in self.pending if x[0] == cycle]:
            self.pending.remove(item)
            _, kind, key, tag, value = item
            (self.buffer if kind == "buf" else self.port)[key] = (tag, value)
        ops = [(self.g.ops[op], iteration_of(it)) for op, it in bundle]
        fields = [op.field for op, _ in ops]
        if len(set(fields)) != len(fields):
            raise ProgramError(f"cycle {cycle}: two operations in one field ({fields})")
        for op, i in sorted(ops, key=lambda x: x[0].field not in ("VMAC", "ACT")):
            getattr(self, "do_" + op.kind)(cycle, op.arg, i)

    def row(self, i: int, ky: int) -> int:
        return self.shape.sy * i + ky

    def expect_port(self, port: str, tag: tuple, cycle: int) -> np.ndarray:
        got = self.port.get(port)
        if got is None or got[0] != tag:
            raise ProgramError(f"cycle {cycle}: port {port} holds {got and got[0]}, a set "
                               f"needs {tag}")
        return got[1]

    # --- MEMA / MEMB ----------------------------------------------------------------------------
    def do_wr(self, cycle, arg, i):
        p, s, w = arg
        self.write(cycle, ("img", p, self.row(i, self.shape.ky - self.shape.new_rows + s), w))

    def _read(self, cycle, port, tag):
        got = self.buffer.get(self.slot(tag))
        if got is None or got[0] != tag:
            raise ProgramError(f"cycle {cycle}: buffer holds {got and got[0]} where a read "
                               f"needs {tag}")
        self.pending.append((cycle + self.ll, "port", port, tag, got[1]))

    def do_rdi(self, cycle, arg, i):
        o, p, ky, w = arg
        port = "A" if w < 2 * self.shape.sx and w % 2 == 0 else "B"
        self._read(cycle, port, ("img", p, self.row(i, ky), w))

    def do_rdw(self, cycle, arg, i):
        self._read(cycle, "A", ("coef", *arg))

    # --- registers ----------------------------------------------------------------------------
    def do_seti(self, cycle, arg, i):
        o, p, ky, part = arg
        r = self.row(i, ky)
        lo = self.expect_port("A", ("img", p, r, 2 * part), cycle)
        hi = self.expect_port("B", ("img", p, r, 2 * part + 1), cycle)
        self.reg[LANES * part:LANES * part + 16] = np.concatenate([lo, hi])
        self.reg_tags[part] = (o, i, p, ky)
        self.shifts, self.extra_tag = 0, None

    def do_setsh(self, cycle, arg, i):
        o, p, ky = arg
        extra = self.expect_port("B", ("img", p, self.row(i, ky), 2 * self.shape.sx), cycle)
        base = LANES * self.shape.sx
        self.reg[base:base + MAX_EXTRA] = extra[:MAX_EXTRA]
        self.extra_tag = (o, i, p, ky)
        self._shift(cycle, (o, i, p, ky), 0)

    def do_shi(self, cycle, arg, i):
        o, p, ky, kx = arg
        self._shift(cycle, (o, i, p, ky), kx - 1)

    def _shift(self, cycle, tag, before):
        if self.shifts != before or any(t != tag for t in self.reg_tags):
            raise ProgramError(f"cycle {cycle}: image register holds {self.reg_tags} shifted "
                               f"{self.shifts}; a shift expects {tag} shifted {before}")
        self.reg = np.concatenate([self.reg[1:], [0]])
        self.shifts += 1

    def do_setw(self, cycle, arg, i):
        o, c = arg
        self.rw = self.expect_port("A", ("coef", o, c), cycle).copy()
        self.rw_tag = (o, i, int(self.starts[o][c]))

    def do_shw(self, cycle, arg, i):
        o, j = arg
        if self.rw_tag != (o, i, j - 1):
            raise ProgramError(f"cycle {cycle}: weight register at {self.rw_tag}, a shift to "
                               f"coefficient {j} of output {o} iteration {i}")
        self.rw = np.concatenate([self.rw[1:], [0]])
        self.rw_tag = (o, i, j)

    # --- VMAC / ACT -------------------------------------------------------------------------------
    def do_setb(self, cycle, arg, i):
        (o,) = arg
        self._expect_weight(cycle, (o, i, 0))
        self.acc = self.register(np.full(LANES, self.rw[0], dtype=np.int64), self.bits)
        self.acc_tag = (o, i, 0)
        self.vmac_busy += 1

    def do_mac(self, cycle, arg, i):
        o, p, ky, kx = arg
        j = 1 + (self.shape.inputs[o].index(p) * self.shape.ky + ky) * self.shape.kx + kx
        self._expect_weight(cycle, (o, i, j))
        if self.shifts != kx or any(t != (o, i, p, ky) for t in self.reg_tags) or \
                (kx > 0 and self.extra_tag != (o, i, p, ky)):
            raise ProgramError(f"cycle {cycle}: MAC {arg} of iteration {i} finds the image "
                               f"register at {self.reg_tags} shifted {self.shifts}")
        if self.acc_tag is None or self.acc_tag[:2] != (o, i):
            raise ProgramError(f"cycle {cycle}: MAC of output {o} iteration {i} finds the "
                               f"accumulators holding {self.acc_tag}")
        pixels = self.reg[self.shape.sx * np.arange(LANES)]
        self.acc = self.register(self.acc + self.rw[0] * pixels, self.bits)
        self.acc_tag = (o, i, self.acc_tag[2] + 1)
        if self.acc_tag[2] == self.shape.taps(o):   # finished: to the activation stage
            self.pending.append((cycle + self.shape.act_latency, "port", "ACT", self.acc_tag,
                                 self.acc.copy()))
        self.mac_ops += 1
        self.vmac_busy += 1

    def _expect_weight(self, cycle, tag):
        if self.rw_tag != tag:
            raise ProgramError(f"cycle {cycle}: weight register at {self.rw_tag}, the VMAC "
                               f"needs coefficient {tag}")

    def do_act(self, cycle, arg, i):
        o, half = arg
        want = (o, i, self.shape.taps(o))
        got = self.port.get("ACT")
        if got is None or got[0] != want:
            raise ProgramError(f"cycle {cycle}: activation of {want} finds "
                               f"{got and got[0]} at the activation stage")
        lanes = slice(LANES // 2 * half, LANES // 2 * (half + 1))
        self.out[o, i, lanes] = got[1][lanes]
        self.done.add((o, i, half))


def execute(program: Program, image: np.ndarray, coefs: list[np.ndarray],
            acc_bits: int = 32, overflow: str = "wrap") -> Run:
    """Run a program on a strip: image (input maps of the program, rows, pixels from the
    strip's first column; at least 16·Sx + 8 wide), coefs[o] = (bias, weights in the graph's
    tap order). The accumulators wrap or saturate after every addition (the MACs of a vector
    run in tap order: the dependences fix it). Returns the outputs and measured cycles."""
    shape = program.schedule.graph.shape
    need = (shape.n_union, shape.sy * (program.iterations - 1) + shape.ky,
            LANES * shape.sx + 8)
    if image.shape[0] < need[0] or image.shape[1] < need[1] or image.shape[2] < need[2]:
        raise WorkbenchError(f"image strip {image.shape} smaller than the program's {need}")
    m = _Machine(program, image, coefs, acc_bits, overflow)
    cycle = 0
    for tag in program.init:
        m.step(cycle, (), None)
        m.write(cycle, tag)
        cycle += 1
    for _ in range(program.init_cycles - len(program.init)):
        m.step(cycle, (), None)
        cycle += 1
    for bundle in program.prologue:
        m.step(cycle, bundle, int)
        cycle += 1
    for k in range(program.repeats):
        for bundle in program.kernel:
            m.step(cycle, bundle, lambda off, k=k: off + k)
            cycle += 1
    for bundle in program.epilogue:
        m.step(cycle, bundle, int)
        cycle += 1
    missing = len(shape.inputs) * program.iterations * 2 - len(m.done)
    if missing:
        raise ProgramError(f"{missing} half vectors never reached the activation stage")
    return Run(m.out, cycle, m.mac_ops, m.vmac_busy)
