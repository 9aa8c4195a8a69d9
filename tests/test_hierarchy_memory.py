"""Bounds on the innermost level's energy kept from one search for the next
(`workbench.hierarchy.search.memory`): a kept bound, carried to other coefficients and to a
capacity no larger, never exceeds the level's least fitting energy there (priced point by
point); none is used at a larger capacity; and searches one after another (the app's edits)
equal searches from an empty memory, themselves equal to the brute force
(test_hierarchy_search), and of equal optima they find the same one."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_inner import halved
from test_hierarchy_search import search_case

from workbench.hierarchy import DIMS, ElementBytes, Hierarchy, Level, SplitCapacity
from workbench.hierarchy.blocking import extents
from workbench.hierarchy.search import search
from workbench.hierarchy.search.calls import best_placements, floors_under, least_total_at
from workbench.hierarchy.search.chains import nondominated_chains
from workbench.hierarchy.search.context import SearchMemo
from workbench.hierarchy.search.grid import gather, grid_of
from workbench.hierarchy.search.memory import InnerMemory, KeptBounds
from workbench.hierarchy.search.pricing import LevelBlocks
from workbench.layers import ConvLayer
from workbench.memo import Caches

PREC = ElementBytes(1, 2, 1, 4)
HELD = ("I", "W", "O")


def _two_levels(rf, rf_pj: float = 0.5, sram: int = 4096, sram_pj: float = 6.0) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", sram, 64, sram_pj),
                      Level("RF", rf, 16, rf_pj)), mac_energy_pj=1.0)


def _least(layer: ConvLayer, hier: Hierarchy, coef: dict) -> tuple[tuple, np.ndarray]:
    """The grid's shape and, at every point, the innermost level's least fitting energy
    (pJ, one group) holding I, W and O under `coef`, priced placement by placement."""
    ext = extents(layer)
    per_dim = {d: nondominated_chains(ext[d], 2) for d in DIMS}
    shape = tuple(len(per_dim[d]) for d in DIMS)
    rows = np.unravel_index(np.arange(int(np.prod(shape))), shape)
    flat = gather(grid_of(per_dim, {d: ext[d] for d in DIMS}), rows)
    blocks = LevelBlocks(layer, flat, 1, 2, coef, PREC)
    return shape, best_placements(hier, 2, blocks, HELD)[0]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5), st.integers(1, 3), st.integers(1, 4), st.integers(1, 3),
       st.integers(4, 96), st.integers(0, 64), st.booleans(),
       st.lists(st.floats(0.05, 50), min_size=6, max_size=6))
def test_kept_bounds_never_exceed_the_energy_they_bound(ox, oc, kc, kx, big, less, split,
                                                        coefs) -> None:
    """Exact energies kept at a capacity and coefficients, read back at a capacity no larger
    and other coefficients: at most the least fitting energy there, at every point; nothing
    is read at a larger capacity."""
    kept_bounds = KeptBounds()
    layer = ConvLayer(name="m", Ox=ox, Oy=2, Oc=oc, Kx=kx, Ky=1, Kc=kc)
    small = max(1, big - less)
    kept, asked = dict(zip(HELD, coefs[:3], strict=True)), dict(zip(HELD, coefs[3:],
                                                                     strict=True))
    cap = (lambda b: SplitCapacity(b // 2, b // 3, b - b // 2 - b // 3)) if split else int
    shape, exact = _least(layer, _two_levels(cap(big)), kept)
    at = InnerMemory(layer, _two_levels(cap(big)), shape, PREC, kept_bounds)
    points = np.arange(len(exact))
    at.note(HELD, (1, 1, 1), np.array(coefs[:3]), points, exact)
    at.keep()
    _, truth = _least(layer, _two_levels(cap(small)), asked)
    read = InnerMemory(layer, _two_levels(cap(small)), shape, PREC, kept_bounds).known(
        HELD, np.array(coefs[3:]), points)
    fits = np.isfinite(exact)
    assert not np.isnan(read).any()
    assert np.all(read <= truth)
    rho = min(b / a for a, b in zip(coefs[:3], coefs[3:], strict=True))
    assert read[fits] == pytest.approx(rho * exact[fits], rel=1e-9)  # the carry rule, tight
    larger = InnerMemory(layer, _two_levels(cap(big + 1)), shape, PREC, kept_bounds).known(
        HELD, np.array(coefs[:3]), points)
    assert np.isnan(larger).all()


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case(), st.lists(st.tuples(st.floats(0.25, 1), st.floats(0.5, 2)),
                               min_size=1, max_size=3))
def test_searches_after_searches_equal_searches_from_nothing(case, edits) -> None:
    """A random layer and hierarchy, then edits of its innermost level's size and its
    levels' energies, searched one after another keeping bounds: each equals the search with
    nothing kept."""
    layer, hier = case
    hierarchies = [hier]
    for shrink, energy in edits:
        last = hierarchies[-1]
        inner = last.levels[-1]
        size = inner.capacity_bytes if isinstance(inner.capacity_bytes, SplitCapacity) \
            else max(1, int(inner.total_bytes * shrink))
        levels = (*last.levels[:-1], Level(inner.name, size, inner.access_bits,
                                           inner.energy_pj * energy))
        if len(levels) > 2:
            outer = levels[1]
            levels = (levels[0], Level(outer.name, outer.capacity_bytes, outer.access_bits,
                                       outer.energy_pj / energy), levels[2])
        hierarchies.append(Hierarchy(levels, mac_energy_pj=last.mac_energy_pj,
                                     datapath=last.datapath))
    caches = Caches()  # the warm searches' (no caches: a search's own, from empty memos)
    warm = [search(layer, h, PREC, caches=caches) for h in hierarchies]
    for h, found in zip(hierarchies, warm, strict=True):
        cold = search(layer, h, PREC)
        assert found.energy_pj == pytest.approx(cold.energy_pj, rel=1e-12)
        assert found.blocking == cold.blocking  # of equal optima, the same one


def test_app_like_edits_use_kept_bounds_and_change_no_optimum() -> None:
    """lenet5-sized conv layer, the SRAM's size (and so its size-derived energy) dragged up
    and down and the register file shrunk, as in the app: bounds are kept and read, and every
    search equals one from an empty memory."""
    layer = ConvLayer(name="mid", Ox=8, Oy=8, Oc=16, Kx=5, Ky=5, Kc=6)

    def energy(size: float, bits: int) -> float:  # grows with the memory's size
        return 0.05 * (size / 1024) ** 0.5 * bits / 16 + 0.2

    sizes = ((65536, 1024), (131072, 1024), (262144, 1024), (131072, 512), (65536, 256))
    caches = Caches()
    warm = [search(layer, _two_levels(rf, sram=sram), PREC, energy, caches=caches)
            for sram, rf in sizes]
    assert len(SearchMemo.of(caches).inner) >= 3
    for (sram, rf), found in zip(sizes, warm, strict=True):
        cold = search(layer, _two_levels(rf, sram=sram), PREC, energy)
        assert found.energy_pj == pytest.approx(cold.energy_pj, rel=1e-12)
        assert found.blocking == cold.blocking


@pytest.mark.parametrize("halves", [False, True])
@pytest.mark.parametrize("rf", [24, 96, SplitCapacity(16, 32, 16)])
def test_kernel_lower_bounds_hold_at_every_point(rf, halves) -> None:
    """The innermost level's pruned search leaves, at every point, a lower bound on the
    level's least fitting energy (what is kept): at most the energy priced placement by
    placement, whether the point was skipped, beaten by a relaxation or priced in full with
    nothing fitting below the best found (its placements not checked then bound it); in one
    call or two halves at once (`halved`)."""
    layer = ConvLayer(name="k", Ox=6, Oy=4, Oc=8, Kx=3, Ky=3, Kc=4)
    hier = _two_levels(rf)
    coef = {"I": 1.3, "W": 0.4, "O": 2.2}
    ext = extents(layer)
    per_dim = {d: nondominated_chains(ext[d], 2) for d in DIMS}
    shape = tuple(len(per_dim[d]) for d in DIMS)
    flat = gather(grid_of(per_dim, {d: ext[d] for d in DIMS}),
                  np.unravel_index(np.arange(int(np.prod(shape))), shape))
    blocks = LevelBlocks(layer, flat, 1, 2, coef, PREC)
    with halved(False):
        exact = best_placements(hier, 2, blocks, HELD)[0]
    n = len(exact)
    rng = np.random.default_rng(7)
    outside = rng.uniform(0, float(np.nanmedian(exact[np.isfinite(exact)])), n)
    start = float(np.median((outside + exact)[np.isfinite(exact)]))
    with halved(halves):
        total, j, _, lower = least_total_at(hier, blocks, HELD, outside, np.zeros(n), 1,
                                            start)
    assert total == np.min(outside + exact) and j == np.argmin(outside + exact)
    assert np.all(lower <= exact)
    # some points were priced in full with nothing fitting below the best found
    assert np.count_nonzero((lower < exact) & (lower > 0)) > 0


@pytest.mark.parametrize("halves", [False, True])
@pytest.mark.parametrize("rf", [24, 96, SplitCapacity(16, 32, 16)])
def test_floors_under_a_cap_are_exact_below_it(rf, halves) -> None:
    """`floors_under` (what `lifted` prices): at every point at most the least fitting energy
    priced placement by placement, and equal to it where that is below the point's cap; in
    one call or two halves at once (`halved`)."""
    layer = ConvLayer(name="f", Ox=6, Oy=4, Oc=8, Kx=3, Ky=3, Kc=4)
    hier = _two_levels(rf)
    coef = {"I": 0.9, "W": 1.7, "O": 0.6}
    ext = extents(layer)
    per_dim = {d: nondominated_chains(ext[d], 2) for d in DIMS}
    shape = tuple(len(per_dim[d]) for d in DIMS)
    flat = gather(grid_of(per_dim, {d: ext[d] for d in DIMS}),
                  np.unravel_index(np.arange(int(np.prod(shape))), shape))
    blocks = LevelBlocks(layer, flat, 1, 2, coef, PREC)
    with halved(False):
        exact = best_placements(hier, 2, blocks, HELD)[0]
    finite = exact[np.isfinite(exact)]
    cap = np.random.default_rng(3).uniform(0, 2 * float(np.median(finite)), len(exact))
    with halved(halves):
        got = floors_under(hier, blocks, HELD, cap)
    assert np.all(got <= exact)
    below = exact < cap
    assert below.any() and (~below).any()
    assert np.array_equal(got[below], exact[below])
    assert np.all(got[~below] >= np.minimum(cap[~below], exact[~below]))
    assert np.array_equal(floors_under(hier, blocks, HELD, np.full(len(exact), np.inf)), exact)
