"""`workbench sweep` (parameter grids, resumable) and `workbench report` (self-contained HTML)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from workbench.errors import WorkbenchError
from workbench.explore.query import OBJECTIVES


def _parse_params(items: list[str]) -> dict:
    """key=value pairs; values read as YAML (numbers, lists, strings)."""
    import yaml

    params = {}
    for item in items or []:
        if "=" not in item:
            raise WorkbenchError(f"parameter {item!r} must look like key=value")
        key, value = item.split("=", 1)
        params[key.strip()] = yaml.safe_load(value)
    return params


def cmd_report(args: argparse.Namespace) -> None:
    from workbench import layers, platforms
    from workbench.notebook_report import build_report

    layers.load_network(args.network)  # fail fast, one line, before starting a kernel
    platforms.load_platform(args.platform)
    start = time.perf_counter()
    params = _parse_params(args.params)
    if args.objective:
        params["objective"] = args.objective
    path = build_report(args.network, args.platform, args.out, timeout_s=args.timeout, **params)
    size = path.stat().st_size
    print(f"report written to {path} ({size / 1e6:.1f} MB) in {time.perf_counter() - start:.1f} s")


def cmd_sweep(args: argparse.Namespace) -> None:
    from workbench import sweep

    grid = sweep.Grid.from_yaml(args.grid)
    if args.objective:
        grid = dataclasses.replace(grid, objectives=list(args.objective))
    total = len(sweep.cases(grid))
    frame = sweep.run(grid, args.out, jobs=args.jobs, progress=not args.json)
    failures = sweep.run_reports(grid, args.out, jobs=args.jobs,
                                 progress=not args.json) if grid.reports else {}
    if args.json:
        print(json.dumps({"cases": total, "rows": len(frame), "report_failures": failures,
                          "failures": frame.attrs.get("failures", []),
                          "results": f"{args.out}/results.parquet"}))
        return
    for error in frame.attrs.get("failures", []):
        print(f"failed: {error}")
    print(f"{len(frame)} of {total} cases in {args.out}/results.parquet")
    print(sweep.grid_summary(frame).to_string(index=False))
    for case_id, error in failures.items():
        print(f"report for case {case_id} failed: {error}")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("report", parents=[common], help="self-contained HTML mapping report")
    p.add_argument("network", help="zoo name or a .yaml/.onnx/.prototxt file")
    p.add_argument("--platform", default="idsp", help="preset name or platform .yaml")
    p.add_argument("--params", nargs="*", default=[],
                   help="report parameters as key=value, e.g. batch=8 memory_kb=64")
    p.add_argument("--out", default="report.html", help="HTML file to write")
    p.add_argument("--timeout", type=int, default=600, help="seconds per notebook cell")
    p.add_argument("--objective", choices=OBJECTIVES, default=None,
                   help="what 'best' means per layer (default cycles)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("sweep", parents=[common], help="evaluate a parameter grid (resumable)")
    p.add_argument("grid", help="grid YAML file")
    p.add_argument("--out", required=True, help="output directory (Parquet rows, reports)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (capped at the cores)")
    p.add_argument("--objective", action="append", choices=OBJECTIVES,
                   help="rank mappings by this (repeat for several; default: the grid's "
                        "'objectives', else cycles)")
    p.set_defaults(func=cmd_sweep)
