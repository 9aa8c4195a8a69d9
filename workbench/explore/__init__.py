"""Exploration: best mappings per objective from candidate sets, tidy solution tables, Pareto
fronts, network totals, traffic models side by side, and the network SIMD mapping report."""

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
from workbench.explore.traffic import TRAFFIC_MODELS, best_dataflow_listing, traffic_table

__all__ = ["BEST_ORDER", "DEFAULT_OBJECTIVES", "OBJECTIVES", "TRAFFIC_MODELS", "CandidateTable",
           "best_dataflow_listing", "best_mappings", "best_rows", "best_tiles", "candidate_table",
           "check_objective", "evaluate", "evaluate_arrays", "explore_layer", "explore_layers",
           "explore_network", "fitting_candidates", "network_mapping", "network_totals", "pareto",
           "pareto_mask", "price_rows", "rank_columns", "ranking", "smallest_footprint_bytes",
           "sweep_summary", "too_small", "traffic_table"]
