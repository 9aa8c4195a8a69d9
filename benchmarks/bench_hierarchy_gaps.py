"""How far the search's space S is from every blocking, on two on-chip levels, and what its
merged parts add on three (prints, asserts nothing but that the brute force's optimum costs
what `evaluate` says and fits).

With one on-chip level S holds every blocking fitting by `evaluate`'s rule (property tests in
tests/test_hierarchy_search.py). With two it leaves out blockings
(`workbench.hierarchy.search`'s docstring, "Not in S"): a level's buffers in two roles' loop
groups unless no array is held at both levels and t_1 = t_0 (the merged part,
`search.merged`), and an outer level's eq. 2 buffer set by the inner levels' loops. This
benchmark measures what that costs: on random tiny layers (1-4 output columns, 1-2 rows, 1-2
maps in and out, kernels 1-3 wide, strides 1-2) over DRAM, an SRAM of 3-10 B (or split 2-6 B
per array) and a register file of 1-4 B (1 B elements), it compares S's optimum (`search`)
with a brute force over every blocking (`tests/every_blocking.py`: every divisor chain, every
order of each group's loops of trip count > 1, every position −1 … last loop of each array at
each level or none, each register-file buffer inside its SRAM buffer, fitting by `evaluate`'s
rule). `--space banked`: the SRAM two banks of 2-6 B, a pair of arrays sharing one, the
register file 1-2 B; `--space larger`: 1-4 × 1-2 outputs, 1-3 output and 1-2 input maps,
kernels 1-3 wide and tall, an SRAM of 6-20 B and a register file of 2-8 B (cases of up to
minutes of brute force each).
Each case where the brute force is cheaper prints where its optimum keeps each array (the loop
group of each level's buffer: 0 innermost … 2 outermost), and the least over the merged
blockings alone (no array held at both levels and t_1 = t_0, by the same brute force).
`--levels 3`: on random tiny layers over three small on-chip levels, S's optimum against its
role orders' alone (`search(..., merged=False)`): what merging two adjacent levels adds.
Run: nice .venv/bin/python benchmarks/bench_hierarchy_gaps.py [--cases 60] [--seed 1]
     [--space tiny|banked|larger] [--levels 2|3] [--workers N] (cases in N processes;
     default one per processor)
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    BankedCapacity,
    Blocking,
    Hierarchy,
    Level,
    SplitCapacity,
)
from workbench.hierarchy.codesign import capacity_text
from workbench.hierarchy.search import search
from workbench.layers import ConvLayer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from every_blocking import ONE, every_blocking_optimum  # noqa: E402 (the tests' reference)


def _group(position: int | None) -> str:
    """The loop group a buffer position lies in ('-': bypassed; '0|1': the end of group 0,
    also group 1's start; '1|2' likewise)."""
    if position is None:
        return "-"
    end0, end1 = len(GROUP0) - 1, len(GROUP0) + len(DIMS) - 1
    return "0" if position < end0 else "0|1" if position == end0 else \
        "1" if position < end1 else "1|2" if position == end1 else "2"


def random_case(rng: random.Random, space: str = "tiny") -> tuple[ConvLayer, Hierarchy]:
    """A tiny layer over DRAM, a small SRAM (shared or split; "banked": two banks, a pair of
    arrays sharing one) and a smaller register file; "larger": larger layers and levels (the
    module docstring)."""
    if space == "larger":
        layer = ConvLayer(name="g", Ox=rng.randint(1, 4), Oy=rng.choice([1, 2]),
                          Oc=rng.randint(1, 3), Kc=rng.choice([1, 2]), Kx=rng.randint(1, 3),
                          Ky=rng.choice([1, 2]), Sx=rng.randint(1, 2))
        sram = rng.randint(6, 20)
        rf = rng.randint(2, min(8, sram - 1))
        energies = [2.0, 4.0, 8.0, 16.0], [0.25, 0.5, 1.0]
    else:
        layer = ConvLayer(name="g", Ox=rng.randint(1, 4), Oy=rng.choice([1, 1, 2]),
                          Oc=rng.randint(1, 2), Kc=rng.choice([1, 1, 2]), Kx=rng.randint(1, 3),
                          Ky=1, Sx=rng.randint(1, 2))
        energies = [4.0, 8.0, 16.0], [0.5, 1.0]
        if space == "banked":
            pair = rng.choice(["IO", "IW", "WO"])
            sram = BankedCapacity(((pair, rng.randint(2, 6)),
                                   ("".join(a for a in ARRAYS if a not in pair),
                                    rng.randint(2, 6))))
            rf = rng.randint(1, 2)
        elif rng.random() < 0.25:
            sram, rf = SplitCapacity(*(rng.randint(2, 6) for _ in ARRAYS)), rng.randint(1, 2)
        else:
            sram = rng.randint(3, 10)
            rf = rng.randint(1, min(4, sram - 1))
    hier = Hierarchy((Level("DRAM", None, 16, rng.choice([100.0, 200.0])),
                      Level("SRAM", sram, 16, rng.choice(energies[0])),
                      Level("RF", rf, 16, rng.choice(energies[1]))), mac_energy_pj=1.0)
    return layer, hier


def random_three(rng: random.Random) -> tuple[ConvLayer, Hierarchy]:
    """A tiny layer over DRAM and three small on-chip levels (`--levels 3`)."""
    layer = ConvLayer(name="g3", Ox=rng.randint(1, 4), Oy=rng.choice([1, 2]),
                      Oc=rng.randint(1, 2), Kc=rng.choice([1, 2]), Kx=rng.randint(1, 3), Ky=1,
                      Sx=rng.randint(1, 2))
    l1 = rng.randint(4, 16)
    l2 = rng.randint(2, min(8, l1))
    l3 = rng.randint(1, min(4, l2))
    hier = Hierarchy((Level("DRAM", None, 16, rng.choice([100.0, 200.0])),
                      Level("L1", l1, 16, rng.choice([8.0, 16.0])),
                      Level("L2", l2, 16, rng.choice([2.0, 4.0])),
                      Level("L3", l3, 16, rng.choice([0.25, 0.5, 1.0]))), mac_energy_pj=1.0)
    return layer, hier


def compare_three(case: tuple[ConvLayer, Hierarchy]) -> tuple[float, float, float, float]:
    """(S's optimum, its role orders' alone (pJ), search s with and without the merged
    parts)."""
    layer, hier = case
    start = time.perf_counter()
    whole = search(layer, hier, ONE).energy_pj
    middle = time.perf_counter()
    roles = search(layer, hier, ONE, merged=False).energy_pj
    return whole, roles, middle - start, time.perf_counter() - middle


def three_levels(cases: int, seed: int, workers: int) -> None:
    """`--levels 3`: how often and by how much S's merged parts lower the optimum below its
    role orders' on random tiny cases (no brute force over every blocking of three levels:
    out of reach)."""
    rng = random.Random(seed)
    drawn = [random_three(rng) for _ in range(cases)]
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(compare_three, drawn))
    cheaper = []
    for (layer, hier), (whole, roles, _, _) in zip(drawn, results, strict=True):
        if whole < roles * (1 - 1e-9):
            cheaper.append(roles / whole - 1)
            print(f"{layer.name}: {layer.Ox}x{layer.Oy} outputs, C {layer.Kc}, M {layer.Oc}, "
                  f"kernel {layer.Kx}, stride {layer.Sx}; levels " + ", ".join(
                      f"{capacity_text(lvl.capacity_bytes)}" for lvl in hier.on_chip) +
                  f": S {whole:,.1f} pJ, its role orders alone {roles:,.1f} pJ "
                  f"({100 * (roles / whole - 1):.1f}% above)")
    spread = f" ({100 * min(cheaper):.1f}-{100 * max(cheaper):.1f}% above S)" if cheaper else ""
    print(f"three on-chip levels, {cases} tiny cases (seed {seed}): S's role orders alone are "
          f"above S (merged levels) in {len(cheaper)}{spread}; search "
          f"{sum(r[2] for r in results):.1f} s, without the merged parts "
          f"{sum(r[3] for r in results):.1f} s, {time.perf_counter() - start:.0f} s in all "
          f"with {workers} process(es)")


def compare(case: tuple[ConvLayer, Hierarchy]) -> tuple[float, float, Blocking | None, float,
                                                         float, float]:
    """(S's optimum, the every-blocking optimum (pJ), its blocking, brute-force s, search s,
    the merged optimum where S's is above every blocking's, else inf)."""
    layer, hier = case
    start = time.perf_counter()
    every, blocking = every_blocking_optimum(layer, hier)
    brute = time.perf_counter() - start
    start = time.perf_counter()
    found = search(layer, hier, ONE)
    searched = time.perf_counter() - start
    s_energy = math.inf if found is None else found.energy_pj
    merged = every_blocking_optimum(layer, hier, merged=True)[0] if \
        s_energy > every * (1 + 1e-9) else math.inf
    return s_energy, every, blocking, brute, searched, merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--space", choices=["tiny", "banked", "larger"], default="tiny",
                        help="the random cases' layers and levels (module docstring)")
    parser.add_argument("--levels", type=int, choices=[2, 3], default=2,
                        help="on-chip levels (3: S against its role orders alone)")
    args = parser.parse_args()
    if args.levels == 3:
        three_levels(args.cases, args.seed, args.workers)
        return
    rng = random.Random(args.seed)
    cases = [random_case(rng, args.space) for _ in range(args.cases)]
    # the pinned case of tests/test_hierarchy_incumbents.py (`_sram_in_two_roles`)
    cases.insert(0, (ConvLayer(name="pinned", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1),
                     Hierarchy((Level("DRAM", None, 16, 100.0), Level("SRAM", 5, 16, 8.0),
                                Level("RF", 2, 16, 0.5)), mac_energy_pj=1.0)))
    start, gaps = time.perf_counter(), []
    brute_s = search_s = 0.0
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(compare, cases))
    merged_equal = 0
    for (layer, hier), (s_energy, every, blocking, brute, searched, merged) in \
            zip(cases, results, strict=True):
        brute_s, search_s = brute_s + brute, search_s + searched
        gap = s_energy / every - 1 if every < math.inf else 0.0
        gaps.append(gap)
        if gap > 1e-9:
            where = "; ".join(f"{level.name} " + " ".join(
                f"{a}:{_group(blocking.positions(a)[k])}" for a in ARRAYS)
                for k, level in enumerate(hier.levels[1:]))
            print(f"{layer.name}: {layer.Ox}x{layer.Oy} outputs, C {layer.Kc}, M {layer.Oc}, "
                  f"kernel {layer.Kx}, stride {layer.Sx}; SRAM "
                  f"{capacity_text(hier.levels[1].capacity_bytes)}, RF "
                  f"{capacity_text(hier.levels[2].capacity_bytes)}: S {s_energy:,.1f} pJ, every "
                  f"blocking {every:,.1f} pJ (S {100 * gap:.1f}% above it), the levels merged "
                  f"{merged:,.1f} pJ; groups of the buffers: {where}")
            merged_equal += math.isclose(merged, every, rel_tol=1e-9)
    below = [g for g in gaps if g > 1e-9]
    where = (f"in {len(below)} a blocking outside S is cheaper (S "
             f"{100 * min(below):.1f}-{100 * max(below):.1f}% above it), and in "
             f"{merged_equal} of them the levels merged (no array at both, t_1 = t_0) reach "
             f"that least" if below else "in none is a blocking outside S cheaper")
    print(f"two on-chip levels, {len(cases)} {args.space} cases (the pinned one and "
          f"{args.cases} random, seed {args.seed}): S's optimum is the least over every "
          f"blocking in "
          f"{len(cases) - len(below)}; {where}; brute force {brute_s:.0f} s, search "
          f"{search_s:.1f} s, {time.perf_counter() - start:.0f} s in all with {args.workers} "
          f"process(es)")


if __name__ == "__main__":
    main()
