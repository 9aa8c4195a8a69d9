"""An outer level's buffers (search.dominance.outer_placements, search.pricing.LevelBlocks at
γ ≥ 2): each code's block moves and holds what the model's `transfers` count for that position
(the inputs' window rolling along X or Y of the level's group: eq. 2's buffer when that loop
carries the reuse, never more than the footprint); the undominated placements lose no
optimum against every realizable tuple of positions (no lemma used); the alone codes reach
every code's least energy fitting a capacity; and the compiled class tables price the rolling
codes as `alone_floor` does."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hierarchy_inner import EXTENT, PREC, _grid, _priced, check_code, point

from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    Blocking,
    Hierarchy,
    Level,
    SplitCapacity,
)
from workbench.hierarchy.search.alone import unit_alone_grid
from workbench.hierarchy.search.bounds import alone_floor
from workbench.hierarchy.search.calls import best_placements
from workbench.hierarchy.search.dominance import alone_prefixes, outer_placements
from workbench.hierarchy.search.placements import BIT, ROLL, moved_code, rolling
from workbench.hierarchy.search.pricing import LevelBlocks

# every code of a group ≥ 2: the set of its loops inside the buffer, and for the inputs each
# such set whose last loop is X or Y with the window rolling along it
PLAIN = list(range(2 ** len(DIMS)))
ROLLING = [rolling(m, q) for m in PLAIN for q in "XY" if m & BIT[q]]


def codes_of(array: str) -> list[int]:
    """The codes an array's buffer at an outer level may have (only inputs' windows roll)."""
    return PLAIN + ROLLING if array == "I" else PLAIN


def _loops(code: int) -> frozenset[str]:
    return frozenset(d for d in DIMS if moved_code(code) & BIT[d])


def _last(code: int) -> str | None:
    return ("X", "Y")[(code >> 10) & 3] if code & ROLL else None


def _blocking(code: int, t0: dict, t1: dict, array: str) -> Blocking:
    """Two on-chip levels, `array` held only by the outer one (group 2), its buffer around the
    loops of `code` (group 2's order: those loops first, a rolling code's last loop last)."""
    inside, last = _loops(code), _last(code)
    order = tuple(d for d in DIMS if d in inside and d != last) + \
        tuple(d for d in DIMS if d == last) + tuple(d for d in DIMS if d not in inside)
    buffers = {a: [None, None] for a in ARRAYS}
    buffers[array] = [len(GROUP0) + len(DIMS) - 1 + len(inside), None]
    return Blocking.of([GROUP0, DIMS, order], [t0, t1], buffers)


@settings(max_examples=examples(30), deadline=None)
@given(point(), st.sampled_from(ARRAYS))
def test_outer_block_counts_equal_the_model(case, array) -> None:
    """Every code's (energy at 1 pJ/bit, buffer bytes) from `LevelBlocks` at γ = 2 equals the
    model's transfer into the outer level with the buffer at that position: a plain code
    holds the footprint; a rolling one at most that and at least eq. 2's buffer, exactly it
    when its last loop carries the reuse (the kernel wider than the stride) and runs more
    than once."""
    layer, t0, t1 = case
    blocks = LevelBlocks(layer, _grid(layer, [(t0, t1)]), 2, 2, {array: 1.0}, PREC)
    for code in codes_of(array):
        last = None if _last(code) is None else (_last(code), 2)
        check_code(layer, blocks, array, code, _blocking(code, t0, t1, array), 1, last)


@functools.lru_cache(maxsize=16)
def _realizable(held: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Every tuple of codes (one per held array) realized by one order of the group: the sets
    nested, each rolling code's last loop last among its set's (another set holds all of it
    or none of it and not that loop)."""
    def fits(a: int, b: int) -> bool:  # b's set against a's, a's last loop last
        return _last(a) is None or _loops(a) <= _loops(b) or \
            _loops(b) <= _loops(a) - {_last(a)}

    out = []
    for combo in itertools.product(*(codes_of(a) for a in held)):
        if all((_loops(a) <= _loops(b) or _loops(b) <= _loops(a)) and fits(a, b) and fits(b, a)
               for a, b in itertools.combinations(combo, 2)):
            out.append(combo)
    return out


def test_every_outer_placement_is_realized_by_its_order() -> None:
    """Each placement's order lists each code's loops first (a rolling code's last loop last
    among them): the blocking `search` writes holds the buffers it priced."""
    for held in [("I",), ("I", "W"), ("I", "O"), ("W", "O"), ("I", "W", "O")]:
        table = outer_placements(held)
        assert set(codes for codes, _ in table) <= set(_realizable(held))
        for codes, order in table:
            for code in codes:
                inside = order[:len(_loops(code))]
                assert set(inside) == _loops(code)
                assert _last(code) is None or inside[-1] == _last(code)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(point(), min_size=1, max_size=1), st.lists(point(), min_size=5, max_size=5),
       st.sampled_from([("I", "W", "O"), ("I", "W"), ("I", "O"), ("I",)]), st.booleans(),
       st.data())
def test_undominated_outer_placements_lose_no_optimum(first, more, held, split, data) -> None:
    """Point by point, the best fitting placement among `outer_placements` costs what the
    best fitting tuple among every realizable one costs (capacity shared or split; each
    capacity one of the realizable tuples' buffers at the first point, where fitting
    changes)."""
    layer = first[0][0]
    points = [(t0, t1) for _, t0, t1 in first + more
              if all(t1[d] <= getattr(layer, EXTENT[d]) for d in DIMS)]
    coef = {"I": 1.3, "W": 0.6, "O": 2.1}
    blocks = LevelBlocks(layer, _grid(layer, points), 2, 2, coef, PREC)
    combos = _realizable(held)
    priced = {(a, c): _priced(blocks, a, c) for a in held for c in codes_of(a)}
    if split:
        parts = {a: int(data.draw(st.sampled_from(sorted({float(priced[a, c][1][0])
                                                          for c in codes_of(a)}))))
                 for a in held}
        cap = SplitCapacity(*(parts.get(a, 0) for a in ARRAYS))
    else:
        cap = int(data.draw(st.sampled_from(sorted({
            float(sum(priced[a, c][1][0] for a, c in zip(held, combo, strict=True)))
            for combo in combos}))))
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", cap, 16, 2.0),
                      Level("L2", 1, 16, 1.0)))
    best, _ = best_placements(hier, 1, blocks, held)
    expected = np.full(len(points), np.inf)
    for combo in combos:
        both = [priced[a, c] for a, c in zip(held, combo, strict=True)]
        energy = sum(e for e, _ in both)
        if split:
            fits = np.all([f <= hier.levels[1].bytes_for(a)
                           for a, (_, f) in zip(held, both, strict=True)], axis=0)
        else:
            fits = sum(f for _, f in both) <= cap
        expected = np.minimum(expected, np.where(fits, energy, np.inf))
    np.testing.assert_allclose(best, expected, rtol=1e-12)


@settings(max_examples=examples(25), deadline=None)
@given(point(), st.sampled_from(ARRAYS), st.integers(1, 400))
def test_outer_alone_prefixes_reach_every_codes_alone_minimum(case, array, capacity) -> None:
    """`alone_floor` over an outer level's alone prefixes is the least energy of any code
    whose block fits the capacity alone (inf when none fits); the compiled class table
    (`unit_alone_grid`) gives the same number."""
    layer, t0, t1 = case
    blocks = LevelBlocks(layer, _grid(layer, [(t0, t1)]), 2, 2, {array: 1.0}, PREC)
    every = min((_priced(blocks, array, c)[0][0] for c in codes_of(array)
                 if _priced(blocks, array, c)[1][0] <= capacity), default=np.inf)
    assert set(alone_prefixes(array)) <= set(codes_of(array))
    floor = np.broadcast_to(alone_floor(capacity, blocks, array), (1,))[0]
    assert floor == pytest.approx(every, rel=1e-12)
    chains = {d: np.array([[t0[d], t1[d]]], dtype=np.int64) for d in DIMS}
    extent = {d: getattr(layer, EXTENT[d]) for d in DIMS}
    table = unit_alone_grid(layer, chains, extent, 2, 2, capacity, array, PREC, frozenset())
    assert table.ravel()[0] == floor
