"""Benchmark: a 10,000-case hardware sweep on Dask. Prints figures, asserts no time.

The grid: the zoo's small CNNs × two platform presets × memory sizes × objectives × bus
widths × DMA setup costs (10,000 cases by default), each case the whole-network plan without
fusion (`fusion: [off]`; with fusion a case costs 3-5× more, the per-case overhead below is
the same). The candidate sets are built once first (one case per network and platform), so
both runs below start warm from the on-disk cache.

1. Wall time on an embedded LocalCluster of 1 and of 2 worker processes, each into a fresh
   sweep directory, and the scaling ratio.
2. Overhead per case: wall × workers − time inside the cases, over the cases (scheduling,
   serialization, row commits, progress).
3. The parts of that overhead measured apart: Dask round trips of empty tasks per second,
   and atomic row commits per second on this filesystem.
4. A projection for 100 workers on paper, and what limits it.
Run: .venv/bin/python benchmarks/bench_sweep.py [cases]  (about 22 minutes on 2 cores at
10,000 cases: 863 s on one worker, 423 s on two; a smaller count gives a quick look)
"""

from __future__ import annotations

import itertools
import math
import sys
import tempfile
import time
from pathlib import Path

NETWORKS = ["lenet5", "cifar10_quick", "face_detector", "speed_sign_detector", "resnet20"]
PLATFORMS = ["idsp", "shave"]
OBJECTIVES = ["cycles", "energy", "accesses", "edp"]
MEMORY_KB = [16, 24, 32, 48, 64, 96, 128, 192, 256, 512]
BUS = [1, 2, 4, 8, 16]
DMA_SETUP = [50, 100, 150, 200, 300]
FUSION = ["off"]


def grid_for(cases: int):
    from workbench import sweep

    full = sweep.Grid(networks=NETWORKS, platforms=PLATFORMS, memory_kb=MEMORY_KB,
                      objectives=OBJECTIVES, fusion=FUSION, overrides={"bus_elems_per_cycle": BUS,
                                                        "dma_setup_cycles": DMA_SETUP})
    total = len(sweep.cases(full))
    if cases >= total:
        return full
    # fewer cases: shrink the override axes first, keeping every network and platform
    for bus, setup, kb in itertools.product(range(1, 6), range(1, 6), range(1, 11)):
        grid = sweep.Grid(networks=NETWORKS, platforms=PLATFORMS, memory_kb=MEMORY_KB[:kb],
                          objectives=OBJECTIVES, fusion=FUSION,
                          overrides={"bus_elems_per_cycle": BUS[:bus],
                                     "dma_setup_cycles": DMA_SETUP[:setup]})
        if len(sweep.cases(grid)) >= cases:
            return grid
    return full


def warm(grid) -> float:
    from workbench import sweep

    start = time.perf_counter()
    seen = set()
    for case in sweep.cases(grid):
        if (case.network, case.platform) not in seen:
            seen.add((case.network, case.platform))
            sweep.evaluate_case(case, grid)
    return time.perf_counter() - start


def run_on(grid, jobs: int) -> dict:
    from workbench import sweep

    with tempfile.TemporaryDirectory() as out, sweep.executor(jobs, engine="dask") as pool:
        start = time.perf_counter()
        frame = sweep.run(grid, Path(out) / "sweep", pool=pool)
        wall = time.perf_counter() - start
        attrs = dict(frame.attrs)
    return {"wall": wall, "rows": len(frame), "failed": len(attrs["failures"]),
            "compute": attrs["compute_s"], "tasks": attrs["tasks"], "batch": attrs["batch"],
            "workers": attrs["workers"]}


def _noop(x: int) -> int:
    return x


def scheduler_rate(tasks: int = 2000) -> float:
    """Empty tasks per second through submit + as_completed on 2 local workers."""
    from dask.distributed import Client, LocalCluster, as_completed

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.gather(client.map(_noop, range(100), pure=False))  # connections up
        start = time.perf_counter()
        futures = [client.submit(_noop, i, pure=False) for i in range(tasks)]
        for _future in as_completed(futures):
            pass
        return tasks / (time.perf_counter() - start)


def write_rate(rows: int = 3000) -> float:
    from workbench.sweep import SweepStore

    row = {"case_id": "x", "network": "lenet5", "platform": "idsp", "cycles": 1.5e6,
           "energy_uj": 12.25, "schedules_used": "inter_oc,intra"}
    with tempfile.TemporaryDirectory() as out:
        store = SweepStore(out)
        store.prepare()
        start = time.perf_counter()
        for i in range(rows):
            store.commit_row(f"{i:016x}", row)
        return rows / (time.perf_counter() - start)


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    grid = grid_for(cases)
    from workbench import sweep

    n = len(sweep.cases(grid))
    print(f"sweep benchmark: {n} cases = {len(grid.networks)} networks x "
          f"{len(grid.platforms)} platforms x {len(grid.memory_kb)} memory sizes x "
          f"{len(grid.objectives)} objectives x "
          + " x ".join(f"{len(v)} {k}" for k, v in grid.overrides.items()))
    print(f"  candidate sets warmed in {warm(grid):.1f} s (one case per network and platform)")
    runs = {}
    for jobs in (1, 2):
        runs[jobs] = r = run_on(grid, jobs)
        per_case = r["compute"] / r["rows"] * 1e3
        overhead = (r["wall"] * r["workers"] - r["compute"]) / n * 1e3
        print(f"  {jobs} worker(s): wall {r['wall']:.1f} s, {r['rows']} rows, {r['failed']} "
              f"failed, {r['tasks']} tasks of {r['batch']} cases; {per_case:.1f} ms per case "
              f"inside the case, overhead {overhead:.2f} ms per case")
    ratio = runs[1]["wall"] / runs[2]["wall"]
    print(f"  scaling 1 -> 2 workers: {ratio:.2f}x (2.00x is linear; this box has 2 cores, "
          "and the client process shares them)")
    rate = scheduler_rate()
    writes = write_rate()
    print(f"  Dask round trips: {rate:.0f} empty tasks/s; row commits: {writes:.0f} rows/s "
          "from one process")
    compute = runs[1]["compute"] / runs[1]["rows"]
    workers = 100
    size = sweep.engine.batch_size(n, workers)
    tasks = math.ceil(n / size)
    limits = {"compute": n * compute / workers, "scheduler": tasks / rate,
              "client row writes (workers without the directory)": n / writes}
    bound = max(limits, key=limits.get)
    print(f"  projection, {workers} workers (on paper): {tasks} tasks of {size} cases; "
          + "; ".join(f"{k} {v:.1f} s" for k, v in limits.items())
          + f" -> about {limits[bound]:.1f} s, limited by {bound}. Workers that share the "
          "directory commit in parallel, which removes the write limit.")


if __name__ == "__main__":
    main()
