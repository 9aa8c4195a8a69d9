"""Platforms: the hardware a layer is mapped on, as data (presets in data/platforms/*.yaml).

A `Platform` is composed of parts (`parts`: memory levels DRAM first, datapath, DMA, cluster,
energy) declared once, at once schema and objects; the single-level names of the seed 000
model are read-only properties derived from them (`platform`). `files` reads platform files
(part form, or the old flat form with a notice), `hierarchies` hierarchy files, `energy`
seed 001 table 3.
"""

from workbench.platforms.energy import EnergyTable, energy_table, memory_energy_pj_per_16b
from workbench.platforms.files import (
    FlatFieldsNotice,
    from_fields,
    list_platforms,
    load_platform,
    platform_from_dict,
    with_levels,
)
from workbench.platforms.hierarchies import (
    check_hierarchy,
    list_hierarchies,
    read_hierarchy,
    validate_hierarchy,
)
from workbench.platforms.parts import (
    OVERFLOW_MODES,
    SIMD_STYLES,
    Cluster,
    Datapath,
    Dma,
    Energy,
    Memory,
    MemoryLevel,
)
from workbench.platforms.platform import (
    FIELD_NAMES,
    LEVEL_RULES,
    Platform,
    field_rule,
    flat_type,
)


def field_names() -> list[str]:
    """The single-level names a platform answers to (and `Platform.replace` takes)."""
    return list(FIELD_NAMES)


__all__ = [
    "FIELD_NAMES", "LEVEL_RULES", "OVERFLOW_MODES", "SIMD_STYLES", "Cluster", "Datapath", "Dma",
    "Energy", "EnergyTable", "FlatFieldsNotice", "Memory", "MemoryLevel", "Platform",
    "check_hierarchy", "energy_table", "field_names", "field_rule", "flat_type", "from_fields",
    "list_hierarchies", "list_platforms", "load_platform", "memory_energy_pj_per_16b",
    "platform_from_dict", "read_hierarchy", "validate_hierarchy", "with_levels",
]
