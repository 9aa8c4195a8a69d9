"""Platforms: the hardware a layer is mapped on, as data (presets in data/platforms/*.yaml).

Memory hierarchy. Every platform has one, levels DRAM first, as a hierarchy document
(`Platform.hierarchy_doc`; `explore.hierarchy_plan.platform_hierarchy` parses it with
`hierarchy.hierarchy_from_dict`: platforms are specs and import no model package). A platform
file may declare it (`levels:`, optionally `datapath:` and `mac_energy_pj`; such a platform is
a `PlatformWithLevels`); otherwise it is the implied two levels DRAM + local memory. Without
a datapath the parsed hierarchy feeds an array of macs_per_cycle whose mapping is not modelled
(`platform_hierarchy`). The single-level fields are views of the two
outer levels (the rule, `LEVEL_RULES`): levels[0] is the external memory (ext_access_bytes =
access_bits / 8, ext_access_pj = energy_pj, bus_elems_per_cycle = bandwidth) and levels[1],
the outermost on-chip level, is the local memory (local_mem_bytes = its total capacity,
local_access_bytes = access_bits / 8, local_access_pj = energy_pj, or size_aware_energy when
energy_pj is null); datapath.clock_mhz is clock_mhz, and the product of datapath.unroll (the
MACs of one step, one step a cycle) is macs_per_cycle. In a file each such field may be left
out (derived from the levels) or given equal; a different value is refused. Overrides
(`replace`, a sweep's buffer size) change the fields and the levels follow (a split local
level keeps its proportions). Inner levels and register_file_bytes (the SIMD model's vector
registers, not a memory level) are not tied to any field. MAC energy: mac_energy_pj (then
core_pj_per_cycle = mac_energy_pj × macs_per_cycle, derived or checked; a hierarchy put on a
platform sets it so), else core_pj_per_cycle / macs_per_cycle.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, UnknownNameError, WorkbenchError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files
from workbench.platform_levels import (  # noqa: F401 (re-exported)
    LEVEL_RULES,
    check_hierarchy,
    implied_doc,
    level_fields,
    levels_from_doc,
    list_hierarchies,
    read_hierarchy,
    stamped_doc,
)
from workbench.schemas.platform import LEVEL_KEYS, validate_level_keys, validate_platform

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
    size_aware_energy: bool = False      # local access pJ from local_mem_bytes (seed 001 table 3)
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
        for name in ("double_buffer", "dma_broadcast", "size_aware_energy"):
            if not isinstance(getattr(self, name), bool):
                raise WorkbenchError(f"platform {self.name!r}: {name} must be true or false")
        if self.size_aware_energy:
            widths = [w // 8 for w in _energy_table().widths_bits]
            if self.local_access_bytes not in widths:
                raise WorkbenchError(f"platform {self.name!r}: size_aware_energy needs "
                                     f"local_access_bytes in {widths} (seed 001 table 3 widths), "
                                     f"got {self.local_access_bytes!r}")

    @property
    def effective_local_access_pj(self) -> float:
        """pJ per local access (of local_access_bytes) that `perf` prices: local_access_pj, or
        with size_aware_energy the seed 001 table 3 energy of a local_mem_bytes memory at that
        width (`memory_energy_pj_per_16b`, pJ per 16 bits) × local_access_bytes·8/16."""
        if not self.size_aware_energy:
            return self.local_access_pj
        bits = 8 * self.local_access_bytes
        return memory_energy_pj_per_16b(self.local_mem_bytes, bits) * (bits / 16)

    @property
    def peak_gops(self) -> float:
        """Peak compute throughput of one core in GOps/s (1 MAC = 2 ops)."""
        return 2 * self.macs_per_cycle * self.clock_mhz * 1e-3

    @property
    def bus_bytes_per_s(self) -> float:
        return self.bus_elems_per_cycle * self.elem_bytes * self.clock_mhz * 1e6

    @property
    def has_levels(self) -> bool:
        """True when the platform declares its memory hierarchy (`levels:`)."""
        return False

    @property
    def mac_pj(self) -> float:
        """Energy of one MAC in the hierarchy model (pJ): core_pj_per_cycle / macs_per_cycle."""
        return self.core_pj_per_cycle / self.macs_per_cycle

    @property
    def hierarchy_doc(self) -> dict[str, Any]:
        """The platform's memory hierarchy as a hierarchy document (what
        `hierarchy.hierarchy_from_dict` reads; `explore.hierarchy_plan.platform_hierarchy`
        parses it): here the implied DRAM + local memory, MAC energy `mac_pj` (the parser gives
        it an array of macs_per_cycle whose mapping is not modelled)."""
        return stamped_doc(self, implied_doc(self.name))

    def replace(self, **overrides: Any) -> Platform:
        """A copy with some fields changed (validated like a new platform)."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise WorkbenchError(f"platform {self.name!r}: unknown field(s) {sorted(unknown)}; "
                                 "fields: " + ", ".join(field_names()))
        try:
            return dataclasses.replace(self, **overrides)
        except WorkbenchError as exc:  # name the override (e.g. --memory) that broke a rule
            text, own = str(exc), f"platform {self.name!r}: "
            changed = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
            raise type(exc)(f"platform {self.name!r} with {changed} (an override, e.g. "
                            f"--memory or a sweep's buffer_kb): "
                            f"{text.removeprefix(own)}") from None


@dataclass(frozen=True, slots=True)
class PlatformWithLevels(Platform):
    """A platform that declares its memory hierarchy. levels_json: the hierarchy document
    ({name, levels DRAM first, datapath?, mac_energy_pj?}, validated by the platform schema)
    as canonical JSON, so the platform stays plain, hashable data. See the module docstring
    for the rule tying levels[0] and levels[1] to the single-level fields."""

    levels_json: str = ""

    def __post_init__(self) -> None:
        Platform.__post_init__(self)
        try:  # the levels as the fields stamp them (after an override too) must stay valid
            validate_level_keys(self.hierarchy_doc, f"platform {self.name!r}")
        except FileFormatError as exc:
            raise WorkbenchError(str(exc)) from None

    @property
    def has_levels(self) -> bool:
        return True

    @property
    def declared_doc(self) -> dict[str, Any]:
        """The hierarchy document as declared (before the fields stamp it)."""
        return json.loads(self.levels_json)

    @property
    def mac_pj(self) -> float:
        declared = self.declared_doc.get("mac_energy_pj")
        return Platform.mac_pj.fget(self) if declared is None else float(declared)

    @property
    def hierarchy_doc(self) -> dict[str, Any]:
        """The declared hierarchy, its two outer levels and the datapath's clock following
        the single-level fields, MAC energy `mac_pj`."""
        return stamped_doc(self, self.declared_doc)


def with_levels(plat: Platform, doc: dict[str, Any], origin: str) -> PlatformWithLevels:
    """The platform with the hierarchy document `doc` (a hierarchy file's {name?, levels,
    datapath?, mac_energy_pj?}) as its levels; the single-level fields the levels define are
    taken from them (the hierarchy wins). Errors: one FileFormatError line naming `origin`."""
    keys = {k: v for k, v in doc.items() if k != "name"}
    fields, levels_json = levels_from_doc(keys, origin, str(doc.get("name") or plat.name))
    if keys.get("mac_energy_pj") is not None and "core_pj_per_cycle" not in fields:
        # its MAC energy on the platform's array: the engine's compute energy per cycle
        fields["core_pj_per_cycle"] = keys["mac_energy_pj"] * plat.macs_per_cycle
    base = {f.name: getattr(plat, f.name) for f in dataclasses.fields(Platform)}
    try:
        return PlatformWithLevels(**{**base, **fields}, levels_json=levels_json)
    except WorkbenchError as exc:
        raise FileFormatError(f"{origin}: {exc}") from None


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Platform)]


def list_platforms() -> list[str]:
    """Names of the platform presets of every data folder (`paths.data_dirs`)."""
    return [p.stem for p in data_files("platforms", "*.yaml")]


def platform_from_dict(doc: Any, origin: str) -> Platform:
    """A Platform from a parsed preset document; `origin` names the file in errors."""
    if not isinstance(doc, dict):
        raise FileFormatError(f"{origin}: expected a mapping of platform fields")
    unknown = set(doc) - set(field_names()) - set(LEVEL_KEYS)
    if unknown:
        raise FileFormatError(f"{origin}: unknown platform field(s) {sorted(unknown)}")
    where = f"platform file {origin!r}"
    extra = None
    if any(key in doc for key in LEVEL_KEYS):
        doc, levels_json = levels_from_doc(doc, where, str(doc.get("name") or "platform"))
        extra = {"levels_json": levels_json}
    missing = [f.name for f in dataclasses.fields(Platform)
               if f.default is dataclasses.MISSING and f.name not in doc]
    if missing:
        raise FileFormatError(f"{origin}: missing platform field(s) {missing}")
    # types, ranges and finiteness by the schema (one line: file, field, rule), so a file's
    # 2.5 lanes or NaN clock is refused at the door with its field named
    fields = validate_platform(doc, where)
    if extra is None:
        return Platform(**fields)
    try:
        return PlatformWithLevels(**fields, **extra)
    except WorkbenchError as exc:
        raise FileFormatError(f"{where}: {exc}") from None


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


@dataclass(frozen=True, slots=True)
class EnergyTable:
    """Seed 001 table 3 (pJ per 16 bits) with its derived rows: `rows_kb` ascending, one energy
    per width of `widths_bits` in each of `rows_pj`; DRAM `dram_pj` above `dram_above_kb`."""

    widths_bits: tuple[int, ...]
    rows_kb: tuple[float, ...]
    rows_pj: tuple[tuple[float, ...], ...]
    dram_above_kb: float
    dram_pj: float


def _energy_table() -> EnergyTable:
    path = data_file("energy", "yang_memory_energy.yaml")
    return _read_energy_table(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_energy_table(path: str, mtime_ns: int) -> EnergyTable:
    """The table file parsed once per version on disk, with the rows above the last printed
    one derived by the extension rule (see `memory_energy_pj_per_16b`)."""
    doc = read_yaml(Path(path), "energy table")
    try:
        widths = tuple(int(w) for w in doc["widths_bits"])
        printed = {float(kb): tuple(float(e) for e in row) for kb, row in doc["sram"].items()}
        fit_kb, dram_kb, dram = (float(doc["extension"]["fit_from_kb"]),
                                 float(doc["dram_above_kb"]), float(doc["dram"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FileFormatError(f"energy table {path!r}: malformed ({exc!r})") from None
    rows_kb = sorted(printed)
    rows = [printed[kb] for kb in rows_kb]
    if any(len(row) != len(widths) for row in rows) or fit_kb not in printed:
        raise FileFormatError(f"energy table {path!r}: a row has not one value per width, or "
                              "extension.fit_from_kb is not a printed row")
    ratios = [last / first for last, first in zip(rows[-1], printed[fit_kb], strict=True)]
    growth = math.prod(ratios) ** (1 / (len(ratios) * math.log2(rows_kb[-1] / fit_kb)))
    while rows_kb[-1] < dram_kb:  # doublings up to the DRAM threshold (the last may be less)
        size_kb = min(2 * rows_kb[-1], dram_kb)
        step = growth ** math.log2(size_kb / rows_kb[-1])
        rows_kb.append(size_kb)
        rows.append(tuple(e * step for e in rows[-1]))
    steps = zip(rows, [*rows[1:], (dram,) * len(widths)], strict=True)
    if any(b < a for row_a, row_b in steps for a, b in zip(row_a, row_b, strict=True)):
        raise FileFormatError(f"energy table {path!r}: energy must not decrease with size")
    return EnergyTable(widths, tuple(rows_kb), tuple(rows), dram_kb, dram)


SMALL_FIT_KB = (1.0, 8.0)   # the printed rows whose growth extends table 3 below 1 KB
SMALL_FLOOR_KB = 0.25       # seed 001 table 3's caption: SRAMs from 0.25 KB


@functools.lru_cache(maxsize=4)
def _rows_below_1kb(table: EnergyTable) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """Rows 0.25 and 0.5 KB (ascending): each the row above divided by g, the geometric mean
    of the per-doubling growth over the 1 → 8 KB rows and every width (g = 1.402)."""
    lo, hi = (table.rows_pj[table.rows_kb.index(kb)] for kb in SMALL_FIT_KB)
    octaves = math.log2(SMALL_FIT_KB[1] / SMALL_FIT_KB[0])
    growth = math.prod(b / a for a, b in zip(lo, hi, strict=True)) ** (1 / (len(lo) * octaves))
    rows_kb, rows = [SMALL_FIT_KB[0]], [lo]
    while rows_kb[0] > SMALL_FLOOR_KB:
        rows_kb.insert(0, rows_kb[0] / 2)
        rows.insert(0, tuple(e / growth for e in rows[0]))
    return tuple(rows_kb[:-1]), tuple(rows[:-1])


def memory_energy_pj_per_16b(size_bytes: float, width_bits: int, *,
                             extend_below_1kb: bool = False) -> float:
    """Access energy (pJ per 16 bits) of a memory of `size_bytes` read `width_bits` at a time,
    seed 001 table 3 (data/energy/yang_memory_energy.yaml).

    The row of the smallest listed size holding `size_bytes` (below 1 KB the 1 KB row, or with
    `extend_below_1kb` derived rows at 0.5 and 0.25 KB: each the row above divided by the
    geometric-mean growth per doubling of the 1 → 8 KB rows over the four widths, g = 1.402;
    the 0.25 KB row, the seed's smallest SRAM, below that), at the tabulated width: the
    printed values exactly at 1 KB … 1 MB. Rows 2, 4, 8 and 16 MB are derived (the seed prints
    none): each is the row before times one growth factor g, the
    geometric mean of the per-doubling growth over the last three printed octaves (128 KB →
    1 MB) and the four widths: g = 1.495, a power law ∝ size^0.58 (about √size, the wire-length
    growth seed 001 §3.4 credits for large SRAMs' energy). One g for every width keeps the
    table's order across widths (wider words cheaper per 16 bits). DRAM (320) above 16 MB at
    every width. Non-decreasing in size for every width (checked when the table is read).
    """
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, numbers.Real) \
            or not math.isfinite(size_bytes) or size_bytes <= 0:
        raise WorkbenchError(f"memory size must be a positive number of bytes, got {size_bytes!r}")
    table = _energy_table()
    if isinstance(width_bits, bool) or width_bits not in table.widths_bits:
        raise WorkbenchError(f"memory width {width_bits!r} bits not tabulated; widths: "
                             f"{list(table.widths_bits)}")
    size_kb = size_bytes / 1024
    if size_kb > table.dram_above_kb:
        return table.dram_pj
    column = table.widths_bits.index(width_bits)
    if extend_below_1kb:
        small_kb, small = _rows_below_1kb(table)
        if size_kb <= small_kb[-1]:
            return small[bisect.bisect_left(small_kb, size_kb)][column]
    row = bisect.bisect_left(table.rows_kb, size_kb)
    return table.rows_pj[row][column]
