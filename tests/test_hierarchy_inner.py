"""The innermost level's buffers inside group 0 (`search.dominance` and `search.pricing`, lemma
2'): each code's block moves and holds what the model's `transfers` count for that position
(a rolling window: eq. 2's buffer when its loop carries the reuse, never more than the
footprint); the compiled pricing of a level's placements equals pricing block by block; the
alone prefixes reach every code's least energy fitting a capacity; and the undominated
placements lose no optimum: their best fitting placement costs what the best of every
realizable tuple of positions costs (any nested sets of loops, no lemma used), point by
point."""

from __future__ import annotations

import contextlib
import functools
import itertools

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import WorkbenchError
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
    transfers,
)
from workbench.hierarchy.blocking import carries, trip_counts
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.bounds import alone_floor
from workbench.hierarchy.search.calls import best_placements, least_total_at
from workbench.hierarchy.search.dominance import alone_prefixes, inner_placements, level_placements
from workbench.hierarchy.search.placements import (
    BIT,
    G0BIT,
    INNER,
    LANE,
    ROLL,
    Lanes,
    moved_code,
    rolling,
    step_bits,
)
from workbench.hierarchy.search.pricing import LevelBlocks, side_cost
from workbench.layers import ConvLayer


@contextlib.contextmanager
def halved(on: bool):
    """The compiled calls split in two halves priced at once from 2 points on (as from SPLIT
    points on a machine of many processors), or never split."""
    kept = tuning.SPLIT, tuning.CPUS
    tuning.SPLIT, tuning.CPUS = (2, 2) if on else (1 << 62, 1)
    try:
        yield
    finally:
        tuning.SPLIT, tuning.CPUS = kept

PREC = ElementBytes(1, 2, 1, 4)
WIDTH = {"I": PREC.inputs, "W": PREC.weights, "O": PREC.partial_sums}
EXTENT = {"X": "Ox", "Y": "Oy", "C": "Kc", "M": "Oc", "N": "On"}
# every innermost-level code: group 0 prefixes (not all seven loops) and group 1 prefixes,
# and I's rolling windows: a group-0 set whose last loop is X, Y (its kernel loop inside) or
# FX, FY (its output loop inside), the end of group 0 after such a loop (code 0), or a group-1
# set whose last loop is X or Y
PLAIN = [INNER + m for m in range(2 ** len(GROUP0) - 1)] + list(range(2 ** len(DIMS)))
PARTNER = {"X": "FX", "FX": "X", "Y": "FY", "FY": "Y"}
ROLLING = [rolling(INNER + m if m < 2 ** len(GROUP0) - 1 else 0, q)
           for m in range(2 ** len(GROUP0)) for q in PARTNER
           if m & G0BIT[q] and m & G0BIT[PARTNER[q]]] + \
    [rolling(m, q) for m in range(2 ** len(DIMS)) for q in "XY" if m & BIT[q]]
CODES = PLAIN + ROLLING


def codes_of(array: str) -> list[int]:
    """The codes an array's buffer may have (only inputs' windows roll)."""
    return CODES if array == "I" else PLAIN


def _last(code: int) -> tuple[str, int] | None:
    """A rolling code's last loop (loop, group), else None."""
    if not code & ROLL:
        return None
    q = ("X", "Y", "FX", "FY")[(code >> 10) & 3]
    return q, 0 if moved_code(code) == 0 or moved_code(code) >= INNER else 1


def _priced(blocks: LevelBlocks, array: str, code: int) -> tuple[np.ndarray, np.ndarray]:
    """`block` at every point (a block constant over the points comes back as a scalar)."""
    n = len(blocks.p["X"])
    return tuple(np.broadcast_to(v, (n,)) for v in blocks.block(array, code))


def _loops(code: int) -> frozenset[tuple[str, int]]:
    """The (loop, group) pairs inside a code's buffer (a rolling one: its moved block's)."""
    code = moved_code(code)
    if code >= INNER:
        return frozenset((n, 0) for n in GROUP0 if code & G0BIT[n])
    return frozenset([(n, 0) for n in GROUP0] + [(d, 1) for d in DIMS if code & BIT[d]])


@st.composite
def point(draw: st.DrawFn):
    """A small layer and tiles t0 | t1 ≤ E per dimension (the innermost of two levels)."""
    layer = ConvLayer(name="p", Ox=draw(st.integers(1, 6)), Oy=draw(st.integers(1, 4)),
                      Oc=draw(st.integers(1, 4)), On=draw(st.integers(1, 2)),
                      Kx=draw(st.integers(1, 3)), Ky=draw(st.integers(1, 3)),
                      Kc=draw(st.integers(1, 4)), Sx=draw(st.integers(1, 3)),
                      Sy=draw(st.integers(1, 2)))
    t0, t1 = {}, {}
    for d in DIMS:
        e = getattr(layer, EXTENT[d])
        t1[d] = draw(st.integers(1, e))  # the outermost block may overhang the layer
        t0[d] = draw(st.sampled_from([t for t in range(1, t1[d] + 1) if t1[d] % t == 0]))
    return layer, t0, t1


def _grid(layer: ConvLayer, points: list[tuple[dict, dict]]) -> dict:
    """Flat grid of (t0, t1) points: per dimension ([t0, t1], P)."""
    out = {}
    for d in DIMS:
        e = getattr(layer, EXTENT[d])
        t0 = np.array([float(p[0][d]) for p in points])
        t1 = np.array([float(p[1][d]) for p in points])
        out[d] = ([t0, t1], np.ceil(e / t1) * t1)
    return out


def _blocking(code: int, t0: dict, t1: dict, array: str) -> Blocking:
    """Two on-chip levels, `array` held only by the inner one, its buffer around the loops of
    `code` (orders: those loops first)."""
    inside, last = _loops(code), _last(code)
    first = tuple(n for n in GROUP0 if (n, 0) in inside and (n, 0) != last) + \
        tuple(n for n in GROUP0 if (n, 0) == last) + \
        tuple(n for n in GROUP0 if (n, 0) not in inside)
    second = tuple(d for d in DIMS if (d, 1) in inside and (d, 1) != last) + \
        tuple(d for d in DIMS if (d, 1) == last) + \
        tuple(d for d in DIMS if (d, 1) not in inside)
    position = len([lp for lp in inside if lp[1] == 0]) - 1 + \
        len([lp for lp in inside if lp[1] == 1])
    buffers = {a: [None, None] for a in ARRAYS}
    buffers[array] = [None, position]
    return Blocking.of([first, second, DIMS], [t0, t1], buffers)


@settings(max_examples=examples(25), deadline=None)
@given(point(), st.sampled_from(ARRAYS))
def test_block_counts_equal_the_model(case, array) -> None:
    """Every code's (energy at 1 pJ/bit, buffer bytes) from `LevelBlocks` equals the model's
    transfer into the innermost level with the buffer at that position (orders: a rolling
    code's last loop last): a plain code holds the footprint; a rolling one at most that and
    at least eq. 2's buffer, exactly it when its last loop carries the reuse (seed 002 table
    II, `carries`) and runs more than once."""
    layer, t0, t1 = case
    blocks = LevelBlocks(layer, _grid(layer, [(t0, t1)]), 1, 2, {array: 1.0}, PREC)
    for code in codes_of(array):
        check_code(layer, blocks, array, code, _blocking(code, t0, t1, array), 2, _last(code))


def check_code(layer: ConvLayer, blocks: LevelBlocks, array: str, code: int,
               blocking: Blocking, level: int, last: tuple[str, int] | None) -> None:
    """The code's `block` (energy at 1 pJ/bit, buffer bytes) against the model's transfer into
    `level` of `blocking` (its buffer at the code's position; `last`: a rolling code's loop):
    the footprint for a plain code; for a rolling one at most that and at least eq. 2's
    buffer, exactly it when its last loop carries the reuse and runs more than once."""
    moved = next(t for t in transfers(layer, blocking, 3) if t.level == level and
                 t.array == array)
    energy, foot = _priced(blocks, array, code)
    assert energy[0] == pytest.approx(
        side_cost(array, moved.moved, 1.0, float(blocks.outputs[0]), PREC), rel=1e-12)
    if not code & ROLL:
        assert foot[0] == pytest.approx(moved.footprint * WIDTH[array], rel=1e-12)
        return
    assert moved.buffer * WIDTH[array] <= foot[0] <= moved.footprint * WIDTH[array]
    loops = blocking.loops
    q = loops.index(last)
    if trip_counts(layer, blocking)[q] > 1 and carries(layer, "I", loops[q], set(loops[:q])):
        assert foot[0] == pytest.approx(moved.buffer * WIDTH[array], rel=1e-12)


@settings(max_examples=examples(15), deadline=None)
@given(st.lists(point(), min_size=1, max_size=1), st.lists(point(), min_size=4, max_size=4),
       st.sampled_from([("I", "W", "O"), ("I", "O"), ("W",)]), st.integers(2, 400),
       st.booleans(), st.booleans(), st.booleans())
def test_compiled_pricing_equals_block_by_block(first, more, held, capacity, split,
                                                inner, halves) -> None:
    """`best_placements` (compiled) returns, bit for bit, the least energy over its
    placements of the `block` energies summed in held order among those fitting, and the
    first such placement: for the innermost level and for the outer one (γ = 2); its points
    priced in one call or in two halves at once (`halved`)."""
    layer = first[0][0]
    points = [(t0, t1) for _, t0, t1 in first + more
              if all(t1[d] <= getattr(layer, EXTENT[d]) for d in DIMS)]
    coef = {"I": 0.7, "W": 1.9, "O": 0.3}
    blocks = LevelBlocks(layer, _grid(layer, points), 1 if inner else 2, 2, coef, PREC)
    cap = SplitCapacity(capacity, capacity // 2, capacity // 3) if split else capacity
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", cap, 16, 2.0),
                      Level("L2", cap, 16, 1.0)))
    level = 2 if inner else 1
    with halved(halves):
        best, at = best_placements(hier, level, blocks, held)
    for p in range(len(points)):
        least, first_at = np.inf, -1
        for i, (codes, _) in enumerate(level_placements(held, inner, frozenset())):
            priced = [_priced(blocks, a, c) for a, c in zip(held, codes, strict=True)]
            energy = priced[0][0][p]
            for e, _ in priced[1:]:
                energy = energy + e[p]
            fits = all(f[p] <= hier.levels[level].bytes_for(a)
                       for a, (_, f) in zip(held, priced, strict=True)) if split else \
                sum(f[p] for _, f in priced) <= capacity
            if fits and energy < least:
                least, first_at = energy, i
        assert best[p] == least
        assert at[p] == first_at
    if not split:  # a level exactly as large as the best placement's blocks holds them
        codes = level_placements(held, inner, frozenset())[int(at[0])][0] if at[0] >= 0 \
            else level_placements(held, inner, frozenset())[0][0]
        tight = sum(_priced(blocks, a, c)[1][0] for a, c in zip(held, codes, strict=True))
        hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", int(tight), 16, 2.0),
                          Level("L2", int(tight), 16, 1.0)))
        assert np.isfinite(best_placements(hier, level, blocks, held)[0][0])


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(point(), min_size=1, max_size=1), st.lists(point(), min_size=6, max_size=6),
       st.sampled_from([("I", "W", "O"), ("I", "O"), ("W",), ()]), st.integers(4, 60),
       st.booleans(), st.lists(st.floats(0, 500), min_size=7, max_size=7),
       st.sampled_from([1, 3]), st.sampled_from([0.0, 0.9, 1.1, np.inf]), st.booleans(),
       st.booleans())
def test_innermost_search_equals_pricing_every_point(first, more, held, capacity, split,
                                                     outside, groups, scale, halves,
                                                     tie) -> None:
    """`least_total_at` (the innermost level's pruned search over a batch of points) returns
    the first point of least (outside + best fitting placement) × groups below the best given,
    and that point's first best placement, as pricing every point in full does; with the
    alone floors as the lower bound and a best around the true least total; in one call or
    in two halves at once (`halved`; tie: every point alike, the first half's must win)."""
    layer = first[0][0]
    points = [(t0, t1) for _, t0, t1 in first + more
              if all(t1[d] <= getattr(layer, EXTENT[d]) for d in DIMS)]
    if tie:
        points, outside = points[:1] * 7, outside[:1] * 7
    coef = {"I": 0.7, "W": 1.9, "O": 0.3}
    blocks = LevelBlocks(layer, _grid(layer, points), 1, 2, coef, PREC)
    cap = SplitCapacity(capacity, capacity // 2, capacity // 3) if split else capacity
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 4096, 16, 2.0),
                      Level("L2", cap, 16, 1.0)))
    outside = np.array(outside[:len(points)])
    best, at = best_placements(hier, 2, blocks, held)
    totals = (outside + best) * groups
    least = float(np.min(totals))
    start = least * scale if np.isfinite(least) and scale > 0 and np.isfinite(scale) else \
        np.inf if scale == np.inf or not np.isfinite(least) else 0.0
    bound = sum((alone_floor(hier.levels[2].bytes_for(a), blocks, a) for a in held),
                np.zeros(len(points)))
    with halved(halves):
        total, j, i, lower = least_total_at(hier, blocks, held, outside, bound, groups, start)
    # lower bounds the level's least fitting energy at every point, at least the bound given
    assert np.all(lower >= bound) and np.all(lower <= best)
    if least < start:
        assert lower[j] == best[j]  # the point found was priced in full
        assert (total, j) == (least, int(np.argmin(totals)))
        assert i == at[j]
    else:
        assert (total, j, i) == (start, -1, -1)


LANES = st.sampled_from([Lanes(), Lanes({"C": 2, "M": 3}), Lanes({"X": 3}),
                         Lanes({"Y": 2, "N": 2}), Lanes({"X": 2, "Y": 4})])


def _allowed(array: str, lanes: frozenset) -> list[int]:
    """The codes of `array` whose block holds a datapath step: inside group 0 only around
    the loops of the unrolled dimensions among its operands; and LANE codes: a group-0 set m
    leaving out some of those loops and holding a loop irrelevant to the array, or (I) both
    loops of a pair, one of which its window rolls along (an order ends m with that loop and
    runs the left-out loops next: the buffer after them holds m's code's buffer and their
    lanes), not the inputs' X (Y) left out with FX (FY) in m."""
    dims = {"I": "NCYX", "W": "MC", "O": "NMYX"}[array]
    irrelevant = {"I": {"M"}, "W": {"X", "Y", "N"}, "O": {"FX", "FY", "C"}}[array]
    step = {d for d in dims if d in lanes}
    lane_codes = []
    for m in range(2 ** len(GROUP0) - 1):
        inside = {n for n in GROUP0 if m & G0BIT[n]}
        if not step - inside or (array == "I" and any(
                o in step - inside and PARTNER[o] in inside for o in "XY")):
            continue
        if inside & irrelevant:
            lane_codes.append(LANE | INNER + m)
        if array == "I":  # and the inputs' window rolling along any loop of a pair in m
            lane_codes += [LANE | rolling(INNER + m, q) for q in PARTNER
                           if q in inside and PARTNER[q] in inside]
    return [c for c in codes_of(array) if moved_code(c) < INNER or
            all((d, 0) in _loops(c) for d in dims if d in lanes)] + lane_codes


@settings(max_examples=examples(25), deadline=None)
@given(point(), st.sampled_from(ARRAYS), st.integers(1, 200), LANES)
def test_alone_prefixes_reach_every_codes_alone_minimum(case, array, capacity, lanes) -> None:
    """`alone_floor` over the innermost level's alone prefixes is the least energy of any
    allowed code (its block holding a step of a datapath unrolling `lanes`) whose block fits
    the capacity alone (inf when none fits)."""
    layer, t0, t1 = case
    blocks = LevelBlocks(layer, _grid(layer, [(t0, t1)]), 1, 2, {array: 1.0}, PREC, lanes)
    allowed = _allowed(array, lanes)
    every = min((_priced(blocks, array, c)[0][0] for c in allowed
                 if _priced(blocks, array, c)[1][0] <= capacity), default=np.inf)
    assert set(alone_prefixes(array, True, lanes)) <= set(allowed)
    floor = np.broadcast_to(alone_floor(capacity, blocks, array), (1,))[0]
    assert floor == pytest.approx(every, rel=1e-12)


IRRELEVANT = {"I": ("M",), "W": ("X", "Y", "N"), "O": ("FX", "FY", "C")}


@functools.lru_cache(maxsize=16)
def _entries(array: str, lanes: frozenset) -> tuple:
    """Each allowed code of the array (`_allowed`) with the chain of loop sets its order must
    hold as prefixes: its set; a rolling code's set without its last loop, then its set; a
    LANE code, once per loop q of its set irrelevant to the array (which ends the set): the
    set without q, the set, the set with the step's loops it leaves out."""
    dims = {"I": "NCYX", "W": "MC", "O": "NMYX"}[array]
    out = []
    for c in _allowed(array, lanes):
        keys = _loops(c)
        if c & LANE:
            left = {(d, 0) for d in dims if d in lanes} - keys
            ends = [_last(c)] if c & ROLL else [(q, 0) for q in IRRELEVANT[array]
                                                 if (q, 0) in keys]
            out += [(c, (keys - {q}, keys, keys | left)) for q in ends]
        else:
            last = _last(c)
            out.append((c, (keys,) if last is None else (keys - {last}, keys)))
    return tuple(out)


@functools.lru_cache(maxsize=32)
def _realizable(held: tuple[str, ...], lanes: frozenset) -> np.ndarray:
    """Every tuple of `_entries` (one per held array) whose chains together are nested, so
    that an order lists the smallest set's loops first, then each next set's new ones (a code
    reaching into group 1 holds all of group 0). Rows of indices into each array's entries."""
    chains = {a: [chain for _, chain in _entries(a, lanes)] for a in held}

    def nested(one, other) -> bool:
        sets = list(one) + list(other)
        return all(x <= y or y <= x for x, y in itertools.combinations(sets, 2))

    rows = np.stack(np.meshgrid(*(np.arange(len(chains[a])) for a in held), indexing="ij"),
                    -1).reshape(-1, len(held))
    ok = np.ones(len(rows), dtype=bool)
    for i, j in itertools.combinations(range(len(held)), 2):
        pair = np.array([[nested(x, y) for y in chains[held[j]]] for x in chains[held[i]]])
        ok &= pair[rows[:, i], rows[:, j]]
    return rows[ok]


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(point(), min_size=1, max_size=1), st.lists(point(), min_size=5, max_size=5),
       st.sampled_from([("I", "W", "O"), ("I", "W"), ("W", "O"), ("I",)]),
       st.integers(2, 120), st.booleans(), LANES)
def test_undominated_placements_lose_no_optimum(first, more, held, capacity, split,
                                                lanes) -> None:
    """Point by point, the best fitting placement among `inner_placements` costs what the
    best fitting tuple among every realizable allowed one costs (capacity shared or split,
    datapaths unrolling `lanes`)."""
    layer = first[0][0]
    points = [(t0, t1) for _, t0, t1 in first + more
              if all(t1[d] <= getattr(layer, EXTENT[d]) for d in DIMS)]
    coef = {"I": 1.3, "W": 0.6, "O": 2.1}
    blocks = LevelBlocks(layer, _grid(layer, points), 1, 2, coef, PREC, lanes)
    cap = SplitCapacity(capacity, capacity // 2, capacity // 3) if split else capacity
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 4096, 16, 2.0),
                      Level("L2", cap, 16, 1.0)))
    best, at = best_placements(hier, 2, blocks, held)
    rows = _realizable(held, lanes)
    energy = np.zeros((len(rows), len(points)))
    fits = np.ones((len(rows), len(points)), dtype=bool)
    used = np.zeros((len(rows), len(points)))
    for j, array in enumerate(held):
        e = np.array([_priced(blocks, array, c)[0] for c, _ in _entries(array, lanes)])
        f = np.array([_priced(blocks, array, c)[1] for c, _ in _entries(array, lanes)])
        energy += e[rows[:, j]]
        used += f[rows[:, j]]
        fits &= f[rows[:, j]] <= hier.levels[2].bytes_for(array)
    if not split:
        fits = used <= capacity
    expected = np.where(fits, energy, np.inf).min(axis=0)
    np.testing.assert_allclose(best, expected, rtol=1e-12)
    assert ((at >= 0) == np.isfinite(best)).all()
    table = inner_placements(held, lanes)
    for p, i in enumerate(at):
        if i >= 0:
            codes = table[i][0]
            assert sum(_priced(blocks, a, c)[0][p] for a, c in zip(held, codes, strict=True)) \
                == pytest.approx(best[p], rel=1e-12)


def test_buffers_inside_group_0_hold_a_step() -> None:
    """With a datapath unrolling C and M, every code inside group 0 the search may give W or
    O encloses the loops its step needs (W: C, M; O: M), or is a LANE code, which leaves some
    out and is placed after them; with 2 × 4 lanes, a blocking whose weights' buffer holds
    one weight while a step takes 8 is not in S (and `evaluate` refuses it), and the search's
    blocking holds its steps (its energy S's brute force)."""
    from test_hierarchy_search import _holds_a_step, brute_force_s

    from workbench.hierarchy.datapath import Datapath
    from workbench.hierarchy.search import search
    from workbench.hierarchy.search.bounds import in_s

    lanes = Lanes({"C": 2, "M": 4})
    for codes, _ in inner_placements(("I", "W", "O"), lanes):
        for array, code in zip(("I", "W", "O"), codes, strict=True):
            if moved_code(code) >= INNER:
                need = step_bits(array, lanes)
                assert (code & need == need) != bool(code & LANE)
    assert step_bits("W", lanes) == G0BIT["C"] | G0BIT["M"]
    assert step_bits("O", lanes) == G0BIT["M"]
    layer = ConvLayer(name="s", Ox=3, Oy=1, Oc=4, Kx=2, Ky=1, Kc=2)
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 12, 16, 1.0)),
                     mac_energy_pj=1.0, datapath=Datapath({"C": 2, "M": 4}))
    tile = {"X": 1, "Y": 1, "C": 2, "M": 4, "N": 1}
    one_weight = Blocking.of([("X", "FX", "FY", "Y", "C", "M", "N"), DIMS], [tile],
                             {"I": [None], "W": [0], "O": [None]})
    assert not in_s(layer, one_weight, hier, True)
    assert not _holds_a_step(layer, one_weight, hier)
    with pytest.raises(WorkbenchError, match="the L1 buffer of W holds less than one datapath "
                                             "step: group 0's C loop"):
        evaluate(layer, one_weight, hier, PREC)
    found = search(layer, hier, PREC)
    assert _holds_a_step(layer, found.blocking, hier)
    assert found.energy_pj == pytest.approx(brute_force_s(layer, hier, PREC), rel=1e-9)


@st.composite
def relaxation(draw):
    """A relaxation table: per held array (1-3) its alone codes (-1 padded), rows of codes or
    -1 (any alone code of that array), energies and footprints per code, the bank of each
    held array (shared, split or any grouping) and each bank's bytes."""
    held, codes = draw(st.integers(1, 3)), draw(st.integers(1, 12))
    alone = np.full((held, 5), -1, dtype=np.int64)
    for k in range(held):
        mine = draw(st.lists(st.integers(0, codes - 1), min_size=0, max_size=5, unique=True))
        alone[k, :len(mine)] = mine
    rows = np.array(draw(st.lists(st.lists(st.integers(-1, codes - 1), min_size=held,
                                           max_size=held), min_size=1, max_size=6)),
                    dtype=np.int64)
    values = st.floats(0, 100, allow_nan=False)
    energy = np.array(draw(st.lists(values, min_size=codes, max_size=codes)))
    foot = np.array(draw(st.lists(values, min_size=codes, max_size=codes)))
    bank = np.array(draw(st.sampled_from([
        [0] * held, list(range(held)),  # shared, split
        *(draw(st.lists(st.integers(0, held - 1), min_size=held, max_size=held)),)])),
        dtype=np.int64)  # banked: any held arrays sharing a bank
    caps = np.array(draw(st.lists(st.floats(0, 200), min_size=held, max_size=held)))
    return rows, alone, energy, foot, caps, bank


@settings(max_examples=examples(300), deadline=None)
@given(relaxation(), st.floats(0, 50), st.sampled_from([1.0, 3.0]),
       st.one_of(st.just(-np.inf), st.floats(0, 600)))
def test_relaxation_least_is_the_brute_force_least_or_says_one_is_below_the_limit(
        case, add, mul, limit) -> None:
    """`search.kernel.least_relaxed` (nested loops pruned by partial sums, stopping at a sum
    below the limit) returns, against every combination summed in held order: −inf when some
    fitting sum e has (add + e) × mul < limit, else the least fitting sum (inf: none)."""
    from workbench.hierarchy.search.kernel import least_relaxed

    rows, alone, energy, foot, caps, bank = case
    sums = []
    for row in rows:
        options = [[int(q)] if q >= 0 else [int(a) for a in alone[k] if a >= 0]
                   for k, q in enumerate(row)]
        for combo in itertools.product(*options):
            e, used = energy[combo[0]], [0.0] * len(caps)
            used[bank[0]] += foot[combo[0]]
            for k, q in enumerate(combo[1:], 1):
                e = e + energy[q]
                used[bank[k]] += foot[q]
            if all(u <= c for u, c in zip(used, caps, strict=True)):
                sums.append(e)
    got = least_relaxed((rows, 0, len(rows)), alone, (energy, foot), (caps, bank), add, mul,
                         limit)
    if any((add + e) * mul < limit for e in sums):
        assert got == -np.inf
    else:
        assert got == min(sums, default=np.inf)
