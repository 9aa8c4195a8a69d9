"""Benchmark: the sweep results browser on 100,000 cases. Prints figures, asserts no time.

A synthetic results frame (the columns `sweep.collect` returns: 5 networks × 4 platforms ×
10 memory sizes × 2 accumulator widths × 2 objectives × 2 fusion modes × 4 core counts ×
4 lane counts, each case once or more, metrics drawn from a seeded model with noise) is given
to `ui.sweep_browser(frame=...)` with its view built (the bokeh document the notebook shows).
Then, driven in Python as a notebook user would:
1. filter changes (one axis narrowed or widened at a time, 40 steps),
2. metric changes (x, y, colour menus, 30 steps),
and for each the wall time of the whole callback (mask, Pareto front, thinning, source
update) in ms, median and max, and the number of points sent to bokeh (front + thinned).
3. The static page for the same 100,000 cases (`report.sweep_page.sweep_view`): build time and
   HTML size (it holds every case; its JavaScript does the same reduction in the browser).
Run: .venv/bin/python benchmarks/bench_sweep_browser.py (about half a minute)
"""

from __future__ import annotations

import itertools
import statistics
import time

import numpy as np
import pandas as pd

N_ROWS = 100_000
AXES = ["network", "platform", "memory_kb", "acc_bits", "objective", "fusion", "cores",
        "simd_lanes"]


def synthetic_frame(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    """n cases over the axes above with plausible, noisy metrics (not a model result)."""
    rng = np.random.default_rng(seed)
    values = {"network": ["lenet5", "cifar10_quick", "alexnet", "vgg16", "zfnet"],
              "platform": ["idsp", "nve", "shave", "hwc"],
              "memory_kb": [2.0 ** k for k in range(3, 13)], "acc_bits": [16, 32],
              "objective": ["cycles", "energy"], "fusion": ["auto", "off"],
              "cores": [1, 2, 4, 8], "simd_lanes": [8, 16, 32, 64]}
    combos = list(itertools.product(*values.values()))
    picked = rng.integers(0, len(combos), n)
    frame = pd.DataFrame([combos[i] for i in picked], columns=list(values))
    work = frame["network"].map({"lenet5": 1, "cifar10_quick": 3, "alexnet": 50, "vgg16": 300,
                                 "zfnet": 60}).to_numpy(float)
    speed = frame["cores"] * frame["simd_lanes"] * np.log2(frame["memory_kb"] + 1)
    cycles = work * 1e6 / speed * rng.lognormal(0, 0.3, n)
    energy = work * 1e3 * (1 + 4 / np.log2(frame["memory_kb"] + 1)) * rng.lognormal(0, 0.2, n)
    frame.insert(0, "case_id", [f"{i:016x}" for i in rng.permutation(n)])
    frame["batch"] = 8
    frame["cycles"] = cycles
    frame["time_ms"] = cycles / 450e3
    frame["throughput_gops"] = work * 2e6 / frame["time_ms"] / 1e6
    frame["energy_uj"] = energy
    frame["conv_fc_energy_uj"] = energy * 0.95
    frame["ext_accesses"] = (work * 1e5 / np.sqrt(frame["memory_kb"])).astype(np.int64)
    frame["dma_transfers"] = (frame["ext_accesses"] // 500).astype(np.int64)
    frame["most_cores_used"] = frame["cores"]
    frame["io_bound_layers"] = rng.integers(0, 5, n)
    frame["schedules_used"] = "inter_kc"
    return frame


def timed(action, app) -> tuple[float, int]:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1e3, app.drawn


def report(name: str, runs: list[tuple[float, int]]) -> None:
    ms = [t for t, _ in runs]
    points = [p for _, p in runs]
    print(f"{name:18s} {len(runs):3d} interactions: median {statistics.median(ms):7.1f} ms, "
          f"max {max(ms):7.1f} ms; points sent: median {int(statistics.median(points))}, "
          f"max {max(points)}")


def main() -> None:
    from workbench import ui
    from workbench.report import sweep_page

    frame = synthetic_frame()
    start = time.perf_counter()
    app = ui.sweep_browser(frame=frame, axes=AXES)
    app.view  # noqa: B018 - the bokeh document is built, as in a notebook
    print(f"{len(frame):,} cases, {len(AXES)} axes; app built in "
          f"{(time.perf_counter() - start) * 1e3:.0f} ms, {app.drawn} points drawn")
    rng = np.random.default_rng(1)
    filters = []
    for step in range(40):
        axis = AXES[(step // 2) % len(AXES)]  # narrow one axis, then widen it again
        labels = [lab for lab, _ in app.filters[axis].options]
        if step % 2:
            keep = labels  # widen again
        else:
            keep = list(rng.choice(labels, size=max(1, len(labels) // 2), replace=False))
        # set_filter matches values by their label, so the labels themselves will do
        filters.append(timed(lambda a=axis, v=keep: app.set_filter(a, v), app))
    report("filter change", filters)
    metrics = ["time_ms", "energy_uj", "throughput_gops", "cycles", "ext_accesses",
               "memory_kb"]
    colours = ["memory_kb", "network", "cores", "", "energy_uj"]
    changes = []
    for step in range(30):
        x, y = rng.choice(metrics, size=2, replace=False)
        colour = colours[step % len(colours)]
        changes.append(timed(lambda x=x, y=y, c=colour:
                             app.set_metrics(x=str(x), y=str(y), color=c), app))
    report("metric change", changes)
    select = timed(lambda: app.select(app.points.data["case_id"][0]), app)
    print(f"select a case      (no sweep directory: row only) {select[0]:.1f} ms")
    start = time.perf_counter()
    from workbench.viz.common import standalone_html

    html = standalone_html(sweep_page.sweep_view(frame, AXES), "bench")
    print(f"static page of all {len(frame):,} cases: {(time.perf_counter() - start):.1f} s, "
          f"{len(html) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
