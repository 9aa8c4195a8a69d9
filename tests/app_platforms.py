"""Platforms for the app tests, written here as a platform file would be (not through the app's
keywords): DRAM at 320 pJ per 16-bit access, then on-chip levels L1, L2, ... whose energy
comes from their size (seed 001 table 3), one scalar MAC at 1 pJ, 16-bit data and 32-bit
partial sums: the hierarchy the memory-hierarchy app priced before it took a platform."""

from __future__ import annotations

from typing import Any

from workbench.platforms import Platform, platform_from_dict

KB = 1024


def levels_doc(*sizes_kb: float, access_bits: int = 64,
               split: tuple[int, int, int] | None = None) -> dict[str, Any]:
    """The platform document: on-chip levels of these sizes (KB, outermost first), shared;
    with `split`, every level split into these I, W, O parts (bytes; its size is theirs)."""
    levels: list[dict[str, Any]] = [{"name": "DRAM", "capacity": None, "access_bits": 16,
                                     "energy_pj": 320.0, "bandwidth": 16}]
    for i, kb in enumerate(sizes_kb):
        cap: Any = int(kb * KB)
        if split is not None:
            cap = dict(zip("IWO", split, strict=True))
        levels.append({"name": f"L{i + 1}", "capacity": cap, "access_bits": access_bits,
                       "energy_pj": None})
    return {"name": "levels", "clock_mhz": 500,
            "memory": {"elem_bytes": 2, "double_buffer": False, "levels": levels},
            "datapath": {"macs_per_cycle": 1, "register_file_bytes": 1024, "acc_bits": 32,
                         "in_bits": 16, "w_bits": 16},
            "energy": {"mac_pj": 1.0}}


def levels_platform(*sizes_kb: float, access_bits: int = 64,
                    split: tuple[int, int, int] | None = None) -> Platform:
    """`levels_doc` as a Platform."""
    return platform_from_dict(levels_doc(*sizes_kb, access_bits=access_bits, split=split),
                              "test platform")
