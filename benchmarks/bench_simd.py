"""Benchmark and comparison for the SIMD simulator (prints figures, asserts nothing).

1. Simulated lane-MACs per second on large tiles (bit-exact execution plus counts).
2. Seed 000 tables 7.3/7.5: for the printed manual-mapping tiles (batch 8, idsp preset), the
   simulator's compute cycles and vector transfers for the whole layer, under the seed's
   vectorization (LeNet5 conv1 over ox, the other layers over oc, no unrolling beyond the
   kernel window, accumulators kept live) and under the simulator's best plan, beside the
   printed numbers.
Run: .venv/bin/python benchmarks/bench_simd.py
"""

from __future__ import annotations

import time

import numpy as np

from workbench import layers, platforms, simd, tiling

IDSP = platforms.load_platform("idsp")
TABLE_7_3 = {"conv1": ((28, 28, 32, 1, 1), 272544, 52224, "ox"),
             "conv2": ((2, 14, 32, 1, 32), 3033632, 632912, "oc"),
             "fc3": ((1, 1, 64, 8, 448), 421792, 253680, "oc"),
             "fc4": ((1, 1, 10, 8, 512), 5712, 2569, "oc")}
TABLE_7_5 = {"conv1": ((55, 2, 96, 1, 1), 33006624, 5345760, "oc"),
             "conv2": ((27, 3, 64, 1, 16), 61494336, 8904960, "oc"),
             "conv3": ((13, 13, 64, 1, 16), 45742080, 9518080, "oc"),
             "conv4": ((13, 13, 64, 1, 16), 35001216, 7089792, "oc"),
             "conv5": ((13, 13, 64, 1, 16), 23520000, 5070592, "oc"),
             "fc6": ((1, 1, 64, 8, 462), 9978880, 5916800, "oc"),
             "fc7": ((1, 1, 64, 8, 456), 4414464, 2629632, "oc"),
             "fc8": ((1, 1, 64, 8, 456), 137394, 82180, "oc")}


def throughput() -> None:
    vgg = layers.load_network("vgg16")
    for name, tile in (("conv3_1", tiling.Tile(56, 56, 64, 1, 32)),
                       ("conv4_2", tiling.Tile(28, 28, 128, 1, 64))):
        layer = vgg[name]
        start = time.perf_counter()
        r = simd.simulate(layer, tile, IDSP, vector_dim="ox")
        seconds = time.perf_counter() - start
        print(f"{name} tile {tile.as_tuple()}: {r.counts.issued_lane_macs:,} lane-MACs in "
              f"{seconds:.2f} s = {r.counts.issued_lane_macs / seconds:.2e} lane-MACs/s")


def compare(net_name: str, table: dict) -> None:
    net = layers.load_network(net_name, batch=8)
    print(f"\n{net_name} (batch 8, idsp): printed manual mapping vs simulator")
    print(f"{'layer':6s} {'tile':>20s} {'printed cycles':>15s} {'sim cycles':>12s} "
          f"{'best cycles':>12s} {'printed vec':>12s} {'sim vec':>12s} {'best vec':>12s}")
    for name, (tile_t, cycles, vectors, dim) in table.items():
        layer = net[name]
        tile = tiling.Tile(*tile_t)
        n_tiles = int(np.prod([-(-e // s) for e, s in zip(tiling.dims(layer), tile_t,
                                                           strict=True)])) * layer.groups
        seed_plan = simd.counts(layer, tile, IDSP, simd.Plan(dim, 1))
        best = simd.counts(layer, tile, IDSP, simd.best_plan(layer, tile, IDSP))
        print(f"{name:6s} {str(tile_t):>20s} {cycles:15,d} {seed_plan.cycles * n_tiles:12,.0f} "
              f"{best.cycles * n_tiles:12,.0f} {vectors:12,d} "
              f"{seed_plan.vector_transfers * n_tiles:12,d} {best.vector_transfers * n_tiles:12,d}")


if __name__ == "__main__":
    throughput()
    compare("lenet5", TABLE_7_3)
    compare("alexnet_oxford102", TABLE_7_5)
