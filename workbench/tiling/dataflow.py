"""General dataflow model of seed 002 (§II–IV): any order of the tiled loops and a buffering
level per array (I, W, O), for application-managed local buffers.

Dimensions are `layers.dims.Dim` (X, Y output columns/rows, C input maps, M output maps,
N images, FX, FY kernel columns/rows); tile sizes are keyed by Dim. Loops are `Loop(dim,
level)`: level 0 the element loops inside a tile (FX, FY and one per dimension), level 1 the
controlling loops over tiles (one per dimension but FX, FY). An order lists the element loops
innermost first, then the controlling loops innermost first. The seed's names (SX, SY, IF,
OF, N, TSX, …; tiles jss, iss, css, mss, nss) are display labels (`dims.SEED002_LOOP`,
`dims.SEED002_TILE`); a schedule given in them is read into Dim.

For an array X buffered at level b (the loops L_0 … L_b are inside its buffer):
- footprint F_X(b): distinct elements of X the loops L_0 … L_b touch (exact, per dimension;
  tiles counted at full size, halos with padding, as tiling.counts' "model" counts);
- traffic T_X = P_X · F_X(b) · Π_{j>b} n(L_j) (each refill loads its footprint once);
- buffer B_X = F_X of the loops inside the outermost loop at or inside b that carries X's
  reuse (eqs. 1–2: a loop that does not carry X can stream through one buffer); when that loop
  is a kernel loop outside its output loop, the data of `stride` of its iterations (the reuse
  distance) stay.
O's refills write their footprint back; all but the final write of each output, and the
matching reads, are partial sums at accumulator precision (eq. 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from workbench.errors import SpecError, WorkbenchError
from workbench.layers import dims
from workbench.layers.dims import KERNEL_DIMS, LAYER_DIMS, SEED002_LOOP, Dim, Loop
from workbench.layers.spec import ConvLayer

X, Y, C, M, N, FX, FY = Dim.X, Dim.Y, Dim.C, Dim.M, Dim.N, Dim.FX, Dim.FY
ELEMENT_LOOPS = tuple(Loop(d, 0) for d in (FX, FY, X, Y, C, M, N))
CONTROL_LOOPS = tuple(Loop(d, 1) for d in LAYER_DIMS)
ARRAYS = ("I", "W", "O")
CANONICAL = ELEMENT_LOOPS                                    # seed 002 fig. 3, innermost first
HWC = tuple(Loop(d, 0) for d in (FX, X, M, FY, Y, C, N))     # seed 002 fig. 8, innermost first


@dataclass(frozen=True, slots=True)
class Precision:
    """Bytes per element of inputs, weights, final outputs and partial sums."""

    inputs: float = 1
    weights: float = 1
    outputs: float = 1
    partial_sums: float = 4


@dataclass(frozen=True)
class DataflowSchedule:
    """Loop order (innermost first, 12 loops), tile sizes and a buffering level per array
    (an index into the order; −1: not buffered)."""

    order: tuple[Loop, ...]
    tiles: dict
    levels: dict

    def __post_init__(self) -> None:
        order = tuple(dims.read_loop(loop) for loop in self.order)
        check_order(order)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "tiles", dims.read_tiles(self.tiles))
        for array in ARRAYS:
            level = self.levels.get(array)
            if not isinstance(level, int) or not -1 <= level < len(self.order):
                raise WorkbenchError(f"buffering level of {array} must be an index -1..."
                                     f"{len(self.order) - 1} into the loop order, got {level!r}")


def check_order(order: tuple[Loop, ...]) -> None:
    if sorted(order[:7]) != sorted(ELEMENT_LOOPS) or sorted(order[7:]) != sorted(CONTROL_LOOPS):
        raise WorkbenchError("a dataflow loop order lists the 7 element loops "
                             f"{labels(ELEMENT_LOOPS)} (innermost first), then the 5 "
                             f"controlling loops {labels(CONTROL_LOOPS)}; got {labels(order)}")


def labels(order: tuple[Loop, ...]) -> str:
    """An order in the seed's loop names, e.g. 'FX FY SX SY IF OF N' (display only)."""
    return " ".join(SEED002_LOOP.get(loop, str(loop)) for loop in order)


def extents(layer: ConvLayer) -> dict[Dim, int]:
    """Iteration extents of the layer per Dim: output columns and rows, input maps, output
    maps per group, images, kernel columns and rows (`layers.dims.extents`).

    Refuses dilated layers (the kernel loops FX, FY step one input column/row here); padding
    never enters this model (windows in padded coordinates), so asymmetric padding is exact."""
    if layer.Dx != 1 or layer.Dy != 1:
        raise SpecError(f"layer {layer.name!r}: the seed 002 dataflow model does not cover "
                        f"dilation (Dx={layer.Dx}, Dy={layer.Dy}); use the seed 000 schedules")
    return dims.extents(layer)


def trip_counts(layer: ConvLayer, tiles: dict) -> dict[Loop, np.ndarray]:
    """n(L) of every loop; tile sizes (keyed by Dim) may be arrays (vectorized over tiles)."""
    e = extents(layer)
    out = {Loop(d, 0): np.int64(e[d]) for d in KERNEL_DIMS}
    for d in LAYER_DIMS:
        t = np.asarray(tiles[d], dtype=np.int64)
        out[Loop(d, 0)], out[Loop(d, 1)] = t, -(-e[d] // t)
    return out


def _count(n: dict, inside: set[Loop], dim: Dim) -> np.ndarray:
    """Distinct indices of one output-side dimension touched by its loops inside the buffer."""
    a = n[Loop(dim, 1)] if Loop(dim, 1) in inside else np.int64(1)
    b = n[Loop(dim, 0)] if Loop(dim, 0) in inside else np.int64(1)
    return a * b


def _window(n: dict, inside: set[Loop], axis: Dim, stride: int) -> np.ndarray:
    """Distinct input coordinates along X or Y: positions p·S + k, p over the output loops
    inside, k over the kernel loop if inside (exact, including gaps and overlaps)."""
    s_loop, t_loop = Loop(axis, 0), Loop(axis, 1)
    f_loop = Loop(FX if axis == X else FY, 0)
    k = n[f_loop] if f_loop in inside else np.int64(1)
    if s_loop in inside:  # contiguous output positions: a_count tiles of the full tile size
        p = n[s_loop] * (n[t_loop] if t_loop in inside else 1)
        step = stride
    else:                 # one position per tile: strided by the tile size
        p = n[t_loop] if t_loop in inside else np.int64(1)
        step = stride * n[s_loop]
    return np.where(step >= k, p * k, (p - 1) * step + k)


def footprint(layer: ConvLayer, n: dict, inside: set[Loop], array: str) -> np.ndarray:
    """F_X: distinct elements of array X touched by the loops in `inside`."""
    images = _count(n, inside, N)
    if array == "W":
        kx = n[Loop(FX, 0)] if Loop(FX, 0) in inside else 1
        ky = n[Loop(FY, 0)] if Loop(FY, 0) in inside else 1
        return _count(n, inside, M) * _count(n, inside, C) * kx * ky
    if array == "O":
        return images * _count(n, inside, M) * _count(n, inside, Y) * _count(n, inside, X)
    return images * _count(n, inside, C) * _window(n, inside, Y, layer.Sy) * \
        _window(n, inside, X, layer.Sx)


_PAIR = {Loop(X, 0): Loop(FX, 0), Loop(FX, 0): Loop(X, 0), Loop(Y, 0): Loop(FY, 0),
         Loop(FY, 0): Loop(Y, 0)}


def carries(layer: ConvLayer, array: str, loop: Loop, inside: set[Loop]) -> bool:
    """Does `loop` (with `inside` the loops nested in it) carry reuse of the array?"""
    if array == "W":
        return loop.dim in (X, Y, N)
    if array == "O":
        return loop.dim in (FX, FY, C)
    if loop.dim == M:
        return True
    if loop in _PAIR:  # the outer loop of a (kernel, output) pair carries the window reuse
        return _PAIR[loop] in inside
    if loop in (Loop(X, 1), Loop(Y, 1)):  # tiles share a halo when the kernel overlaps the stride
        kernel, stride = (layer.Kx, layer.Sx) if loop.dim == X else (layer.Ky, layer.Sy)
        return kernel > stride and Loop(FX if loop.dim == X else FY, 0) in inside
    return False


def array_options(layer: ConvLayer, order: tuple[Loop, ...], tiles: dict,
                  array: str) -> tuple[np.ndarray, np.ndarray]:
    """(B, F·refills) for every buffering level −1 … 11: arrays of shape (levels, tiles)."""
    n = trip_counts(layer, tiles)
    shape = np.broadcast(*[np.asarray(v) for v in n.values()]).shape
    levels = len(order) + 1
    buf = np.ones((levels,) + shape, dtype=np.int64)
    traffic = np.empty((levels,) + shape, dtype=np.int64)
    refills = np.ones(shape, dtype=np.int64)
    for loop in order:
        refills = refills * n[loop]
    traffic[0] = refills  # level −1: every access goes to memory
    inside: set[Loop] = set()
    current_buffer = np.ones(shape, dtype=np.int64)
    for index, loop in enumerate(order):
        before = footprint(layer, n, inside, array)
        if carries(layer, array, loop, inside):  # a loop that runs once carries nothing
            if array == "I" and loop.dim in KERNEL_DIMS:
                # a kernel loop outside its output loop: a column (row) comes back after
                # `stride` iterations, so that many iterations' data must stay
                stride = layer.Sx if loop.dim == FX else layer.Sy
                held = dict(n)
                held[loop] = np.minimum(np.int64(stride), n[loop])
                before = footprint(layer, held, inside | {loop}, array)
            current_buffer = np.where(np.asarray(n[loop]) > 1, before, current_buffer)
        inside.add(loop)
        refills = refills // n[loop]
        buf[index + 1] = current_buffer
        traffic[index + 1] = footprint(layer, n, inside, array) * refills
    return buf, traffic


def final_outputs(n: dict) -> np.ndarray:
    """Output elements written once at the end (full tiles): Π over x, y, m, n of n(T)·n(L)."""
    return np.prod([n[Loop(d, 1)] * n[Loop(d, 0)] for d in (X, Y, M, N)], axis=0)


def priced(array: str, moved: np.ndarray, final: np.ndarray,
           precision: Precision) -> tuple[np.ndarray, float]:
    """(traffic bytes, bytes per buffered element) of one array: I and W at their widths; O's
    final writes at output width, its other writes and the matching reads as partial sums."""
    if array == "I":
        return precision.inputs * moved, precision.inputs
    if array == "W":
        return precision.weights * moved, precision.weights
    return (precision.outputs * final + 2 * precision.partial_sums * (moved - final),
            precision.partial_sums)


def evaluate(layer: ConvLayer, schedule: DataflowSchedule,
             precision: Precision = Precision()) -> dict[str, float]:
    """Traffic (bytes) and buffer sizes (elements, bytes) of one dataflow schedule."""
    out: dict[str, float] = {}
    n = trip_counts(layer, schedule.tiles)
    for array in ARRAYS:
        buf, traffic = array_options(layer, schedule.order, schedule.tiles, array)
        level = schedule.levels[array] + 1
        out[f"B_{array}"] = int(buf[level])
        out[f"F_{array}"] = int(traffic[level])
    final = int(final_outputs(n))
    partial = out["F_O"] - final
    out["T_I"] = precision.inputs * out["F_I"] * layer.groups
    out["T_W"] = precision.weights * out["F_W"] * layer.groups
    out["T_O_final"] = precision.outputs * final * layer.groups
    out["T_O_acc"] = precision.partial_sums * 2 * partial * layer.groups
    out["traffic_bytes"] = out["T_I"] + out["T_W"] + out["T_O_final"] + out["T_O_acc"]
    out["buffer_bytes"] = (precision.inputs * out["B_I"] + precision.weights * out["B_W"]
                           + precision.partial_sums * out["B_O"])
    return out


def control_orders(batch_outermost: bool = True) -> list[tuple[Loop, ...]]:
    """Controlling-loop orders searched: all 24 orders of TSX, TSY, TIF, TOF with TN outside."""
    inner = tuple(Loop(d, 1) for d in (X, Y, C, M))
    if batch_outermost:
        return [(*p, Loop(N, 1)) for p in permutations(inner)]
    return list(permutations(CONTROL_LOOPS))


PEEMEN_O = ("eqs", "eq4")


def peemen(layer: ConvLayer, tiles: dict, innermost: Dim, precision: Precision = Precision(),
           o_traffic: str = "eqs") -> dict[str, np.ndarray]:
    """Peemen's model (seed 002 appendix A, eqs. 5–10) for an innermost controlling loop, the
    tile loop of `innermost` (M, C, Y or X: TOF, TIF, TSY or TSX). Buffer: eq. 5 (bytes). O traffic:
    - "eqs": as printed, B(O) read and written per tile (2·B(O); 1·B(O) with TIF innermost),
      all at partial-sum precision;
    - "eq4": priced as the general model prices O (eq. 4): each output written once at output
      precision, plus a write and a read at partial-sum precision for every further input-map
      tile (none with TIF innermost). Isolates the buffer and reuse differences."""
    if o_traffic not in PEEMEN_O:
        raise WorkbenchError(f"Peemen O traffic must be one of {PEEMEN_O}, got {o_traffic!r}")
    e = extents(layer)
    t = {d: np.asarray(tiles[d], dtype=np.int64) for d in LAYER_DIMS}
    n = trip_counts(layer, tiles)
    tn = {d: n[Loop(d, 1)] for d in LAYER_DIMS}  # tiles per dimension
    tx, ty = (t[X] - 1) * layer.Sx + layer.Kx, (t[Y] - 1) * layer.Sy + layer.Ky
    hx, hy = (e[X] - 1) * layer.Sx + layer.Kx, (e[Y] - 1) * layer.Sy + layer.Ky
    r2, imgs = layer.Kx * layer.Ky, t[N]
    b_in, b_w, b_out = t[C] * ty * tx * imgs, t[M] * t[C] * r2, t[M] * t[Y] * t[X] * imgs
    terms = {  # (tile count, B(I), B(W), B(O) incl. read + write) per eqs. 7-10
        M: (tn[C] * tn[Y] * tn[X], b_in, e[M] * t[C] * r2, 2 * e[M] * t[Y] * t[X] * imgs),
        C: (tn[M] * tn[Y] * tn[X], e[C] * ty * tx * imgs, t[M] * e[C] * r2,
            t[M] * t[Y] * t[X] * imgs),
        Y: (tn[M] * tn[C] * tn[X], t[C] * hy * tx * imgs, b_w, 2 * t[M] * e[Y] * t[X] * imgs),
        X: (tn[M] * tn[C] * tn[Y], t[C] * ty * hx * imgs, b_w, 2 * t[M] * t[Y] * e[X] * imgs),
    }
    if innermost not in terms:
        raise WorkbenchError("Peemen's innermost controlling loop must be the tile loop of "
                             f"one of {' '.join(terms)}, got {innermost!r}")
    count, i_, w_, o_ = terms[innermost]
    count = count * tn[N] * layer.groups
    if o_traffic == "eqs":
        traffic = count * (precision.inputs * i_ + precision.weights * w_
                           + precision.partial_sums * o_)
    else:
        outputs = final_outputs(n) * layer.groups
        again = 0 if innermost == C else tn[C] - 1
        traffic = count * (precision.inputs * i_ + precision.weights * w_) + outputs * (
            precision.outputs + 2 * precision.partial_sums * again)
    buffer = precision.inputs * b_in + precision.weights * b_w + precision.partial_sums * b_out
    return {"traffic_bytes": traffic, "buffer_bytes": buffer}


def cache_model(layer: ConvLayer, tiles: dict,
                precision: Precision = Precision()) -> dict[str, np.ndarray]:
    """Cache model (seed 002 eq. 6): every tile loads its whole working set, no reuse between
    tiles; buffer = the working set (eq. 5)."""
    n = trip_counts(layer, tiles)
    t = {d: np.asarray(tiles[d], dtype=np.int64) for d in LAYER_DIMS}
    tx, ty = (t[X] - 1) * layer.Sx + layer.Kx, (t[Y] - 1) * layer.Sy + layer.Ky
    b_in = t[C] * ty * tx * t[N]
    b_w = t[M] * t[C] * layer.Kx * layer.Ky
    b_out = t[M] * t[Y] * t[X] * t[N]
    tiles_n = n[Loop(M, 1)] * n[Loop(C, 1)] * n[Loop(Y, 1)] * n[Loop(X, 1)] * n[Loop(N, 1)] \
        * layer.groups
    traffic = tiles_n * (precision.inputs * b_in + precision.weights * b_w
                         + precision.partial_sums * 2 * b_out)
    buffer = precision.inputs * b_in + precision.weights * b_w + precision.partial_sums * b_out
    return {"traffic_bytes": traffic, "buffer_bytes": buffer}
