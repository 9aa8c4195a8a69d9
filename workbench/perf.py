"""DMA/bus performance and energy model of seed 000 §5.1–5.4 and §7.6.3, vectorized over tiles.

Per layer, in DSP cycles (bus counted in elements, see DESIGN.md):
CC_tile = TOx·TOy·TOc·TOn·Kx·Ky·TKc / MACs-per-cycle, CC_dsp = CC_tile + (N_dma/Ntiles)·setup,
CC_bus = (N_ext + N_local)/Ntiles / bus, CC_prolog = (Bin+Bw)/bus + 2·setup + CC_tile,
CC_epilog = Bout/bus + setup, CC_layer = CC_prolog + (Ntiles−1)·max(CC_dsp, CC_bus) + CC_epilog.
Without double buffering transfers cannot overlap compute: the max becomes a sum.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.tiling.model import SCHEDULES, Counts, Tile, check_tile, counts_array, gen_tiles

CYCLE_PARTS = ("compute", "dma_setup", "bus_stall", "prolog_epilog")
ENERGY_PARTS = ("compute", "dma_setup", "local", "external")


@functools.lru_cache(maxsize=4096)
def local_accesses(layer: ConvLayer, register_file_bytes: int, elem_bytes: int) -> int:
    """Best-case DSP↔local-memory traffic (elements): the access functions one level down,
    with the register file as the small memory, minimized over schedules and register tiles
    (seed 000 §5.4). Exact: searched over the reduced tile space."""
    limit = register_file_bytes // elem_bytes
    best = None
    for schedule in SCHEDULES:
        for tiles in gen_tiles(layer, max_footprint_elems=limit):
            c = counts_array(layer, tiles, schedule)
            low = int((c["in_accesses"] + c["w_accesses"] + c["out_accesses"]).min())
            best = low if best is None else min(best, low)
    if best is None:  # not even a 1x1x1x1x1 tile fits the register file: every operand streams
        c = counts_array(layer, np.ones((1, 5), dtype=np.int64), "intra")
        best = int(c["in_accesses"][0] + c["w_accesses"][0] + c["out_accesses"][0])
    return best


def estimate_array(layer: ConvLayer, tiles: np.ndarray, schedule: str, platform: Platform,
                   local_traffic: bool = True, counted: dict | None = None,
                   tile_cycles: float | None = None, n_local: float | None = None) -> dict:
    """Cycles, throughput, CTC, utilization and energy for many tiles (arrays keyed by name).

    tile_cycles / n_local replace CC_tile and the best-case local traffic (elements per layer)
    when a SIMD simulation supplies them."""
    tiles = np.asarray(tiles, dtype=np.int64).reshape(-1, 5)
    c = counted if counted is not None else counts_array(layer, tiles, schedule)
    p = platform
    n_tiles = c["n_tiles"].astype(np.float64)
    n_ext = (c["in_accesses"] + c["w_accesses"] + c["out_accesses"]).astype(np.float64)
    if n_local is None:
        n_local = float(local_accesses(layer, p.register_file_bytes, p.elem_bytes)) \
            if local_traffic else 0.0
    cc_tile = tiles.prod(axis=1) * (layer.Kx * layer.Ky) / p.macs_per_cycle \
        if tile_cycles is None else np.full(len(tiles), float(tile_cycles))
    cc_dsp = cc_tile + c["dma_transfers"] / n_tiles * p.dma_setup_cycles
    cc_bus = (n_ext + n_local) / n_tiles / p.bus_elems_per_cycle
    transfer_in = (c["bin"] + c["bw"]) / p.bus_elems_per_cycle
    transfer_out = c["bout"] / p.bus_elems_per_cycle
    steady = np.maximum(cc_dsp, cc_bus) if p.double_buffer else cc_dsp + cc_bus
    cycles = (transfer_in + 2 * p.dma_setup_cycles + cc_tile + (n_tiles - 1) * steady
              + transfer_out + p.dma_setup_cycles)
    compute = n_tiles * cc_tile
    dma_setup = (3 + (n_tiles - 1) * c["dma_transfers"] / n_tiles) * p.dma_setup_cycles
    ops = 2.0 * layer.macs
    local_units = np.ceil(n_local * p.elem_bytes / p.local_access_bytes)
    ext_units = np.ceil(n_ext * p.elem_bytes / p.ext_access_bytes)
    out = {
        "cycles": cycles,
        "cycles_compute": compute,
        "cycles_dma_setup": dma_setup,
        "cycles_bus_stall": (n_tiles - 1) * (steady - cc_dsp),
        "cycles_prolog_epilog": transfer_in + transfer_out,
        "throughput_gops": p.clock_mhz * ops / cycles * 1e-3,
        "ctc": ops / (n_ext * p.elem_bytes),
        "utilization": (layer.macs / p.macs_per_cycle) / cycles,
        "local_accesses": np.full_like(cycles, n_local),
        "energy_compute_pj": compute * p.core_pj_per_cycle,
        "energy_dma_setup_pj": dma_setup * p.core_pj_per_cycle,
        "energy_local_pj": np.full_like(cycles, local_units * p.local_access_pj),
        "energy_external_pj": ext_units * p.ext_access_pj,
    }
    out["energy_pj"] = sum(out[f"energy_{part}_pj"] for part in ENERGY_PARTS)
    return out


@dataclass(frozen=True, slots=True)
class Estimate:
    """Performance of one layer, tile and schedule: cycles (DSP cycles), throughput (GOps/s),
    CTC (ops/byte), utilization (0..1), and cycle and energy (pJ) breakdowns."""

    cycles: float
    throughput_gops: float
    ctc: float
    utilization: float
    breakdown: dict[str, float]
    energy_pj: dict[str, float]
    counts: Counts
    local_accesses: int

    @property
    def energy_total_pj(self) -> float:
        return sum(self.energy_pj.values())


def estimate(layer: ConvLayer, tile: Tile, schedule: str, platform: Platform,
             local_traffic: bool = True, compute: str = "model") -> Estimate:
    """The performance and energy model for one tile (see the module docstring).

    compute="simd": CC_tile is the SIMD simulator's cycles for the tile (its best plan) and
    N_local its vector transfers (× lanes elements) over all tiles, as seed 000 combined
    compiler schedules with the memory model."""
    check_tile(layer, tile)
    if compute not in ("model", "simd"):
        raise WorkbenchError(f"compute must be 'model' or 'simd', got {compute!r}")
    tiles = np.array([tile.as_tuple()], dtype=np.int64)
    c = counts_array(layer, tiles, schedule)
    tile_cycles = n_local = None
    if compute == "simd":
        from workbench import simd

        sim = simd.counts(layer, tile, platform, simd.best_plan(layer, tile, platform))
        tile_cycles = sim.cycles
        n_local = float(sim.vector_transfers * platform.simd_lanes * c["n_tiles"][0]) \
            if local_traffic else 0.0
    r = estimate_array(layer, tiles, schedule, platform, local_traffic, counted=c,
                       tile_cycles=tile_cycles, n_local=n_local)
    return Estimate(
        cycles=float(r["cycles"][0]), throughput_gops=float(r["throughput_gops"][0]),
        ctc=float(r["ctc"][0]), utilization=float(r["utilization"][0]),
        breakdown={part: float(r[f"cycles_{part}"][0]) for part in CYCLE_PARTS},
        energy_pj={part: float(r[f"energy_{part}_pj"][0]) for part in ENERGY_PARTS},
        counts=Counts(**{key: int(value[0]) for key, value in c.items()}),
        local_accesses=int(r["local_accesses"][0]))
