"""Progress in notebooks for work that takes seconds to minutes: a bar (tqdm.auto: a widget
in a notebook, a text bar on a terminal) over the steps of a table, and a status line the apps
set before a long callback and replace with the result (with the time it took).

The table functions return exactly what the engine returns for all steps at once; they only
run it one step at a time so the bar can move.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import ipywidgets as widgets
import numpy as np
import pandas as pd

from workbench import explore, quant
from workbench.hierarchy import interrupt
from workbench.hierarchy.codesign import Codesigner, Design, DesignSpace
from workbench.hierarchy.prefetch import designs_together
from workbench.layers.network import Network
from workbench.viz.units import fmt_seconds


def bar(items: Sequence, description: str, enabled: bool = True) -> Iterable:
    """`items` with a progress bar (steps done, elapsed, ETA); a widget in a notebook."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=description, disable=not enabled, leave=True)


@contextmanager
def busy(status: widgets.HTML, text: str) -> Iterator[dict]:
    """Show `text…` on an app's status line while the block runs; the yielded dict gets
    `seconds` when it ends (the caller writes the result line). Interrupted (the kernel's
    interrupt), the line says so and that the plots show the last result."""
    timing: dict[str, float] = {}
    status.value = f"<i>{html.escape(text)}…</i>"
    start = time.perf_counter()
    try:
        yield timing
    except KeyboardInterrupt:
        status.value = (f"<i>{html.escape(text)}: interrupted; the plots and tables still "
                        "show the last result (change a control to try again)</i>")
        raise
    finally:
        timing["seconds"] = time.perf_counter() - start


@contextmanager
def searching(status: widgets.HTML, text: str, counts: Callable[[], str],
              every_s: float = 0.5) -> Iterator[None]:
    """While the block's searches run (in this thread), rewrite the status line at most every
    `every_s` s (the first after `every_s`): `text`, `counts()` (what is done: '1 of 2 layers
    done'), the search under way's fraction of passes done and the time since the start. A
    search reports at every slice, which may take seconds: a timer thread rewrites the line
    meanwhile (the last fraction, the time going on), so that it never looks hung."""
    start = time.perf_counter()
    last, fraction, lock = [start], [0.0], threading.Lock()

    def show(now: float) -> None:
        last[0] = now
        status.value = (f"<i>{html.escape(text)}: {html.escape(counts())}; the search under "
                        f"way {fraction[0]:.0%} done; {fmt_seconds(now - start)}…</i>")

    def watcher(reported: float) -> None:
        with lock:
            fraction[0] = reported
            now = time.perf_counter()
            if now - last[0] >= every_s:
                show(now)

    done = threading.Event()

    def tick() -> None:  # the time goes on between reports
        while not done.wait(every_s):
            with lock:
                now = time.perf_counter()
                if not done.is_set() and now - last[0] >= every_s:
                    show(now)

    timer = threading.Thread(target=tick, daemon=True, name="workbench-status") \
        if every_s > 0 else None
    interrupt.watch(watcher)
    if timer is not None:
        timer.start()
    try:
        yield
    finally:
        interrupt.watch(None)
        done.set()
        if timer is not None:
            timer.join()


def took(seconds: float) -> str:
    """' (3.2 s)' for work over a second, else ''."""
    return f" ({fmt_seconds(seconds)})" if seconds >= 1 else ""


def traffic_table(layer_list: Sequence, memory_bytes: Sequence[int], models: Sequence[str],
                  precision, progress: widgets.IntProgress | None = None,
                  enabled: bool = True) -> pd.DataFrame:
    """`explore.traffic_table` one layer at a time: `progress` (an IntProgress of an app) or,
    without one, a tqdm bar counts the layers done."""
    frames = []
    steps = list(layer_list) if progress is not None else bar(list(layer_list),
                                                              "traffic per layer", enabled)
    if progress is not None:
        progress.max, progress.value = max(len(layer_list), 1), 0
    for layer in steps:
        frames.append(explore.traffic_table([layer], memory_bytes, models, precision))
        if progress is not None:
            progress.value += 1
    return pd.concat(frames, ignore_index=True)


def accuracy_table(net: Network, params: dict, search_x: np.ndarray, search_y: np.ndarray,
                   test_x: np.ndarray, test_y: np.ndarray, widths: Sequence[int],
                   bounds: Sequence[str] = quant.BOUNDS,
                   overflows: Sequence[str] = ("wrap", "saturate"),
                   enabled: bool = True) -> pd.DataFrame:
    """`quant.accuracy_table` one (width, bound, overflow) search at a time, with a bar."""
    cases = [(w, b, o) for w in widths for b in bounds for o in overflows]
    frames = [quant.accuracy_table(net, params, search_x, search_y, test_x, test_y, [w],
                                   bounds=(b,), overflows=(o,))
              for w, b, o in bar(cases, "accuracy per accumulator width", enabled)]
    return pd.concat(frames, ignore_index=True)


def designs(designer: Codesigner, spaces: Sequence[DesignSpace],
            enabled: bool = True, workers: int = 0) -> list[Design]:
    """`Codesigner.designs` of each space in turn, one hierarchy at a time with a bar (the
    feasible designs, in the same order); with `workers` worker processes pricing the list
    from its other end (`prefetch.designs_together`: the bar then leaps where they were)."""
    hierarchies = [h for space in spaces for h in space.gen_hierarchies()]
    if workers:
        together = designs_together(designer, hierarchies, workers)
        out = (next(together) for _ in bar(hierarchies, "hierarchies priced", enabled))
        try:
            return [d for d in out if d is not None]
        finally:
            together.close()
    out = (designer.design(h) for h in bar(hierarchies, "hierarchies priced", enabled))
    return [d for d in out if d is not None]
