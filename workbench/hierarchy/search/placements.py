"""The per-level buffer placements `search` enumerates: for one memory level, the loop order of
its group and a buffering position per array it holds, as codes (their reduction to the
placements that can be optimal: `search.dominance`; proofs in docs/search.md).

A placement of level k in its group γ (loops X, Y, C, M, N in some order π, innermost first)
gives each held array A a prefix S_A of π: the loops of γ inside A's buffer (S = ∅: the end of
group γ−1, seed 001's whole block; S = all five: the end of group γ). Sets are bitmasks over
DIMS (X = 1, Y = 2, C = 4, M = 8, N = 16).

The innermost on-chip level (group 1) may also put a buffer inside group 0 (loops FX, FY, X, Y,
C, M, N in an order π_0 of their own): code INNER + m, m the bitmask over GROUP0 (FX = 1,
FY = 2, X = 4, …, N = 64) of the group-0 loops inside it (m ≠ all seven: that is group 1's
∅). Its block has c_d = t_0 along the dimensions in m and 1 along the others, and the kernel
window K or 1 along FX, FY (seed 001 §3: "Fw, Fh are not required to be the innermost loops");
it encloses the loops a datapath step of its array needs (`step_bits`).

Rolling windows (the inputs only). A buffer whose outermost loop q carries its array's reuse
holds, by eq. 2, only the loops inside q (`blocking.buffer_size`; every loop carrying reuse lies
inside q, so eq. 2's buffer is never more than that); for W and O such a q is irrelevant to the
array and adds nothing to the footprint, but I's X, Y (the level's own group, halo) and, at the
innermost level, X, FX, Y, FY (group 0, its partner inside) are relevant: the window rolls
along q. Code ROLL | q << 10 | m: the loops m inside the buffer (m's last loop q, which moves
the counts of m) and a buffer of `buffer_spec(code)`: the loops of m but q (q = FX, FY: a
stride's worth of it, min(S, K)). m = 0 with a rolling q is group 0's last loop (the end of
group 0). With a datapath unrolling q (X or Y of group 0), eq. 2 in step time holds a step's
lanes along q, min(u_q, t_0) outputs (`step_roll`; every other loop a step spans lies inside
q, in m).

LANE codes (an unrolled datapath, the innermost level): LANE | code of a group-0 prefix m that
ends in a loop carrying its array's reuse and leaves out some loops a step spans, which run
directly after m, the buffer after them; it moves what m moves and holds m's buffer with the
left-out loops' lanes (`lane_prefixes`, `lane_dims`).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from workbench.hierarchy.blocking import DIMS, GROUP0, OPERANDS

BIT = {d: 1 << i for i, d in enumerate(DIMS)}
FULL = (1 << len(DIMS)) - 1
# dimensions of a group ≥ 1 each array's index depends on (seed 002 table II): a loop over any
# other dimension re-uses the array's block unchanged
RELEVANT = {"I": BIT["X"] | BIT["Y"] | BIT["C"] | BIT["N"],
            "W": BIT["M"] | BIT["C"],
            "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
# per array: (bits only the footprint grows with, bits only the refills shrink with); the rest
# (I's X, Y: halo reuse) move both and must match for one placement to dominate another
FOOT_ONLY = {"I": BIT["C"] | BIT["N"], "W": BIT["M"] | BIT["C"],
              "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
REFILL_ONLY = {"I": BIT["M"], "W": BIT["X"] | BIT["Y"] | BIT["N"], "O": BIT["C"]}
# group 0 (innermost level only): its loops' bits, and per array the loops only the refills
# shrink with (the only loops irrelevant to it) and those only the footprint grows with
G0BIT = {name: 1 << i for i, name in enumerate(GROUP0)}
INNER = 1 << len(GROUP0)
G0_REFILL = {"I": ("M",), "W": ("X", "Y", "N"), "O": ("FX", "FY", "C")}
G0_FOOT = {"I": ("C", "N"), "W": ("FX", "FY", "M", "C"), "O": ("X", "Y", "M", "N")}
ROLL = 1 << 9  # a rolling window (module docstring): the loop q in bits 10-11
LANE = 1 << 12  # a buffer holding a step's lanes of the loops after it (`lane_prefixes`)
_ROLLING = ("X", "Y", "FX", "FY")
_PARTNER = {"X": "FX", "FX": "X", "Y": "FY", "FY": "Y"}
PAIRS = (("X", "FX"), ("Y", "FY"))  # I's (output, kernel) loop pairs


def rolling(code: int, q: str) -> int:
    """The code of loops `code` (moved) with a window rolling along its last loop q."""
    return code | ROLL | _ROLLING.index(q) << 10


def moved_code(code: int) -> int:
    """The loops inside the buffer (what its counts move): the code without a rolling q."""
    return code & (ROLL - 1)


def buffer_spec(code: int) -> tuple[int, bool, bool]:
    """(code of the loops the buffer holds, stride window along FX, along FY): the code itself
    unless it rolls; rolling along q: its loops but q (FX, FY: all, min(S, K) of the kernel)."""
    if not code & ROLL:
        return code, False, False
    q, m = _ROLLING[(code >> 10) & 3], moved_code(code)
    if m == 0:  # the end of group 0, group 0's last loop q
        m = INNER + (1 << len(GROUP0)) - 1
    if q in ("FX", "FY"):
        return m, q == "FX", q == "FY"
    return (m & ~G0BIT[q] if m >= INNER else m & ~BIT[q]), False, False


class Lanes(frozenset):
    """The dimensions a datapath unrolls over more than one lane, as a set of names (`d in
    lanes`), with the lanes of each (`of`): equal, and hashed alike, only with the same lanes
    (so caches keyed by it tell datapaths apart; without lanes it equals frozenset())."""

    __slots__ = ("counts",)
    counts: tuple[tuple[str, int], ...]

    def __new__(cls, unroll: dict[str, int] | None = None) -> Lanes:
        kept = tuple(sorted((d, int(u)) for d, u in (unroll or {}).items() if u > 1))
        self = super().__new__(cls, (d for d, _ in kept))
        self.counts = kept
        return self

    def of(self, dim: str) -> int:
        """Lanes along `dim` (1 when not unrolled)."""
        return dict(self.counts).get(dim, 1)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lanes):
            return self.counts == other.counts
        return not self.counts and frozenset.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self.counts) if self.counts else frozenset.__hash__(self)

    def __reduce__(self):
        return Lanes, (dict(self.counts),)


def unrolled_dims(datapath) -> Lanes:
    """The dimensions the datapath unrolls (more than one lane) and their lanes; none for a
    scalar one."""
    return Lanes(None if datapath is None else
                 {d: datapath.lanes(d) for d in DIMS if datapath.lanes(d) > 1})


def step_roll(code: int, lanes: frozenset[str]) -> str | None:
    """The loop q (X or Y of group 0) an innermost-level code's window rolls along when the
    datapath unrolls q: its buffer then spans a step's lanes along q, min(u_q, t_0) outputs
    (`blocking.buffer_size` in step time); else None."""
    if not code & ROLL:
        return None
    q, m = _ROLLING[(code >> 10) & 3], moved_code(code)
    return q if q in ("X", "Y") and q in lanes and (m == 0 or m >= INNER) else None


def step_bits(array: str, lanes: frozenset[str]) -> int:
    """Group-0 loops a buffer of `array` inside group 0 must enclose so that its block holds a
    datapath step's operands (the unrolled dimensions of the array's operands)."""
    return sum(G0BIT[d] for d in OPERANDS[array] if d in lanes)


def lane_dims(array: str, code: int, lanes: frozenset[str]) -> tuple[str, ...]:
    """The dimensions along which a LANE code's buffer holds a datapath step's lanes, min(u,
    t_0): its array's step dimensions whose loops are not in its prefix (none for others)."""
    if not code & LANE:
        return ()
    return tuple(d for d in OPERANDS[array] if d in lanes and not code & G0BIT[d])


@functools.cache
def lane_prefixes(order0: tuple[str, ...], array: str, need: int) -> tuple[int, ...]:
    """LANE codes of group 0's order `order0`: each prefix m ending in a loop q that carries
    the array's reuse, irrelevant to it (G0_REFILL) or (I) rolling its window (X, Y, FX, FY
    with its partner in m: `rolling`), and leaving out some of the loops `need` its step
    spans (`step_bits`), those directly after m. The buffer sits after them (a position
    holding a step), and by eq. 2 in step time holds what m's code holds (m's block, q adding
    nothing to it; rolling: `buffer_spec`) and the left-out loops' lanes. It moves what that
    position does: the left-out loops are relevant to the array and carry none of its reuse
    (footprint and refills scale inversely). Not for I's X (Y) left out with FX (FY) in m: it
    would carry the window, the outermost loop carrying reuse then."""
    heads = list(itertools.accumulate((G0BIT[n] for n in order0), initial=0))
    out = []
    for i, q in enumerate(order0, start=1):
        m, missing = heads[i], need & ~heads[i]
        k = missing.bit_count()
        if not missing or heads[i + k] - m != missing:
            continue
        if array == "I" and any(missing & G0BIT[o] and m & G0BIT[_PARTNER[o]]
                                for o in ("X", "Y")):
            continue
        if q in G0_REFILL[array]:
            out.append(LANE | INNER + m)
        elif array == "I" and q in _PARTNER and m & G0BIT[_PARTNER[q]]:
            out.append(LANE | rolling(INNER + m, q))
    return tuple(out)


def mask(loops) -> int:
    """Bitmask of a collection of dimension names."""
    return sum(BIT[d] for d in loops)


def canonical_prefixes(order: tuple[str, ...], array: str, roll: bool = False) -> list[int]:
    """Prefixes of `order` directly followed by a loop relevant to `array`, and the whole
    group (the only positions that can be optimal: docs/search.md, lemma 1); roll
    (the innermost level's I): also every prefix ending in X or Y, its window rolling there."""
    out = [mask(order[:i]) for i, d in enumerate(order) if BIT[d] & RELEVANT[array]]
    if roll and array == "I":
        out += [rolling(mask(order[:i + 1]), d) for i, d in enumerate(order) if d in "XY"]
    return out + [FULL]


@functools.lru_cache(maxsize=16)
def placements(held: tuple[str, ...], roll: bool = False
               ) -> tuple[tuple[tuple[int, ...], tuple[str, ...]], ...]:
    """Non-dominated placements of the arrays `held` (ARRAYS order) in one group: (one prefix
    bitmask per held array, an order of DIMS realizing them), every order's canonical prefixes
    considered, one per distinct tuple, dominated tuples dropped (lemma 2; roll: with I's
    rolling windows, which lemma 2 neither drops nor uses: `inner_placements` does)."""
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order in itertools.permutations(DIMS):
        for combo in itertools.product(*(canonical_prefixes(order, a, roll) for a in held)):
            found.setdefault(combo, order)
    keys = sorted(found)
    if not held:
        return tuple((k, found[k]) for k in keys)
    sets = np.array(keys, dtype=np.int64).reshape(len(keys), len(held))
    dominated = np.zeros(len(keys), dtype=bool)
    for i in range(len(keys)):  # does some other tuple dominate tuple i?
        ok = np.ones(len(keys), dtype=bool)
        for j, array in enumerate(held):
            a, b = sets[:, j], sets[i, j]
            both = FULL & ~(FOOT_ONLY[array] | REFILL_ONLY[array])
            ok &= ((a & both) == (b & both)) & ((a & FOOT_ONLY[array] & ~b) == 0) \
                & ((b & REFILL_ONLY[array] & ~a) == 0)
        ok[i] = False
        plain = (sets & ROLL) == 0
        dominated[i] = plain[i].all() and (ok & plain.all(axis=1)).any()
    kept = [k for k, out in zip(keys, dominated, strict=True) if not out]
    return tuple((k, found[k]) for k in sorted(kept))


@functools.cache
def inner_prefixes(order0: tuple[str, ...], array: str) -> tuple[int, ...]:
    """Codes of the prefixes of group 0's order `order0` directly followed by a loop relevant
    to `array` (lemma 1 in group 0; the whole group 0 is group 1's prefix ∅), and for I every
    prefix whose last loop carries its window (X after FX, FX after X, …: rolling there)."""
    heads = list(itertools.accumulate((G0BIT[n] for n in order0), initial=0))
    out = [INNER + heads[i] for i, name in enumerate(order0) if name not in G0_REFILL[array]]
    if array == "I":
        for i in range(2, len(order0) + 1):
            q = order0[i - 1]
            if q in _PARTNER and _PARTNER[q] in order0[:i - 1]:
                out.append(rolling(0 if i == len(order0) else INNER + heads[i], q))
    return tuple(out)


def group0_tuples(held: tuple[str, ...],
                   lanes: frozenset[str]) -> dict[tuple[int, ...], tuple[str, ...]]:
    """Every distinct tuple of group-0 codes of the arrays `held` whose blocks hold a step of
    the datapath unrolling `lanes` (`step_bits`), with an order realizing it."""
    need = [step_bits(a, lanes) for a in held]
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order0 in itertools.permutations(GROUP0):
        options = [[c for c in inner_prefixes(order0, a) if moved_code(c) < INNER or
                    c & n == n] + list(lane_prefixes(order0, a, n))
                   for a, n in zip(held, need, strict=True)]
        for combo in itertools.product(*options):
            found.setdefault(combo, order0)
    return found


def realizes(order: tuple[str, ...], prefixes: tuple[int, ...]) -> bool:
    """Is every bitmask a prefix of `order`?"""
    heads = {mask(order[:i]) for i in range(len(order) + 1)}
    return all(p in heads for p in prefixes)


__all__ = ["BIT", "FOOT_ONLY", "FULL", "G0_FOOT", "G0_REFILL", "G0BIT", "INNER", "LANE", "PAIRS",
           "REFILL_ONLY", "RELEVANT", "ROLL", "buffer_spec", "canonical_prefixes", "group0_tuples",
           "inner_prefixes", "lane_dims", "lane_prefixes", "Lanes", "mask", "moved_code",
           "placements", "realizes", "rolling", "step_bits", "step_roll", "unrolled_dims"]
