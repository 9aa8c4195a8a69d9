"""Memory hierarchies of any depth (seed 001): levels as data, multi-level blocking with a
buffering position per array and level (seed 002), its analytical counts and a literal
executor that checks them."""

from workbench.hierarchy.accesses import (
    KINDS,
    ElementBytes,
    HierarchyResult,
    LevelAccesses,
    buffer_bytes,
    capacity_violations,
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
from workbench.hierarchy.levels import (
    Hierarchy,
    HierarchyError,
    Level,
    SplitCapacity,
    hierarchy_from_dict,
)

__all__ = ["ARRAYS", "DIMS", "GROUP0", "KINDS", "Blocking", "ElementBytes", "Hierarchy",
           "HierarchyError", "HierarchyResult", "Level", "LevelAccesses", "SplitCapacity",
           "Transfer", "buffer_bytes", "capacity_violations", "energy_by_array_pj",
           "energy_pj", "evaluate", "from_dataflow", "from_seed000", "hierarchy_from_dict",
           "iterations",
           "level_accesses", "refetch_rates", "transfers", "trip_counts"]
