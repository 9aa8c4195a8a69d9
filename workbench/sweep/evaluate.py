"""One sweep case: its platform, its row of network totals, its per-layer plan."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pandas as pd

from workbench import explore, layers, platforms
from workbench.errors import WorkbenchError
from workbench.memo import Caches, caches_or_new
from workbench.platforms import Platform
from workbench.sweep import accuracy
from workbench.sweep.grid import FIXED, Case, Grid, iter_cases
from workbench.sweep.store import SweepStore


@functools.lru_cache(maxsize=32)
def _network(name: str, batch: int | None):
    """The network of a case (networks are immutable: one parse per worker and batch)."""
    return layers.load_network(name, batch=batch)


def case_platform(case: Case) -> Platform:
    """The case's platform: its preset, with the case's hierarchy as its levels (the memory
    fields follow it), then memory (the outermost on-chip level), accumulator width and
    overrides."""
    overrides = dict(case.overrides)
    if "simd_lanes" in overrides:
        overrides["macs_per_cycle"] = overrides["simd_lanes"]
    plat = platforms.load_platform(case.platform)
    if case.hierarchy is not None:
        doc, path = platforms.read_hierarchy(case.hierarchy)
        plat = platforms.with_levels(plat, doc, f"hierarchy file {path!r}")
    if case.number_format not in (None, FIXED):  # a float format: elements of its size
        from workbench.quant.floats import float_format

        overrides["elem_bytes"] = float_format(case.number_format).bytes
    return plat.replace(local_mem_bytes=case.memory_bytes, acc_bits=case.acc_bits, **overrides)


def hierarchy_columns(net, plat: Platform, name: str, caches: Caches | None = None) -> dict:
    """A row's hierarchy columns (`explore.hierarchy_plan` totals): hierarchy (name),
    hierarchy_energy_uj, hierarchy_<level>_uj per level and hierarchy_mac_uj, memory_to_compute
    and, when the model has cycles, hierarchy_cycles."""
    from workbench.explore.hierarchy_plan import hierarchy_plan, hierarchy_totals, level_column

    plan = hierarchy_plan(net, plat, caches=caches)
    totals = hierarchy_totals(plan)
    row = {"hierarchy": name, "hierarchy_energy_uj": totals["energy_pj"] / 1e6}
    for level in plan.attrs["levels"]:
        row[f"hierarchy_{level}_uj"] = totals[level_column(level)] / 1e6
    row.update(hierarchy_mac_uj=totals["mac_energy_pj"] / 1e6,
               memory_to_compute=totals["memory_to_compute"])
    if "cycles" in totals:
        row["hierarchy_cycles"] = totals["cycles"]
    return row


def evaluate_case(case: Case, grid: Grid, caches: Caches | None = None) -> dict:
    """The case's row: its settings and the network totals of its plan (`explore.network_plan`:
    every layer, cores and fusion; cycles, energy, ... and the conv/fc layers' energy), and,
    for a traffic-model case, the least off-accelerator traffic of the network's layers under
    that model (traffic_mb, with compulsory_mb; elements at the platform's input/weight
    widths, partial sums at the accumulator width). Non-seed000 models give traffic only.
    With weights and data, the quantized held-out `accuracy` (0..1). `caches`: what the
    cases of one batch share (none: this case's own)."""
    caches = caches_or_new(caches)
    plat = case_platform(case)
    net = _network(case.network, case.batch)
    row = {"case_id": case.case_id, "network": case.network, "platform": case.platform,
           "batch": net.batch, "memory_kb": case.memory_bytes / 1024,
           "acc_bits": case.acc_bits, **{k: v for k, v in case.overrides}}
    if case.hierarchy is not None:
        row["hierarchy"] = case.hierarchy
    if case.number_format is not None:
        row.update(number_format=case.number_format, elem_bytes=plat.elem_bytes)
    if case.traffic_model is not None:
        from workbench.tiling.dataflow import Precision

        precision = Precision(plat.in_bits / 8, plat.w_bits / 8, plat.in_bits / 8,
                              plat.acc_bits / 8)
        table = explore.traffic_table(net.tiled_layers(), [case.memory_bytes],
                                      [case.traffic_model], precision)
        row.update(traffic_model=case.traffic_model,
                   traffic_mb=table["traffic_bytes"].sum(min_count=len(table)) / 1e6,
                   compulsory_mb=table["compulsory_bytes"].sum() / 1e6)
    if case.traffic_model in (None, "seed000"):
        per_layer = explore.network_plan(net, plat, case.objective, case.fusion, case.schedules,
                                         caches=caches)
        totals = explore.network_totals(per_layer, plat)
        tiled = per_layer[per_layer["kind"].isin(["conv", "fc"])]
        row.update({
            "objective": case.objective, "fusion": case.fusion, "cores": plat.cores,
            "most_cores_used": int(per_layer["cores"].max()),
            "io_bound_layers": int((per_layer["bound"] == "I/O").sum()),
            "conv_fc_energy_uj": float(tiled["energy_pj"].sum()) / 1e6,  # seed 000's scope
            "cycles": totals["cycles"], "time_ms": totals["time_ms"],
            "throughput_gops": totals["throughput_gops"],
            "energy_uj": totals["energy_pj"] / 1e6, "ext_accesses": totals["ext_accesses"],
            "dma_transfers": totals["dma_transfers"],
            "schedules_used": ",".join(sorted(set(tiled["schedule"])))})
        if plat.has_levels:
            row.update(hierarchy_columns(net, plat, case.hierarchy or plat.name, caches))
    if case.network in grid.weights or case.network in grid.data:
        value = accuracy.accuracy(case.network, grid.weights.get(case.network),
                                  grid.data.get(case.network), case.acc_bits, grid.bound,
                                  caches, case.number_format)
        if value is not None:
            row["accuracy"] = value
    return row


def run_case(case: Case, grid: Grid,
             caches: Caches | None = None) -> tuple[dict | None, str | None, float]:
    """(row, None, seconds) or (None, one-line failure, seconds). Any error of one case is
    that case's failure; the sweep goes on."""
    start = time.perf_counter()
    try:
        row, error = evaluate_case(case, grid, caches), None
    except WorkbenchError as exc:
        row, error = None, f"{case.describe()}: {exc}"
    except Exception as exc:  # noqa: BLE001 - an engine bug fails its case, not the sweep
        first = str(exc).splitlines()[0] if str(exc) else ""
        row, error = None, f"{case.describe()}: internal error {type(exc).__name__}: {first}"
    return row, error, time.perf_counter() - start


def case_layers(out_dir: str | Path, case_id: str) -> pd.DataFrame:
    """The per-layer plan of one case of a sweep directory (`explore.network_plan` rows),
    recomputed from its grid: exact, and instant once the candidate sets are cached."""
    grid = SweepStore(out_dir).load_grid()
    found = [c for c in iter_cases(grid) if c.case_id == case_id][:1]
    if not found:
        raise WorkbenchError(f"sweep directory {str(out_dir)!r}: no case {case_id!r}")
    case = found[0]
    net = layers.load_network(case.network, batch=case.batch)
    return explore.network_plan(net, case_platform(case), case.objective, case.fusion,
                                case.schedules)
