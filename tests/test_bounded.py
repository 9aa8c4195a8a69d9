"""Bounded resources: each reproducer of issue 58 runs in a child process and must end within
its stated time and peak-memory budget (measured by `bounded.measure`) in a correct result or
a one-line refusal."""

from __future__ import annotations

from bounded import python

IMPORTS_MIB = 450  # python + numpy + pandas + the workbench, before any work (~330 MiB)


def test_network_plan_of_20k_layers_is_linear() -> None:
    """The plan was copied at every step: 20k layers took 5.5 GB. Now: memory beyond the
    imports grows by kilobytes per layer, and 20k trivial layers take seconds."""
    code = """
from workbench import explore, platforms
from workbench.layers.builder import build_layers
from workbench.layers.network import Network
for n in (2000, 20000):
    specs = [{"name": f"r{i}", "type": "relu"} for i in range(n)]
    net = Network("big", build_layers(specs, (1, 4, 4), 1, "big"))
    df = explore.network_plan(net, platforms.load_platform("idsp"))
    assert len(df) == n and list(df["layer"][:2]) == ["r0", "r1"], df.head()
    print(n, df["cycles"].sum())
"""
    run = python(code, timeout_s=60)
    assert run.rc == 0, run.err[-2000:]
    small, big = (float(line.split()[1]) for line in run.out.split("\n")[:2])
    assert abs(big / small - 10) < 1e-9  # alike layers cost alike: 10x the cycles
    assert run.peak_mib < IMPORTS_MIB + 200, run.peak_mib
    assert run.seconds < 45, run.seconds
