"""Best-first search over classes of chains (`workbench.hierarchy.search.classes`; two or more
on-chip levels): the class floor is at most `relaxed_floor` at every tile point of its class
(float for float; with two levels the innermost role's part a bound over t_0), a class's points
are listed once each, and the search over classes finds the energy of the search over slices
(which `test_hierarchy_alone` and `test_hierarchy_search` tie to the brute force), for the
whole layer and for shares of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_search import _fits

import workbench.hierarchy.search.classes as classes_module
import workbench.hierarchy.search.driver as driver_module
from workbench.hierarchy import ElementBytes, Hierarchy, Level, SplitCapacity, evaluate
from workbench.hierarchy.blocking import ARRAYS, DIMS, extents
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import search, tuning
from workbench.hierarchy.search.alone import AloneTables
from workbench.hierarchy.search.bounds import alone_floor, relaxed_floor
from workbench.hierarchy.search.chains import nondominated_chains
from workbench.hierarchy.search.class_floors import ClassFloors, flat_grid
from workbench.hierarchy.search.context import SearchMemo
from workbench.hierarchy.search.dominance import alone_prefixes
from workbench.hierarchy.search.grid import grid_of
from workbench.hierarchy.search.levels import best_at_level, datapath_side
from workbench.hierarchy.search.placements import unrolled_dims
from workbench.hierarchy.search.pricing import LevelBlocks, pj_per_bit, side_cost
from workbench.hierarchy.search.roles import in_roles, role_orders, role_patterns, variant
from workbench.layers import ConvLayer
from workbench.memo import Caches

PREC = ElementBytes(1, 1, 1, 2)


@st.composite
def class_case(draw: st.DrawFn, most: int = 4):
    """A layer of a few thousand tile points on 2 to `most` on-chip levels, shared or split
    capacities never growing inwards, a datapath or none, energies per level drawn."""
    k = draw(st.integers(1, 3))
    layer = ConvLayer(name="c", Ox=draw(st.integers(1, 8)), Oy=draw(st.integers(1, 8)),
                      Kx=k, Ky=draw(st.integers(1, 3)), Sx=draw(st.integers(1, 3)),
                      Sy=draw(st.integers(1, 2)), Kc=draw(st.integers(1, 6)),
                      Oc=draw(st.integers(1, 8)), On=draw(st.integers(1, 2)))
    levels, cap = [Level("DRAM", None, 64, draw(st.floats(50, 300)))], 8192
    for i in range(draw(st.integers(2, most))):
        cap = draw(st.integers(1, cap))
        parts = []  # a split level's parts never add up to more than the level outside it
        for _ in ARRAYS:
            parts.append(draw(st.integers(0, min(cap // 2, cap - sum(parts)))))
        split = draw(st.booleans()) and sum(parts) > 0
        levels.append(Level(f"L{i + 1}", SplitCapacity(*parts) if split else cap,
                            draw(st.sampled_from([16, 32, 64])), draw(st.floats(0.1, 10))))
        cap = max(1, int(levels[-1].total_bytes))
    unroll = draw(st.sampled_from([None, {"M": 2}, {"X": 2, "C": 2}]))
    hier = Hierarchy(tuple(levels), mac_energy_pj=draw(st.floats(0, 2)),
                     datapath=None if unroll is None else Datapath(unroll))
    return layer, hier


def _chains(layer: ConvLayer, hier: Hierarchy) -> tuple[dict, dict]:
    extent = {d: extents(layer)[d] for d in DIMS}
    return {d: nondominated_chains(extent[d], len(hier.levels) - 1) for d in DIMS}, extent


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
@given(case=class_case(), data=st.data())
def test_class_floor_is_below_the_relaxed_floor_at_every_point(case, data,
                                                               monkeypatch) -> None:
    """Under a drawn role order and all its patterns (or a drawn subset), every tile point's
    `relaxed_floor` (MAC energy included, as `search.points.price_slice` adds it) is at least its
    class's floor, exactly in floats; and some class's floor is finite wherever some point's
    is."""
    layer, hier = case
    monkeypatch.setattr(tuning, "SHARE", 0)  # every role's table, however small
    per_dim, extent = _chains(layer, hier)
    orders = role_orders(hier)
    roles = orders[data.draw(st.integers(0, len(orders) - 1))]
    view = in_roles(hier, roles)
    patterns = role_patterns(view, roles)
    patterns = data.draw(st.lists(st.sampled_from(patterns), min_size=1, max_size=6,
                                  unique=True)) if data.draw(st.booleans()) else patterns
    memo = SearchMemo.of(Caches())
    tables = AloneTables(layer, view, per_dim, extent, PREC, memo.tables)
    floors = ClassFloors(layer, view, per_dim, extent, PREC, memo)
    pj_bit = pj_per_bit(view, None)
    bound = floors.floor(tables, pj_bit, patterns).reshape(floors.shape)
    grid = grid_of(per_dim, extent)
    mac, fetched, outputs = datapath_side(layer, view, grid)
    fetch_unit = {a: side_cost(a, fetched[a], 1.0, outputs, PREC) for a in ARRAYS}
    relaxed = mac + relaxed_floor(layer, view, grid, pj_bit, PREC, patterns, fetch_unit)
    at = bound[np.ix_(*(floors.ids[d] for d in DIMS))]
    relaxed = np.broadcast_to(relaxed, at.shape)
    assert np.all(at <= relaxed), float(np.max(at - relaxed))
    assert np.isfinite(bound).any() == np.isfinite(relaxed).any()


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
@given(case=class_case(most=2), data=st.data())
def test_outer_floor_is_below_each_patterns_bound_at_every_point(case, data,
                                                                  monkeypatch) -> None:
    """Two on-chip levels, a drawn role order and its patterns: at every tile point, each
    pattern's row of `outer_floor` at the point's class is at most MAC + the datapath's
    fetches + the outer role's best fitting placement priced at the point's own tiles + the
    innermost role's held arrays' `alone_floor` there (numpy, block by block), exactly in
    floats: `search.points.price_points`'s bound, which every fitting blocking of the pattern
    there reaches. And the outer placements it prices are kept in `tables`, as `price_points`
    keys them."""
    layer, hier = case
    monkeypatch.setattr(tuning, "SHARE", 0)  # every role's table, however small
    per_dim, extent = _chains(layer, hier)
    orders = role_orders(hier)
    roles = orders[data.draw(st.integers(0, len(orders) - 1))]
    view = in_roles(hier, roles)
    patterns = role_patterns(view, roles)
    memo = SearchMemo.of(Caches())
    tables = AloneTables(layer, view, per_dim, extent, PREC, memo.tables)
    floors = ClassFloors(layer, view, per_dim, extent, PREC, memo)
    if not ClassFloors.applies(tables):
        return
    pj_bit = pj_per_bit(view, None)
    every = np.indices(tuple(len(per_dim[d]) for d in DIMS)).reshape(len(DIMS), -1)
    chain_at = dict(zip(DIMS, every, strict=True))
    flat = {d: ([t.reshape(-1) for t in tiles], p.reshape(-1))
            for d, (tiles, p) in flat_grid(per_dim, extent, chain_at).items()}
    classes, owner = np.unique(np.ravel_multi_index(
        tuple(floors.ids[d][chain_at[d]] for d in DIMS), floors.shape), return_inverse=True)
    kept: dict = {}
    bound = floors.outer_floor(kept, tables, pj_bit, patterns, classes)
    mac, fetched, outputs = datapath_side(layer, view, flat)
    lanes = unrolled_dims(view.datapath)
    for row, pattern in enumerate(patterns):
        own = np.broadcast_to(mac, owner.shape)
        for a_idx, (array, chain) in enumerate(zip(ARRAYS, pattern, strict=True)):
            own = own + pj_bit[chain[-1] if chain else 0, a_idx] * \
                side_cost(array, fetched[array], 1.0, outputs, PREC)
        own = own + best_at_level(layer, view, 1, flat, pj_bit, PREC, pattern)[0]
        inner = np.zeros(len(owner))
        for array, src in zip(*variant(pattern, 2), strict=True):
            a_idx = ARRAYS.index(array)
            blocks = LevelBlocks(layer, flat, 1, 2, {array: 1.0}, PREC, lanes)
            inner = inner + (pj_bit[src, a_idx] + pj_bit[2, a_idx]) * \
                alone_floor(view.levels[2].bytes_for(array), blocks, array)
        own = own + inner
        at = bound[row][owner]
        assert np.all(at <= own), (pattern, float(np.max(at - own)))
        if len(variant(pattern, 1)[0]) >= 2:  # priced, and kept under `price_points`'s key
            assert kept[1, variant(pattern, 1), None][2][classes].all()


@pytest.mark.parametrize("layer", [
    ConvLayer(name="conv2", Ox=10, Oy=10, Oc=16, Kx=5, Ky=5, Kc=6),
    ConvLayer(name="strided", Ox=13, Oy=9, Oc=12, On=2, Kx=3, Ky=2, Kc=6, Sx=2),
    ConvLayer(name="wide", Ox=7, Oy=7, Oc=6, Kx=11, Ky=11, Kc=3, Sx=4, Sy=4)],
    ids=lambda lay: lay.name)
def test_compiled_inner_bound_equals_pricing_the_blocks(layer) -> None:
    """Two levels: the innermost role's bound per class (t_1, P) (`_inner_bound`, compiled)
    is, bit for bit, the least over the alone codes of `LevelBlocks.block`'s energy with t_0
    at t_1 where its footprint with t_0 at 1 fits (numpy, block by block), every array,
    capacities from 16 B to unbounded, widths 1/2/1/4 B, with and without unrolled lanes."""
    prec = ElementBytes(1, 2, 1, 4)
    per_dim, extent = _chains(layer, Hierarchy((Level("DRAM", None, 64, 1.0),
                                                Level("L1", 4096, 64, 1.0),
                                                Level("L2", 64, 64, 1.0))))
    for lanes in ({}, {"C": 16, "M": 16}, {"X": 4, "C": 2}):
        for cap in (16, 300, 5000, 10 ** 12):
            hier = Hierarchy((Level("DRAM", None, 64, 1.0), Level("L1", 10 ** 13, 64, 1.0),
                              Level("L2", cap, 64, 1.0)),
                             datapath=Datapath(lanes) if lanes else None)
            memo = SearchMemo.of(Caches())
            tables = AloneTables(layer, hier, per_dim, extent, prec, memo.tables)
            floors = ClassFloors(layer, hier, per_dim, extent, prec, memo)
            ones = {d: np.ones(n, dtype=np.int64) for d, n in zip(DIMS, floors.shape,
                                                                   strict=True)}
            at_t1 = {d: floors.grid[d][0][1] for d in DIMS}
            hi = LevelBlocks(layer, floors._at_t0(at_t1), 1, 2, {}, prec,
                             unrolled_dims(hier.datapath))
            lo = LevelBlocks(layer, floors._at_t0(ones), 1, 2, {}, prec,
                             unrolled_dims(hier.datapath))
            for array in ARRAYS:
                hi.coef = lo.coef = {array: 1.0}
                want = np.inf
                for prefix in alone_prefixes(array, True, lo.lanes):
                    want = np.where(lo.block(array, prefix)[1] <= cap,
                                    np.minimum(want, hi.block(array, prefix)[0]), want)
                got = floors._inner_bound(tables, array, 2)
                assert got.shape == floors.shape
                np.testing.assert_array_equal(got, np.broadcast_to(want, floors.shape),
                                              err_msg=f"{array} {cap} B {lanes}")


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=class_case(), pick=st.integers(0, 10 ** 6))
def test_a_class_expands_to_each_of_its_points_once(case, pick) -> None:
    """Expanding every class combination lists every tile point (chain combination) exactly
    once, each in its own class; `points` counts them per class."""
    layer, hier = case
    per_dim, extent = _chains(layer, hier)
    floors = ClassFloors(layer, hier, per_dim, extent, PREC, SearchMemo.of(Caches()))
    every = np.arange(math.prod(floors.shape))
    rng = np.random.default_rng(pick)
    chosen = rng.permutation(every)[:max(1, len(every) // 3)]
    at = floors.expand(chosen)
    assert len(at["X"]) == int(floors.points(chosen).sum())
    flat = np.ravel_multi_index(tuple(at[d] for d in DIMS),
                                tuple(len(per_dim[d]) for d in DIMS))
    assert len(np.unique(flat)) == len(flat)  # no point twice
    owner = np.ravel_multi_index(tuple(floors.ids[d][at[d]] for d in DIMS), floors.shape)
    assert set(owner.tolist()) <= set(chosen.tolist())
    whole = floors.expand(every)
    assert len(whole["X"]) == math.prod(len(per_dim[d]) for d in DIMS)


@settings(max_examples=examples(14), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
@given(case=class_case(most=3), n=st.integers(2, 3))
def test_class_search_equals_slice_search(case, n, monkeypatch) -> None:
    """The search over classes finds the least energy the search over slices finds (classes
    off: CLASS_LIMIT 0), its blocking fits and costs what it says; the least of n shares'
    answers is that energy too."""
    layer, hier = case
    monkeypatch.setattr(tuning, "SHARE", 0)
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    try:
        slices = search(layer, hier, PREC).energy_pj
    except Exception as exc:  # nothing fits: the class search must say so too
        monkeypatch.setattr(tuning, "CLASS_LIMIT", 1 << 23)
        with pytest.raises(type(exc)):
            search(layer, hier, PREC)
        return
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 1 << 23)
    ran = []
    real = driver_module.search_classes
    monkeypatch.setattr(driver_module, "search_classes", lambda *a: ran.append(1) or real(*a))
    found = search(layer, hier, PREC)
    assert ran  # the classes were searched
    assert found.energy_pj == pytest.approx(slices, rel=1e-12)
    again = evaluate(layer, found.blocking, hier, PREC)
    assert again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
    assert _fits(layer, found.blocking, hier, PREC)
    shares = [search(layer, hier, PREC, share=(k, n)) for k in range(n)]
    assert min(s.energy_pj for s in shares if s is not None) == pytest.approx(slices,
                                                                              rel=1e-12)


def test_lenet5_conv2_on_three_levels_prices_few_points(monkeypatch) -> None:
    """lenet5's conv2 on three on-chip levels: of its 4.3 × 10⁷ tile points, the search over
    classes prices a few hundred thousand at most (a slice's points, by
    `search.points.price_points`) and finds the energy of the search over slices."""
    from workbench import layers

    conv2 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv2")
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("L1", 32768, 64, 8.0),
                      Level("L2", 2048, 64, 2.0), Level("L3", 256, 64, 0.6)),
                     mac_energy_pj=1.0)
    prec = ElementBytes(2, 2, 2, 4)
    priced = []
    real = classes_module.price_points
    monkeypatch.setattr(classes_module, "price_points", lambda *a, **k: priced.append(len(a[3][0]))
                        or real(*a, **k))
    found = search(conv2, hier, prec)
    assert 0 < sum(priced) < 10 ** 6
    assert found.combinations > 4 * 10 ** 7
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    assert search(conv2, hier, prec).energy_pj == pytest.approx(found.energy_pj, rel=1e-12)


def test_outer_tables_are_kept_for_a_search_keeping_the_level(monkeypatch) -> None:
    """lenet5's conv2 on two levels, the inner level edited (L1 kept, as an app edit of L2):
    the second search takes the outer level's tables the first priced, so prices fewer of its
    classes than the same search with nothing kept, and finds the same blocking and energy."""
    from workbench import layers
    from workbench.hierarchy.search import levels as levels_module

    conv2 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv2")
    prec = ElementBytes(2, 2, 2, 4)

    def hier(l2: int) -> Hierarchy:
        return Hierarchy((Level("DRAM", None, 16, 320.0), Level("L1", 32768, 64, 8.0),
                          Level("L2", l2, 64, 2.0)), mac_energy_pj=1.0)

    priced: list[int] = []
    real = levels_module.best_at_level

    def counted(layer, hierarchy, k, flat, *rest):
        priced.append(len(np.ravel(flat["X"][1])) if k == 1 else 0)
        return real(layer, hierarchy, k, flat, *rest)

    monkeypatch.setattr(levels_module, "best_at_level", counted)
    caches = Caches()  # the edit's: what the first search keeps for the second
    search(conv2, hier(1024), prec, caches=caches)
    priced.clear()
    kept = search(conv2, hier(512), prec, caches=caches)
    after_kept = sum(priced)
    priced.clear()
    fresh = search(conv2, hier(512), prec)  # its own caches: nothing kept
    assert sum(priced) > after_kept
    assert kept.energy_pj == fresh.energy_pj
    assert kept.blocking == fresh.blocking
