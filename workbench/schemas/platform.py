"""Schema of a platform document (data/platforms/*.yaml, or a user's platform file), and of
field overrides (`load_platform(name, **overrides)`, a sweep grid's `overrides`).

Every field of `workbench.platforms.Platform`, with its type and range: counts and sizes are
integers (2.5 lanes is refused, and so is true), rates and energies finite numbers (NaN clock,
infinite bus refused), flags true/false. The energy-table widths that `size_aware_energy`
needs are the platform module's business (it reads the table), not this schema's.

A platform may also carry a memory hierarchy (`LEVEL_KEYS`: levels DRAM first, datapath,
mac_energy_pj): `LevelsDoc` checks each level's and the datapath's fields here; the rules
across levels and the parsing are `workbench.hierarchy.hierarchy_from_dict`'s.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, PlainValidator, create_model
from pydantic_core import PydanticCustomError

from workbench.errors import FileFormatError, WorkbenchError
from workbench.schemas.base import (
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    StrictModel,
    Text,
    fail,
    int_in,
    one_of,
    validate,
)

OVERFLOW_MODES = ("wrap", "saturate")
SIMD_STYLES = ("generic", "nve")
Bits = Annotated[int, int_in(1, 64)]
LEVEL_KEYS = ("levels", "datapath", "mac_energy_pj")
DATAPATH_DIMS = ("X", "Y", "C", "M", "N")
ARRAYS = ("I", "W", "O")


class PlatformDoc(StrictModel):
    """A whole platform document: the fields without a default are required."""

    name: Text
    clock_mhz: PositiveFloat
    bus_elems_per_cycle: PositiveFloat
    macs_per_cycle: PositiveFloat
    elem_bytes: PositiveInt
    dma_setup_cycles: NonNegativeFloat
    local_mem_bytes: PositiveInt
    register_file_bytes: PositiveInt
    double_buffer: bool = True
    simd_lanes: PositiveInt = 1
    acc_bits: Bits = 32
    overflow: Annotated[str, one_of(OVERFLOW_MODES)] = "wrap"
    in_bits: Bits = 16
    w_bits: Bits = 16
    cores: PositiveInt = 1
    dma_channels: PositiveInt = 1
    dma_broadcast: bool = False
    core_pj_per_cycle: NonNegativeFloat = 0.0
    local_access_pj: NonNegativeFloat = 0.0
    local_access_bytes: PositiveInt = 1
    ext_access_pj: NonNegativeFloat = 0.0
    ext_access_bytes: PositiveInt = 1
    size_aware_energy: bool = False
    simd_style: Annotated[str, one_of(SIMD_STYLES)] = "generic"
    vector_load_bytes: NonNegativeInt = 0
    mac_slots: PositiveInt = 1
    load_ports: PositiveInt = 1
    store_ports: PositiveInt = 1
    alu_slots: PositiveInt = 1
    load_latency: PositiveInt = 2
    mac_latency: PositiveInt = 2
    loop_overhead_cycles: NonNegativeInt = 2
    title: str = ""
    source: str = ""


# The same fields, every one optional: what overrides may change.
PlatformOverrides = create_model(
    "PlatformOverrides", __base__=StrictModel,
    **{name: (Annotated[(info.annotation, *info.metadata)] if info.metadata else
              info.annotation, None)
       for name, info in PlatformDoc.model_fields.items() if name != "name"})


class PlatformLevelFieldsDoc(PlatformDoc):
    """The fields of a platform document with `levels:`: those the levels define may be left
    out (`workbench.platforms` derives them)."""

    clock_mhz: PositiveFloat = None  # type: ignore[assignment]
    bus_elems_per_cycle: PositiveFloat = None  # type: ignore[assignment]
    local_mem_bytes: PositiveInt = None  # type: ignore[assignment]


def validate_platform(doc: Any, origin: str) -> dict[str, Any]:
    """The platform document's fields, validated (FileFormatError: one line naming `origin`,
    the field and the rule); only the keys the document gives. With `levels:` the hierarchy
    keys too (`validate_level_keys`, returned as given)."""
    if not isinstance(doc, dict):
        raise FileFormatError(f"{origin}: expected a mapping of platform fields, got "
                              f"{type(doc).__name__}")
    levels = {key: doc[key] for key in LEVEL_KEYS if key in doc}
    fields = {key: value for key, value in doc.items() if key not in LEVEL_KEYS}
    if levels:
        validate_level_keys(levels, origin)
    model = validate(PlatformLevelFieldsDoc if levels else PlatformDoc, fields, origin,
                     FileFormatError)
    return {**{key: getattr(model, key) for key in fields}, **levels}


def validate_overrides(overrides: dict[str, Any], origin: str) -> dict[str, Any]:
    """Field overrides, validated (WorkbenchError: one line naming `origin`, the field and
    the rule); the values unchanged."""
    validate(PlatformOverrides, overrides, origin, WorkbenchError)
    return dict(overrides)


def _nullable(least: float, strictly: bool, rule: str) -> Any:
    """A finite number ≥ least (> least when `strictly`), or null."""
    def check(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value < least or (strictly and value == least):
            raise PydanticCustomError("number_rule", rule)
        return float(value)
    return PlainValidator(check)


def capacity_banks_of(value: dict) -> list[tuple[str, Any]]:
    """A per-array capacity's banks, (arrays, bytes as given) per key in order: each key
    names the arrays sharing its bytes ('I', 'I+O' or 'IO': letters I, W, O, '+' between
    them optional), every one of I, W, O in exactly one key (a bank of 0 B: its arrays never
    live at the level). ValueError stating the rule otherwise."""
    banks, seen = [], {}
    for key, size in value.items():
        arrays = key.replace("+", "") if isinstance(key, str) else ""
        if not arrays or not set(arrays) <= set(ARRAYS) or len(set(arrays)) != len(arrays):
            raise ValueError(f"a key must name arrays of I, W, O sharing its bytes ('I', "
                             f"'I+O', ...), got {key!r}")
        for array in arrays:
            if array in seen:
                raise ValueError(f"array {array} is in two keys ({seen[array]!r}, {key!r}); "
                                 "each of I, W, O goes in exactly one")
            seen[array] = key
        banks.append(("".join(a for a in ARRAYS if a in arrays), size))
    missing = [a for a in ARRAYS if a not in seen]
    if missing:
        raise ValueError(f"array(s) {', '.join(missing)} in no key: each of I, W, O goes in "
                         "exactly one (0 B: never held here)")
    return banks


def _capacity(value: Any) -> Any:
    """Bytes (a positive integer), {bank: bytes ≥ 0, one > 0} (`capacity_banks_of`: I, W, O
    apart, or banks such as I+O), or null (DRAM)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return value
    if isinstance(value, dict):
        try:
            banks = capacity_banks_of(value)
        except ValueError as exc:
            raise PydanticCustomError("capacity_rule", str(exc)) from None
        parts = [size for _, size in banks]
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in parts) \
                and sum(parts) > 0:
            return value
    raise PydanticCustomError("capacity_rule", "must be bytes (a positive integer), a mapping "
                              "{I, W, O} or of banks {I+O, W} of bytes >= 0 (one > 0), or "
                              "null for DRAM")


class LevelDoc(StrictModel):
    """One memory level (`workbench.hierarchy.Level`): capacity is required, null for DRAM."""

    name: Text
    capacity: Annotated[Any, PlainValidator(_capacity)]
    access_bits: PositiveInt
    energy_pj: Annotated[float | None, _nullable(0, False, "must be a finite number >= 0 "
                                                 "(pJ per access) or null (from size)")] = None
    bandwidth: Annotated[float | None, _nullable(0, True, "must be a finite number > 0 "
                                                 "(elements per cycle) or null")] = None
    area_mm2_per_kb: Annotated[float | None, _nullable(0, False, "must be a finite number "
                                                       ">= 0 or null")] = None


class DatapathDoc(StrictModel):
    """The MAC array: lanes per dimension (X, Y, C, M, N) and an optional clock (MHz)."""

    unroll: dict[Annotated[str, one_of(DATAPATH_DIMS)], PositiveInt] | None = {}
    clock_mhz: Annotated[float | None, _nullable(0, True, "must be a finite number > 0 "
                                                 "(MHz) or null")] = None


class LevelsDoc(StrictModel):
    """A platform's memory hierarchy keys: levels DRAM first, datapath, MAC energy (pJ)."""

    name: Text = "hierarchy"
    levels: Annotated[list[LevelDoc], Field(min_length=2)]
    datapath: DatapathDoc | None = None
    mac_energy_pj: NonNegativeFloat = 0.0


def capacity_total(capacity: Any) -> float:
    """Bytes of a level's capacity: an integer, the sum of its parts or banks, inf for null."""
    if capacity is None:
        return math.inf
    return sum(capacity.values()) if isinstance(capacity, dict) else capacity


def scaled_parts(parts: list[int], size: int) -> list[int]:
    """`size` bytes in the proportions of `parts` (a split level's or its banks'): rounded
    down, then the bytes left to the parts of largest remainder (ties: the earlier part), so
    that they sum to `size`; a part is 0 only when it was, and then at least 1 B (taken from
    the largest part, the earlier on ties)."""
    whole = sum(parts)
    shares = [divmod(p * size, whole) for p in parts]
    out = [q for q, _ in shares]
    for i in sorted(range(len(parts)), key=lambda i: -shares[i][1])[:size - sum(out)]:
        out[i] += 1
    for i, p in enumerate(parts):
        if p and not out[i]:
            out[max(range(len(out)), key=out.__getitem__)] -= 1
            out[i] = 1
    return out


def validate_level_keys(doc: dict[str, Any], origin: str) -> LevelsDoc:
    """The hierarchy keys of a platform document (`LEVEL_KEYS`, and a name), validated
    (FileFormatError: one line naming `origin`, the field path and the rule): each field, and
    across levels the rules of `hierarchy.levels.check_levels` (unique names, the outermost
    unbounded and only it, capacities not increasing inwards), so a file is refused at load."""
    model = validate(LevelsDoc, doc, origin, FileFormatError)
    names: set[str] = set()
    for i, level in enumerate(model.levels):
        if level.name in names:
            fail(origin, ("levels", i, "name"), f"level names must be unique, {level.name!r} "
                 "repeats", FileFormatError)
        names.add(level.name)
        if not i and level.capacity is not None:
            fail(origin, ("levels", 0, "capacity"), "the outermost level (the backing store, "
                 "e.g. DRAM) holds every array whole, so it must be unbounded (null), got "
                 f"{capacity_total(level.capacity):.0f} B", FileFormatError)
        if i and level.capacity is None:
            fail(origin, ("levels", i, "capacity"), "only the outermost level may be "
                 "unbounded (null)", FileFormatError)
        outer = capacity_total(model.levels[i - 1].capacity) if i else math.inf
        if capacity_total(level.capacity) > outer:
            fail(origin, ("levels", i, "capacity"), "capacities must not increase inwards "
                 f"({capacity_total(level.capacity):g} B > {outer:g} B of "
                 f"{model.levels[i - 1].name!r})", FileFormatError)
    return model
