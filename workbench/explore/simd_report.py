"""The network-level SIMD mapping report: every layer's best tile, run through the simulator.

It lives above `simd` (which `perf` uses) so that imports run one way: simd → perf → explore.
"""

from __future__ import annotations

import pandas as pd

from workbench.explore.solutions import explore_network
from workbench.layers.network import Network
from workbench.platforms import Platform
from workbench.simd import mapping_report
from workbench.tiling.model import TILE_DIMS, Tile


def network_mapping(net: Network, platform: Platform, memory_bytes: int | None = None,
                    objective: str = "cycles") -> pd.DataFrame:
    """`simd.mapping_report` of every conv/fc layer at its best tile (explore_network under
    `objective`) and best plan, one table: local vector transfers by cause (simd.TRANSFER_CAUSES,
    adding up to `total`) against seed 000's best case, and compute cycles by part
    (simd.CYCLE_PARTS, adding up to `compute_cycles`)."""
    best = explore_network(net, platform, memory_bytes=memory_bytes, objective=objective)
    frames = [mapping_report(net[row["layer"]], Tile(*(int(row[d]) for d in TILE_DIMS)),
                             platform) for _, row in best.iterrows()]
    return pd.concat(frames, ignore_index=True)
