"""Multi-level blocking of a convolution (seed 001 §3 "blocking strings") with a buffering
position per array and memory level (seed 002 §IV), and its analytical counts.

The loop nest. Dimensions X, Y (output columns, rows), C (input maps), M (output maps; seed
001's K), N (images), plus the kernel loops FX, FY. A blocking has G loop groups, innermost
first. Group 0 holds FX, FY and one loop per dimension (seed 002's element loops); group g ≥ 1
holds one loop per dimension, stepping over blocks of group g−1 (seed 001's X_g, …). Each
group's order is any permutation, innermost loop first; every loop of group g is inside every
loop of group g+1. `tiles[g]` is the block one iteration of group g+1 covers (X, Y, C, M, N
extents, elements): tiles[0] are seed 002's tile sizes. Trip counts:
n(d, 0) = tiles[0][d]; n(d, g) = tiles[g][d] / tiles[g−1][d] (each tile divides the next one
out, 1 ≤ g ≤ G−2); the outermost group covers the layer with ⌈E_d / tiles[G−2][d]⌉ blocks of
full size: the last block may overhang the layer edge and is counted at full size, as
tiling.counts ("model") and tiling.dataflow count their last tiles. One group: no tiling.

Buffers. Loops are numbered 0 … L−1 across groups, innermost first. For each array (I, W, O)
and each on-chip memory level (outermost first, as `Hierarchy.on_chip`), a position p: the
loops 0 … p run inside one refill of that level's buffer (−1: one element per iteration), or
None: the level does not hold the array (its next level inwards is fed from the next level
outwards that holds it). Positions never grow inwards. The datapath is the innermost holder
of every array, at position −1: a scalar datapath (None, or no unrolling) is refilled once per
iteration (footprint 1); an unrolled one (`datapath.Datapath`) once per step, its moved counts
`datapath.fetches` over the inner block t0 = tiles[0] (the padded extents with one group), its
footprint and buffer the operands of a full step (Π min(u_d, t0_d) over the array's
dimensions), its refills the steps (cycles).

Counts, for an array X held at position p (seed 002 eqs. 1–3, exact per dimension):
- footprint F_X(p): distinct elements the loops 0 … p touch (elements; halos in padded
  coordinates, blocks at full size);
- refills R(p) = Π_{j>p} n(L_j); moved = F_X(p)·R(p): elements loaded into the holder (I, W)
  or written back out of it (O);
- buffer B_X(p): eq. 2, the footprint of the loops inside the outermost loop at or inside p
  that carries X's reuse (a loop running once carries nothing), as tiling.dataflow. With an
  unrolled datapath, in step time: a step's iterations happen at once, so the lanes of every
  unrolled dimension d (min(u_d, t0_d) indices of its group-0 loop, which then runs ⌈t0_d/u_d⌉
  steps) sit inside every loop and carry nothing themselves. Along d the buffer spans t0_d
  when d's loop is inside, else its lanes; a kernel loop with its output dimension's lanes
  inside carries the window (a step's neighbouring outputs share columns). A buffer inside
  group 0 encloses its step's loops (`accesses.check_steps`), so its refills are whole steps;
- O: a refill reads back every output it touches that was written before (partial sums), so
  partial reads = moved − distinct outputs, final writes = distinct outputs (each output's last
  write-back), partial writes = moved − final writes (eq. 4).
The refetch rate of a level (seed 001 table 2, eq. 1) is what it serves inwards over what it
received: accesses at a level = α·Π RR over the levels outside it, α the array's size.
A grouped layer is `groups` independent convolutions: moved counts ×groups, footprints and
buffers are one group's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import prod

import numpy as np

from workbench.errors import SpecError, WorkbenchError
from workbench.hierarchy.datapath import Datapath, fetches
from workbench.layers import dims
from workbench.layers.dims import KERNEL_DIMS, LAYER_DIMS, Dim
from workbench.layers.spec import ConvLayer, as_grouped

DIMS = LAYER_DIMS            # the dimensions a block cuts (workbench.layers.dims)
KERNEL_LOOPS = KERNEL_DIMS   # group 0's kernel loops
GROUP0 = KERNEL_LOOPS + DIMS
ARRAYS = ("I", "W", "O")
# the dimensions of one datapath step's operands of each array (seed 001 §4: a step reads
# u_N·u_C·u_Y·u_X inputs, u_M·u_C weights and writes u_N·u_M·u_Y·u_X outputs)
OPERANDS = {"I": (Dim.N, Dim.C, Dim.Y, Dim.X), "W": (Dim.M, Dim.C),
            "O": (Dim.N, Dim.M, Dim.Y, Dim.X)}
# an output loop and its kernel loop: I's window (seed 002 table II)
_PARTNER = {Dim.X: Dim.FX, Dim.FX: Dim.X, Dim.Y: Dim.FY, Dim.FY: Dim.Y}


@dataclass(frozen=True, slots=True)
class Blocking:
    """Loop orders per group (innermost group and loop first), block extents per group but the
    outermost (X, Y, C, M, N elements), and per array (I, W, O) a buffering position (loop
    index, −1, or None) per on-chip memory level, outermost level first."""

    orders: tuple[tuple[str, ...], ...]
    tiles: tuple[tuple[int, ...], ...]
    buffers: tuple[tuple[int | None, ...], ...]
    _loops: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        orders = tuple(tuple(o) for o in self.orders)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "_loops", tuple((name, g) for g, order in enumerate(orders)
                                                 for name in order))
        object.__setattr__(self, "tiles", tuple(tuple(int(v) for v in t) for t in self.tiles))
        object.__setattr__(self, "buffers", tuple(tuple(b) for b in self.buffers))
        if not orders or sorted(orders[0]) != sorted(GROUP0):
            raise WorkbenchError(f"blocking: group 0 orders the loops {' '.join(GROUP0)} "
                                 f"(innermost first), got {orders[0] if orders else ()}")
        for g, order in enumerate(orders[1:], start=1):
            if sorted(order) != sorted(DIMS):
                raise WorkbenchError(f"blocking: group {g} orders the loops {' '.join(DIMS)}, "
                                     f"got {' '.join(order)}")
        if len(self.tiles) != len(orders) - 1:
            raise WorkbenchError(f"blocking: {len(orders)} groups need {len(orders) - 1} tile "
                                 f"rows (one per group but the outermost), got {len(self.tiles)}")
        for g, tile in enumerate(self.tiles):
            if len(tile) != len(DIMS) or min(tile) < 1:
                raise WorkbenchError(f"blocking: tiles[{g}] lists {len(DIMS)} positive extents "
                                     f"{' '.join(DIMS)}, got {tile}")
            if g and any(t % s for t, s in zip(tile, self.tiles[g - 1], strict=True)):
                raise WorkbenchError(f"blocking: tiles[{g}] {tile} must be multiples of "
                                     f"tiles[{g - 1}] {self.tiles[g - 1]}")
        self._check_buffers()

    def _check_buffers(self) -> None:
        if len(self.buffers) != len(ARRAYS):
            raise WorkbenchError("blocking: buffers lists positions for I, W and O")
        levels = {len(b) for b in self.buffers}
        if len(levels) != 1 or 0 in levels:
            raise WorkbenchError("blocking: every array needs one position per on-chip level, "
                                 f"got {[len(b) for b in self.buffers]}")
        top = self.n_loops - 1
        for array, positions in zip(ARRAYS, self.buffers, strict=True):
            held = [p for p in positions if p is not None]
            for p in held:
                if isinstance(p, bool) or not isinstance(p, int) or not -1 <= p <= top:
                    raise WorkbenchError(f"blocking: buffer position of {array} must be None "
                                         f"or a loop index -1...{top}, got {p!r}")
            if any(a < b for a, b in zip(held, held[1:], strict=False)):
                raise WorkbenchError(f"blocking: buffer positions of {array} {positions} must "
                                     "not grow inwards (an inner buffer holds part of an outer "
                                     "one)")

    @classmethod
    def of(cls, orders: Sequence[Sequence[str]], tiles: Sequence[Mapping[str, int]],
           buffers: Mapping[str, Sequence[int | None]]) -> Blocking:
        """From tiles as {dim: extent} mappings and buffers as {array: positions}."""
        for name, given, keys in (("buffers", buffers, ARRAYS),
                                  *((f"tiles[{g}]", t, DIMS) for g, t in enumerate(tiles))):
            if set(given) != set(keys):
                raise WorkbenchError(f"blocking: {name} needs exactly the keys {keys}, "
                                     f"got {sorted(given)}")
        return cls(tuple(tuple(o) for o in orders),
                   tuple(tuple(int(t[d]) for d in DIMS) for t in tiles),
                   tuple(tuple(buffers[a]) for a in ARRAYS))

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        """(loop, group) of every loop, innermost first."""
        return self._loops

    @property
    def n_loops(self) -> int:
        return sum(len(o) for o in self.orders)

    @property
    def on_chip_levels(self) -> int:
        return len(self.buffers[0])

    def index(self, loop: str, group: int) -> int:
        """Position of a loop in the nest (innermost 0)."""
        return self.loops.index((loop, group))

    def positions(self, array: str) -> tuple[int | None, ...]:
        return self.buffers[ARRAYS.index(array)]

    def describe(self) -> str:
        """The blocking string, innermost loop first, e.g. 'FX FY X0 … | X1 …'."""
        return " | ".join(" ".join(name if name in KERNEL_LOOPS else f"{name}{g}"
                                   for name in order) for g, order in enumerate(self.orders))


def extents(layer: ConvLayer) -> dict[Dim, int]:
    """Iteration extents of one group of the layer per `Dim` (`layers.dims.extents`, as
    tiling.dataflow.extents; this package does not import workbench.tiling): refuses
    dilation; padding never enters (windows in padded coordinates). A connection table that
    is a grouped convolution counts as one (`as_grouped`), another as the dense layer."""
    layer = as_grouped(layer)
    if layer.Dx != 1 or layer.Dy != 1:
        raise SpecError(f"layer {layer.name!r}: the blocking model does not cover dilation "
                        f"(Dx={layer.Dx}, Dy={layer.Dy}); use the seed 000 schedules")
    return dims.extents(layer)


def trip_counts(layer: ConvLayer, blocking: Blocking) -> tuple[int, ...]:
    """n(L) of every loop, innermost first (see the module docstring)."""
    e = extents(layer)
    tiles = blocking.tiles
    for d, dim in enumerate(DIMS):
        if tiles and tiles[-1][d] > e[dim]:
            raise WorkbenchError(f"blocking: the {dim} tile {tiles[-1][d]} exceeds the layer's "
                                 f"{dim} extent {e[dim]}")
    out = []
    outer = len(blocking.orders) - 1
    for name, g in blocking.loops:
        if name in KERNEL_LOOPS:
            out.append(e[name])
            continue
        d = DIMS.index(name)
        below = tiles[g - 1][d] if g else 1
        out.append(-(-e[name] // below) if g == outer else tiles[g][d] // below)
    return tuple(out)


def padding(layer: ConvLayer, blocking: Blocking) -> dict[str, tuple[int, int]]:
    """{dimension: (extent E, padded extent P)} where the outermost blocks overhang the layer:
    P = ⌈E/t_{L−1}⌉·t_{L−1} > E (one group's iterations; the model prices P, not E)."""
    if not blocking.tiles:
        return {}
    e = extents(layer)
    out = {}
    for d, dim in enumerate(DIMS):
        extent, tile = e[dim], blocking.tiles[-1][d]
        padded = -(-extent // tile) * tile
        if padded != extent:
            out[dim] = (extent, padded)
    return out


Loops = Sequence[tuple[Dim, int]]  # (dimension, group) per loop; a Dim's letter reads alike


def _counts(loops: Loops, n: Sequence, inside: set[int]) -> dict[Dim, int | np.ndarray]:
    """Distinct indices per dimension (and kernel loop) the inside loops touch: the product of
    their trip counts (contiguous from 0: the inside loops of a dimension are always its
    innermost groups). One pass over `inside`; Python ints stay exact ints, arrays stay
    arrays."""
    c: dict[Dim, int | np.ndarray] = dict.fromkeys(GROUP0, 1)
    for j in inside:
        name = loops[j][0]
        c[name] = c[name] * n[j]
    return c


def _window(p: int | np.ndarray, k: int | np.ndarray, stride: int) -> int | np.ndarray:
    """Distinct padded input columns (rows): p contiguous outputs at stride S under a k-wide
    kernel loop: p·k when S ≥ k (no overlap), else (p−1)·S + k."""
    if isinstance(p, np.ndarray) or isinstance(k, np.ndarray):
        return np.where(stride >= k, p * k, (p - 1) * stride + k)
    return p * k if stride >= k else (p - 1) * stride + k


def footprint(layer: ConvLayer, loops: Loops, n: Sequence, inside: set[int],
              array: str) -> int | np.ndarray:
    """F_X: distinct elements of array X the loops in `inside` (indices into `loops`, trip
    counts `n`: ints, or arrays to price many tiles at once) touch (eq. 1, exact)."""
    c = _counts(loops, n, inside)
    x, y, ch, m, im, fx, fy = (c[d] for d in Dim)  # X Y C M N FX FY
    if array == "W":
        return m * ch * fx * fy
    if array == "O":
        return im * m * y * x
    return im * ch * _window(y, fy, layer.Sy) * _window(x, fx, layer.Sx)


def carries(layer: ConvLayer, array: str, loop: tuple[Dim, int], inside_names: set) -> bool:
    """Does `loop` carry reuse of the array (seed 002 table II), with `inside_names` the
    (loop, group) pairs nested in it? The same rules as tiling.dataflow.carries."""
    name, group = loop
    if array == "W":
        return name in (Dim.X, Dim.Y, Dim.N)
    if array == "O":
        return name in (Dim.FX, Dim.FY, Dim.C)
    if name == Dim.M:
        return True
    if name in KERNEL_LOOPS:  # the outer loop of a (kernel, output) pair carries the window
        return (_PARTNER[name], 0) in inside_names
    if name in (Dim.X, Dim.Y) and group == 0:
        return (_PARTNER[name], 0) in inside_names
    if name in (Dim.X, Dim.Y):  # blocks share a halo when the kernel overlaps the stride
        kernel, stride = (layer.Kx, layer.Sx) if name == Dim.X else (layer.Ky, layer.Sy)
        return kernel > stride and (_PARTNER[name], 0) in inside_names
    return False


def buffer_size(layer: ConvLayer, loops: Loops, n: Sequence, position: int,
                array: str, lanes: Mapping[str, int] | None = None) -> np.ndarray:
    """B_X (eq. 2) of a buffer at `position`: elements it must hold. lanes: an unrolled
    datapath's {dimension: u_d}: eq. 2 in step time (module docstring), where a step's lanes
    are held together."""
    lane = _lane_loops(loops, n, lanes)
    ext_loops = list(loops) + [loops[j] for j, _ in lane.values()]
    ext_n = list(n) + [width for _, width in lane.values()]
    steps = list(n)  # group 0's loop of an unrolled dimension runs ⌈t0/u⌉ steps
    for d, (j, _) in lane.items():
        steps[j] = -(-int(n[j]) // lanes[d])
    base = len(loops)
    extra = {d: base + k for k, d in enumerate(lane)}

    def with_lanes(inside: set[int]) -> set[int]:
        """The loops inside plus the lanes of every unrolled dimension whose loop is not."""
        return inside | {extra[d] for d, (j, _) in lane.items() if j not in inside}

    current = footprint(layer, ext_loops, ext_n, with_lanes(set()), array)
    inside: set[int] = set()
    seen = {loops[j] for j, _ in lane.values()}  # (loop, group) pairs inside: lanes always
    for j in range(position + 1):
        # a loop running once carries nothing: with scalar trip counts it is passed over
        vec = isinstance(steps[j], np.ndarray)
        if (vec or steps[j] > 1) and carries(layer, array, loops[j], seen):
            before = footprint(layer, ext_loops, ext_n, with_lanes(inside), array)
            name = loops[j][0]
            if array == "I" and name in KERNEL_LOOPS:
                # a kernel loop outside its output loop: a column (row) comes back after
                # `stride` iterations, so that many iterations' data must stay
                stride = layer.Sx if name == Dim.FX else layer.Sy
                held = list(ext_n)
                held[j] = np.minimum(stride, n[j]) if vec else min(stride, n[j])
                before = footprint(layer, ext_loops, held, with_lanes(inside | {j}), array)
            current = np.where(steps[j] > 1, before, current) if vec else before
        inside.add(j)
        seen.add(loops[j])
    return current


def _lane_loops(loops: Loops, n: Sequence, lanes: Mapping[str, int] | None
                ) -> dict[str, tuple[int, int]]:
    """{dimension: (its group-0 loop, the indices a step spans along it, min(u_d, t0_d))} of
    every dimension unrolled over more than one index of its group-0 loop (trip counts n:
    ints)."""
    out = {}
    for j, (name, group) in enumerate(loops):
        u = lanes.get(name, 1) if lanes and group == 0 else 1
        if u > 1 and int(n[j]) > 1:
            out[name] = (j, min(u, int(n[j])))
    return out


@dataclass(frozen=True, slots=True)
class Transfer:
    """One array across one boundary, from holder `source` (a hierarchy level index, 0 = DRAM)
    to holder `level` (len(levels) = the datapath), whose buffer sits at `position`.
    Elements; `footprint` and `buffer` per refill of one group, the rest per layer. The
    datapath's refills are its steps (cycles), its footprint a full step's operands."""

    array: str
    level: int
    source: int
    position: int
    footprint: int
    buffer: int
    refills: int
    moved: int          # I, W: loaded into `level`; O: written back to `source`
    partial_reads: int  # O: partial sums read back into `level` (0 for I, W)
    final_writes: int   # O: each output's last write-back (0 for I, W)
    distinct: int       # elements of the array the layer touches (its size α)
    macs: int | None = None  # the datapath's transfers: MACs (iterations, full blocks); else None

    @property
    def partial_writes(self) -> int:
        """O: write-backs that are not the last one of their output (0 for I, W)."""
        return self.moved - self.final_writes if self.array == "O" else 0


def holders(blocking: Blocking, array: str, n_levels: int) -> list[tuple[int, int]]:
    """(hierarchy level index, position) of every holder of the array, outermost first,
    ending with the datapath (n_levels, −1)."""
    held = [(k + 1, p) for k, p in enumerate(blocking.positions(array)) if p is not None]
    return held + [(n_levels, -1)]


def padded_extents(layer: ConvLayer, blocking: Blocking,
                   n: Sequence[int] | None = None) -> dict[str, int]:
    """P_d per dimension: the product of its loops' trip counts (elements, full blocks); n:
    the blocking's trip counts when already known."""
    n = trip_counts(layer, blocking) if n is None else n
    out = dict.fromkeys(DIMS, 1)
    for j, (name, _) in enumerate(blocking.loops):
        if name in out:
            out[name] *= n[j]
    return out


def inner_tile(blocking: Blocking, padded: Mapping[str, int]) -> dict[str, int]:
    """t0 per dimension: the innermost block tiles[0], or the padded extents (one group)."""
    if blocking.tiles:
        return dict(zip(DIMS, blocking.tiles[0], strict=True))
    return {d: int(padded[d]) for d in DIMS}


def unrolled(datapath: Datapath | None) -> bool:
    """Does the datapath unroll anything (more than one MAC per step)?"""
    return datapath is not None and datapath.macs_per_step > 1


def step_operands(blocking: Blocking, padded: Mapping[str, int], datapath: Datapath,
                  array: str) -> int:
    """Elements of `array` one full step fetches: Π min(u_d, t0_d) over its dimensions."""
    t0 = inner_tile(blocking, padded)
    return prod(min(datapath.lanes(d), t0[d]) for d in OPERANDS[array])


def transfers(layer: ConvLayer, blocking: Blocking, n_levels: int | None = None,
              datapath: Datapath | None = None) -> tuple[Transfer, ...]:
    """Every (array, boundary) transfer of the blocking, per array outermost boundary first.
    n_levels: levels of the hierarchy (default: the blocking's on-chip levels + DRAM);
    datapath: the MAC array (None: one scalar MAC)."""
    layer = as_grouped(layer)  # a connection table's groups, if it has them (`extents`)
    n_levels = blocking.on_chip_levels + 1 if n_levels is None else n_levels
    if n_levels != blocking.on_chip_levels + 1:
        raise WorkbenchError(f"blocking places buffers in {blocking.on_chip_levels} on-chip "
                             f"levels; the hierarchy has {n_levels - 1}")
    n = trip_counts(layer, blocking)
    loops = blocking.loops
    everything = set(range(len(loops)))
    outputs = int(footprint(layer, loops, n, everything, "O"))
    padded = padded_extents(layer, blocking, n)
    g = layer.groups
    macs = prod(n) * g
    fetched = fetches(layer.Kx * layer.Ky, padded, inner_tile(blocking, padded), datapath) \
        if unrolled(datapath) else None
    lanes = dict(datapath.unroll) if unrolled(datapath) else None
    out = []
    for array in ARRAYS:
        distinct = int(footprint(layer, loops, n, everything, array)) * g
        source = 0
        for level, position in holders(blocking, array, n_levels):
            if level == n_levels and fetched is not None:
                f = buffer = step_operands(blocking, padded, datapath, array)
                refills, moved = int(fetched["steps"]), int(fetched[array])
            else:
                inside = set(range(position + 1))
                f = int(footprint(layer, loops, n, inside, array))
                buffer = int(buffer_size(layer, loops, n, position, array, lanes))
                refills = prod(n[position + 1:])
                moved = f * refills
            final = outputs if array == "O" else 0
            partial_reads = moved - outputs if array == "O" else 0
            out.append(Transfer(array, level, source, position, f, buffer, refills * g,
                                moved * g, partial_reads * g, final * g, distinct,
                                macs if level == n_levels else None))
            source = level
    return tuple(out)
