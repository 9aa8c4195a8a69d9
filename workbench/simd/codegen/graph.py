"""Task graph of one loop iteration of an NVE program (seed 003 §4.2): the operations that
compute one 16-lane output vector of every output map of a program (one map, or a fused group
of maps), with their dependencies.

An iteration computes output row y of a 16-wide strip of output columns. Operations, by VLIW
field:
- MEMA: `wr` pixel words into the local buffer (input rows new to this iteration), `rdi`
  image-word reads feeding ri[0-7], `rdw` coefficient-word reads feeding the weight register;
- MEMB: `rdi` reads feeding ri[8-15] and the extra pixels ri[16-22];
- IREG: per kernel row, `seti` (Sx of them: a strided vector spans Sx·16 pixels), `setsh`
  (loads the extra pixels and shifts by one), then `shi` shifts for the remaining columns;
- WREG: `setw` loads up to 4 coefficients (a chunk), `shw` shifts to the next coefficient;
- VMAC: `setb` (accumulators := bias) then one `mac` per kernel tap;
- ACT: two `act` operations, each emitting half the vector.

Reads are attached to the set operation they feed: a read issues exactly `load_latency`
cycles before its set (the read port holds one word). Edges carry a latency (cycles from
source to destination, possibly 0 or negative) and an iteration distance (0: same iteration;
1: the destination belongs to the next iteration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError

FIELDS = ("MEMA", "MEMB", "WREG", "IREG", "VMAC", "ACT")
REGISTER_LATENCY = 1  # register operation -> MAC (seed 003 §3.1)
ACT_LATENCY = 3       # default: last MAC -> the finished vector at the activation stage (§3.1)
WRITE_LATENCY = 2     # buffer write -> read of the word (seed 003 §3.1)
MAX_EXTRA = 7         # extra image registers ri[16-22]
LANES = 16            # the NVE's vector MACs; half a vector per activation


@dataclass(frozen=True, slots=True)
class Op:
    """One VLIW operation. arg, by kind: wr (p, s, w): word w of the s-th new row of input
    p; rdi (o, p, ky, w); rdw (o, c): chunk c of output o; seti (o, p, ky, part);
    setsh (o, p, ky); shi (o, p, ky, kx); setw (o, c); shw (o, j): coefficient j;
    setb (o,); mac (o, p, ky, kx); act (o, half). p indexes the program's input maps."""

    field: str
    kind: str
    arg: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    src: int
    dst: int
    latency: int
    distance: int = 0


@dataclass(frozen=True, slots=True)
class Shape:
    """What one program computes per iteration: kernel, strides, the input maps (indices into
    the program's union) each output map reads, and the coefficient chunk sizes per output."""

    kx: int
    ky: int
    sx: int
    sy: int
    inputs: tuple[tuple[int, ...], ...]      # per output: positions in the union, in order
    chunks: tuple[tuple[int, ...], ...]      # per output: coefficients per weight-register load
    act_latency: int = ACT_LATENCY           # the platform's mac_latency: last MAC -> ACT

    @property
    def n_union(self) -> int:
        return 1 + max(p for row in self.inputs for p in row)

    @property
    def new_rows(self) -> int:
        """Input rows each iteration adds per input map (the rest are reused)."""
        return min(self.ky, self.sy)

    @property
    def words_per_row(self) -> int:
        """Buffer words (8 pixels) per input row of a strip: Sx vectors of two words, and
        one word of extra pixels when the kernel is wider than one column."""
        return 2 * self.sx + (1 if self.kx > 1 else 0)

    def taps(self, o: int) -> int:
        return self.kx * self.ky * len(self.inputs[o])


def full_chunks(taps: int, capacity: int = 4) -> tuple[int, ...]:
    """The automatic layout: bias and weights in order, the register filled every load."""
    n = taps + 1
    return (capacity,) * (n // capacity) + ((n % capacity,) if n % capacity else ())


def check_shape(shape: Shape) -> None:
    if shape.kx - shape.sx > MAX_EXTRA:
        raise WorkbenchError(f"kernel width {shape.kx} with stride {shape.sx} needs "
                             f"{shape.kx - shape.sx} extra pixels; the NVE has {MAX_EXTRA}")
    for o, sizes in enumerate(shape.chunks):
        if sum(sizes) != shape.taps(o) + 1 or not all(1 <= c <= 4 for c in sizes):
            raise WorkbenchError(f"output {o}: coefficient chunks {sizes} must be 1..4 each "
                                 f"and cover bias + {shape.taps(o)} weights")


@dataclass(frozen=True)
class TaskGraph:
    """Operations of one iteration, edges, and the reads attached to each set operation."""

    shape: Shape
    ops: tuple[Op, ...]
    edges: tuple[Edge, ...]
    reads: dict[int, tuple[int, ...]]    # set op -> its read ops

    def count(self, field: str) -> int:
        return sum(op.field == field for op in self.ops)

    def index(self, kind: str, arg: tuple[int, ...]) -> int:
        return self.ops.index(Op(_FIELD[kind], kind, arg))


_FIELD = {"wr": "MEMA", "rdw": "MEMA", "seti": "IREG", "setsh": "IREG", "shi": "IREG",
          "setw": "WREG", "shw": "WREG", "setb": "VMAC", "mac": "VMAC", "act": "ACT"}


class _Builder:
    def __init__(self, shape: Shape) -> None:
        self.shape, self.ops, self.edges = shape, [], []
        self.reads: dict[int, tuple[int, ...]] = {}

    def op(self, kind: str, arg: tuple[int, ...], field: str | None = None) -> int:
        self.ops.append(Op(field or _FIELD[kind], kind, arg))
        return len(self.ops) - 1

    def edge(self, src: int, dst: int, latency: int, distance: int = 0) -> None:
        self.edges.append(Edge(src, dst, latency, distance))


def _image_row(b: _Builder, o: int, p: int, ky: int, sx: int, kx_n: int,
               ) -> tuple[list[int], list[int]]:
    """IREG ops of one kernel row; returns (ops feeding each column's MAC, all IREG ops)."""
    sets = []
    for part in range(sx):
        s = b.op("seti", (o, p, ky, part))
        a = b.op("rdi", (o, p, ky, 2 * part), "MEMA")
        m = b.op("rdi", (o, p, ky, 2 * part + 1), "MEMB")
        b.reads[s] = (a, m)
        sets.append(s)
    chain = list(sets)
    if kx_n > 1:
        sh = b.op("setsh", (o, p, ky))
        b.reads[sh] = (b.op("rdi", (o, p, ky, 2 * sx), "MEMB"),)
        for s in sets:
            b.edge(s, sh, REGISTER_LATENCY)
        chain.append(sh)
    for kx in range(2, kx_n):
        sh = b.op("shi", (o, p, ky, kx))
        b.edge(chain[-1], sh, REGISTER_LATENCY)
        chain.append(sh)
    feeders = [sets[-1]] + chain[sx:]
    return feeders, chain


def _weight_ops(b: _Builder, o: int) -> list[int]:
    """WREG ops of output o: coefficient j = 0 (bias), 1..T (taps in (p, ky, kx) order); a
    set at the start of every chunk (with its read), shifts between."""
    starts = set(np.cumsum((0,) + b.shape.chunks[o])[:-1].tolist())
    wreg, chunk = [], 0
    for j in range(b.shape.taps(o) + 1):
        if j in starts:
            w = b.op("setw", (o, chunk))
            b.reads[w] = (b.op("rdw", (o, chunk)),)
            chunk += 1
        else:
            w = b.op("shw", (o, j))
            b.edge(wreg[-1], w, REGISTER_LATENCY)
        wreg.append(w)
    return wreg


@dataclass(frozen=True)
class _Vector:
    """The operations one output vector's neighbours chain to."""

    first_sets: list[int]
    first_w: int
    setb: int
    last_mac: int
    acts: list[int]


def _output(b: _Builder, o: int, writes: dict) -> _Vector:
    """Every operation of output o's vector, with their in-iteration edges."""
    shape = b.shape
    sx, kx_n = shape.sx, shape.kx
    first_new = shape.ky - shape.new_rows
    wreg = _weight_ops(b, o)
    setb = b.op("setb", (o,))
    vmac, first_sets = [setb], None
    for p in shape.inputs[o]:
        for ky in range(shape.ky):
            feeders, chain = _image_row(b, o, p, ky, sx, kx_n)
            if first_sets is None:
                first_sets = chain[:sx]
            else:   # a set overwrites what the previous row's MACs read
                for op in chain[:sx]:
                    b.edge(vmac[-1], op, 0)
            for kx in range(kx_n):
                mac = b.op("mac", (o, p, ky, kx))
                vmac.append(mac)
                for f in (chain[:sx] if kx == 0 else (feeders[kx],)):
                    b.edge(f, mac, REGISTER_LATENCY)
                if kx + 1 < kx_n:  # the next shift must not change what this MAC reads
                    b.edge(mac, chain[sx + kx], 0)
                b.edge(setb, mac, 1)
                for w_i in (range(2 * sx) if kx == 0 else ()):
                    _write_edge(b, writes, p, ky, w_i, chain[w_i // 2], first_new, shape.sy)
                if kx == 1:
                    _write_edge(b, writes, p, ky, 2 * sx, chain[sx], first_new, shape.sy)
    for j in range(len(vmac)):
        b.edge(wreg[j], vmac[j], REGISTER_LATENCY)
        if j + 1 < len(vmac):
            b.edge(vmac[j], wreg[j + 1], 0)   # the next weight op overwrites rw[0]
    acts = [b.op("act", (o, h)) for h in range(2)]
    for m in vmac[1:]:
        for a in acts:
            b.edge(m, a, shape.act_latency)
    return _Vector(first_sets, wreg[0], setb, vmac[-1], acts)


def build_graph(shape: Shape) -> TaskGraph:
    """The task graph of one iteration (see the module docstring), outputs in order."""
    check_shape(shape)
    b = _Builder(shape)
    writes = {(p, s, w): b.op("wr", (p, s, w)) for p in range(shape.n_union)
              for s in range(shape.new_rows) for w in range(shape.words_per_row)}
    vectors = [_output(b, o, writes) for o in range(len(shape.inputs))]
    for prev, nxt in zip(vectors, vectors[1:], strict=False):  # fused outputs, in order
        _chain(b, prev, nxt, 0)
    _chain(b, vectors[-1], vectors[0], 1)   # the next iteration reuses the registers
    return TaskGraph(shape, tuple(b.ops), tuple(b.edges), dict(b.reads))


def _chain(b: _Builder, prev: _Vector, nxt: _Vector, distance: int) -> None:
    """Register anti-dependences from one output vector to the next: its sets may only
    overwrite the image and weight registers once the last MAC has read them; the next bias
    follows the last MAC; and both activations must read the finished vector (latched
    act_latency cycles after its last MAC) before the next vector's result replaces it."""
    for s in nxt.first_sets:
        b.edge(prev.last_mac, s, 0, distance)
    b.edge(prev.last_mac, nxt.first_w, 0, distance)
    b.edge(prev.last_mac, nxt.setb, 1, distance)
    for a in prev.acts:
        b.edge(a, nxt.last_mac, -b.shape.act_latency + 1, distance)


def _write_edge(b: _Builder, writes: dict, p: int, ky: int, word: int, set_op: int,
                first_new: int, sy: int) -> None:
    """The write of the row a read needs: written by this iteration when the row is new,
    else by the iteration `distance` back (rows move up by Sy per iteration)."""
    rows = b.shape.new_rows
    for s in range(rows):
        gap = first_new + s - ky
        if gap >= 0 and gap % sy == 0:
            read = next(r for r in b.reads[set_op] if b.ops[r].arg[3] == word)
            b.edge(writes[(p, s, word)], read, WRITE_LATENCY, gap // sy)
            return
    # rows before the first new one of iteration 0 are written by the program's init part
