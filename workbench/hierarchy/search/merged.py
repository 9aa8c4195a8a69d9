"""Adjacent on-chip levels holding no array in common, searched as one level (S's merged
parts).

A blocking of levels k and k + 1 (adjacent on-chip levels) in which no array is held at both and
the inner one's loop group runs once (t_{L−k} = t_{L−k−1}, L on-chip levels) is, loop for loop,
a blocking of the hierarchy with the two taken as one level: each array priced at its own
level's energy per bit and fitting its own level's bytes (with the other arrays that level
holds: a `BankedCapacity`, one bank per level, or its own banks where the level is split or
banked). Its buffers of both levels may then lie in one loop group, which S's roles leave out
(docs/search.md, "What S holds and what it leaves out"). With two on-chip levels the merged
hierarchy has one, and one-level S searches every position anywhere (proved there, and brute-
force tested), so each such blocking is searched, up to equivalent ones, by the one-level search
of the merged level. With three or more, the merged hierarchy (a `RoleView`: its capacities may
grow inwards) is searched by the whole search, its own merged parts included, so levels merge
pairwise again (all three as one, or two pairs).

`merged_levels` lists one merged hierarchy per pair and host assignment (each array to one of
the two levels able to hold it, both levels used: with one only, the blocking is one of S's,
that level playing the merged level's role). Within one, the holder patterns bypass any
array, so the assignments cover every blocking holding no array at both levels of the pair
with its inner group running once. `unmerged` maps a merged optimum back to the blocking it
is: the inner level's group of trip count 1 along every dimension inserted, positions past the
group before it moved out past it; every count, buffer and energy is the same (trip-1 loops
change nothing: `blocking`), so `accesses.evaluate` prices it as the merged search did
(tests/test_hierarchy_merged.py).
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
from workbench.hierarchy.search.roles import RoleView, holder_patterns

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


def merged_levels(hierarchy: Hierarchy | RoleView
                  ) -> list[tuple[int, Hosts, Hierarchy | RoleView]]:
    """Per pair of adjacent on-chip levels (k, k + 1) and assignment of the arrays to them using
    both (each array to a level of the pair able to hold it), (k, the assignment, the hierarchy
    with the pair as one merged level): a Hierarchy of DRAM and the merged level with two
    on-chip levels, a `RoleView` with more."""
    on_chip = len(hierarchy.levels) - 1
    out = []
    for k in range(1, on_chip):
        able = [[j for j in (k, k + 1) if hierarchy.levels[j].bytes_for(a) > 0] or [None]
                for a in ARRAYS]
        for hosts in itertools.product(*able):
            if {k, k + 1} <= set(hosts):
                levels = (*hierarchy.levels[:k], _merged(hierarchy, k, hosts),
                          *hierarchy.levels[k + 2:])
                name = f"{hierarchy.name} merged"
                out.append((k, hosts, Hierarchy(levels, name=name,
                                                mac_energy_pj=hierarchy.mac_energy_pj,
                                                datapath=hierarchy.datapath)
                            if on_chip == 2 else
                            RoleView(levels, name, hierarchy.mac_energy_pj, hierarchy.datapath)))
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


def _merged(hierarchy: Hierarchy | RoleView, k: int, hosts: Hosts) -> MergedLevel:
    """Levels k and k + 1 as one: each level's banks for the arrays it hosts (one bank where
    it is shared, one per array where split, its own where banked)."""
    banks = []
    for j in (k, k + 1):
        level = hierarchy.levels[j]
        mine = tuple(a for a, h in zip(ARRAYS, hosts, strict=True) if h == j)
        bank, sizes = capacity_banks(level, mine)
        banks += [("".join(a for a, b in zip(mine, bank, strict=True) if b == i), int(size))
                  for i, size in enumerate(sizes)]
    return MergedLevel("+".join(hierarchy.levels[j].name for j in (k, k + 1)),
                       BankedCapacity(tuple(banks)), 1,
                       sources=tuple(None if h is None else hierarchy.levels[h]
                                     for h in hosts))


def unmerged(blocking: Blocking, k: int, hosts: Hosts) -> Blocking:
    """The blocking a blocking of the hierarchy with levels k, k + 1 merged is (module
    docstring): group L − k (the inner level's) inserted with trip count 1, positions past
    group L − k − 1 moved out past it, each array of the merged level at its host."""
    on_chip = len(blocking.orders)  # the merged hierarchy's groups: one more than its levels
    g = on_chip - k
    cut = len(GROUP0) + len(DIMS) * (g - 1) - 1  # the end of group g − 1

    def moved(p: int | None) -> int | None:
        return p if p is None or p <= cut else p + len(DIMS)

    tiles = [dict(zip(DIMS, t, strict=True)) for t in blocking.tiles]
    buffers = {}
    for array, host, positions in zip(ARRAYS, hosts, blocking.buffers, strict=True):
        at = moved(positions[k - 1])
        buffers[array] = [*map(moved, positions[:k - 1]), at if host == k else None,
                          at if host == k + 1 else None, *map(moved, positions[k:])]
    return Blocking.of([*blocking.orders[:g], DIMS, *blocking.orders[g:]],
                       [*tiles[:g], tiles[g - 1], *tiles[g:]], buffers)


def two_levels(blocking: Blocking, hosts: Hosts) -> Blocking:
    """`unmerged` of a blocking of two on-chip levels taken as one: t_1 = t_0."""
    if len(blocking.orders) != 2:
        raise ValueError(f"a merged level's blocking has 2 loop groups, got "
                         f"{len(blocking.orders)}")
    return unmerged(blocking, 1, hosts)


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


__all__ = ["Hosts", "MergedLevel", "in_merged", "merged_levels", "new_patterns", "two_levels",
           "unmerged"]
