"""The parts a platform is made of, declared once: memory (levels DRAM first), datapath, DMA,
cluster (cores) and energy. Each field carries its type, unit and physical range here, and
these models are at once the platform file's schema and the objects the engine reads (a
`Platform`, `workbench.platforms.platform`, is composed of them).

Ranges are physical, not only "positive": a clock from 1 kHz to 100 GHz, capacities up to
2^48 B, at most 1 µJ per access or MAC, at most 10^9 elements per cycle, so that no value a
file can hold makes a count overflow or a total NaN. Every rule is one line naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator
from pydantic_core import PydanticCustomError

from workbench.schemas.base import StrictModel, Text, is_int, one_of
from workbench.schemas.capacity import capacity_banks_of, scaled_parts  # noqa: F401

OVERFLOW_MODES = ("wrap", "saturate")
SIMD_STYLES = ("generic", "nve")
DATAPATH_DIMS = ("X", "Y", "C", "M", "N")
MAX_BYTES = 2**48          # the largest memory a platform may declare (256 TiB)
MAX_PJ = 1e6               # 1 µJ: the most one access, MAC or core cycle may cost
MAX_RATE = 1e9             # elements or MACs per cycle


def _rule(text: str) -> PydanticCustomError:
    return PydanticCustomError("range_rule", text)


def number(low: float, high: float, unit: str, *, above: bool = False) -> Any:
    """A finite number in [low, high] ((low, high] when `above`), in `unit`."""
    rule = f"must be a number {'>' if above else '>='} {low:g} and <= {high:g} ({unit})"

    def check(value: Any) -> float | int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _rule(rule)
        try:
            x = float(value)
        except OverflowError:
            raise _rule(rule) from None
        if not math.isfinite(x) or x > high or x < low or (above and x == low):
            raise _rule(rule)
        return value  # as given: an integer stays one (and prints as one)
    return PlainValidator(check)


def integer(low: int, high: int, unit: str) -> Any:
    """A whole number in low..high (4.0 is 4; 2.5 and true are refused), in `unit`."""
    rule = f"must be a whole number in {low:,}..{high:,} ({unit})"

    def check(value: Any) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if not is_int(value) or not low <= value <= high:
            raise _rule(rule)
        return value
    return PlainValidator(check)


def optional(check: Any) -> Any:
    """The rule of `check`, or null."""
    inner: Callable[[Any], Any] = check.func

    def nullable(value: Any) -> Any:
        return None if value is None else inner(value)
    return PlainValidator(nullable)


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


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


CAPACITY_RULE = ("must be bytes (a whole number in 1..2^48), a mapping {I, W, O} or of "
                 "banks {I+O, W} of bytes >= 0 (one > 0), or null for DRAM")


def _capacity(value: Any) -> Any:
    """Bytes, banks as ((arrays, bytes), ...) in the file's key order, or None (DRAM)."""
    if isinstance(value, tuple):  # already parsed (a copy of a level)
        value = dict(value)
    if value is None or (is_int(value) and 0 < value <= MAX_BYTES):
        return value
    if isinstance(value, dict):
        try:
            banks = capacity_banks_of(value)
        except ValueError as exc:
            raise PydanticCustomError("capacity_rule", str(exc)) from None
        parts = [size for _, size in banks]
        if all(is_int(v) and 0 <= v <= MAX_BYTES for v in parts) and 0 < sum(parts) <= MAX_BYTES:
            return tuple((key, value[key]) for key in value)
    raise PydanticCustomError("capacity_rule", CAPACITY_RULE)


def capacity_total(capacity: Any) -> float:
    """Bytes of a level's capacity: an integer, the sum of its banks, inf for None."""
    if capacity is None:
        return math.inf
    if isinstance(capacity, tuple | dict):
        return sum(dict(capacity).values())
    return capacity


class MemoryLevel(StrictModel):
    """One memory level: capacity in bytes (or banks; null: the unbounded DRAM), access width
    in bits, energy in pJ per access (null: from its size and width, seed 001 table 3),
    bandwidth in elements per cycle (null: unlimited), area in mm² per KB."""

    name: Text
    capacity: Annotated[Any, PlainValidator(_capacity)]
    access_bits: Annotated[int, integer(1, 65536, "bits")]
    energy_pj: Annotated[float | None, optional(number(0, MAX_PJ, "pJ per access"))] = None
    bandwidth: Annotated[float | None, optional(number(1e-6, MAX_RATE,
                                                       "elements per cycle"))] = None
    area_mm2_per_kb: Annotated[float | None, optional(number(0, 1e3, "mm² per KB"))] = None

    @property
    def total_bytes(self) -> float:
        """Bytes the level holds in all (inf for DRAM)."""
        return capacity_total(self.capacity)

    def doc(self) -> dict[str, Any]:
        """The level as a hierarchy file writes it (banks as a mapping)."""
        out = self.model_dump()
        if isinstance(self.capacity, tuple):
            out["capacity"] = dict(self.capacity)
        return out


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


def level_rules(levels: tuple[MemoryLevel, ...]) -> tuple[tuple, str] | None:
    """(field path, rule) of the first rule across levels the hierarchy breaks, or None:
    unique names, the outermost level unbounded and only it, capacities not increasing
    inwards."""
    names = [level.name for level in levels]
    for i, level in enumerate(levels):
        at = ("levels", i)
        if level.name in names[:i]:
            return (*at, "name"), f"level names must be unique, {level.name!r} repeats"
        if not i and level.capacity is not None:
            return (*at, "capacity"), ("the outermost level (the backing store, e.g. DRAM) "
                                       "holds every array whole, so it must be unbounded "
                                       f"(null), got {level.total_bytes:.0f} B")
        if i and level.capacity is None:
            return (*at, "capacity"), "only the outermost level may be unbounded (null)"
        if i and level.total_bytes > levels[i - 1].total_bytes:
            return (*at, "capacity"), ("capacities must not increase inwards "
                                       f"({level.total_bytes:g} B > "
                                       f"{levels[i - 1].total_bytes:g} B of "
                                       f"{levels[i - 1].name!r})")
    return None


class HierarchyDatapath(StrictModel):
    """A hierarchy file's MAC array: lanes per dimension and an optional clock (MHz)."""

    unroll: dict[Annotated[str, one_of(DATAPATH_DIMS)],
                 Annotated[int, integer(1, 65536, "lanes")]] | None = {}
    clock_mhz: Annotated[float | None, optional(number(1e-3, 1e5, "MHz"))] = None


class HierarchyDoc(StrictModel):
    """A hierarchy file (data/hierarchies/*.yaml): levels DRAM first, an optional MAC array
    and the MAC energy (pJ)."""

    name: Text = "hierarchy"
    levels: Annotated[tuple[MemoryLevel, ...], BeforeValidator(_as_tuple), Field(min_length=2)]
    datapath: HierarchyDatapath | None = None
    mac_energy_pj: Annotated[float, number(0, MAX_PJ, "pJ per MAC")] = 0.0
