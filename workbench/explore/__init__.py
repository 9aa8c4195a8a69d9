"""Exploration: best mappings per objective from candidate sets, tidy solution tables, Pareto
fronts, multi-core splits, whole-network plans with fusion, network totals, traffic models side
by side, and the network SIMD mapping report."""

from workbench.explore.cores import best_split, network_cores, split_options
from workbench.explore.network import FUSION_MODES, network_plan
from workbench.explore.plan_trace import trace_plan
from workbench.explore.query import (
    OBJECTIVES,
    CandidateTable,
    best_mappings,
    best_rows,
    candidate_table,
    check_objective,
    fitting_candidates,
    price_rows,
    rank_columns,
    ranking,
)
from workbench.explore.simd_report import network_mapping
from workbench.explore.solutions import (
    BEST_ORDER,
    DEFAULT_OBJECTIVES,
    best_tiles,
    evaluate,
    evaluate_arrays,
    explore_layer,
    explore_layers,
    explore_network,
    network_totals,
    pareto,
    pareto_mask,
    smallest_footprint_bytes,
    sweep_summary,
    too_small,
)
from workbench.explore.traffic import (
    TRAFFIC_MODELS,
    best_dataflow_listing,
    traffic_rows,
    traffic_table,
)

__all__ = ["BEST_ORDER", "DEFAULT_OBJECTIVES", "FUSION_MODES", "OBJECTIVES", "TRAFFIC_MODELS",
           "CandidateTable", "best_dataflow_listing", "best_mappings", "best_rows", "best_split",
           "best_tiles", "candidate_table", "check_objective", "evaluate", "evaluate_arrays",
           "explore_layer", "explore_layers", "explore_network", "fitting_candidates",
           "network_cores", "network_mapping", "network_plan", "network_totals", "pareto",
           "pareto_mask", "price_rows", "rank_columns", "ranking", "smallest_footprint_bytes",
           "split_options", "sweep_summary", "too_small", "trace_plan", "traffic_rows",
           "traffic_table"]
