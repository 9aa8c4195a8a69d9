"""Benchmark: bounded memory (issue 17). Prints figures.

`workbench explore` on one 8192-map 224x224 3x3 convolution (8192 input maps, pad 1) at batch
256 on `idsp`: its reduced tile grid holds 854 M tiles per schedule (about 64 GiB as one
table; before streaming it took 11.5 GB or a MemoryError, and pricing the whole grid of every
schedule took over an hour). The candidate sets are built in chunks (`tiling.candidates`), so
the peak resident memory stays bounded (target < 2 GB), and capped at the local memory asked
(idsp: 128 KiB double-buffered 16-bit, 32768 elements; the register-file traffic at 4 KiB):
the tiles that cannot fit are never enumerated (about 6 M of the 854 M per schedule are priced),
and the answer is the same. Runs the command under `/usr/bin/time -v` when it exists (else
the child's `resource.getrusage`), with an empty candidate cache so every set is built, and
prints peak resident memory (MB) and wall time (s). `--schedule` limits the plan's schedules
(repeatable), `--batch` the batch, `--maps` the input and output maps.

Run: .venv/bin/python benchmarks/bench_memory.py   (measured 2026-11-22 on a 2-core machine
shared with other jobs: wall 141 s, peak resident memory 760 MB)
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MB = 2048


def network_yaml(maps: int, folder: Path) -> Path:
    """The one-layer network: `maps` 224x224 maps in, a 3x3/1 pad-1 conv to `maps` maps."""
    path = folder / f"conv{maps}.yaml"
    path.write_text(f"name: conv{maps}\ninput: [{maps}, 224, 224]\nbatch: 1\nlayers:\n"
                    f"  - {{name: conv, type: conv, maps: {maps}, kernel: 3, stride: 1, "
                    "pad: 1}\n")
    return path


def run_measured(command: list[str], env: dict) -> tuple[float, float, int, str]:
    """(peak RSS in MB, wall seconds, exit code, stderr tail) of one command."""
    start = time.perf_counter()
    if shutil.which("time") or Path("/usr/bin/time").exists():
        done = subprocess.run(["/usr/bin/time", "-v", *command], env=env, text=True,
                              capture_output=True)
        wall = time.perf_counter() - start
        found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        peak_mb = int(found.group(1)) / 1024 if found else float("nan")
    else:
        done = subprocess.run(command, env=env, text=True, capture_output=True)
        wall = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    tail = [line for line in done.stderr.splitlines() if "\t" not in line][-3:]
    return peak_mb, wall, done.returncode, " | ".join(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--schedule", action="append")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        net = network_yaml(args.maps, Path(tmp))
        env = dict(os.environ, WORKBENCH_CACHE_DIR=str(Path(tmp) / "cache"))
        command = [sys.executable, "-m", "workbench.cli", "explore", str(net),
                   "--platform", "idsp", "--batch", str(args.batch)]
        for schedule in args.schedule or []:
            command += ["--schedule", schedule]
        peak_mb, wall, code, tail = run_measured(command, env)
    schedules = ", ".join(args.schedule) if args.schedule else "all five schedules"
    print(f"explore: {args.maps}-map 224x224 conv, batch {args.batch}, idsp, {schedules}")
    print(f"  exit code {code}, wall {wall:.0f} s, peak resident memory {peak_mb:.0f} MB "
          f"(target < {TARGET_MB} MB: {'met' if peak_mb < TARGET_MB else 'NOT met'})")
    if code:
        print(f"  stderr: {tail}")


if __name__ == "__main__":
    main()
