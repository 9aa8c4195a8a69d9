"""SIMD MAC simulator: bit-exact vector execution of a tile with lane utilization, register
pressure, local-memory traffic and a VLIW issue model (seed 000 §7.5, seed 003)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.dims import SIMD_LABEL, Dim
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.simd.execute import VECTOR_DIMS, execute, tile_inputs
from workbench.simd.issue import IssueCounts, Plan, generic_counts, nve_counts
from workbench.tiling import Tile, dims
from workbench.tiling.candidates import local_accesses
from workbench.tiling.model import check_tile

__all__ = ["CYCLE_PARTS", "TRANSFER_CAUSES", "VECTOR_DIMS", "IssueCounts", "Plan", "SimResult",
           "best_plan", "counts", "mapping_report", "one_group", "plan_table", "simulate",
           "transfer_causes"]


@dataclass(frozen=True)
class SimResult:
    """One tile on the vector unit: output codes (TOn, TOc, TOy, TOx) of the tile at the
    origin, the plan, and its counts (see IssueCounts); cycles are DSP cycles per tile."""

    outputs: np.ndarray
    plan: Plan
    counts: IssueCounts

    @property
    def cycles(self) -> float:
        return self.counts.cycles

    @property
    def lane_utilization(self) -> float:
        return self.counts.lane_utilization

    @property
    def transfers(self) -> dict[str, int]:
        """Vector loads and stores by array and cause."""
        c = self.counts
        return {"input_loads": c.loads["inputs"], "weight_loads": c.loads["weights"],
                "psum_loads": c.loads["psums"], "psum_stores": c.stores["psums"],
                "spill_loads": c.loads["spills"], "spill_stores": c.stores["spills"],
                "unaligned_extra_loads": c.unaligned_loads}


def _check_plan(layer: ConvLayer, tile: Tile, plat: Platform, plan: Plan) -> None:
    if plan.vector_dim not in VECTOR_DIMS:
        raise WorkbenchError(f"vector dimension must be one of {VECTOR_DIMS}, got "
                             f"{plan.vector_dim!r}")
    if plat.simd_style == "nve" and plan.vector_dim != SIMD_LABEL[Dim.X]:
        raise WorkbenchError("the NVE vectorizes along ox only (image registers hold a row)")
    if isinstance(plan.unroll, bool) or not isinstance(plan.unroll, int) or plan.unroll < 1:
        raise WorkbenchError(f"unroll must be a positive integer, got {plan.unroll!r}")
    if plan.acc_live_steps is not None and plan.acc_live_steps < 1:
        raise WorkbenchError(f"acc_live_steps must be positive, got {plan.acc_live_steps}")


def one_group(layer: ConvLayer, tile: Tile) -> tuple[Tile, int]:
    """(one-group tile, g): a tile spanning g whole groups (TOc = g·Oc/groups) runs on the
    vector unit as g one-group tiles, one after the other; its lanes never mix groups, since
    each group reads its own input maps. Other tiles: (tile, 1)."""
    per_group = layer.Oc // layer.groups
    if tile.M <= per_group:
        return tile, 1
    return replace(tile, M=per_group), tile.M // per_group


def _times(c: IssueCounts, g: int) -> IssueCounts:
    """The counts of g one-group tiles run one after the other (per-iteration figures kept)."""
    return replace(c, mac_instructions=c.mac_instructions * g,
                   issued_lane_macs=c.issued_lane_macs * g,
                   useful_lane_macs=c.useful_lane_macs * g,
                   loads={k: v * g for k, v in c.loads.items()},
                   stores={k: v * g for k, v in c.stores.items()},
                   unaligned_loads=c.unaligned_loads * g, shuffles=c.shuffles * g,
                   spilled_vectors=c.spilled_vectors * g, groups=c.groups * g,
                   cycles=c.cycles * g, cycle_parts={k: v * g for k, v in c.cycle_parts.items()})


def _check_window(layer: ConvLayer) -> None:
    if layer.Dx != 1 or layer.Dy != 1:
        raise WorkbenchError(f"layer {layer.name!r}: the SIMD model has no dilated windows "
                             f"(dilation {layer.Dx}x{layer.Dy})")


def counts(layer: ConvLayer, tile: Tile, plat: Platform, plan: Plan) -> IssueCounts:
    """Instruction, transfer and cycle counts of one tile under a plan (a tile spanning
    groups: see `one_group`)."""
    check_tile(layer, tile)
    _check_window(layer)
    tile, g = one_group(layer, tile)
    _check_plan(layer, tile, plat, plan)
    if plat.simd_style == "nve":
        c = nve_counts(layer, tile.as_tuple(), plat)
    else:
        c = generic_counts(layer, tile.as_tuple(), plat, plan)
    return _times(c, g) if g > 1 else c


def best_plan(layer: ConvLayer, tile: Tile, plat: Platform) -> Plan:
    """The legal plan with the fewest cycles (ties: fewest vector transfers), over vector
    dimensions and unroll factors 1…16 with accumulators live through the reduction."""
    if plat.simd_style == "nve":
        return Plan(SIMD_LABEL[Dim.X])
    best = None
    for dim in VECTOR_DIMS:
        for unroll in (1, 2, 4, 8, 16):
            plan = Plan(dim, unroll)
            try:
                c = counts(layer, tile, plat, plan)
            except WorkbenchError:
                continue
            key = (c.cycles, c.vector_transfers)
            if best is None or key < best[0]:
                best = (key, plan)
    if best is None:
        raise WorkbenchError(f"layer {layer.name!r}: no vector dimension and unroll fits the "
                             f"register file of {plat.register_file_bytes} bytes")
    return best[1]


def _random_operands(layer: ConvLayer, plat: Platform, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lo_in, lo_w = 1 << (plat.in_bits - 1), 1 << (plat.w_bits - 1)
    lo_b = 1 << (min(plat.in_bits + plat.w_bits - 1, plat.acc_bits) - 1)  # fits the register
    c, h, w = layer.in_shape
    return {"q_in": rng.integers(-lo_in, lo_in, (layer.On, c, h, w)),
            "q_w": rng.integers(-lo_w, lo_w, (layer.Oc, layer.Kc, layer.Ky, layer.Kx)),
            "q_b": rng.integers(-lo_b, lo_b, layer.Oc)}


def simulate(layer: ConvLayer, tile: Tile, platform: Platform, vector_dim: str | None = None,
             unroll: int = 1, steps: int | None = None, acc_live_steps: int | None = None,
             operands: dict[str, np.ndarray] | None = None, seed: int = 0) -> SimResult:
    """Execute the tile at the origin on the platform's vector unit.

    vector_dim None picks `best_plan`. operands: integer codes "q_in" (N, C, H, W),
    "q_w" (Oc, Kc, Ky, Kx), "q_b" (Oc,); random codes of the platform's widths otherwise.
    """
    check_tile(layer, tile)
    if not layer.plain_window:
        raise WorkbenchError(f"layer {layer.name!r}: the simulator executes windows without "
                             "dilation and with equal start and end padding")
    if one_group(layer, tile)[1] > 1:
        raise WorkbenchError(f"layer {layer.name!r}: simulate one group's tile (TOc <= "
                             f"{layer.Oc // layer.groups}); a tile spanning groups runs as "
                             "one-group tiles")
    plan = best_plan(layer, tile, platform) if vector_dim is None else \
        Plan(vector_dim, unroll, steps, acc_live_steps)
    c = counts(layer, tile, platform, plan)
    ops = operands or _random_operands(layer, platform, seed)
    t = tile.as_tuple()
    window = tile_inputs(layer, np.asarray(ops["q_in"], dtype=np.int64), (0, 0, 0, 0), t)
    q_w = np.asarray(ops["q_w"], dtype=np.int64)[:t[2], :t[4]]
    q_b = np.asarray(ops["q_b"], dtype=np.int64)[:t[2]]
    outputs = execute(layer, window, q_w, q_b, t, plan.vector_dim, platform.simd_lanes,
                      platform.acc_bits, platform.overflow)
    return SimResult(outputs, plan, c)


TRANSFER_CAUSES = ("input_loads", "unaligned_loads", "weight_loads", "output_stores",
                   "redundant_psums", "spills")
CYCLE_PARTS = ("cycles_issue", "cycles_fill", "cycles_loop")


def transfer_causes(c: IssueCounts, plat: Platform, plan: Plan) -> dict[str, int]:
    """One tile's vector transfers by array and cause (TRANSFER_CAUSES), which add up to
    `c.vector_transfers`: aligned input loads, the extra loads of unaligned windows, weight
    loads, the output stores every output vector needs once, partial sums stored and reloaded
    because the accumulators did not stay live through the reduction, and spill traffic."""
    needed = c.groups * plan.unroll if plat.simd_style == "generic" else c.stores["psums"]
    parts = {"input_loads": c.loads["inputs"] - c.unaligned_loads,
             "unaligned_loads": c.unaligned_loads, "weight_loads": c.loads["weights"],
             "output_stores": needed,
             "redundant_psums": c.loads["psums"] + c.stores["psums"] - needed,
             "spills": c.loads["spills"] + c.stores["spills"]}
    if sum(parts.values()) != c.vector_transfers or min(parts.values()) < 0:
        raise AssertionError(f"transfer causes {parts} do not add up to "
                             f"{c.vector_transfers}")  # an invariant of the issue model
    return parts


def mapping_report(layer: ConvLayer, tile: Tile, platform: Platform,
                   plan: Plan | None = None) -> pd.DataFrame:
    """Seed 000 tables 7.4/7.6 for one layer: the vector transfers of the whole layer by cause
    (TRANSFER_CAUSES, adding up to `total`), seed 000's best case (`model_transfers`: register
    reuse, no redundancy; a reference, not a part of the total), lane utilization, compute
    cycles split into CYCLE_PARTS (issue at the initiation interval, pipeline fill, loop
    overhead; adding up to `compute_cycles`), the MII and the slot that sets it."""
    tile = one_group(layer, tile)[0]  # the same work, counted per one-group tile
    plan = plan or best_plan(layer, tile, platform)
    c = counts(layer, tile, platform, plan)
    extents = dims(layer)
    n_tiles = int(np.prod([-(-e // s) for e, s in zip(extents, tile.as_tuple(), strict=True)]))
    n_tiles *= layer.groups
    model = local_accesses(layer, platform.register_file_bytes, platform.elem_bytes)
    parts = {k: v * n_tiles for k, v in transfer_causes(c, platform, plan).items()}
    return pd.DataFrame([{
        "layer": layer.name, "vector_dim": plan.vector_dim, "unroll": plan.unroll, **parts,
        "total": c.vector_transfers * n_tiles,
        "model_transfers": -(-model // platform.simd_lanes),
        "lane_utilization": c.lane_utilization, "compute_cycles": c.cycles * n_tiles,
        **{f"cycles_{k}": v * n_tiles for k, v in c.cycle_parts.items()},
        "mii": c.mii, "mii_bound_by": max(c.ii_by_resource, key=c.ii_by_resource.get)}])


def plan_table(layer: ConvLayer, tile: Tile, platform: Platform,
               unrolls: tuple[int, ...] = (1, 2, 4, 8, 16)) -> pd.DataFrame:
    """Every legal (vector dimension, unroll) plan of a tile: cycles, MII, lane utilization,
    vector transfers and spilled vectors, one row each."""
    check_tile(layer, tile)
    rows = []
    dims_ = (SIMD_LABEL[Dim.X],) if platform.simd_style == "nve" else VECTOR_DIMS
    for dim in dims_:
        for unroll in unrolls if platform.simd_style == "generic" else (1,):
            try:
                c = counts(layer, tile, platform, Plan(dim, unroll))
            except WorkbenchError:
                continue
            rows.append({"vector_dim": dim, "unroll": unroll, "cycles": c.cycles, "mii": c.mii,
                         "lane_utilization": c.lane_utilization,
                         "vector_transfers": c.vector_transfers,
                         "spilled_vectors": c.spilled_vectors,
                         "unaligned_loads": c.unaligned_loads})
    if not rows:
        raise WorkbenchError(f"layer {layer.name!r}: no vector dimension and unroll fits the "
                             f"register file of {platform.register_file_bytes} bytes")
    return pd.DataFrame(rows)
