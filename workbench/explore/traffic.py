"""Traffic models side by side (seed 002): the least off-accelerator traffic per layer, model
and local-memory size, and the least-traffic dataflow schedule as a loop nest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.tiling.candidates import candidate_set
from workbench.tiling.model import SCHEDULES

TRAFFIC_MODELS = ("seed000", "dataflow", "peemen", "cache")


def traffic_table(layer_list: Sequence[ConvLayer], memory_bytes: Iterable[float],
                  models: Iterable[str] = TRAFFIC_MODELS, precision=None,
                  paper_orders: bool = False, tile_set: str = "all",
                  progress: bool = False) -> pd.DataFrame:
    """Least off-accelerator traffic (bytes) per layer, model and local-memory size, in one
    tidy table (layer, model, memory_bytes, traffic_bytes, compulsory_bytes). `progress`: a
    bar of (layer, model) searches done, with elapsed time and ETA, on stderr.

    seed000: the best of the five schedules (tiling.counts, single-buffered) with the same
    precisions as the others: partial sums and B_out at partial-sum width, final outputs at
    output width; dataflow / peemen / cache: tiling.dataflow_search over `tile_set` ("all" or
    "pow2"), the dataflow model over the paper's 180 element orders if paper_orders."""
    from workbench.tiling import dataflow_search as ds
    from workbench.tiling.dataflow import Precision

    precision = precision or Precision()
    orders = ds.PAPER_ORDERS if paper_orders else ds.DEFAULT_ORDERS
    from tqdm.auto import tqdm

    sizes = sorted(memory_bytes)
    models = list(models)
    frames = []
    bar = tqdm(total=len(layer_list) * len(models), unit="search", desc="traffic",
               disable=not progress)
    for layer in layer_list:
        compulsory = ds.compulsory_bytes(layer, precision)
        for model in models:
            if model == "seed000":
                frame = _seed000_traffic(layer, sizes, precision)
            elif model in ds.MODELS:
                frame = ds.search(layer, sizes, model, precision, orders,
                                  tile_set).drop(columns=["schedule"])
            else:
                raise WorkbenchError(f"unknown traffic model {model!r}; valid: "
                                     + ", ".join(TRAFFIC_MODELS))
            frames.append(frame.assign(compulsory_bytes=compulsory))
            bar.update()
    bar.close()
    return pd.concat(frames, ignore_index=True)


def traffic_rows(table: pd.DataFrame) -> pd.DataFrame:
    """A `traffic_table` as users read it (JSON, CSV, notebooks): the local-memory size as
    `memory_kb` (KiB), the one name of a memory size, where the engine keeps memory_bytes."""
    return table.assign(memory_bytes=table["memory_bytes"] / 1024).rename(
        columns={"memory_bytes": "memory_kb"})


def best_dataflow_listing(layer: ConvLayer, memory_bytes: float, precision=None,
                          paper_orders: bool = False, tile_set: str = "all") -> str:
    """The loop nest (tiling.dataflow_listing) of the layer's least-traffic dataflow schedule
    under a local-memory size (bytes), or a one-line note when none fits."""
    from workbench.tiling import dataflow_listing
    from workbench.tiling import dataflow_search as ds
    from workbench.tiling.dataflow import DataflowSchedule, Precision

    precision = precision or Precision()
    orders = ds.PAPER_ORDERS if paper_orders else ds.DEFAULT_ORDERS
    best = ds.search(layer, [memory_bytes], "dataflow", precision, orders, tile_set)
    if best["schedule"].iloc[0] is None:
        return f"no dataflow schedule of {layer.name} fits {memory_bytes:.0f} B"
    (order, levels), tiles = best["schedule"].iloc[0]
    return dataflow_listing(layer, DataflowSchedule(order, tiles, levels), precision)


def _seed000_traffic(layer: ConvLayer, sizes: list[float], precision) -> pd.DataFrame:
    """Least seed 000 traffic (bytes) per memory size under mixed precisions: the minimum over
    each schedule's "traffic" candidate set (exact, see `tiling.candidates`; no enumeration)."""
    best = np.full(len(sizes), np.inf)
    for schedule in SCHEDULES:
        cs = candidate_set(layer, schedule, kind="traffic")
        col = cs.column
        traffic = (precision.inputs * col("in_accesses") + precision.weights * col("w_accesses")
                   + precision.outputs * col("final_out")
                   + precision.partial_sums * col("psum_out"))
        buffer = (precision.inputs * col("bin") + precision.weights * col("bw")
                  + precision.partial_sums * col("bout"))
        for i, size in enumerate(sizes):
            fits = buffer <= size
            if fits.any():
                best[i] = min(best[i], float(traffic[fits].min()))
    return pd.DataFrame({"layer": layer.name, "model": "seed000", "memory_bytes": sizes,
                         "traffic_bytes": np.where(np.isfinite(best), best, np.nan)})
