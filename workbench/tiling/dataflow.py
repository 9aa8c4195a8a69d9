"""General dataflow model of seed 002 (§II–IV): any order of the tiled loops and a buffering
level per array (I, W, O), for application-managed local buffers.

Loops (element loops inside a tile, then controlling loops over tiles): FX, FY (kernel
columns/rows), SX, SY (output columns/rows in a tile: jss, iss), IF (input maps: css), OF
(output maps: mss), N (images: nss); TSX, TSY, TIF, TOF, TN iterate over tiles. An order lists
the element loops innermost first, then the controlling loops innermost first.

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
from workbench.layers.spec import ConvLayer

ELEMENT_LOOPS = ("FX", "FY", "SX", "SY", "IF", "OF", "N")
CONTROL_LOOPS = ("TSX", "TSY", "TIF", "TOF", "TN")
ARRAYS = ("I", "W", "O")
CANONICAL = ("FX", "FY", "SX", "SY", "IF", "OF", "N")   # seed 002 fig. 3, innermost first
HWC = ("FX", "SX", "OF", "FY", "SY", "IF", "N")         # seed 002 fig. 8, innermost first
TILE_KEYS = ("jss", "iss", "css", "mss", "nss")          # SX, SY, IF, OF, N tile sizes
_TILE_OF = {"SX": "jss", "SY": "iss", "IF": "css", "OF": "mss", "N": "nss"}
_CONTROL_OF = {"TSX": "SX", "TSY": "SY", "TIF": "IF", "TOF": "OF", "TN": "N"}


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

    order: tuple[str, ...]
    tiles: dict
    levels: dict

    def __post_init__(self) -> None:
        check_order(self.order)
        for array in ARRAYS:
            level = self.levels.get(array)
            if not isinstance(level, int) or not -1 <= level < len(self.order):
                raise WorkbenchError(f"buffering level of {array} must be an index -1..."
                                     f"{len(self.order) - 1} into the loop order, got {level!r}")


def check_order(order: tuple[str, ...]) -> None:
    if sorted(order[:7]) != sorted(ELEMENT_LOOPS) or sorted(order[7:]) != sorted(CONTROL_LOOPS):
        raise WorkbenchError("a dataflow loop order lists the 7 element loops "
                             f"{ELEMENT_LOOPS} (innermost first), then the 5 controlling loops "
                             f"{CONTROL_LOOPS}; got {order}")


def extents(layer: ConvLayer) -> dict[str, int]:
    """Iteration extents of the layer: E (per axis), M per group, C, R, N.

    Refuses dilated layers (the kernel loops FX, FY step one input column/row here); padding
    never enters this model (windows in padded coordinates), so asymmetric padding is exact."""
    if layer.Dx != 1 or layer.Dy != 1:
        raise SpecError(f"layer {layer.name!r}: the seed 002 dataflow model does not cover "
                        f"dilation (Dx={layer.Dx}, Dy={layer.Dy}); use the seed 000 schedules")
    return {"Ex": layer.Ox, "Ey": layer.Oy, "M": layer.Oc // layer.groups, "C": layer.Kc,
            "Rx": layer.Kx, "Ry": layer.Ky, "N": layer.On}


def trip_counts(layer: ConvLayer, tiles: dict) -> dict[str, np.ndarray]:
    """n(L) of every loop; tile sizes may be arrays (vectorized over tiles)."""
    e = extents(layer)
    t = {k: np.asarray(tiles[k], dtype=np.int64) for k in TILE_KEYS}
    return {"FX": np.int64(e["Rx"]), "FY": np.int64(e["Ry"]), "SX": t["jss"], "SY": t["iss"],
            "IF": t["css"], "OF": t["mss"], "N": t["nss"],
            "TSX": -(-e["Ex"] // t["jss"]), "TSY": -(-e["Ey"] // t["iss"]),
            "TIF": -(-e["C"] // t["css"]), "TOF": -(-e["M"] // t["mss"]),
            "TN": -(-e["N"] // t["nss"])}


def _count(n: dict, inside: set[str], element: str) -> np.ndarray:
    """Distinct indices of one output-side dimension touched by its loops inside the buffer."""
    control = {v: k for k, v in _CONTROL_OF.items()}[element]
    a = n[control] if control in inside else np.int64(1)
    b = n[element] if element in inside else np.int64(1)
    return a * b


def _window(n: dict, inside: set[str], axis: str, stride: int) -> np.ndarray:
    """Distinct input coordinates along x or y: positions p·S + k, p over the output loops
    inside, k over the kernel loop if inside (exact, including gaps and overlaps)."""
    s_loop, t_loop, f_loop = ("SX", "TSX", "FX") if axis == "x" else ("SY", "TSY", "FY")
    k = n[f_loop] if f_loop in inside else np.int64(1)
    if s_loop in inside:  # contiguous output positions: a_count tiles of the full tile size
        p = n[s_loop] * (n[t_loop] if t_loop in inside else 1)
        step = stride
    else:                 # one position per tile: strided by the tile size
        p = n[t_loop] if t_loop in inside else np.int64(1)
        step = stride * n[s_loop]
    return np.where(step >= k, p * k, (p - 1) * step + k)


def footprint(layer: ConvLayer, n: dict, inside: set[str], array: str) -> np.ndarray:
    """F_X: distinct elements of array X touched by the loops in `inside`."""
    images = _count(n, inside, "N")
    if array == "W":
        kx = n["FX"] if "FX" in inside else 1
        ky = n["FY"] if "FY" in inside else 1
        return _count(n, inside, "OF") * _count(n, inside, "IF") * kx * ky
    if array == "O":
        return images * _count(n, inside, "OF") * _count(n, inside, "SY") * \
            _count(n, inside, "SX")
    return images * _count(n, inside, "IF") * _window(n, inside, "y", layer.Sy) * \
        _window(n, inside, "x", layer.Sx)


def carries(layer: ConvLayer, array: str, loop: str, inside: set[str]) -> bool:
    """Does `loop` (with `inside` the loops nested in it) carry reuse of the array?"""
    if array == "W":
        return loop in ("SX", "SY", "TSX", "TSY", "N", "TN")
    if array == "O":
        return loop in ("FX", "FY", "IF", "TIF")
    if loop in ("OF", "TOF"):
        return True
    pairs = {"SX": "FX", "FX": "SX", "SY": "FY", "FY": "SY"}
    if loop in pairs:  # the outer loop of a (kernel, output) pair carries the window reuse
        return pairs[loop] in inside
    if loop in ("TSX", "TSY"):  # tiles share a halo when the kernel overlaps the stride
        kernel, stride = (layer.Kx, layer.Sx) if loop == "TSX" else (layer.Ky, layer.Sy)
        return kernel > stride and ("FX" if loop == "TSX" else "FY") in inside
    return False


def array_options(layer: ConvLayer, order: tuple[str, ...], tiles: dict,
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
    inside: set[str] = set()
    current_buffer = np.ones(shape, dtype=np.int64)
    for index, loop in enumerate(order):
        before = footprint(layer, n, inside, array)
        if carries(layer, array, loop, inside):  # a loop that runs once carries nothing
            if array == "I" and loop in ("FX", "FY"):
                # a kernel loop outside its output loop: a column (row) comes back after
                # `stride` iterations, so that many iterations' data must stay
                stride = layer.Sx if loop == "FX" else layer.Sy
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
    return np.prod([n[c] * n[_CONTROL_OF[c]] for c in ("TSX", "TSY", "TOF", "TN")], axis=0)


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


def control_orders(batch_outermost: bool = True) -> list[tuple[str, ...]]:
    """Controlling-loop orders searched: all 24 orders of TSX, TSY, TIF, TOF with TN outside."""
    inner = ("TSX", "TSY", "TIF", "TOF")
    if batch_outermost:
        return [(*p, "TN") for p in permutations(inner)]
    return list(permutations(CONTROL_LOOPS))


PEEMEN_O = ("eqs", "eq4")


def peemen(layer: ConvLayer, tiles: dict, innermost: str, precision: Precision = Precision(),
           o_traffic: str = "eqs") -> dict[str, np.ndarray]:
    """Peemen's model (seed 002 appendix A, eqs. 5–10) for an innermost controlling loop
    (TOF, TIF, TSY or TSX). Buffer: eq. 5 (bytes). O traffic:
    - "eqs": as printed, B(O) read and written per tile (2·B(O); 1·B(O) with TIF innermost),
      all at partial-sum precision;
    - "eq4": priced as the general model prices O (eq. 4): each output written once at output
      precision, plus a write and a read at partial-sum precision for every further input-map
      tile (none with TIF innermost). Isolates the buffer and reuse differences."""
    if o_traffic not in PEEMEN_O:
        raise WorkbenchError(f"Peemen O traffic must be one of {PEEMEN_O}, got {o_traffic!r}")
    e = extents(layer)
    t = {k: np.asarray(tiles[k], dtype=np.int64) for k in TILE_KEYS}
    n = trip_counts(layer, tiles)
    tx, ty = (t["jss"] - 1) * layer.Sx + layer.Kx, (t["iss"] - 1) * layer.Sy + layer.Ky
    hx, hy = (e["Ex"] - 1) * layer.Sx + layer.Kx, (e["Ey"] - 1) * layer.Sy + layer.Ky
    r2, imgs = layer.Kx * layer.Ky, t["nss"]
    b_in, b_w, b_out = t["css"] * ty * tx * imgs, t["mss"] * t["css"] * r2, \
        t["mss"] * t["iss"] * t["jss"] * imgs
    terms = {  # (tile count, B(I), B(W), B(O) incl. read + write) per eqs. 7-10
        "TOF": (n["TIF"] * n["TSY"] * n["TSX"], b_in, e["M"] * t["css"] * r2,
                2 * e["M"] * t["iss"] * t["jss"] * imgs),
        "TIF": (n["TOF"] * n["TSY"] * n["TSX"], e["C"] * ty * tx * imgs,
                t["mss"] * e["C"] * r2, t["mss"] * t["iss"] * t["jss"] * imgs),
        "TSY": (n["TOF"] * n["TIF"] * n["TSX"], t["css"] * hy * tx * imgs, b_w,
                2 * t["mss"] * e["Ey"] * t["jss"] * imgs),
        "TSX": (n["TOF"] * n["TIF"] * n["TSY"], t["css"] * ty * hx * imgs, b_w,
                2 * t["mss"] * t["iss"] * e["Ex"] * imgs),
    }
    if innermost not in terms:
        raise WorkbenchError(f"Peemen's innermost controlling loop must be one of "
                             f"{tuple(terms)}, got {innermost!r}")
    count, i_, w_, o_ = terms[innermost]
    count = count * n["TN"] * layer.groups
    if o_traffic == "eqs":
        traffic = count * (precision.inputs * i_ + precision.weights * w_
                           + precision.partial_sums * o_)
    else:
        outputs = final_outputs(n) * layer.groups
        again = 0 if innermost == "TIF" else n["TIF"] - 1
        traffic = count * (precision.inputs * i_ + precision.weights * w_) + outputs * (
            precision.outputs + 2 * precision.partial_sums * again)
    buffer = precision.inputs * b_in + precision.weights * b_w + precision.partial_sums * b_out
    return {"traffic_bytes": traffic, "buffer_bytes": buffer}


def cache_model(layer: ConvLayer, tiles: dict,
                precision: Precision = Precision()) -> dict[str, np.ndarray]:
    """Cache model (seed 002 eq. 6): every tile loads its whole working set, no reuse between
    tiles; buffer = the working set (eq. 5)."""
    n = trip_counts(layer, tiles)
    t = {k: np.asarray(tiles[k], dtype=np.int64) for k in TILE_KEYS}
    tx, ty = (t["jss"] - 1) * layer.Sx + layer.Kx, (t["iss"] - 1) * layer.Sy + layer.Ky
    b_in = t["css"] * ty * tx * t["nss"]
    b_w = t["mss"] * t["css"] * layer.Kx * layer.Ky
    b_out = t["mss"] * t["iss"] * t["jss"] * t["nss"]
    tiles_n = n["TOF"] * n["TIF"] * n["TSY"] * n["TSX"] * n["TN"] * layer.groups
    traffic = tiles_n * (precision.inputs * b_in + precision.weights * b_w
                         + precision.partial_sums * 2 * b_out)
    buffer = precision.inputs * b_in + precision.weights * b_w + precision.partial_sums * b_out
    return {"traffic_bytes": traffic, "buffer_bytes": buffer}
