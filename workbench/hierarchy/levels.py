"""Memory hierarchies as data: levels from DRAM inwards (seed 001 §3.2, DESIGN "Memory
hierarchies").

A `Level` is one memory: a capacity in bytes, either shared by the three arrays, split into
fixed I/W/O parts (DianNao's 2/32/2 KB input/kernel/output buffers), or in banks each shared by
some arrays (a DSP's local memory as two banks, inputs and outputs in one, weights in the
other: {I+O: 65536, W: 65536}); each part or bank is a memory of its own size (its energy, when
derived from size, is its own), the arrays of one bank share its bytes; the width of one access in
bits; the energy of one access of that width in pJ, or None to derive it from the capacity
(a size-to-energy rule the caller passes in, e.g. seed 001 table 3); the bandwidth to the next
level inwards in elements per cycle; and optionally the area in mm² per KB.

A `Hierarchy` lists its levels outermost (DRAM) first; the last level is the closest to the
datapath (registers). Only the outermost level may be unbounded (capacity None).
`hierarchy_from_dict` reads a parsed YAML/JSON document through the schema platforms use too
(`schemas.memory`); every rule is reported in one line naming the field path
(`levels[2].capacity`) and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.errors import SpecError, WorkbenchError
from workbench.hierarchy.datapath import Datapath, datapath_from_dict
from workbench.resources import cut
from workbench.schemas.base import fail, validate
from workbench.schemas.capacity import capacity_banks_of
from workbench.schemas.memory import (
    MAX_BYTES,
    MAX_PJ,
    MAX_RATE,
    HierarchyDoc,
    MemoryLevel,
    level_rules,
)

ARRAYS = ("I", "W", "O")

# energy per access (pJ) of a memory of `size_bytes` accessed `width_bits` at a time
SizeEnergy = Callable[[int, int], float]


class HierarchyError(SpecError):
    """An invalid memory hierarchy: the message names the field path and the rule."""


# physical ranges of a Level built in Python: the file schema's (`schemas.memory`)
MAX_CAPACITY = MAX_BYTES  # bytes (256 TiB)
MAX_ACCESS_BITS = 2**16
MAX_ENERGY_PJ = MAX_PJ  # 1 µJ per access or MAC
MIN_BANDWIDTH, MAX_BANDWIDTH = 1e-6, MAX_RATE  # elements per cycle
MAX_AREA = 1e3  # mm² per KB
_LIMITS = {"capacity": MAX_CAPACITY, "access_bits": MAX_ACCESS_BITS,
           "energy_pj": MAX_ENERGY_PJ, "mac_energy_pj": MAX_ENERGY_PJ,
           "bandwidth": MAX_BANDWIDTH, "area_mm2_per_kb": MAX_AREA}


def _number(value: Any, where: str, *, integer: bool = False, minimum: float = 0.0,
            strict: bool = True) -> int | float:
    """A finite number ≥ minimum (> minimum when strict), whole when `integer`, within the
    physical range of its field (`_LIMITS`, by the last part of `where`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HierarchyError(f"{where}: must be a number, got {cut(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer beyond float range
        finite = False
    if not finite:
        raise HierarchyError(f"{where}: must be finite, got {cut(value)}")
    if integer and not float(value).is_integer():
        raise HierarchyError(f"{where}: must be a whole number, got {cut(value)}")
    if value < minimum or (strict and value == minimum):
        rule = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise HierarchyError(f"{where}: must be {rule}, got {cut(value)}")
    field = "capacity" if "capacity" in where else where.rsplit(".", 1)[-1]
    high = _LIMITS.get(field)
    low = MIN_BANDWIDTH if field == "bandwidth" else minimum
    if high is not None and not low <= value <= high:
        shown = {MAX_CAPACITY: "2^48", MAX_ACCESS_BITS: "2^16"}
        raise HierarchyError(f"{where}: must be in {low:g}..{shown.get(high, f'{high:g}')} "
                             f"(a physical range), got {cut(value)}")
    return int(value) if integer else float(value)


@dataclass(frozen=True, slots=True)
class SplitCapacity:
    """Bytes reserved for each array (a part may be 0: that array never lives here)."""

    I: int  # noqa: E741 (the array's name)
    W: int
    O: int  # noqa: E741

    def __post_init__(self) -> None:
        for array in ARRAYS:
            object.__setattr__(self, array, _number(getattr(self, array), f"capacity.{array}",
                                                    integer=True, strict=False))
        if self.total == 0:
            raise HierarchyError("capacity: a split capacity needs at least one part > 0")

    @property
    def total(self) -> int:
        return self.I + self.W + self.O

    def of(self, array: str) -> int:
        return int(getattr(self, array))


@dataclass(frozen=True, slots=True)
class BankedCapacity:
    """Banks, each shared by some arrays: ((arrays, bytes), ...), e.g. (("IO", 65536),
    ("W", 65536)); an array in no bank never lives here. A level's buffers fit when those of
    each bank's arrays fit its bytes together. Also the search's view of two levels holding no
    array in common taken as one level (`search.merged`): a bank per level."""

    banks: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        seen = [a for arrays, _ in self.banks for a in arrays]
        if len(seen) != len(set(seen)) or not set(seen) <= set(ARRAYS):
            raise HierarchyError(f"capacity: banks must hold distinct arrays of I, W, O, "
                                 f"got {[arrays for arrays, _ in self.banks]}")
        object.__setattr__(self, "banks", tuple(
            (arrays, _number(size, f"capacity.{arrays}", integer=True, strict=False))
            for arrays, size in self.banks))

    @property
    def total(self) -> int:
        return sum(size for _, size in self.banks)

    def of(self, array: str) -> int:
        """The bytes of the bank holding `array` (0: none does)."""
        return next((size for arrays, size in self.banks if array in arrays), 0)


def capacity_banks(level: Level, held: tuple[str, ...]) -> tuple[tuple[int, ...],
                                                                    tuple[float, ...]]:
    """How the held arrays share the level's bytes: per held array the index of its bank, and
    per bank its bytes, in order of first use (shared: one bank; split: one per array)."""
    cap = level.capacity_bytes
    if isinstance(cap, SplitCapacity):
        keys = list(held)
    elif isinstance(cap, BankedCapacity):
        keys = [next(arrays for arrays, _ in cap.banks if a in arrays) if cap.of(a) else a
                for a in held]
    else:
        keys = ["" for _ in held]
    order = list(dict.fromkeys(keys))
    sizes = tuple(float(level.bytes_for(held[keys.index(k)])) if isinstance(
        cap, SplitCapacity | BankedCapacity) else float(level.total_bytes) for k in order)
    return tuple(order.index(k) for k in keys), sizes


def banks_fit(level: Level, feet: dict[str, float]) -> bool:
    """Whether the bytes `feet` (per held array) fit the level's banks."""
    held = tuple(feet)
    bank, sizes = capacity_banks(level, held)
    used = [0.0] * len(sizes)
    for k, a in enumerate(held):
        used[bank[k]] += feet[a]
    return all(u <= s for u, s in zip(used, sizes, strict=True))


@dataclass(frozen=True, slots=True)
class Level:
    """One memory level. capacity_bytes: shared bytes, a SplitCapacity, a BankedCapacity, or
    None (unbounded, outermost level only); access_bits: width of one access; energy_pj: pJ
    per access of that width (None: derived from the capacity); bandwidth_elems_per_cycle:
    elements per cycle to the next level inwards (None: not limited); area_mm2_per_kb:
    optional; memory_copies: the memory is this many times the capacity buffers may use
    (2: double-buffered, each buffer has a second copy), so an energy derived from size is
    that of the whole memory."""

    name: str
    capacity_bytes: int | SplitCapacity | None
    access_bits: int
    energy_pj: float | None = None
    bandwidth_elems_per_cycle: float | None = None
    area_mm2_per_kb: float | None = None
    memory_copies: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise HierarchyError(f"name: must be a non-empty string, got {self.name!r}")
        try:
            self._check_fields()
        except HierarchyError as exc:
            raise HierarchyError(f"level {self.name!r}: {exc}") from None

    def _check_fields(self) -> None:
        if self.capacity_bytes is not None and not isinstance(
                self.capacity_bytes, SplitCapacity | BankedCapacity):
            object.__setattr__(self, "capacity_bytes",
                               _number(self.capacity_bytes, "capacity", integer=True))
        object.__setattr__(self, "access_bits", _number(self.access_bits, "access_bits",
                                                        integer=True))
        if self.energy_pj is not None:
            object.__setattr__(self, "energy_pj", _number(self.energy_pj, "energy_pj",
                                                          strict=False))
        if self.bandwidth_elems_per_cycle is not None:
            object.__setattr__(self, "bandwidth_elems_per_cycle",
                               _number(self.bandwidth_elems_per_cycle, "bandwidth"))
        if self.area_mm2_per_kb is not None:
            object.__setattr__(self, "area_mm2_per_kb",
                               _number(self.area_mm2_per_kb, "area_mm2_per_kb", strict=False))

    @property
    def total_bytes(self) -> float:
        """All bytes of the level (math.inf when unbounded)."""
        if self.capacity_bytes is None:
            return math.inf
        if isinstance(self.capacity_bytes, SplitCapacity | BankedCapacity):
            return self.capacity_bytes.total
        return self.capacity_bytes

    def bytes_for(self, array: str) -> float:
        """Bytes array `array` may use here: its part of a split (its bank), else the whole
        level."""
        if isinstance(self.capacity_bytes, SplitCapacity | BankedCapacity):
            return self.capacity_bytes.of(array)
        return self.total_bytes

    def access_pj(self, array: str, size_energy: SizeEnergy | None = None) -> float:
        """pJ per access (of access_bits) to the memory holding `array`: energy_pj, or
        size_energy(bytes of that memory, access_bits) when energy_pj is None (a split level is
        three memories, a banked one a memory per bank, each priced at its own size)."""
        if self.energy_pj is not None:
            return self.energy_pj
        if size_energy is None:
            raise HierarchyError(f"level {self.name!r}: energy_pj is null (derive from size) "
                                 "but no size-to-energy rule was given")
        size = self.bytes_for(array) * self.memory_copies
        if not math.isfinite(size):
            raise HierarchyError(f"level {self.name!r}: an unbounded level needs energy_pj")
        try:
            return float(size_energy(int(size), self.access_bits))
        except WorkbenchError as exc:  # e.g. a width table 3 has no row for: name the level
            raise HierarchyError(f"level {self.name!r} (energy_pj null: from its size, "
                                 f"{int(size)} B at {self.access_bits} bits): {exc}") from None

    @property
    def area_mm2(self) -> float | None:
        """Area of the level (None without area_mm2_per_kb or capacity)."""
        if self.area_mm2_per_kb is None or not math.isfinite(self.total_bytes):
            return None
        return self.area_mm2_per_kb * self.total_bytes / 1024


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Memory levels outermost (DRAM) first, innermost (closest to the datapath) last;
    mac_energy_pj: energy of one multiply-accumulate; datapath: the MAC array's spatial
    unrolling (None: one scalar MAC, every operand read from the innermost holder)."""

    levels: tuple[Level, ...]
    name: str = "hierarchy"
    mac_energy_pj: float = 0.0
    datapath: Datapath | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        check_levels(self.levels, "levels")
        object.__setattr__(self, "mac_energy_pj",
                           _number(self.mac_energy_pj, "mac_energy_pj", strict=False))
        if self.datapath is not None and not isinstance(self.datapath, Datapath):
            raise HierarchyError(f"datapath: must be a Datapath, got "
                                 f"{type(self.datapath).__name__}")

    @property
    def on_chip(self) -> tuple[Level, ...]:
        """The levels below the outermost one, outermost first (where buffers are placed)."""
        return self.levels[1:]

    def __len__(self) -> int:
        return len(self.levels)


def check_levels(levels: tuple[Level, ...], where: str) -> None:
    """Rules across levels: at least two, Level objects, unique names, the outermost (the
    backing store, holding every array whole) unbounded and only it, total capacities
    non-increasing inwards."""
    if len(levels) < 2:
        raise HierarchyError(f"{where}: needs at least 2 levels (DRAM and one on-chip), "
                             f"got {len(levels)}")
    for i, level in enumerate(levels):
        if not isinstance(level, Level):
            raise HierarchyError(f"{where}[{i}]: must be a Level, got {type(level).__name__}")
    seen: set[str] = set()
    for i, level in enumerate(levels):
        if level.name in seen:
            raise HierarchyError(f"{where}[{i}].name: level names must be unique, "
                                 f"{level.name!r} repeats")
        seen.add(level.name)
        if i == 0 and level.capacity_bytes is not None:
            raise HierarchyError(f"{where}[0].capacity: the outermost level (the backing "
                                 "store, e.g. DRAM) holds every array whole, so it must be "
                                 f"unbounded (null), got {level.total_bytes:.0f} B")
        if i > 0 and level.capacity_bytes is None:
            raise HierarchyError(f"{where}[{i}].capacity: only the outermost level may be "
                                 "unbounded (null)")
        if i > 0 and level.total_bytes > levels[i - 1].total_bytes:
            raise HierarchyError(f"{where}[{i}].capacity: capacities must not increase inwards "
                                 f"({level.name!r} {level.total_bytes:g} B > "
                                 f"{levels[i - 1].total_bytes:g} B of {levels[i - 1].name!r})")


def _capacity(value: Any, where: str) -> int | SplitCapacity | BankedCapacity | None:
    """A level's capacity from its document: null, bytes, or a mapping of banks to bytes
    (`capacity_banks_of`): I, W, O apart is a SplitCapacity, one bank of all three is
    shared bytes, any other grouping (e.g. {I+O: 4096, W: 32768}) a BankedCapacity."""
    if value is None:
        return None
    if isinstance(value, dict):
        try:
            banks = capacity_banks_of(value)
        except ValueError as exc:
            raise HierarchyError(f"{where}: {exc}") from None
        parts = [(arrays, _number(size, f"{where}.{key}", integer=True, strict=False))
                 for (arrays, size), key in zip(banks, value, strict=True)]
        if sum(size for _, size in parts) == 0:
            raise HierarchyError(f"{where}: a per-array capacity needs at least one part > 0")
        if all(len(arrays) == 1 for arrays, _ in parts):
            return SplitCapacity(**dict(parts))
        if len(parts) == 1:
            return int(parts[0][1])
        return BankedCapacity(tuple(parts))
    return int(_number(value, where, integer=True))


def level_of(model: MemoryLevel) -> Level:
    """The model's Level of a validated level (`schemas.memory.MemoryLevel`)."""
    capacity = model.capacity
    return Level(name=model.name,
                 capacity_bytes=_capacity(dict(capacity) if isinstance(capacity, tuple)
                                          else capacity, "capacity"),
                 access_bits=model.access_bits, energy_pj=model.energy_pj,
                 bandwidth_elems_per_cycle=model.bandwidth,
                 area_mm2_per_kb=model.area_mm2_per_kb)


def hierarchy_from_dict(doc: Any, origin: str) -> Hierarchy:
    """A Hierarchy from a parsed document {name?, mac_energy_pj?, datapath?, levels: [...]}
    (`schemas.memory.HierarchyDoc`, the schema a platform's levels use too: datapath {unroll:
    {C: 16, M: 16}, clock_mhz?}, levels outermost first, each {name, capacity, access_bits,
    energy_pj?, bandwidth?, area_mm2_per_kb?}); `origin` (a file name) starts every error
    message, one line naming the field path and the rule."""
    model = validate(HierarchyDoc, doc, origin, HierarchyError)
    broken = level_rules(model.levels)
    if broken is not None:
        fail(origin, *broken, HierarchyError)
    levels = tuple(level_of(level) for level in model.levels)
    datapath = None
    if model.datapath is not None:
        try:
            datapath = datapath_from_dict({"unroll": model.datapath.unroll or {},
                                           "clock_mhz": model.datapath.clock_mhz})
        except SpecError as exc:
            raise HierarchyError(f"{origin}: {exc}") from None
    return Hierarchy(levels=levels, name=model.name, mac_energy_pj=model.mac_energy_pj,
                     datapath=datapath)
