"""Where sweep cases run: in this process, or on Dask (an embedded `LocalCluster`, or an
existing cluster through its scheduler address).

Dask does the scheduling: futures, `as_completed`, task retries, and re-running the tasks of a
worker that died. Cases travel in batches of consecutive cases (one network at a time, so a
worker reuses the network's candidate sets from its memory and the on-disk cache), sized so
that every worker gets about eight tasks: 10,000 cheap cases make a few hundred tasks, not
10,000 round trips. A worker that sees the sweep directory commits each row as soon as it is
computed; the client commits the rows of workers that do not (see `store.SweepStore.owned_by`).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError

TASKS_PER_WORKER = 8  # enough tasks for balance and progress, few enough to keep overhead low
MAX_BATCH = 64  # cases per task at most


def batch_size(cases: int, workers: int) -> int:
    """Cases per task: about TASKS_PER_WORKER tasks per worker, at most MAX_BATCH."""
    return max(1, min(MAX_BATCH, math.ceil(cases / (TASKS_PER_WORKER * max(1, workers)))))


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


class LocalExecutor:
    """Runs tasks one after the other in this process."""

    workers = 1
    dashboard = None

    def imap(self, function: Callable, items: Iterable, retries: int = 0) -> Iterator[Any]:
        for item in items:
            yield function(item)

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class DaskExecutor:
    """Runs tasks on a Dask cluster: an embedded LocalCluster of `jobs` single-threaded worker
    processes, or the cluster behind `scheduler` (tcp://host:port)."""

    jobs: int = 1
    scheduler: str | None = None
    client: Any = None  # an open dask Client to use (left open): one client per process
    connect_timeout_s: float = 20.0  # how long to keep trying an external scheduler

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise WorkbenchError(f"jobs must be a positive integer, got {self.jobs!r}")
        self._own = self.client is None
        self.cluster = None
        if not self._own:
            return
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise WorkbenchError("sweeps run on Dask: pip install 'dask[distributed]' "
                                 "(the 'batch' extra)") from None
        if self.scheduler:
            try:
                self.client = Client(self.scheduler, timeout=f"{self.connect_timeout_s}s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise WorkbenchError(f"dask scheduler {self.scheduler!r}: cannot connect "
                                     f"({type(exc).__name__}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        else:
            # CRITICAL: a worker whose heartbeat meets the closing scheduler logs an ERROR
            # with a traceback after a finished sweep; task errors reach us through futures
            self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1,
                                        processes=True, dashboard_address=":0",
                                        silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)
        try:
            self.client.wait_for_workers(1, timeout=120)
        except TimeoutError:
            self.close()
            raise WorkbenchError(f"dask scheduler {self.scheduler!r}: no worker joined within "
                                 "120 s") from None

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info(n_workers=-1)["workers"]))

    @property
    def dashboard(self) -> str | None:
        return self.client.dashboard_link

    def imap(self, function: Callable, items: Iterable, retries: int = 1) -> Iterator[Any]:
        """function(item) for every item, in completion order. A task whose worker dies is
        re-run by the scheduler; a task that raises is retried `retries` times."""
        from dask.distributed import as_completed

        futures = [self.client.submit(function, item, pure=False, retries=retries)
                   for item in items]
        try:
            for future in as_completed(futures):
                yield future.result()
                future.release()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        if not self._own:
            return
        try:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        except Exception:  # noqa: BLE001 - closing a broken cluster must not hide the cause
            pass

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def executor(jobs: int = 1, scheduler: str | None = None, engine: str = "auto",
             connect_timeout_s: float = 20.0) -> LocalExecutor | DaskExecutor:
    """engine "local" (this process), "dask", or "auto": Dask when a scheduler is given
    (argument or DASK_SCHEDULER_ADDRESS) or jobs > 1, else local; connect_timeout_s: seconds
    to keep trying an external scheduler before a one-line refusal."""
    scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if engine not in ("auto", "local", "dask"):
        raise WorkbenchError(f"unknown sweep engine {engine!r}; valid: auto, local, dask")
    if engine == "dask" or (engine == "auto" and (scheduler or jobs > 1)):
        return DaskExecutor(jobs, scheduler, connect_timeout_s=connect_timeout_s)
    return LocalExecutor()


def progress_bar(total: int, enabled: bool, unit: str):
    """A tqdm bar (a widget in notebooks) with elapsed time and ETA; a no-op when disabled."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, smoothing=0.1)
