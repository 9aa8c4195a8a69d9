"""Instruction counts and cycles of one tile on a vector unit (VLIW issue model).

Generic style (IDSP-like): the tile's outputs are cut into vectors of `lanes` along the vector
dimension; `unroll` output vectors share one inner-loop body and keep their accumulators in
registers; the body covers `steps` reduction steps (default the Kx·Ky window, fully unrolled as
in seed 000's mappings). Per body: U·steps MACs, operand loads (broadcast scalars or vectors,
unaligned ones cost two loads and a shuffle), partial-sum loads/stores when the accumulators
are spilled every `acc_live_steps` reduction steps (1 = reloaded every iteration, as the seed's
compiler did; None = kept live through the whole reduction), and spill traffic when live
vectors exceed the register file. II = max(resource MII over slots, recurrence MII =
steps·mac_latency); cycles per group = iterations·II + pipeline depth + loop overhead.

NVE style (seed 003 §3.1, §4.2): one output vector per body with bias set and MACs in the VMAC
field, one weight-register op per VMAC op (a 4-coefficient register: sets and shifts), image
register set / set-shift / shift per tap, port A reads for weight sets and ri[0-7] and the
pixel words written into the local buffer (the input rows each output row adds), port B reads
for ri[8-15] and ri[16-22], activation on half a vector per operation; MII is the busiest
field (seed 003 §5.2). `simd.codegen` builds and runs the programs these counts describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from workbench.errors import WorkbenchError
from workbench.layers.dims import SEED000_ORDER, SIMD_DIM, SIMD_LABEL, Dim
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform

OUTPUT_DIMS = tuple(SIMD_LABEL[d] for d in SEED000_ORDER if d != Dim.C)  # ox oy oc on


@dataclass(frozen=True, slots=True)
class Plan:
    """How a tile is mapped: vectorized dimension, live output vectors, body size."""

    vector_dim: str
    unroll: int = 1
    steps: int | None = None           # reduction steps per loop body (None: Kx·Ky)
    acc_live_steps: int | None = None  # None: accumulators live through the whole reduction


@dataclass(frozen=True)
class IssueCounts:
    """Counts for one tile (vector instructions unless the name says lane-MACs or cycles)."""

    mac_instructions: int
    issued_lane_macs: int
    useful_lane_macs: int
    loads: dict[str, int]            # by array: inputs, weights, psums, spills
    stores: dict[str, int]           # by array: psums (final and partial), spills
    unaligned_loads: int
    shuffles: int
    spilled_vectors: int
    ii_by_resource: dict[str, float]
    mii: float
    iterations: int
    groups: int
    cycles: float
    extra: dict[str, float] = field(default_factory=dict)
    # cycles by part, adding up to `cycles`: "issue" (iterations at the initiation interval),
    # "fill" (pipeline depth once per loop), "loop" (loop overhead once per loop)
    cycle_parts: dict[str, float] = field(default_factory=dict)

    @property
    def lane_utilization(self) -> float:
        return self.useful_lane_macs / self.issued_lane_macs

    @property
    def vector_transfers(self) -> int:
        return sum(self.loads.values()) + sum(self.stores.values())


def _extent(tile: tuple[int, ...], dim: str) -> int:
    return tile[SEED000_ORDER.index(SIMD_DIM[dim])]


def generic_counts(layer: ConvLayer, tile: tuple[int, ...], plat: Platform,
                   plan: Plan) -> IssueCounts:
    lanes, v = plat.simd_lanes, plan.vector_dim
    d = SIMD_DIM[v]
    tox, toy, toc, ton, tkc = tile
    window = layer.Kx * layer.Ky
    positions = tox * toy * toc * ton
    useful = positions * window * tkc
    steps = plan.steps or window
    if d == Dim.C:
        vectors = positions                       # one output per accumulator vector
        reduction = window * math.ceil(tkc / lanes)
    else:
        per_dim = math.ceil(_extent(tile, v) / lanes)
        vectors = per_dim * positions // _extent(tile, v)
        reduction = window * tkc
    if reduction % steps:
        raise WorkbenchError(f"layer {layer.name!r}: reduction of {reduction} steps is not a "
                             f"multiple of the loop body's {steps} steps")
    if plan.unroll > vectors:
        raise WorkbenchError(f"layer {layer.name!r}: unroll {plan.unroll} exceeds the tile's "
                             f"{vectors} output vectors along {v}")
    u, groups, iterations = plan.unroll, math.ceil(vectors / plan.unroll), reduction // steps
    mac_instr = vectors * reduction
    # operand loads per body
    if d in (Dim.X, Dim.Y, Dim.N):
        input_loads, weight_loads = u * steps, steps       # broadcast weight shared
    elif d == Dim.M:
        input_loads, weight_loads = u * steps, steps       # broadcast pixel per accumulator
    else:
        input_loads, weight_loads = u * steps, u * steps
    stride = {Dim.X: layer.Sx, Dim.Y: layer.Sy}.get(d, 1)
    if d in (Dim.X, Dim.Y):
        taps = layer.Kx if d == Dim.X else layer.Ky
        misaligned = [k for k in range(taps) if (k % lanes) != 0] if stride == 1 else \
            list(range(taps))
        unaligned = input_loads * len(misaligned) // taps
    else:
        unaligned = 0
    shuffles = unaligned * (stride if stride > 1 else 1)
    # partial sums
    live = plan.acc_live_steps
    spans = 1 if live is None else math.ceil(reduction / live)
    psum_loads, psum_stores = u * (spans - 1), u * spans
    # register pressure (bytes): accumulators at accumulator width, operands double-buffered
    vec_bytes = lanes * plat.elem_bytes
    acc_bytes = lanes * math.ceil(plat.acc_bits / 8)
    need = u * acc_bytes + 2 * (u + 1) * vec_bytes
    spilled = max(0, math.ceil((need - plat.register_file_bytes) / vec_bytes))
    if spilled > u + 1 + u:
        raise WorkbenchError(f"layer {layer.name!r}: unroll {u} needs {need} bytes of "
                             f"registers, the register file holds {plat.register_file_bytes}")
    spill_traffic = spilled * steps  # a spilled operand is stored and reloaded every step
    loads_body = input_loads + unaligned + weight_loads + spill_traffic
    ii = {"mac": u * steps / plat.mac_slots,
          "load": (loads_body + psum_loads / iterations) / plat.load_ports,
          "store": (spill_traffic + psum_stores / iterations) / plat.store_ports,
          "alu": (shuffles + (u * math.log2(lanes) / iterations if d == Dim.C else 0))
          / plat.alu_slots}
    ii["recurrence"] = steps * plat.mac_latency  # each accumulator's MACs depend in a chain
    mii = max(ii.values())
    depth = plat.load_latency + plat.mac_latency + 1
    parts = {"issue": float(groups * iterations * math.ceil(mii)), "fill": float(groups * depth),
             "loop": float(groups * plat.loop_overhead_cycles)}
    cycles = sum(parts.values())
    return IssueCounts(
        mac_instructions=mac_instr, issued_lane_macs=mac_instr * lanes, useful_lane_macs=useful,
        loads={"inputs": groups * iterations * (input_loads + unaligned),
               "weights": groups * iterations * weight_loads,
               "psums": groups * psum_loads, "spills": groups * iterations * spill_traffic},
        stores={"psums": groups * psum_stores, "spills": groups * iterations * spill_traffic},
        unaligned_loads=groups * iterations * unaligned, shuffles=groups * iterations * shuffles,
        spilled_vectors=spilled, ii_by_resource=ii, mii=mii, iterations=iterations,
        groups=groups, cycles=float(cycles), cycle_parts=parts)


def nve_counts(layer: ConvLayer, tile: tuple[int, ...], plat: Platform) -> IssueCounts:
    """Seed 003's NVE: output vectors along ox, one per loop body (see the module docstring)."""
    lanes = plat.simd_lanes
    tox, toy, toc, ton, tkc = tile
    taps = layer.Kx * layer.Ky * tkc
    rows = layer.Ky * tkc
    vectors = math.ceil(tox / lanes) * toy * toc * ton
    vmac = taps + 1                                    # set bias, then one MAC per tap
    wreg = taps + 1                                    # bias and every weight pass the register
    wsets = math.ceil(wreg / 4)                        # 4 coefficients per set, shifts between
    image_sets = rows * layer.Sx                       # subsampling widens the vector to load
    set_shifts = rows if layer.Kx > 1 else 0           # a 1x1 kernel never shifts
    ireg = image_sets + set_shifts + rows * max(layer.Kx - 2, 0)   # set, set-shift, shifts
    # pixel words written per body: the input rows new to this output row (min(Ky, Sy) per
    # map), each Sx two-word vectors plus a word of extra pixels when the kernel is wider
    writes = min(layer.Ky, layer.Sy) * tkc * (2 * layer.Sx + (1 if layer.Kx > 1 else 0))
    mema = image_sets + wsets + writes                 # ri[0-7], weight sets, pixel writes
    memb = image_sets + set_shifts                     # ri[8-15] and the set-shift's ri[16-22]
    act = math.ceil(lanes / 8)
    ii = {"VMAC": vmac, "WREG": wreg, "IREG": ireg, "MEMA": mema, "MEMB": memb, "ACT": act}
    mii = max(ii.values())
    depth = plat.load_latency + 1 + plat.mac_latency + act
    useful = tox * toy * toc * ton * taps
    return IssueCounts(
        mac_instructions=vectors * taps, issued_lane_macs=vectors * taps * lanes,
        useful_lane_macs=useful,
        loads={"inputs": vectors * (image_sets + rows), "weights": vectors * wsets,
               "psums": 0, "spills": 0},
        stores={"psums": vectors, "spills": 0}, unaligned_loads=0, shuffles=0,
        spilled_vectors=0, ii_by_resource=ii, mii=float(mii), iterations=1, groups=vectors,
        cycles=float(vectors * mii + depth),
        cycle_parts={"issue": float(vectors * mii), "fill": float(depth), "loop": 0.0},
        extra={"macs_per_vmac": taps * min(lanes, tox) / vmac, "wreg_sets": wsets,
               "wreg_shifts": wreg - wsets, "buffer_writes": writes})
