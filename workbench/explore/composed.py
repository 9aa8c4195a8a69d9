"""A conv/fc layer on a platform with memory levels (`Platform.has_levels`): the seed 001
hierarchy model composed with the cores, the shared bus, DMA setups and fusion. The model and
its argument are written out in docs/model.md, "Levels, cores, DMA and fusion composed".

Mapping (`LevelsMapping`): the split over cores (`tiling.partition`: kind and core count) and,
per distinct share, its least-energy blocking over the platform's levels (`hierarchy.search`,
exact per share), with the maps fusion keeps on chip (`kept`: input, output).

Counts, per core of a share: the blocking's transfers (`hierarchy.blocking.transfers`, which
`hierarchy.executor` replays): elements per level and array, datapath steps, and DMA
transfers, one per refill of a buffer DRAM feeds plus one per refill reading partial sums back
from DRAM.

Cycles, with transfers overlapping compute (as `hierarchy.timing`): per core its compute (its
datapath steps) plus its DMA setups (setup cycles each, × max(1, k/channels) when k cores share
the channels); per core each on-chip level's inward link; and the DRAM link, the bus, shared by
the k cores (every core's DRAM elements, a broadcast array once per share, over DRAM's
bandwidth). The layer takes the largest; `bound` names it ("compute", a level, or "I/O").

Energy (pJ): every core's level and MAC energies (`hierarchy.accesses.energy_pj`), DRAM's for
the bus traffic, DMA setups × core pJ per cycle, and static pJ per cycle over each core's time.

Fusion: a kept map sits in the outermost on-chip level (its capacity less the map's bytes, its
energy per access that of the whole memory), on one core. The kept array's transfers that DRAM
sourced are sourced by that level (window copies inside it); a kept output must not spill
partial sums to DRAM. DMA setups are still paid.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from workbench.explore.bands import exchange, kinds_of
from workbench.explore.hierarchy_plan import (
    SIZE_ENERGY,
    layer_plan,
    platform_hierarchy,
    platform_precision,
)
from workbench.explore.level_search import buffer_hierarchy, weighted, weightings
from workbench.explore.query import ranking
from workbench.hierarchy.accesses import (
    energy_by_array_pj,
    energy_pj,
    level_accesses,
)
from workbench.hierarchy.blocking import Blocking, Transfer
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.search import NoFitError
from workbench.hierarchy.timing import timing_of
from workbench.layers.spec import ConvLayer, map_elems
from workbench.memo import Caches, caches_or_new
from workbench.platforms import Platform
from workbench.tiling.partition import SHARED, SPLITS, max_cores, shares

ARRAY_COLUMNS = {"I": "in_accesses", "W": "w_accesses", "O": "out_accesses"}
SHARED_ARRAY = {"in": "I", "w": "W", "": None}


def applies(platform: Platform) -> bool:
    """True when conv/fc layers are priced here rather than by the single-level model."""
    return platform.has_levels


def single_level_columns(platform: Platform, row: dict[str, Any],
                         local_accesses: int) -> dict[str, float]:
    """The per-level columns (energy_pj_<level>, accesses_<level>) of a layer the single-level
    model prices on a platform with levels (a streamed or folded layer): the external memory
    levels[0] holds its external accesses and energy, the local memory levels[1] its local
    ones, and the inner levels none, so the levels and compute add up to its energy as they
    do for a conv priced here."""
    names = [level.name for level in platform.memory.levels]
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        out[f"energy_pj_{name}"] = (row["energy_external_pj"], row["energy_local_pj"])[i] \
            if i < 2 else 0.0
        out[f"accesses_{name}"] = float((row["ext_accesses"], local_accesses)[i] if i < 2 else 0)
    return out


@dataclass(frozen=True, slots=True)
class ShareMapping:
    """`cores` cores computing `layer`-shaped parts (starting at `starts` along the split),
    each with `blocking`; `transfers`: one core's, kept arrays already sourced on chip."""

    cores: int
    layer: ConvLayer
    starts: tuple[int, ...]
    blocking: Blocking
    transfers: tuple[Transfer, ...]
    dma_transfers: int
    halo: tuple[tuple[int, int], ...] = ()  # per core: (input elements, transfers) fetched
    # from other cores' bands when the input is kept across cores (`bands.exchange`)


@dataclass(frozen=True, slots=True)
class LevelsMapping:
    """One layer's mapping on a platform with levels: split kind, cores used, the shares (at
    most two shapes), the hierarchy they were blocked on, the kept maps (in, out) and the
    search that blocked them (`level_search.weightings`)."""

    layer: ConvLayer
    split: str
    cores: int
    shares: tuple[ShareMapping, ...]
    hierarchy: Hierarchy
    kept: tuple[bool, bool] = (False, False)
    weights: str = "energy"


def dma_transfers(transfers: tuple[Transfer, ...]) -> int:
    """DMA transfers of one core: per buffer DRAM feeds, its refills (loads, or write-backs)
    and, for outputs, the refills that read partial sums back (moved over footprint: blocks
    are full size)."""
    total = 0
    for t in transfers:
        if t.source == 0:
            total += t.refills + (t.partial_reads // t.footprint if t.footprint else 0)
    return total


def _sourced_on_chip(transfers: tuple[Transfer, ...], kept: tuple[bool, bool]
                     ) -> tuple[Transfer, ...] | None:
    """The kept arrays' DRAM-sourced transfers sourced by level 1 instead (None: a kept output
    spills partial sums to DRAM)."""
    arrays = {a for a, on in zip(("I", "O"), kept, strict=True) if on}
    out = []
    for t in transfers:
        if t.source == 0 and t.array in arrays:
            if t.array == "O" and t.partial_reads:
                return None
            t = dataclasses.replace(t, source=1)
        out.append(t)
    return tuple(out)


def mapping(layer: ConvLayer, platform: Platform, split: str = "oc", k: int = 1,
            kept: tuple[bool, bool] = (False, False), weights: str = "energy",
            caches: Caches | None = None) -> LevelsMapping | None:
    """The layer's mapping for one split over k cores: every share's least blocking over
    `weighted(hierarchy, weights)`; None when a share has none that fits. Kept maps (True)
    are on one core; kept in bands (a `bands` state: the producer's kind, "xy" rows or "oc"
    maps, and the consumer's) need the split of this layer's side over every core, each
    core keeping its band: its output band, or the input it reads (what it reads beyond its
    own band gathered from the others) and its own band's rest (`bands.exchange`)."""
    caches = caches_or_new(caches)
    hierarchy, widths = platform_hierarchy(platform), platform_precision(platform)
    banded = {kinds_of(state)[side] for state, side in zip(kept, (1, 0), strict=True)
              if isinstance(state, str)}
    if banded:
        if banded != {split} or k != platform.cores or True in kept:
            return None
    elif any(kept) and k != 1:
        return None
    parts, priced_on = [], None
    for share in shares(layer, split, k):
        gathered = exchange(layer, kept[0], share.starts, share.layer.Oy, k) \
            if isinstance(kept[0], str) else ()
        beyond = max((b for *_, b in gathered), default=0)
        kept_bytes = (bool(kept[0]) * (map_elems(share.layer, "in") + beyond) * widths.inputs
                      + bool(kept[1]) * map_elems(share.layer, "out") * widths.outputs)
        searched = buffer_hierarchy(hierarchy, kept_bytes, platform.double_buffer)
        if searched is None:
            return None
        priced_on = priced_on or searched  # energies per access are the whole memory's
        share_layer = dataclasses.replace(share.layer, name="share")  # names cost nothing
        try:
            plan = layer_plan(share_layer, weighted(searched, weights), widths,
                              SIZE_ENERGY, caches, bypass=weights != "staged")
        except NoFitError:
            return None
        moved = _sourced_on_chip(plan.result.transfers, kept)
        if moved is None:
            return None
        parts.append(ShareMapping(share.cores, share.layer, share.starts, plan.found.blocking,
                                  moved, dma_transfers(plan.result.transfers),
                                  tuple((e, t) for e, t, _ in gathered)))
    return LevelsMapping(layer, split, k, tuple(parts), priced_on, kept, weights)


@dataclass(frozen=True, slots=True)
class _Priced:
    """One core of a share: its transfers priced (`HierarchyResult`-like parts)."""

    energy: dict[str, float]
    by_array: dict[str, dict[str, float]]
    compute: float
    links: dict[str, float]
    dram: dict[str, int]


def _price_core(share: ShareMapping, hierarchy: Hierarchy, platform: Platform) -> _Priced:
    widths = platform_precision(platform)
    timing = timing_of(share.transfers, hierarchy)
    dram = dict.fromkeys(ARRAY_COLUMNS, 0)
    for t in share.transfers:
        if t.source == 0:
            dram[t.array] += t.moved + t.partial_reads
    return _Priced(energy_pj(share.transfers, hierarchy, widths, SIZE_ENERGY),
                   energy_by_array_pj(share.transfers, hierarchy, widths, SIZE_ENERGY),
                   float(timing.compute_cycles),
                   {name: timing.link_cycles[name] for name in
                    (lvl.name for lvl in hierarchy.levels[1:])}, dram)


def price(m: LevelsMapping, platform: Platform) -> dict[str, Any]:
    """The mapping's plan row: cycles by part, bound, energy by part and level (pJ, all
    cores), DRAM accesses by array (elements, the bus), per-level accesses, DMA transfers."""
    p, h = platform, m.hierarchy
    dram_name = h.levels[0].name
    shared = SHARED_ARRAY[SHARED[m.split]] if p.dma_broadcast else None
    queue = max(1.0, m.cores / p.dma_channels)
    priced = [_price_core(s, h, p) for s in m.shares]
    bus = dict.fromkeys(ARRAY_COLUMNS, 0)
    energy = dict.fromkeys([lvl.name for lvl in h.levels] + ["mac"], 0.0)
    for s, c in zip(m.shares, priced, strict=True):
        for array in ARRAY_COLUMNS:
            bus[array] += (1 if array == shared else s.cores) * c.dram[array]
        for name, pj in c.energy.items():
            energy[name] += s.cores * pj
        if shared is not None:
            energy[dram_name] -= (s.cores - 1) * c.by_array[dram_name][shared]
    # halo rows from the other cores' bands: over the bus, read there and written here
    fetched = sum(e for s in m.shares for e, _ in s.halo)
    bus["I"] += fetched
    inner = h.levels[1]
    energy[inner.name] += 2 * fetched * 8 * platform_precision(p).inputs / inner.access_bits \
        * inner.access_pj("I", SIZE_ENERGY)
    bus_elems = sum(bus.values())
    bandwidth = h.levels[0].bandwidth_elems_per_cycle
    bus_cycles = 0.0 if bandwidth is None else bus_elems / bandwidth
    setup = [(s.dma_transfers + max((t for _, t in s.halo), default=0))
             * p.dma_setup_cycles * queue for s in m.shares]
    core = [c.compute + st for c, st in zip(priced, setup, strict=True)]
    links = {name: max(c.links[name] for c in priced) for name in priced[0].links}
    overlap = p.double_buffer  # else a core waits for the bus: DMA and compute in turn
    core_time = [c if overlap else c + bus_cycles for c in core]
    parts = {"compute": max(core_time), **links, "I/O": bus_cycles}
    cycles = max(parts.values())
    slow = max(range(len(core)), key=core.__getitem__)
    bound = max(parts, key=parts.__getitem__)
    if bound == "compute" and not overlap and bus_cycles > core[slow]:
        bound = "I/O"  # the core waits longer for the bus than it computes
    busy = [max(core_time[i], *priced[i].links.values(), bus_cycles)
            for i in range(len(core))]
    local = sum(energy[lvl.name] for lvl in h.levels[1:])
    e_parts = {"compute": energy["mac"],
               "dma_setup": sum(s.cores * st for s, st in zip(m.shares, setup, strict=True))
               * p.core_pj_per_cycle,
               "local": local, "external": energy[dram_name],
               "static": sum(s.cores * b for s, b in zip(m.shares, busy, strict=True))
               * p.static_pj_per_cycle}
    first = m.shares[0]
    row: dict[str, Any] = {
        "split": m.split, "cores": m.cores, "schedule": "levels", "blocked_for": m.weights,
        "tiles": " | ".join("×".join(map(str, t)) for t in first.blocking.tiles),
        "blocking": first.blocking.describe(),
        "cycles": cycles, "energy_pj": sum(e_parts.values()),
        "ext_accesses": int(bus_elems), **{ARRAY_COLUMNS[a]: int(v) for a, v in bus.items()},
        "dma_transfers": int(sum(s.cores * s.dma_transfers + sum(t for _, t in s.halo)
                                 for s in m.shares)),
        "footprint_bytes": int(max(sum(_buffers(s, h, p)) for s in m.shares)),
        "compute_cycles": priced[slow].compute, "bus_cycles": bus_cycles,
        "bound": bound,
        "cycles_compute": priced[slow].compute, "cycles_dma_setup": setup[slow],
        "cycles_bus_stall": cycles - core[slow], "cycles_prolog_epilog": 0.0,
        "shares": tuple((s.cores, "levels", s.blocking.tiles) for s in m.shares)}
    row |= {f"energy_{part}_pj": value for part, value in e_parts.items()}
    for i, lvl in enumerate(h.levels):
        row[f"energy_pj_{lvl.name}"] = energy[lvl.name]
        row[f"accesses_{lvl.name}"] = int(sum(
            s.cores * level_accesses(s.transfers, len(h))[i].total() for s in m.shares)) \
            + (2 * fetched if i == 1 else 0)
    return row


def _buffers(share: ShareMapping, hierarchy: Hierarchy, platform: Platform) -> list[float]:
    """Bytes one core's buffers take in the outermost on-chip level."""
    from workbench.hierarchy.accesses import buffer_bytes

    per_level = buffer_bytes(share.transfers, len(hierarchy), platform_precision(platform))
    return list(per_level[1].values()) if len(per_level) > 1 else [0.0]


def cycles_floor(layer: ConvLayer, platform: Platform, split: str, k: int) -> float:
    """A lower bound on the cycles of any mapping of this split over k cores: the largest
    share's MACs over the datapath's MACs per step, and every output written and every weight
    read once over the bus (a broadcast weight once per share)."""
    h = platform_hierarchy(platform)
    dp = h.datapath
    lanes = 1 if dp is None else (dp.ideal_macs_per_cycle or dp.macs_per_step)
    compute, bus = 0.0, 0.0
    for share in shares(layer, split, k):
        part = share.layer
        compute = max(compute, part.macs / lanes)
        weights = part.params * (1 if platform.dma_broadcast and SHARED[split] == "w"
                                 else share.cores)
        bus += share.cores * math.prod(part.out_shape) * part.On + weights
    bandwidth = h.levels[0].bandwidth_elems_per_cycle
    return max(compute, 0.0 if bandwidth is None else bus / bandwidth)


def options(layer: ConvLayer, platform: Platform, kept: tuple[bool, bool] = (False, False),
            objective: str = "energy", caches: Caches | None = None
            ) -> list[tuple[LevelsMapping, dict[str, Any]]]:
    """Every (split, cores) mapping that fits, for each of the objective's `weightings`,
    priced: one core alone when maps are kept, else each split kind over 1 … its most cores
    (one core counted once). For cycles, a split whose `cycles_floor` exceeds the least
    cycles found so far is skipped (it cannot be chosen, nor tie)."""
    caches = caches_or_new(caches)
    banded = {kinds_of(state)[side] for state, side in zip(kept, (1, 0), strict=True)
              if isinstance(state, str)}
    if banded:  # kept in bands: that split over every core, nothing else
        ks = [(kind, platform.cores) for kind in banded]
    elif any(kept):
        ks = [("oc", 1)]
    else:
        ks = [("oc", 1)] + [
            (kind, k) for kind in SPLITS if kind != "g" or layer.groups > 1
            for k in range(2, max_cores(layer, kind, platform.cores) + 1)]
    prune = objective == "cycles"
    if prune:
        floors = {option: cycles_floor(layer, platform, *option) for option in ks}
        ks.sort(key=floors.__getitem__)
    least = math.inf
    out = []
    for kind, k in ks:
        if prune and floors[kind, k] > least:
            continue
        for weights in weightings(objective, platform):
            found = mapping(layer, platform, kind, k, kept, weights, caches)
            if found is not None:
                out.append((found, price(found, platform)))
                least = min(least, out[-1][1]["cycles"])
    return out


def best(layer: ConvLayer, platform: Platform, objective: str = "cycles",
         kept: tuple[bool, bool] = (False, False),
         caches: Caches | None = None) -> tuple[LevelsMapping, dict[str, Any]] | None:
    """The option best under the objective (its ties as `explore.query.ranking`, then fewer
    cores); None when none fits."""
    found = options(layer, platform, kept, objective, caches)
    if not found:
        return None
    for _, row in found:
        row["edp"] = row["cycles"] * row["energy_pj"]
    order = [*ranking(objective), "cores"]
    return min(found, key=lambda o: tuple(o[1][c] for c in order))


def planned_mapping(layer: ConvLayer, platform: Platform, row: dict[str, Any],
                    caches: Caches | None = None) -> LevelsMapping:
    """The mapping behind a plan row of this layer (`explore.network_plan` on a platform with
    levels): its split, cores, kept maps and search, blocked again (or recalled from
    `caches`)."""
    states = [state for state in str(row.get("fused_across") or "").split(",") if state]
    kept = (False if not row["fused_in"] else states[0] if states else True,
            False if not row["fused_out"] else states[-1] if states else True)
    found = mapping(layer, platform, str(row["split"]), int(row["cores"]), kept,
                    str(row["blocked_for"]), caches)
    if found is None:
        raise ValueError(f"layer {layer.name!r}: the row's mapping does not fit {platform.name}")
    return found
