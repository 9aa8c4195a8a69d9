"""Lemma 5 of the hierarchy search (mirror): with the layer and the datapath alike along X and
Y, swapping X and Y in a blocking changes no count, so the search visits only the tile points
whose X chain index is at most their Y chain index, and still finds S's optimum."""

from __future__ import annotations

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_incumbents import _s_blocking
from test_hierarchy_search import _fits, brute_force_s

import workbench.hierarchy.search.driver as driver_module
from workbench.hierarchy import (
    DIMS,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
)
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import search, tuning
from workbench.layers import ConvLayer

PREC = ElementBytes(1, 1, 1, 2)
SWAP = {"X": "Y", "Y": "X", "FX": "FY", "FY": "FX"}


def mirror(blocking: Blocking) -> Blocking:
    """X and Y (and FX and FY) renamed in every group's order and tile (positions
    unchanged)."""
    x, y = DIMS.index("X"), DIMS.index("Y")
    tiles = [list(t) for t in blocking.tiles]
    for t in tiles:
        t[x], t[y] = t[y], t[x]
    return Blocking(tuple(tuple(SWAP.get(n, n) for n in order) for order in blocking.orders),
                    tuple(tuple(t) for t in tiles), blocking.buffers)


@st.composite
def square_case(draw: st.DrawFn, max_side: int = 4):
    """A layer alike along X and Y, 1 or 2 on-chip levels (shared or split), a scalar
    datapath or one with as many lanes along X as along Y."""
    on_chip = draw(st.integers(1, 2))
    small = 1 if on_chip == 2 and max_side <= 2 else 2  # two groups to order: only X, Y > 1
    side, k, s = draw(st.integers(1, max_side)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    layer = ConvLayer(name="sq", Ox=side, Oy=side, Kx=k, Ky=k, Sx=s, Sy=s,
                      Oc=draw(st.integers(1, small)), Kc=draw(st.integers(1, small)),
                      On=draw(st.integers(1, small)))
    levels, cap = [Level("DRAM", None, 64, draw(st.floats(50, 300)))], 96
    for i in range(on_chip):
        cap = draw(st.integers(1, cap))
        split = draw(st.booleans()) and cap >= 3
        capacity = SplitCapacity(cap // 3, cap // 3, cap // 3) if split else cap
        levels.append(Level(f"L{i + 1}", capacity, 16, draw(st.floats(0.1, 10))))
        cap = int(levels[-1].total_bytes)
    lanes = draw(st.sampled_from([None, {"X": 2, "Y": 2}, {"M": 2}, {"X": 2, "Y": 2, "C": 2}]))
    return layer, Hierarchy(tuple(levels), mac_energy_pj=draw(st.floats(0, 2)),
                            datapath=None if lanes is None else Datapath(lanes))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(square_case(max_side=6), st.data())
def test_mirrored_blockings_cost_the_same(case, data) -> None:
    """The lemma itself, on `evaluate`'s counts: a blocking of S and its mirror move the same
    elements across every boundary, fit alike and cost the same."""
    layer, hier = case
    blocking = _s_blocking(data, layer, hier)
    one, other = evaluate(layer, blocking, hier, PREC), evaluate(layer, mirror(blocking), hier,
                                                                 PREC)
    key = [(t.array, t.level, t.source, t.footprint, t.buffer, t.moved, t.partial_reads)
           for t in one.transfers]
    assert key == [(t.array, t.level, t.source, t.footprint, t.buffer, t.moved,
                    t.partial_reads) for t in other.transfers]
    assert one.total_energy_pj == pytest.approx(other.total_energy_pj, rel=1e-12)
    assert _fits(layer, blocking, hier, PREC) == _fits(layer, mirror(blocking), hier, PREC)


def test_the_lemma_needs_the_symmetry() -> None:
    """Unlike X and Y lanes break it: a blocking and its mirror then differ (so the search
    keeps both halves there)."""
    layer = ConvLayer(name="sq", Ox=4, Oy=4, Kx=3, Ky=3, Oc=2, Kc=2)
    hier = Hierarchy((Level("DRAM", None, 64, 200.0), Level("L1", 4096, 16, 2.0)),
                     datapath=Datapath({"X": 4}))
    blocking = Blocking.of(
        [("FX", "FY", *DIMS), DIMS],
        [{"X": 4, "Y": 1, "C": 1, "M": 1, "N": 1}],
        {"I": [6], "W": [6], "O": [6]})
    assert not driver_module.mirrored(layer, hier)
    assert evaluate(layer, blocking, hier, PREC).total_energy_pj != pytest.approx(
        evaluate(layer, mirror(blocking), hier, PREC).total_energy_pj)


@settings(max_examples=examples(7), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=square_case(max_side=2))
def test_search_on_square_layers_equals_brute_force(case) -> None:
    """On layers alike along X and Y the search (half the tile points: one slice of (X, Y)
    chain pairs, or, small=1, one slice per X chain from its own Y chain on) still equals the
    brute force over all of S, with the outer levels' alone floors priced at the points or
    (SHARE = 0) taken from tables per class of chains, gathered at the pairs. The brute force
    runs once per case, for the four searches."""
    layer, hier = case
    assert driver_module.mirrored(layer, hier)
    expected = brute_force_s(layer, hier, PREC)
    saved = tuning.SMALL, tuning.SHARE
    for small in (tuning.SMALL, 1):
        for share in (tuning.SHARE, 0):
            tuning.SMALL, tuning.SHARE = small, share
            try:  # no caches: nothing kept from the other searches, each prices floors
                found = search(layer, hier, PREC)
            finally:
                tuning.SMALL, tuning.SHARE = saved
            assert found.energy_pj == pytest.approx(expected, rel=1e-9), f"{small=} {share=}"
            again = evaluate(layer, found.blocking, hier, PREC)
            assert again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-9)
            assert _fits(layer, found.blocking, hier, PREC)


MID = [
    Hierarchy((Level("DRAM", None, 64, 200.0), Level("L1", 96, 16, 2.0)), mac_energy_pj=1.0),
    Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", 512, 64, 6.0),
               Level("RF", 24, 16, 0.5)), mac_energy_pj=1.0, datapath=Datapath({"X": 2, "Y": 2})),
    Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", SplitCapacity(96, 160, 64), 64, 6.0),
               Level("RF", 16, 16, 0.5)), mac_energy_pj=1.0),
]


@pytest.mark.parametrize("side, maps", [(6, (4, 6)), (12, (8, 12))])
@pytest.mark.parametrize("small", [tuning.SMALL, 1])
@pytest.mark.parametrize("hier", MID, ids=["one level", "two levels, 2x2 lanes", "split"])
def test_search_with_the_mirror_equals_it_without(hier: Hierarchy, small: int, side: int,
                                                  maps: tuple[int, int], monkeypatch) -> None:
    """On layers too large for the brute force (side×side outputs, 3×3 kernel, maps) the
    search over half the points equals the search over all of them (lemma 5 switched off),
    and the blocking it returns costs what it says and fits."""
    layer = ConvLayer(name="mid", Ox=side, Oy=side, Kx=3, Ky=3, Kc=maps[0], Oc=maps[1])
    monkeypatch.setattr(tuning, "SMALL", small)
    half = search(layer, hier, PREC)
    monkeypatch.setattr(driver_module, "mirrored", lambda *_: False)
    full = search(layer, hier, PREC)
    assert half.energy_pj == pytest.approx(full.energy_pj, rel=1e-12)
    again = evaluate(layer, half.blocking, hier, PREC)
    assert again.total_energy_pj == pytest.approx(half.energy_pj, rel=1e-12)
    assert _fits(layer, half.blocking, hier, PREC)
