"""A network plan replayed literally: every conv/fc layer's cores run their loop nests
(`tiling.trace_cores`), every streamed layer's cores walk their chunks (`streaming`), and each
map lives where the plan put it (external memory, or kept in local memory by fusion).

The replay counts what crosses the external bus and checks the plan's promises: a kept map is
read by the layer after the one that kept it, and on every core the live buffers (doubled when
double-buffered) plus the kept maps fit the local memory.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workbench import streaming
from workbench.errors import WorkbenchError
from workbench.explore import composed
from workbench.explore.hierarchy_plan import platform_precision
from workbench.explore.levels_replay import replay_counts
from workbench.hierarchy.accesses import buffer_bytes
from workbench.layers.network import Network
from workbench.layers.spec import map_elems
from workbench.platforms import Platform
from workbench.tiling.model import Tile
from workbench.tiling.trace_cores import trace_cores


def _levels(layer, platform: Platform, row: dict) -> tuple[dict[str, int], int]:
    """A conv/fc layer blocked over levels, replayed by `hierarchy.executor` core by core:
    its bus elements per array (kept arrays sourced on chip; a banded input's halo rows
    fetched from the other cores) and the bytes its busiest core holds in the outermost
    on-chip level (buffers, doubled when double-buffered, and its kept maps or bands)."""
    m = composed.planned_mapping(layer, platform, row)
    bus = replay_counts(m)["bus"]
    widths = platform_precision(platform)
    scale = 2 if platform.double_buffer else 1
    need = max(scale * sum(buffer_bytes(s.transfers, len(m.hierarchy.levels), widths)[1]
                           .values())
               + bool(m.kept[0]) * map_elems(s.layer, "in") * widths.inputs
               + bool(m.kept[1]) * map_elems(s.layer, "out") * widths.outputs
               for s in m.shares)
    fetched = sum(e for s in m.shares for e, _ in s.halo)
    return {"in": bus["I"] + fetched, "w": bus["W"], "out": bus["O"]}, int(math.ceil(need))


def trace_plan(net: Network, platform: Platform, plan: pd.DataFrame) -> pd.DataFrame:
    """Per layer: external input, weight and output elements moved, and the local memory
    (bytes) its busiest core needs; raises WorkbenchError where the plan breaks a promise."""
    layers = list(net)
    if list(plan["layer"]) != [layer.name for layer in layers]:
        raise WorkbenchError("trace_plan: the plan's layers are not the network's")
    scale = platform.elem_bytes * (2 if platform.double_buffer else 1)
    rows = list(plan.itertuples(index=False))
    last = list(range(len(rows)))   # the last layer of the folded group each layer starts
    for i in reversed(range(len(rows) - 1)):
        if rows[i + 1].folded:
            last[i] = last[i + 1]
    out, kept_before = [], False
    for i, (layer, row) in enumerate(zip(layers, rows, strict=True)):
        if row.fused_in and not kept_before and not row.folded:
            raise WorkbenchError(f"layer {layer.name!r} reads a kept map nobody kept")
        moved, peak = {"in": 0, "w": 0, "out": 0}, 0
        if row.folded:  # applied to the producer's output tiles in local memory
            pass
        elif layer.tiled and row.schedule == "levels":
            moved, need = _levels(layer, platform, row._asdict())
        elif layer.tiled:
            tiles = [Tile(*tile) for _, _, tile in row.shares]
            pool = getattr(row, "pool_fold", None)
            pool = pool if isinstance(pool, tuple) else None
            t = trace_cores(layer, row.split, int(row.cores), tiles,
                            [schedule for _, schedule, _ in row.shares],
                            broadcast=platform.dma_broadcast and row.cores > 1,
                            events=pool is not None)
            moved = dict(t.bus)
            if pool is not None:  # each output box's last put is final: pooled on chip first
                final = {}
                for e in t.events:
                    if e.array == "out" and e.direction == "put":
                        final[e.core, e.box] = e.elements
                done = sum(final.values())
                moved["out"] += done // (pool[0] * pool[1]) - done
            peak = max(c.bin + c.bw + c.bout for c in t.counts)
        else:
            units = streaming.geometry(layer).units
            for share in streaming.split_maps(units, int(row.cores)):
                c = streaming.trace_counts(layer, int(row.rows), int(row.maps), share)
                moved["in"] += c.in_elems
                moved["out"] += c.out_elems
                peak = max(peak, c.in_buffer + c.out_buffer)
        if row.folded or row.schedule != "levels":  # a levels row counted all of it
            if row.fused_in:
                moved["in"] = 0
            if row.fused_out:
                moved["out"] = 0
            kept = 0 if row.folded else (
                bool(row.fused_in) * int(np.prod(layer.in_shape)) * layer.On
                + bool(row.fused_out) * int(np.prod(layers[last[i]].out_shape))
                * layers[last[i]].On) * platform.elem_bytes
            need = peak * scale + kept
        if need > platform.local_mem_bytes:
            raise WorkbenchError(f"layer {layer.name!r}: buffers and kept maps need {need} B, "
                                 f"more than {platform.local_mem_bytes} B of local memory")
        out.append({"layer": layer.name, "in": moved["in"], "w": moved["w"],
                    "out": moved["out"], "ext_accesses": sum(moved.values()),
                    "local_bytes": need})
        kept_before = bool(row.fused_out)
    return pd.DataFrame(out)
