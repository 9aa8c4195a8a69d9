"""Exact non-dominated filtering of integer count vectors (a Pareto front in d dimensions).

Row a dominates row b when a ≤ b in every column and a ≠ b. `nondominated` keeps one row of
each set of identical rows and drops every dominated row; nothing is sampled or approximated.

Method: rows are sorted lexicographically, so a row can only be dominated by an earlier row,
and the first column needs no test. The rows kept so far sit in a static k-d tree over the
other columns (built once over all rows, split at medians by quickselect, the split column
cycling level by level: splitting on the widest column favoured columns with large values and
gave trees three times slower to search); each tree node holds the
component-wise minimum of the kept rows below it, so a whole subtree is skipped as soon as one
of its minima exceeds the row tested: no row in it can be ≤ that row in that column.
"""

from __future__ import annotations

import numba
import numpy as np

_LEAF = 16


@numba.njit(cache=True, nogil=True)
def _select(v, perm, lo, hi, k, axis):
    """Reorder perm[lo:hi] so that perm[k] holds the row of rank k in column `axis`, rows
    before it no larger and rows after it no smaller (quickselect, median-of-three pivot)."""
    hi -= 1
    while lo < hi:
        a, b, c = v[perm[lo], axis], v[perm[(lo + hi) // 2], axis], v[perm[hi], axis]
        pivot = max(min(a, b), min(max(a, b), c))
        i, j = lo, hi
        while i <= j:
            while v[perm[i], axis] < pivot:
                i += 1
            while v[perm[j], axis] > pivot:
                j -= 1
            if i <= j:
                perm[i], perm[j] = perm[j], perm[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@numba.njit(cache=True, nogil=True)
def _build_tree(v, perm, left, right, lo_of, hi_of, parent, leaf_of):
    """Median-split k-d tree over columns 1..d-1 of v (the column cycles with the depth);
    returns the number of nodes."""
    d = v.shape[1]
    stack = np.empty(128, np.int64)
    stack[0] = 0
    depth = 1
    nodes = 1
    lo_of[0], hi_of[0], parent[0] = 0, len(perm), -1
    level = np.zeros(len(left), np.int64)
    while depth:
        depth -= 1
        node = stack[depth]
        lo, hi = lo_of[node], hi_of[node]
        if hi - lo <= _LEAF:
            left[node] = -1
            right[node] = -1
            for t in range(lo, hi):
                leaf_of[perm[t]] = node
            continue
        axis = 1 + level[node] % (d - 1)  # cycle through the columns
        mid = (lo + hi) // 2
        _select(v, perm, lo, hi, mid, axis)
        for child, a, b in ((nodes, lo, mid), (nodes + 1, mid, hi)):
            lo_of[child], hi_of[child], parent[child] = a, b, node
            level[child] = level[node] + 1
            stack[depth] = child
            depth += 1
        left[node], right[node] = nodes, nodes + 1
        nodes += 2
    return nodes


@numba.njit(cache=True, nogil=True)
def _covers(v, p, i):
    """True when row p is ≤ row i in columns 1..d-1."""
    for k in range(1, v.shape[1]):
        if v[p, k] > v[i, k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _keep_sorted(v):
    """Keep-mask of the non-dominated rows of v (lexicographically sorted, no equal rows)."""
    n, d = v.shape
    size = 4 * (n // _LEAF + 2)
    left = np.empty(size, np.int64)
    right = np.empty(size, np.int64)
    lo_of = np.empty(size, np.int64)
    hi_of = np.empty(size, np.int64)
    parent = np.empty(size, np.int64)
    perm = np.arange(n)
    leaf_of = np.empty(n, np.int64)
    nodes = _build_tree(v, perm, left, right, lo_of, hi_of, parent, leaf_of)
    mins = np.full((nodes, d), np.iinfo(np.int64).max, np.int64)
    kept = np.zeros(n, np.bool_)
    stack = np.empty(256, np.int64)
    last = -1  # the latest dominating row: consecutive rows are often dominated by it too
    for i in range(n):
        dominated = last >= 0 and _covers(v, last, i)
        depth = 0 if dominated else 1
        stack[0] = 0
        while depth and not dominated:
            depth -= 1
            node = stack[depth]
            prune = False
            for k in range(1, d):
                if mins[node, k] > v[i, k]:
                    prune = True
                    break
            if prune:
                continue
            if left[node] >= 0:
                stack[depth] = left[node]
                stack[depth + 1] = right[node]
                depth += 2
                continue
            for t in range(lo_of[node], hi_of[node]):
                p = perm[t]
                if kept[p] and _covers(v, p, i):
                    dominated = True
                    last = p
                    break
        if dominated:
            continue
        kept[i] = True
        node = leaf_of[i]
        while node >= 0:
            lowered = False
            for k in range(d):
                if v[i, k] < mins[node, k]:
                    mins[node, k] = v[i, k]
                    lowered = True
            if not lowered:
                break
            node = parent[node]
    return kept


def nondominated(vectors: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of an (N, d) integer array, in lexicographic order of
    the rows; of identical rows only the first (lowest index) is kept."""
    v = np.ascontiguousarray(vectors, dtype=np.int64)
    if v.ndim != 2:
        raise ValueError("nondominated: expected an (N, d) array")
    if len(v) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(v.T[::-1])  # stable: equal rows stay in index order
    s = v[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = np.any(s[1:] != s[:-1], axis=1)
    order, s = order[first], s[first]
    if v.shape[1] == 1:
        return order[:1]
    return order[_keep_sorted(np.ascontiguousarray(s))]
