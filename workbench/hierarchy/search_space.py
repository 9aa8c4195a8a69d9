"""What `search` enumerates: the holder patterns (which on-chip levels hold each array) and the
per-level buffer placements: for one memory level, the loop
order of its group and a buffering position per array it holds, reduced to the placements that
can be optimal (proofs in `workbench.hierarchy.search`'s docstring).

A placement of level k in its group γ (loops X, Y, C, M, N in some order π, innermost first)
gives each held array A a prefix S_A of π: the loops of γ inside A's buffer (S = ∅: the end of
group γ−1, seed 001's whole block; S = all five: the end of group γ). Sets are bitmasks over
DIMS (X = 1, Y = 2, C = 4, M = 8, N = 16).

The innermost on-chip level (group 1) may also put a buffer inside group 0 (loops FX, FY, X, Y,
C, M, N in an order π_0 of their own): code INNER + m, m the bitmask over GROUP0 (FX = 1,
FY = 2, X = 4, …, N = 64) of the group-0 loops inside it (m ≠ all seven: that is group 1's
∅). Its block has c_d = t_0 along the dimensions in m and 1 along the others, and the kernel
window K or 1 along FX, FY (seed 001 §3: "Fw, Fh are not required to be the innermost loops").
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0
from workbench.hierarchy.levels import Hierarchy, SplitCapacity

BATCH = 1 << 16  # points priced per numpy pass
Pattern = tuple[tuple[int, ...], ...]  # per array (ARRAYS order): on-chip levels holding it
_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}
BIT = {d: 1 << i for i, d in enumerate(DIMS)}
FULL = (1 << len(DIMS)) - 1
# dimensions of a group ≥ 1 each array's index depends on (seed 002 table II): a loop over any
# other dimension re-uses the array's block unchanged
RELEVANT = {"I": BIT["X"] | BIT["Y"] | BIT["C"] | BIT["N"],
            "W": BIT["M"] | BIT["C"],
            "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
# per array: (bits only the footprint grows with, bits only the refills shrink with); the rest
# (I's X, Y: halo reuse) move both and must match for one placement to dominate another
_FOOT_ONLY = {"I": BIT["C"] | BIT["N"], "W": BIT["M"] | BIT["C"],
              "O": BIT["X"] | BIT["Y"] | BIT["M"] | BIT["N"]}
_REFILL_ONLY = {"I": BIT["M"], "W": BIT["X"] | BIT["Y"] | BIT["N"], "O": BIT["C"]}
# group 0 (innermost level only): its loops' bits, and per array the loops only the refills
# shrink with (the only loops irrelevant to it) and those only the footprint grows with
G0BIT = {name: 1 << i for i, name in enumerate(GROUP0)}
INNER = 1 << len(GROUP0)
G0_REFILL = {"I": ("M",), "W": ("X", "Y", "N"), "O": ("FX", "FY", "C")}
G0_FOOT = {"I": ("C", "N"), "W": ("FX", "FY", "M", "C"), "O": ("X", "Y", "M", "N")}
# the dimensions of one datapath step's operands of each array (`blocking.step_operands`)
OPERANDS = {"I": ("N", "C", "Y", "X"), "W": ("M", "C"), "O": ("N", "M", "Y", "X")}


def unrolled_dims(datapath) -> frozenset[str]:
    """The dimensions the datapath unrolls (more than one lane), none for a scalar one."""
    return frozenset(d for d in DIMS if datapath is not None and datapath.lanes(d) > 1)


def step_bits(array: str, lanes: frozenset[str]) -> int:
    """Group-0 loops a buffer of `array` inside group 0 must enclose so that its block holds a
    datapath step's operands (the unrolled dimensions of the array's operands)."""
    return sum(G0BIT[d] for d in OPERANDS[array] if d in lanes)


def mask(loops) -> int:
    """Bitmask of a collection of dimension names."""
    return sum(BIT[d] for d in loops)


def canonical_prefixes(order: tuple[str, ...], array: str) -> list[int]:
    """Prefixes of `order` directly followed by a loop relevant to `array`, and the whole
    group (the only positions that can be optimal: see the search docstring, lemma 1)."""
    out = [mask(order[:i]) for i, d in enumerate(order) if BIT[d] & RELEVANT[array]]
    return out + [FULL]


@functools.lru_cache(maxsize=16)
def placements(held: tuple[str, ...]) -> tuple[tuple[tuple[int, ...], tuple[str, ...]], ...]:
    """Non-dominated placements of the arrays `held` (ARRAYS order) in one group: (one prefix
    bitmask per held array, an order of DIMS realizing them), every order's canonical prefixes
    considered, one per distinct tuple, dominated tuples dropped (lemma 2)."""
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order in itertools.permutations(DIMS):
        for combo in itertools.product(*(canonical_prefixes(order, a) for a in held)):
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
            both = FULL & ~(_FOOT_ONLY[array] | _REFILL_ONLY[array])
            ok &= ((a & both) == (b & both)) & ((a & _FOOT_ONLY[array] & ~b) == 0) \
                & ((b & _REFILL_ONLY[array] & ~a) == 0)
        ok[i] = False
        dominated[i] = ok.any()
    kept = [k for k, out in zip(keys, dominated, strict=True) if not out]
    return tuple((k, found[k]) for k in sorted(kept))


def inner_prefixes(order0: tuple[str, ...], array: str) -> list[int]:
    """Codes of the prefixes of group 0's order `order0` directly followed by a loop relevant
    to `array` (lemma 1 in group 0; the whole group 0 is group 1's prefix ∅)."""
    return [INNER + sum(G0BIT[n] for n in order0[:i]) for i, name in enumerate(order0)
            if name not in G0_REFILL[array]]


def _group0_tuples(held: tuple[str, ...],
                   lanes: frozenset[str]) -> dict[tuple[int, ...], tuple[str, ...]]:
    """Every distinct tuple of group-0 codes of the arrays `held` whose blocks hold a step of
    the datapath unrolling `lanes` (`step_bits`), with an order realizing it."""
    need = [step_bits(a, lanes) for a in held]
    found: dict[tuple[int, ...], tuple[str, ...]] = {}
    for order0 in itertools.permutations(GROUP0):
        options = [[c for c in inner_prefixes(order0, a) if c & n == n]
                   for a, n in zip(held, need, strict=True)]
        for combo in itertools.product(*options):
            found.setdefault(combo, order0)
    return found


@functools.cache
def grades(code: int) -> tuple[int, ...]:
    """Per GROUP0 loop, how far the buffer of an innermost-level code reaches along it: 0 not
    inside (c = 1, kernel 1), 1 inside group 0 (c = t_0, kernel K), 2 group 1's loop inside
    too (c = t_1). Every count is monotone in each grade (lemma 2')."""
    if code >= INNER:
        return tuple(1 if code & G0BIT[n] else 0 for n in GROUP0)
    return (1, 1) + tuple(2 if code & BIT[d] else 1 for d in DIMS)


# I's (output, kernel) loop pairs: the pair's grades (output 0-2, kernel 0-1) as bit sets, a
# pair dominating another iff its bits are a subset: one loop of the pair inside group 0 alone,
# (t_0, 1) or (1, K), moves what neither inside (1, 1) moves (c·K·P/c, K·P) with a larger
# footprint (c, K), so (1, 1) dominates both; other pairs must be equal
_PAIR_BITS = {(0, 0): 0b00001, (1, 0): 0b00011, (0, 1): 0b00101, (1, 1): 0b01000,
              (2, 1): 0b10000}
_PAIRS = (("X", "FX"), ("Y", "FY"))


def _features(array: str, g: tuple[int, ...]) -> list[tuple[int, int]]:
    """(bits, width) per feature of one array's grades (`grades`): a tuple dominates another
    iff, array by array, each of its features' bits is a subset of the other's (lemma 2')."""
    out = []
    for loop, name in enumerate(GROUP0):
        if array == "I" and name in ("X", "Y", "FX", "FY"):
            continue
        v = g[loop] if name in G0_FOOT[array] else -g[loop]  # lower is better
        out.append(((1 << (v + 2)) - 1, 4))  # thermometer: v ≤ w iff bits ⊆
    if array == "I":
        for a, b in _PAIRS:
            out.append((_PAIR_BITS[g[GROUP0.index(a)], g[GROUP0.index(b)]], 5))
    return out


def _undominated(held: tuple[str, ...], found: dict) -> dict:
    """`found`'s tuples (of innermost-level codes) no other one dominates (lemma 2'), with
    their orders. A dominating tuple has fewer feature bits, and dominance is transitive, so a
    tuple is dominated iff an undominated tuple with fewer bits dominates it: tuples are
    checked by rising bit count, a chunk at a time, against those kept and the chunk."""
    keys = list(found)
    packed = []
    for key in keys:
        bits, shift = 0, 0
        for array, code in zip(held, key, strict=True):
            for value, width in _features(array, grades(code)):
                bits |= value << shift
                shift += width
        packed.append(bits)
    n_words = max(1, -(-max(b.bit_length() for b in packed) // 64)) if packed else 1
    words = np.array([[(b >> (64 * w)) & (2**64 - 1) for w in range(n_words)] for b in packed],
                     dtype=np.uint64).reshape(len(keys), n_words)
    rank = np.argsort([b.bit_count() for b in packed], kind="stable")
    kept: list[int] = []
    for start in range(0, len(rank), 512):
        chunk = rank[start:start + 512]
        against = np.concatenate([np.array(kept, dtype=np.int64), chunk])
        beats = ((words[against][None, :, :] & ~words[chunk][:, None, :]) == 0).all(axis=2) \
            & (against[None, :] != chunk[:, None])
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
    for inside in itertools.product((True, False), repeat=len(held)):
        g0 = tuple(a for a, i in zip(held, inside, strict=True) if i)
        g1 = tuple(a for a, i in zip(held, inside, strict=True) if not i)
        part0 = _undominated(g0, _group0_tuples(g0, lanes)) if g0 else {(): GROUP0}
        for codes0, order0 in part0.items():
            for codes1, order1 in placements(g1):
                it0, it1 = iter(codes0), iter(codes1)
                combo = tuple(next(it0) if i else next(it1) for i in inside)
                found.setdefault(combo, (order0, order1))
    kept = _undominated(held, found)
    return tuple((k, kept[k]) for k in sorted(kept))


def level_placements(held: tuple[str, ...], inner: bool,
                     lanes: frozenset[str] = frozenset()) -> tuple:
    """The placements searched for a level: `inner_placements` for the innermost on-chip
    level (orders (π_0, π_1); `lanes`: the datapath's unrolled dimensions), else `placements`
    (one order)."""
    return inner_placements(held, lanes) if inner else placements(held)


def realizes(order: tuple[str, ...], prefixes: tuple[int, ...]) -> bool:
    """Is every bitmask a prefix of `order`?"""
    heads = {mask(order[:i]) for i in range(len(order) + 1)}
    return all(p in heads for p in prefixes)


def _window(c, stride: int, kernel: int):
    return np.where(stride >= kernel, c * kernel, (c - 1) * stride + kernel)


def side_cost(array: str, moved, coef: float, outputs, precision):
    """pJ of one transfer moving `moved` elements (O: write-backs, partial sums read back
    twice at partial-sum width), coef = pJ per bit of both sides together."""
    if array == "O":
        return coef * (outputs * 8 * precision.outputs
                       + 2 * (moved - outputs) * 8 * precision.partial_sums)
    bits = 8 * (precision.inputs if array == "I" else precision.weights)
    return coef * moved * bits


class LevelBlocks:
    """One on-chip level over a set of grid points (flat float arrays): for every (array,
    prefix) its transfer energy (pJ, one group) and footprint (bytes), computed once and shared
    by the placements using it. gamma: the level's group; lo, hi = t_{γ−1}, t_γ (t_L = P)."""

    def __init__(self, layer, grid: dict, gamma: int, on_chip: int, coef: dict,
                 precision, lanes: frozenset[str] = frozenset()) -> None:
        self.layer, self.coef, self.precision, self.gamma = layer, coef, precision, gamma
        self.lanes = lanes  # the datapath's unrolled dimensions (`step_bits`)
        self.p = {d: grid[d][1] for d in DIMS}
        self.lo = {d: grid[d][0][gamma - 1] for d in DIMS}
        self.hi = {d: grid[d][0][gamma] if gamma < on_chip else self.p[d] for d in DIMS}
        self.outputs = self.p["N"] * self.p["M"] * self.p["Y"] * self.p["X"]
        self._memo: dict[tuple[str, int], tuple] = {}

    def block(self, array: str, prefix: int) -> tuple:
        """(energy pJ, footprint bytes) of `array` with the loops `prefix` inside its buffer."""
        key = (array, prefix)
        if key not in self._memo and prefix >= INNER:
            self._memo[key] = self._inside_group0(array, prefix)
        if key not in self._memo:
            c = {d: self.hi[d] if prefix & BIT[d] else self.lo[d] for d in DIMS}
            p, lay, prec = self.p, self.layer, self.precision
            if array == "W":
                foot = c["M"] * c["C"] * (lay.Kx * lay.Ky * prec.weights)
                moved = lay.Kx * lay.Ky * p["M"] * p["C"] * (p["X"] / c["X"]) * \
                    (p["Y"] / c["Y"]) * (p["N"] / c["N"])
            elif array == "O":
                foot = c["N"] * c["M"] * c["Y"] * c["X"] * prec.partial_sums
                moved = self.outputs * (p["C"] / c["C"])
            else:
                wy, wx = _window(c["Y"], lay.Sy, lay.Ky), _window(c["X"], lay.Sx, lay.Kx)
                foot = c["N"] * c["C"] * wy * wx
                moved = p["N"] * p["C"] * (p["M"] / c["M"]) * (wy * p["Y"] / c["Y"]) * \
                    (wx * p["X"] / c["X"])
                foot = foot * prec.inputs
            self._memo[key] = (side_cost(array, moved, self.coef[array], self.outputs, prec),
                               foot)
        return self._memo[key]

    def _inside_group0(self, array: str, code: int) -> tuple:
        """`block` of an innermost-level code inside group 0: c_d = t_0 (d inside) or 1, kernel
        k = K or 1; moved = footprint × refills, refills = (Kx/kx)(Ky/ky)·Π_d P_d/c_d."""
        if self.gamma != 1:
            raise ValueError("only the innermost level's buffers lie inside group 0")
        lay, prec, p = self.layer, self.precision, self.p
        c = {d: self.lo[d] if code & G0BIT[d] else 1.0 for d in DIMS}
        kx = lay.Kx if code & G0BIT["FX"] else 1
        ky = lay.Ky if code & G0BIT["FY"] else 1
        if array == "W":
            foot = c["M"] * c["C"] * (kx * ky)
        elif array == "O":
            foot = c["N"] * c["M"] * c["Y"] * c["X"]
        else:
            foot = c["N"] * c["C"] * _window(c["Y"], lay.Sy, ky) * _window(c["X"], lay.Sx, kx)
        refills = (lay.Kx // kx) * (lay.Ky // ky) * (p["X"] / c["X"]) * (p["Y"] / c["Y"]) * \
            (p["C"] / c["C"]) * (p["M"] / c["M"]) * (p["N"] / c["N"])
        width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}[array]
        return (side_cost(array, foot * refills, self.coef[array], self.outputs, prec),
                foot * width)


    def many(self, array: str, codes) -> tuple[np.ndarray, np.ndarray]:
        """`block` of every code at once on flat points: (energy, footprint), each (codes,
        points). The same counts in one form: moved = footprint × (Kx/kx)(Ky/ky)·Π_d P_d/c_d
        (kx = Kx, c_d ∈ {t_{γ−1}, t_γ} outside group 0; kx ∈ {1, Kx}, c_d ∈ {1, t_0} inside)."""
        lay, prec = self.layer, self.precision
        codes = np.asarray(codes, dtype=np.int64)[:, None]
        inside = codes >= INNER
        n = np.broadcast(*self.p.values(), *self.lo.values(), *self.hi.values()).shape
        c, refills = {}, 1.0
        for d in DIMS:
            lo, hi, p = (np.broadcast_to(v[d], n) for v in (self.lo, self.hi, self.p))
            outer = np.where(codes & BIT[d], hi, lo)
            c[d] = np.where(inside, np.where(codes & G0BIT[d], lo, 1.0), outer)
            refills = refills * (p / c[d])
        kx = np.where(inside & ~(codes & G0BIT["FX"]).astype(bool), 1, lay.Kx)
        ky = np.where(inside & ~(codes & G0BIT["FY"]).astype(bool), 1, lay.Ky)
        refills = refills * (lay.Kx // kx) * (lay.Ky // ky)
        if array == "W":
            foot = c["M"] * c["C"] * (kx * ky)
        elif array == "O":
            foot = c["N"] * c["M"] * c["Y"] * c["X"]
        else:
            foot = c["N"] * c["C"] * _window(c["Y"], lay.Sy, ky) * _window(c["X"], lay.Sx, kx)
        width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}[array]
        energy = side_cost(array, foot * refills, self.coef[array], self.outputs, prec)
        return np.broadcast_to(energy, foot.shape), foot * width


FEW = 512  # points up to which every placement is priced in one numpy pass


@functools.lru_cache(maxsize=32)
def _columns(held: tuple[str, ...], inner: bool,
             lanes: frozenset[str]) -> tuple[tuple[tuple[int, ...], np.ndarray], ...]:
    """Per held array: its distinct prefixes among `level_placements(held, inner, lanes)` and,
    per placement, the index of its prefix there."""
    table = level_placements(held, inner, lanes)
    out = []
    for j in range(len(held)):
        distinct = tuple(sorted({prefixes[j] for prefixes, _ in table}))
        where = {p: i for i, p in enumerate(distinct)}
        out.append((distinct, np.array([where[prefixes[j]] for prefixes, _ in table])))
    return tuple(out)


def best_placements(hierarchy: Hierarchy, level_idx: int, blocks: LevelBlocks,
                    held: tuple[str, ...]):
    """Per point, the least energy (pJ, one group) of a fitting placement of level
    `level_idx` holding `held`, and its index in `level_placements(held, inner, lanes)`
    (inner: the blocks are the innermost level's, lanes theirs; inf, −1: none fits; ties: the
    first)."""
    level = hierarchy.levels[level_idx]
    split = isinstance(level.capacity_bytes, SplitCapacity)
    n = len(blocks.p["X"])
    best = np.full(n, np.inf)
    at = np.full(n, -1, dtype=np.int16)  # ≤ 960 placements
    if not held:
        return np.zeros(n), np.zeros(n, dtype=np.int16)
    # each distinct (array, prefix) priced once: (energy, footprint or fits its part)
    inner = blocks.gamma == 1
    columns = _columns(held, inner, blocks.lanes)
    parts = []
    for array, (distinct, _) in zip(held, columns, strict=True):
        if n > FEW:  # many points: each code's arrays apart (smaller temporaries)
            priced = [blocks.block(array, p) for p in distinct]
            energy, foot = [e for e, _ in priced], [f for _, f in priced]
            fits = [f <= level.bytes_for(array) for f in foot] if split else foot
        else:
            energy, foot = blocks.many(array, distinct)
            fits = foot <= level.bytes_for(array) if split else foot
        parts.append((energy, fits))
    rows = len(columns[0][1])
    if n > FEW:  # one placement at a time over all the points (no gathered copies)
        for i in range(rows):
            energy, used = (v[columns[0][1][i]] for v in parts[0])
            for (_, idx), (e, f) in zip(columns[1:], parts[1:], strict=True):
                energy = energy + e[idx[i]]
                used = (used & f[idx[i]]) if split else used + f[idx[i]]
            better = (used if split else used <= level.total_bytes) & (energy < best)
            best = np.where(better, energy, best)
            at = np.where(better, np.int16(i), at)
        return best, at
    energy, used = (v[columns[0][1]] for v in parts[0])  # few: every placement at once
    for (_, idx), (e, f) in zip(columns[1:], parts[1:], strict=True):
        energy = energy + e[idx]
        used = (used & f[idx]) if split else used + f[idx]
    energy = np.where(used if split else used <= level.total_bytes, energy, np.inf)
    i = np.argmin(energy, axis=0)  # ties: the first placement
    best = energy[i, np.arange(n)]
    return best, np.where(np.isfinite(best), i, -1).astype(np.int16)


def holder_patterns(hierarchy: Hierarchy) -> list[Pattern]:
    """Every choice of the on-chip levels holding each array (a level whose split part for an
    array is 0 never holds it), R's (every level that can) first."""
    options = []
    for array in ARRAYS:
        able = [k for k in range(1, len(hierarchy.levels))
                if hierarchy.levels[k].bytes_for(array) > 0]
        options.append([c for r in range(len(able), -1, -1)
                        for c in itertools.combinations(able, r)])
    return list(itertools.product(*options))


def variant(pattern: Pattern, k: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """On-chip level k under a pattern: the arrays it holds and, per array, its source (the
    next level outwards holding it; 0 = DRAM)."""
    held, sources = [], []
    for array, chain in zip(ARRAYS, pattern, strict=True):
        if k in chain:
            held.append(array)
            sources.append(([0] + list(chain))[chain.index(k)])
    return tuple(held), tuple(sources)


def take(flat: dict, idx) -> dict:
    """The points `idx` of a flat grid."""
    return {d: ([t[idx] for t in tiles], p[idx]) for d, (tiles, p) in flat.items()}


__all__ = ["ARRAYS", "BIT", "FULL", "G0BIT", "INNER", "OPERANDS", "RELEVANT", "step_bits",
           "unrolled_dims", "LevelBlocks", "Pattern",
           "best_placements", "canonical_prefixes", "grades", "inner_placements",
           "inner_prefixes", "level_placements", "holder_patterns", "mask", "placements",
           "realizes", "side_cost", "take", "variant"]
