"""Search of the seed 002 dataflow space and of its baselines, exact over what it enumerates.

Space: element orders (canonical fig. 3 and the HWC order of fig. 8 by default), the 24 orders
of the controlling loops (batch outermost; the symmetric permutations the paper removes are
covered because both x/y orders are enumerated among the controlling loops), tile sizes from
`tiling.tile_candidates` per dimension (exact: traffic and buffers grow with a tile size at a
fixed tile count), and every buffering level of each array. Levels that only add a loop not
carrying the array's reuse change neither buffer nor traffic, so only the levels at carrying
loops (and −1) are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.tiling.dataflow import (
    CANONICAL,
    HWC,
    TILE_KEYS,
    Precision,
    array_options,
    cache_model,
    carries,
    control_orders,
    extents,
    final_outputs,
    peemen,
    priced,
    trip_counts,
)
from workbench.tiling.model import tile_candidates

MODELS = ("dataflow", "peemen", "cache")
DEFAULT_PRECISION = Precision()


def candidate_tiles(layer: ConvLayer) -> dict[str, np.ndarray]:
    """Flattened grid of tile sizes (jss, iss, css, mss, nss) from the reduced candidates."""
    axes = [tile_candidates(layer.Ox), tile_candidates(layer.Oy), tile_candidates(layer.Kc),
            tile_candidates(layer.Oc // layer.groups), tile_candidates(layer.On)]
    grid = np.meshgrid(*axes, indexing="ij")
    return {k: g.reshape(-1) for k, g in zip(TILE_KEYS, grid, strict=True)}


def useful_levels(layer: ConvLayer, order: Sequence[str], array: str) -> list[int]:
    """−1 and the levels just including a loop that carries the array's reuse, plus the top."""
    levels, inside = [-1], set()
    for index, loop in enumerate(order):
        if carries(layer, array, loop, inside):
            levels.append(index)
        inside.add(loop)
    if len(order) - 1 not in levels:
        levels.append(len(order) - 1)
    return levels


def _best_dataflow(layer: ConvLayer, order: tuple[str, ...], tiles: dict, caps: np.ndarray,
                   prec: Precision) -> tuple[np.ndarray, np.ndarray, list]:
    """Least traffic per capacity for one loop order: (traffic, tile index, levels)."""
    final = final_outputs(trip_counts(layer, tiles))
    opts = {}
    for array in ("I", "W", "O"):
        buf, traffic = array_options(layer, order, tiles, array)
        levels = useful_levels(layer, order, array)
        priced_levels = [priced(array, traffic[lv + 1], final, prec) for lv in levels]
        t = layer.groups * np.stack([cost for cost, _ in priced_levels])
        b = np.stack([buf[lv + 1] for lv in levels]) * priced_levels[0][1]
        opts[array] = (levels, b.astype(float), t.astype(float))
    best = np.full(len(caps), np.inf)
    where = [None] * len(caps)
    (li, bi, ti), (lw, bw, tw), (lo, bo, to) = opts["I"], opts["W"], opts["O"]
    for i in range(len(li)):
        for j in range(len(lw)):
            b_iw, t_iw = bi[i] + bw[j], ti[i] + tw[j]
            for k in range(len(lo)):
                total_b, total_t = b_iw + bo[k], t_iw + to[k]
                masked = np.where(total_b[None, :] <= caps[:, None], total_t[None, :], np.inf)
                idx = np.argmin(masked, axis=1)
                value = masked[np.arange(len(caps)), idx]
                for c in np.flatnonzero(value < best):
                    best[c] = value[c]
                    where[c] = (int(idx[c]), {"I": li[i], "W": lw[j], "O": lo[k]})
    return best, where


def search(layer: ConvLayer, memory_bytes: Iterable[float], model: str = "dataflow",
           precision: Precision = DEFAULT_PRECISION,
           element_orders: Sequence[tuple[str, ...]] = (CANONICAL, HWC)) -> pd.DataFrame:
    """Least off-accelerator traffic (bytes) per local-memory size under one model, with the
    schedule that reaches it. Sizes no schedule fits get traffic NaN."""
    if model not in MODELS:
        raise WorkbenchError(f"unknown traffic model {model!r}; valid: " + ", ".join(MODELS))
    caps = np.asarray(sorted(memory_bytes), dtype=float)
    tiles = candidate_tiles(layer)
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
        for innermost in ("TOF", "TIF", "TSY", "TSX"):
            r = peemen(layer, tiles, innermost, precision)
            offer(r["traffic_bytes"], r["buffer_bytes"], f"peemen innermost {innermost}")
    else:
        for element_order in element_orders:
            for control in control_orders():
                order = tuple(element_order) + control
                best, where = _best_dataflow(layer, order, tiles, caps, precision)
                for row, value, spot in zip(rows, best, where, strict=True):
                    if spot is not None and value < row["traffic_bytes"]:
                        row["traffic_bytes"] = float(value)
                        row["schedule"] = ((order, spot[1]),
                                           {k: int(v[spot[0]]) for k, v in tiles.items()})
    frame = pd.DataFrame(rows)
    frame["traffic_bytes"] = frame["traffic_bytes"].replace(np.inf, np.nan)
    return frame


def compulsory_bytes(layer: ConvLayer, precision: Precision = DEFAULT_PRECISION) -> float:
    """Every input, weight and output element moved once (the 'essential' traffic), counting
    the input elements the convolution touches (padding included, as the model counts)."""
    from workbench.tiling.dataflow import ELEMENT_LOOPS, footprint

    e = extents(layer)
    whole = {"jss": e["Ex"], "iss": e["Ey"], "css": e["C"], "mss": e["M"], "nss": e["N"]}
    n = trip_counts(layer, whole)
    inside = set(ELEMENT_LOOPS)
    return layer.groups * float(precision.inputs * footprint(layer, n, inside, "I")
                                + precision.weights * footprint(layer, n, inside, "W")
                                + precision.outputs * footprint(layer, n, inside, "O"))


def named_schedule(layer: ConvLayer, name: str, tiles: dict):
    """The HWC schedule (seed 002 fig. 8) or the HWCE loop nest (fig. 11) as a schedule."""
    from workbench.tiling.dataflow import DataflowSchedule

    if name == "hwc":  # O buffered over the tile from LIF in, W and I over FX, SX, LOF
        return DataflowSchedule(HWC + ("TSX", "TSY", "TIF", "TOF", "TN"), tiles,
                                {"I": 2, "W": 2, "O": 5})
    if name == "hwce":  # one input and one output map at a time; O only over the kernel
        return DataflowSchedule(CANONICAL + ("TSY", "TIF", "TOF", "TSX", "TN"),
                                {**tiles, "mss": 1, "css": 1}, {"I": 6, "W": 6, "O": 1})
    raise WorkbenchError(f"unknown named schedule {name!r}; valid: hwc, hwce")


def schedule_traffic(layer: ConvLayer, order: tuple[str, ...], levels: dict, tiles: dict,
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
        keep = (tiles["mss"] == 1) & (tiles["css"] == 1)
        tiles = {k: v[keep] for k, v in tiles.items()}
    sched = named_schedule(layer, name, {k: 1 for k in TILE_KEYS})
    traffic, buffer = schedule_traffic(layer, sched.order, sched.levels, tiles, precision)
    masked = np.where(buffer <= memory_bytes, traffic, np.inf)
    idx = int(np.argmin(masked))
    if not np.isfinite(masked[idx]):
        return float("nan"), None
    return float(masked[idx]), {k: int(v[idx]) for k, v in tiles.items()}
