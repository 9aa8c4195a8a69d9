"""Co-design (workbench.hierarchy.codesign): the grid is enumerated completely, the best
design and every design's energy equal a brute force over blockings, the Pareto front is
complete and non-dominated (checked by definition on random and real designs)."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hierarchy_model import _brute_force_r

from workbench.errors import WorkbenchError
from workbench.hierarchy import (
    BankedCapacity,
    ElementBytes,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
)
from workbench.hierarchy.codesign import (
    Codesigner,
    Design,
    DesignSpace,
    LevelSlot,
    best_within,
    codesign,
    pareto_front,
)
from workbench.hierarchy.search import search, search_r
from workbench.layers import ConvLayer

PREC = ElementBytes(1, 1, 1, 2)
DRAM = Level("DRAM", None, 64, 200.0)


def sqrt_energy(size: int, bits: int) -> float:
    """A size-derived access energy (pJ per access), rising with size like table 3."""
    return 0.05 * math.sqrt(size) * bits / 16


LAYERS = (ConvLayer(name="a", Ox=4, Oy=2, Oc=3, Kx=2, Ky=2, Kc=2),
          ConvLayer(name="b", Ox=3, Oy=3, Oc=2, Kx=3, Ky=1, Kc=3, Sx=2))
SPACE = DesignSpace(DRAM, (LevelSlot("SRAM", 64, (None, 96, 160, SplitCapacity(32, 48, 16)),
                                     area_mm2_per_kb=2.0),
                           LevelSlot("RF", 16, (None, 16, 40), area_mm2_per_kb=4.0)),
                    mac_energy_pj=1.0)


def _dominated(d: Design, others, axis: str) -> bool:
    return any(o.cost(axis) <= d.cost(axis) and o.energy_pj <= d.energy_pj
               and (o.cost(axis) < d.cost(axis) or o.energy_pj < d.energy_pj) for o in others)


def _check_front(designs, front, axis: str) -> None:
    """By definition: no front member is dominated; every non-dominated (cost, energy) point
    is on the front once; the front rises in cost and falls in energy."""
    points = [(d.cost(axis), d.energy_pj) for d in front]
    assert len(set(points)) == len(points)
    assert all(not _dominated(d, designs, axis) for d in front)
    wanted = {(d.cost(axis), d.energy_pj) for d in designs if not _dominated(d, designs, axis)}
    assert set(points) == wanted
    assert all(a[0] < b[0] and a[1] > b[1] for a, b in zip(points, points[1:], strict=False))


def _fake(cost: float, energy: float) -> Design:
    hier = Hierarchy((DRAM, Level("L", 1 + int(cost), 16, 1.0)))
    return Design(hier, energy, (energy,), (), 0.0, int(cost), cost / 2)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=25),
       st.sampled_from(["capacity", "area"]))
def test_pareto_front_is_complete_and_non_dominated(points, axis: str) -> None:
    designs = [_fake(float(c), float(e)) for c, e in points]
    _check_front(designs, pareto_front(designs, axis), axis)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=25),
       st.one_of(st.none(), st.integers(0, 12)))
def test_best_within_budget_is_the_least_energy_affordable(points, budget) -> None:
    designs = [_fake(float(c), float(e)) for c, e in points]
    best = best_within(designs, budget)
    affordable = [d for d in designs if budget is None or d.capacity_bytes <= budget]
    if not affordable:
        assert best is None
        return
    assert best.energy_pj == min(d.energy_pj for d in affordable)
    assert budget is None or best.capacity_bytes <= budget


def _grid_by_hand() -> list[tuple]:
    """Every valid choice of SPACE, enumerated independently of gen_hierarchies."""
    out = []
    for sram, rf in itertools.product(SPACE.slots[0].capacities, SPACE.slots[1].capacities):
        chosen = [(s, c) for s, c in zip(SPACE.slots, (sram, rf), strict=True) if c is not None]
        totals = [c.total if isinstance(c, SplitCapacity) else c for _, c in chosen]
        if chosen and all(a >= b for a, b in zip(totals, totals[1:], strict=False)):
            out.append(tuple(chosen))
    return out


def test_grid_is_enumerated_completely() -> None:
    by_hand = _grid_by_hand()
    made = list(SPACE.gen_hierarchies())
    assert SPACE.size() == len(made) == len(by_hand) == 11  # 4 × 3 choices but (None, None)
    got = {tuple((lvl.name, lvl.capacity_bytes) for lvl in h.on_chip) for h in made}
    assert got == {tuple((s.name, c) for s, c in choice) for choice in by_hand}
    assert {len(h.on_chip) for h in made} == {1, 2}  # shallower hierarchies from None slots


def test_every_design_equals_brute_force_over_blockings() -> None:
    """The co-design logic with the whole-block search (space R), against a brute force over
    R's blockings: every design's energy is the sum of its layers' optima."""
    designer = Codesigner(LAYERS, PREC, sqrt_energy, search_fn=search_r)
    result = codesign(LAYERS, SPACE, designer=designer)
    assert len(result.designs) == SPACE.size()  # every hierarchy here fits both layers
    for design in result.designs:
        brute = [_brute_force_r(lay, design.hierarchy, PREC, sqrt_energy) for lay in LAYERS]
        assert design.energy_pj == pytest.approx(sum(brute), rel=1e-12)
        for lay, blocking, energy in zip(LAYERS, design.blockings, design.layer_energy_pj,
                                         strict=True):
            priced = evaluate(lay, blocking, design.hierarchy, PREC, sqrt_energy)
            assert priced.fits and priced.total_energy_pj == pytest.approx(energy, rel=1e-12)
    best = min(result.designs, key=lambda d: d.energy_pj)
    assert result.best.energy_pj == best.energy_pj
    for axis in ("capacity", "area"):
        _check_front(result.designs, pareto_front(result.designs, axis), axis)
    _check_front(result.designs, result.pareto, "capacity")


@pytest.mark.parametrize("budget", [16, 40, 96, 112, 200])
def test_best_within_a_capacity_budget_is_the_brute_force_minimum(budget: int) -> None:
    designer = Codesigner(LAYERS, PREC, sqrt_energy, search_fn=search_r)
    result = codesign(LAYERS, SPACE, budget=budget, designer=designer)
    brute = []
    for choice in _grid_by_hand():
        hier = Hierarchy((DRAM, *(Level(s.name, c, s.access_bits, None, None,
                                        s.area_mm2_per_kb) for s, c in choice)),
                         mac_energy_pj=1.0)
        if sum(lvl.total_bytes for lvl in hier.on_chip) <= budget:
            brute.append(sum(_brute_force_r(lay, hier, PREC, sqrt_energy) for lay in LAYERS))
    assert result.best.energy_pj == pytest.approx(min(brute), rel=1e-12)
    assert result.best.capacity_bytes <= budget


def test_default_designs_are_sums_of_the_exact_search_and_beat_whole_blocks() -> None:
    """With the default search (space S, brute-force checked in test_hierarchy_search), each
    design is Σ of independent `search` calls, priced the same by `evaluate`, and never above
    the whole-block (R) design of the same hierarchy."""
    result = codesign(LAYERS, SPACE, precision=PREC, size_energy=sqrt_energy)
    whole = {d.hierarchy: d.energy_pj for d in codesign(
        LAYERS, SPACE, designer=Codesigner(LAYERS, PREC, sqrt_energy, search_fn=search_r)
    ).designs}
    assert len(result.designs) == SPACE.size()
    for design in result.designs:
        want = [search(lay, design.hierarchy, PREC, sqrt_energy).energy_pj for lay in LAYERS]
        assert design.energy_pj == pytest.approx(sum(want), rel=1e-12)
        for lay, blocking, energy in zip(LAYERS, design.blockings, design.layer_energy_pj,
                                         strict=True):
            priced = evaluate(lay, blocking, design.hierarchy, PREC, sqrt_energy)
            assert priced.fits and priced.total_energy_pj == pytest.approx(energy, rel=1e-12)
        assert design.energy_pj <= whole[design.hierarchy] * (1 + 1e-12)
    assert any(d.energy_pj < whole[d.hierarchy] * (1 - 1e-9) for d in result.designs)
    _check_front(result.designs, result.pareto, "capacity")


def test_area_axis_and_memory_to_compute_ratio() -> None:
    result = codesign(LAYERS, SPACE, budget=0.2, axis="area", precision=PREC,
                      size_energy=sqrt_energy)
    cheap = [d for d in result.designs if d.area_mm2 <= 0.2]
    assert cheap and result.best.energy_pj == min(d.energy_pj for d in cheap)
    for d in result.designs:  # area = Σ KB × mm²/KB of the levels
        want = sum(lvl.total_bytes / 1024 * lvl.area_mm2_per_kb for lvl in d.hierarchy.on_chip)
        assert d.area_mm2 == pytest.approx(want)
        macs = sum(lay.macs for lay in LAYERS)
        assert d.memory_to_compute == pytest.approx((d.energy_pj - macs) / macs)


def test_searches_are_memoized_across_budgets() -> None:
    calls = []

    def counting(layer, hier, precision, size_energy):
        calls.append((layer.name, hier.name))
        return search(layer, hier, precision, size_energy)

    designer = Codesigner(LAYERS, PREC, sqrt_energy, search_fn=counting)
    first = codesign(LAYERS, SPACE, budget=96, designer=designer)
    assert len(calls) == len(LAYERS) * SPACE.size()
    second = codesign(LAYERS, SPACE, budget=200, designer=designer)
    assert len(calls) == len(LAYERS) * SPACE.size()  # nothing searched again
    assert second.best.energy_pj <= first.best.energy_pj


def test_infeasible_hierarchies_are_left_out_and_errors_are_one_line() -> None:
    """With every level holding every array (bypass=False) a 3 B register file cannot hold
    one input, one weight and one 2 B partial sum, its smallest blocks, and is left out; with
    bypass by choice it may hold less, so every size has a design."""
    big = ConvLayer(name="big", Ox=4, Oy=4, Oc=2, Kx=5, Ky=5, Kc=2)
    space = DesignSpace(DRAM, (LevelSlot("RF", 16, (3, 64)),))

    def r_holders(designer_layers):
        return Codesigner(designer_layers, PREC, sqrt_energy,
                          search_fn=functools.partial(search, bypass=False))

    result = codesign([big], space, designer=r_holders([big]))
    assert [d.capacity_bytes for d in result.designs] == [64]
    with pytest.raises(WorkbenchError, match="no hierarchy of the grid fits"):
        codesign([big], DesignSpace(DRAM, (LevelSlot("RF", 16, (3,)),)),
                 designer=r_holders([big]))
    every = codesign([big], space, precision=PREC, size_energy=sqrt_energy)
    assert [d.capacity_bytes for d in every.designs] == [3, 64]
    with pytest.raises(WorkbenchError, match="area budget needs area_mm2_per_kb"):
        codesign([big], space, budget=1.0, axis="area", size_energy=sqrt_energy)
    with pytest.raises(WorkbenchError, match="unknown cost axis"):
        codesign([big], space, axis="power")
    with pytest.raises(WorkbenchError, match="needs energy_pj"):
        DesignSpace(Level("DRAM", None, 64), (LevelSlot("RF", 16, (8,)),))
    with pytest.raises(WorkbenchError, match="at least one candidate"):
        LevelSlot("RF", 16, ())


# --- the `workbench hierarchy` command (workbench.cli.hierarchy) -----------------------------

NET_YAML = """name: tiny
layers:
  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3, stride: 1, pad: 0}
  - {name: f1, type: fc, input: [16, 1, 1], outputs: 6}
"""
LEVELS_YAML = """name: two-on-chip
mac_energy_pj: 1.0
levels:
  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 320}
  - {name: SRAM, capacity: 4096, access_bits: 64, energy_pj: null}
  - {name: RF, capacity: 256, access_bits: 64, energy_pj: null}
"""


def _files(tmp_path, levels: str = LEVELS_YAML) -> tuple[str, str]:
    (tmp_path / "net.yaml").write_text(NET_YAML)
    (tmp_path / "levels.yaml").write_text(levels)
    return str(tmp_path / "net.yaml"), str(tmp_path / "levels.yaml")


def _parser():
    import argparse

    from workbench.cli import hierarchy as cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    return parser


def test_cli_rows_equal_the_search_priced_by_evaluate(tmp_path, capsys) -> None:
    import json

    from workbench import layers
    from workbench.hierarchy import hierarchy_from_dict
    from workbench.hierarchy.codesign import table3_energy_pj
    from workbench.layers.zoo import read_yaml

    net_file, levels_file = _files(tmp_path)
    args = _parser().parse_args(["hierarchy", net_file, "--levels", levels_file, "--json"])
    args.func(args)
    doc = json.loads(capsys.readouterr().out)
    hier = hierarchy_from_dict(read_yaml(levels_file, "t"), "t")
    prec = ElementBytes(2, 2, 2, 4)
    total = 0.0
    for layer in layers.load_network(net_file).tiled_layers():
        found = search(layer, hier, prec, table3_energy_pj)
        priced = evaluate(layer, found.blocking, hier, prec, table3_energy_pj)
        rows = {r["level"]: r for r in doc["rows"] if r["layer"] == layer.name}
        for level, acc in zip(hier.levels, priced.accesses, strict=True):
            assert rows[level.name]["I"] == acc.total("I")
            assert rows[level.name]["O_partial"] == acc.total("O_partial")
            assert rows[level.name]["energy_pj"] == pytest.approx(priced.energy_pj[level.name])
        assert rows["MAC"]["energy_pj"] == pytest.approx(layer.macs * 1.0)
        total += found.energy_pj
    assert doc["given"]["energy_pj"] == pytest.approx(total)
    assert sum(r["energy_pj"] for r in doc["rows"]) == pytest.approx(total)


def _grid_by_search(tiled, sram_capacity) -> dict[tuple[int, int], float]:
    """{(SRAM KB, RF KB): the layers' searched energies (pJ) summed} over the hierarchies of
    SRAM and RF sizes 1, 2 and 4 KB within 4 KB, RF no larger, built by hand (the SRAM's
    capacity `sram_capacity(KB)`), 16-bit data and 32-bit partial sums, table 3 energies."""
    from workbench.hierarchy.codesign import table3_energy_pj

    brute = {}
    for sram, rf in itertools.product((1, 2, 4), repeat=2):
        if rf > sram or sram + rf > 4:
            continue
        hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("SRAM", sram_capacity(sram), 64),
                          Level("RF", rf * 1024, 64)), mac_energy_pj=1.0)
        brute[sram, rf] = sum(search(lay, hier, ElementBytes(2, 2, 2, 4),
                                     table3_energy_pj).energy_pj for lay in tiled)
    return brute


def test_cli_budget_codesigns_the_brute_force_best(tmp_path, capsys) -> None:
    from workbench import layers
    from workbench.cli import hierarchy as cli
    from workbench.hierarchy.codesign import table3_energy_pj

    net_file, levels_file = _files(tmp_path)
    doc = cli.run(net_file, levels_file, budget_kb=4, memory_kb=[1, 2, 4])
    prec = ElementBytes(2, 2, 2, 4)
    tiled = layers.load_network(net_file).tiled_layers()
    brute = _grid_by_search(tiled, lambda kb: kb * 1024)
    co = doc["codesign"]
    assert co["best"]["energy_pj"] == pytest.approx(min(brute.values()))
    assert co["best"]["on_chip_kb"] <= 4
    # the co-designed hierarchy's cycles: each layer's best blocking there, priced by hand
    sram, rf = min(brute, key=brute.get)
    assert co["best"]["on_chip_kb"] == sram + rf
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("SRAM", sram * 1024, 64),
                      Level("RF", rf * 1024, 64)), mac_energy_pj=1.0)
    for lay in tiled:
        priced = evaluate(lay, search(lay, hier, prec, table3_energy_pj).blocking, hier, prec,
                          table3_energy_pj)
        cycles, bound, use = co["best"]["layer_cycles"][lay.name]
        assert (cycles, bound) == (pytest.approx(priced.cycles), priced.bound)
        assert use == pytest.approx(lay.macs / priced.timing.compute_cycles)  # one MAC
    assert co["best"]["cycles"] == pytest.approx(
        sum(c for c, *_ in co["best"]["layer_cycles"].values()))
    args = _parser().parse_args(["hierarchy", net_file, "--levels", levels_file,
                                 "--budget-kb", "4", "--memory-kb", "1", "2", "4"])
    args.func(args)
    out = capsys.readouterr().out
    assert "co-designed within 4 KB" in out and "Pareto front" in out and "pJ/MAC" in out
    assert out.count("cycles per layer (bound, MAC array use): ") == 2  # given, co-designed


@pytest.mark.parametrize("levels, budget, rule", [
    (LEVELS_YAML.replace("access_bits: 64, energy_pj: null}\n  - {name: RF",
                         "access_bits: 24, energy_pj: null}\n  - {name: RF"), None,
     r"^level '\w+' \(energy_pj null: from its size, \d+ B at 24 bits\): memory width 24 "
     "bits not tabulated"),
    (LEVELS_YAML.replace("capacity: 256", "capacity: 8192"), None,
     "capacities must not increase inwards"),
    (LEVELS_YAML, 0.5, "below the smallest size"),
    (LEVELS_YAML, float("inf"), "--budget-kb must be a finite number > 0, got inf"),
    (LEVELS_YAML, float("nan"), "--budget-kb must be a finite number > 0, got nan"),
])
def test_cli_errors_are_one_line(tmp_path, levels, budget, rule) -> None:
    from workbench.cli import hierarchy as cli

    net_file, levels_file = _files(tmp_path, levels)
    with pytest.raises(WorkbenchError, match=rule):
        cli.run(net_file, levels_file, budget_kb=budget)


EXPLICIT_RF = LEVELS_YAML.replace("{name: RF, capacity: 256, access_bits: 64, energy_pj: null}",
                                  "{name: RF, capacity: 256, access_bits: 24, energy_pj: 0.5}")


def test_cli_codesign_a_grid_it_cannot_price_is_refused_first(tmp_path, monkeypatch) -> None:
    """An RF with its own energy_pj at a width table 3 has no row for prices fine alone, but
    the co-designed grid prices every level from its size: with a budget the command says
    so, naming the level, before any layer is searched (nothing computed is thrown away)."""
    from workbench.cli import hierarchy as cli
    from workbench.hierarchy.codesign import Codesigner

    net_file, levels_file = _files(tmp_path, EXPLICIT_RF)
    assert cli.run(net_file, levels_file)["given"]["energy_pj"] > 0  # alone: priced
    searched = []
    real = Codesigner.layer_result
    monkeypatch.setattr(Codesigner, "layer_result",
                        lambda self, *a: searched.append(a) or real(self, *a))
    with pytest.raises(WorkbenchError, match=r"^co-design prices every on-chip level from its "
                       r"size \(its energy_pj is not kept\): level 'RF' at 24 bits cannot be "
                       r"priced: memory width 24 bits not tabulated"):
        cli.run(net_file, levels_file, budget_kb=4, memory_kb=[1, 2, 4])
    assert searched == []


def test_cli_codesign_says_what_the_grid_does_not_keep(tmp_path, capsys) -> None:
    """The given RF's own energy_pj (0.1 pJ, far below table 3's) is not the grid's: the
    co-design output says so, and that the given hierarchy, within the budget, beats the
    grid's best (by hand: its energy is below every priced design's)."""
    net_file, levels_file = _files(tmp_path, EXPLICIT_RF.replace(
        "access_bits: 24, energy_pj: 0.5", "access_bits: 64, energy_pj: 0.1").replace(
        "capacity: 4096", "capacity: 1024"))
    args = _parser().parse_args(["hierarchy", net_file, "--levels", levels_file,
                                 "--budget-kb", "4", "--memory-kb", "1", "2", "4"])
    args.func(args)
    out = " ".join(capsys.readouterr().out.split())  # prose is wrapped at 100 columns
    assert "(every co-designed level is priced from its size, seed 001 table 3: the given " \
           "energy_pj of RF is not carried over)" in out
    from workbench.cli import hierarchy as cli

    doc = cli.run(net_file, levels_file, budget_kb=4, memory_kb=[1, 2, 4])
    assert doc["given"]["on_chip_kb"] <= 4
    assert doc["given"]["energy_pj"] < min(d["energy_pj"] for d in doc["codesign"]["pareto"])
    assert "is within the budget and below the grid's best" in out


@pytest.mark.parametrize("argv, rule", [
    (["--budget-kb", "inf"], "argument --budget-kb: must be a finite number > 0, got 'inf'"),
    (["--budget-kb", "-5"], "argument --budget-kb: must be a finite number > 0, got '-5'"),
    (["--memory-kb", "4", "8"], "--memory-kb: the level sizes to co-design from need "
                               "--budget-kb"),
    (["--budget-kb", "8", "--memory-kb", "16", "32"], "--memory-kb 16 32: every size is over "
                                                     "--budget-kb 8"),
])
def test_cli_budget_and_sizes_are_checked_before_anything_is_priced(argv, rule) -> None:
    """Each fails at once, in one line and with exit code 2 (no plan is priced first)."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "workbench.cli", "hierarchy", "lenet5",
                          "--levels", "seed001_two_level", *argv], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == "", (run.returncode, run.stdout)
    assert rule in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.mark.parametrize("extent, levels", [(12, 1), (30, 2), (24, 3), (97, 2), (1, 3),
                                            (36, 4), (60, 3), (128, 2), (45, 1), (50, 3)])
def test_nondominated_chains_equal_the_quadratic_definition(extent: int, levels: int) -> None:
    """The filter search uses keeps exactly the vectors no other vector is ≤ (componentwise,
    and different), one chain per vector, in lexicographic order; the chains it filters are
    every tuple t_0 | t_1 | … | t_{L−1} ≤ extent (enumerated here by brute force)."""
    import itertools

    import numpy as np

    from workbench.hierarchy.search import gen_chains, nondominated_chains

    every = [c for c in itertools.product(range(1, extent + 1), repeat=levels)
             if all(b % a == 0 for a, b in zip(c, c[1:], strict=False))] if levels < 4 else \
        [c for last in range(1, extent + 1)
         for c in itertools.product(*[[d for d in range(1, last + 1) if last % d == 0]] *
                                    (levels - 1) + [[last]])
         if all(b % a == 0 for a, b in zip(c, c[1:], strict=False))]
    assert sorted(map(tuple, gen_chains(extent, levels).tolist())) == sorted(every)

    def vector(chain):
        padded = -(-extent // chain[-1]) * chain[-1]
        return tuple(int(v) for v in chain) + tuple(int(padded // t) for t in chain) + (
            int(padded),)

    vectors = sorted({vector(c) for c in gen_chains(extent, levels)})
    wanted = [v for v in vectors if not any(all(a <= b for a, b in zip(u, v, strict=True))
                                            and u != v for u in vectors)]
    kept = nondominated_chains(extent, levels)
    assert [vector(c) for c in kept] == wanted
    assert not kept.flags.writeable and np.array_equal(kept, nondominated_chains(extent, levels))


def test_space_around_keeps_levels_and_split_proportions() -> None:
    from workbench.hierarchy.codesign import space_around

    hier = Hierarchy((DRAM, Level("SRAM", SplitCapacity(2048, 32768, 2048), 256, None, None, 0.5),
                      Level("RF", 512, 64)), mac_energy_pj=2.0)
    space = space_around(hier, [1024, 18432, 1024])
    assert [s.name for s in space.slots] == ["SRAM", "RF"] and space.mac_energy_pj == 2.0
    # 1 KB in 1:16:1: 56.9, 910.2, 56.9 B; the 2 B left go to I and O
    assert space.slots[0].capacities == (SplitCapacity(57, 910, 57),
                                         SplitCapacity(1024, 16384, 1024))
    assert space.slots[1].capacities == (1024, 18432) and space.slots[0].area_mm2_per_kb == 0.5
    with pytest.raises(WorkbenchError, match="positive byte counts"):
        space_around(hier, [])


def test_space_around_keeps_bank_proportions() -> None:
    """Banks scale like split parts (sizes worked out by hand) and are named by their
    arrays."""
    from workbench.hierarchy.codesign import capacity_text, space_around
    from workbench.viz.hierarchy_plots import level_text

    cap = BankedCapacity((("IO", 4096), ("W", 32768)))
    hier = Hierarchy((DRAM, Level("SRAM", cap, 256), Level("RF", 512, 64)))
    slot = space_around(hier, [1024, 36864]).slots[0]
    # 1 KB in 1:8: 113.78 and 910.22 B, the byte left to I+O (larger remainder)
    assert slot.capacities == (BankedCapacity((("IO", 114), ("W", 910))), cap)
    assert capacity_text(cap) == "4/32 KB (I+O/W)"
    assert level_text(Level("SRAM", slot.capacities[0], 256)) == "114/910 B (I+O/W) of 1 KB"


def test_cli_codesigns_a_banked_level(tmp_path, capsys) -> None:
    """A level of two banks from a hierarchy file (inputs and outputs sharing one, weights
    in the other): the CLI's co-design keeps the banks in proportion and its best equals the
    least over the grid's hierarchies, built here by hand and searched one by one."""
    from workbench import layers
    from workbench.cli import hierarchy as cli

    banked = LEVELS_YAML.replace("capacity: 4096", "capacity: {I+O: 1024, W: 3072}")
    net_file, levels_file = _files(tmp_path, banked)
    doc = cli.run(net_file, levels_file, budget_kb=4, memory_kb=[1, 2, 4])
    tiled = layers.load_network(net_file).tiled_layers()
    brute = _grid_by_search(tiled, lambda kb: BankedCapacity((("IO", 256 * kb),
                                                             ("W", 768 * kb))))
    best = doc["codesign"]["best"]
    assert best["energy_pj"] == pytest.approx(min(brute.values()), rel=1e-12)
    sram, rf = min(brute, key=brute.get)
    banks = {1: "256/768 B", 2: "512/1,536 B", 4: "1/3 KB"}[sram]
    assert best["hierarchy"] == f"SRAM {banks} (I+O/W) | RF {rf} KB"
    args = _parser().parse_args(["hierarchy", net_file, "--levels", levels_file])
    args.func(args)
    assert "two-on-chip" in capsys.readouterr().out


def test_padded_outermost_blocks_are_named_in_the_cli(capsys) -> None:
    """Outermost tiles that do not divide the layer: ⌈E/t⌉·t per dimension (X 5 → 6 with
    t = 2, M 64 → 66 with t = 22; Y, C, N divide), printed under the design's table."""
    from workbench.cli import hierarchy as cli
    from workbench.hierarchy import DIMS, GROUP0, Blocking
    from workbench.layers import ConvLayer

    layer = ConvLayer(name="conv3", Ox=5, Oy=4, Oc=64, Kx=3, Ky=3, Kc=8)
    blocking = Blocking.of([GROUP0, DIMS], [{"X": 2, "Y": 4, "C": 8, "M": 22, "N": 1}],
                           {"I": [None], "W": [None], "O": [None]})
    whole = Blocking.of([GROUP0, DIMS], [{"X": 5, "Y": 2, "C": 4, "M": 16, "N": 1}],
                        {"I": [None], "W": [None], "O": [None]})
    padded = cli.padded_layers([layer, layer], [blocking, whole])
    assert padded == {"conv3": {"X": [5, 6], "M": [64, 66]}}
    design = {"hierarchy": "h", "on_chip_kb": 1, "energy_pj": 1e6, "memory_to_compute": 1.0,
              "padded": padded}
    cli._print_design("t", design, [{"layer": "conv3", "level": "DRAM", "I": 1}])
    assert "padded outermost blocks, priced as full (extent → padded): conv3 X 5→6, M 64→66" \
        in " ".join(capsys.readouterr().out.split())


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 40), st.integers(0, 9)),
                min_size=2, max_size=2).filter(
           lambda caps: all(c[1] for c in caps) and sum(caps[0]) >= sum(caps[1])),
       st.lists(st.integers(3, 1 << 20), min_size=1, max_size=4, unique=True))
def test_split_grid_keeps_every_size_combination(caps, sizes) -> None:
    """`space_around` on two split levels of any proportions: each part is its proportion of
    the grid size rounded down or up (at least 1 B when it was not 0), the parts sum to the
    size, and every pair of grid sizes not increasing inwards is a hierarchy of the grid,
    equal sizes included."""
    from workbench.hierarchy.codesign import space_around

    hier = Hierarchy((DRAM, *(Level(f"L{i}", SplitCapacity(*c), 64) for i, c in enumerate(caps))))
    space = space_around(hier, sizes)
    for cap, slot in zip(caps, space.slots, strict=True):
        for size, part in zip(sorted(sizes), slot.capacities, strict=True):
            assert part.total == size
            for share, got in zip(cap, (part.I, part.W, part.O), strict=True):
                exact = share * size / sum(cap)
                assert (got == 0) == (share == 0)
                assert math.floor(exact) - 1 <= got <= max(1, math.ceil(exact))
    pairs = {tuple(lvl.total_bytes for lvl in h.on_chip) for h in space.gen_hierarchies()}
    assert pairs == {(a, b) for a in sizes for b in sizes if a >= b}
