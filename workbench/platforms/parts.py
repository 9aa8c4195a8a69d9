"""The parts a platform is made of, declared once: memory (levels DRAM first), datapath, DMA,
cluster (cores) and energy. Each field carries its type, unit and physical range here, and
these models are at once the platform file's schema and the objects the engine reads (a
`Platform`, `workbench.platforms.platform`, is composed of them).

Ranges are physical, not only "positive": a clock from 1 kHz to 100 GHz, capacities up to
2^48 B, at most 1 µJ per access or MAC, at most 10^9 elements per cycle, so that no value a
file can hold makes a count overflow or a total NaN. Every rule is one line naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator
from pydantic_core import PydanticCustomError

from workbench.schemas.base import StrictModel, Text, is_int, one_of
from workbench.schemas.capacity import scaled_parts  # noqa: F401 (the platform's resizing)
from workbench.schemas.memory import (  # noqa: F401 (one level model for platforms and files)
    DATAPATH_DIMS,
    MAX_BYTES,
    MAX_PJ,
    MAX_RATE,
    HierarchyDoc,
    MemoryLevel,
    _as_tuple,
    capacity_total,
    integer,
    level_rules,
    number,
    optional,
)

OVERFLOW_MODES = ("wrap", "saturate")
SIMD_STYLES = ("generic", "nve")


def _unroll(value: Any) -> tuple[tuple[str, int], ...] | None:
    """Lanes per dimension, as ((dimension, lanes), ...) in the file's order, or None."""
    if value is None:
        return None
    items = value.items() if isinstance(value, dict) else value
    try:
        pairs = tuple((d, n) for d, n in items)
    except (TypeError, ValueError):
        pairs = ()
    if not isinstance(value, dict | tuple) or len({d for d, _ in pairs}) != len(pairs) or \
            not all(d in DATAPATH_DIMS and is_int(n) and 1 <= n <= 65536 for d, n in pairs):
        raise PydanticCustomError("unroll_rule", "must map dimensions of X, Y, C, M, N to lanes "
                                  "(whole numbers 1..65,536)")
    return pairs


Bits = Annotated[int, integer(1, 64, "bits")]
Count = Annotated[int, integer(1, 65536, "count")]
Latency = Annotated[int, integer(1, 10_000, "cycles")]


class Memory(StrictModel):
    """The memory hierarchy, DRAM first; levels[1], the outermost on-chip level, is the local
    memory of the single-level model. `name` names the hierarchy (default: the platform's)."""

    levels: Annotated[tuple[MemoryLevel, ...], BeforeValidator(_as_tuple), Field(min_length=2)]
    elem_bytes: Annotated[int, integer(1, 64, "bytes per element")]
    double_buffer: bool = True
    name: Text | None = None


class Datapath(StrictModel):
    """The MAC array and its SIMD issue: MACs per cycle (the product of `unroll`, lanes per
    dimension, when given), operand and accumulator widths, overflow, vector registers and
    the slots, ports and latencies of the SIMD model (seed 003)."""

    macs_per_cycle: Annotated[float, number(1e-3, MAX_RATE, "MACs per cycle")]
    register_file_bytes: Annotated[int, integer(1, MAX_BYTES, "bytes")]
    unroll: Annotated[Any, PlainValidator(_unroll)] = None
    simd_lanes: Count = 1
    acc_bits: Bits = 32
    overflow: Annotated[str, one_of(OVERFLOW_MODES)] = "wrap"
    in_bits: Bits = 16
    w_bits: Bits = 16
    simd_style: Annotated[str, one_of(SIMD_STYLES)] = "generic"
    vector_load_bytes: Annotated[int, integer(0, 1 << 20, "bytes")] = 0
    mac_slots: Count = 1
    load_ports: Count = 1
    store_ports: Count = 1
    alu_slots: Count = 1
    load_latency: Latency = 2
    mac_latency: Latency = 2
    loop_overhead_cycles: Annotated[int, integer(0, 10**6, "cycles")] = 2


class Dma(StrictModel):
    """The DMA engine: cycles to set up one transfer, setups in flight at once (shared by the
    cores), and whether one fetch is delivered to every core that needs it."""

    setup_cycles: Annotated[float, number(0, 1e9, "cycles")] = 0.0
    channels: Count = 1
    broadcast: bool = False


class Cluster(StrictModel):
    """The cores, each with its own copy of the on-chip levels, on one shared bus (DRAM's
    bandwidth); static (leakage, clock-tree) power per core as pJ per cycle, paid for every
    cycle a core runs its share, stalled or not (a core whose share is done, or that runs no
    share, is power-gated)."""

    cores: Count = 1
    static_pj_per_cycle: Annotated[float, number(0, MAX_PJ, "pJ per cycle per core")] = 0.0


class Energy(StrictModel):
    """Compute energy: pJ per core cycle, or pJ per MAC (one implies the other through
    macs_per_cycle; given both, they must agree)."""

    core_pj_per_cycle: Annotated[float | None,
                                 optional(number(0, MAX_PJ, "pJ per cycle"))] = None
    mac_pj: Annotated[float | None, optional(number(0, MAX_PJ, "pJ per MAC"))] = None


