"""Memory hierarchies of any depth (seed 001): levels as data, multi-level blocking with a
buffering position per array and level (seed 002), an unrolled MAC array below them (seed 001
§4.2), its analytical counts, a literal executor that checks them, and a cycle model."""

from workbench.hierarchy.accesses import (
    KINDS,
    ElementBytes,
    HierarchyResult,
    LevelAccesses,
    buffer_bytes,
    capacity_violations,
    check_steps,
    energy_by_array_pj,
    energy_pj,
    evaluate,
    iterations,
    level_accesses,
    refetch_rates,
)
from workbench.hierarchy.blocking import (
    ARRAYS,
    DIMS,
    GROUP0,
    Blocking,
    Transfer,
    transfers,
    trip_counts,
)
from workbench.hierarchy.convert import from_dataflow, from_seed000
from workbench.hierarchy.datapath import Datapath, datapath_from_dict
from workbench.hierarchy.levels import (
    BankedCapacity,
    Hierarchy,
    HierarchyError,
    Level,
    SplitCapacity,
    hierarchy_from_dict,
)
from workbench.hierarchy.timing import Timing, timing_of

__all__ = ["ARRAYS", "DIMS", "GROUP0", "KINDS", "BankedCapacity", "Blocking", "Datapath",
           "ElementBytes", "Hierarchy", "HierarchyError", "HierarchyResult", "Level",
           "LevelAccesses", "SplitCapacity", "Timing", "Transfer", "buffer_bytes",
           "capacity_violations", "check_steps", "datapath_from_dict", "energy_by_array_pj",
           "energy_pj", "evaluate", "from_dataflow", "from_seed000", "hierarchy_from_dict",
           "iterations", "level_accesses", "refetch_rates", "timing_of", "transfers",
           "trip_counts"]
