"""Search of the seed 002 dataflow space and of its baselines, exact over what it enumerates.

Space:
- element orders: canonical (fig. 3) and HWC (fig. 8) by default, or `PAPER_ORDERS`, the 180
  orders of the six loops FX, FY, SX, SY, IF, OF that the paper keeps (kernel and image loops
  each in one relative order, FX inside FY and SX inside SY; N outermost);
- the 24 orders of the controlling loops TSX, TSY, TIF, TOF (TN outermost);
- tile sizes per dimension: `tiling.tile_candidates` ("all": exact, traffic and buffers grow
  with a tile size at a fixed tile count) or powers of two and the full extent ("pow2", the
  paper's selective enumeration);
- every buffering level of each array. Levels that only add a loop not carrying the array's
  reuse change neither buffer nor traffic, so only the levels at carrying loops (and −1) are
  compared.
Footprints depend on an order only through the set of loops inside a level; `LayerCosts`
computes each set once per layer. An order is skipped when a lower bound (each array alone
within the whole memory) cannot beat the best schedule found so far at any memory size;
skipping is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import permutations

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers import dims
from workbench.layers.dims import KERNEL_DIMS, LAYER_DIMS, SEED002_LOOP, Dim, Loop
from workbench.layers.spec import ConvLayer
from workbench.tiling.dataflow import (
    ARRAYS,
    CANONICAL,
    HWC,
    Precision,
    array_options,
    cache_model,
    carries,
    control_orders,
    extents,
    final_outputs,
    footprint,
    peemen,
    priced,
    trip_counts,
)
from workbench.tiling.model import tile_candidates

MODELS = ("dataflow", "peemen", "cache")
TILE_SETS = ("all", "pow2")
DEFAULT_PRECISION = Precision()


def paper_orders() -> list[tuple[Loop, ...]]:
    """The 180 element orders of seed 002 §IV-C: 6!/(2·2) orders of FX, FY, SX, SY, IF, OF
    with FX inside FY and SX inside SY, then N (innermost first); canonical and HWC first."""
    fx, fy, x, y = (Loop(d, 0) for d in (Dim.FX, Dim.FY, Dim.X, Dim.Y))
    six = (fx, fy, x, y, Loop(Dim.C, 0), Loop(Dim.M, 0))
    rest = [p + (Loop(Dim.N, 0),) for p in permutations(six)
            if p.index(fx) < p.index(fy) and p.index(x) < p.index(y)]
    # canonical and HWC first: good schedules early make the lower bound skip more
    return [CANONICAL, HWC] + [o for o in rest if o not in (CANONICAL, HWC)]


PAPER_ORDERS = paper_orders()
DEFAULT_ORDERS = (CANONICAL, HWC)


def _sizes(extent: int, tile_set: str) -> np.ndarray:
    if tile_set == "all":
        return tile_candidates(extent)
    if tile_set == "pow2":
        return np.unique([min(1 << k, extent) for k in range(int(extent).bit_length() + 1)])
    raise WorkbenchError(f"unknown tile set {tile_set!r}; valid: " + ", ".join(TILE_SETS))


def candidate_tiles(layer: ConvLayer, tile_set: str = "all") -> dict[Dim, np.ndarray]:
    """Flattened grid of tile sizes per dimension X, Y, C, M, N (seed 002's jss … nss)."""
    e = dims.extents(layer)
    grid = np.meshgrid(*(_sizes(e[d], tile_set) for d in LAYER_DIMS), indexing="ij")
    return {d: g.reshape(-1) for d, g in zip(LAYER_DIMS, grid, strict=True)}


class LayerCosts:
    """Footprints and refill counts of one layer over a tile grid, cached by the set of loops
    inside a level; `options` gives an order's priced buffering levels at the levels that
    can matter (the tests compare them with `array_options`)."""

    def __init__(self, layer: ConvLayer, tiles: dict, precision: Precision) -> None:
        self.layer, self.precision = layer, precision
        self.size = len(tiles[Dim.X])
        self.n = {k: np.broadcast_to(np.asarray(v, dtype=np.int64), (self.size,))
                  for k, v in trip_counts(layer, tiles).items()}
        self.total = np.prod(list(self.n.values()), axis=0)
        self.final = final_outputs(self.n)
        self._cache: dict = {}

    def footprint(self, array: str, inside: frozenset, held: Loop | None = None) -> np.ndarray:
        """F_X of the loops `inside`; held: a kernel loop kept for `stride` iterations only."""
        key = (array, inside, held)
        if key not in self._cache:
            n = self.n
            if held is not None:
                stride = self.layer.Sx if held.dim == Dim.FX else self.layer.Sy
                n = {**n, held: np.minimum(np.int64(stride), n[held])}
                inside = inside | {held}
            self._cache[key] = np.broadcast_to(footprint(self.layer, n, set(inside), array),
                                               (self.size,))
        return self._cache[key]

    def moved(self, array: str, inside: frozenset) -> np.ndarray:
        """Elements moved when the buffer holds the loops `inside`: F_X · Π outside n (eq. 3)."""
        key = ("moved", array, inside)
        if key not in self._cache:
            inner = np.prod([self.n[loop] for loop in inside], axis=0) if inside else 1
            self._cache[key] = self.footprint(array, inside) * (self.total // inner)
        return self._cache[key]

    def options(self, order: tuple[Loop, ...], array: str) -> tuple[list, np.ndarray,
                                                                     np.ndarray]:
        """(levels, buffer bytes, traffic bytes) at the useful levels; arrays (levels, tiles)."""
        ones = np.ones(self.size, dtype=np.int64)
        levels, bufs, moved = [-1], [ones], [self.total]
        inside: set[Loop] = set()
        current = ones
        for index, loop in enumerate(order):
            if carries(self.layer, array, loop, inside):
                held = loop if array == "I" and loop.dim in KERNEL_DIMS else None
                before = self.footprint(array, frozenset(inside), held)
                current = np.where(self.n[loop] > 1, before, current)
                inside.add(loop)
                levels.append(index)
                bufs.append(current)
                moved.append(self.moved(array, frozenset(inside)))
            else:
                inside.add(loop)
        if levels[-1] != len(order) - 1:
            levels.append(len(order) - 1)
            bufs.append(current)
            moved.append(self.moved(array, frozenset(inside)))
        traffic, width = priced(array, np.stack(moved), self.final, self.precision)
        return levels, width * np.stack(bufs).astype(float), \
            self.layer.groups * np.asarray(traffic, dtype=float)


def _fits_min(buffer: np.ndarray, traffic: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """(caps, tiles): per capacity and tile, the least traffic over the levels whose buffer
    fits. buffer, traffic: (levels, tiles)."""
    return np.stack([np.where(buffer <= cap, traffic, np.inf).min(axis=0) for cap in caps])


def _best_order(costs: LayerCosts, order: tuple[Loop, ...], caps: np.ndarray,
                best: np.ndarray) -> tuple[np.ndarray, list]:
    """Least traffic per capacity for one loop order, with (tile index, levels); inf where the
    order cannot beat `best`. Per capacity, only tiles whose lower bound (each array's least
    traffic fitting the whole memory alone) is below `best` are combined."""
    opts = [costs.options(order, array) for array in ARRAYS]
    bound = sum(_fits_min(b, t, caps) for _, b, t in opts)  # (caps, tiles)
    (li, bi, ti), (lw, bw, tw), (lo, bo, to) = opts
    value, where = np.full(len(caps), np.inf), [None] * len(caps)
    for c, cap in enumerate(caps):
        alive = np.flatnonzero(bound[c] < best[c])
        if not len(alive):
            continue
        total_b = (bi[:, None, None, alive] + bw[None, :, None, alive]
                   + bo[None, None, :, alive]).reshape(-1, len(alive))
        total_t = (ti[:, None, None, alive] + tw[None, :, None, alive]
                   + to[None, None, :, alive]).reshape(-1, len(alive))
        masked = np.where(total_b <= cap, total_t, np.inf)
        flat = int(np.argmin(masked))
        if np.isfinite(masked.flat[flat]):
            combo, tile = divmod(flat, len(alive))
            a, b, o = np.unravel_index(combo, (len(li), len(lw), len(lo)))
            value[c] = masked.flat[flat]
            where[c] = (int(alive[tile]), {"I": li[a], "W": lw[b], "O": lo[o]})
    return value, where


def search(layer: ConvLayer, memory_bytes: Iterable[float], model: str = "dataflow",
           precision: Precision = DEFAULT_PRECISION,
           element_orders: Sequence[tuple[str, ...]] = DEFAULT_ORDERS,
           tile_set: str = "all", peemen_o: str = "eqs") -> pd.DataFrame:
    """Least off-accelerator traffic (bytes) per local-memory size under one model, with the
    schedule that reaches it. Sizes no schedule fits get traffic NaN.

    element_orders: the element-loop orders searched with every controlling-loop order
    (`PAPER_ORDERS` for the paper's 180); tile_set: "all" or "pow2"; peemen_o: how Peemen's
    model prices O ("eqs" as printed, "eq4" as the general model, see `dataflow.peemen`)."""
    if model not in MODELS:
        raise WorkbenchError(f"unknown traffic model {model!r}; valid: " + ", ".join(MODELS))
    caps = np.asarray(sorted(memory_bytes), dtype=float)
    tiles = candidate_tiles(layer, tile_set)
    rows = [{"layer": layer.name, "model": model, "memory_bytes": cap, "traffic_bytes": np.inf,
             "schedule": None} for cap in caps]

    def offer(traffic: np.ndarray, buffer: np.ndarray, label) -> None:
        for row in rows:
            masked = np.where(buffer <= row["memory_bytes"], traffic, np.inf)
            idx = int(np.argmin(masked))
            if masked[idx] < row["traffic_bytes"]:
                row["traffic_bytes"] = float(masked[idx])
                row["schedule"] = (label, {k: int(v[idx]) for k, v in tiles.items()})

    if model == "cache":
        r = cache_model(layer, tiles, precision)
        offer(r["traffic_bytes"], r["buffer_bytes"], "cache")
    elif model == "peemen":
        for innermost in (Dim.M, Dim.C, Dim.Y, Dim.X):
            r = peemen(layer, tiles, innermost, precision, peemen_o)
            offer(r["traffic_bytes"], r["buffer_bytes"],
                  f"peemen innermost {SEED002_LOOP[Loop(innermost, 1)]}")
    else:
        costs = LayerCosts(layer, tiles, precision)
        best = np.full(len(caps), np.inf)
        for element_order in element_orders:
            for control in control_orders():
                order = tuple(element_order) + control
                found = _best_order(costs, order, caps, best)
                for c, (value, spot) in enumerate(zip(*found, strict=True)):
                    if value < best[c]:
                        best[c] = value
                        rows[c]["traffic_bytes"] = float(value)
                        rows[c]["schedule"] = ((order, spot[1]), {k: int(v[spot[0]])
                                                                  for k, v in tiles.items()})
    frame = pd.DataFrame(rows)
    frame["traffic_bytes"] = frame["traffic_bytes"].replace(np.inf, np.nan)
    return frame


def compulsory_bytes(layer: ConvLayer, precision: Precision = DEFAULT_PRECISION) -> float:
    """Every input, weight and output element moved once (the 'essential' traffic), counting
    the input elements the convolution touches (padding included, as the model counts)."""
    from workbench.tiling.dataflow import ELEMENT_LOOPS

    if layer.Dx != 1 or layer.Dy != 1:  # dilated: count the touched coordinates directly
        def touched(out: int, stride: int, taps: int, dilation: int) -> int:
            return len(np.unique(np.add.outer(np.arange(out) * stride,
                                              np.arange(taps) * dilation)))

        per_group_in = layer.On * layer.Kc * touched(layer.Ox, layer.Sx, layer.Kx, layer.Dx) \
            * touched(layer.Oy, layer.Sy, layer.Ky, layer.Dy)
        ocg = layer.Oc // layer.groups
        return layer.groups * float(precision.inputs * per_group_in
                                    + precision.weights * ocg * layer.Kc * layer.Kx * layer.Ky
                                    + precision.outputs * layer.On * ocg * layer.Ox * layer.Oy)
    e = extents(layer)
    n = trip_counts(layer, {d: e[d] for d in LAYER_DIMS})
    inside = set(ELEMENT_LOOPS)
    return layer.groups * float(precision.inputs * footprint(layer, n, inside, "I")
                                + precision.weights * footprint(layer, n, inside, "W")
                                + precision.outputs * footprint(layer, n, inside, "O"))


def named_schedule(layer: ConvLayer, name: str, tiles: dict):
    """The HWC schedule (seed 002 fig. 8) or the HWCE loop nest (fig. 11) as a schedule."""
    from workbench.tiling.dataflow import DataflowSchedule

    if name == "hwc":  # O buffered over the tile from LIF in, W and I over FX, SX, LOF
        return DataflowSchedule(HWC + tuple(Loop(d, 1) for d in LAYER_DIMS), tiles,
                                {"I": 2, "W": 2, "O": 5})
    if name == "hwce":  # one input and one output map at a time; O only over the kernel
        control = tuple(Loop(d, 1) for d in (Dim.Y, Dim.C, Dim.M, Dim.X, Dim.N))
        return DataflowSchedule(CANONICAL + control, {**tiles, Dim.M: 1, Dim.C: 1},
                                {"I": 6, "W": 6, "O": 1})
    raise WorkbenchError(f"unknown named schedule {name!r}; valid: hwc, hwce")


def schedule_traffic(layer: ConvLayer, order: tuple[Loop, ...], levels: dict, tiles: dict,
                     precision: Precision = DEFAULT_PRECISION) -> tuple[np.ndarray, np.ndarray]:
    """(traffic bytes, buffer bytes) of a fixed order and levels, vectorized over tiles."""
    final = final_outputs(trip_counts(layer, tiles))
    total_t, total_b = 0.0, 0.0
    for array in ("I", "W", "O"):
        buf, traffic = array_options(layer, order, tiles, array)
        cost, width = priced(array, traffic[levels[array] + 1], final, precision)
        total_t = total_t + cost
        total_b = total_b + width * buf[levels[array] + 1]
    return layer.groups * np.asarray(total_t, dtype=float), np.asarray(total_b, dtype=float)


def best_named(layer: ConvLayer, name: str, memory_bytes: float,
               precision: Precision = DEFAULT_PRECISION) -> tuple[float, dict | None]:
    """Least traffic (bytes) of a named schedule over its free tile sizes under a memory size;
    (nan, None) when no tile fits."""
    tiles = candidate_tiles(layer)
    if name == "hwce":
        keep = (tiles[Dim.M] == 1) & (tiles[Dim.C] == 1)
        tiles = {k: v[keep] for k, v in tiles.items()}
    sched = named_schedule(layer, name, dict.fromkeys(LAYER_DIMS, 1))
    traffic, buffer = schedule_traffic(layer, sched.order, sched.levels, tiles, precision)
    masked = np.where(buffer <= memory_bytes, traffic, np.inf)
    idx = int(np.argmin(masked))
    if not np.isfinite(masked[idx]):
        return float("nan"), None
    return float(masked[idx]), {k: int(v[idx]) for k, v in tiles.items()}
