"""Benchmark of seed 003's code generator (prints figures, asserts nothing).

For the face and speed-sign detectors: seconds to compile each code version of every layer
(task graphs, list and modulo scheduling, packing, fusion) and to run the distinct programs
cycle by cycle over one strip, the simulated cycles per second, and the measured MAC/cycle
beside seed 003 table 5's automatic figures (MAC/instruction of 16).
Run: .venv/bin/python benchmarks/bench_codegen.py
"""

from __future__ import annotations

import time

from workbench import layers, platforms
from workbench.simd import codegen

NVE = platforms.load_platform("nve")
TABLE_5 = {("face_detector", "L1"): 13.39, ("face_detector", "L2"): 12.06,
           ("face_detector", "L3"): 15.53, ("face_detector", "L4"): 4.87,
           ("speed_sign_detector", "L1"): 13.39, ("speed_sign_detector", "L2"): 13.6,
           ("speed_sign_detector", "L3"): 15.88, ("speed_sign_detector", "L4"): 4.9}


def main() -> None:
    print(f"{'network':20} {'layer':5} {'version':9} {'compile s':>9} {'run s':>7} "
          f"{'sim cycles/s':>12} {'MAC/cycle':>9} {'table 5':>7}")
    total = 0.0
    for net_name in ("face_detector", "speed_sign_detector"):
        for layer in layers.load_network(net_name).layers:
            for version in codegen.VERSIONS:
                start = time.perf_counter()
                programs = codegen.compile_layer(layer, NVE, version)
                compiled = time.perf_counter() - start
                start = time.perf_counter()
                run, _ = codegen.measure_layer(layer, NVE, version)
                measured = time.perf_counter() - start
                distinct = {c.shape.inputs: c for c in programs}.values()
                simulated = sum(codegen.layout(c.schedule, layer.Oy).cycles for c in distinct)
                total += compiled + measured
                seed = TABLE_5[(net_name, layer.name)] if version == "fusion" else None
                print(f"{net_name:20} {layer.name:5} {version:9} {compiled:9.2f} "
                      f"{measured:7.2f} {simulated / measured:12,.0f} "
                      f"{run.mac_per_cycle:9.2f} {seed if seed else '':>7}")
    print(f"total {total:.1f} s (measure_layer compiles again: compile time counted twice)")


if __name__ == "__main__":
    main()
