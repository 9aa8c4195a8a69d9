"""The search's incumbents (a start from blockings already known, e.g. a layer's optima on
other hierarchies) change no answer: only blockings of S that fit are taken, and the result
is still S's brute-force optimum."""

from __future__ import annotations

import pytest
from budget import examples
from every_blocking import every_blocking_optimum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_search import (
    ONE,
    _cheapest,
    _extent,
    _fits,
    _r_plus_blockings,
    _s_blockings,
    _s_part,
    brute_force_s,
    search_case,
)

from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
)
from workbench.hierarchy.codesign import Codesigner, DesignSpace, LevelSlot
from workbench.hierarchy.search import gen_chains, search, tuning
from workbench.hierarchy.search.bounds import in_s, incumbent
from workbench.hierarchy.search.context import SearchMemo
from workbench.hierarchy.search.merged import in_merged
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.layers import ConvLayer
from workbench.memo import Caches

PREC = ElementBytes(1, 1, 1, 2)


def _s_blocking(data, layer: ConvLayer, hier: Hierarchy) -> Blocking:
    """A random blocking of S: a divisor chain per dimension, any order per group, each array
    at any position of each level's role's own group or bypassing it (fitting or not), under a
    random role order when its holders allow it (each array's in memory order, the innermost
    role holding some), else the identity."""
    levels = len(hier.levels) - 1
    tiles = [{} for _ in range(levels)]
    for d in DIMS:
        chains = gen_chains(_extent(layer, d), levels)
        row = chains[data.draw(st.integers(0, len(chains) - 1))]
        for g in range(levels):
            tiles[g][d] = int(row[g])
    orders = [GROUP0] + [data.draw(st.permutations(DIMS)) for _ in range(levels)]
    held = {a: [k for k in range(1, levels + 1)
                if hier.levels[k].bytes_for(a) > 0 and data.draw(st.booleans())]
            for a in ARRAYS}
    roles = data.draw(st.permutations(range(1, levels + 1)))  # roles[r − 1]: level of role r
    if any(roles.index(i) > roles.index(j) for c in held.values()
           for i, j in zip(c, c[1:], strict=False)) or \
            (roles != sorted(roles) and not any(roles[-1] in c for c in held.values())):
        roles = list(range(1, levels + 1))
    buffers = {a: [None] * levels for a in ARRAYS}
    for a, chain in held.items():
        for k in chain:
            end_inside = len(GROUP0) + len(DIMS) * (levels - 1 - roles.index(k)) - 1
            buffers[a][k - 1] = end_inside + data.draw(st.integers(0, len(DIMS)))
    return Blocking.of(orders, tiles, buffers)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case(), st.data())
def test_random_incumbents_change_no_optimum(case, data) -> None:
    """Any blockings of S as incumbents, fitting or not: the search still equals the search
    from nothing (itself equal to the brute force: test_hierarchy_search), with the same
    blocking, in S (or its merged part), fitting and costing what it says."""
    layer, hier = case
    picks = [_s_blocking(data, layer, hier) for _ in range(data.draw(st.integers(0, 6)))]
    assert all(in_s(layer, b, hier, True) for b in picks)
    # and the optimum with roomy levels (as the co-designer passes from larger hierarchies):
    # cheaper than any fitting blocking whenever the capacities bind
    roomy = Hierarchy((hier.levels[0], *(Level(lvl.name, 1 << 20, lvl.access_bits,
                                               lvl.energy_pj) for lvl in hier.on_chip)),
                      mac_energy_pj=hier.mac_energy_pj, datapath=hier.datapath)
    picks.insert(data.draw(st.integers(0, len(picks))), search(layer, roomy, PREC).blocking)
    found = search(layer, hier, PREC, incumbents=picks)
    cold = search(layer, hier, PREC)
    assert found.energy_pj == pytest.approx(cold.energy_pj, rel=1e-9)
    assert found.blocking == cold.blocking  # of equal optima the search's own first
    again = evaluate(layer, found.blocking, hier, PREC)
    # in S: its role orders (fitting by the search's footprints), or with two on-chip levels
    # their merged part (fitting as the model checks the blocking it is: eq. 2 buffers)
    if in_s(layer, found.blocking, hier, True):
        assert _fits(layer, found.blocking, hier, PREC)
    else:
        assert in_merged(found.blocking, hier, {d: _extent(layer, d) for d in DIMS},
                         unrolled_dims(hier.datapath))
        assert again.fits and not again.violations
    assert again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)


def test_an_optimal_incumbent_is_returned_as_it_is() -> None:
    """With S's optimum as the only incumbent nothing is found below it: the search returns
    that blocking, its own first optimum (test_one_answer: any other of equal energy given
    as the start is not returned)."""
    layer = ConvLayer(name="o", Ox=3, Oy=2, Oc=2, Kx=2, Ky=1, Kc=1, Sx=2)
    hier = Hierarchy((Level("DRAM", None, 32, 100.0), Level("L1", 12, 16, 2.0)),
                     mac_energy_pj=0.5)
    cold = search(layer, hier, PREC)
    warm = search(layer, hier, PREC, incumbents=[cold.blocking])
    assert warm.energy_pj == pytest.approx(cold.energy_pj, rel=1e-12)
    assert warm.blocking == cold.blocking
    assert warm.energy_pj == pytest.approx(brute_force_s(layer, hier, PREC), rel=1e-9)


def _sram_inside_group_0() -> tuple[ConvLayer, Hierarchy, Blocking]:
    """DRAM, a 5 B SRAM and a register file of 2 B for partial sums only, 1 B elements; the
    SRAM holds the inputs of two outputs' window (4) and one weight, both inside group 0, the
    register file two partial sums, also in group 0 (after the X and FX loops, which enclose
    all of group 0's loops of trip count > 1). It costs 994 pJ; under the identity role order
    S's optimum is 998 pJ (brute force). Not in S's role orders as written (both levels'
    buffers in group 0), but the register file's block is that of its position at the end of
    group 1, under the order playing the register file outermost: they hold an equivalent
    blocking; it is also of the merged part as written. (With a 6 B
    SRAM, S's optimum is 734 pJ under the identity: the SRAM holds the whole row of inputs
    as a window rolling along X and all three weights.)"""
    layer = ConvLayer(name="r", Ox=4, Oy=1, Oc=1, Kx=3, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("SRAM", 5, 16, 4.0),
                      Level("RF", SplitCapacity(0, 0, 2), 16, 0.5)), mac_energy_pj=1.0)
    tile = {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    blocking = Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS, DIMS], [tile, tile],
                           {"I": [1, None], "W": [0, None], "O": [None, 1]})
    return layer, hier, blocking


def test_levels_sharing_no_array_nest_either_way() -> None:
    """The SRAM's inputs and weights inside the loops around the register file's partial sums
    (`_sram_inside_group_0`): S's role orders reach the 994 pJ of that blocking (the brute
    force over S's blockings), below the identity order's 998 pJ (its own brute force). The
    merged part does better still: weights held whole in the SRAM outside group 0, inputs
    inside it, partial sums in the register file, 838 pJ, the least over every blocking (the
    brute force of `every_blocking`); the search finds that, its blocking fits and costs what it
    says by `evaluate`."""
    layer, hier, written = _sram_inside_group_0()
    priced = evaluate(layer, written, hier, ONE)
    assert priced.fits and priced.total_energy_pj == pytest.approx(994)
    identity = _cheapest(layer, hier, ONE, None, _s_part(layer, hier, with_inner=True))
    assert identity == pytest.approx(998)
    roles = _cheapest(layer, hier, ONE, None, _s_blockings(layer, hier, with_inner=True))
    assert roles == pytest.approx(994)
    least, _ = every_blocking_optimum(layer, hier)
    assert least == pytest.approx(838)
    found = search(layer, hier, ONE)
    assert found.energy_pj == pytest.approx(least, rel=1e-9)
    b = found.blocking
    assert (b.positions("I")[1], b.positions("W")[1], b.positions("O")[0]) == (None,) * 3
    assert b.positions("I")[0] < len(GROUP0) <= len(GROUP0) + len(DIMS) <= b.positions("W")[0]
    again = evaluate(layer, b, hier, ONE)
    assert again.fits and again.total_energy_pj == pytest.approx(838)
    assert in_s(layer, written, hier, False) is False and in_merged(
        written, hier, {d: _extent(layer, d) for d in DIMS}, frozenset())


def _sram_in_two_roles() -> tuple[ConvLayer, Hierarchy, Blocking]:
    """A blocking outside S's role orders that beats them: DRAM, a 5 B SRAM and a 2 B register
    file, 1 B elements; the SRAM holds the inputs of both output maps' two outputs (4) in
    group 2 and one weight inside group 0, the register file two partial sums inside group 0,
    between them: the SRAM's buffers lie in the groups of two roles. It costs 1708 pJ and fits
    by footprints; the role orders' optimum is 1846 pJ (brute force). No array is held at both
    levels and t_1 = t_0: it is of S's merged part, whose `_two_groups_by_eq_2` costs less
    still."""
    layer = ConvLayer(name="t", Ox=4, Oy=1, Oc=2, Kx=3, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("SRAM", 5, 16, 8.0),
                      Level("RF", 2, 16, 0.5)), mac_energy_pj=1.0)
    tile = {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    blocking = Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS,
                            ("M", "X", "Y", "C", "N")], [tile, tile],
                           {"I": [12, None], "W": [0, None], "O": [None, 1]})
    return layer, hier, blocking


def _two_groups_by_eq_2() -> Blocking:
    """The least blocking of every position on `_sram_in_two_roles`' layer and hierarchy
    (`benchmarks/bench_hierarchy_gaps.py`): X tiles 2 | 2, group 2 ordered X (outermost), M;
    group 0 FX, X. The SRAM holds all 6 inputs (position 13: after group 2's X), whose window
    rolls along that X (eq. 2: 4 of them), and one weight inside group 0 (position 0: after
    X_0); the register file two partial sums (position 1: after FX)."""
    tile = {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    return Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS,
                        ("M", "X", "Y", "C", "N")], [tile, tile],
                       {"I": [13, None], "W": [0, None], "O": [None, 1]})


def test_two_groups_with_eq_2_buffers_are_searched_as_the_levels_merged() -> None:
    """`_two_groups_by_eq_2` fits by eq. 2 (4 inputs + 1 weight in the 5 B SRAM; by footprints
    6 + 1 would not) and costs 1600 pJ, counted by hand (1 B elements: 50 pJ a DRAM access,
    4 pJ an SRAM one, 0.25 pJ a register file one): inputs 6 from DRAM (300) into the SRAM
    (24), read 24 times by the MACs (96); weights 12 from DRAM (FX, M, X around the one
    held: 600) into the SRAM (48), read 24 times (96); partial sums: 24 MAC writes and 16
    reads in the register file and 8 final reads out of it (48 × 0.25 = 12), 8 DRAM writes
    (400); 24 MACs (24). Not in S's role orders (the SRAM's buffers in two roles' groups;
    their optimum is 1846 pJ: `_sram_in_two_roles`), but it holds no array at both levels
    with t_1 = t_0: the merged part's, where the search finds those 1600 pJ."""
    layer, hier, _ = _sram_in_two_roles()
    blocking = _two_groups_by_eq_2()
    priced = evaluate(layer, blocking, hier, ONE)
    assert priced.fits and not _fits(layer, blocking, hier, ONE, inner=0)
    assert priced.total_energy_pj == pytest.approx(300 + 24 + 96 + 600 + 48 + 96 + 12 + 400
                                                   + 24)
    assert not in_s(layer, blocking, hier, True)
    assert in_merged(blocking, hier, {d: _extent(layer, d) for d in DIMS}, frozenset())
    assert search(layer, hier, ONE).energy_pj == pytest.approx(1600)


def _outside_s_and_merged() -> Blocking:
    """`_sram_in_two_roles` with X tiles 1 | 2 (t_1 ≠ t_0): the SRAM's buffers in the groups
    of two roles, not merged; it fits by footprints and costs 2356 pJ."""
    t0, t1 = {"X": 1, "Y": 1, "C": 1, "M": 1, "N": 1}, {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    return Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS,
                        ("M", "X", "Y", "C", "N")], [t0, t1],
                       {"I": [12, None], "W": [0, None], "O": [None, 1]})


def test_blockings_outside_s_are_not_taken_as_incumbents() -> None:
    """A blocking in neither S's role orders nor its merged part (`_outside_s_and_merged`)
    fits but is refused as an incumbent (the search could not show it reaches no lower); one of
    the merged part (`_sram_in_two_roles`, 1708 pJ) is taken, and the search still ends at
    1600 pJ below it."""
    layer, hier, merged = _sram_in_two_roles()
    outside = _outside_s_and_merged()
    priced = evaluate(layer, outside, hier, ONE)
    assert priced.fits and _fits(layer, outside, hier, ONE, inner=0)  # by footprints
    assert priced.total_energy_pj == pytest.approx(2356)
    extent = {d: _extent(layer, d) for d in DIMS}
    assert not in_s(layer, outside, hier, True)
    assert not in_merged(outside, hier, extent, frozenset())
    assert incumbent(layer, hier, ONE, None, True, [outside]) is None
    start = incumbent(layer, hier, ONE, None, True, [outside, merged])
    assert start is not None and start[0] == pytest.approx(1708) and start[1] == merged
    assert incumbent(layer, hier, ONE, None, False, [merged]) is None  # R's holders only
    found = search(layer, hier, ONE, incumbents=[outside, merged])
    assert found.energy_pj == pytest.approx(1600)


def _rolling_window() -> tuple[ConvLayer, Hierarchy, Blocking]:
    """One 5 B level, 1 B elements, a 3-tap kernel over two outputs, every loop in group 0:
    the inputs' buffer encloses the output loop X and, outside it, the kernel loop FX. Each FX
    step reuses all but one of the two inputs the last one read, so eq. 2's buffer holds 2 of
    the window's 4 inputs (it rolls along the kernel): the buffers need 2 + 1 + 2 = 5 B and
    fit, the footprints 4 + 1 + 2 = 7 B."""
    layer = ConvLayer(name="w", Ox=2, Oy=1, Oc=1, Kx=3, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 5, 16, 2.0)),
                     mac_energy_pj=1.0)
    tile = {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    blocking = Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS], [tile],
                           {"I": [1], "W": [0], "O": [1]})
    return layer, hier, blocking


def test_rolling_windows_are_searched() -> None:
    """The innermost level fits the inputs by eq. 2's buffer, which rolls along the outermost
    loop of its position, not by their footprint. `_rolling_window` fits by `evaluate` (and by
    the search's rule), not by footprints, and costs 487 pJ, the least over every blocking with
    its positions anywhere by `evaluate`'s rule (brute force over R+, each array held); fitting
    every buffer by its footprint, S's optimum would be 577 pJ (its brute force, bypass
    included: 18% above). The search returns 487 pJ, S's brute force."""
    layer, hier, window = _rolling_window()
    priced = evaluate(layer, window, hier, ONE)
    assert priced.fits and _fits(layer, window, hier, ONE)
    assert not _fits(layer, window, hier, ONE, inner=0)
    assert [priced.buffer_bytes[1][a] for a in ARRAYS] == [2, 1, 2]
    assert priced.total_energy_pj == pytest.approx(487)
    every = list(_r_plus_blockings(layer, hier))
    by_buffers = [r.total_energy_pj for b in every if (r := evaluate(layer, b, hier, ONE)).fits]
    assert min(by_buffers) == pytest.approx(487)
    assert _cheapest(layer, hier, ONE, None, _s_blockings(layer, hier), inner=0) == \
        pytest.approx(577)
    assert in_s(layer, window, hier, True)
    assert brute_force_s(layer, hier, ONE) == pytest.approx(487)
    for incumbents in ([], [window]):
        found = search(layer, hier, ONE, incumbents=incumbents)
        assert found.energy_pj == pytest.approx(487)
        assert _fits(layer, found.blocking, hier, ONE)
        assert evaluate(layer, found.blocking, hier, ONE).fits


def test_seed_002_schedules_are_reached_by_eq_2_buffers() -> None:
    """The same on a real layer: seed 002 AlexNet's first layer (11×11 kernel, stride 4) on
    one 16 KB level, DRAM traffic only (1 pJ per byte, nothing else priced). Seed 002's search
    (`tiling.dataflow_search`, eq. 2's buffers, canonical and HWC element orders) finds a
    schedule that, as a blocking, fits by `evaluate` and moves what that search says; it does
    not fit by footprints (S fitting so moved 11.8% more), and S's optimum moves what it
    moves."""
    from workbench import layers
    from workbench.hierarchy.convert import from_dataflow
    from workbench.tiling.dataflow import DataflowSchedule, Precision
    from workbench.tiling.dataflow_search import search as dataflow_search

    layer = next(lay for lay in layers.load_network("seed002_alexnet").tiled_layers()
                 if lay.name == "alexnet1")
    cap = 16 * 1024
    hier = Hierarchy((Level("DRAM", None, 8, 1.0), Level("L1", cap, 8, 0.0)),
                     mac_energy_pj=0.0)
    widths = ElementBytes(1, 1, 1, 4)  # tiling.dataflow.Precision()'s bytes per element
    row = dataflow_search(layer, [cap], precision=Precision()).iloc[0]
    (order, levels), tiles = row.schedule
    schedule = from_dataflow(DataflowSchedule(order, tiles, levels))
    priced = evaluate(layer, schedule, hier, widths)
    assert priced.fits and not _fits(layer, schedule, hier, widths, inner=0)
    assert priced.total_energy_pj == pytest.approx(row.traffic_bytes, rel=1e-12)
    found = search(layer, hier, widths)
    assert _fits(layer, found.blocking, hier, widths)
    assert evaluate(layer, found.blocking, hier, widths).fits
    assert found.energy_pj == pytest.approx(row.traffic_bytes, rel=1e-12)

def test_in_s_is_s() -> None:
    """Every blocking `_s_blockings` enumerates is in S; with one on-chip level so is every
    blocking with its positions anywhere (`_r_plus_blockings`) with bypass, and without bypass
    exactly those holding every array; two levels' buffers both inside group 0 are not."""
    layer = ConvLayer(name="a", Ox=3, Oy=1, Oc=2, Kx=2, Ky=1, Kc=1)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 8, 16, 1.0)))
    assert all(in_s(layer, b, hier, True) for b in _s_blockings(layer, hier))
    assert all(in_s(layer, b, hier, False) for b in _s_blockings(layer, hier, bypass=False))
    inner = 0
    for blocking in _r_plus_blockings(layer, hier):
        held = [p for b in blocking.buffers for p in b if p is not None]
        assert in_s(layer, blocking, hier, True)
        assert in_s(layer, blocking, hier, False) == (len(held) == 3)
        inner += any(p < len(GROUP0) - 1 for p in held)
    assert inner
    layer, hier, outside = _sram_inside_group_0()
    assert not in_s(layer, outside, hier, True)
    assert all(in_s(layer, b, hier, True) for b in _s_blockings(layer, hier))


def test_codesign_from_incumbents_equals_cold_searches() -> None:
    """The co-designer's searches start from the layer's earlier optima; each design still
    equals independent cold searches, layer by layer."""
    layers = (ConvLayer(name="p", Ox=3, Oy=1, Oc=2, Kx=2, Ky=1, Kc=2),
              ConvLayer(name="q", Ox=2, Oy=2, Oc=1, Kx=1, Ky=1, Kc=3))
    space = DesignSpace(Level("DRAM", None, 32, 150.0),
                        (LevelSlot("SRAM", 32, (16, 32, 64)),
                         LevelSlot("RF", 16, (None, 4, 8, 16))))
    designer = Codesigner(layers, PREC, lambda size, bits: 0.1 * size ** 0.5 * bits / 16)
    designs = designer.designs(space)
    assert len(designs) >= 5
    for design in designs:
        for lay, energy in zip(layers, design.layer_energy_pj, strict=True):
            cold = search(lay, design.hierarchy, PREC, designer.size_energy)
            assert energy == pytest.approx(cold.energy_pj, rel=1e-12)


def test_alone_floors_kept_across_hierarchies_change_no_optimum(monkeypatch) -> None:
    """A one-slice search over slices (class floors off) keeps its unit alone floors per
    level capacity (`SearchMemo.alone` of the caches passed) for the next hierarchy keeping
    that capacity: searches one after the other, each level's size edited in turn (as in the
    app), all equal the search from an empty memo (itself equal to the brute force:
    test_hierarchy_search)."""
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    layer = ConvLayer(name="mid", Ox=7, Oy=5, Oc=12, Kx=3, Ky=3, Kc=6)
    caches = Caches()
    warm = []
    sizes = ((1024, 24), (4096, 24), (4096, 96), (1024, 96), (2048, 48), (16384, 192))
    for sram, rf in sizes:
        warm.append(search(layer, _two_levels(sram, rf), PREC, caches=caches).energy_pj)
    assert len(SearchMemo.of(caches).alone) >= 6
    for (sram, rf), energy in zip(sizes, warm, strict=True):
        cold = search(layer, _two_levels(sram, rf), PREC).energy_pj  # its own caches
        assert energy == pytest.approx(cold, rel=1e-12)


def _two_levels(sram: int, rf: int) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", sram, 64, 6.0),
                      Level("RF", rf, 16, 0.5)), mac_energy_pj=1.0)


def test_a_weak_incumbent_still_prices_the_seed_points_first(monkeypatch) -> None:
    """Over slices (class floors off), an incumbent far above the optimum (more than WEAK ×
    SEED tile points below it) is followed by the SEED points of lowest floor, priced first as
    with no incumbent, then the rest: lenet5's conv2 on a 32 KB SRAM and a 512 B register
    file, from its optimum on a 512 B SRAM and a 64 B register file (2.25× the optimum here);
    the answer equals the search without an incumbent."""
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    import workbench.hierarchy.search.points as points
    from workbench import layers

    conv2 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv2")
    prec = ElementBytes(2, 2, 2, 4)
    small = _two_levels(32768, 512)
    other = search(conv2, _two_levels(512, 64), prec).blocking
    start = incumbent(conv2, small, prec, None, True, [other])
    cold = search(conv2, small, prec)
    assert start is not None and start[0] > 2 * cold.energy_pj  # weak: in S, fits, far above
    priced = []
    price = points.price_points
    monkeypatch.setattr(points, "price_points",
                        lambda *args, **kw: priced.append(len(args[2][0])) or price(*args, **kw))
    warm = search(conv2, small, prec, incumbents=[other])
    assert priced[0] == tuning.SEED  # the seed points first
    assert warm.energy_pj == pytest.approx(cold.energy_pj, rel=1e-12)
