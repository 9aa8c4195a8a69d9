"""Parameter sweeps: a grid of networks × platforms × overrides × memory sizes × accumulator
widths × objectives, evaluated case by case in this process or on a Dask cluster, committed
to a resumable results store (see `store`) exactly once per case."""

from workbench.sweep.engine import DaskExecutor, LocalExecutor, Patience, executor
from workbench.sweep.evaluate import case_layers, case_platform, evaluate_case
from workbench.sweep.grid import Case, Grid, case_count, cases, check_size, iter_cases
from workbench.sweep.runner import collect, load_grid, run, run_reports, status
from workbench.sweep.store import SweepStore


def grid_summary(frame, columns=("network", "platform", "hierarchy", "memory_kb", "acc_bits",
                                 "objective", "traffic_model", "throughput_gops", "energy_uj",
                                 "traffic_mb", "accuracy", "hierarchy_energy_uj",
                                 "memory_to_compute")):
    """The columns of a results frame worth printing (those present): a traffic model's case
    shows its model and traffic beside the others."""
    return frame[[c for c in columns if c in frame]]


__all__ = ["Case", "DaskExecutor", "Grid", "LocalExecutor", "Patience", "SweepStore", "case_count",
           "case_layers", "case_platform", "cases", "check_size", "collect", "evaluate_case",
           "executor", "grid_summary", "iter_cases", "load_grid", "run", "run_reports", "status"]
