"""Benchmark: exact tiling exploration speed, and the speed-up over brute force.

Prints figures; it asserts nothing about time (performance targets are read, not tested):
- VGG16, AlexNet-Oxford102 and LeNet5 conv+fc layers x 5 schedules x 13 buffer sizes
  (1 KB ... 4 MB) on the idsp preset, best tile per (layer, schedule, size);
- brute force (every tile, same vectorized model) against the reduced exact search on a
  mid-size layer, with the two optima compared.
Run: .venv/bin/python benchmarks/bench_explore.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from workbench import explore, layers, platforms, tiling
from workbench.perf import estimate_array, local_accesses

SIZES = [2 ** k for k in range(10, 23)]  # 1 KB ... 4 MB


def network_exploration(name: str, plat, jobs: int) -> None:
    net = layers.load_network(name)
    start = time.perf_counter()
    df = explore.explore_layers(net.tiled_layers(), plat, tiling.SCHEDULES, SIZES, keep="best",
                                jobs=jobs)
    seconds = time.perf_counter() - start
    print(f"{name:18s} {len(net.tiled_layers()):2d} layers x 5 schedules x {len(SIZES)} sizes: "
          f"{len(df):5d} optima in {seconds:6.2f} s  (jobs={jobs})")


def brute_versus_reduced(layer, plat, schedule: str, memory: int) -> None:
    scale = plat.elem_bytes * (2 if plat.double_buffer else 1)
    local_accesses(layer, plat.register_file_bytes, plat.elem_bytes)  # cache for both sides

    def search(reduced: bool) -> tuple[float, int, float]:
        start = time.perf_counter()
        best, evaluated = np.inf, 0
        for tiles in tiling.gen_tiles(layer, memory / scale, reduced=reduced):
            best = min(best, float(estimate_array(layer, tiles, schedule, plat)["cycles"].min()))
            evaluated += len(tiles)
        return best, evaluated, time.perf_counter() - start

    full = np.prod(tiling.dims(layer))
    slow_best, slow_n, slow_s = search(reduced=False)
    fast_best, fast_n, fast_s = search(reduced=True)
    print(f"{layer.name} (batch {layer.On}), {schedule}, {memory // 1024} KB: brute force "
          f"{full:,} tiles ({slow_n:,} fit) in {slow_s:.2f} s; reduced {fast_n:,} in "
          f"{fast_s * 1e3:.1f} ms; speed-up {slow_s / fast_s:,.0f}x; optima "
          f"{slow_best:,.1f} vs {fast_best:,.1f} cycles: "
          f"{'identical' if slow_best == fast_best else 'DIFFER'}")


def scalar_brute_force_rate(layer, plat, schedule: str, sample: int = 2000) -> float:
    """Per-tile Python loop (appendix C style): tiles per second, timed on a sample."""
    from workbench import perf

    rng = np.random.default_rng(0)
    tiles = [tiling.Tile(*(int(rng.integers(1, d + 1)) for d in tiling.dims(layer)))
             for _ in range(sample)]
    start = time.perf_counter()
    for tile in tiles:
        perf.estimate(layer, tile, schedule, plat)
    return sample / (time.perf_counter() - start)


def main() -> None:
    plat = platforms.load_platform("idsp")
    jobs = min(2, os.cpu_count() or 1)
    print(f"machine: {os.cpu_count()} cores")
    for name in ("vgg16", "alexnet_oxford102", "lenet5"):
        network_exploration(name, plat, jobs)
    network_exploration("vgg16", plat, 1)
    layer = layers.load_network("alexnet_oxford102", batch=8)["conv3"]
    brute_versus_reduced(layer, plat, "inter_kc", 128 * 1024)
    brute_versus_reduced(layers.load_network("lenet5", batch=8)["conv2"], plat, "inter_oxoyon",
                         64 * 1024)
    rate = scalar_brute_force_rate(layer, plat, "inter_kc")
    full = np.prod(tiling.dims(layer))
    print(f"plain per-tile loop: {rate:,.0f} tiles/s, so every tile of {layer.name} "
          f"({full:,}) would take ~{full / rate / 3600:.1f} h")


if __name__ == "__main__":
    main()
