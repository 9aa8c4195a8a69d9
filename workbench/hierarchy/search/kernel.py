"""Compiled pricing of one level's placements at many tile points (docs/search.md, "Bounds:
exact skips", the kernel's part): every point's least-energy fitting placement
(`best_fitting`, for `search.calls.best_placements`), and the innermost level's search for
the least total over points in a batch (`least_total`, for `search`).

The counts are `LevelBlocks.block`'s: footprint F = Π c_d (W: c_M·c_C·kx·ky; O: c_N·c_M·c_Y·c_X;
I: c_N·c_C·W(c_Y, ky)·W(c_X, kx)), moved = F × (Kx/kx)(Ky/ky)·Π_d P_d/c_d, with c_d one of
t_{γ−1} (LO), t_γ (HI) or 1 (ONE, inside group 0), and a rolling buffer's also min(u, t_0)
(STEP: a step's lanes along an unrolled output loop). Every factor is an integer, so F and moved are
exact in any order of multiplication; the energy is then `side_cost`'s expression in its order
of operations, and placements are summed array by array in the held order: the results are bit
for bit those of pricing with `block` (ties: the first placement, the first point).

`least_total` skips work only where it cannot win (float sums and products of non-negative
terms are monotone, so every bound below is at most the total it bounds, rounding included):
- a point whose total with the innermost level's lower bound `bound` reaches the best found;
- a point whose total with a relaxation's least energy reaches it. A relaxation replaces some
  held arrays' codes by any of their alone codes (`search.dominance.alone_prefixes`: every
  code's footprint and energy are at least one of theirs, at every point), so its least fitting
  sum is at most the level's: one alone code per array (the one order dropped; only where
  arrays share a bank: a bank of its own gives the alone floors already in `bound`), then,
  holding three arrays, each
  pair's `level_placements` with the third array's alone codes (a pair of a placement is
  realizable as a pair, and lemma 2' keeps one at least as good);
- a placement whose total reaches it (its capacity is then not checked).
The codes a relaxation needs are priced just before it, the rest only for the points left. A
relaxation stops at its first fitting sum whose total is below the best found (the point goes
on; the least, below every later stage's bound there, would not raise `lower`), and a partial
sum at or above its least so far ends that branch. Both change no result and no bound: on
lenet5's conv2 (two levels, the app's 256 KB | 256 B) the kernel's 29 batches took 123 ms
against 239 (median of 12, interleaved), the same answers and bounds bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np

# which tile a block has along a dimension: t_{γ−1}, t_γ, 1, or (a rolling buffer's, along an
# unrolled output loop: `search.placements.step_roll`) a datapath step's min(u, t_{γ−1})
LO, HI, ONE, STEP = 0, 1, 2, 3
I, W, O = 0, 1, 2      # array kinds (ARRAYS order)


@numba.njit(cache=True, nogil=True, inline="always")
def window(c: float, stride: float, kernel: float) -> float:
    """Input extent W(c, k) of c outputs under a kernel window k (`search.pricing._window`)."""
    return c * kernel if stride >= kernel else (c - 1) * stride + kernel


@numba.njit(cache=True, nogil=True, inline="always")
def _tiles_at(tiles, p, j, c, ratio):
    """Point j's block extents c[d, LO | HI | ONE | STEP] and refill factors P_d / c."""
    for d in range(5):
        c[d, LO] = tiles[0, d, j]
        c[d, HI] = tiles[1, d, j]
        c[d, ONE] = 1.0
        c[d, STEP] = tiles[2, d, j]
        for w in range(4):
            ratio[d, w] = p[d, j] / c[d, w]


@numba.njit(cache=True, nogil=True, inline="always")
def _elements(kind, cx, cy, cc, cm, cn, kx, ky, sx, sy):
    """Elements of a block (eq. 1): W: c_M·c_C·kx·ky; O: c_N·c_M·c_Y·c_X; I: with windows."""
    if kind == W:
        return cm * cc * (kx * ky)
    if kind == O:
        return cn * cm * cy * cx
    return cn * cc * window(cy, sy, ky) * window(cx, sx, kx)


@numba.njit(cache=True, nogil=True, inline="always")
def kernel_extent(mode, full, stride):
    """A window's extent along a kernel loop: 1, K, or a stride's worth min(S, K)."""
    if mode == 0:
        return 1.0
    return full if mode == 1 else min(stride, full)


@numba.njit(cache=True, nogil=True)
def _price(codes, table, c, ratio, outputs, energy, foot):
    """Energy (pJ) and buffer (bytes) of each code in `codes` at the point of c, ratio
    (`LevelBlocks.block`), into energy[q], foot[q]; table: the code tables (which, kfull,
    kind, coef, width, bits, layer; `best_fitting`): which[q, :5] the moved block's tiles,
    which[q, 5:] the buffer's, kfull[q] (moved FX, FY windows; rolls; buffer's windows)."""
    which, kfull, kind, coef, width, bits, layer = table
    kx_full, ky_full, sx, sy = layer[0], layer[1], layer[2], layer[3]
    out_bytes, psum_bytes = layer[4], layer[5]
    for q in codes:
        kx = kx_full if kfull[q, 0] else 1.0
        ky = ky_full if kfull[q, 1] else 1.0
        refills = ratio[0, which[q, 0]] * ratio[1, which[q, 1]] * \
            ratio[2, which[q, 2]] * ratio[3, which[q, 3]] * ratio[4, which[q, 4]]
        elements = _elements(kind[q], c[0, which[q, 0]], c[1, which[q, 1]], c[2, which[q, 2]],
                             c[3, which[q, 3]], c[4, which[q, 4]], kx, ky, sx, sy)
        moved = elements * refills * ((kx_full / kx) * (ky_full / ky))
        if kind[q] == O:
            energy[q] = coef[q] * (outputs * 8 * out_bytes +
                                   2 * (moved - outputs) * 8 * psum_bytes)
        else:
            energy[q] = coef[q] * moved * bits[q]
        if kfull[q, 2]:  # a rolling window: the buffer holds fewer loops
            elements = _elements(kind[q], c[0, which[q, 5]], c[1, which[q, 6]],
                                 c[2, which[q, 7]], c[3, which[q, 8]], c[4, which[q, 9]],
                                 kernel_extent(kfull[q, 3], kx_full, sx),
                                 kernel_extent(kfull[q, 4], ky_full, sy), sx, sy)
        foot[q] = elements * width[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _fits(rows, i, foot, caps, bank):
    """Does placement i's blocks fit (held array k's in bank[k]; each bank's sum within its
    caps: one bank when shared, one per array when split)?"""
    for b in range(caps.shape[0]):
        used = 0.0
        for k in range(rows.shape[1]):
            if bank[k] == b:
                used += foot[rows[i, k]]
        if used > caps[b]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def best_fitting(points, table, fit):
    """Per point j, the least energy of a fitting placement and its row (inf, −1: none fits).

    points: (tiles, p, outputs); table: (which, kfull, kind, coef, width, bits, layer); fit:
    (rows, caps, bank). tiles (3, 5, n): t_{γ−1}, t_γ and a step's min(u, t_{γ−1}) per
    dimension (DIMS order) and point; p (5, n): padded extents; outputs (n,); per code q:
    which[q, d] ∈ {LO, HI, ONE, STEP} (STEP: a buffer's only), kfull[q] (kernel window K along
    FX, FY, else 1), kind (I, W, O), coef (pJ per bit), width (bytes per element), bits (I, W:
    bits per element; O: unused); layer: Kx, Ky, Sx, Sy, output bytes, partial-sum bytes; rows
    (placements, held): code indices per held array; caps: the bytes of each of the level's
    banks (`levels.capacity_banks`), bank: the bank of each held array."""
    tiles, p, outputs = points
    which = table[0]
    rows, caps, bank = fit
    n = p.shape[1]
    best = np.full(n, np.inf)
    at = np.full(n, -1, dtype=np.int16)
    energy = np.empty(which.shape[0])
    foot = np.empty(which.shape[0])
    c = np.empty((5, 4))
    ratio = np.empty((5, 4))
    every = np.arange(which.shape[0])
    for j in range(n):
        _tiles_at(tiles, p, j, c, ratio)
        _price(every, table, c, ratio, outputs[j], energy, foot)
        least = np.inf
        for i in range(rows.shape[0]):
            e = energy[rows[i, 0]]
            for k in range(1, rows.shape[1]):
                e += energy[rows[i, k]]
            if e < least and _fits(rows, i, foot, caps, bank):
                least = e
                best[j] = e
                at[j] = i
    return best, at


@numba.njit(cache=True, nogil=True)
def least_total(points, table, fit, relax, outside, bound, groups, best, lower):
    """The first point of least total (outside[j] + the level's best fitting placement) ×
    groups below `best`: (total, point, placement), or (best, −1, −1) when none is below it.

    As `best_fitting` for points, table and fit; relax: (alone, relaxed, relaxed_start,
    stage_codes, stage_start). alone (held, a): per held array its alone
    codes (indices into the codes; −1 pads); relaxed (r, held): rows of relaxations, table t
    at rows relaxed_start[t] … relaxed_start[t + 1], a −1 standing for any alone code of that
    array; stage_codes: the codes to price before relaxation t (stage_start[t] …), the rest
    last; outside (n,): pJ outside the level, one group; bound (n,): a lower bound on the
    level's energy at each point. Fills lower (n,) with a lower bound on the level's least
    fitting energy at each point (pJ, one group; inf: nothing fits): `bound` where skipped, a
    relaxation's least where beaten, else the least over the placements fitting or not checked
    (those whose total reaches the best found), exact when one is below it."""
    tiles, p, outputs = points
    which = table[0]
    rows, caps, bank = fit
    alone, relaxed, relaxed_start, stage_codes, stage_start = relax
    held = rows.shape[1]
    energy = np.empty(which.shape[0])
    foot = np.empty(which.shape[0])
    c = np.empty((5, 4))
    ratio = np.empty((5, 4))
    tables = len(relaxed_start) - 1
    found, pick = -1, -1
    for j in range(p.shape[1]):
        lower[j] = bound[j]
        if (outside[j] + bound[j]) * groups >= best:
            continue
        _tiles_at(tiles, p, j, c, ratio)
        beaten = False
        for t in range(tables):
            _price(stage_codes[stage_start[t]:stage_start[t + 1]], table, c, ratio,
                   outputs[j], energy, foot)
            least = least_relaxed((relaxed, relaxed_start[t], relaxed_start[t + 1]), alone,
                                   (energy, foot), (caps, bank), outside[j], groups, best)
            lower[j] = max(lower[j], least)
            if (outside[j] + least) * groups >= best:
                beaten = True
                break
        if beaten:
            continue
        _price(stage_codes[stage_start[tables]:], table, c, ratio, outputs[j], energy, foot)
        least, chosen, unchecked = np.inf, -1, np.inf
        for i in range(rows.shape[0]):
            e = energy[rows[i, 0]]
            for k in range(1, held):
                e += energy[rows[i, k]]
            if (outside[j] + e) * groups >= best:
                unchecked = min(unchecked, e)  # may fit: bounds the level, not checked
            elif e < least and _fits(rows, i, foot, caps, bank):
                least, chosen = e, i
        lower[j] = max(lower[j], min(least, unchecked))
        if chosen >= 0:
            best, found, pick = (outside[j] + least) * groups, j, chosen
    return best, found, pick


@numba.njit(cache=True, nogil=True)
def floor_under(points, table, fit, relax, cap):
    """Per point j, a lower bound on the level's least fitting energy, exact when below
    cap[j] (pJ, one group; inf: nothing fits): the relaxations in turn, stopping at one whose
    least reaches cap[j] (that least, a bound), then every placement, those whose energy
    reaches cap[j] not checked for fit (the least of them bounds the rest). Arguments as
    `least_total`'s."""
    tiles, p, outputs = points
    which = table[0]
    rows, caps, bank = fit
    alone, relaxed, relaxed_start, stage_codes, stage_start = relax
    n = p.shape[1]
    out = np.empty(n)
    held = rows.shape[1]
    energy = np.empty(which.shape[0])
    foot = np.empty(which.shape[0])
    c = np.empty((5, 4))
    ratio = np.empty((5, 4))
    tables = len(relaxed_start) - 1
    for j in range(n):
        _tiles_at(tiles, p, j, c, ratio)
        low = 0.0
        for t in range(tables):
            _price(stage_codes[stage_start[t]:stage_start[t + 1]], table, c, ratio,
                   outputs[j], energy, foot)
            low = max(low, least_relaxed((relaxed, relaxed_start[t], relaxed_start[t + 1]),
                                          alone, (energy, foot), (caps, bank), 0.0, 1.0,
                                          cap[j]))
            if low >= cap[j]:
                break
        if low >= cap[j]:
            out[j] = low
            continue
        _price(stage_codes[stage_start[tables]:], table, c, ratio, outputs[j], energy, foot)
        least, unchecked = np.inf, np.inf
        for i in range(rows.shape[0]):
            e = energy[rows[i, 0]]
            for k in range(1, held):
                e += energy[rows[i, k]]
            if e >= cap[j]:
                unchecked = min(unchecked, e)
            elif e < least and _fits(rows, i, foot, caps, bank):
                least = e
        out[j] = max(low, min(least, unchecked))
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _alone_count(alone, k):
    """How many alone codes held array k has (its row of `alone`, −1 padded)."""
    n = 0
    while n < alone.shape[1] and alone[k, n] >= 0:
        n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def _option(relaxed, r, k, alone, i):
    """The i-th code held array k takes in relaxation row r."""
    q = relaxed[r, k]
    return q if q >= 0 else alone[k, i]


@numba.njit(cache=True, nogil=True)
def least_relaxed(span, alone, priced, banks, add, mul, limit):
    """span: (relaxed, start, stop); priced: (energy, foot) of the codes; banks: (caps, bank).
    The least energy over rows start … stop of `relaxed`, each −1 replaced by every alone
    code of its array, of the codes summed in held order among those fitting (inf: none);
    −inf as soon as a fitting sum e has (add + e) × mul < limit (then the least has too, and
    the callers need no more: the relaxation does not beat the point, and the least is below
    the bound they take at the point's next stage, so it would not raise it).

    Held arrays are nested loops carrying the partial sums (energy, and each bank's
    footprint) in held order, so each sum is the one of adding the codes in that order; a
    partial sum at or above the least found, or a bank's footprint over its bytes, ends its
    branch: every term is non-negative and float addition is monotone, so no completion of it
    could count."""
    relaxed, start, stop = span
    energy, foot = priced
    caps, bank = banks
    held = relaxed.shape[1]
    least = np.inf
    m0 = _alone_count(alone, 0)
    m1 = _alone_count(alone, 1) if held > 1 else 1
    m2 = _alone_count(alone, 2) if held > 2 else 1
    b1 = bank[1] if held > 1 else 0
    b2 = bank[2] if held > 2 else 0
    for r in range(start, stop):
        n0 = 1 if relaxed[r, 0] >= 0 else m0
        n1 = 1 if held < 2 or relaxed[r, 1] >= 0 else m1
        n2 = 1 if held < 3 or relaxed[r, 2] >= 0 else m2
        for a in range(n0):
            q = _option(relaxed, r, 0, alone, a)
            e0, u0 = energy[q], foot[q]
            if e0 >= least or u0 > caps[bank[0]]:
                continue
            if held == 1:
                if (add + e0) * mul < limit:
                    return -np.inf
                least = e0
                continue
            for b in range(n1):
                q = _option(relaxed, r, 1, alone, b)
                f1 = foot[q]
                e1, u1 = e0 + energy[q], (u0 + f1 if b1 == bank[0] else f1)
                if e1 >= least or u1 > caps[b1]:
                    continue
                if held == 2:
                    if (add + e1) * mul < limit:
                        return -np.inf
                    least = e1
                    continue
                for c in range(n2):
                    q = _option(relaxed, r, 2, alone, c)
                    e2 = e1 + energy[q]
                    if e2 >= least:
                        continue
                    u2 = u1 if b2 == b1 else (u0 if b2 == bank[0] else 0.0)
                    if u2 + foot[q] <= caps[b2]:
                        if (add + e2) * mul < limit:
                            return -np.inf
                        least = e2
    return least


__all__ = ["HI", "LO", "O", "ONE", "STEP", "W", "best_fitting", "floor_under", "kernel_extent",
           "least_relaxed", "least_total", "window"]
