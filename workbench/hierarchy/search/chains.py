"""The tile chains `search` and `search_r` enumerate per dimension (X, Y, C, M, N): every
divisor chain t_0 | … | t_{L−1} ≤ E (`gen_chains`), reduced to the non-dominated ones
(`nondominated_chains`), and the classes of chains one on-chip level sees (`chain_classes`).
The counts this argument rests on are R's, in closed form in `search.r`'s docstring; for S:
docs/search.md, "Lemma 4: tile chains".

Why pruning per dimension is exact. Take a dimension d and a chain c = (t_0 … t_{L−1}); let
v(c) = (t_0 … t_{L−1}, P/t_0 … P/t_{L−1}, P). Every quantity above — each moved count (also
moved_O − outputs = outputs·(n_C − 1)), the datapath's fetches (factors P_d and
s_d = (P_d/t_0)·⌈t_0/u_d⌉), every footprint — is a product of
non-negative factors, each a non-decreasing function of one component of v(c) (W(t) increases
with t), times factors from other dimensions. Energy is a non-negative combination of those
counts and each capacity use a non-negative combination of footprints. So if v(a) ≤ v(b)
componentwise, replacing b by a in any blocking raises neither its energy nor any level's
use: b is never needed, and keeping one chain per distinct non-dominated vector loses no
optimum (`nondominated_chains`). The remaining chains are enumerated completely.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from workbench.hierarchy.blocking import DIMS, extents
from workbench.layers.dims import Dim
from workbench.layers.spec import ConvLayer


def dim_extents(layer: ConvLayer) -> dict[Dim, int]:
    """The layer's extent per dimension (DIMS: X, Y, C, M, N; `blocking.extents`)."""
    e = extents(layer)
    return {d: e[d] for d in DIMS}


def gen_chains(extent: int, levels: int) -> np.ndarray:
    """Every divisor chain t_0 | … | t_{levels−1} ≤ extent, one per row (each tile's divisors
    in rising order, as the rows below it)."""
    divisors: list[list[int]] = [[] for _ in range(extent + 1)]
    for d in range(1, extent + 1):
        for multiple in range(d, extent + 1, d):
            divisors[multiple].append(d)
    chains = [(t,) for t in range(1, extent + 1)]
    for _ in range(levels - 1):
        chains = [(d,) + c for c in chains for d in divisors[c[0]]]
    return np.array(chains, dtype=np.int64).reshape(-1, levels)


@functools.lru_cache(maxsize=256)
def nondominated_chains(extent: int, levels: int) -> np.ndarray:
    """The chains whose vector (t…, P/t…, P) no other chain's is ≤ componentwise (one per
    distinct vector, in lexicographic order); see the module docstring. Cached: callers must
    not modify the array.

    Only chains of the same n = P/t_{L−1} can dominate one another: ⌈E/t⌉ never grows with t,
    so t_a ≤ t_b (last tiles) with n_a ≤ n_b forces n_a = n_b, and then P_a = n·t_a ≤ P_b. Within
    such a group, with r_i = t_{L−1}/t_i, a ≤ b exactly when t_i^a ≤ t_i^b and r_i^a ≤ r_i^b for
    every i < L−1 (P/t_i = n·r_i; t_{L−1} = t_0·r_0 follows), and one level keeps the least
    t_{L−1} of each n. Each group's skyline: by a sort over (t_0, r_0) with two levels, else its
    vectors by rising component sum (a dominator has a smaller sum) against the front kept so
    far (dominance is transitive, so a dominated vector is never needed as a dominator)."""
    chains = gen_chains(extent, levels)
    padded = -(-extent // chains[:, -1:]) * chains[:, -1:]
    vec = np.unique(np.hstack([chains, padded // chains, padded]), axis=0)
    last, n = vec[:, levels - 1], vec[:, 2 * levels - 1]
    keep = np.zeros(len(vec), dtype=bool)
    order = np.lexsort((last, n))
    starts = np.nonzero(np.diff(n[order], prepend=-1))[0]
    for group in np.split(order, starts[1:]):
        if levels == 1:
            keep[group[0]] = True  # the least t of this n
            continue
        feats = np.hstack([vec[group, :levels - 1],
                           vec[group, levels - 1:levels] // vec[group, :levels - 1]])
        keep[group[_skyline(feats)]] = True
    result = vec[keep][:, :levels]
    result.setflags(write=False)
    return result


def _skyline(feats: np.ndarray) -> np.ndarray:
    """Indices of the rows (distinct) that no other row is ≤ componentwise."""
    if feats.shape[1] == 2:  # by t_0, then r_0: a row is kept when its r_0 is below all before
        order = np.lexsort((feats[:, 1], feats[:, 0]))
        r = feats[order, 1]
        before = np.concatenate(([np.iinfo(np.int64).max], np.minimum.accumulate(r)[:-1]))
        return order[r < before]
    order = np.argsort(feats.sum(axis=1), kind="stable")
    return order[_front(np.ascontiguousarray(feats[order]))]


@numba.njit(cache=True, nogil=True)
def _front(rows: np.ndarray) -> np.ndarray:
    """Mask of the rows (by rising component sum, distinct) that no row before them is ≤
    componentwise: rows of equal sum cannot dominate one another, and a row dominated by a
    dropped one is dominated by what dropped it, so comparing with the kept rows suffices."""
    kept = np.empty(rows.shape[0], dtype=np.int64)
    mask = np.zeros(rows.shape[0], dtype=np.bool_)
    count = 0
    for i in range(rows.shape[0]):
        dominated = False
        for j in range(count):
            row = kept[j]
            below = True
            for k in range(rows.shape[1]):
                if rows[row, k] > rows[i, k]:
                    below = False
                    break
            if below:
                dominated = True
                break
        if not dominated:
            kept[count] = i
            count += 1
            mask[i] = True
    return mask

def chain_classes(chains: np.ndarray, extent: int, gamma: int) -> np.ndarray:
    """Per chain, an id of its (t_{γ−1}, t_γ, P): the values on-chip level L−γ+1 sees."""
    on_chip = chains.shape[1]
    padded = -(-extent // chains[:, -1]) * chains[:, -1]
    hi = chains[:, gamma] if gamma < on_chip else padded
    return np.unique(np.stack([chains[:, gamma - 1], hi, padded], axis=1), axis=0,
                     return_inverse=True)[1].reshape(-1)


__all__ = ["chain_classes", "dim_extents", "gen_chains", "nondominated_chains"]
