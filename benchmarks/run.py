"""Run the benchmarks and keep what they print: `make bench` (or `python benchmarks/run.py
[NAME ...]`, names without `bench_` and `.py`). Each script's output is shown as it runs and
written, with the commit, whether the tree had uncommitted changes, the machine and the
date, to benchmarks/results/<UTC time>-<commit>-<host>.txt, so figures can be set beside
earlier runs. Nothing is timed here: the scripts print their own figures."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ("explore", "composed", "cores", "fusion", "grouped", "sweep", "sweep_browser",
         "quant", "simd", "codegen", "emit",
         "dataflow", "seed001_energy", "hierarchy", "torchvision_import", "hierarchy_reach",
         "hierarchy_gaps", "seed001_figs", "peers")  # peers: how to install ZigZag if absent


def _git(*args: str) -> str:
    run = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else "unknown"


def header() -> str:
    """Commit, tree state, machine and date, one per line."""
    dirty = "yes" if _git("status", "--porcelain") else "no"
    return "\n".join([
        f"commit: {_git('rev-parse', 'HEAD')} (uncommitted changes: {dirty})",
        f"machine: {platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}",
        f"python: {sys.version.split()[0]}",
        f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}"])


def main(names: list[str]) -> int:
    unknown = [n for n in names if not (HERE / f"bench_{n}.py").exists()]
    if unknown:
        print(f"benchmarks/run.py: unknown benchmark(s) {unknown}; known: "
              + ", ".join(p.stem.removeprefix("bench_") for p in sorted(HERE.glob("bench_*.py"))),
              file=sys.stderr)
        return 2
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"{stamp}-{_git('rev-parse', '--short', 'HEAD')}-{platform.node()}.txt"
    failed = []
    with path.open("w") as log:
        log.write(header() + "\n")
        for name in names or ORDER:
            banner = f"\n=== bench_{name}.py ===\n"
            print(banner, end="", flush=True)
            log.write(banner)
            proc = subprocess.Popen([sys.executable, str(HERE / f"bench_{name}.py")],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in proc.stdout:
                print(line, end="", flush=True)
                log.write(line)
            if proc.wait():
                failed.append(name)
                log.write(f"[exit status {proc.returncode}]\n")
    print(f"\nfigures written to {path}")
    if failed:
        print(f"benchmarks/run.py: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
