"""Running a sweep: every case of a grid not yet in its directory, resumable, exactly once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.memo import Caches
from workbench.sweep import accuracy
from workbench.sweep.engine import (
    DaskExecutor,
    LocalExecutor,
    batch_size,
    batches,
    executor,
    progress_bar,
)
from workbench.sweep.evaluate import run_case
from workbench.sweep.grid import Case, Grid, cases, iter_cases
from workbench.sweep.store import SweepStore

Outcome = tuple[str, dict | None, str | None, bool, float]  # id, row, error, written, seconds


def run_batch(task: tuple[list[Case], Grid, str | None, str | None]) -> list[Outcome]:
    """Evaluate a batch of cases (on a worker). Where the worker sees the sweep directory
    owned by this run, each row is committed as soon as it is computed."""
    batch, grid, out_dir, token = task
    store = SweepStore(out_dir) if out_dir is not None else None
    shared = store is not None and token is not None and store.owned_by(token)
    outcomes = []
    caches = Caches()  # what the batch's cases share (candidate sets, plans, accuracies)
    for case in batch:
        row, error, seconds = run_case(case, grid, caches)
        if shared:
            if row is not None:
                store.commit_row(case.case_id, row)
            else:
                store.commit_failure(case.case_id, error)
        outcomes.append((case.case_id, row, error, shared, seconds))
    return outcomes


def running_case(task: tuple[list[Case], Grid, str | None, str | None]) -> str:
    """The case a batch task is at: its first case not committed yet (workers that see the
    sweep directory commit each row as it is done), for a message."""
    batch, _grid, out_dir, _token = task
    done = SweepStore(out_dir).done_ids() if out_dir is not None else set()
    pending = [case for case in batch if case.case_id not in done] or batch
    others = len(pending) - 1
    return pending[0].describe() + (f" (or one of the {others} pending case(s) after it in "
                                    "its batch)" if others and out_dir is None else "")


def notes(grid: Grid) -> list[str]:
    """Checks the grid's weights and data files (one-line errors); returns a note per network
    that gets no accuracy column."""
    out = []
    for network in grid.networks:
        if network in grid.weights or network in grid.data:
            note = accuracy.check(network, grid.weights.get(network), grid.data.get(network))
            if note:
                out.append(f"no accuracy: {note}")
    return out


def run(grid: Grid, out_dir: str | Path | None = None, jobs: int = 1, progress: bool = False,
        scheduler: str | None = None, engine: str = "auto",
        pool: LocalExecutor | DaskExecutor | None = None,
        on_start=None) -> pd.DataFrame:
    """Evaluate every case of the grid not already committed in out_dir (failed cases are
    tried again) and return all rows of the grid, in grid order.

    Runs in this process, or on Dask (`engine`, `jobs`, `scheduler`: see `engine.executor`;
    or an open executor as `pool`). A failed case is left out with its one-line reason in
    df.attrs["failures"]; df.attrs also holds "notes" (networks without accuracy), "wall_s",
    "compute_s" (seconds inside cases), "tasks", "batch", "workers" and "client_writes".
    `on_start(pool, pending)` is called once the executor is up."""
    all_cases = cases(grid)
    grid_notes = notes(grid)
    store = SweepStore(out_dir) if out_dir is not None else None
    if store is not None and store.root.is_dir() and not store.writable():
        return _read_only(store, grid, grid_notes)
    own = pool is None
    start = time.perf_counter()
    with store.lock() if store is not None else _no_lock() as token:
        if store is not None:
            grid_notes += [n for n in [store.write_grid(grid), *store.clean()] if n]
            done = store.done_ids()
            todo = [c for c in all_cases if c.case_id not in done]
        else:
            todo = all_cases
        pool = pool or executor(jobs, scheduler, engine)
        try:
            if on_start is not None:
                on_start(pool, len(todo))
            workers = pool.workers
            size = batch_size(len(todo), workers)
            tasks = [(b, grid, None if store is None else str(store.root), token)
                     for b in batches(todo, size)]
            rows: dict[str, dict] = {}
            errors: dict[str, str] = {}
            compute = 0.0
            client_writes = 0
            bar = progress_bar(len(todo), progress, "case")
            try:
                for outcomes in pool.imap(run_batch, tasks, describe=running_case):
                    for case_id, row, error, written, seconds in outcomes:
                        compute += seconds
                        if store is not None and not written:
                            client_writes += 1
                            if row is not None:
                                store.commit_row(case_id, row)
                            else:
                                store.commit_failure(case_id, error)
                        if row is not None:
                            rows[case_id] = row
                        else:
                            errors[case_id] = error
                    bar.update(len(outcomes))
            finally:
                bar.close()
        finally:
            if own:
                pool.close()
        if store is not None:
            frame = store.collect(grid)
            failed = store.failed()
            done = store.done_ids()
            failures = [failed[c.case_id] for c in all_cases
                        if c.case_id in failed and c.case_id not in done]
        else:
            frame = pd.DataFrame([rows[c.case_id] for c in all_cases if c.case_id in rows])
            failures = [errors[c.case_id] for c in all_cases if c.case_id in errors]
    frame.attrs.update(failures=failures, notes=grid_notes, wall_s=time.perf_counter() - start,
                       compute_s=compute, tasks=len(tasks), batch=size, workers=workers,
                       client_writes=client_writes)
    return frame


def _read_only(store: SweepStore, grid: Grid, grid_notes: list[str]) -> pd.DataFrame:
    """A sweep directory this process cannot write: its rows when the grid is complete."""
    ids = {c.case_id for c in iter_cases(grid)}
    pending = len(ids - store.done_ids())
    if pending:
        raise WorkbenchError(f"sweep directory {str(store.root)!r} is read-only and {pending} "
                             "case(s) of this grid are pending there; use a writable --out")
    frame = store.collect(grid, write=False)
    frame.attrs.update(failures=[], notes=[*grid_notes, "read-only sweep directory: every "
                                           "case is done, nothing was written"],
                       wall_s=0.0, compute_s=0.0, tasks=0, batch=0, workers=0, client_writes=0)
    return frame


class _no_lock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        pass


def collect(out_dir: str | Path, grid: Grid | None = None) -> pd.DataFrame:
    """All committed rows of a sweep directory's grid, in grid order (also written to its
    results.parquet)."""
    return SweepStore(out_dir).collect(grid)


def load_grid(out_dir: str | Path) -> Grid:
    """The grid a sweep directory was last run with (its grid.json)."""
    return SweepStore(out_dir).load_grid()


def status(out_dir: str | Path) -> list[str]:
    """Lines for `workbench sweep --status`: done/failed/pending counts and the failures."""
    store = SweepStore(out_dir)
    if not store.root.is_dir():
        raise WorkbenchError(f"sweep directory {str(out_dir)!r} does not exist")
    return store.status().lines()


def _report_task(args: tuple[Case, Grid, Path]) -> tuple[str, str | None]:
    from workbench.report.notebook import build_report

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


def run_reports(grid: Grid, out_dir: str | Path, jobs: int = 1, progress: bool = False,
                scheduler: str | None = None, engine: str = "auto",
                pool: LocalExecutor | DaskExecutor | None = None) -> dict[str, str]:
    """Per-case HTML reports (papermill, one task each on the executor); returns
    {case_id: error} of failures, also written to out_dir/report_failures.json. Existing
    reports are kept."""
    reports = Path(out_dir) / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    unique: dict[tuple, Case] = {}
    for case in iter_cases(grid):
        unique.setdefault((case.network, case.platform, case.batch, case.memory_bytes), case)
    todo = [(c, grid, reports / f"{c.case_id}.html") for c in unique.values()
            if not (reports / f"{c.case_id}.html").exists()]
    own = pool is None
    pool = pool or executor(jobs, scheduler, engine)
    failures = {}
    bar = progress_bar(len(todo), progress, "report")
    try:
        for case_id, error in pool.imap(_report_task, todo, retries=0):
            if error:
                failures[case_id] = error
            bar.update()
    finally:
        bar.close()
        if own:
            pool.close()
    (Path(out_dir) / "report_failures.json").write_text(json.dumps(failures, indent=1))
    return failures
