"""The placements `search` prices per memory level, reduced by dominance (lemma 2 and 2' in
docs/search.md): the innermost level's (`inner_placements`, its
buffers in group 0 or 1), an outer level's (`outer_placements`) and an array's alone codes
(`alone_prefixes`). Each array's code is turned into feature bits (`_features`,
`_outer_packed`), and a tuple of codes dominates another iff, array by array, its bits are a
subset of the other's: it moves no more and holds no more at every tile point. The codes
themselves are `search.placements`'."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from workbench.hierarchy.blocking import DIMS, GROUP0
from workbench.hierarchy.search.placements import (
    BIT,
    FOOT_ONLY,
    FULL,
    G0_FOOT,
    G0BIT,
    INNER,
    PAIRS,
    REFILL_ONLY,
    buffer_spec,
    canonical_prefixes,
    group0_tuples,
    lane_dims,
    moved_code,
    placements,
    step_roll,
)


@functools.cache
def grades(code: int) -> tuple[int, ...]:
    """Per GROUP0 loop, how far the buffer of an innermost-level code reaches along it: 0 not
    inside (c = 1, kernel 1), 1 inside group 0 (c = t_0, kernel K), 2 group 1's loop inside
    too (c = t_1). Every count is monotone in each grade (lemma 2')."""
    if code >= INNER:
        return tuple(1 if code & G0BIT[n] else 0 for n in GROUP0)
    return (1, 1) + tuple(2 if code & BIT[d] else 1 for d in DIMS)


# footprint-only loops' buffer grades as levels: outside (c = 1), a step's lanes (LANE codes:
# min(u, t_0)), inside group 0 (t_0), group 1's too (t_1): 1 ≤ min(u, t_0) ≤ t_0 ≤ t_1
_FOOT_LEVEL = {0: 0, "lanes": 1, 1: 2, 2: 3}
# I's (output, kernel) loop pairs, per pair two features (lemma 2'): how much it moves, from
# the grades of the loops inside the buffer's counts, and how much it holds, from those of its
# buffer (`buffer_spec`). Moved per output column (row): K·P with neither, one or the other
# inside group 0 (grades (0, 0), (1, 0), (0, 1)), W(t_0, K)·P/t_0 with both (1, 1), W(t_1,
# K)·P/t_1 with group 1's too (2, 1): a chain (W(c, K)/c never grows). Held: 1, t_0, K,
# t_0·min(S, K) (both, a stride's worth of the kernel: "s"), W(min(u, t_0), K) (rolling along
# an output loop of u > 1 lanes: a step's outputs, "u"), min(u, t_0) (a LANE code's lanes
# of the output loop, no kernel loop: "l"), W(t_0, K), W(t_1, K): 1 ≤ min(u, t_0) ≤ t_0 ≤
# t_0·min(S, K) ≤ W(t_0, K) ≤ W(t_1, K), min(u, t_0) ≤ W(min(u, t_0), K) and 1 ≤ K ≤
# W(min(u, t_0), K) ≤ W(t_0, K), for every t_0 ≤ t_1, K, S, u ≥ 1; each state's bits are those
# of the states it is at least (a bit-set subset test)
_MOVED_LEVEL = {(0, 0): 0, (1, 0): 0, (0, 1): 0, (1, 1): 1, (2, 1): 2}
_HELD_BITS = {(0, 0): 0b00000001, "l": 0b10000001, (1, 0): 0b10000011, (0, 1): 0b00000101,
              "s": 0b10001011, "u": 0b11000101, (1, 1): 0b11011111, (2, 1): 0b11111111}


def _thermometer(v: int) -> int:
    """Bits of a grade −2 … 3, lower better: v ≤ w iff bits(v) ⊆ bits(w)."""
    return (1 << (v + 2)) - 1


@functools.cache
def _packed(array: str, code: int, lanes: frozenset[str] = frozenset()) -> tuple[int, int]:
    """`_features` packed: (bits, total width ≤ 39)."""
    bits, shift = 0, 0
    for value, width in _features(array, code, lanes):
        bits |= value << shift
        shift += width
    return bits, shift


def _features(array: str, code: int, lanes: frozenset[str]) -> list[tuple[int, int]]:
    """(bits, width) per feature of one array's code: a tuple dominates another iff, array by
    array, each of its features' bits is a subset of the other's (lemma 2'): footprint-only
    loops graded by the buffer's loops, refill-only ones by the moved ones, I's pairs above
    (a datapath unrolling `lanes`: `step_roll`)."""
    held, sx, sy = buffer_spec(code)
    step, spread = step_roll(code, lanes), lane_dims(array, code, lanes)
    g, h = grades(moved_code(code)), grades(held)
    out = []
    for loop, name in enumerate(GROUP0):
        if array == "I" and name in ("X", "Y", "FX", "FY"):
            continue
        level = _FOOT_LEVEL["lanes" if name in spread else h[loop]]
        out.append((_thermometer(level if name in G0_FOOT[array] else -g[loop]), 5))
    if array == "I":
        for (a, b), stride in zip(PAIRS, (sx, sy), strict=True):
            i, j = GROUP0.index(a), GROUP0.index(b)
            out.append((_thermometer(-_MOVED_LEVEL[g[i], g[j]]), 4))
            state = "s" if stride else "u" if step == a else "l" if a in spread else \
                (h[i], h[j])
            out.append((_HELD_BITS[state], 8))
    return out


def _undominated(held: tuple[str, ...], found: dict, packed=None) -> dict:
    """`found`'s tuples (of innermost-level codes) no other one dominates (lemma 2'; `packed`:
    another level's features, `_outer_packed`), with their orders. A dominating tuple has
    fewer feature bits, and dominance is transitive, so a tuple is dominated iff an
    undominated tuple with fewer bits dominates it: tuples are checked by rising bit count,
    a chunk at a time, against those kept and the chunk."""
    keys = list(found)
    packed = _packed if packed is None else packed
    # one 64-bit word per held array (its features take at most 39 bits)
    words = np.array([[packed(a, c)[0] for a, c in zip(held, key, strict=True)]
                      for key in keys], dtype=np.uint64).reshape(len(keys), len(held))
    counts = [sum(packed(a, c)[0].bit_count() for a, c in zip(held, key, strict=True))
              for key in keys]
    rank = np.argsort(counts, kind="stable")
    kept: list[int] = []
    for start in range(0, len(rank), 512):
        chunk = rank[start:start + 512]
        against = np.concatenate([np.array(kept, dtype=np.int64), chunk])
        beats = against[None, :] != chunk[:, None]
        for k in range(len(held)):
            beats &= (words[against, k][None, :] & ~words[chunk, k][:, None]) == 0
        kept += [int(i) for i, out in zip(chunk, beats.any(axis=1), strict=True) if not out]
    return {keys[i]: found[keys[i]] for i in kept}


@functools.lru_cache(maxsize=32)
def inner_placements(held: tuple[str, ...], lanes: frozenset[str] = frozenset()
                     ) -> tuple[tuple[tuple[int, ...], tuple], ...]:
    """Non-dominated placements of the innermost level holding `held`: (one code per held array,
    (π_0, π_1) realizing them): each array inside group 0 (codes ≥ INNER; its block holding a
    step of the datapath unrolling `lanes`) or group 1, every order of both groups considered,
    dominated tuples dropped (lemma 2')."""
    found: dict[tuple[int, ...], tuple] = {}
    packed = functools.partial(_packed, lanes=lanes)
    for inside in itertools.product((True, False), repeat=len(held)):
        g0 = tuple(a for a, i in zip(held, inside, strict=True) if i)
        g1 = tuple(a for a, i in zip(held, inside, strict=True) if not i)
        part0 = _undominated(g0, group0_tuples(g0, lanes), packed) if g0 else {(): GROUP0}
        for codes0, order0 in part0.items():
            for codes1, order1 in placements(g1, True):
                it0, it1 = iter(codes0), iter(codes1)
                combo = tuple(next(it0) if i else next(it1) for i in inside)
                found.setdefault(combo, (order0, order1))
    kept = _undominated(held, found, packed)
    return tuple((k, kept[k]) for k in sorted(kept))


def _outer_packed(array: str, code: int) -> tuple[int, int]:
    """An outer level's code as `_undominated`'s features (fewer bits better): the loops the
    moved block takes at t_γ that its moved count falls with (not taken: a bit), then those
    the buffer takes at t_γ that its footprint grows with (lemma 2 with rolling codes)."""
    moved = moved_code(code) & ~FOOT_ONLY[array]
    held = buffer_spec(code)[0] & ~REFILL_ONLY[array]
    return (FULL & ~FOOT_ONLY[array] & ~moved) | held << len(DIMS), 2 * len(DIMS)


@functools.lru_cache(maxsize=16)
def outer_placements(held: tuple[str, ...]) -> tuple[tuple[tuple[int, ...], tuple], ...]:
    """Non-dominated placements of an outer level (γ ≥ 2) holding `held`: (one code per held
    array, an order of DIMS realizing them), the inputs' windows also rolling along X, Y of
    the group, every order's canonical prefixes considered, dominated tuples dropped. A tuple
    whose arrays each take t_γ along every loop the other's moved block does (of those its
    moved count falls with) and along no loop the other's buffer does not (of those its
    footprint grows with) moves no more and holds no more at every point (lemma 2; a rolling
    code moves its loops' block and holds it without q)."""
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order in itertools.permutations(DIMS):
        for combo in itertools.product(*(canonical_prefixes(order, a, True) for a in held)):
            found.setdefault(combo, order)
    kept = _undominated(held, found, _outer_packed)
    return tuple((k, kept[k]) for k in sorted(kept))


def level_placements(held: tuple[str, ...], inner: bool,
                     lanes: frozenset[str] = frozenset()) -> tuple:
    """The placements searched for a level: `inner_placements` for the innermost on-chip
    level (orders (π_0, π_1); `lanes`: the datapath's unrolled dimensions), else
    `outer_placements` (one order)."""
    return inner_placements(held, lanes) if inner else outer_placements(held)


def alone_prefixes(array: str, inner: bool = False,
                   lanes: frozenset[str] = frozenset()) -> list[int]:
    """The prefixes that can be best for `array` alone in a buffer. Outer levels: the array's
    undominated codes alone (`outer_placements`: W, O every refill-only loop inside and no
    footprint-only one; I its window rolling along X or Y, every refill-only loop inside, no
    footprint-only one): every code moves and holds at least what one of them does. inner: the
    innermost level's undominated codes of the array alone (`inner_placements`, lemma 2': every
    code's energy and buffer are at least one of theirs at every point), inside group 0 only
    around a step of the datapath unrolling `lanes`."""
    table = inner_placements((array,), lanes) if inner else outer_placements((array,))
    return [codes[0] for codes, _ in table]


__all__ = ["alone_prefixes", "grades", "inner_placements", "level_placements",
           "outer_placements"]
