"""What a share of a layer on a platform with levels is blocked on, and for what
(`explore.composed`): the hierarchy its buffers may use (kept maps taken out, halved when
double-buffered) and the weighting of accesses each exact search minimizes for an objective.
The choices are argued in docs/model.md, "Levels, cores, DMA and fusion composed"."""

from __future__ import annotations

import dataclasses

from workbench.explore.hierarchy_plan import SIZE_ENERGY, platform_hierarchy
from workbench.hierarchy.levels import BankedCapacity, Hierarchy, SplitCapacity
from workbench.platforms import Platform


def buffer_hierarchy(hierarchy: Hierarchy, kept_bytes: float,
                     double: bool) -> Hierarchy | None:
    """The hierarchy a share is blocked on: its outermost on-chip level less the kept maps'
    bytes and, double-buffered, half of the rest (each of its buffers has two copies, one
    filled by DMA while the core uses the other; kept maps are not doubled), its energy per
    access that of the whole memory (of each part's or bank's, for a split or banked level:
    `Level.memory_copies`). None when the kept maps leave no room, or are asked of a split
    or banked level."""
    if kept_bytes == 0 and not double:
        return hierarchy
    level = hierarchy.levels[1]
    capacity = level.capacity_bytes
    if isinstance(capacity, int):
        room = capacity - kept_bytes
        if room <= 0:
            return None
        smaller = dataclasses.replace(level, capacity_bytes=int(room // 2 if double else room),
                                      energy_pj=level.access_pj("I", SIZE_ENERGY))
    elif kept_bytes:
        return None
    elif isinstance(capacity, SplitCapacity):  # each part's memory priced whole
        smaller = dataclasses.replace(level, capacity_bytes=SplitCapacity(
            capacity.I // 2, capacity.W // 2, capacity.O // 2), memory_copies=2)
    else:
        smaller = dataclasses.replace(level, capacity_bytes=BankedCapacity(tuple(
            (arrays, size // 2) for arrays, size in capacity.banks)), memory_copies=2)
    return dataclasses.replace(hierarchy, levels=(hierarchy.levels[0], smaller,
                                                  *hierarchy.levels[2:]))


LINK_FREE = 1e-9  # weight of an access over a link without a bandwidth (ties only)
WEIGHTS = ("energy", "links", "external", "staged")


def prices_accesses(hierarchy: Hierarchy) -> bool:
    """True when some access or MAC costs energy (False: a platform without figures)."""
    return hierarchy.mac_energy_pj > 0 or any(
        lvl.energy_pj is None or lvl.energy_pj > 0 for lvl in hierarchy.levels)


def weightings(objective: str, platform: Platform) -> tuple[str, ...]:
    """The searches whose blockings a share's mapping is chosen from (`weighted`): "energy"
    for energy on a platform that prices accesses; "external" (the least DRAM traffic) for
    accesses; for cycles "links" (the least total link time), and for EDP "energy" too; for
    cycles, EDP, and energy on a platform without energy figures (every option then costs
    0 pJ, and cycles decide), "staged" too when DMA setups cost cycles (every level holds every
    array, so DRAM feeds only the outermost on-chip level and DMA transfers are its refills:
    large blocks, few setups)."""
    priced = prices_accesses(platform_hierarchy(platform))
    if objective == "energy" and priced:
        return ("energy",)
    if objective == "accesses":
        return ("external",)
    staged = ("staged",) if platform.dma_setup_cycles > 0 else ()
    energy = ("energy",) if objective == "edp" and priced else ()
    return (*energy, "links", *staged)


def weighted(hierarchy: Hierarchy, weights: str) -> Hierarchy:
    """The hierarchy a blocking search minimizes over: "energy", itself; "links", each access
    weighted by the cycles its element takes on the level's link (1/bandwidth; LINK_FREE
    without a bandwidth, 1 for an unlimited DRAM); "external", DRAM accesses at 1 and on-chip
    ones at LINK_FREE (ties only). No MAC cost but for "energy"."""
    if weights == "energy":
        return hierarchy
    weights = "links" if weights == "staged" else weights
    levels = []
    for i, lvl in enumerate(hierarchy.levels):
        bw = lvl.bandwidth_elems_per_cycle
        if weights == "external":
            per_elem = 1.0 if i == 0 else LINK_FREE
        else:
            per_elem = (1.0 if i == 0 else LINK_FREE) if bw is None else 1.0 / bw
        levels.append(dataclasses.replace(lvl, energy_pj=per_elem * lvl.access_bits / 16))
    return dataclasses.replace(hierarchy, levels=tuple(levels), mac_energy_pj=0.0)
