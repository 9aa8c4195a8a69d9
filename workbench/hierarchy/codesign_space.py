"""The co-design grid (seed 001 §3.6): DRAM plus on-chip level slots, each offering candidate
capacities (bytes shared by I, W, O; a `SplitCapacity` with fixed per-array parts; a
`BankedCapacity`, banks each shared by some arrays; or None, absent); every hierarchy whose
totals do not increase inwards, with at least one on-chip level
(`DesignSpace.gen_hierarchies`); a grid around an edited hierarchy (`space_around`);
hierarchies named by their on-chip capacities (`describe`) and their cost in bytes or mm².
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.levels import (
    ARRAYS,
    BankedCapacity,
    Hierarchy,
    Level,
    SizeEnergy,
    SplitCapacity,
)
from workbench.schemas.capacity import scaled_parts

Capacity = int | SplitCapacity | BankedCapacity | None


@dataclass(frozen=True, slots=True)
class LevelSlot:
    """One on-chip level position: its name, access width (bits), candidate capacities
    (bytes, SplitCapacity, BankedCapacity, or None: absent) and optional area (mm² per KB)."""

    name: str
    access_bits: int
    capacities: tuple[Capacity, ...]
    area_mm2_per_kb: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "capacities", tuple(self.capacities))
        if not self.capacities:
            raise WorkbenchError(f"level slot {self.name!r}: needs at least one candidate "
                                 "capacity")
        for cap in self.capacities:  # each candidate must make a valid Level
            if cap is not None:
                Level(self.name, cap, self.access_bits, None, None, self.area_mm2_per_kb)


@dataclass(frozen=True, slots=True)
class DesignSpace:
    """DRAM (`outer`, energy_pj given) and on-chip slots outermost first; mac_energy_pj per
    MAC; datapath: the MAC array every hierarchy of the grid feeds (None: one scalar MAC)."""

    outer: Level
    slots: tuple[LevelSlot, ...]
    mac_energy_pj: float = 0.0
    datapath: Datapath | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(self.slots))
        if not self.slots:
            raise WorkbenchError("design space: needs at least one on-chip level slot")
        if self.outer.energy_pj is None:
            raise WorkbenchError(f"design space: the outermost level {self.outer.name!r} "
                                 "needs energy_pj")

    def gen_hierarchies(self) -> Iterator[Hierarchy]:
        """Every hierarchy of the grid (see the module docstring), in product order."""
        for choice in itertools.product(*(s.capacities for s in self.slots)):
            levels = [Level(s.name, cap, s.access_bits, None, None, s.area_mm2_per_kb)
                      for s, cap in zip(self.slots, choice, strict=True) if cap is not None]
            totals = [lvl.total_bytes for lvl in levels]
            if not levels or any(a < b for a, b in zip(totals, totals[1:], strict=False)):
                continue
            yield Hierarchy((self.outer, *levels), name=describe(levels),
                            mac_energy_pj=self.mac_energy_pj, datapath=self.datapath)

    def size(self) -> int:
        """Hierarchies in the grid."""
        return sum(1 for _ in self.gen_hierarchies())

    def check_priced(self, size_energy: SizeEnergy | None) -> None:
        """Raise, before anything is priced, if `size_energy` cannot price some slot's
        memories (every on-chip level of the grid is priced from its size)."""
        for slot in self.slots:
            for cap in slot.capacities:
                if cap is None:
                    continue
                level = Level(slot.name, cap, slot.access_bits, None, None)
                for array in ("I", "W", "O"):
                    if level.bytes_for(array) <= 0:
                        continue
                    if size_energy is None:
                        raise WorkbenchError("co-design prices every on-chip level from its "
                                             "size: it needs a size-to-energy rule")
                    try:
                        size_energy(int(level.bytes_for(array)), slot.access_bits)
                    except WorkbenchError as exc:
                        raise WorkbenchError(
                            f"co-design prices every on-chip level from its size (its "
                            f"energy_pj is not kept): level {slot.name!r} at "
                            f"{slot.access_bits} bits cannot be priced: {exc}") from None


def scaled_capacity(cap: Capacity, size: int) -> int | SplitCapacity | BankedCapacity:
    """`size` bytes, split (or banked) in the proportions of `cap` when it is (`scaled_parts`:
    the parts sum to `size`, so levels of one grid size keep equal totals whatever their
    proportions; a part is 0 only when it was)."""
    if isinstance(cap, SplitCapacity):
        return SplitCapacity(*scaled_parts([cap.of(a) for a in ARRAYS], size))
    if isinstance(cap, BankedCapacity):
        sizes = scaled_parts([bytes_ for _, bytes_ in cap.banks], size)
        return BankedCapacity(tuple((arrays, s) for (arrays, _), s in
                                    zip(cap.banks, sizes, strict=True)))
    return size


def space_around(hierarchy: Hierarchy, sizes_bytes: Sequence[int],
                 ratio: tuple[int, int, int] | None = None) -> DesignSpace:
    """A grid keeping the hierarchy's levels (names, widths, areas, shared, or split or banked
    in the same proportions, or I:W:O in `ratio` when given: a level split from that ratio is then
    split as at its own size, not in its rounded parts' proportions) and its datapath, with
    each on-chip level's total taken from `sizes_bytes`."""
    if not sizes_bytes or min(sizes_bytes) < 1:
        raise WorkbenchError(f"co-design sizes must be positive byte counts, got "
                             f"{list(sizes_bytes)}")

    def split(cap: Capacity) -> Capacity:
        return SplitCapacity(*ratio) if ratio and isinstance(cap, SplitCapacity) else cap

    slots = tuple(LevelSlot(lvl.name, lvl.access_bits,
                            tuple(scaled_capacity(split(lvl.capacity_bytes), int(s))
                                  for s in sorted(set(sizes_bytes))), lvl.area_mm2_per_kb)
                  for lvl in hierarchy.on_chip)
    return DesignSpace(hierarchy.levels[0], slots, hierarchy.mac_energy_pj, hierarchy.datapath)


def capacity_text(cap: int | SplitCapacity | BankedCapacity) -> str:
    """'16 KB' or '512 B'; split I/W/O: '2/32/2 KB', or exact bytes when a part is not
    whole KB ('910/14,564/910 B'); banks: their sizes, then their arrays ('64/64 KB (I+O/W)')."""
    if isinstance(cap, SplitCapacity):
        parts, names = [cap.of(a) for a in ARRAYS], ""
    elif isinstance(cap, BankedCapacity):
        parts = [bytes_ for _, bytes_ in cap.banks]
        names = " (" + "/".join("+".join(arrays) for arrays, _ in cap.banks) + ")"
    else:
        parts, names = [cap], ""
    if all(p % 1024 == 0 for p in parts):
        return "/".join(f"{p // 1024}" for p in parts) + " KB" + names
    return "/".join(f"{p:,}" for p in parts) + " B" + names


def describe(levels: Sequence[Level]) -> str:
    """'L1 1024 KB | L2 2/32/2 KB': the on-chip capacities, outermost first."""
    return " | ".join(f"{lvl.name} {capacity_text(lvl.capacity_bytes)}" for lvl in levels
                      if lvl.capacity_bytes is not None)


def on_chip_bytes(hierarchy: Hierarchy) -> int:
    """Total on-chip capacity (bytes)."""
    return int(sum(lvl.total_bytes for lvl in hierarchy.on_chip))


def on_chip_area_mm2(hierarchy: Hierarchy) -> float | None:
    """Total on-chip memory area (mm²), None when a level has no area_mm2_per_kb."""
    areas = [lvl.area_mm2 for lvl in hierarchy.on_chip]
    return None if any(a is None for a in areas) else float(sum(areas))
