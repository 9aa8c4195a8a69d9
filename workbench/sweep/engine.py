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

import contextlib
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import WorkbenchError

TASKS_PER_WORKER = 8  # enough tasks for balance and progress, few enough to keep overhead low
MAX_BATCH = 64  # cases per task at most


def batch_size(cases: int, workers: int) -> int:
    """Cases per task: about TASKS_PER_WORKER tasks per worker, at most MAX_BATCH."""
    return max(1, min(MAX_BATCH, math.ceil(cases / (TASKS_PER_WORKER * max(1, workers)))))


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


RESUME = "the rows done are kept; run the same command again to resume"


@dataclass(frozen=True)
class Patience:
    """When a Dask sweep gives up instead of waiting forever: no worker that stays up (and
    no task finishing) for `no_worker_s` seconds, more than `worker_losses` workers lost
    (killed or crashed), or one task whose worker died `task_kills` times (Dask's
    KilledWorker). `poll_s`: seconds between looks at the cluster while no task finishes."""

    no_worker_s: float = 30.0
    worker_losses: int = 10
    task_kills: int = 3
    poll_s: float = 0.25

    def __post_init__(self) -> None:
        for name in ("no_worker_s", "poll_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not 0 < value < 1e6:
                raise WorkbenchError(f"{name} must be a number of seconds in (0, 1e6), "
                                     f"got {value!r}")
        for name in ("worker_losses", "task_kills"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
                raise WorkbenchError(f"{name} must be an integer in 1..1000, got {value!r}")


class _Watch:
    """The cluster seen between finished tasks: the workers lost, and since when it last was
    healthy (a task finished, or the same workers stayed up for STABLE_S seconds)."""

    STABLE_S = 5.0

    def __init__(self, client: Any, patience: Patience) -> None:
        self.client, self.patience = client, patience
        self.seen: set[str] = set()
        self.lost: set[str] = set()
        self.workers: set[str] = set()
        now = time.monotonic()
        self.healthy, self.since = now, now  # last healthy moment; current workers since

    def progress(self) -> None:
        """A task finished: the cluster works."""
        self.healthy = time.monotonic()

    def check(self, running: str) -> None:
        """Raise one WorkbenchError line when the cluster is past the patience."""
        workers = set(self.client.scheduler_info(n_workers=-1)["workers"])
        now = time.monotonic()
        self.lost |= self.seen - workers
        self.seen |= workers
        if workers != self.workers:
            self.workers, self.since = workers, now
        elif workers and now - self.since >= min(self.STABLE_S, self.patience.no_worker_s / 2):
            self.healthy = now
        where = f" {running}" if running else ""
        if len(self.lost) > self.patience.worker_losses:
            raise WorkbenchError(f"sweep stopped: {len(self.lost)} Dask workers lost (killed or "
                                 f"crashed), beyond the {self.patience.worker_losses} allowed"
                                 f"{where}; {RESUME}")
        if now - self.healthy >= self.patience.no_worker_s:
            raise WorkbenchError(f"sweep stopped: no Dask worker stayed up for "
                                 f"{self.patience.no_worker_s:g} s ({len(self.lost)} lost)"
                                 f"{where}; {RESUME}")


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (a cluster half started or half
    closed leaves tracebacks behind), then raise KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if got:
        raise KeyboardInterrupt


class LocalExecutor:
    """Runs tasks one after the other in this process."""

    workers = 1
    dashboard = None

    def imap(self, function: Callable, items: Iterable, retries: int = 0,
             describe: Callable[[Any], str] = repr) -> Iterator[Any]:
        for item in items:
            yield function(item)

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _NoAllExit(logging.Filter):
    """Drops asyncio's 'Task exception was never retrieved' about Dask's AllExit: a result
    still awaited when its client closed (a stopped sweep), nothing the user must see."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "AllExit"


@dataclass
class DaskExecutor:
    """Runs tasks on a Dask cluster: an embedded LocalCluster of `jobs` single-threaded worker
    processes, or the cluster behind `scheduler` (tcp://host:port)."""

    jobs: int = 1
    scheduler: str | None = None
    client: Any = None  # an open dask Client to use (left open): one client per process
    connect_timeout_s: float = 20.0  # how long to keep trying an external scheduler
    patience: Patience = field(default_factory=Patience)  # when to give up on lost workers
    worker_log: str | None = None  # a file for the embedded workers' stderr (`worker_log`)

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
        # the client's own log lines (a lost worker's keys rescheduled, a scheduler gone at
        # exit) are not ours to print: what matters reaches us through futures and `Patience`.
        # Set after the import: importing distributed sets its loggers' levels from its config
        logging.getLogger("distributed.client").setLevel(logging.CRITICAL + 1)
        quiet = logging.getLogger("asyncio")
        if not any(isinstance(f, _NoAllExit) for f in quiet.filters):
            quiet.addFilter(_NoAllExit())
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
            self._start_cluster(LocalCluster, Client)
        try:
            self.client.wait_for_workers(1, timeout=120)
        except KeyboardInterrupt:
            self.close()
            raise
        except TimeoutError:
            self.close()
            raise WorkbenchError(f"dask scheduler {self.scheduler!r}: no worker joined within "
                                 "120 s") from None

    def _start_cluster(self, local_cluster: Any, client: Any) -> None:
        """The embedded cluster; a task whose worker dies `patience.task_kills` times fails
        (KilledWorker) instead of being tried on and on."""
        import dask

        # the tracker of killed workers' semaphores warns about them at exit: not our line
        quiet = "ignore:resource_tracker:UserWarning"
        if quiet not in os.environ.get("PYTHONWARNINGS", ""):
            os.environ["PYTHONWARNINGS"] = ",".join(
                w for w in (os.environ.get("PYTHONWARNINGS", ""), quiet) if w)
        from workbench.sweep import worker_log

        logged = {} if self.worker_log is None else {
            "preload": [worker_log.__name__], "env": {worker_log.ENV: str(self.worker_log)}}
        try:
            # saturation 1: a single-threaded worker holds only the task it runs, so a worker
            # killed by its task (out of memory) counts against that task alone, never against
            # tasks merely queued there (Dask counts every task a dead worker was processing)
            with _deferred_interrupts(), dask.config.set(
                    {"distributed.scheduler.allowed-failures": self.patience.task_kills - 1,
                     "distributed.scheduler.worker-saturation": 1.0}):
                self.cluster = local_cluster(n_workers=self.jobs, threads_per_worker=1,
                                             processes=True, dashboard_address=":0",
                                             silence_logs=logging.CRITICAL, **logged)
                self.client = client(self.cluster)
        except KeyboardInterrupt:
            self.close()
            raise
        except Exception as exc:  # noqa: BLE001 - a worker killed while it starts, no ports
            self.close()
            raise WorkbenchError(f"dask: the embedded cluster of {self.jobs} worker(s) did not "
                                 f"start ({type(exc).__name__}: {_first_line(exc)})") from None

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info(n_workers=-1)["workers"]))

    @property
    def dashboard(self) -> str | None:
        return self.client.dashboard_link

    def imap(self, function: Callable, items: Iterable, retries: int = 1,
             describe: Callable[[Any], str] = repr) -> Iterator[Any]:
        """function(item) for every item, in completion order. A task whose worker dies is
        re-run by the scheduler; a task that raises is retried `retries` times. Past the
        `patience` (workers lost, none left, a task killing its workers) it ends in one
        WorkbenchError line naming the task (`describe(item)`) and the cause."""
        from dask.distributed import as_completed
        from distributed import KilledWorker

        futures = {self.client.submit(function, item, pure=False, retries=retries): item
                   for item in items}
        pending = as_completed(futures)
        watch = _Watch(self.client, self.patience)
        try:
            while not pending.is_empty():
                ready = pending.next_batch(block=False)
                if not ready:
                    watch.check(self._running(futures, describe))
                    time.sleep(self.patience.poll_s)
                    continue
                for future in ready:
                    try:
                        result = self._result(future, watch, futures, describe)
                    except KilledWorker:
                        raise WorkbenchError(
                            f"sweep stopped: {describe(futures[future])} killed its Dask worker "
                            f"{self.patience.task_kills} times (out of memory or a crash); "
                            f"{RESUME}") from None
                    future.release()
                    watch.progress()
                    yield result
        finally:
            try:
                self.client.cancel([f for f in futures if not f.done()])
            except Exception:  # noqa: BLE001 - a closing or lost scheduler: nothing to cancel
                pass

    def _result(self, future: Any, watch: _Watch, futures: dict,
                describe: Callable[[Any], str]) -> Any:
        """A finished future's result; one whose result was lost with its worker runs again,
        so it is awaited with the same patience as the others."""
        while True:
            try:
                return future.result(timeout=self.patience.poll_s)
            except TimeoutError:
                watch.check(self._running(futures, describe))

    def _running(self, futures: dict, describe: Callable[[Any], str]) -> str:
        """For a message: 'while running <the task a worker runs>', else 'with <the first
        unfinished task> waiting', '' when every task is done."""
        try:
            keys = {key for tasks in self.client.processing().values() for key in tasks}
        except Exception:  # noqa: BLE001 - a lost scheduler: the message says less
            keys = set()
        running = [item for future, item in futures.items() if future.key in keys]
        if running:
            return f"while running {describe(running[0])}"
        waiting = [item for future, item in futures.items() if not future.done()]
        return f"with {describe(waiting[0])} waiting" if waiting else ""

    def close(self) -> None:
        if not self._own:
            return
        with _deferred_interrupts():
            try:
                if self.cluster is not None:  # a worker lost from now on is not restarted
                    self.cluster.sync(_no_restarts, self.cluster)
            except Exception:  # noqa: BLE001 - a cluster already closing
                pass
            try:
                if self.client is not None:
                    self.client.close()
                if self.cluster is not None:
                    self.cluster.close()
            except Exception:  # noqa: BLE001 - closing a broken cluster must not hide the cause
                pass

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _no_restarts(cluster: Any) -> None:
    """Tell every nanny of `cluster` not to restart its worker any more (the cluster closes)."""
    for nanny in list(cluster.workers.values()):
        if hasattr(nanny, "close_gracefully"):
            nanny.close_gracefully(reason="workbench-sweep-closing")


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else ""


def executor(jobs: int = 1, scheduler: str | None = None, engine: str = "auto",
             connect_timeout_s: float = 20.0, patience: Patience | None = None,
             worker_log: str | None = None) -> LocalExecutor | DaskExecutor:
    """engine "local" (this process), "dask", or "auto": Dask when a scheduler is given
    (argument or DASK_SCHEDULER_ADDRESS) or jobs > 1, else local; connect_timeout_s: seconds
    to keep trying an external scheduler before a one-line refusal; `patience`: when a Dask
    sweep gives up on lost workers (`Patience`); `worker_log`: a file the embedded cluster's
    workers write their stderr to (default: the command's)."""
    scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if engine not in ("auto", "local", "dask"):
        raise WorkbenchError(f"unknown sweep engine {engine!r}; valid: auto, local, dask")
    if engine == "dask" or (engine == "auto" and (scheduler or jobs > 1)):
        return DaskExecutor(jobs, scheduler, connect_timeout_s=connect_timeout_s,
                            patience=patience or Patience(), worker_log=worker_log)
    return LocalExecutor()


def progress_bar(total: int, enabled: bool, unit: str):
    """A tqdm bar (a widget in notebooks) with elapsed time and ETA; a no-op when disabled."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, smoothing=0.1)
