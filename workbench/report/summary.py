"""What a mapping report shows, computed in one call (the report notebook only displays it):
the per-layer table in human units, the network totals and the manager's summary."""

from __future__ import annotations

import html
from dataclasses import InitVar, dataclass

import numpy as np
import pandas as pd

from workbench import explore, layers, platforms, spelling
from workbench.layers.network import Network
from workbench.memo import Caches
from workbench.platforms import Platform
from workbench.tiling import SCHEDULES
from workbench.viz import units


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


@dataclass(frozen=True)
class ReportSettings:
    """What a report varies: the batch (None: the network's), the local memory `memory_kb`
    (KB; 0: the preset's) and the local memories the per-layer sweep tries `sweep_memory_kb`
    (KB; `buffer_sizes_kb`, its old spelling, is read with one notice), the schedules, worker
    processes, the objective ranking mappings, the cores (0: the preset's), fusion ("auto",
    "off" or "force") and an input shape (C, H, W) replacing the network's."""

    batch: int | None = None
    memory_kb: float = 0
    sweep_memory_kb: tuple[float, ...] = (1, 4, 16, 64, 256, 1024)
    schedules: tuple[str, ...] = SCHEDULES
    jobs: int = 1
    objective: str = "cycles"
    cores: int = 0
    fusion: str = "auto"
    input_shape: tuple[int, ...] | None = None
    buffer_sizes_kb: InitVar[tuple[float, ...] | None] = None  # the old sweep_memory_kb

    def __post_init__(self, buffer_sizes_kb: tuple[float, ...] | None) -> None:
        spelling.old_keyword(self, "buffer_sizes_kb", "sweep_memory_kb", buffer_sizes_kb,
                             "ReportSettings")


def build(network: str, platform: str, settings: ReportSettings = ReportSettings()
          ) -> ReportData:
    """Plan every layer of `network` on `platform` as `settings` say: mappings ranked by the
    objective; Pareto solutions and buffer-size sweeps of the conv/fc layers on one core
    (single-level platforms; empty on a platform with levels)."""
    batch, memory_kb, sweep_memory_kb, schedules, jobs = (
        settings.batch, settings.memory_kb, settings.sweep_memory_kb, settings.schedules,
        settings.jobs)
    objective, cores, fusion, input_shape = (settings.objective, settings.cores,
                                             settings.fusion, settings.input_shape)
    net = layers.load_network(network, batch=batch,
                              input_shape=None if input_shape is None else tuple(input_shape))
    overrides = {"local_mem_bytes": int(memory_kb * 1024)} if memory_kb else {}
    if cores:
        overrides["cores"] = int(cores)
    plat = platforms.load_platform(platform, **overrides)
    schedules = tuple(schedules)
    caches = Caches()  # the report's: its plan and tables share the candidate sets
    per_layer = explore.network_plan(net, plat, objective, fusion, schedules,
                                     compare_unfused=True, caches=caches)
    if plat.has_levels:  # single-level studies do not apply (report.sections)
        solutions, sweep = pd.DataFrame(), pd.DataFrame()
    else:
        solutions = explore.explore_layers(net.tiled_layers(), plat, schedules,
                                           [plat.local_mem_bytes], keep="pareto", jobs=jobs)
        sizes = sorted({int(kb * 1024) for kb in sweep_memory_kb} | {plat.local_mem_bytes})
        best = explore.explore_layers(net.tiled_layers(), plat, schedules, sizes,
                                      keep="best", objective=objective, caches=caches)
        sweep = pd.concat([explore.sweep_summary(layer, best[best.layer == layer.name],
                                                 objective)
                           for layer in net.tiled_layers()], ignore_index=True)
    totals = explore.network_totals(per_layer, plat)
    totals["unfused_ext_accesses"] = per_layer.attrs["unfused_ext_accesses"]
    return ReportData(net, plat, per_layer, solutions, sweep, totals, objective)


def _mapping(per_layer: pd.DataFrame) -> pd.Series:
    """Tile TOx×TOy×TOc×TOn×TKc of conv/fc rows (on a platform with levels, the blocks
    X×Y×C×M×N of each on-chip level, innermost first, joined by " | "); chunk "r rows × m
    maps" of streamed rows; "folded" for an activation applied inside its producer."""
    out = []
    for row in per_layer.to_dict("records"):
        if row.get("folded"):
            out.append("folded")
        elif isinstance(row.get("tiles"), str):  # a platform with levels: a block per level
            out.append(row["tiles"])
        elif pd.notna(row.get(units.TILE_COLUMNS[0], np.nan)):
            out.append(units.fmt_tile(row[d] for d in units.TILE_COLUMNS))
        else:
            out.append(f"{int(row['rows'])} rows × {int(row['maps'])} maps")
    return pd.Series(out, index=per_layer.index)


def _fused(per_layer: pd.DataFrame) -> pd.Series:
    if "fused_in" not in per_layer:
        return pd.Series("", index=per_layer.index)
    return pd.Series([" ".join(w for w, on in (("in", r["fused_in"] and not r["folded"]),
                                                ("out", r["fused_out"] and not r["folded"]),
                                                ("folded", r["folded"])) if on) or "-"
                      for r in per_layer.to_dict("records")], index=per_layer.index)


def per_layer_table(per_layer: pd.DataFrame, platform: Platform | None = None) -> pd.DataFrame:
    """The readable per-layer table: cores and split, schedule, tile (TOx×TOy×TOc×TOn×TKc,
    named in the header) or chunk, fusion, bound, footprint, traffic, cycles, energy, all as
    text in human units; energy "n/a" on a platform without energy figures."""
    known = units.has_energy(platform) if platform is not None else \
        bool((per_layer["energy_pj"] > 0).any())
    chosen_by = per_layer["objective"] if "objective" in per_layer else "cycles"
    table = {"layer": per_layer["layer"]}
    if "kind" in per_layer:
        kind = per_layer["role"] if "role" in per_layer else per_layer["kind"]
        table |= {"kind": kind, "cores": per_layer["cores"], "split": per_layer["split"]}
    table |= {"chosen by": chosen_by, "schedule": per_layer["schedule"].fillna("-"),
              f"{units.TILE_HEADER} / chunk": _mapping(per_layer)}
    if "fused_in" in per_layer:
        table |= {"fused": _fused(per_layer), "bound": per_layer["bound"]}
    table |= {
        "footprint": [units.fmt_bytes(v) for v in per_layer["footprint_bytes"]],
        "ext. accesses": [units.fmt_count(v) for v in per_layer["ext_accesses"]],
        "DMA": [units.fmt_count(v) for v in per_layer["dma_transfers"]],
        "cycles": [units.fmt_count(v) for v in per_layer["cycles"]],
        **({"DMA setup": [units.fmt_percent(v) for v in per_layer["dma_setup_share"]]}
           if "dma_setup_share" in per_layer else {}),
        "GOps/s": [units.fmt_number(v) for v in per_layer["throughput_gops"]],
        "CTC ops/B": [units.fmt_number(v) for v in per_layer["ctc"]],
        "util": [units.fmt_percent(v) for v in per_layer["utilization"]],
        "energy": [units.fmt_energy(v, known) for v in per_layer["energy_pj"]]}
    return pd.DataFrame(table)


def totals_text(totals: dict[str, float], platform: Platform) -> str:
    """The network totals on one line, in human units ('n/a' energy without figures)."""
    parts = [f"{units.fmt_count(totals['cycles'])} cycles",
             units.fmt_ms(totals["time_ms"]), units.fmt_gops(totals["throughput_gops"]),
             f"energy {units.fmt_energy(totals['energy_pj'], units.has_energy(platform))}",
             f"{units.fmt_count(totals['ext_accesses'])} external accesses "
             f"({units.fmt_traffic(totals['ext_accesses'] * platform.elem_bytes)})",
             f"{units.fmt_count(totals['dma_transfers'])} DMA transfers"]
    if totals.get("unfused_ext_accesses"):
        saved = 1 - totals["ext_accesses"] / totals["unfused_ext_accesses"]
        parts.append(f"fusion saved {saved:.0%} of the external accesses")
    return ", ".join(parts)


def headline(data: ReportData) -> str:
    p, t = data.platform, data.totals
    memory = f"{units.fmt_bytes(p.local_mem_bytes)} local memory each" if not p.has_levels \
        else "levels " + " | ".join(lvl.name for lvl in p.memory.levels) + " each"
    return (f"{data.net.name} (batch {data.net.batch}) on {p.name}: {p.cores} core(s), "
            f"{memory}, "
            f"{'double' if p.double_buffer else 'single'} buffered, "
            f"{units.fmt_count(p.dma_setup_cycles)}-cycle DMA setup; "
            f"{totals_text(t, p)}; each layer's mapping chosen by least {data.objective}")


def _names(rows: pd.DataFrame, column: str, total: float) -> str:
    def share(value: float) -> str:
        return "<1%" if value / total < 0.005 else f"{value / total:.0%}"

    return ", ".join(f"{r['layer']} ({share(r[column])})" for r in rows.to_dict("records"))


def key_findings(per_layer: pd.DataFrame, totals: dict[str, float],
                 platform: Platform) -> dict[str, str]:
    """What a reader needs first: time, energy, the bottleneck layers (fewest layers taking
    80% of the time, at most 3) and the I/O-bound layers with their share of the time."""
    cycles = float(totals["cycles"]) or 1.0
    by_time = per_layer.sort_values("cycles", ascending=False)
    share = by_time["cycles"].cumsum() / cycles
    top = by_time[(share.shift(fill_value=0) < 0.8)].head(3)
    io = per_layer[per_layer["bound"] == "I/O"] if "bound" in per_layer else per_layer.iloc[:0]
    known = units.has_energy(platform)
    energy = units.fmt_energy(totals["energy_pj"], known)
    if known and totals["energy_pj"] > 0:
        hungry = per_layer.sort_values("energy_pj", ascending=False).head(2)
        energy += f", mostly in {_names(hungry, 'energy_pj', totals['energy_pj'])}"
    elif not known:
        energy += f" ({platform.name} has no energy figures)"
    found = {
        "time": f"{units.fmt_ms(totals['time_ms'])} per batch at "
                f"{units.fmt_gops(totals['throughput_gops'])} "
                f"(peak {units.fmt_gops(platform.peak_gops * platform.cores)})",
        "energy": energy,
        "bottlenecks": _names(top, "cycles", cycles) + " of the time",
        "I/O-bound": (f"{len(io)} layer(s), {io['cycles'].sum() / cycles:.0%} of the time: "
                      + _names(io.sort_values("cycles", ascending=False).head(5), "cycles",
                               cycles)
                      + (f" and {len(io) - 5} more" if len(io) > 5 else "")
                      + "; more bus or local memory would speed them up") if len(io) else
                     "none: every layer is compute-bound (more compute, not memory, helps)"}
    return found | _roles(per_layer, cycles) | _dma_setup(per_layer, cycles)


def _roles(per_layer: pd.DataFrame, cycles: float) -> dict[str, str]:
    """Depthwise vs pointwise layers (networks that have depthwise layers): count, share of
    the time, DMA transfers, how many are I/O-bound."""
    if "role" not in per_layer or not (per_layer["role"] == "depthwise").any():
        return {}
    parts = []
    for role in ("depthwise", "pointwise"):
        rows = per_layer[per_layer["role"] == role]
        if len(rows):
            io = int((rows["bound"] == "I/O").sum()) if "bound" in rows else 0
            parts.append(f"{len(rows)} {role} layers take {rows['cycles'].sum() / cycles:.0%} "
                         f"of the time with {units.fmt_count(rows['dma_transfers'].sum())} DMA "
                         f"transfers ({io} I/O-bound)")
    return {"depthwise vs pointwise": "; ".join(parts)}


def _dma_setup(per_layer: pd.DataFrame, cycles: float) -> dict[str, str]:
    """Where DMA setup dominates: layers that take at least 1% of the network's time and
    spend half of theirs or more setting up transfers; else the share of the whole time."""
    if "dma_setup_share" not in per_layer or not len(per_layer):
        return {}
    heavy = per_layer[(per_layer["dma_setup_share"] >= 0.5)
                      & (per_layer["cycles"] >= 0.01 * cycles)].sort_values(
        "cycles", ascending=False)
    if len(heavy):
        names = ", ".join(f"{r['layer']} ({r['dma_setup_share']:.0%} of its time)"
                          for r in heavy.head(3).to_dict("records"))
        more = f" and {len(heavy) - 3} more" if len(heavy) > 3 else ""
        return {"DMA setup": f"dominates in {len(heavy)} layer(s): {names}{more}; bigger "
                             "tiles, fewer transfers or a cheaper DMA setup help"}
    whole = per_layer["cycles_dma_setup"].sum() / cycles
    return {"DMA setup": f"{whole:.0%} of the time; under half of every layer that takes "
                         "1% of the time or more"}


# nbconvert appends a "¶" anchor link to every heading; the exported report hides them
REPORT_STYLE = ("<style>a.anchor-link{display:none}.wb-summary{border-left:4px solid #1f77b4;"
                "padding:0.2em 1em;margin:1em 0;background:#f5f8fc}.wb-summary h2{margin:0.3em 0}"
                "</style>")


def findings_html(data: ReportData) -> str:
    """The manager's summary as HTML (the report's first output)."""
    items = key_findings(data.per_layer, data.totals, data.platform)
    rows = "".join(f"<li><b>{html.escape(k)}:</b> {html.escape(v)}</li>"
                   for k, v in items.items())
    return (f"<div class='wb-summary'><h2>Summary: {html.escape(data.net.name)} on "
            f"{html.escape(data.platform.name)}</h2><ul>{rows}</ul></div>")


def summary_html(data: ReportData) -> str:
    """Headline and per-layer table as an HTML fragment."""
    return (f"<p><b>{html.escape(headline(data))}</b></p>"
            + per_layer_table(data.per_layer, data.platform).to_html(index=False, border=0))
