"""What a mapping report shows, computed in one call (the report notebook only displays it)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench import explore, layers, platforms
from workbench.layers.network import Network
from workbench.platforms import Platform
from workbench.tiling import SCHEDULES


@dataclass(frozen=True)
class ReportData:
    """Per-layer best solutions, Pareto solutions and buffer-size sweeps of one network."""

    net: Network
    platform: Platform
    per_layer: pd.DataFrame      # every layer's mapping (explore.network_plan)
    solutions: pd.DataFrame      # Pareto (throughput, CTC) solutions per layer and schedule
    sweep: pd.DataFrame          # per layer, schedule and buffer size: the fastest solution
    totals: dict[str, float]
    objective: str = "cycles"   # what chose each layer's mapping (explore.OBJECTIVES)


def build(network: str, platform: str, batch: int | None = None, memory_kb: float = 0,
          buffer_sizes_kb: Iterable[float] = (1, 4, 16, 64, 256, 1024),
          schedules: Iterable[str] = SCHEDULES, jobs: int = 1,
          objective: str = "cycles", cores: int = 0, fusion: str = "auto") -> ReportData:
    """Plan every layer of `network` on `platform` (memory_kb 0: the preset's; cores 0: the
    preset's), mappings ranked by `objective`, fusion "auto", "off" or "force"; Pareto
    solutions and buffer-size sweeps of the conv/fc layers on one core."""
    net = layers.load_network(network, batch=batch)
    overrides = {"local_mem_bytes": int(memory_kb * 1024)} if memory_kb else {}
    if cores:
        overrides["cores"] = int(cores)
    plat = platforms.load_platform(platform, **overrides)
    schedules = tuple(schedules)
    per_layer = explore.network_plan(net, plat, objective, fusion, schedules,
                                     compare_unfused=True)
    solutions = explore.explore_layers(net.tiled_layers(), plat, schedules,
                                       [plat.local_mem_bytes], keep="pareto", jobs=jobs)
    sizes = sorted({int(kb * 1024) for kb in buffer_sizes_kb} | {plat.local_mem_bytes})
    best = explore.explore_layers(net.tiled_layers(), plat, schedules, sizes, keep="best",
                                  objective=objective)
    sweep = pd.concat([explore.sweep_summary(layer, best[best.layer == layer.name], objective)
                       for layer in net.tiled_layers()], ignore_index=True)
    totals = explore.network_totals(per_layer, plat)
    totals["unfused_ext_accesses"] = per_layer.attrs["unfused_ext_accesses"]
    return ReportData(net, plat, per_layer, solutions, sweep, totals, objective)


def _mapping(per_layer: pd.DataFrame) -> pd.Series:
    """Tile TOx x TOy x TOc x TOn x TKc of conv/fc rows; chunk "rows r x maps m" of streamed
    rows; "folded" for an activation applied inside its producer."""
    out = []
    for row in per_layer.to_dict("records"):
        if row.get("folded"):
            out.append("folded")
        elif pd.notna(row.get("TOx", np.nan)):
            out.append("x".join(str(int(row[d])) for d in ("TOx", "TOy", "TOc", "TOn", "TKc")))
        else:
            out.append(f"{int(row['rows'])} rows x {int(row['maps'])} maps")
    return pd.Series(out, index=per_layer.index)


def _fused(per_layer: pd.DataFrame) -> pd.Series:
    if "fused_in" not in per_layer:
        return pd.Series("", index=per_layer.index)
    return pd.Series([" ".join(w for w, on in (("in", r["fused_in"] and not r["folded"]),
                                                ("out", r["fused_out"] and not r["folded"]),
                                                ("folded", r["folded"])) if on) or "-"
                      for r in per_layer.to_dict("records")], index=per_layer.index)


def per_layer_table(per_layer: pd.DataFrame) -> pd.DataFrame:
    """The readable per-layer table: cores and split, schedule, tile or chunk, fusion, bound,
    footprint, traffic, cycles, energy (network plans and single-core tables alike)."""
    chosen_by = per_layer["objective"] if "objective" in per_layer else "cycles"
    table = {"layer": per_layer["layer"]}
    if "kind" in per_layer:
        table |= {"kind": per_layer["kind"], "cores": per_layer["cores"],
                  "split": per_layer["split"]}
    table |= {"chosen by": chosen_by, "schedule": per_layer["schedule"],
              "tile / chunk": _mapping(per_layer)}
    if "fused_in" in per_layer:
        table |= {"fused": _fused(per_layer), "bound": per_layer["bound"]}
    table |= {
        "footprint_KB": (per_layer["footprint_bytes"] / 1024).round(1),
        "ext_accesses": per_layer["ext_accesses"], "dma": per_layer["dma_transfers"],
        "cycles": per_layer["cycles"].round(0).astype("int64"),
        "GOps/s": per_layer["throughput_gops"].round(2), "CTC": per_layer["ctc"].round(1),
        "util": per_layer["utilization"].round(3),
        "energy_uJ": (per_layer["energy_pj"] / 1e6).round(1)}
    return pd.DataFrame(table)


def headline(data: ReportData) -> str:
    p, t = data.platform, data.totals
    saved = 1 - t["ext_accesses"] / t["unfused_ext_accesses"] if t.get(
        "unfused_ext_accesses") else 0.0
    return (f"{data.net.name} (batch {data.net.batch}) on {p.name}: {p.cores} core(s), "
            f"{p.local_mem_bytes / 1024:g} KB local memory each, "
            f"{'double' if p.double_buffer else 'single'} buffered, {p.dma_setup_cycles:g}-cycle "
            f"DMA setup: {t['time_ms']:.3g} ms per batch, {t['throughput_gops']:.3g} GOps/s "
            f"of {p.peak_gops * p.cores:.3g} peak, {t['energy_pj'] / 1e6:.4g} µJ, "
            f"{t['ext_accesses']:,} external accesses ({saved:.1%} saved by fusion); each "
            f"layer's mapping chosen by least {data.objective}")


def summary_html(data: ReportData) -> str:
    """Headline and per-layer table as an HTML fragment."""
    return (f"<p><b>{html.escape(headline(data))}</b></p>"
            + per_layer_table(data.per_layer).to_html(index=False, border=0))
