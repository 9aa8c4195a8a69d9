"""Schema of the sweep grid document (`workbench.sweep.Grid`, a YAML file or Python values).

The names a grid may use (schedules, objectives, fusion modes, traffic models, quantizer
bounds) belong to the engine above this package; the loader passes them in the validation
context (`NAMES` lists the keys). Without a context any non-empty name is accepted.
`hierarchy` (memory hierarchies that replace each platform's levels, one case each) also
takes .yaml files, which must exist.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PlainValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from workbench.errors import WorkbenchError
from workbench.schemas.base import (
    NonNegativeInt,
    PositiveInt,
    StrictModel,
    Text,
    Unique,
    int_in,
    is_int,
    validate,
)

NAMES = {"schedules": "schedule", "objectives": "objective", "fusion": "fusion mode",
         "traffic_models": "traffic model", "bounds": "bound", "hierarchy": "hierarchy",
         "number_formats": "number format"}
HIERARCHY_SUFFIXES = (".yaml", ".yml")


def _name_from(key: str) -> Any:
    what = NAMES[key]

    def check(value: Any, info: ValidationInfo) -> str:
        allowed = (info.context or {}).get(key)
        if not isinstance(value, str) or not value:
            raise PydanticCustomError("name_rule", f"must be a {what} name")
        if allowed is not None and value not in allowed:
            raise PydanticCustomError("cross_rule", f"unknown {what} {value!r}; valid: "
                                      + ", ".join(allowed))
        return value
    return PlainValidator(check)


def _hierarchy(value: Any, info: ValidationInfo) -> str:
    """A shipped hierarchy's name (the context's "hierarchy" list), or a .yaml file that
    exists."""
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("name_rule", "must be a hierarchy name or a .yaml file")
    if value.lower().endswith(HIERARCHY_SUFFIXES):
        if not Path(value).is_file():
            raise PydanticCustomError("cross_rule", f"hierarchy file {value!r} does not exist")
        return value
    allowed = (info.context or {}).get("hierarchy")
    if allowed is not None and value not in allowed:
        raise PydanticCustomError("cross_rule", f"unknown hierarchy {value!r}; shipped: "
                                  + ", ".join(allowed) + " (or a .yaml file)")
    return value


def _scalar(value: Any) -> Any:
    if isinstance(value, bool) or is_int(value) or (isinstance(value, str) and value):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise PydanticCustomError("scalar_rule", "must be a finite number, true/false or a name")


MAX_MEMORY_KB = 2**38  # a local memory of at most 2^48 B (256 TiB): a physical range


def _memory_kb(value: Any) -> float:
    """A local-memory size in KB: a number from 1 byte (1/1024) to MAX_MEMORY_KB."""
    rule = "must be a number of KB from 1/1024 (1 byte) to 2^38 (2^48 B)"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number_rule", rule)
    if is_int(value) and not 1 <= value <= MAX_MEMORY_KB:
        raise PydanticCustomError("number_rule", rule)
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("number_rule", "must be a finite number (no NaN or infinity)")
    if not 1 / 1024 <= value <= MAX_MEMORY_KB:
        raise PydanticCustomError("number_rule", rule)
    return value


def _optional_positive(value: Any) -> int | None:
    if value is None or (is_int(value) and value > 0):
        return value
    raise PydanticCustomError("int_rule", "must be a positive integer (or null)")


def _names(key: str, least: int = 1) -> Any:
    return Annotated[list[Annotated[str, _name_from(key)]], Field(min_length=least), Unique]


NonEmptyNames = Annotated[list[Text], Field(min_length=1), Unique]
Values = Annotated[list[Annotated[Any, PlainValidator(_scalar)]], Field(min_length=1), Unique]


class GridDoc(StrictModel):
    """What a sweep varies (see `workbench.sweep.Grid` for the meaning of each key)."""

    networks: NonEmptyNames
    platforms: NonEmptyNames
    batch: Annotated[int | None, PlainValidator(_optional_positive)] = None
    memory_kb: Annotated[list[Annotated[float, PlainValidator(_memory_kb)]], Field(min_length=1),
                         Unique] = [128.0]
    acc_bits: Annotated[list[Annotated[int, int_in(2, 64)]], Field(min_length=1), Unique] = [16]
    schedules: _names("schedules") = []
    overrides: dict[Text, Values] = {}
    weights: dict[Text, Text] = {}
    data: dict[Text, Text] = {}
    bound: Annotated[str, _name_from("bounds")] = "data"
    traffic_models: _names("traffic_models", least=0) = []
    number_formats: _names("number_formats", least=0) = []
    objectives: _names("objectives") = ["cycles"]
    fusion: _names("fusion") = ["auto"]
    hierarchy: Annotated[list[Annotated[str, PlainValidator(_hierarchy)]], Unique] = []
    reports: bool = False
    report_timeout_s: PositiveInt = 600
    report_retries: NonNegativeInt = 1


def validate_grid(doc: Any, origin: str, error: type[WorkbenchError],
                  names: dict[str, tuple[str, ...]] | None = None) -> GridDoc:
    """The grid document validated; one `error` line naming `origin`, the field path and the
    rule. `names`: the valid names per key of `NAMES`."""
    if not isinstance(doc, dict):
        raise error(f"{origin}: expected a mapping of grid keys (networks, platforms, ...)")
    return validate(GridDoc, doc, origin, error, context=names)
