"""What a mapping report shows, computed in one call (the report notebook only displays it)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

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
    per_layer: pd.DataFrame      # best solution per layer at the platform's memory
    solutions: pd.DataFrame      # Pareto (throughput, CTC) solutions per layer and schedule
    sweep: pd.DataFrame          # per layer, schedule and buffer size: the fastest solution
    totals: dict[str, float]
    objective: str = "cycles"   # what chose each layer's mapping (explore.OBJECTIVES)


def build(network: str, platform: str, batch: int | None = None, memory_kb: float = 0,
          buffer_sizes_kb: Iterable[float] = (1, 4, 16, 64, 256, 1024),
          schedules: Iterable[str] = SCHEDULES, jobs: int = 1,
          objective: str = "cycles") -> ReportData:
    """Explore every conv/fc layer of `network` on `platform` (memory_kb 0: the preset's),
    best mappings ranked by `objective`."""
    net = layers.load_network(network, batch=batch)
    overrides = {"local_mem_bytes": int(memory_kb * 1024)} if memory_kb else {}
    plat = platforms.load_platform(platform, **overrides)
    schedules = tuple(schedules)
    per_layer = explore.explore_network(net, plat, schedules, objective=objective)
    solutions = explore.explore_layers(net.tiled_layers(), plat, schedules,
                                       [plat.local_mem_bytes], keep="pareto", jobs=jobs)
    sizes = sorted({int(kb * 1024) for kb in buffer_sizes_kb} | {plat.local_mem_bytes})
    best = explore.explore_layers(net.tiled_layers(), plat, schedules, sizes, keep="best",
                                  objective=objective)
    sweep = pd.concat([explore.sweep_summary(layer, best[best.layer == layer.name], objective)
                       for layer in net.tiled_layers()], ignore_index=True)
    return ReportData(net, plat, per_layer, solutions, sweep,
                      explore.network_totals(per_layer, plat), objective)


def per_layer_table(per_layer: pd.DataFrame) -> pd.DataFrame:
    """The readable per-layer table: schedule, tile, footprint, traffic, cycles, energy."""
    tile = per_layer[["TOx", "TOy", "TOc", "TOn", "TKc"]].astype(str).agg("x".join, axis=1)
    chosen_by = per_layer["objective"] if "objective" in per_layer else "cycles"
    return pd.DataFrame({
        "layer": per_layer["layer"], "chosen by": chosen_by, "schedule": per_layer["schedule"],
        "tile": tile,
        "footprint_KB": (per_layer["footprint_bytes"] / 1024).round(1),
        "ext_accesses": per_layer["ext_accesses"], "dma": per_layer["dma_transfers"],
        "cycles": per_layer["cycles"].round(0).astype("int64"),
        "GOps/s": per_layer["throughput_gops"].round(2), "CTC": per_layer["ctc"].round(1),
        "util": per_layer["utilization"].round(3),
        "energy_uJ": (per_layer["energy_pj"] / 1e6).round(1)})


def headline(data: ReportData) -> str:
    p, t = data.platform, data.totals
    return (f"{data.net.name} (batch {data.net.batch}) on {p.name}: "
            f"{p.local_mem_bytes / 1024:g} KB local memory, "
            f"{'double' if p.double_buffer else 'single'} buffered, {p.dma_setup_cycles:g}-cycle "
            f"DMA setup: {t['time_ms']:.3g} ms per batch, {t['throughput_gops']:.3g} GOps/s "
            f"of {p.peak_gops:.3g} peak, {t['energy_pj'] / 1e6:.4g} µJ; each layer's mapping "
            f"chosen by least {data.objective}")


def summary_html(data: ReportData) -> str:
    """Headline and per-layer table as an HTML fragment."""
    return (f"<p><b>{html.escape(headline(data))}</b></p>"
            + per_layer_table(data.per_layer).to_html(index=False, border=0))
