"""The former search space R (`search_r`): exact minimum-energy blocking with whole blocks at every
level, kept as the baseline `search` (space S ⊇ R; docs/search.md, "What S holds and what it
leaves out") is compared with.

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

The tile chains each dimension takes, and why pruning them per dimension is exact:
`search.chains`.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.hierarchy.accesses import ElementBytes, PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking
from workbench.hierarchy.datapath import Datapath, fetches
from workbench.hierarchy.levels import Hierarchy, SizeEnergy, capacity_banks
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.chains import dim_extents, nondominated_chains
from workbench.hierarchy.search.context import NoFitError, SearchResult
from workbench.hierarchy.search.pricing import pj_per_bit
from workbench.layers.spec import ConvLayer, as_grouped


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


def footprints(layer: ConvLayer, grid: dict, g: int) -> dict[str, np.ndarray]:
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
        level, foot = hierarchy.levels[k], footprints(layer, grid, levels - 1 - k)
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
    extent = dim_extents(layer)
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    pj_bit = pj_per_bit(hierarchy, size_energy)
    per_y = max(1, tuning.CHUNK // max(1, math.prod(len(per_dim[d]) for d in ("C", "M", "N"))))
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


__all__ = ["footprints", "search_r"]
