"""Two on-chip levels holding no array in common, searched as one level (S's merged part).

A blocking of two on-chip levels in which no array is held at both and the register file's
group runs once (t_1 = t_0) is, loop for loop, a blocking of one on-chip level: the levels
taken as one, each array priced at its own level's energy per bit and fitting its own level's
bytes (with the other arrays that level holds: a `BankedCapacity`, one bank per level, or per
array where the level is split). Its buffers may then lie anywhere, both levels' in one loop
group, which S's roles leave out (`search`'s docstring, "Not in S"); one-level S searches
every position anywhere (proved there, and brute-force tested), so each such blocking is
searched, up to equivalent ones, by the one-level search of the merged level.

`merged_levels` lists one merged level per host assignment (each array to one of the two
levels able to hold it, both levels used: with one only, the blocking is one of S's, that
level playing the innermost role). Within one, the one-level search's holder patterns bypass
any array, so the assignments cover every blocking holding no array at both levels with t_1
= t_0. `two_levels` maps the merged optimum back to the two-level blocking it is: group 1 of
trip count 1 along every dimension inserted, positions past group 0 moved out past it; every
count, buffer and energy is the same (trip-1 loops change nothing: `blocking`), so
`accesses.evaluate` prices it as the merged search did (tests/test_hierarchy_merged.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, OPERANDS, Blocking
from workbench.hierarchy.levels import (
    BankedCapacity,
    Hierarchy,
    Level,
    SizeEnergy,
    capacity_banks,
)
from workbench.hierarchy.search_space import holder_patterns

Hosts = tuple[int | None, ...]  # per array (I, W, O): the on-chip level holding it (1, 2)


@dataclass(frozen=True, slots=True)
class MergedLevel(Level):
    """Two levels as one: per array (I, W, O) the level it lives in (None: neither can hold
    it), priced per bit at that level's energy (access_bits is 1: an access is one bit)."""

    sources: tuple[Level | None, ...] = ()

    def access_pj(self, array: str, size_energy: SizeEnergy | None = None) -> float:
        """pJ per bit of the level holding `array` (0 where none does: never held)."""
        source = self.sources[ARRAYS.index(array)]
        if source is None:
            return 0.0
        return source.access_pj(array, size_energy) / source.access_bits


def merged_levels(hierarchy: Hierarchy) -> list[tuple[Hosts, Hierarchy]]:
    """Per assignment of the arrays to the two on-chip levels using both (each array to a
    level able to hold it), the hierarchy of DRAM and the merged level; none unless exactly
    two on-chip levels."""
    if len(hierarchy.levels) != 3:
        return []
    able = [[k for k in (1, 2) if hierarchy.levels[k].bytes_for(a) > 0] or [None]
            for a in ARRAYS]
    out = []
    for hosts in itertools.product(*able):
        if {1, 2} <= set(hosts):
            out.append((hosts, Hierarchy(
                (hierarchy.levels[0], _merged(hierarchy, hosts)),
                name=f"{hierarchy.name} merged", mac_energy_pj=hierarchy.mac_energy_pj,
                datapath=hierarchy.datapath)))
    return out


def new_patterns(merged: Hierarchy, hosts: Hosts, done: set) -> list:
    """The merged level's holder patterns holding arrays of both levels, but those of an
    earlier assignment (`done`, updated: the arrays held and their levels): a pattern holding
    one level's arrays only is one of S's role orders' (that level playing the innermost
    role), and one bypassing an array is the same under each host of that array."""
    out = []
    for pattern in holder_patterns(merged):
        held = tuple((a, h) for a, chain, h in zip(ARRAYS, pattern, hosts, strict=True)
                     if chain)
        if {h for _, h in held} == {1, 2} and held not in done:
            done.add(held)
            out.append(pattern)
    return out


def _merged(hierarchy: Hierarchy, hosts: Hosts) -> MergedLevel:
    """The merged level of an assignment: each level's banks for the arrays it hosts (one
    bank where it is shared, one per array where split, its own where banked)."""
    banks = []
    for k in (1, 2):
        level = hierarchy.levels[k]
        mine = tuple(a for a, h in zip(ARRAYS, hosts, strict=True) if h == k)
        bank, sizes = capacity_banks(level, mine)
        banks += [("".join(a for a, b in zip(mine, bank, strict=True) if b == j), int(size))
                  for j, size in enumerate(sizes)]
    names = "+".join(hierarchy.levels[k].name for k in (1, 2))
    return MergedLevel(names, BankedCapacity(tuple(banks)), 1,
                       sources=tuple(None if h is None else hierarchy.levels[h]
                                     for h in hosts))


def two_levels(blocking: Blocking, hosts: Hosts) -> Blocking:
    """The two-level blocking a merged level's blocking is (module docstring): t_1 = t_0,
    each array at its host's level only."""
    if len(blocking.orders) != 2:
        raise ValueError(f"a merged level's blocking has 2 loop groups, got "
                         f"{len(blocking.orders)}")
    shift = len(DIMS)  # group 1's loops, all of trip count 1, inserted past group 0

    def moved(p: int | None) -> int | None:
        return p if p is None or p < len(GROUP0) else p + shift

    buffers = {a: [moved(pos[0]) if h == 1 else None, moved(pos[0]) if h == 2 else None]
               for a, h, pos in zip(ARRAYS, hosts, blocking.buffers, strict=True)}
    tile = dict(zip(DIMS, blocking.tiles[0], strict=True))
    return Blocking.of([blocking.orders[0], DIMS, blocking.orders[1]], [tile, tile], buffers)


def in_merged(blocking: Blocking, hierarchy: Hierarchy, extent: dict[str, int],
              lanes: frozenset[str]) -> bool:
    """Is the blocking one of the merged part's (up to `two_levels`' form): two on-chip levels,
    t_1 = t_0 within the layer's extents, no array held at both levels, each level holding
    some array it is able to, every buffer inside group 0 enclosing the loops of group 0 over
    the unrolled dimensions (`lanes`) among its array's operands, with more than one
    iteration (its block holds a datapath step's operands)?"""
    if len(hierarchy.levels) != 3 or len(blocking.orders) != 3 or \
            blocking.tiles[0] != blocking.tiles[1] or \
            any(t > extent[d] for d, t in zip(DIMS, blocking.tiles[0], strict=True)):
        return False
    used = set()
    for array, positions in zip(ARRAYS, blocking.buffers, strict=True):
        held = [k for k, p in enumerate(positions, start=1) if p is not None]
        if len(held) > 1 or any(hierarchy.levels[k].bytes_for(array) <= 0 for k in held):
            return False
        used.update(held)
        p = positions[held[0] - 1] if held else None
        if p is not None and p < len(GROUP0) - 1:
            inside = {name for name, g in blocking.loops[:p + 1] if g == 0}
            if any(blocking.tiles[0][DIMS.index(d)] > 1 and d not in inside
                   for d in OPERANDS[array] if d in lanes):
                return False
    return used == {1, 2}


__all__ = ["Hosts", "MergedLevel", "in_merged", "merged_levels", "new_patterns", "two_levels"]
