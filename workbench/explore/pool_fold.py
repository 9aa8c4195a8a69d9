"""Pooling folded into the conv layer that feeds it (seed 003 §2.1.2: a 3x3 conv and a 2x2 pool
computed together): each output tile is pooled on chip before its final write, so the conv
writes Sx·Sy times fewer final outputs and the pooling layer moves nothing.

Foldable: non-overlapping windows (Kx = Sx, Ky = Sy, no padding) that tile the conv's output
exactly, and a conv tile whose TOx, TOy are multiples of Sx, Sy (whole windows per tile). Partial
sums (schedules that write and re-read outputs between input-map steps) are not pooled.

Exact search. On aligned tiles every cost is non-decreasing in the vector (footprint, input,
weight, final-output and partial-sum accesses, DMA transfers, tiles, tile elements), so the
non-dominated aligned tiles hold the optimum; aligned sizes T = S·t with t from
`tiling.tile_candidates(O/S)` lose nothing (for equal ⌈O/T⌉ the smallest T is no worse), nor
do the TOc of `tiling.model.toc_values` (tiles spanning whole groups included; same argument).
Dilation and asymmetric padding enter only the conv's counts, which are exact for them.
The folded pair runs on one core, like every fused run.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from workbench.explore.query import OBJECTIVE_COLUMNS, ranking
from workbench.layers.spec import ConvLayer, Layer, PoolLayer
from workbench.perf import ENERGY_PARTS as ENERGY
from workbench.perf import CountVector, layer_local_accesses, price
from workbench.platforms import Platform
from workbench.tiling.dominance import nondominated
from workbench.tiling.model import (
    TILE_DIMS,
    counts_array,
    dims,
    final_outputs,
    tile_candidates,
    toc_values,
)

PARTS = ("compute", "dma_setup", "bus_stall", "prolog_epilog")


def foldable(conv: Layer, pool: Layer) -> bool:
    """The pool reads exactly the conv's output in whole, non-overlapping windows."""
    return (isinstance(conv, ConvLayer) and isinstance(pool, PoolLayer)
            and pool.Kx == pool.Sx and pool.Ky == pool.Sy and pool.Px == pool.Py == 0
            and (pool.C, pool.Iy, pool.Ix, pool.On) == (conv.Oc, conv.Oy, conv.Ox, conv.On)
            and conv.Ox % pool.Sx == 0 and conv.Oy % pool.Sy == 0)


@functools.lru_cache(maxsize=256)
def fold_rows(conv: ConvLayer, sx: int, sy: int,
              schedules: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-dominated aligned tiles over the schedules: (schedule index, tiles (N, 5), vectors
    (N, 8): footprint, in, w, final out, partial-sum out, DMA transfers, tiles, tile elems)."""
    ox, oy, _, on, kc = dims(conv)
    axes = [sx * tile_candidates(ox // sx), sy * tile_candidates(oy // sy),
            toc_values(conv), tile_candidates(on), tile_candidates(kc)]
    tiles = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 5)
    out_s, out_t, out_v = [], [], []
    final = final_outputs(conv, tiles)
    for si, schedule in enumerate(schedules):
        c = counts_array(conv, tiles, schedule)
        v = np.column_stack([c["bin"] + c["bw"] + c["bout"], c["in_accesses"],
                             c["w_accesses"], final, c["out_accesses"] - final,
                             c["dma_transfers"], c["n_tiles"], tiles.prod(axis=1)])
        keep = nondominated(v)
        out_s.append(np.full(len(keep), si))
        out_t.append(tiles[keep])
        out_v.append(v[keep])
    return np.concatenate(out_s), np.concatenate(out_t), np.concatenate(out_v)


def best_folded(conv: ConvLayer, pool: PoolLayer, platform: Platform, objective: str,
                in_kept: bool, out_kept: bool, schedules: Sequence[str],
                local_traffic: bool) -> tuple[dict, dict] | None:
    """The best single-core conv row with the pool folded in, and the pool's row (its vector
    operations on the conv's core), or None when nothing fits beside the kept maps."""
    one = platform.replace(cores=1)
    kept = (in_kept * int(np.prod(conv.in_shape)) + out_kept * int(np.prod(pool.out_shape))) \
        * conv.On * one.elem_bytes
    scale = one.elem_bytes * (2 if one.double_buffer else 1)
    sched, tiles, v = fold_rows(conv, pool.Sx, pool.Sy, tuple(schedules))
    fits = np.flatnonzero(v[:, 0] * scale + kept <= one.local_mem_bytes)
    if not len(fits):
        return None
    v, tiles, sched = v[fits], tiles[fits], sched[fits]
    final = v[:, 3] // (pool.Sx * pool.Sy)
    ext = (not in_kept) * v[:, 1] + v[:, 2] + (not out_kept) * final + v[:, 4]
    vec = CountVector.of(v[:, 0], ext, v[:, 5], v[:, 6], v[:, 7] * (conv.Kx * conv.Ky))
    n_local = layer_local_accesses(conv, one, local_traffic)
    p = price(one, vec, n_local)
    pool_cycles = pool.ops / one.simd_lanes           # vector ops on the conv's core
    pool_pj = pool_cycles * one.core_pj_per_cycle
    pool_static = pool_cycles * one.static_pj_per_cycle
    cols = {"cycles": p["cycles"] + pool_cycles,
            "energy_pj": p["energy_pj"] + (pool_pj + pool_static),
            "ext_accesses": ext, "footprint_bytes": v[:, 0]}
    cols["edp"] = cols["cycles"] * cols["energy_pj"]
    key = [cols[OBJECTIVE_COLUMNS.get(c, c)] for c in reversed(ranking(objective))]
    i = int(np.lexsort(key)[0])
    row = {"split": "oc", "cores": 1, "schedule": schedules[int(sched[i])],
           **{d: int(tiles[i, j]) for j, d in enumerate(TILE_DIMS)},
           "cycles": float(p["cycles"][i]), "energy_pj": float(p["energy_pj"][i]),
           "ext_accesses": int(ext[i]), "in_accesses": int((not in_kept) * v[i, 1]),
           "w_accesses": int(v[i, 2]), "out_accesses": int((not out_kept) * final[i] + v[i, 4]),
           "dma_transfers": int(v[i, 5]), "footprint_bytes": int(v[i, 0]) * scale + kept,
           "compute_cycles": float(p["cycles_compute"][i]), "pool_fold": (pool.Sx, pool.Sy),
           "shares": ((1, schedules[int(sched[i])], tuple(int(x) for x in tiles[i])),)}
    row |= {f"cycles_{part}": float(p[f"cycles_{part}"][i]) for part in PARTS}
    row |= {f"energy_{part}_pj": float(p[f"energy_{part}_pj"][i]) for part in ENERGY}
    pooled = {"split": "folded", "cores": 1, "schedule": "folded", "folded": True,
              "cycles": pool_cycles, "energy_pj": pool_pj + pool_static, "ext_accesses": 0,
              "dma_transfers": 0, "footprint_bytes": 0, "compute_cycles": pool_cycles}
    pooled |= {f"cycles_{part}": 0.0 for part in PARTS} | {"cycles_compute": pool_cycles}
    pooled |= {f"energy_{part}_pj": 0.0 for part in ENERGY} | {"energy_compute_pj": pool_pj,
                                                                "energy_static_pj": pool_static}
    return row, pooled
