"""Feature-map fusion of seed 003 (section 5.3, Algorithm 2) for sparse connection tables.

Every output map is a "program" reading its input set. A group of programs is run as one: the
union of its input maps is loaded once per group instead of once per program. Traffic is in
elements; a group's working set must fit the local memory (see `fits_rule`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform

Groups = tuple[tuple[int, ...], ...]
Fits = Callable[[int, int], bool]  # (input maps in the union, output maps) -> fits


def input_sets(layer: ConvLayer) -> tuple[frozenset[int], ...]:
    """Input maps read by each output map: the connection table, else dense (per group)."""
    if layer.connections is not None:
        return tuple(frozenset(row) for row in layer.connections)
    per_group = layer.Oc // layer.groups
    return tuple(frozenset(range(oc // per_group * layer.Kc, (oc // per_group + 1) * layer.Kc))
                 for oc in range(layer.Oc))


def fits_rule(layer: ConvLayer, capacity: int | Platform | Fits,
              band_rows: int | None = None) -> Fits:
    """The capacity test of a group, as a function of (input maps in its union, output maps).

    A callable capacity is that test itself (e.g. an instruction-buffer limit, simd.codegen).

    An int capacity is a number of input maps held at once (output maps not counted). A
    Platform gives a byte budget, `local_mem_bytes`, halved when `double_buffer` (two copies of
    each buffer so transfers overlap compute); it must hold, for one image, every input map of
    the union and every output map of the group. With band_rows=None maps are whole (Ix·Iy and
    Ox·Oy elements); with band_rows=r the layer runs in bands of r output rows through a rolling
    line buffer that keeps the Ky′ − Sy halo rows, so a map holds min(Iy, (r−1)·Sy + Ky′) input
    rows of Ix elements (or r output rows of Ox) while each input element is still loaded once.
    Kernels are not counted in the budget.
    """
    if callable(capacity):
        return capacity
    if not isinstance(capacity, Platform):
        return lambda n_in, n_out: n_in <= capacity
    budget = capacity.local_mem_bytes // (2 if capacity.double_buffer else 1)
    out_rows = layer.Oy if band_rows is None else min(band_rows, layer.Oy)
    in_rows = min(layer.Iy, (out_rows - 1) * layer.Sy + layer.Ky_span)
    in_bytes = layer.Ix * in_rows * capacity.elem_bytes
    out_bytes = layer.Ox * out_rows * capacity.elem_bytes
    return lambda n_in, n_out: n_in * in_bytes + n_out * out_bytes <= budget


def unfused_groups(layer: ConvLayer) -> Groups:
    """Every output map its own group."""
    return tuple((oc,) for oc in range(layer.Oc))


def fuse_maps(layer: ConvLayer, capacity: int | Platform | Fits,
              band_rows: int | None = None) -> Groups:
    """Greedy fusion (seed 003 Algorithm 2): groups of output maps, in creation order.

    Seed: the largest remaining program (most input maps, lowest index on ties). Then merge
    repeatedly the program whose inputs have the largest intersection with the group's union,
    then the smallest difference (new maps added; for equal intersection this also minimises the
    symmetric difference), then the lowest index, among those that keep the group within
    capacity and share at least one input (a disjoint merge saves nothing). A program that does
    not fit even alone forms its own group.
    """
    sets, fits = input_sets(layer), fits_rule(layer, capacity, band_rows)
    left = set(range(layer.Oc))
    groups: list[tuple[int, ...]] = []
    while left:
        seed = min(left, key=lambda p: (-len(sets[p]), p))
        left.discard(seed)
        group, union = [seed], set(sets[seed])
        while True:
            cands = [p for p in left
                     if sets[p] & union and fits(len(union | sets[p]), len(group) + 1)]
            if not cands:
                break
            best = min(cands, key=lambda p: (-len(sets[p] & union), len(sets[p] - union), p))
            left.discard(best)
            group.append(best)
            union |= sets[best]
        groups.append(tuple(sorted(group)))
    return tuple(groups)


def check_groups(layer: ConvLayer, groups: Sequence[Sequence[int]]) -> None:
    """Raise ValueError unless every output map is in exactly one non-empty group."""
    flat = [oc for group in groups for oc in group]
    if any(not group for group in groups) or sorted(flat) != list(range(layer.Oc)):
        raise ValueError(f"layer {layer.name!r}: groups must partition output maps "
                         f"0..{layer.Oc - 1}, got {groups!r}")


@dataclass(frozen=True, slots=True)
class FmapTraffic:
    """External elements moved by a layer under a grouping."""

    inputs: int    # union of each group's input maps × Ix·Iy·On
    weights: int   # connections × Kx·Ky (each kernel loaded once)
    outputs: int   # Oc × Ox·Oy·On (each output map written once)
    loads: int     # input-map loads per image (sum of union sizes)

    @property
    def total(self) -> int:
        return self.inputs + self.weights + self.outputs


def fmap_traffic(layer: ConvLayer, groups: Sequence[Sequence[int]]) -> FmapTraffic:
    """Elements moved when each group loads the union of its input maps once."""
    check_groups(layer, groups)
    sets = input_sets(layer)
    loads = sum(len(frozenset().union(*(sets[oc] for oc in group))) for group in groups)
    return FmapTraffic(inputs=loads * layer.Ix * layer.Iy * layer.On,
                       weights=layer.params,
                       outputs=layer.Oc * layer.Ox * layer.Oy * layer.On,
                       loads=loads)


def optimal_groups(layer: ConvLayer, capacity: int | Platform, band_rows: int | None = None,
                   max_states: int = 1 << 16) -> Groups | None:
    """A grouping with the fewest input-map loads, or None if the table is too large.

    Exhaustive search over set partitions respecting capacity (oversized programs alone, as in
    `fuse_maps`), memoised on the multiset of programs left: programs with equal input sets form
    a class; the group holding a member of the first class left is enumerated by the union of
    its input sets and, since a member that still fits can always move in at no cost, filled
    to capacity with members whose inputs lie in that union.
    Returns the greedy result at once when it already loads every used input map once only.
    None when the number of states (product of class sizes + 1) exceeds max_states.
    """
    sets, fits = input_sets(layer), fits_rule(layer, capacity, band_rows)
    greedy = fuse_maps(layer, capacity, band_rows)
    if fmap_traffic(layer, greedy).loads == len(frozenset().union(*sets)):
        return greedy
    classes = sorted(set(sets), key=sorted)
    members = [[oc for oc in range(layer.Oc) if sets[oc] == s] for s in classes]
    n_states = 1
    for m in members:
        n_states *= len(m) + 1
    if n_states > max_states:
        return None

    def unions(state: tuple[int, ...], first: int) -> set[frozenset[int]]:
        """Unions of input sets reachable from class `first` that fit with one output map."""
        seen, todo = {classes[first]}, [classes[first]]
        while todo:
            union = todo.pop()
            for k, left in enumerate(state):
                new = union | classes[k]
                if left and new not in seen and fits(len(new), 1):
                    seen.add(new)
                    todo.append(new)
        return seen

    def splits(state: tuple[int, ...], ks: list[int], total: int, low: int = 1):
        """Member counts per class in ks (first >= low, others >= 0) summing to total."""
        if len(ks) == 1:
            if low <= total <= state[ks[0]]:
                yield (total,)
            return
        for n in range(low, min(state[ks[0]], total) + 1):
            for tail in splits(state, ks[1:], total - n, 0):
                yield (n,) + tail

    @functools.cache
    def best(state: tuple[int, ...]) -> tuple[int, tuple[tuple[int, int], ...]]:
        """(fewest loads, ((class, count), ...) of each group) for the programs left."""
        if not any(state):
            return 0, ()
        first = next(k for k, c in enumerate(state) if c)
        result = None
        for union in unions(state, first):
            ks = [k for k, c in enumerate(state) if c and classes[k] <= union]
            room = 0
            for n in range(1, sum(state[k] for k in ks) + 1):
                if not fits(len(union), n):
                    break
                room = n
            for counts in splits(state, ks, max(room, 1)):  # room 0: oversized, alone
                rest = list(state)
                for k, n in zip(ks, counts, strict=True):
                    rest[k] -= n
                cost, plan = best(tuple(rest))
                if result is None or len(union) + cost < result[0]:
                    group = tuple((k, n) for k, n in zip(ks, counts, strict=True) if n)
                    result = (len(union) + cost, (group,) + plan)
        return result

    _, plan = best(tuple(len(m) for m in members))
    taken = [0] * len(members)
    groups = []
    for group in plan:
        ocs = []
        for k, n in group:
            ocs += members[k][taken[k]:taken[k] + n]
            taken[k] += n
        groups.append(tuple(sorted(ocs)))
    return tuple(sorted(groups))


def fusion_table(network: Network, capacity: int | Platform, band_rows: int | None = None,
                 optimum: bool = True) -> pd.DataFrame:
    """One row per conv layer: input traffic (elements) unfused, greedy, optimum; reductions.

    reduction_pct is the greedy saving on input traffic, total_reduction_pct on inputs +
    weights + outputs; in_optimum is NaN when the search is too large (or optimum=False).
    """
    rows = []
    for layer in network.tiled_layers():
        base = fmap_traffic(layer, unfused_groups(layer))
        groups = fuse_maps(layer, capacity, band_rows)
        fused = fmap_traffic(layer, groups)
        opt = optimal_groups(layer, capacity, band_rows) if optimum else None
        rows.append({
            "layer": layer.name, "maps": layer.Oc, "groups": len(groups),
            "in_unfused": base.inputs, "in_fused": fused.inputs,
            "in_optimum": fmap_traffic(layer, opt).inputs if opt is not None else float("nan"),
            "reduction_pct": 100 * (1 - fused.inputs / base.inputs),
            "total_reduction_pct": 100 * (1 - fused.total / base.total),
        })
    return pd.DataFrame(rows)
