"""The network-level table of seed 003's code versions: every conv layer's generated code,
run cycle by cycle (`simd.codegen.measure_layer`), one row per layer and version."""

from __future__ import annotations

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.platforms import Platform
from workbench.simd.codegen import VERSIONS, measure_layer


def network_codegen(net: Network, platform: Platform,
                    versions: tuple[str, ...] = VERSIONS) -> pd.DataFrame:
    """Per conv layer and version: programs, measured cycles, useful MACs, MAC/cycle and
    utilization of the 16 MACs, II and MII (ranges over the layer's programs), schedule
    length, list-scheduler conflicts, idle VMAC slots and packings found."""
    rows = []
    for layer in net.layers:
        if not layer.tiled or layer.kind != "conv":
            continue
        for version in versions:
            r = measure_layer(layer, platform, version)[0]
            rows.append({
                "layer": layer.name, "kernel": f"{layer.Kx}x{layer.Ky}/{layer.Sx}",
                "version": version, "programs": r.programs, "cycles": r.cycles,
                "macs": r.macs, "mac_per_cycle": r.mac_per_cycle,
                "utilization": r.utilization, "ii": _span(r.ii), "mii": _span(r.mii),
                "conflicts": r.conflicts, "idle_slots": r.idle_slots,
                "packed": f"{r.packed[0]}/{r.packed[1]}" if r.packed[1] else "-"})
    if not rows:
        raise WorkbenchError(f"network {net.name!r} has no conv layer to generate code for")
    return pd.DataFrame(rows)


def _span(values: tuple[int, ...]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"
