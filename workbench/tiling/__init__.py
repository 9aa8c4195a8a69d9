"""Tiling: tile space, the five reuse schedules of seed 000, and the exact loop-nest trace."""

from workbench.tiling.fmap_fusion import (
    FmapTraffic,
    fits_rule,
    fmap_traffic,
    fuse_maps,
    fusion_table,
    input_sets,
    optimal_groups,
    unfused_groups,
)
from workbench.tiling.listing import compulsory_accesses, dataflow_listing, listing
from workbench.tiling.model import (
    SCHEDULES,
    TILE_DIMS,
    Counts,
    Tile,
    buffers,
    check_schedule,
    counts,
    counts_array,
    dims,
    gen_tiles,
    oc_split,
    tile_candidates,
    tile_limits,
    toc_values,
)
from workbench.tiling.trace import trace
from workbench.tiling.trace_cores import CoreTrace, trace_cores

__all__ = ["SCHEDULES", "TILE_DIMS", "CoreTrace", "Counts", "Tile", "buffers", "check_schedule",
           "compulsory_accesses", "counts", "counts_array", "dataflow_listing", "dims",
           "gen_tiles", "listing",
           "tile_candidates", "trace", "trace_cores"]
__all__ += ["oc_split", "tile_limits", "toc_values"]
__all__ += ["FmapTraffic", "fits_rule", "fmap_traffic", "fuse_maps", "fusion_table",
            "input_sets", "optimal_groups", "unfused_groups"]
