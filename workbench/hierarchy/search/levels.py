"""Per-level pieces of `search` (docs/search.md, "Lemma 3"): the datapath's side of every tile
point, the smallest blocks each level must fit, a level's best placement at many points
(outer levels: tables per class of their (t_{γ−1}, t_γ, P)), and the Blocking of a chosen
point."""

from __future__ import annotations

import math

import numpy as np

from workbench.hierarchy.accesses import PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking
from workbench.hierarchy.datapath import fetches
from workbench.hierarchy.levels import Hierarchy, capacity_banks
from workbench.hierarchy.search.calls import best_placements
from workbench.hierarchy.search.context import Space
from workbench.hierarchy.search.dominance import level_placements
from workbench.hierarchy.search.placements import INNER, LANE, moved_code, step_bits, unrolled_dims
from workbench.hierarchy.search.pricing import LevelBlocks
from workbench.hierarchy.search.r import footprints
from workbench.hierarchy.search.roles import Pattern, variant
from workbench.layers.spec import ConvLayer


def datapath_side(layer: ConvLayer, hierarchy: Hierarchy, flat: dict):
    """(MAC energy pJ, the datapath's operand fetches per array, outputs) at every point."""
    p = {d: flat[d][1] for d in DIMS}
    outputs = p["N"] * p["M"] * p["Y"] * p["X"]
    macs = layer.Kx * layer.Ky * math.prod(p.values())
    if hierarchy.datapath is None or hierarchy.datapath.macs_per_step == 1:
        fetched = dict.fromkeys(ARRAYS, macs)
    else:
        fetched = fetches(layer.Kx * layer.Ky, p, {d: flat[d][0][0] for d in DIMS},
                          hierarchy.datapath)
    return macs * hierarchy.mac_energy_pj, fetched, outputs


def smallest_blocks(layer: ConvLayer, grid: dict, on_chip: int, width: dict) -> dict:
    """Per on-chip level, per array, the bytes of its smallest block there (`r_blocks_fit`):
    R's blocks at the outer levels, one element at the innermost."""
    feet = {k: {a: f * width[a] for a, f in footprints(layer, grid, on_chip - k).items()}
            for k in range(1, on_chip)}
    feet[on_chip] = {a: float(width[a]) for a in ARRAYS}
    return feet


def level_blocks(layer: ConvLayer, hierarchy: Hierarchy, k: int, flat: dict, pj_bit: np.ndarray,
            precision: PrecisionLike, pattern: Pattern) -> tuple[LevelBlocks, tuple[str, ...]]:
    """On-chip level k's candidate blocks at every point, and the arrays it holds."""
    levels = len(hierarchy.levels)
    held, sources = variant(pattern, k)
    coef = {a: pj_bit[src, ARRAYS.index(a)] + pj_bit[k, ARRAYS.index(a)]
            for a, src in zip(held, sources, strict=True)}
    return LevelBlocks(layer, flat, levels - k, levels - 1, coef, precision,
                       unrolled_dims(hierarchy.datapath)), held


def best_at_level(layer: ConvLayer, hierarchy: Hierarchy, k: int, flat: dict, pj_bit: np.ndarray,
           precision: PrecisionLike, pattern: Pattern):
    """Best fitting placement of on-chip level k at every point: (pJ one group, index)."""
    blocks, held = level_blocks(layer, hierarchy, k, flat, pj_bit, precision, pattern)
    return best_placements(hierarchy, k, blocks, held)


def class_ids(classes: dict, gamma: int, chain_at: dict, one_x: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """The (t_{γ−1}, t_γ, P) class combination of each point (`chain_at`: its chain index per
    dimension; one_x: the points share one X chain, whose table has an X axis of length 1) as
    a flat index into `level_table`'s arrays: (the distinct ones, each point's among them)."""
    shape = tuple(1 if d == "X" and one_x else int(classes[d][gamma].max()) + 1 for d in DIMS)
    at = tuple(np.zeros_like(chain_at[d]) if d == "X" and one_x else
               classes[d][gamma][chain_at[d]] for d in DIMS)
    return np.unique(np.ravel_multi_index(at, shape), return_inverse=True)


def level_table(space: Space, k: int, ox: int | None, pattern: Pattern, table: tuple | None,
                 ids: np.ndarray) -> tuple:
    """Outer level k's best placement (pJ one group, index) per class of X, Y, C, M, N (X: only
    the class of chain `ox`, axis of length 1, unless None): (energy, index, filled) flat
    arrays over the class combinations (`class_ids`), priced at the combinations `ids` where
    not `filled` yet, and kept. They start zeroed (calloc: a page is written only when a
    combination on it is priced; most are never looked up); a new table is another search's
    of the same layer, level capacity and banks, arrays held, pJ per bit into the level,
    widths, lanes and X class (`space.memo.levels`: an app edit keeping the level, the role
    orders of one search), filled in place."""
    layer, hierarchy, per_dim, extent, classes, pj_bit, precision = space.unpacked()
    gamma = len(hierarchy.levels) - k
    first = {d: np.unique(classes[d][gamma], return_index=True)[1] for d in DIMS}
    if ox is not None:
        first["X"] = np.array([ox])
    shape = tuple(len(first[d]) for d in DIMS)
    if table is None:  # another search's, when everything it depends on is the same
        held, sources = variant(pattern, k)
        prec = precision
        kept = (layer, len(hierarchy.levels), k, held, capacity_banks(hierarchy.levels[k], held),
                tuple(float(pj_bit[src, ARRAYS.index(a)] + pj_bit[k, ARRAYS.index(a)])
                      for a, src in zip(held, sources, strict=True)),
                (prec.inputs, prec.weights, prec.outputs, prec.partial_sums),
                unrolled_dims(hierarchy.datapath),
                None if ox is None else int(classes["X"][gamma][ox]))
        table = space.memo.levels.get(kept)
        if table is None:
            size = math.prod(shape)
            table = space.memo.levels.put(kept, (np.zeros(size), np.zeros(size, dtype=np.int16),
                                     np.zeros(size, dtype=bool)))
    energy, at, filled = table
    todo = ids[~filled[ids]]
    if len(todo):
        flat = {}
        for d, cls in zip(DIMS, np.unravel_index(todo, shape), strict=True):
            chains = per_dim[d][first[d][cls]].astype(float)
            flat[d] = ([chains[:, g] for g in range(chains.shape[1])],
                       -(-extent[d] // chains[:, -1]) * chains[:, -1])
        energy[todo], at[todo] = best_at_level(layer, hierarchy, k, flat, pj_bit, precision,
                                               pattern)
        filled[todo] = True
    return table


def chosen_blocking(hierarchy: Hierarchy, tiles: list[dict], picks: dict[int, int],
              pattern: Pattern) -> Blocking:
    """The Blocking of the chosen tiles and placements (group 0 in GROUP0 order)."""
    levels = len(hierarchy.levels)
    on_chip = levels - 1
    orders: list[tuple[str, ...]] = [GROUP0] + [DIMS] * on_chip
    buffers: dict[str, list] = {a: [None] * on_chip for a in ARRAYS}
    for k in range(1, levels):
        held = variant(pattern, k)[0]
        prefixes, order = level_placements(held, k == on_chip,
                                           unrolled_dims(hierarchy.datapath))[picks[k]]
        gamma = levels - k
        if k == on_chip:
            orders[0], order = order
        orders[gamma] = order
        start = len(GROUP0) + len(DIMS) * (gamma - 1)
        lanes = unrolled_dims(hierarchy.datapath)
        for array, code in zip(held, prefixes, strict=True):
            prefix = moved_code(code)  # a rolling window's position: after its last loop
            if code & LANE:  # after the step's loops that follow its prefix
                prefix |= step_bits(array, lanes)
            buffers[array][k - 1] = bin(prefix - INNER).count("1") - 1 if prefix >= INNER \
                else start - 1 + bin(prefix).count("1")
    return Blocking.of(orders, tiles, buffers)


__all__ = ["best_at_level", "chosen_blocking", "class_ids", "datapath_side", "level_blocks",
           "level_table", "smallest_blocks"]
