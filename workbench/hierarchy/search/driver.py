"""Exact minimum-energy blocking of one layer on a given hierarchy, over the space S
(seed 001 §3 blocking strings with seed 002's per-array buffering positions, one level each).

The space, the lemmas that shrink it without losing the optimum (positions just before a
relevant loop, dominated placements, independent levels, tile chains, the X/Y mirror) and the
exact bounds the search prunes with (incumbents, pattern and class floors, lifted and kept
bounds, shares across processes) are written out in docs/search.md; its last section, "Where
the code is", names the module carrying each part. Objective: `accesses.energy_pj` summed, MAC
energy included."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import ElementBytes, PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, Blocking
from workbench.hierarchy.levels import Hierarchy, SizeEnergy
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.alone import AloneTables
from workbench.hierarchy.search.bounds import incumbent, pattern_floor
from workbench.hierarchy.search.chains import chain_classes, dim_extents, nondominated_chains
from workbench.hierarchy.search.class_floors import ClassFloors
from workbench.hierarchy.search.classes import search_classes
from workbench.hierarchy.search.context import (
    NoFitError,
    RoleJob,
    RoleSearch,
    SearchMemo,
    SearchResult,
    Space,
)
from workbench.hierarchy.search.grid import mirrored
from workbench.hierarchy.search.levels import chosen_blocking
from workbench.hierarchy.search.memory import InnerMemory
from workbench.hierarchy.search.merged import merged_levels, new_patterns, unmerged
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.points import price_slice
from workbench.hierarchy.search.pricing import pj_per_bit
from workbench.hierarchy.search.roles import (
    holder_patterns,
    in_roles,
    role_orders,
    role_patterns,
    to_memory,
)
from workbench.layers.spec import ConvLayer, as_grouped
from workbench.memo import Caches, caches_or_new


def search(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike | None = None,
           size_energy: SizeEnergy | None = None, bypass: bool = True,
           incumbents: Sequence[Blocking] = (), share: tuple[int, int] = (0, 1),
           merged: bool = True, caches: Caches | None = None) -> SearchResult | None:
    """The minimum-energy blocking of the layer in S (see the module docstring); energy in
    pJ for the whole layer (ties: the first in the search's own order, whatever it was given
    or kept before: docs/search.md, "One answer among equal optima"). bypass=False: only R's
    holders (every level holds every array it can; NoFitError when no such blocking fits).
    `incumbents`: blockings to start from (e.g. the layer's optima on other hierarchies):
    the least-energy one in S that fits (`search.bounds.incumbent`) is an energy the optimum
    is at most, so only blockings below it (× `tuning.TIE`: its equals too) are priced; it is the
    answer when none is. `share` (k, n): only the slices (or class combinations:
    `search_classes`) k, k + n, k + 2n, ... of a `sliced` layer (n processes searching one
    layer: the least of their answers is the optimum, each being its share's least or the
    start); None when the share has no blocking and there is no start. `merged` False: the
    role orders only, not the merged parts (a smaller space, for measuring what they add).
    `caches`: where searches keep what later ones reuse (`search.context.SearchMemo`; none:
    kept for this call only)."""
    memo = SearchMemo.of(caches_or_new(caches))
    layer = as_grouped(layer)  # a connection table's groups, if it has them
    precision = ElementBytes() if precision is None else precision
    start = incumbent(layer, hierarchy, precision, size_energy, bypass, incumbents)
    # searched below the start's energy raised by TIE: the optima equal to it are found too,
    # so that the one returned is the search's own first, whatever incumbents it was given
    below = math.inf if start is None else start[0] * tuning.TIE
    found = _least(layer, hierarchy, precision, size_energy, bypass, below, share, (0, 1),
                   merged, memo)
    interrupt.progress(1.0)
    on_chip = len(hierarchy.levels) - 1
    chains = {d: len(nondominated_chains(e, on_chip)) for d, e in dim_extents(layer).items()}
    combos = math.prod(chains.values())
    if found is None and start is not None:  # nothing below the incumbent: it is optimal
        return SearchResult(start[1], start[0], chains, combos)
    if found is None and share[1] > 1:
        return None
    if found is None:
        raise NoFitError(f"layer {layer.name!r}: no blocking fits hierarchy "
                         f"{hierarchy.name!r} (its smallest blocks overflow a level)")
    return SearchResult(found[1], found[0], chains, combos)


def _least(layer: ConvLayer, hierarchy, precision: PrecisionLike,
           size_energy: SizeEnergy | None, bypass: bool, best: float, share: tuple[int, int],
           span: tuple[int, int], merged: bool, memo: SearchMemo
           ) -> tuple[float, Blocking] | None:
    """S's least blocking of the hierarchy (a `RoleView` when merged levels make it one) below
    `best` (pJ): (energy, blocking), or None; `memo`: what searches keep for later ones.
    The role orders (the identity first, R's holders: `bypass` False searches only those),
    then, with `bypass` and `merged`, the merged parts (`search.merged`: with two on-chip
    levels one-level searches of their new patterns, with more the whole search of each
    merged hierarchy). `span` (i, n): the progress reported
    is the i-th of n equal parts of the whole (a merged part's search inside another's)."""
    on_chip = len(hierarchy.levels) - 1
    extent = dim_extents(layer)
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    orders = list(role_orders(hierarchy, bypass))
    parts = merged_levels(hierarchy) if bypass and merged else []
    stages = len(orders) + len(parts)
    best_at = None

    def stage(r: int) -> tuple[int, int]:
        return span[0] * stages + r, span[1] * stages

    shared: dict = {}  # the class floors' role-free part (`search_classes`), built once
    for r, roles in enumerate(orders):  # the identity first: R's holders
        seen = in_roles(hierarchy, roles)
        found = _search_roles(RoleJob(layer, seen, roles, precision, size_energy, bypass,
                                      per_dim, extent, memo), best, share, stage(r), shared)
        if found is not None:
            best, (rows_at, chosen, pattern) = found
            tiles = [{d: int(per_dim[d][rows_at[d]][g]) for d in DIMS} for g in range(on_chip)]
            best_at = to_memory(chosen_blocking(seen, tiles, chosen, pattern), roles)
    one = {d: nondominated_chains(extent[d], 1) for d in DIMS}
    done: set = set()  # the merged patterns searched (each under one assignment)
    for r, (k, hosts, virtual) in enumerate(parts, len(orders)):  # levels as one
        if on_chip == 2:
            found = _search_roles(RoleJob(layer, virtual, (1,), precision, size_energy, True,
                                          one, extent, memo), best, share, stage(r), {},
                                  new_patterns(virtual, hosts, done))
            if found is not None:
                best, (rows_at, chosen, pattern) = found
                tiles = [{d: int(one[d][rows_at[d]][0]) for d in DIMS}]
                best_at = unmerged(chosen_blocking(virtual, tiles, chosen, pattern), k, hosts)
        elif (found := _least(layer, virtual, precision, size_energy, True, best, share,
                              stage(r), True, memo)) is not None:
            best, best_at = found[0], unmerged(found[1], k, hosts)
    return None if best_at is None else (best, best_at)


def sliced(layer: ConvLayer, hierarchy: Hierarchy) -> bool:
    """Whether the layer is searched in many slices on the hierarchy (a `share` of it is then
    a share of the work; else share (0, n) is all of it and the others nothing)."""
    on_chip = len(hierarchy.levels) - 1
    return math.prod(len(nondominated_chains(e, on_chip))
                     for e in dim_extents(layer).values()) > tuning.SMALL


def _search_roles(job: RoleJob, best: float, share: tuple[int, int], stage: tuple[int, int],
                  shared: dict, patterns: list | None = None):
    """S's part under one role order (the job's `hierarchy`: seen under it): (energy pJ, where) of
    its least blocking below `best`, or None. `stage`: this role order's index and their
    count (the progress reported at each slice: role orders, then passes, then slices done);
    `shared`: what the role orders of one search share (the class floors' role-free part);
    `patterns`: the holder patterns to search (default: the role order's)."""
    layer, hierarchy, roles, precision = job.layer, job.hierarchy, job.roles, job.precision
    size_energy, bypass, per_dim, extent = job.size_energy, job.bypass, job.per_dim, job.extent
    on_chip = len(hierarchy.levels) - 1
    classes = {d: {g: chain_classes(per_dim[d], extent[d], g) for g in range(2, on_chip + 1)}
               for d in DIMS}  # role L−γ+1's view of each chain
    pj_bit = pj_per_bit(hierarchy, size_energy)
    space = Space(layer, hierarchy, per_dim, extent, classes, pj_bit, precision, job.memo)
    if patterns is None:
        patterns = role_patterns(hierarchy, roles) if bypass else \
            holder_patterns(hierarchy)[:1]
    floors = {p: pattern_floor(layer, hierarchy, pj_bit, precision, p) * layer.groups
              for p in patterns}
    if all(f >= best for f in floors.values()):
        return None  # no pattern can beat the best energy found
    mirror = mirrored(layer, hierarchy)
    tables: dict[tuple, tuple] = {}  # outer levels' best placements (`level_table`)
    # alone floors per class of chains: shared by the slices, or by one slice's points
    alone_tables = AloneTables(layer, hierarchy, per_dim, extent, precision, job.memo.tables)
    small = math.prod(len(c) for c in per_dim.values()) <= tuning.SMALL
    if ClassFloors.applies(alone_tables):  # classes lowest bound first
        if "floors" not in shared and any(f < best for f in floors.values()):
            shared["floors"] = ClassFloors(layer, hierarchy, per_dim, extent, precision,
                                           job.memo)
        if "floors" not in shared:
            return None
        if small and share[0]:  # one slice: all of it in share 0, as over slices
            return None
        memory = InnerMemory(layer, hierarchy, tuple(len(per_dim[d]) for d in DIMS),
                             precision, job.memo.inner) if small else None
        search = RoleSearch(space, tables, alone_tables, memory, mirror)
        found = search_classes(search, floors, best, shared["floors"],
                               (0, 1) if small else share, stage)
        if memory is not None:
            memory.keep()
        return found
    per_y = max(1, tuning.CHUNK // 4 // max(1, math.prod(len(per_dim[d]) for d in ("C", "M", "N"))))
    n_x = len(per_dim["X"])
    # a small layer is one slice, a large one an X chain and a slice of Y chains at a time
    # lemma 5: with X and Y alike only Y chains from the X chain's index on are searched
    pairs = np.triu_indices(n_x) if small and mirror else None  # (X, Y) index pairs, X ≤ Y
    slices = [(slice(0, n_x), slice(0, len(per_dim["Y"])))] if small else \
        [(slice(ox, ox + 1), slice(max(y0, ox) if mirror else y0, y0 + per_y))
         for ox in range(n_x) for y0 in range(0, len(per_dim["Y"]), per_y)
         if not mirror or y0 + per_y > ox]
    slices = slices[share[0]::share[1]]
    best_at = None
    alone: dict[tuple, np.ndarray] = {}  # relaxed_floor's terms when one slice
    kept = {(a, k): (layer, on_chip, k, hierarchy.levels[k].bytes_for(a), a, pairs is not None,
                     (precision.inputs, precision.weights, precision.outputs,
                      precision.partial_sums), unrolled_dims(hierarchy.datapath))
            for a in ARRAYS for k in range(1, on_chip + 1)}
    memory = None
    if len(slices) == 1:  # unit alone floors: the role's capacity and lanes, not its energy
        alone.update({key: v for key, memo in kept.items()
                      if (v := job.memo.alone.get(memo)) is not None})
        memory = InnerMemory(layer, hierarchy, tuple(len(per_dim[d]) for d in DIMS),
                             precision, job.memo.inner)
    search = RoleSearch(space, tables, alone_tables, memory, mirror, pairs)
    # R's holders first (every level holds every array it can, as S did): its optimum is
    # usually close, so the other patterns are then priced against a low best energy
    # (a slice whose least floor for the other patterns, found in the first pass, reaches the
    # best energy found is skipped in the second)
    slice_floor = dict.fromkeys(range(len(slices)), -math.inf)
    for step, (batch, later) in enumerate((([patterns[0]], patterns[1:]),
                                           (patterns[1:], []))):
        for i, (xs, ys) in enumerate(slices):
            interrupt.progress((stage[0] + (step + i / len(slices)) / 2) / stage[1])
            # patterns whose floor reaches the best energy found cannot beat it
            live = [p for p in batch if floors[p] < best]
            if not live:
                break
            if slice_floor[i] >= best:
                continue
            interrupt.check()  # a safe point: nothing half-stored (`interrupt`)
            found, slice_floor[i] = price_slice(
                search, live, xs, ys, best, alone if len(slices) == 1 else {},
                [p for p in later if floors[p] < best])
            if found is not None:
                best, best_at = found
    if memory is not None:
        memory.keep()
    for key, memo in kept.items():
        if key in alone:
            job.memo.alone.put(memo, alone[key])
    return None if best_at is None else (best, best_at)


__all__ = ["search", "sliced"]
