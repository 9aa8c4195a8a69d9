"""Benchmark: depthwise convolutions tiled across groups (issue 15, item 3). Prints figures.

MobileNet-v2's 17 depthwise 3x3 layers on `idsp` at 128 KB local memory (double buffered,
batch 1 unless --batch), best tile and schedule per layer by cycles:
- before: every tile inside one group (TOc ≤ Oc/groups = 1), i.e. the layer costed as
  `groups` independent one-map convolutions, each tiled and DMA'd on its own;
- after: tiles may span whole groups (TOc = g maps, g·1 input maps per input tile).
Both are exact optima over the reduced tile grid (`tiling.gen_tiles`, `perf.estimate_array`);
"after" is checked against `explore.best_mappings` (candidate sets).

The network is the zoo's `mobilenet_v2` when it loads, else the shipped structure-only
`data/onnx/mobilenet_v2.onnx`, else the depthwise layers built here from torchvision's
published architecture (inverted-residual settings t, c, n, s; 224x224 input).
Run: .venv/bin/python benchmarks/bench_grouped.py [--batch N]   (about 10-30 s)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1))   # torchvision MobileNetV2 (t, c, n, s)


def built_depthwise(batch: int) -> list:
    """The 17 depthwise 3x3 convs of MobileNet-v2 on 224x224 (pad 1, real input sizes)."""
    from workbench.layers import ConvLayer

    out, channels, size = [], 32, 112   # after the stem conv 3x3/2
    for t, c, n, s in SETTINGS:
        for i in range(n):
            stride, hidden = (s if i == 0 else 1), channels * t
            o = (size + 2 - 3) // stride + 1
            out.append(ConvLayer(name=f"dw{len(out) + 1}", Ox=o, Oy=o, Oc=hidden, On=batch,
                                 Kx=3, Ky=3, Kc=1, Sx=stride, Sy=stride, Px=1, Py=1,
                                 Px_end=(o - 1) * stride + 2 - size,
                                 Py_end=(o - 1) * stride + 2 - size, groups=hidden))
            channels, size = c, o
    return out


def depthwise_layers(batch: int) -> tuple[list, str]:
    """MobileNet-v2's depthwise layers and where they came from."""
    from workbench import layers
    from workbench.errors import WorkbenchError

    root = Path(__file__).resolve().parents[1]
    for source in ("mobilenet_v2", str(root / "data" / "onnx" / "mobilenet_v2.onnx")):
        try:
            net = layers.load_network(source, batch=batch)
        except (WorkbenchError, OSError, ImportError):
            continue
        dw = [lay for lay in net.tiled_layers() if lay.groups > 1 and lay.groups == lay.Oc]
        if len(dw) == 17:
            return dw, f"load_network({Path(source).name!r})"
    return built_depthwise(batch), "built from torchvision's published architecture"


def best(layer, plat, within_group: bool) -> dict:
    """Least-cycles (tile, schedule) over the reduced grid; within_group keeps TOc ≤ Oc/G."""
    from workbench import perf, tiling

    scale = plat.elem_bytes * (2 if plat.double_buffer else 1)
    top = None
    for tiles in tiling.gen_tiles(layer, plat.local_mem_bytes / scale):
        if within_group:
            tiles = tiles[tiles[:, 2] <= layer.Oc // layer.groups]
        if not len(tiles):
            continue
        for schedule in tiling.SCHEDULES:
            c = tiling.counts_array(layer, tiles, schedule)
            r = perf.estimate_array(layer, tiles, schedule, plat, counted=c)
            ext = c["in_accesses"] + c["w_accesses"] + c["out_accesses"]
            order = np.lexsort((c["bin"] + c["bw"] + c["bout"], ext, r["cycles"]))
            i = int(order[0])
            row = {"cycles": float(r["cycles"][i]), "dma": int(c["dma_transfers"][i]),
                   "ext": int(ext[i]), "schedule": schedule, "tile": tuple(tiles[i].tolist())}
            key = (row["cycles"], row["ext"])
            if top is None or key < (top["cycles"], top["ext"]):
                top = row
    return top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    from workbench import explore, platforms

    plat = platforms.load_platform("idsp", local_mem_bytes=128 * 1024)
    start = time.perf_counter()
    dw, source = depthwise_layers(args.batch)
    print(f"MobileNet-v2 depthwise layers ({source}), idsp, 128 KB, double buffer "
          f"{plat.double_buffer}, batch {args.batch}, best by cycles")
    head = (f"{'layer':>5} {'maps':>5} {'out':>4} {'s':>2} | {'before: DMA':>12} "
            f"{'cycles':>11} {'tile':>20} | {'after: DMA':>11} {'cycles':>11} "
            f"{'tile':>20} {'sched':>17} | {'DMA x':>6} {'cyc x':>6}")
    print(head)
    print("-" * len(head))
    totals = np.zeros(4)
    for i, layer in enumerate(dw, 1):
        before, after = best(layer, plat, True), best(layer, plat, False)
        check = explore.best_mappings([layer], plat, [plat.local_mem_bytes])
        assert abs(float(check["cycles"].iloc[0]) - after["cycles"]) <= 1e-6 * after["cycles"]
        totals += (before["dma"], before["cycles"], after["dma"], after["cycles"])
        print(f"{'dw' + str(i):>5} {layer.Oc:>5} {layer.Ox:>4} {layer.Sx:>2} | "
              f"{before['dma']:>12,} {before['cycles']:>11,.0f} {str(before['tile']):>20} | "
              f"{after['dma']:>11,} {after['cycles']:>11,.0f} {str(after['tile']):>20} "
              f"{after['schedule']:>17} | {before['dma'] / after['dma']:>6.1f} "
              f"{before['cycles'] / after['cycles']:>6.2f}")
    print("-" * len(head))
    print(f"{'total':>18} | {totals[0]:>12,.0f} {totals[1]:>11,.0f} {'':>20} | "
          f"{totals[2]:>11,.0f} {totals[3]:>11,.0f} {'':>38} | "
          f"{totals[0] / totals[2]:>6.1f} {totals[1] / totals[3]:>6.2f}")
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
