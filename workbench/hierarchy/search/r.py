"""The former search space R (`search_r`): exact minimum-energy blocking with whole blocks at every
level, kept as the baseline `search` (space S ⊇ R) is compared with, and for its tile-chain
pruning, which `search` reuses.

Space R (everything in it is priced; nothing else is searched):
- L on-chip levels, G = L + 1 loop groups; on-chip level k (1 = outermost) holds every array
  as the whole block of groups 0 … L−k, i.e. its buffering position is the last loop of group
  L−k (seed 001 §3.5's fixed-hierarchy model, buffers the size of table 2's blocks); an array
  whose part of a split level is 0 bypasses that level;
- tiles: every chain t_0 | t_1 | … | t_{L−1} ≤ E per dimension (X, Y, C, M, N); the outermost
  group covers the layer with ⌈E/t_{L−1}⌉ full-size blocks (padded extent P = ⌈E/t⌉·t);
- a blocking fits when each level holds the footprints of its blocks (Σ array footprint ×
  width ≤ capacity, or each array within its part); footprints bound eq. 2's buffers, so the
  result also fits by `accesses.evaluate`'s rule;
- loop orders do not change any count in R (every position is at a group's end): the result
  uses canonical orders. Not in R: positions inside a group (seed 002's per-array levels),
  bypass by choice. Objective: `accesses.energy_pj` summed, MAC energy included.

Counts in R in closed form. For a holder whose block is t (per dimension, n = P/t blocks):
  moved_I = P_N·P_C·(W_y(t_Y)·n_Y)·(W_x(t_X)·n_X)·n_M,  W(t) = (t−1)·S + K (t·K if S ≥ K)
  moved_W = Kx·Ky·P_M·P_C·n_X·n_Y·n_N,     moved_O = P_N·P_M·P_Y·P_X·n_C
and the datapath's operand fetches are `datapath.fetches` over the inner block t_0 (one scalar
MAC: Kx·Ky·Π P of each array); MAC energy = Kx·Ky·Π P × mac_energy_pj. O's sides each cost
outputs·e_final + 2·(moved − outputs)·e_partial, outputs = P_N·P_M·P_Y·P_X.

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
import math
from dataclasses import dataclass

import numba
import numpy as np

from workbench.errors import WorkbenchError
from workbench.hierarchy.accesses import ElementBytes, PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking, extents
from workbench.hierarchy.datapath import Datapath, fetches
from workbench.hierarchy.levels import Hierarchy, SizeEnergy, capacity_banks
from workbench.layers.spec import ConvLayer, as_grouped

CHUNK = 1 << 21   # combinations priced per numpy pass (at most; one X chain at a time)
_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}


class NoFitError(WorkbenchError):
    """No blocking of the space fits the hierarchy's capacities."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The best blocking of the space searched, its energy (pJ, whole layer), the non-dominated
    tile chains per dimension and their combinations."""

    blocking: Blocking
    energy_pj: float
    chains_per_dim: dict[str, int]
    combinations: int


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


def _pj_per_bit(hierarchy: Hierarchy, size_energy: SizeEnergy | None) -> np.ndarray:
    """[level, array] pJ per bit accessed (access_pj / access_bits)."""
    return np.array([[lvl.access_pj(a, size_energy) / lvl.access_bits for a in ARRAYS]
                     for lvl in hierarchy.levels])


def _holders(hierarchy: Hierarchy, array: str) -> list[int]:
    """Levels holding `array` (1 … L; a split part of 0 bypasses), then the datapath."""
    held = [k for k, lvl in enumerate(hierarchy.levels) if k and lvl.bytes_for(array) > 0]
    return held + [len(hierarchy.levels)]


def _grid(per_dim: dict[str, np.ndarray], extent: dict[str, int], x_chain: int,
          y_rows: slice) -> dict:
    """Per dimension: tiles t[g] and padded extent P as arrays broadcasting over the axes
    (Y, C, M, N), X fixed to one chain, Y to a slice of its chains."""
    out = {}
    for axis, dim in enumerate(DIMS):
        chains = per_dim[dim][[x_chain]] if dim == "X" else per_dim[dim]
        if dim == "Y":
            chains = chains[y_rows]
        shape = [1, 1, 1, 1]
        if axis:
            shape[axis - 1] = len(chains)
        p = -(-extent[dim] // chains[:, -1]) * chains[:, -1]
        out[dim] = ([chains[:, g].reshape(shape) for g in range(chains.shape[1])],
                    p.reshape(shape))
    return out


def _moved(layer: ConvLayer, grid: dict, g: int | None,
           datapath: Datapath | None = None) -> dict[str, np.ndarray]:
    """Elements moved into a holder whose block is t_g (g None: the datapath's operand fetches,
    `datapath.fetches` over the inner block t_0; one scalar MAC: Kx·Ky·ΠP each)."""
    p = {d: grid[d][1] for d in DIMS}
    if g is None:
        return fetches(layer.Kx * layer.Ky, p, {d: grid[d][0][0] for d in DIMS}, datapath)
    t = {d: grid[d][0][g] for d in DIMS}
    n = {d: p[d] // t[d] for d in DIMS}

    def window(tile, stride, kernel):
        return np.where(stride >= kernel, tile * kernel, (tile - 1) * stride + kernel)

    return {"I": p["N"] * p["C"] * window(t["Y"], layer.Sy, layer.Ky) * n["Y"]
            * window(t["X"], layer.Sx, layer.Kx) * n["X"] * n["M"],
            "W": layer.Kx * layer.Ky * p["M"] * p["C"] * n["X"] * n["Y"] * n["N"],
            "O": p["N"] * p["M"] * p["Y"] * p["X"] * n["C"]}


def _footprints(layer: ConvLayer, grid: dict, g: int) -> dict[str, np.ndarray]:
    t = {d: grid[d][0][g] for d in DIMS}
    wy = np.where(layer.Sy >= layer.Ky, t["Y"] * layer.Ky, (t["Y"] - 1) * layer.Sy + layer.Ky)
    wx = np.where(layer.Sx >= layer.Kx, t["X"] * layer.Kx, (t["X"] - 1) * layer.Sx + layer.Kx)
    return {"I": t["N"] * t["C"] * wy * wx, "W": t["M"] * t["C"] * layer.Kx * layer.Ky,
            "O": t["N"] * t["M"] * t["Y"] * t["X"]}


def _price(layer: ConvLayer, hierarchy: Hierarchy, grid: dict, pj_bit: np.ndarray,
           precision: PrecisionLike) -> np.ndarray:
    """Energy (pJ) of every combination in the grid (capacities not checked: `_fits`)."""
    levels = len(hierarchy.levels)
    bits = {"I": 8 * precision.inputs, "W": 8 * precision.weights}
    moved = {k: _moved(layer, grid, levels - 1 - k if k < levels else None, hierarchy.datapath)
             for k in range(1, levels + 1)}
    p = {d: grid[d][1] for d in DIMS}
    outputs = p["N"] * p["M"] * p["Y"] * p["X"]
    macs = layer.Kx * layer.Ky * math.prod(p.values())
    energy = macs * hierarchy.mac_energy_pj * 1.0
    for a_idx, array in enumerate(ARRAYS):
        chain = _holders(hierarchy, array)
        for source, holder in zip([0] + chain[:-1], chain, strict=True):
            m = moved[holder][array]
            side = pj_bit[source, a_idx] + (pj_bit[holder, a_idx] if holder < levels else 0.0)
            if array == "O":
                energy = energy + side * (outputs * 8 * precision.outputs
                                          + 2 * (m - outputs) * 8 * precision.partial_sums)
            else:
                energy = energy + side * m * bits[array]
    return energy * layer.groups


def _fits(layer: ConvLayer, hierarchy: Hierarchy, grid: dict,
          precision: PrecisionLike) -> np.ndarray:
    """Combinations whose block footprints fit every on-chip level."""
    levels = len(hierarchy.levels)
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    ok = np.ones(np.broadcast_shapes(*(grid[d][1].shape for d in DIMS)), dtype=bool)
    for k in range(levels - 1, 0, -1):  # innermost (smallest, most selective) first
        level, foot = hierarchy.levels[k], _footprints(layer, grid, levels - 1 - k)
        held = tuple(a for a in ARRAYS if level.bytes_for(a) > 0)
        bank, sizes = capacity_banks(level, held)
        for i, size in enumerate(sizes):
            ok &= sum(foot[a] * width[a] for a, b in zip(held, bank, strict=True)
                      if b == i) <= size
    return ok


def search_r(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike | None = None,
             size_energy: SizeEnergy | None = None) -> SearchResult:
    """The minimum-energy blocking of the layer in R (see the module docstring); energy in pJ
    for the whole layer, ties to the first combination enumerated."""
    layer = as_grouped(layer)  # a connection table's groups, if it has them
    precision = ElementBytes() if precision is None else precision
    on_chip = len(hierarchy.levels) - 1
    extent = {d: extents(layer)[_EXTENT[d]] for d in DIMS}
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    pj_bit = _pj_per_bit(hierarchy, size_energy)
    per_y = max(1, CHUNK // max(1, math.prod(len(per_dim[d]) for d in ("C", "M", "N"))))
    best, best_at = math.inf, None
    for ox in range(len(per_dim["X"])):
        for y0 in range(0, len(per_dim["Y"]), per_y):
            grid = _grid(per_dim, extent, ox, slice(y0, y0 + per_y))
            fits = _fits(layer, hierarchy, grid, precision)
            if not fits.any():
                continue
            energy = np.where(fits, _price(layer, hierarchy, grid, pj_bit, precision), np.inf)
            at = np.unravel_index(int(np.argmin(energy)), energy.shape)
            if energy[at] < best:
                best = float(energy[at])
                best_at = {"X": ox, "Y": y0 + int(at[0]), "C": int(at[1]), "M": int(at[2]),
                           "N": int(at[3])}
    if best_at is None:
        raise NoFitError(f"layer {layer.name!r}: no blocking fits hierarchy "
                         f"{hierarchy.name!r} (its smallest blocks overflow a level)")
    tiles = [{d: int(per_dim[d][best_at[d]][g]) for d in DIMS} for g in range(on_chip)]
    last = [len(GROUP0) - 1 + len(DIMS) * (on_chip - k) for k in range(1, on_chip + 1)]
    buffers = {a: [p if k in _holders(hierarchy, a) else None
                   for k, p in zip(range(1, on_chip + 1), last, strict=True)] for a in ARRAYS}
    blocking = Blocking.of([GROUP0] + [DIMS] * on_chip, tiles, buffers)
    combos = math.prod(len(per_dim[d]) for d in DIMS)
    return SearchResult(blocking, best, {d: len(per_dim[d]) for d in DIMS}, combos)
