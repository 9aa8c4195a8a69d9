"""Parameter sweeps: a grid of networks × platforms × overrides × buffer sizes × accumulator
widths, evaluated in the engine and written incrementally, one Parquet file per case.

Each case is written to a temporary file and renamed into place, so a sweep killed at any
moment leaves only complete cases; a rerun skips them. Rows are never lost or duplicated.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import explore, layers, platforms
from workbench.errors import FileFormatError, WorkbenchError
from workbench.tiling import SCHEDULES


@dataclass(frozen=True)
class Grid:
    """What a sweep varies. `overrides` maps platform fields to lists of values (crossed);
    a `simd_lanes` override also sets `macs_per_cycle` (one MAC per lane per cycle).
    `weights` maps networks to weight files: their quantized accuracy is added per width."""

    networks: list[str]
    platforms: list[str]
    batch: int | None = None
    buffer_kb: list[float] = field(default_factory=lambda: [128])
    acc_bits: list[int] = field(default_factory=lambda: [16])
    schedules: list[str] = field(default_factory=lambda: list(SCHEDULES))
    overrides: dict[str, list] = field(default_factory=dict)
    weights: dict[str, str] = field(default_factory=dict)
    bound: str = "data"
    traffic_models: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=lambda: ["cycles"])
    fusion: list[str] = field(default_factory=lambda: ["auto"])
    reports: bool = False
    report_timeout_s: int = 600
    report_retries: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.objectives, list) or not self.objectives:
            raise WorkbenchError("grid: 'objectives' must be a non-empty list")
        for objective in self.objectives:
            explore.check_objective(objective)
        if not isinstance(self.fusion, list) or not self.fusion or any(
                mode not in explore.FUSION_MODES for mode in self.fusion):
            raise WorkbenchError("grid: 'fusion' must be a non-empty list of "
                                 + ", ".join(explore.FUSION_MODES))
        for model in self.traffic_models:
            if model not in explore.TRAFFIC_MODELS:
                raise WorkbenchError(f"grid: unknown traffic model {model!r}; valid: "
                                     + ", ".join(explore.TRAFFIC_MODELS))

    @classmethod
    def from_yaml(cls, path: str | Path) -> Grid:
        from workbench.layers.zoo import read_yaml

        doc = read_yaml(Path(path), "grid")
        if not isinstance(doc, dict):
            raise FileFormatError(f"grid file {str(path)!r}: expected a mapping")
        known = set(cls.__dataclass_fields__)
        unknown = set(doc) - known
        if unknown:
            raise FileFormatError(f"grid file {str(path)!r}: unknown key(s) {sorted(unknown)}; "
                                  "known: " + ", ".join(sorted(known)))
        for key in ("networks", "platforms"):
            if not isinstance(doc.get(key), list) or not doc[key]:
                raise FileFormatError(f"grid file {str(path)!r}: '{key}' must be a non-empty list")
        return cls(**doc)


@dataclass(frozen=True)
class Case:
    network: str
    platform: str
    batch: int | None
    memory_bytes: int
    acc_bits: int
    overrides: tuple[tuple[str, Any], ...]
    schedules: tuple[str, ...]
    traffic_model: str | None = None
    objective: str = "cycles"
    fusion: str = "auto"

    @property
    def case_id(self) -> str:
        text = repr(self)
        if self.objective == "cycles":  # the ids of sweeps ranked by cycles stay put
            text = text.replace(", objective='cycles'", "")
        if self.traffic_model is None:  # the ids of sweeps without traffic models stay put
            text = text.replace(", traffic_model=None", "")
        return hashlib.sha1(text.encode()).hexdigest()[:16]


def cases(grid: Grid) -> list[Case]:
    """The cartesian product of the grid, in a stable order."""
    names = sorted(grid.overrides)
    combos = list(itertools.product(*(grid.overrides[n] for n in names))) or [()]
    return [Case(net, plat, grid.batch, int(kb * 1024), bits, tuple(zip(names, combo,
                                                                          strict=True)),
                 tuple(grid.schedules), model, objective, fusion)
            for net in grid.networks for plat in grid.platforms for kb in grid.buffer_kb
            for bits in grid.acc_bits for combo in combos
            for model in (grid.traffic_models or [None]) for objective in grid.objectives
            for fusion in grid.fusion]


_ACCURACY: dict[tuple, float] = {}


def _accuracy(network: str, weights: str, acc_bits: int, bound: str) -> float:
    """Held-out accuracy of the network quantized for acc_bits (cached per process)."""
    key = (network, weights, acc_bits, bound)
    if key not in _ACCURACY:
        from workbench import quant
        from workbench.quant import mnist

        net = layers.load_network(network)
        params = quant.load_weights(weights, net)
        (cx, cy), (tx, ty) = mnist.load("calib"), mnist.load("test")
        try:
            res = quant.search(net, params, cx[:300], cx[:300], cy[:300], acc_bits=acc_bits,
                               bound=bound)
            _ACCURACY[key] = quant.accuracy(net, params, tx, ty, res.config)
        except WorkbenchError:
            _ACCURACY[key] = float("nan")
    return _ACCURACY[key]


def evaluate_case(case: Case, grid: Grid) -> pd.DataFrame:
    """One row: the case's settings and the network totals of its plan (`explore.network_plan`:
    every layer, cores and fusion; cycles, energy, ... and the conv/fc layers' energy), and,
    for a traffic-model case, the least off-accelerator traffic of the network's layers under
    that model (traffic_mb, with compulsory_mb; elements at the platform's input/weight
    widths, partial sums at the accumulator width). Non-seed000 models give traffic only."""
    overrides = dict(case.overrides)
    if "simd_lanes" in overrides:
        overrides["macs_per_cycle"] = overrides["simd_lanes"]
    plat = platforms.load_platform(case.platform, local_mem_bytes=case.memory_bytes,
                                   acc_bits=case.acc_bits, **overrides)
    net = layers.load_network(case.network, batch=case.batch)
    row = {"case_id": case.case_id, "network": case.network, "platform": case.platform,
           "batch": net.batch, "local_mem_kb": case.memory_bytes / 1024,
           "acc_bits": case.acc_bits, **{k: v for k, v in case.overrides}}
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
        per_layer = explore.network_plan(net, plat, case.objective, case.fusion, case.schedules)
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
    if case.network in grid.weights:
        row["accuracy"] = _accuracy(case.network, grid.weights[case.network], case.acc_bits,
                                    grid.bound)
    return pd.DataFrame([row])


def _write_atomic(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _run_case(args: tuple[Case, Grid, Path | None]) -> pd.DataFrame | str:
    """The case's row (also written to rows_dir), or its one-line error."""
    case, grid, rows_dir = args
    try:
        frame = evaluate_case(case, grid)
    except WorkbenchError as exc:
        model = f", {case.traffic_model} traffic" if case.traffic_model else ""
        return (f"case {case.case_id} ({case.network} on {case.platform}, "
                f"{case.memory_bytes} B, {case.acc_bits}-bit, {dict(case.overrides)}{model}): "
                f"{exc}")
    if rows_dir is not None:
        _write_atomic(frame, rows_dir / f"{case.case_id}.parquet")
    return frame


def run(grid: Grid, out_dir: str | Path | None = None, jobs: int = 1,
        progress: bool = False) -> pd.DataFrame:
    """Evaluate every case not already in out_dir; returns all rows of the grid. A case that
    fails is left out with its one-line error in df.attrs["failures"] (and failures.json)."""
    todo = cases(grid)
    rows_dir = None
    if out_dir is not None:
        rows_dir = Path(out_dir) / "rows"
        rows_dir.mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "grid.json").write_text(json.dumps(grid.__dict__, indent=1))
        todo = [c for c in todo if not (rows_dir / f"{c.case_id}.parquet").exists()]
    results = _map(_run_case, [(c, grid, rows_dir) for c in todo], jobs, progress, "cases")
    errors = [r for r in results if isinstance(r, str)]
    if out_dir is not None:
        (Path(out_dir) / "failures.json").write_text(json.dumps(errors, indent=1))
        frame = collect(out_dir, grid)
    else:
        frames = [r for r in results if not isinstance(r, str)]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    frame.attrs["failures"] = errors
    return frame


def collect(out_dir: str | Path, grid: Grid | None = None) -> pd.DataFrame:
    """All completed rows of a sweep directory (in grid order when the grid is given)."""
    rows_dir = Path(out_dir) / "rows"
    files = sorted(rows_dir.glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    if grid is not None:
        order = {c.case_id: i for i, c in enumerate(cases(grid))}
        frame = frame.sort_values("case_id", key=lambda s: s.map(order)).reset_index(drop=True)
    frame.to_parquet(Path(out_dir) / "results.parquet", index=False)
    return frame


def _map(function, items: list, jobs: int, progress: bool, unit: str) -> list:
    from tqdm import tqdm

    bar = tqdm(total=len(items), unit=unit, disable=not progress)
    results = []
    if jobs > 1 and len(items) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, os.cpu_count() or 1)) as pool:
            for result in pool.map(function, items):
                results.append(result)
                bar.update()
    else:
        for item in items:
            results.append(function(item))
            bar.update()
    bar.close()
    return results


def _report_task(args: tuple[Case, Grid, Path]) -> tuple[str, str | None]:
    from workbench.notebook_report import build_report

    case, grid, path = args
    error = None
    for _attempt in range(grid.report_retries + 1):
        try:
            cores = {k: v for k, v in case.overrides if k == "cores"}
            build_report(case.network, case.platform, path, timeout_s=grid.report_timeout_s,
                         batch=case.batch, memory_kb=case.memory_bytes / 1024,
                         objective=case.objective, fusion=case.fusion, **cores)
            return case.case_id, None
        except Exception as exc:  # noqa: BLE001 - any failure is recorded, the others go on
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return case.case_id, error


def run_reports(grid: Grid, out_dir: str | Path, jobs: int = 1,
                progress: bool = False) -> dict[str, str]:
    """Per-case HTML reports (papermill, process pool); returns {case_id: error} of failures,
    also written to out_dir/report_failures.json. Existing reports are kept."""
    reports = Path(out_dir) / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    unique: dict[tuple, Case] = {}
    for case in cases(grid):
        unique.setdefault((case.network, case.platform, case.batch, case.memory_bytes), case)
    todo = [(c, grid, reports / f"{c.case_id}.html") for c in unique.values()
            if not (reports / f"{c.case_id}.html").exists()]
    failures = {cid: err for cid, err in _map(_report_task, todo, jobs, progress, "reports")
                if err}
    (Path(out_dir) / "report_failures.json").write_text(json.dumps(failures, indent=1))
    return failures


def grid_summary(frame: pd.DataFrame, columns: Iterable[str] = ("network", "platform",
                                                                  "local_mem_kb", "acc_bits",
                                                                  "objective", "throughput_gops",
                                                                  "energy_uj")) -> pd.DataFrame:
    return frame[[c for c in columns if c in frame]]
