"""Benchmark of the C emitter (prints figures, asserts nothing).

VGG16's conv3_1 (56×56×256 outputs, 128 input maps, 3×3) on idsp, and on idsp with 4 cores:
the mapping explore picks, the seconds to emit, compile (cc -O2) and run the program (both
count modes: model and physical, on random codes, the output checked against quant.infer),
and per array the elements and DMA transfers the program measured beside the seed 000 trace's.
Run: .venv/bin/python benchmarks/bench_emit.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from workbench import layers, platforms
from workbench.emit import plan_mappings, run_mapping
from workbench.emit.compare import MODES


def main() -> None:
    net = layers.load_network("vgg16")
    for cores in (1, 4):
        plat = platforms.load_platform("idsp").replace(cores=cores)
        start = time.perf_counter()
        (m,) = [m for m in plan_mappings(net, plat) if m.layer.name == "conv3_1"]
        planned = time.perf_counter() - start
        parts = "; ".join(f"{s.cores}x {s.schedule} {s.tile.as_tuple()}" for s in m.shares)
        print(f"vgg16 conv3_1 on idsp, {cores} core(s): split {m.split}: {parts} "
              f"(TOx, TOy, TOc, TOn, TKc); plan {planned:.2f} s")
        with tempfile.TemporaryDirectory() as tmp:
            run = run_mapping(m, Path(tmp))
        s = run.seconds
        print(f"  emit {s['write']:.3f} s, compile {s['compile']:.2f} s, run both modes "
              f"{s['run']:.2f} s; warnings: {'none' if not run.warnings else run.warnings}; "
              f"output bit-exact: {run.exact}")
        table = run.table()
        print(f"  {'array':5} {'mode':8} {'measured elems':>15} {'model elems':>15} "
              f"{'measured DMA':>12} {'model DMA':>10}")
        for _, r in table.iterrows():
            print(f"  {r['array']:5} {r['counts']:8} {r['measured elements']:15,} "
                  f"{r['trace elements']:15,} {r['measured transfers']:12,} "
                  f"{r['trace transfers']:10,}")
        print(f"  counts equal the trace in {', '.join(MODES)} mode, core by core: "
              f"{run.agrees}")


if __name__ == "__main__":
    main()
