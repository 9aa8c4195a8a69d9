"""Schema of a platform document (data/platforms/*.yaml, or a user's platform file), and of
field overrides (`load_platform(name, **overrides)`, a sweep grid's `overrides`).

Every field of `workbench.platforms.Platform`, with its type and range: counts and sizes are
integers (2.5 lanes is refused, and so is true), rates and energies finite numbers (NaN clock,
infinite bus refused), flags true/false. The energy-table widths that `size_aware_energy`
needs are the platform module's business (it reads the table), not this schema's.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import create_model

from workbench.errors import FileFormatError, WorkbenchError
from workbench.schemas.base import (
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    StrictModel,
    Text,
    int_in,
    one_of,
    validate,
)

OVERFLOW_MODES = ("wrap", "saturate")
SIMD_STYLES = ("generic", "nve")
Bits = Annotated[int, int_in(1, 64)]


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


def validate_platform(doc: Any, origin: str) -> dict[str, Any]:
    """The platform document's fields, validated (FileFormatError: one line naming `origin`,
    the field and the rule); only the keys the document gives."""
    if not isinstance(doc, dict):
        raise FileFormatError(f"{origin}: expected a mapping of platform fields, got "
                              f"{type(doc).__name__}")
    model = validate(PlatformDoc, doc, origin, FileFormatError)
    return {key: getattr(model, key) for key in doc}


def validate_overrides(overrides: dict[str, Any], origin: str) -> dict[str, Any]:
    """Field overrides, validated (WorkbenchError: one line naming `origin`, the field and
    the rule); the values unchanged."""
    validate(PlatformOverrides, overrides, origin, WorkbenchError)
    return dict(overrides)
