"""The memory levels of a platform or a hierarchy file, declared once (the platform's
`memory.levels` and a hierarchy file's `levels` are the same model), with the value types
of physical range every platform part uses. Spec-level: the hierarchy model reads its files
through `HierarchyDoc` without importing the platform package."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator
from pydantic_core import PydanticCustomError

from workbench.schemas.base import StrictModel, Text, is_int, one_of
from workbench.schemas.capacity import capacity_banks_of

DATAPATH_DIMS = ("X", "Y", "C", "M", "N")  # layers.dims.LAYER_DIMS (tests/test_dims.py)
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


CAPACITY_RULE = ("must be bytes (a whole number in 1..2^48), a mapping {I, W, O} or of "
                 "banks {I+O, W} of bytes >= 0 (one > 0), or null for DRAM")


def _capacity(value: Any) -> Any:
    """Bytes, banks as ((arrays, bytes), ...) in the file's key order, or None (DRAM)."""
    if isinstance(value, tuple):  # already parsed (a copy of a level)
        value = dict(value)
    if value is None or (is_int(value) and 0 < value <= MAX_BYTES):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("capacity_rule", CAPACITY_RULE)
    try:
        banks = capacity_banks_of(value)
    except ValueError as exc:
        raise PydanticCustomError("bank_rule", str(exc)) from None
    for key, (_, size) in zip(value, banks, strict=True):
        if not is_int(size) or not 0 <= size <= MAX_BYTES:
            raise PydanticCustomError("bank_rule", f"bank {key!r} must be a whole number of "
                                      f"bytes in 0..2^48, got {size!r}")
    if not 0 < sum(size for _, size in banks) <= MAX_BYTES:
        raise PydanticCustomError("bank_rule", "banks must hold 1..2^48 bytes in all (one "
                                  f"bank > 0), got {value!r}")
    return tuple((key, value[key]) for key in value)


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
