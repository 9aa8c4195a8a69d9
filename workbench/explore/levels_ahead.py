"""A network's conv/fc layers on a platform with memory levels, priced before the plan's fusion
search (`explore.network_plan`): each distinct layer's best unkept mapping (`composed.best`),
with a progress bar if asked, in other processes when asked and when that pays.

Every share of a layer is blocked by an exact search that takes seconds on a new platform and
milliseconds once its answer is on disk (`explore.search_store`). So the first layer is priced
here; when it had to search (its searches were not all on disk), the rest are dealt out to
worker processes (`python -m workbench.explore.levels_worker`, one pickled list of layers on
its stdin, one pickled row per layer back on its stdout, read by one thread per worker). A
worker runs the same `composed.best` on the same inputs, so its row is the row this process
would compute; its searches land on disk for later sessions. A row that does not come back
(a worker that failed or was killed) is priced here, so a worker can only cost time. Workers
run in their own session (Ctrl-C reaches this process only) and are killed when the pricing
ends, however it ends.
"""

from __future__ import annotations

import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from workbench.explore import composed
from workbench.explore.search_store import SearchStore
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches
from workbench.platforms import Platform


def levels_row(layer: ConvLayer, platform: Platform, objective: str, kept: tuple,
               caches: Caches) -> dict[str, Any] | None:
    """A conv/fc layer on a platform with levels: its best mapping's plan row (None when
    nothing fits) with these kept maps (in, out)."""
    found = composed.best(layer, platform, objective, kept, caches)
    if found is None:
        return None
    return {k: v for k, v in found[1].items() if k not in ("edp", "bus_cycles")}


def unkept_job(job: tuple[int, ConvLayer, Platform, str]) -> tuple[int, dict[str, Any] | None]:
    """One worker job: (index, layer, platform, objective) → (index, its best unkept row)."""
    index, layer, platform, objective = job
    return index, levels_row(layer, platform, objective, (False, False), Caches())


def _start(jobs: list) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "workbench.explore.levels_worker"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    pickle.dump(jobs, process.stdin)
    process.stdin.close()
    return process


def _pump(process: subprocess.Popen, rows: queue.Queue) -> None:
    """Every (index, row) the worker writes, then None (its end, whatever it was)."""
    try:
        while True:
            rows.put(pickle.load(process.stdout))
    except Exception:  # EOF, or a worker killed mid-row: the rest is priced here
        rows.put(None)


def unkept_rows(layers: Sequence[tuple[int, ConvLayer]], platform: Platform, objective: str,
                caches: Caches, found: Callable[[int, dict[str, Any] | None], None],
                workers: int = 1, progress: bool = False) -> None:
    """found(index, row) for each (index, layer), its best unkept row; after the first, in
    up to `workers` processes when the first had to search and more than one layer is
    left. `progress`: a bar on stderr."""
    from tqdm import tqdm

    items = list(layers)
    with tqdm(total=len(items), unit="layer", desc="blocking layers over levels",
              leave=False, disable=not progress) as bar:
        if not items:
            return
        store = SearchStore.of(caches)
        searched = store.saved
        index, layer = items[0]
        found(index, levels_row(layer, platform, objective, (False, False), caches))
        bar.update()
        rest = items[1:]
        n = min(len(rest), workers)
        if store.saved == searched or n < 2:
            for index, layer in rest:
                found(index, levels_row(layer, platform, objective, (False, False), caches))
                bar.update()
            return
        jobs = [(i, layer, platform, objective) for i, layer in rest]
        workers_: list[subprocess.Popen] = []
        rows: queue.Queue = queue.Queue()
        pending, ended = dict(rest), 0
        try:
            for w in range(n):
                workers_.append(_start(jobs[w::n]))
                threading.Thread(target=_pump, args=(workers_[-1], rows), daemon=True).start()
            while ended < n:
                got = rows.get()
                if got is None:
                    ended += 1
                elif got[0] in pending:
                    del pending[got[0]]
                    found(*got)
                    bar.update()
        finally:
            for process in workers_:
                process.kill()
                process.wait()
        for index, layer in pending.items():  # a worker failed: priced here
            found(index, levels_row(layer, platform, objective, (False, False), caches))
            bar.update()
