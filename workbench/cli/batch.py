"""`workbench sweep` (parameter grids, resumable) and `workbench report` (self-contained HTML)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from workbench.cli.args import (
    add_network,
    memory_kb,
    output_dir,
    output_file,
    positive_int,
    positive_number,
)
from workbench.cli.tables import print_table, print_text
from workbench.errors import WorkbenchError
from workbench.explore.query import OBJECTIVES
from workbench.numbers import fmt_bytes, fmt_count, fmt_seconds
from workbench.resources import cut

WORKER_LOG = "workers.log"  # in a sweep's folder: what the embedded Dask workers print


def _parse_params(items: list[str]) -> dict:
    """key=value pairs; values read as YAML (numbers, lists, strings)."""
    import yaml

    params = {}
    for item in items or []:
        if "=" not in item:
            raise WorkbenchError(f"--params {cut(item)}: must look like key=value")
        key, value = item.split("=", 1)
        try:
            params[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            reason = str(exc).splitlines()[0]
            raise WorkbenchError(f"--params {key.strip()[:80]}: value {cut(value)} is "
                                 f"not a number, list or string ({reason[:80]})") from None
    return params


def cmd_report(args: argparse.Namespace) -> None:
    from workbench import layers, platforms
    from workbench.report.notebook import build_report, check_parameters

    if args.sweep:
        _sweep_report(args)
        return
    if not args.network:
        raise WorkbenchError("report: needs a network (or --sweep DIR)")
    params = _parse_params(args.params)
    params = check_parameters(params, "--params")  # before anything is loaded or computed
    # fail fast, one line, before starting a kernel
    layers.load_network(args.network, input_shape=args.input_shape)
    platforms.load_platform(args.platform)
    start = time.perf_counter()
    if args.objective:
        params["objective"] = args.objective
    if args.memory_kb is not None:
        params["memory_kb"] = args.memory_kb
    if args.input_shape:
        params["input_shape"] = list(args.input_shape)
    path = build_report(args.network, args.platform, args.out, timeout_s=args.timeout,
                        progress=not args.json and sys.stderr.isatty(), **params)
    size = path.stat().st_size
    print(f"report written to {path} ({fmt_bytes(size)}) in "
          f"{fmt_seconds(time.perf_counter() - start)}")


def _sweep_report(args: argparse.Namespace) -> None:
    """`workbench report --sweep DIR`: the results browser as one offline HTML page."""
    import functools

    from workbench import sweep
    from workbench.report.sweep_page import sweep_page

    if args.network:
        raise WorkbenchError("report: give either a network or --sweep DIR, not both")
    params = _parse_params(args.params)
    unknown = sorted(set(params) - {"x", "y", "color"})
    if unknown:
        raise WorkbenchError(f"report --sweep: unknown parameter(s) {unknown}; "
                             "parameters: x, y, color (metric names)")
    start = time.perf_counter()
    frame = sweep.collect(args.sweep)
    if frame.empty:
        raise WorkbenchError(f"sweep directory {args.sweep!r}: no completed case to show")
    path = sweep_page(frame, list(sweep.load_grid(args.sweep).overrides), args.out,
                      case_layers=functools.partial(sweep.case_layers, args.sweep), **params)
    size = path.stat().st_size
    print(f"sweep report written to {path} ({fmt_bytes(size)}) in "
          f"{fmt_seconds(time.perf_counter() - start)}")


def cmd_sweep(args: argparse.Namespace) -> None:
    from workbench import sweep
    from workbench.viz.units import readable

    if args.status:
        if args.grid:
            raise WorkbenchError("sweep: give either a grid file or --status DIR, not both")
        lines = sweep.status(args.status)
        # a record a line, not wrapped: scripts read them
        print(json.dumps({"status": lines}) if args.json else "\n".join(lines))
        return
    if not args.grid or not args.out:
        raise WorkbenchError("sweep: needs a grid file and --out DIR (or --status DIR)")
    grid = sweep.Grid.from_yaml(args.grid)
    if args.objective:
        grid = dataclasses.replace(grid, objectives=list(args.objective))
    total = sweep.check_size(grid)

    def started(pool, pending: int) -> None:
        if not args.json:
            where = f"on {pool.workers} Dask worker(s)"
            if pool.dashboard:
                where += f", dashboard {pool.dashboard}"
            print(f"{fmt_count(pending)} of {fmt_count(total)} cases to run {where}",
                  file=sys.stderr, flush=True)

    patience = sweep.Patience(no_worker_s=args.no_worker_timeout,
                              worker_losses=args.max_worker_losses,
                              task_kills=args.max_case_kills)
    with sweep.executor(args.jobs, args.scheduler, engine="dask",
                        connect_timeout_s=args.connect_timeout, patience=patience,
                        worker_log=str(Path(args.out) / WORKER_LOG)) as pool:
        frame = sweep.run(grid, args.out, progress=not args.json, pool=pool, on_start=started)
        failures = sweep.run_reports(grid, args.out, progress=not args.json,
                                     pool=pool) if grid.reports else {}
    if args.json:
        print(json.dumps({"cases": total, "rows": len(frame), "report_failures": failures,
                          "failures": frame.attrs.get("failures", []),
                          "notes": frame.attrs.get("notes", []),
                          "client_writes": frame.attrs.get("client_writes", 0),
                          "results": str(Path(args.out) / "results.parquet")}))
        return
    for note in frame.attrs.get("notes", []):
        print_text(f"note: {note}")
    for error in frame.attrs.get("failures", []):
        print(f"failed: {error}")  # one record a line, as `--status` prints it
    print(f"{fmt_count(len(frame))} of {fmt_count(total)} cases in "
          f"{Path(args.out) / 'results.parquet'} ({fmt_seconds(frame.attrs['wall_s'])})")
    print_table(readable(sweep.grid_summary(frame)), args)
    for case_id, error in failures.items():
        print(f"report for case {case_id} failed: {error}")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("report", parents=[common], help="self-contained HTML mapping report")
    add_network(p, optional=True)
    p.add_argument("--platform", default="idsp", help="preset name or platform .yaml")
    p.add_argument("--params", nargs="*", default=[],
                   help="report parameters as key=value, e.g. batch=8 memory_kb=64 (with "
                        "--sweep: x=time_ms y=energy_uj color=memory_kb)")
    p.add_argument("--sweep", metavar="DIR", default=None,
                   help="instead of a network: the results browser of a sweep directory")
    p.add_argument("--out", type=output_file, default="report.html",
                   help="HTML file to write (default: %(default)s)")
    p.add_argument("--timeout", type=positive_int, default=600,
                   help="seconds per notebook cell (default: %(default)s)")
    p.add_argument("--objective", choices=OBJECTIVES, default=None,
                   help="what 'best' means per layer (default cycles)")
    p.add_argument("--memory-kb", type=memory_kb, metavar="KB",
                   help="local memory size in KB (default: the platform's; the parameter "
                        "memory_kb)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("sweep", parents=[common],
                       help="evaluate a parameter grid on Dask (resumable, exactly once)")
    p.add_argument("grid", nargs="?", help="grid YAML file")
    p.add_argument("--out", type=output_dir,
                   help="sweep directory (rows, results.parquet, reports)")
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="worker processes of the embedded Dask cluster (default 1)")
    p.add_argument("--scheduler", default=None,
                   help="run on an existing Dask cluster: tcp://HOST:PORT (default: "
                        "$DASK_SCHEDULER_ADDRESS, else an embedded cluster)")
    p.add_argument("--connect-timeout", type=positive_number, default=20.0, metavar="SECONDS",
                   help="how long to keep trying the scheduler (default: %(default)s)")
    p.add_argument("--no-worker-timeout", type=positive_number, default=30.0, metavar="SECONDS",
                   help="end the sweep (rows kept) when no Dask worker stays up this long "
                        "(default: %(default)s)")
    p.add_argument("--max-worker-losses", type=positive_int, default=10, metavar="N",
                   help="end the sweep (rows kept) when more Dask workers than this are lost "
                        "(default: %(default)s)")
    p.add_argument("--max-case-kills", type=positive_int, default=3, metavar="N",
                   help="end the sweep (rows kept) when one case's task kills its worker this "
                        "many times, e.g. out of memory (default: %(default)s)")
    p.add_argument("--status", metavar="DIR", default=None,
                   help="print done/failed/pending counts of a sweep directory and stop")
    p.add_argument("--objective", action="append", choices=OBJECTIVES,
                   help="rank mappings by this (repeat for several; default: the grid's "
                        "'objectives', else cycles)")
    p.set_defaults(func=cmd_sweep)
