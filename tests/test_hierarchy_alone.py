"""Alone floors priced per class of chains (`workbench.hierarchy.search.alone`): gathered at a
slice (or at lemma 5's (X, Y) chain pairs) they are the floors priced there, element for
element; a search sliced
into parts that uses them equals the brute force over S and the same search without them, and
a second search keeping a level's size prices no table again."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_search import _fits, brute_force_s, search_case

import workbench.hierarchy.search.alone as alone_module
from workbench.hierarchy import ElementBytes, Hierarchy, Level, SplitCapacity, evaluate
from workbench.hierarchy.blocking import ARRAYS, DIMS, extents
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import search, tuning
from workbench.hierarchy.search.bounds import alone_floor
from workbench.hierarchy.search.chains import chain_classes, nondominated_chains
from workbench.hierarchy.search.grid import grid_of
from workbench.hierarchy.search.placements import Lanes, unrolled_dims
from workbench.hierarchy.search.pricing import LevelBlocks
from workbench.layers import ConvLayer
from workbench.memo import ByteLRU, Caches


def _size(a) -> int:
    return a.nbytes

PREC = ElementBytes(1, 1, 1, 2)


@st.composite
def table_case(draw: st.DrawFn):
    """A layer of a few hundred tile points per level, 2 or 3 on-chip levels (shared or split,
    never growing inwards), a datapath or none, and a slice: one X chain, a run of Y chains."""
    k = draw(st.integers(1, 3))
    layer = ConvLayer(name="t", Ox=draw(st.integers(1, 12)), Oy=draw(st.integers(1, 12)),
                      Kx=k, Ky=draw(st.integers(1, 3)), Sx=draw(st.integers(1, 3)),
                      Sy=draw(st.integers(1, 2)), Kc=draw(st.integers(1, 8)),
                      Oc=draw(st.integers(1, 8)), On=draw(st.integers(1, 2)))
    levels, cap = [Level("DRAM", None, 64, 200.0)], 4096
    for i in range(draw(st.integers(2, 3))):
        cap = draw(st.integers(1, cap))
        parts = []  # a split level's parts never add up to more than the level outside it
        for _ in ARRAYS:
            parts.append(draw(st.integers(0, min(cap // 2, cap - sum(parts)))))
        split = draw(st.booleans()) and sum(parts) > 0
        levels.append(Level(f"L{i + 1}", SplitCapacity(*parts) if split else cap, 16, 1.0))
        cap = max(1, int(levels[-1].total_bytes))
    unroll = draw(st.sampled_from([None, {"M": 2}, {"X": 2, "C": 2}]))
    hier = Hierarchy(tuple(levels), datapath=None if unroll is None else Datapath(unroll))
    return layer, hier, draw(st.integers(0, 10 ** 6)), draw(st.integers(0, 10 ** 6))


@pytest.mark.parametrize("paired", [False, True], ids=["slice", "chain pairs"])
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
@given(case=table_case())
def test_gathered_tables_equal_the_floors_priced_at_the_slice(paired: bool, case,
                                                              monkeypatch) -> None:
    """Every (array, holder) floor `fill` gathers at a slice (one X chain, a run of Y
    chains), or at random (X, Y) chain pairs along axis 0 (lemma 5's one-slice layout), is
    the `alone_floor` priced on those tiles themselves (exactly, infinities included), at
    every level."""
    layer, hier, x_pick, y_pick = case
    monkeypatch.setattr(tuning, "SHARE", 0)  # every level's table, however small
    on_chip = len(hier.levels) - 1
    extent = {d: extents(layer)[d] for d in DIMS}
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    tables = alone_module.AloneTables(layer, hier, per_dim, extent, PREC, ByteLRU(1 << 30, _size))
    assert set(tables.ids) == set(range(1, on_chip + 1))
    n_x, n_y = len(per_dim["X"]), len(per_dim["Y"])
    if paired:
        rng = np.random.default_rng(x_pick * 10 ** 6 + y_pick)
        count = int(rng.integers(1, 9))
        index = {"X": rng.integers(0, n_x, count), "Y": rng.integers(0, n_y, count)}
        shape: tuple[int, ...] = (count, 1)
    else:
        ox, y0 = x_pick % n_x, y_pick % n_y
        index = {"X": np.array([ox]), "Y": np.arange(y0, min(n_y, y0 + 1 + y_pick % 5))}
        shape = (1, len(index["Y"]))
    index.update({d: np.arange(len(per_dim[d])) for d in ("C", "M", "N")})
    shape += tuple(len(index[d]) for d in ("C", "M", "N"))
    grid = grid_of({d: per_dim[d][index[d]] for d in DIMS}, extent, paired)
    every = [tuple((k,) if a == array else () for a in ARRAYS)
             for array in ARRAYS for k in range(1, on_chip + 1)]
    unit: dict = {}
    tables.fill(unit, every, index, paired)
    assert len(unit) == len(ARRAYS) * on_chip
    for (array, holder), gathered in unit.items():
        blocks = LevelBlocks(layer, grid, on_chip + 1 - holder, on_chip, {array: 1.0}, PREC,
                             unrolled_dims(hier.datapath))
        own = alone_floor(hier.levels[holder].bytes_for(array), blocks, array)
        np.testing.assert_array_equal(np.broadcast_to(gathered, shape),
                                      np.broadcast_to(own, shape), err_msg=f"{array}@{holder}")


@pytest.mark.parametrize("layer", [
    ConvLayer(name="conv2", Ox=14, Oy=14, Oc=64, Kx=5, Ky=5, Kc=32, Px=2, Py=2),
    ConvLayer(name="strided", Ox=13, Oy=9, Oc=12, On=2, Kx=3, Ky=2, Kc=6, Sx=2),
    ConvLayer(name="wide", Ox=7, Oy=7, Oc=6, Kx=11, Ky=11, Kc=3, Sx=4, Sy=4)],
    ids=lambda lay: lay.name)
def test_compiled_class_grid_floors_equal_alone_floor(layer) -> None:
    """`unit_alone_grid` (compiled, over a whole grid of classes) equals `alone_floor` on the
    same tiles (numpy, block by block) bit for bit, every point: each array, role and level
    count, capacities from 16 B to unbounded, element widths 1/2/1/4 B, with and without an
    unrolled datapath (AlexNet-like 11x11 windows at stride 4 among the layers)."""
    prec = ElementBytes(1, 2, 1, 4)
    extent = {d: extents(layer)[d] for d in DIMS}
    for on_chip in (2, 3):
        per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
        for gamma in range(1, on_chip + 1):
            chains = {d: per_dim[d][np.unique(chain_classes(per_dim[d], extent[d], gamma),
                                              return_index=True)[1]] for d in DIMS}
            shape = tuple(len(chains[d]) for d in DIMS)
            for array in ARRAYS:
                for cap in (16.0, 300.0, 5000.0, 1e12):
                    for lanes in (Lanes(), Lanes({"C": 16, "M": 16}), Lanes({"X": 4, "C": 2})):
                        blocks = LevelBlocks(layer, grid_of(chains, extent), gamma, on_chip,
                                             {array: 1.0}, prec, lanes)
                        own = alone_floor(cap, blocks, array)
                        got = alone_module.unit_alone_grid(layer, chains, extent, gamma,
                                                           on_chip, cap, array, prec, lanes)
                        assert got.shape == shape
                        np.testing.assert_array_equal(got, np.broadcast_to(own, shape),
                                                      err_msg=f"{array} γ={gamma} {cap} B")


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
@given(case=search_case())
def test_sliced_search_with_tables_equals_brute_force(case, monkeypatch) -> None:
    """One slice per X chain and every level tabled: the search still equals the brute force
    over S, and its blocking fits and costs what it says."""
    layer, hier = case
    monkeypatch.setattr(tuning, "SMALL", 1)
    monkeypatch.setattr(tuning, "SHARE", 0)
    found = search(layer, hier, PREC)
    assert found.energy_pj == pytest.approx(brute_force_s(layer, hier, PREC), rel=1e-9)
    again = evaluate(layer, found.blocking, hier, PREC)
    assert again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
    assert _fits(layer, found.blocking, hier, PREC)


THREE = Hierarchy((Level("DRAM", None, 64, 200.0), Level("L1", 2048, 64, 6.0),
                   Level("L2", 256, 32, 2.0), Level("L3", 48, 16, 0.5)), mac_energy_pj=1.0,
                  datapath=Datapath({"M": 2}))


def test_tables_change_no_search_and_are_kept(monkeypatch) -> None:
    """On 3 on-chip levels, sliced, over slices (class floors off): with the tables the search
    finds the same energy and blocking as without them; a second search of the layer on a
    hierarchy whose inner levels keep their sizes prices only the edited level's tables (the
    rest are kept)."""
    monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    layer = ConvLayer(name="mid3", Ox=6, Oy=5, Kx=3, Ky=3, Kc=6, Oc=8)
    monkeypatch.setattr(tuning, "SMALL", 1)
    monkeypatch.setattr(tuning, "TABLE_LIMIT", 0)
    without = search(layer, THREE, PREC)
    monkeypatch.setattr(tuning, "TABLE_LIMIT", 1 << 23)
    monkeypatch.setattr(tuning, "SHARE", 0)
    caches = Caches()  # what the two searches below share
    priced = []
    real = alone_module.unit_alone_grid

    def counted(layer, chains, extent, gamma, on_chip, level_bytes, *rest):
        priced.append(level_bytes)
        return real(layer, chains, extent, gamma, on_chip, level_bytes, *rest)

    monkeypatch.setattr(alone_module, "unit_alone_grid", counted)
    with_tables = search(layer, THREE, PREC, caches=caches)
    assert with_tables.energy_pj == without.energy_pj
    assert with_tables.blocking == without.blocking
    assert priced  # the tables were used
    priced.clear()
    edited = Hierarchy((THREE.levels[0], Level("L1", 1024, 64, 6.0), *THREE.levels[2:]),
                       mac_energy_pj=1.0, datapath=THREE.datapath)
    search(layer, edited, PREC, caches=caches)
    assert priced and set(priced) == {1024}  # the edited level's, in whatever role it plays
