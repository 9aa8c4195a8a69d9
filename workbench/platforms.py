"""Platforms: the hardware a layer is mapped on, as data (presets in data/platforms/*.yaml)."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, UnknownNameError, WorkbenchError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files

OVERFLOW_MODES = ("wrap", "saturate")
SIMD_STYLES = ("generic", "nve")


@dataclass(frozen=True, slots=True)
class Platform:
    """One accelerator: clock, bus, DSP, DMA, memories, SIMD unit and energy per event.

    Bus and DSP throughput are per DSP cycle; energies are in pJ per cycle or per access of the
    stated width in bytes.
    """

    name: str
    clock_mhz: float
    bus_elems_per_cycle: float
    macs_per_cycle: float
    elem_bytes: int
    dma_setup_cycles: float
    local_mem_bytes: int
    register_file_bytes: int
    double_buffer: bool = True
    simd_lanes: int = 1
    acc_bits: int = 32
    overflow: str = "wrap"
    in_bits: int = 16
    w_bits: int = 16
    cores: int = 1                       # cores, each with its own local memory
    dma_channels: int = 1                # DMA setups in flight at once, shared by the cores
    dma_broadcast: bool = False          # one fetch delivered to all cores that share it
    core_pj_per_cycle: float = 0.0
    local_access_pj: float = 0.0
    local_access_bytes: int = 1
    ext_access_pj: float = 0.0
    ext_access_bytes: int = 1
    simd_style: str = "generic"          # "generic" VLIW slots, or "nve" (seed 003 fields)
    vector_load_bytes: int = 0           # 0: one full vector of elements per load
    mac_slots: int = 1                   # vector MAC instructions issued per cycle
    load_ports: int = 1                  # vector loads per cycle
    store_ports: int = 1                 # vector stores per cycle
    alu_slots: int = 1                   # shuffles, horizontal adds per cycle
    load_latency: int = 2                # cycles from a load to its use
    mac_latency: int = 2                 # cycles from a MAC to a dependent MAC
    loop_overhead_cycles: int = 2        # per inner-loop entry (setup, branch)
    title: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type not in ("int", "float"):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise WorkbenchError(f"platform {self.name!r}: {field.name} must be a number, "
                                     f"got {value!r}")
            if not math.isfinite(value):
                raise WorkbenchError(f"platform {self.name!r}: {field.name} must be finite, "
                                     f"got {value!r}")
            if field.type == "int" and not isinstance(value, int):
                if not float(value).is_integer():
                    raise WorkbenchError(f"platform {self.name!r}: {field.name} must be a "
                                         f"whole number, got {value!r}")
                object.__setattr__(self, field.name, int(value))
        positive = ("clock_mhz", "bus_elems_per_cycle", "macs_per_cycle", "elem_bytes",
                    "local_mem_bytes", "register_file_bytes", "simd_lanes", "acc_bits",
                    "in_bits", "w_bits", "cores", "dma_channels", "local_access_bytes",
                    "ext_access_bytes", "mac_slots", "load_ports", "store_ports", "alu_slots",
                    "load_latency", "mac_latency")
        for name in positive:
            if getattr(self, name) <= 0:
                raise WorkbenchError(f"platform {self.name!r}: {name} must be positive, "
                                     f"got {getattr(self, name)!r}")
        nonneg = ("dma_setup_cycles", "core_pj_per_cycle", "local_access_pj", "ext_access_pj",
                  "vector_load_bytes", "loop_overhead_cycles")
        for name in nonneg:
            if getattr(self, name) < 0:
                raise WorkbenchError(f"platform {self.name!r}: {name} must be >= 0, "
                                     f"got {getattr(self, name)!r}")
        if self.simd_style not in SIMD_STYLES:
            raise WorkbenchError(f"platform {self.name!r}: simd_style must be one of "
                                 f"{SIMD_STYLES}, got {self.simd_style!r}")
        if self.overflow not in OVERFLOW_MODES:
            raise WorkbenchError(f"platform {self.name!r}: overflow must be one of "
                                 f"{OVERFLOW_MODES}, got {self.overflow!r}")
        for name in ("double_buffer", "dma_broadcast"):
            if not isinstance(getattr(self, name), bool):
                raise WorkbenchError(f"platform {self.name!r}: {name} must be true or false")

    @property
    def peak_gops(self) -> float:
        """Peak compute throughput of one core in GOps/s (1 MAC = 2 ops)."""
        return 2 * self.macs_per_cycle * self.clock_mhz * 1e-3

    @property
    def bus_bytes_per_s(self) -> float:
        return self.bus_elems_per_cycle * self.elem_bytes * self.clock_mhz * 1e6

    def replace(self, **overrides: Any) -> Platform:
        """A copy with some fields changed (validated like a new platform)."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise WorkbenchError(f"platform {self.name!r}: unknown field(s) {sorted(unknown)}; "
                                 "fields: " + ", ".join(field_names()))
        return dataclasses.replace(self, **overrides)


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Platform)]


def list_platforms() -> list[str]:
    """Names of the platform presets of every data folder (`paths.data_dirs`)."""
    return [p.stem for p in data_files("platforms", "*.yaml")]


def platform_from_dict(doc: Any, origin: str) -> Platform:
    """A Platform from a parsed preset document; `origin` names the file in errors."""
    if not isinstance(doc, dict):
        raise FileFormatError(f"{origin}: expected a mapping of platform fields")
    unknown = set(doc) - set(field_names())
    if unknown:
        raise FileFormatError(f"{origin}: unknown platform field(s) {sorted(unknown)}")
    missing = [f.name for f in dataclasses.fields(Platform)
               if f.default is dataclasses.MISSING and f.name not in doc]
    if missing:
        raise FileFormatError(f"{origin}: missing platform field(s) {missing}")
    return Platform(**doc)


def load_platform(name_or_path: str | Path, **overrides: Any) -> Platform:
    """A preset by name, or a platform YAML file, with field overrides."""
    path = Path(name_or_path)
    if path.suffix.lower() in (".yaml", ".yml"):
        if not path.exists():
            raise FileFormatError(f"platform file {str(path)!r} does not exist")
        preset = path
    else:
        preset = data_file("platforms", f"{name_or_path}.yaml")
        if not preset.exists():
            raise UnknownNameError(f"unknown platform {str(name_or_path)!r}; presets: "
                                   + ", ".join(list_platforms()) + " (or a .yaml path)")
    plat = _read_platform(str(preset), preset.stat().st_mtime_ns)
    return plat.replace(**overrides) if overrides else plat


@functools.lru_cache(maxsize=64)
def _read_platform(path: str, mtime_ns: int) -> Platform:
    """A platform file parsed once per version on disk (mtime in the key)."""
    return platform_from_dict(read_yaml(Path(path), "platform"), path)


def memory_energy_pj_per_16b(size_bytes: int, width_bits: int) -> float:
    """Access energy (pJ per 16 bits) of a memory of `size_bytes`, seed 001 table 3.

    SRAM: the row of the smallest tabulated size holding `size_bytes` (1 KB … 1 MB), at the
    tabulated width; DRAM above 16 MB. Sizes between 1 MB and 16 MB are not tabulated.
    """
    table = read_yaml(data_file("energy", "yang_memory_energy.yaml"), "energy table")
    widths = table["widths_bits"]
    if width_bits not in widths:
        raise WorkbenchError(f"memory width {width_bits} bits not tabulated; widths: {widths}")
    size_kb = size_bytes / 1024
    if size_kb > table["dram_above_kb"]:
        return float(table["dram"])
    for row_kb in sorted(table["sram"]):
        if size_kb <= row_kb:
            return float(table["sram"][row_kb][widths.index(width_bits)])
    raise WorkbenchError(f"memory of {size_kb:g} KB not tabulated (SRAM up to 1024 KB, DRAM "
                         f"above {table['dram_above_kb']} KB)")
