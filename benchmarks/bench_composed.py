"""One plan on platforms with memory levels (`explore.composed`): how long a whole-network plan
takes cold (every share searched), in a new session once the searches are on disk, and warm
(the same session's caches), and how long the plan
app takes to re-plan after a platform edit, driven from Python.

`python benchmarks/bench_composed.py` prints LeNet-5 and seed 002's AlexNet on
`seed001_3level` (one core, three levels) and `shave_cmx` (12 cores, DDR + CMX + VRF, DMA
setups); `--vgg16` adds VGG16 on `seed001_3level` (minutes: every layer's shares are searched
exactly).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from workbench import explore, layers, platforms, ui
from workbench.memo import Caches

CASES = (("lenet5", "seed001_3level"), ("lenet5", "shave_cmx"),
         ("seed002_alexnet", "seed001_3level"), ("seed002_alexnet", "shave_cmx"))


def plan_times(network: str, platform: str, objective: str = "cycles"
               ) -> tuple[float, float, float]:
    """Seconds of `network_plan`: first (a new session, an empty disk cache: every share
    searched), again in a new session (the searches found on disk), warm (the same
    session's caches)."""
    net, plat = layers.load_network(network), platforms.load_platform(platform)
    times, before = [], os.environ.get("WORKBENCH_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="bench-composed-") as folder:
        os.environ["WORKBENCH_CACHE_DIR"] = folder
        caches = Caches()
        for session in (caches, Caches(), caches):
            start = time.perf_counter()
            explore.network_plan(net, plat, objective, caches=session)
            times.append(time.perf_counter() - start)
    if before is None:
        del os.environ["WORKBENCH_CACHE_DIR"]
    else:
        os.environ["WORKBENCH_CACHE_DIR"] = before
    return times[0], times[1], times[2]


def app_edits() -> list[float]:
    """Seconds per platform edit of the plan app on LeNet-5 / shave_cmx, each value new
    (cold) then the first again (warm)."""
    app = ui.plan_view(network="lenet5", platform="shave_cmx")
    times = []
    for field, value in (("cores", 8), ("dma_setup_cycles", 50.0), ("cores", 12),
                         ("dma_setup_cycles", 100.0)):
        start = time.perf_counter()
        app.panel.fields[field].value = value
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str]) -> None:
    cases = CASES + ((("vgg16", "seed001_3level"),) if "--vgg16" in argv else ())
    print("whole-network plan (objective cycles), s: first (empty disk cache) | a new "
          "session (searches on disk) | warm")
    for network, platform in cases:
        first, disk, warm = plan_times(network, platform)
        print(f"  {network:>15} on {platform:<15} {first:8.2f} | {disk:6.2f} | {warm:.3f}")
    edits = app_edits()
    print("plan app, LeNet-5 on shave_cmx, per platform edit (s): "
          + ", ".join(f"{t:.2f}" for t in edits)
          + f" (cores 8, DMA setup 50 new; cores 12, setup 100 seen before: median "
          f"{statistics.median(edits[2:]) * 1e3:.0f} ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
