"""A brute force over every blocking of two on-chip levels (every divisor chain, every order
of each group's loops of trip count > 1, every position of each array at each level or none,
each register-file buffer inside its SRAM buffer), fitting by `accesses.evaluate`'s rule (eq.
2 buffers), with a scalar datapath: the independent reference of tests/test_hierarchy_merged.py
and benchmarks/bench_hierarchy_gaps.py. Positions enclosing the same loops of trip count > 1
with the same outermost one are priced once (they give the same counts), and the arrays apart:
an array's transfers depend on its own positions only, so per array only the options no other
beats in energy and in both levels' bytes are combined; the optimum found is re-priced whole by
`evaluate` and asserted to agree."""

from __future__ import annotations

import itertools
import math

from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    BankedCapacity,
    Blocking,
    ElementBytes,
    Hierarchy,
    SplitCapacity,
    evaluate,
)
from workbench.hierarchy.accesses import buffer_bytes, energy_by_array_pj, energy_pj
from workbench.hierarchy.blocking import transfers, trip_counts
from workbench.hierarchy.search import gen_chains
from workbench.layers import ConvLayer

ONE = ElementBytes(1, 1, 1, 1)
EXTENT = {"X": "Ox", "Y": "Oy", "C": "Kc", "M": "Oc", "N": "On"}


def _undominated(options: list[tuple]) -> list[tuple]:
    """(energy, SRAM bytes, RF bytes, positions) options no other is at most in all three."""
    kept: list[tuple] = []
    for o in sorted(options, key=lambda o: o[:3]):
        if not any(k[0] <= o[0] and k[1] <= o[1] and k[2] <= o[2] for k in kept):
            kept.append(o)
    return kept


def level_banks(level) -> list[tuple[str, float]]:
    """(arrays, bytes) of each memory of a level whose bytes those arrays share, written out
    from its capacity: one of I, W, O for a shared level, one per array for a split one, the
    banks of a banked one (an array in none: a bank of 0 B)."""
    cap = level.capacity_bytes
    if isinstance(cap, SplitCapacity):
        return [(a, cap.of(a)) for a in ARRAYS]
    if isinstance(cap, BankedCapacity):
        return [*cap.banks, *((a, 0) for a in ARRAYS if all(a not in b for b, _ in cap.banks))]
    return [("IWO", level.total_bytes)]


def _fits_alone(hier: Hierarchy, array: str, used: list[dict]) -> bool:
    """Does the array's buffer fit its memory at each level?"""
    return all(used[k][array] <= size for k, level in enumerate(hier.levels) if k
               for arrays, size in level_banks(level) if array in arrays)


def _fits_together(hier: Hierarchy, choice: tuple) -> bool:
    """Do the arrays' buffers fit each memory they share at each level together?"""
    return all(sum(c[k] for a, c in zip(ARRAYS, choice, strict=True) if a in arrays) <= size
               for k, level in enumerate(hier.levels) if k
               for arrays, size in level_banks(level))


def every_blocking_optimum(layer: ConvLayer, hier: Hierarchy, merged: bool = False
                           ) -> tuple[float, Blocking | None]:
    """The least `evaluate` energy (pJ) over every blocking of two on-chip levels that fits by
    `evaluate`'s rule, and one such blocking (module docstring). merged: only those holding no
    array at both levels, with t_1 = t_0 (group 1 running once): one-level blockings of the two
    levels taken as one, each array at its own level's energy and capacity."""
    levels = len(hier.levels) - 1
    best, arg = math.inf, None
    for combo in itertools.product(*(gen_chains(getattr(layer, EXTENT[d]), levels)
                                     for d in DIMS)):
        if merged and any(c[0] != c[1] for c in combo):
            continue
        tiles = [{d: int(c[g]) for d, c in zip(DIMS, combo, strict=True)}
                 for g in range(levels)]
        empty = {a: [None] * levels for a in ARRAYS}
        probe = Blocking.of([GROUP0] + [DIMS] * levels, tiles, empty)
        real = {lp for lp, n in zip(probe.loops, trip_counts(layer, probe), strict=True)
                if n > 1}
        mac = energy_pj(transfers(layer, probe, levels + 1, hier.datapath), hier, ONE)["mac"]
        names = [[lp[0] for lp in probe.loops if lp[1] == g] for g in range(levels + 1)]
        for firsts in itertools.product(*(itertools.permutations([n for n in group
                                                                  if (n, g) in real])
                                          for g, group in enumerate(names))):
            orders = [tuple(f) + tuple(n for n in group if (n, g) not in real)
                      for g, (f, group) in enumerate(zip(firsts, names, strict=True))]
            loops = Blocking.of(orders, tiles, empty).loops
            seen: dict = {}
            for p in range(-1, len(loops)):
                inside = [j for j in range(p + 1) if loops[j] in real]
                seen.setdefault((frozenset(loops[j] for j in inside),
                                 loops[inside[-1]] if inside else None), p)
            positions = [None, *sorted(seen.values())]
            per_array = []
            for array in ARRAYS:
                options = []
                for outer, inner in itertools.product(positions, repeat=2):
                    if outer is not None and inner is not None and (merged or inner > outer):
                        continue
                    buffers = dict(empty, **{array: [outer, inner]})
                    moved = transfers(layer, Blocking.of(orders, tiles, buffers), levels + 1,
                                      hier.datapath)
                    used = buffer_bytes(moved, levels + 1, ONE)
                    if not _fits_alone(hier, array, used):
                        continue
                    energy = sum(v[array] for v in
                                 energy_by_array_pj(moved, hier, ONE).values())
                    options.append((energy, used[1][array], used[2][array], (outer, inner)))
                per_array.append(_undominated(options))
            for choice in itertools.product(*per_array):
                total = sum(c[0] for c in choice) + mac
                if total < best and _fits_together(hier, [(0.0, c[1], c[2]) for c in choice]):
                    best = total
                    arg = Blocking.of(orders, tiles, {a: list(c[3]) for a, c in
                                                      zip(ARRAYS, choice, strict=True)})
    if arg is not None:  # the arrays priced apart add up to the blocking priced whole
        whole = evaluate(layer, arg, hier, ONE)
        assert whole.fits and math.isclose(whole.total_energy_pj, best, rel_tol=1e-9)
    return best, arg
