"""Seed 003's code versions of one layer side by side: the issue slots of one program per
version (a Gantt chart) and the layer's utilization measured by running each version."""

from __future__ import annotations

import pandas as pd

from workbench import viz
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.simd.codegen import VERSIONS, layout, measure_layer
from workbench.simd.codegen.program import gantt_frame


def codegen_view(layer: ConvLayer, platform: Platform, rows: int = 3,
                 program: int = 0) -> tuple[object, pd.DataFrame]:
    """(Gantt charts, table): program `program` of the layer (the one computing that output
    map, or the fused group holding it) laid out for `rows` output rows under each version,
    and per version the layer's measured cycles, MAC/cycle, utilization, II and MII."""
    frames, table = {}, []
    for version in VERSIONS:
        run, programs = measure_layer(layer, platform, version)
        shown = next(c for c in programs if program in c.outputs)
        label = version if version == "automatic" else f"+{version}"
        frames[f"{label} (output maps {', '.join(map(str, shown.outputs))})"] = \
            gantt_frame(layout(shown.schedule, rows))
        table.append({"version": label, "programs": run.programs, "cycles": run.cycles,
                      "mac_per_cycle": run.mac_per_cycle, "utilization": run.utilization,
                      "ii": shown.schedule.ii, "mii": shown.mii,
                      "idle_mac_slots": shown.schedule.idle_mac_slots(),
                      "conflicts": len(shown.schedule.conflicts)})
    chart = viz.issue_gantt(frames, title=f"{layer.name}: issue slots")
    return chart, pd.DataFrame(table)
