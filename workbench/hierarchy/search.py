"""Exact minimum-energy blocking of one layer on a given hierarchy, over the space S below
(seed 001 §3 blocking strings with seed 002's per-array buffering positions, one level each).

Space S (everything in it is priced; nothing else is searched). L on-chip levels, G = L + 1
loop groups; tiles: every divisor chain t_0 | … | t_{L−1} ≤ E per dimension, the outermost
group covering the layer with ⌈E/t_{L−1}⌉ full blocks (P = padded extent, t_L := P). Level k
(1 = outermost on-chip) owns group γ = L−k+1 (the loops stepping over its blocks t_{γ−1}):
- a loop order π_γ of X, Y, C, M, N for that group (group 0's order changes nothing: no
  position lies inside it);
- for every array A the level holds (R's rule: all arrays, but those whose part of a split
  level is 0), a buffering position anywhere in group γ: after the prefix S_A of π_γ (S_A = ∅
  is R's position, the end of group γ−1; all five loops: the end of group γ). A's block then
  has c_d = t_γ along the dimensions in S_A and t_{γ−1} along the others;
- a blocking fits when Σ_A footprint_A × width_A ≤ capacity (split: each within its part).
  Footprints (eq. 1) bound eq. 2's buffers, so the result fits by `accesses.evaluate` too.
S ⊇ R (all S_A = ∅; `search_r`). Not in S (so not claimed optimal against them): a level's
positions outside its own group (e.g. an SRAM buffer inside group 0, a register file's in the
outermost group), bypass by choice. Objective: `accesses.energy_pj` summed, MAC energy
Kx·Ky·ΠP × mac_energy_pj included; the datapath's operand fetches are `datapath.fetches` over
the inner block t_0.

Counts (kernel loops are in group 0, inside every position of S): for a block c,
  F_W = c_M·c_C·Kx·Ky,  moved_W = Kx·Ky·P_M·P_C·(P_X/c_X)(P_Y/c_Y)(P_N/c_N)
  F_O = c_N·c_M·c_Y·c_X, moved_O = P_N·P_M·P_Y·P_X·(P_C/c_C)
  F_I = c_N·c_C·W_y(c_Y)·W_x(c_X), moved_I = P_N·P_C·(P_M/c_M)·W_y(c_Y)(P_Y/c_Y)·W_x(c_X)(P_X/c_X)
with W(c) = (c−1)·S + K (c·K if S ≥ K): moved = footprint × refills, refills = Π_d P_d/c_d.
Every moved count is non-increasing in every c_d (W(c)/c never grows), every footprint
non-decreasing.

Lemma 1 (positions just before a relevant loop). A loop over a dimension A's index does not
use (I: M; W: X, Y, N; O: C) changes neither A's footprint nor anything else when A's position
is moved outward past it, and divides A's refills by its trip count (≥ 1). So a position
directly followed by such a loop is never better than the one after it: WLOG S_A is a prefix
of π_γ directly followed by a loop relevant to A, or the whole group (`canonical_prefixes`).
Counts depend on π_γ only through the prefixes each array gets, so a level's placements are
the distinct tuples (S_A) over all 120 orders (a trip-1 loop changes nothing anywhere).
Lemma 2 (dominated placements). Per array, each dimension of S_A either only grows the
footprint (W: M, C; O: X, Y, M, N; I: C, N), only shrinks refills (W: X, Y, N; O: C; I: M) or
both (I: X, Y, the halo). A placement whose sets have, per held array, the same "both" part,
no more "footprint" bits and no fewer "refill" bits than another's is never worse for any
tiles: it is dropped (`search_space.placements`: 96 of 3,326 tuples remain for I, W, O).
Lemma 3 (levels are independent given the tiles). Holders are fixed by R's rule, so the
levels exchanging data are too; level k's energy and capacity involve only its own placement
and (t_{γ−1}, t_γ, P): each level takes its best fitting placement independently, exactly.
Outer levels (γ ≥ 2) are priced once per distinct (t_{γ−1}, t_γ, P) vector (a table per X
class, looked up per tile combination).
Lemma 4 (tile chains, as in `search_r`). Every count above is a product of non-negative
factors each non-decreasing in one component of v(c) = (t_0 … t_{L−1}, P/t_0 … P/t_{L−1}, P)
of one dimension (c_d ∈ {t_{γ−1}, t_γ}, P_d/c_d likewise; datapath steps (P/t_0)·⌈t_0/u⌉);
placements do not depend on the tiles, so replacing a chain by one with a componentwise
smaller vector keeps every placement valid, raises no energy and no footprint: only
`nondominated_chains` are enumerated, all of their combinations.
Bounds (exact skips). Every placement's blocks contain R's (c ≥ t_{γ−1}), so where R's blocks
overflow a level no placement fits: those combinations are skipped. The innermost level is
priced last, combinations in rising order of a lower bound (MAC + datapath + outer levels +
the innermost level with the whole group inside every buffer: the fewest moved, capacity
ignored); once that bound reaches the best energy found, the rest cannot beat it.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.hierarchy.accesses import ElementBytes, PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking, extents
from workbench.hierarchy.datapath import fetches
from workbench.hierarchy.levels import Hierarchy, SizeEnergy
from workbench.hierarchy.search_r import (
    CHUNK,
    NoFitError,
    SearchResult,
    _fits,
    _grid,
    _holders,
    _pj_per_bit,
    gen_chains,
    nondominated_chains,
    search_r,
)
from workbench.hierarchy.search_space import (
    LevelBlocks,
    best_placements,
    lower_bound,
    placements,
    side_cost,
)
from workbench.layers.spec import ConvLayer

_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}
BATCH = 1 << 16   # innermost-level points priced per numpy pass, lowest lower bound first


def _take(flat: dict, idx) -> dict:
    return {d: ([t[idx] for t in tiles], p[idx]) for d, (tiles, p) in flat.items()}


def _base(layer: ConvLayer, hierarchy: Hierarchy, flat: dict, pj_bit: np.ndarray,
          precision: PrecisionLike) -> np.ndarray:
    """MAC energy and the datapath's operand fetches (pJ, one group) at every point."""
    p = {d: flat[d][1] for d in DIMS}
    outputs = p["N"] * p["M"] * p["Y"] * p["X"]
    energy = layer.Kx * layer.Ky * math.prod(p.values()) * hierarchy.mac_energy_pj
    if hierarchy.datapath is None or hierarchy.datapath.macs_per_step == 1:
        fetched = dict.fromkeys(ARRAYS, layer.Kx * layer.Ky * math.prod(p.values()))
    else:
        fetched = fetches(layer.Kx * layer.Ky, p, {d: flat[d][0][0] for d in DIMS},
                          hierarchy.datapath)
    for a_idx, array in enumerate(ARRAYS):  # the datapath's side costs nothing
        last = _holders(hierarchy, array)[-2] if len(_holders(hierarchy, array)) > 1 else 0
        energy = energy + side_cost(array, fetched[array], pj_bit[last, a_idx], outputs,
                                    precision)
    return energy


def _blocks(layer: ConvLayer, hierarchy: Hierarchy, k: int, flat: dict, pj_bit: np.ndarray,
            precision: PrecisionLike) -> tuple[LevelBlocks, tuple[str, ...]]:
    """On-chip level k's candidate blocks at every point, and the arrays it holds."""
    levels = len(hierarchy.levels)
    held = tuple(a for a in ARRAYS if k in _holders(hierarchy, a))
    coef = {}
    for a in held:
        chain = _holders(hierarchy, a)
        source = ([0] + chain)[chain.index(k)]
        coef[a] = pj_bit[source, ARRAYS.index(a)] + pj_bit[k, ARRAYS.index(a)]
    return LevelBlocks(layer, flat, levels - k, levels - 1, coef, precision), held


def _level(layer: ConvLayer, hierarchy: Hierarchy, k: int, flat: dict, pj_bit: np.ndarray,
           precision: PrecisionLike):
    """Best fitting placement of on-chip level k at every point: (pJ one group, index)."""
    blocks, held = _blocks(layer, hierarchy, k, flat, pj_bit, precision)
    return best_placements(hierarchy, k, blocks, held)


def _classes(chains: np.ndarray, extent: int, gamma: int) -> np.ndarray:
    """Per chain, an id of its (t_{γ−1}, t_γ, P): the values on-chip level L−γ+1 sees."""
    on_chip = chains.shape[1]
    padded = -(-extent // chains[:, -1]) * chains[:, -1]
    hi = chains[:, gamma] if gamma < on_chip else padded
    return np.unique(np.stack([chains[:, gamma - 1], hi, padded], axis=1), axis=0,
                     return_inverse=True)[1].reshape(-1)


def _level_table(layer: ConvLayer, hierarchy: Hierarchy, k: int, per_dim: dict, extent: dict,
                 classes: dict, ox: int, pj_bit: np.ndarray, precision: PrecisionLike):
    """Outer level k's best placement (pJ one group, index) for X's class of chain `ox` and
    every class of Y, C, M, N: arrays indexed by the class ids."""
    gamma = len(hierarchy.levels) - k
    reps = {}
    for d in DIMS:
        ids = classes[d][gamma]
        first = np.unique(ids, return_index=True)[1]
        reps[d] = per_dim[d][first] if d != "X" else per_dim[d][[ox]]
    grid = _grid(reps, extent, 0, slice(None))
    shape = _shape(grid)
    energy, at = _level(layer, hierarchy, k, _gather(grid, np.nonzero(np.ones(shape))),
                        pj_bit, precision)
    return energy.reshape(shape), at.reshape(shape)


def _blocking(hierarchy: Hierarchy, tiles: list[dict], picks: dict[int, int]) -> Blocking:
    """The Blocking of the chosen tiles and placements (group 0 in GROUP0 order)."""
    levels = len(hierarchy.levels)
    on_chip = levels - 1
    orders: list[tuple[str, ...]] = [GROUP0] + [DIMS] * on_chip
    buffers: dict[str, list] = {a: [None] * on_chip for a in ARRAYS}
    for k in range(1, levels):
        held = tuple(a for a in ARRAYS if k in _holders(hierarchy, a))
        prefixes, order = placements(held)[picks[k]]
        gamma = levels - k
        orders[gamma] = order
        start = len(GROUP0) + len(DIMS) * (gamma - 1)
        for array, prefix in zip(held, prefixes, strict=True):
            buffers[array][k - 1] = start - 1 + bin(prefix).count("1")
    return Blocking.of(orders, tiles, buffers)


def _shape(grid: dict) -> tuple[int, ...]:
    return np.broadcast_shapes(*(grid[d][1].shape for d in DIMS))


def _gather(grid: dict, rows: tuple) -> dict:
    """The grid's points at index arrays `rows` (axes Y, C, M, N) as flat float arrays."""
    shape = _shape(grid)
    return {d: ([np.broadcast_to(t, shape)[rows].astype(float) for t in tiles],
                np.broadcast_to(p, shape)[rows].astype(float)) for d, (tiles, p) in grid.items()}


def search(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike | None = None,
           size_energy: SizeEnergy | None = None) -> SearchResult:
    """The minimum-energy blocking of the layer in S (see the module docstring); energy in pJ
    for the whole layer (ties: any one optimum)."""
    precision = ElementBytes() if precision is None else precision
    on_chip = len(hierarchy.levels) - 1
    extent = {d: extents(layer)[_EXTENT[d]] for d in DIMS}
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    classes = {d: {g: _classes(per_dim[d], extent[d], g) for g in range(2, on_chip + 1)}
               for d in DIMS}  # level L−γ+1's view of each chain
    pj_bit = _pj_per_bit(hierarchy, size_energy)
    per_y = max(1, CHUNK // 4 // max(1, math.prod(len(per_dim[d]) for d in ("C", "M", "N"))))
    best, best_at = math.inf, None
    tables: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for ox in range(len(per_dim["X"])):
        for y0 in range(0, len(per_dim["Y"]), per_y):
            grid = _grid(per_dim, extent, ox, slice(y0, y0 + per_y))
            # every placement's blocks contain R's (all S = ∅): where those overflow, none fits
            rows = np.nonzero(np.broadcast_to(_fits(layer, hierarchy, grid, precision),
                                              _shape(grid)))
            if not len(rows[0]):
                continue
            flat = _gather(grid, rows)
            bound = _base(layer, hierarchy, flat, pj_bit, precision)
            picks = {}
            for k in range(1, on_chip):  # outer levels: looked up per (t_{γ−1}, t_γ, P) class
                gamma = on_chip + 1 - k
                table = tables.get((k, classes["X"][gamma][ox]))
                if table is None:
                    table = tables[k, classes["X"][gamma][ox]] = _level_table(
                        layer, hierarchy, k, per_dim, extent, classes, ox, pj_bit, precision)
                ids = tuple(classes[d][gamma][axis + (y0 if d == "Y" else 0)]
                            for d, axis in zip(DIMS[1:], rows, strict=True))
                bound = bound + table[0][ids]
                picks[k] = table[1][ids]
            # the innermost level last, lowest bound first: its energy is at least
            # `lower_bound`, so points whose bound reaches the best energy found cannot beat it
            inner = lower_bound(*_blocks(layer, hierarchy, on_chip, flat, pj_bit, precision))
            bound = bound + inner
            keep = np.nonzero(bound * layer.groups < best)[0]
            order = keep[np.argsort(bound[keep], kind="stable")]
            for start in range(0, len(order), BATCH):
                idx = order[start:start + BATCH]
                if bound[idx[0]] * layer.groups >= best:
                    break
                energy, at = _level(layer, hierarchy, on_chip, _take(flat, idx), pj_bit,
                                    precision)
                total = (bound[idx] - inner[idx] + energy) * layer.groups
                i = int(np.argmin(total))
                if total[i] < best:
                    best, j = float(total[i]), int(idx[i])
                    best_at = ({"X": ox, "Y": y0 + int(rows[0][j]), "C": int(rows[1][j]),
                                "M": int(rows[2][j]), "N": int(rows[3][j])},
                               {**{k: int(v[j]) for k, v in picks.items()}, on_chip: int(at[i])})
    if best_at is None:
        raise NoFitError(f"layer {layer.name!r}: no blocking fits hierarchy "
                         f"{hierarchy.name!r} (its smallest blocks overflow a level)")
    rows_at, chosen = best_at
    tiles = [{d: int(per_dim[d][rows_at[d]][g]) for d in DIMS} for g in range(on_chip)]
    combos = math.prod(len(per_dim[d]) for d in DIMS)
    return SearchResult(_blocking(hierarchy, tiles, chosen), best,
                        {d: len(per_dim[d]) for d in DIMS}, combos)


__all__ = ["NoFitError", "SearchResult", "gen_chains", "nondominated_chains", "search",
           "search_r"]
