"""Two on-chip levels holding no array in common, searched as one level (`search.merged`):
banked capacities, the merged level's pricing, the map back to two levels, and the search
against a brute force over every such blocking (`test_hierarchy_search.merged_least`) and over
every blocking (`every_blocking`)."""

from __future__ import annotations

import pytest
from budget import examples
from every_blocking import every_blocking_optimum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_search import ONE, _extent, brute_force_s, merged_least

from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    Blocking,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
)
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.levels import (
    BankedCapacity,
    HierarchyError,
    banks_fit,
    capacity_banks,
)
from workbench.hierarchy.search import gen_chains, search
from workbench.hierarchy.search.merged import merged_levels, two_levels, unmerged
from workbench.layers import ConvLayer


def _levels(sram, rf, datapath=None) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 16, 100.0), Level("SRAM", sram, 16, 8.0),
                      Level("RF", rf, 16, 0.5)), mac_energy_pj=1.0, datapath=datapath)


def test_banked_capacity_rules() -> None:
    """Banks hold distinct arrays of I, W, O, each a whole number of bytes; an array in no
    bank has none; the total is the banks' sum."""
    with pytest.raises(HierarchyError, match=r"^capacity: banks must hold distinct arrays"):
        BankedCapacity((("WO", 8), ("W", 2)))
    with pytest.raises(HierarchyError, match=r"^capacity: banks must hold distinct arrays"):
        BankedCapacity((("X", 8),))
    with pytest.raises(HierarchyError, match=r"^capacity\.I: must be a whole number"):
        BankedCapacity((("I", 1.5),))
    cap = BankedCapacity((("WO", 96), ("I", 8)))
    level = Level("L1", cap, 16, 1.0)
    assert (cap.total, level.total_bytes) == (104, 104)
    assert [level.bytes_for(a) for a in ARRAYS] == [8, 96, 96]
    assert BankedCapacity((("W", 4),)).of("I") == 0


def test_capacity_banks_of_shared_split_and_banked_levels() -> None:
    """Which held arrays share bytes: all of a shared level's, none of a split one's, a bank's
    own under banks (banks in order of first use)."""
    shared = Level("L1", 64, 16, 1.0)
    split = Level("L1", SplitCapacity(2, 32, 4), 16, 1.0)
    banked = Level("L1", BankedCapacity((("WO", 96), ("I", 8))), 16, 1.0)
    assert capacity_banks(shared, ("I", "W", "O")) == ((0, 0, 0), (64.0,))
    assert capacity_banks(split, ("I", "O")) == ((0, 1), (2.0, 4.0))
    assert capacity_banks(banked, ("I", "W", "O")) == ((0, 1, 1), (8.0, 96.0))
    assert capacity_banks(banked, ("W", "O")) == ((0, 0), (96.0,))
    assert banks_fit(banked, {"I": 8, "W": 90, "O": 6})
    assert not banks_fit(banked, {"I": 8, "W": 90, "O": 7})
    assert not banks_fit(banked, {"I": 9, "W": 1, "O": 1})
    assert banks_fit(shared, {"I": 60, "O": 4}) and not banks_fit(split, {"I": 3})


def test_a_banked_level_reports_the_bank_it_overflows() -> None:
    """`evaluate` on a banked level: one violation naming the level, the bank's arrays and
    bytes."""
    layer = ConvLayer(name="t", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0),
                      Level("L1", BankedCapacity((("WO", 96), ("I", 3))), 16, 1.0)))
    tile = {"X": 4, "Y": 1, "C": 1, "M": 2, "N": 1}
    whole = Blocking.of([GROUP0, DIMS], [tile], {"I": [6], "W": [6], "O": [6]})
    priced = evaluate(layer, whole, hier, ONE)
    assert not priced.fits
    assert priced.violations == ("L1: I needs 6 B of 3 B",)


def test_merged_levels_price_each_array_at_its_own_level() -> None:
    """One merged level per assignment of the arrays to both levels (6 when both can hold
    every array; 1 when the register file holds only partial sums); each array priced per bit
    at its own level's energy (derived from the size where energy_pj is null), within its own
    level's bytes."""
    def rule(size: int, bits: int) -> float:
        return 0.01 * size + 0.1 * bits

    sram, rf = Level("SRAM", 64, 32, None), Level("RF", SplitCapacity(0, 4, 8), 16, None)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), sram, rf))
    merged = merged_levels(hier)
    assert [(k, hosts) for k, hosts, _ in merged] == [(1, (1, 1, 2)), (1, (1, 2, 1)),
                                                       (1, (1, 2, 2))]
    for _, hosts, virtual in merged:
        level = virtual.levels[1]
        for array, k in zip(ARRAYS, hosts, strict=True):
            source = hier.levels[k]
            assert level.access_pj(array, rule) / level.access_bits == pytest.approx(
                source.access_pj(array, rule) / source.access_bits, rel=1e-15)
            assert level.bytes_for(array) == source.bytes_for(array)
    banks = dict(merged[2][2].levels[1].capacity_bytes.banks)
    assert banks == {"I": 64, "W": 4, "O": 8}
    assert len(merged_levels(_levels(64, 8))) == 6
    # three on-chip levels: each adjacent pair, 6 assignments each; the rest kept
    three = Hierarchy((*_levels(64, 8).levels, Level("R0", 2, 16, 0.1)))
    pairs = merged_levels(three)
    assert [k for k, _, _ in pairs] == [1] * 6 + [2] * 6
    assert [lvl.name for lvl in pairs[0][2].levels] == ["DRAM", "SRAM+RF", "R0"]
    assert [lvl.name for lvl in pairs[6][2].levels] == ["DRAM", "SRAM", "RF+R0"]
    # a banked SRAM: the arrays it hosts keep its banks, shared only within one
    banked = {hosts: v for _, hosts, v in
              merged_levels(_levels(BankedCapacity((("IO", 40), ("W", 24))), 8))}
    assert banked[1, 2, 1].levels[1].capacity_bytes.banks == (("IO", 40), ("W", 8))
    assert banked[1, 1, 2].levels[1].capacity_bytes.banks == (("I", 40), ("W", 24), ("O", 8))


@st.composite
def one_level_blocking(draw, layer: ConvLayer) -> Blocking:
    """A random blocking of one on-chip level: a tile chain per dimension, any order of each
    group, each array anywhere (−1 … last loop) or bypassing."""
    tile = {d: int(draw(st.sampled_from(gen_chains(_extent(layer, d), 1)[:, 0]))) for d in DIMS}
    orders = [draw(st.permutations(GROUP0)), draw(st.permutations(DIMS))]
    top = len(GROUP0) + len(DIMS) - 1
    positions = {a: [draw(st.one_of(st.none(), st.integers(-1, top)))] for a in ARRAYS}
    return Blocking.of(orders, [tile], positions)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 4), st.integers(1, 2), st.integers(1, 3),
       st.integers(1, 2), st.sampled_from([(5, 2), (8, 3), (SplitCapacity(3, 2, 4), 2),
                                           (BankedCapacity((("IO", 5), ("W", 2))), 2)]))
def test_two_levels_prices_as_the_merged_level(data, ox, oc, kx, sx, sizes) -> None:
    """A merged level's blocking and the two-level blocking `two_levels` makes of it have the
    same energy per level and array (the merged level's split by host) and fit alike, by
    `evaluate` on each hierarchy."""
    layer = ConvLayer(name="m", Ox=ox, Oy=1, Oc=oc, Kx=kx, Ky=1, Kc=1, Sx=sx)
    hier = _levels(*sizes)
    merged = merged_levels(hier)
    _, hosts, virtual = merged[data.draw(st.integers(0, len(merged) - 1))]
    blocking = data.draw(one_level_blocking(layer))
    mine = evaluate(layer, blocking, virtual, ONE)
    theirs = evaluate(layer, two_levels(blocking, hosts), hier, ONE)
    assert mine.fits == theirs.fits
    assert mine.total_energy_pj == pytest.approx(theirs.total_energy_pj, rel=1e-12)
    assert mine.energy_pj["DRAM"] == pytest.approx(theirs.energy_pj["DRAM"], rel=1e-12)
    assert mine.energy_pj["SRAM+RF"] == pytest.approx(
        theirs.energy_pj["SRAM"] + theirs.energy_pj["RF"], rel=1e-12)
    two = two_levels(blocking, hosts)
    assert two.tiles[0] == two.tiles[1]
    for array, k, (p,) in zip(ARRAYS, hosts, blocking.buffers, strict=True):
        assert two.positions(array)[2 - k] is None
        assert (two.positions(array)[k - 1] is None) == (p is None)


@st.composite
def tiny_case(draw) -> tuple[ConvLayer, Hierarchy]:
    """A row of 1-4 outputs, 1-2 maps in and out, kernels 1-3 wide, strides 1-2, over DRAM,
    an SRAM of 3-10 B (or split 1-5 B per array, or two banks of 1-6 B, two arrays sharing
    one), a register file of 1-4 B, 1 B elements,
    energies per access drawn; a scalar datapath or one unrolling M or X by 2."""
    layer = ConvLayer(name="t", Ox=draw(st.integers(1, 4)), Oy=1, Oc=draw(st.integers(1, 2)),
                      Kc=draw(st.integers(1, 2)), Kx=draw(st.integers(1, 3)), Ky=1,
                      Sx=draw(st.integers(1, 2)))
    sram = draw(st.one_of(st.integers(3, 10),
                          st.builds(SplitCapacity, *(st.integers(1, 5) for _ in ARRAYS)),
                          st.builds(lambda pair, a, b: BankedCapacity(((pair, a), (
                              next(x for x in ARRAYS if x not in pair), b))),
                                    st.sampled_from(["IO", "IW", "WO"]), st.integers(1, 6),
                                    st.integers(1, 6))))
    rf = draw(st.integers(1, min(4, int(Level("S", sram, 8).total_bytes) - 1)))
    unroll = draw(st.sampled_from([None, {"M": 2}, {"X": 2}]))
    hier = Hierarchy((Level("DRAM", None, 16, draw(st.sampled_from([100.0, 200.0]))),
                      Level("SRAM", sram, 16, draw(st.sampled_from([4.0, 8.0, 16.0]))),
                      Level("RF", rf, 16, draw(st.sampled_from([0.5, 1.0])))),
                     mac_energy_pj=1.0, datapath=None if unroll is None else Datapath(unroll))
    return layer, hier


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_case())
def test_search_is_never_above_a_merged_blocking(case) -> None:
    """The search's optimum is at most the least blocking holding no array at both levels with
    t_1 = t_0 (`merged_least`: every one-level blocking with positions anywhere, every
    assignment of its arrays to the two levels, by `evaluate`), and its blocking fits and costs
    what it says."""
    layer, hier = case
    found = search(layer, hier, ONE)
    priced = evaluate(layer, found.blocking, hier, ONE)
    assert priced.fits
    assert priced.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
    assert found.energy_pj <= merged_least(layer, hier, ONE) * (1 + 1e-9)


@pytest.mark.parametrize("case", [
    # the pinned case of benchmarks/bench_hierarchy_gaps.py: S's role orders 1846 pJ
    (ConvLayer(name="pinned", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1), 5, 2, 8.0, 0.5),
    # a layer of two input maps, stride 2
    (ConvLayer(name="c2", Ox=3, Oy=1, Oc=2, Kx=3, Ky=1, Kc=2, Sx=2), 7, 3, 4.0, 1.0),
    # the pinned layer on an SRAM of two banks, inputs and outputs sharing one
    (ConvLayer(name="banked", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1),
     BankedCapacity((("IO", 4), ("W", 3))), 2, 8.0, 0.5),
])
def test_search_is_the_least_over_every_blocking(case) -> None:
    """On tiny layers the search's optimum is the least over every two-level blocking
    (`every_blocking`: every chain, order and position, by `evaluate`'s rule)."""
    layer, sram, rf, e_sram, e_rf = case
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("SRAM", sram, 16, e_sram),
                      Level("RF", rf, 16, e_rf)), mac_energy_pj=1.0)
    least, _ = every_blocking_optimum(layer, hier)
    found = search(layer, hier, ONE)
    assert found.energy_pj == pytest.approx(least, rel=1e-9)


def _three(l1, l2, l3, energies=(100.0, 8.0, 2.0, 0.25)) -> Hierarchy:
    dram, e1, e2, e3 = energies
    return Hierarchy((Level("DRAM", None, 16, dram), Level("L1", l1, 16, e1),
                      Level("L2", l2, 16, e2), Level("L3", l3, 16, e3)), mac_energy_pj=1.0)


@st.composite
def merged_blocking(draw, layer: ConvLayer, on_chip: int) -> Blocking:
    """A random blocking of `on_chip` levels: a tile chain per dimension, any order of each
    group, each array anywhere at each level (−1 … last loop) or bypassing it, its positions
    not growing outwards-in."""
    chains = {d: gen_chains(_extent(layer, d), on_chip) for d in DIMS}
    chosen = {d: draw(st.sampled_from(list(chains[d]))) for d in DIMS}
    tiles = [{d: int(chosen[d][g]) for d in DIMS} for g in range(on_chip)]
    orders = [draw(st.permutations(GROUP0))] + [draw(st.permutations(DIMS))
                                                for _ in range(on_chip)]
    top = len(GROUP0) + len(DIMS) * on_chip - 1
    buffers = {}
    for array in ARRAYS:
        held = [draw(st.one_of(st.none(), st.integers(-1, top))) for _ in range(on_chip)]
        real = sorted((p for p in held if p is not None), reverse=True)  # outer levels outer
        buffers[array] = [None if p is None else real.pop(0) for p in held]
    return Blocking.of(orders, tiles, buffers)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 4), st.integers(1, 2), st.integers(1, 3), st.integers(1, 2),
       st.sampled_from([(12, 5, 2), (6, 6, 3), (SplitCapacity(4, 3, 5), 4, 2),
                        (16, BankedCapacity((("IO", 3), ("W", 2))), 2)]))
def test_unmerged_prices_as_the_merged_hierarchy(data, ox, oc, kx, sx, sizes) -> None:
    """Three on-chip levels, two adjacent ones merged: a blocking of the merged hierarchy and
    the three-level blocking `unmerged` makes of it have the same energy per level (the merged
    level's split by host) and fit alike, by `evaluate` on each; the inner level's group runs
    once and each array of the pair is at its host only."""
    layer = ConvLayer(name="m3", Ox=ox, Oy=1, Oc=oc, Kx=kx, Ky=1, Kc=1, Sx=sx)
    hier = _three(*sizes)
    merged = merged_levels(hier)
    k, hosts, virtual = merged[data.draw(st.integers(0, len(merged) - 1))]
    blocking = data.draw(merged_blocking(layer, 2))
    three = unmerged(blocking, k, hosts)
    mine, theirs = evaluate(layer, blocking, virtual, ONE), evaluate(layer, three, hier, ONE)
    assert mine.fits == theirs.fits
    assert mine.total_energy_pj == pytest.approx(theirs.total_energy_pj, rel=1e-12)
    pair = [hier.levels[k].name, hier.levels[k + 1].name]
    for level in virtual.levels:
        parts = pair if level.name == "+".join(pair) else [level.name]
        assert mine.energy_pj[level.name] == pytest.approx(
            sum(theirs.energy_pj[name] for name in parts), rel=1e-12, abs=1e-9)
    g = 3 - k  # the inner level's group, of trip count 1
    assert three.tiles[g] == three.tiles[g - 1]
    for array, host in zip(ARRAYS, hosts, strict=True):
        at = three.positions(array)
        assert at[(2 * k + 1) - host - 1] is None  # the other level of the pair: not held
        assert (at[host - 1] is None) == (blocking.positions(array)[k - 1] is None)


def test_three_levels_search_merged_levels() -> None:
    """Three on-chip levels where S's role orders alone are above two levels merged: the
    search finds the least blocking of the merged hierarchy (L1 and L2 as one, L1 hosting O,
    L2 I and W), by its brute force, and it fits and costs that on the three levels; with the
    merged parts switched off it is dearer. (Offline, the brute force over S and over all 12
    merged hierarchies gives the same 634 pJ, S's role orders alone 670: 509 s.)"""
    layer = ConvLayer(name="r46", Ox=1, Oy=2, Oc=2, Kx=2, Ky=1, Kc=1)
    hier = _three(5, 5, 2)
    found = search(layer, hier, ONE)
    virtual = {(k, hosts): v for k, hosts, v in merged_levels(hier)}[1, (2, 2, 1)]
    assert found.energy_pj == pytest.approx(brute_force_s(layer, virtual, ONE), rel=1e-9)
    priced = evaluate(layer, found.blocking, hier, ONE)
    assert priced.fits and priced.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
    assert search(layer, hier, ONE, merged=False).energy_pj > found.energy_pj * (1 + 1e-9)
