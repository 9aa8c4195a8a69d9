"""Benchmark: the greedy narrow-accumulator search on the real LeNet5-clone and MNIST digits.

Prints figures (no timed assertions):
- float inference time for 1,000 images;
- the full greedy search on 1,000 calibration images (16-bit accumulators, data bound, wrap),
  its median time over --repeats runs in one process and with one worker per core, and float
  vs fixed accuracy on the 1,000 held-out test images;
- accuracy versus accumulator width (12 … 32 bits) for the three bounds and both overflow
  modes, each searched on `--search-images` digits and scored on the held-out ones; written to
  out/quant_accuracy_vs_acc_bits_full.csv.
Run: .venv/bin/python benchmarks/bench_quant.py [--search-images 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from workbench import layers, quant
from workbench.quant import mnist

OUT = Path(__file__).resolve().parents[1] / "out"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--search-images", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--widths", type=int, nargs="+", default=[12, 14, 16, 18, 20, 24, 28, 32])
    args = parser.parse_args()
    net = layers.load_network("lenet5")
    params = quant.load_weights("lenet5_mnist.npz", net)
    (cx, cy), (tx, ty) = mnist.load("calib"), mnist.load("test")

    start = time.perf_counter()
    float_test = quant.accuracy(net, params, tx, ty)
    print(f"float inference, 1000 images: {time.perf_counter() - start:.2f} s, "
          f"accuracy {float_test:.2%}")
    for jobs in (1, None):
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            res = quant.search(net, params, cx, cx, cy, quant.SearchOptions(
                acc_bits=16, bound="data", overflow="wrap", jobs=jobs))
            seconds.append(time.perf_counter() - start)
        label = "1 process" if jobs == 1 else f"{os.cpu_count()} worker processes"
        print(f"greedy search, 1000 images, {len(res.space)} splits, {label}: median "
              f"{statistics.median(seconds):.1f} s of {args.repeats} "
              f"({', '.join(f'{s:.1f}' for s in seconds)})")
    fixed_test = quant.accuracy(net, params, tx, ty, res.config)
    print(f"held-out accuracy float {float_test:.2%} -> fixed {fixed_test:.2%} "
          f"(drop {100 * (float_test - fixed_test):.2f} points)")

    n = args.search_images
    start = time.perf_counter()
    table = quant.accuracy_table(net, params, cx[:n], cy[:n], tx, ty, args.widths)
    print(f"accuracy table: {len(table)} searches in {time.perf_counter() - start:.0f} s")
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "quant_accuracy_vs_acc_bits_full.csv", index=False)
    pivot = table.pivot_table(index="acc_bits", columns=["bound", "overflow"],
                              values="test_accuracy", dropna=False)
    print(f"held-out accuracy (float {float_test:.2%}) by accumulator bits, bound and overflow "
          f"mode (search on {n} digits; NaN: accumulator too narrow):")
    print((100 * pivot).round(1).to_string())


if __name__ == "__main__":
    main()
