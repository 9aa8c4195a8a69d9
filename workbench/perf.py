"""DMA/bus performance and energy model of seed 000 §5.1–5.4 and §7.6.3, vectorized over tiles.

Per layer, in DSP cycles (bus counted in elements, see DESIGN.md):
CC_tile = TOx·TOy·TOc·TOn·Kx·Ky·TKc / MACs-per-cycle, CC_dsp = CC_tile + (N_dma/Ntiles)·setup,
CC_bus = (N_ext + N_local)/Ntiles / bus, CC_prolog = (Bin+Bw)/bus + 2·setup + CC_tile,
CC_epilog = Bout/bus + setup, CC_layer = CC_prolog + (Ntiles−1)·max(CC_dsp, CC_bus) + CC_epilog.
Without double buffering transfers cannot overlap compute: the max becomes a sum.

On k cores (`Contention`) every core runs this pipeline on its share while the others run
theirs: the shared bus carries k cores' private traffic for each tile (a broadcast array once
per group of cores running the same program) and the prolog's and epilog's k buffers, and the
DMA setups of k cores queue on the platform's DMA channels (each costs setup·max(1, k/channels)).
One core is today's model exactly (every factor is 1).

Static energy: every core pays the platform's static_pj_per_cycle for each cycle of its own
pipeline (CC_layer of its share), stalled or not; a core whose share is done is power-gated.

Energy per local access is the platform's `effective_local_access_pj`: its fixed
`local_access_pj`, or with `size_aware_energy` the seed 001 table 3 energy of a memory of
`local_mem_bytes` at the access width. Callers that price rows for several memory sizes at once
price them on `sized_platforms(platform, sizes)`, one platform per size when energy depends on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.tiling.candidates import local_accesses
from workbench.tiling.model import Counts, Tile, check_tile, counts_array, tile_array

CYCLE_PARTS = ("compute", "dma_setup", "bus_stall", "prolog_epilog")
ENERGY_PARTS = ("compute", "dma_setup", "local", "external", "static")


@dataclass(frozen=True, eq=False)
class CountVector:
    """The count vector of `tiling.candidates` as float64 arrays, with the platform-free
    terms of `price` precomputed (reused when the same rows are priced on many platforms)."""

    footprint: np.ndarray    # Bin+Bw+Bout, elements
    ext: np.ndarray          # external accesses, elements
    n: np.ndarray            # tiles
    rho: np.ndarray          # 1 − 1/Ntiles
    rho_dma: np.ndarray      # ρ·N_dma
    tile_macs: np.ndarray    # MACs per tile
    shared: np.ndarray       # the part of `ext` every core of a split reads (broadcastable)

    @classmethod
    def of(cls, footprint_elems: np.ndarray, ext_accesses: np.ndarray,
           dma_transfers: np.ndarray, n_tiles: np.ndarray, tile_macs: np.ndarray,
           shared_accesses: np.ndarray | None = None) -> CountVector:
        n = np.asarray(n_tiles, dtype=np.float64)
        rho = 1.0 - 1.0 / n
        shared = np.zeros_like(n) if shared_accesses is None \
            else np.asarray(shared_accesses, dtype=np.float64)
        return cls(np.asarray(footprint_elems, dtype=np.float64),
                   np.asarray(ext_accesses, dtype=np.float64), n, rho,
                   rho * np.asarray(dma_transfers, dtype=np.float64),
                   np.asarray(tile_macs, dtype=np.float64), shared)


@dataclass(frozen=True, slots=True)
class Contention:
    """How a core's pipeline shares the chip: `cores` cores run at once; the shared array's
    traffic crosses the bus `shared_copies` times per tile step (cores, or the number of
    broadcast groups); DMA setups queue on `dma_channels` channels."""

    cores: int = 1
    shared_copies: int = 1
    dma_channels: int = 1

    @property
    def factors(self) -> tuple[float, float, float]:
        """(private traffic copies, shared traffic copies, DMA setup queueing factor)."""
        return (float(self.cores), float(self.shared_copies),
                max(1.0, self.cores / self.dma_channels))


SINGLE = Contention()


@numba.njit(cache=True, nogil=True)
def _totals(v, local, layer_of, cc_const, pf, flags, out):
    """Cycles and energy (of one core) of every row in one pass, no temporaries; the
    expressions and their order are those of `price`'s parts. v: the `CountVector` arrays
    (footprint, ext, n, rho, rho_dma, tile_macs, shared); pf: macs/cycle, setup, bus, elem
    bytes, local and external access bytes, pJ per core cycle, per local and per external
    access, static pJ per cycle, then the `Contention` factors; flags: (double buffered,
    energy wanted); out: (cycles, energy_pj), filled."""
    v_footprint, v_ext, v_n, v_rho, v_rho_dma, v_tile_macs, v_shared = v
    double, energy = flags
    cycles, energy_pj = out
    (macs, setup_1, bus_rate, eb, local_w, ext_w, pj_core, pj_local, pj_ext, pj_static,
     k_priv, k_shared, queue) = pf
    setup = setup_1 * queue
    three_setup = 3.0 * setup
    for i in range(len(v_n)):
        cc_tile = v_tile_macs[i] / macs if np.isnan(cc_const[0]) else \
            cc_const[i if len(cc_const) > 1 else 0]
        dma_rest = v_rho_dma[i] * setup
        dsp = (v_n[i] - 1.0) * cc_tile + dma_rest
        n_local = local[layer_of[i]]
        traffic = k_priv * (v_ext[i] - v_shared[i]) + k_shared * v_shared[i]
        bus = v_rho[i] * (traffic + n_local) / bus_rate
        steady = max(dsp, bus) if double else dsp + bus
        cycles[i] = k_priv * v_footprint[i] / bus_rate + three_setup + cc_tile + steady
        if energy:
            energy_pj[i] = ((v_n[i] * cc_tile) * pj_core + (three_setup + dma_rest) * pj_core
                            + np.ceil(n_local * eb / local_w) * pj_local
                            + np.ceil(v_ext[i] * eb / ext_w) * pj_ext
                            + cycles[i] * pj_static)


def price(platform: Platform, v: CountVector, n_local: float | np.ndarray,
          tile_cycles: float | np.ndarray | None = None, parts: bool = True, energy: bool = True,
          layer_of: np.ndarray | None = None, contention: Contention = SINGLE) -> dict:
    """Cycles and energy (pJ) of counted rows; by part unless parts=False (then only
    "cycles" and, if energy, "energy_pj"). n_local: local-memory accesses per layer
    (elements), one number, or one per layer with `layer_of` giving each row's layer.
    Under `contention` the rows are one core's share and the energy is that core's.

    Written so that every result is non-decreasing in each count, in floating point too:
    only sums, products and maxima of non-negative non-decreasing terms, with the
    (Ntiles−1)/Ntiles factor computed as ρ = 1 − 1/Ntiles. CC_layer of the module docstring
    is rearranged exactly: (Ntiles−1)·max(CC_dsp, CC_bus) = max((Ntiles−1)·CC_tile +
    ρ·N_dma·setup, ρ·(N_ext+N_local)/bus), and (Bin+Bw)/bus + Bout/bus = footprint/bus.
    The totals come from one compiled pass (`_totals`); the parts repeat its expressions."""
    p = platform
    rows = len(v.n)
    local = np.atleast_1d(np.asarray(n_local, dtype=np.float64))
    if layer_of is None:
        layer_of = np.zeros(rows, dtype=np.int64) if local.size == 1 else np.arange(rows)
    pf = np.array([p.macs_per_cycle, p.dma_setup_cycles, p.bus_elems_per_cycle, p.elem_bytes,
                   p.local_access_bytes, p.ext_access_bytes, p.core_pj_per_cycle,
                   p.effective_local_access_pj, p.ext_access_pj, p.static_pj_per_cycle,
                   *contention.factors],
                  dtype=np.float64)
    out = {"cycles": np.empty(rows), "energy_pj": np.empty(rows)}
    want_energy = energy or parts
    _totals((v.footprint, v.ext, v.n, v.rho, v.rho_dma, v.tile_macs, v.shared), local,
            layer_of, _tile_cycles(tile_cycles, rows), pf, (bool(p.double_buffer), want_energy),
            (out["cycles"], out["energy_pj"]))
    if not want_energy:
        del out["energy_pj"]
    return out | (_parts(p, v, local[layer_of], tile_cycles, contention) if parts else {})


def sized_platforms(platform: Platform,
                    sizes: Sequence[float]) -> list[tuple[Platform, list[float]]]:
    """The platforms that price rows under each local-memory size (bytes), with their sizes:
    [(platform, all sizes)] when the price does not depend on the size, else (with
    `size_aware_energy`) one (platform with local_mem_bytes = ⌈size⌉, [size]) per size."""
    if not platform.size_aware_energy:
        return [(platform, list(sizes))]
    return [(platform.replace(local_mem_bytes=math.ceil(size)), [size]) for size in sizes]


def _tile_cycles(tile_cycles: float | np.ndarray | None, rows: int) -> np.ndarray:
    """CC_tile given by the caller: one number, or one per row ([nan]: from the MACs)."""
    if tile_cycles is None:
        return np.array([np.nan])
    cc = np.atleast_1d(np.asarray(tile_cycles, dtype=np.float64))
    if cc.size not in (1, rows) or np.isnan(cc).any():
        raise ValueError(f"tile_cycles: one number or one per row ({rows}), no NaN")
    return cc


def _parts(p: Platform, v: CountVector, n_local: np.ndarray,
           tile_cycles: float | np.ndarray | None,
           contention: Contention = SINGLE) -> dict[str, np.ndarray]:
    """The cycle and energy breakdowns of `price` (same expressions as `_totals`)."""
    k_priv, k_shared, queue = contention.factors
    setup = p.dma_setup_cycles * queue
    cc_tile = v.tile_macs / p.macs_per_cycle if tile_cycles is None \
        else np.broadcast_to(_tile_cycles(tile_cycles, len(v.n)), v.n.shape).copy()
    dma_rest = v.rho_dma * setup
    dsp = (v.n - 1.0) * cc_tile + dma_rest
    traffic = k_priv * (v.ext - v.shared) + k_shared * v.shared
    bus = v.rho * (traffic + n_local) / p.bus_elems_per_cycle
    steady = np.maximum(dsp, bus) if p.double_buffer else dsp + bus
    compute = v.n * cc_tile
    dma_setup = 3.0 * setup + dma_rest
    cycles = k_priv * v.footprint / p.bus_elems_per_cycle + 3.0 * setup + cc_tile + steady
    return {"cycles_compute": compute, "cycles_dma_setup": dma_setup,
            "cycles_bus_stall": steady - dsp,
            "cycles_prolog_epilog": k_priv * v.footprint / p.bus_elems_per_cycle,
            "local_accesses": n_local.copy(),
            "energy_compute_pj": compute * p.core_pj_per_cycle,
            "energy_dma_setup_pj": dma_setup * p.core_pj_per_cycle,
            "energy_local_pj": np.ceil(n_local * p.elem_bytes / p.local_access_bytes)
            * p.effective_local_access_pj,
            "energy_external_pj": np.ceil(v.ext * p.elem_bytes / p.ext_access_bytes)
            * p.ext_access_pj,
            "energy_static_pj": cycles * p.static_pj_per_cycle}


def layer_local_accesses(layer: ConvLayer, platform: Platform, local_traffic: bool) -> float:
    """N_local of the model (elements per layer), or 0 when local traffic is not counted."""
    return float(local_accesses(layer, platform.register_file_bytes, platform.elem_bytes)) \
        if local_traffic else 0.0


def rates(macs: float | np.ndarray, platform: Platform, cycles: np.ndarray,
          ext_accesses: np.ndarray) -> dict:
    """Throughput (GOps/s), CTC (ops/byte) and utilization (0..1) of priced rows of layers
    with `macs` MACs (1 MAC = 2 ops)."""
    ops = 2.0 * np.asarray(macs, dtype=np.float64)
    return {"throughput_gops": platform.clock_mhz * ops / cycles * 1e-3,
            "ctc": ops / (np.asarray(ext_accesses, dtype=np.float64) * platform.elem_bytes),
            "utilization": (macs / platform.macs_per_cycle) / cycles}


def estimate_array(layer: ConvLayer, tiles: np.ndarray, schedule: str, platform: Platform,
                   local_traffic: bool = True, counted: dict | None = None,
                   tile_cycles: float | None = None, n_local: float | None = None) -> dict:
    """Cycles, throughput, CTC, utilization and energy for many tiles (arrays keyed by name).

    tile_cycles / n_local replace CC_tile and the best-case local traffic (elements per layer)
    when a SIMD simulation supplies them."""
    tiles = tile_array(layer, tiles)  # Python integers past int64 (tiling.model)
    c = counted if counted is not None else counts_array(layer, tiles, schedule)
    if n_local is None:
        n_local = layer_local_accesses(layer, platform, local_traffic)
    ext = c["in_accesses"] + c["w_accesses"] + c["out_accesses"]
    v = CountVector.of(c["bin"] + c["bw"] + c["bout"], ext, c["dma_transfers"], c["n_tiles"],
                       tiles.prod(axis=1) * (layer.Kx * layer.Ky))
    out = price(platform, v, n_local, tile_cycles)
    return out | rates(layer.macs, platform, out["cycles"], ext)


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
