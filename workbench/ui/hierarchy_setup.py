"""What the memory-hierarchy app starts from (`HierarchySetup`); its hardware is a platform (a
preset name, a platform file or a `Platform`), and the app's old hardware keywords are read
onto it (`app_platform`). Before the app took a platform
it had keywords of its own for its levels, widths, energies and MAC array; each is still read,
as the platform field it stands for, with one notice line naming that field
(`spelling.moved`). A keyword whose value cannot be put on the platform is one WorkbenchError
line naming it and the rule."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import Any

from workbench import spelling
from workbench.errors import WorkbenchError
from workbench.platforms import Platform, load_platform
from workbench.platforms.files import build
from workbench.platforms.parts import capacity_total
from workbench.ui.hierarchy_controls import (
    DATAPATHS,
    SEED001_MM2_PER_KB,
    WIDTHS_BITS,
    split_parts,
)
from workbench.viz.hierarchy_plots import MAX_LEVELS

KB = 1024
SPLIT_RATIO = (1, 16, 1)  # the old `split` default: DianNao's 2/32/2 KB proportions
# each old keyword, and the platform field it sets now
MOVED = {
    "memory_kb": "the platform's on-chip level capacities (platform=, the panel's level sliders)",
    "sizes_kb": "the platform's on-chip level capacities (platform=, the panel's level sliders)",
    "split": "the platform's level capacities split {I, W, O}",
    "ratio": "the platform's level capacities split {I, W, O}",
    "width_bits": "the platform's on-chip levels' access_bits",
    "elem_bytes": "the platform's datapath in_bits and w_bits",
    "psum_bytes": "the platform's datapath acc_bits",
    "mac_pj": "the platform's energy mac_pj",
    "dram_pj_per_16b": "the platform's DRAM level (access_bits 16, energy_pj)",
    "datapath": "the platform's datapath unroll",
}


def app_platform(platform: str | Path | Platform, old: Mapping[str, Any],
                 where: str = "hierarchy_view") -> str | Path | Platform:
    """`platform` with the old keywords given in `old` (None: not given) set on it (none
    given: `platform` as it is, a preset name staying one)."""
    given = {key: value for key, value in old.items() if value is not None}
    if "sizes_kb" in given and "memory_kb" in given:
        raise WorkbenchError(f"{where}: sizes_kb and memory_kb are two old spellings of the "
                             "level sizes; give the platform's levels only")
    if not given:
        return platform
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    for key in given:
        spelling.moved(key, MOVED[key], where)
    if "ratio" in given and not given.get("split"):
        raise WorkbenchError(f"{where}: ratio splits the on-chip levels only with split=True; "
                             "give the platform's levels {I, W, O} capacities instead")
    doc = plat.model_dump()
    levels = [level.doc() for level in plat.memory.levels]
    sizes = given.get("memory_kb", given.get("sizes_kb"))
    if sizes is not None:
        levels = [levels[0], *_sized(levels[1:], sizes)]
    if "width_bits" in given:
        if given["width_bits"] not in WIDTHS_BITS:
            raise WorkbenchError(f"width_bits must be one of {WIDTHS_BITS}, got "
                                 f"{given['width_bits']!r}")
        levels = [levels[0], *({**lvl, "access_bits": given["width_bits"]} for lvl in levels[1:])]
    if "split" in given:
        ratio = tuple(given.get("ratio", SPLIT_RATIO))
        levels = [levels[0], *(_split(lvl, ratio if given["split"] else None)
                               for lvl in levels[1:])]
    if "dram_pj_per_16b" in given:
        levels[0] = {**levels[0], "access_bits": 16, "energy_pj": given["dram_pj_per_16b"]}
    doc["memory"]["levels"] = levels
    _precision_and_mac(doc, given)
    return build(doc, f"{where}: platform {plat.name!r} with {', '.join(given)}")


def _sized(on_chip: list[dict[str, Any]], sizes_kb: Any) -> list[dict[str, Any]]:
    """The on-chip levels with these totals (KB, outermost first): levels past the platform's
    copy its innermost one as L<n>; a split level keeps its proportions."""
    sizes = tuple(sizes_kb)
    if not 1 <= len(sizes) <= MAX_LEVELS - 1:
        raise WorkbenchError(f"memory_kb: 1 to {MAX_LEVELS - 1} on-chip levels, got "
                             f"{list(sizes)}")
    out = []
    for i, kb in enumerate(sizes):
        size = float(kb) * KB if isinstance(kb, int | float) and not isinstance(kb, bool) else -1
        if not (math.isfinite(size) and size >= 1 and size.is_integer()):
            raise WorkbenchError(f"memory_kb: each size must be a whole number of bytes (in "
                                 f"KB: 0.5 for 512 B), got {kb!r}")
        base = on_chip[i] if i < len(on_chip) else {**on_chip[-1], "name": f"L{i + 1}"}
        out.append(_resized(base, int(size)))
    return out


def _resized(level: dict[str, Any], size: int) -> dict[str, Any]:
    cap = level["capacity"]
    if isinstance(cap, dict):
        parts = split_parts(size, tuple(cap.get(a, 0) for a in "IWO")) \
            if set(cap) == set("IWO") else None
        return {**level, "capacity": size if parts is None else
                {"I": parts.I, "W": parts.W, "O": parts.O}}
    return {**level, "capacity": size}


def _split(level: dict[str, Any], ratio: tuple[int, ...] | None) -> dict[str, Any]:
    """The level split I:W:O in `ratio` (None: shared), its total kept."""
    total = int(capacity_total(level["capacity"]))
    if ratio is None:
        return {**level, "capacity": total}
    if len(ratio) != 3 or not all(isinstance(r, int) and r > 0 for r in ratio):
        raise WorkbenchError(f"ratio: three positive whole numbers I:W:O, got {list(ratio)}")
    parts = split_parts(total, ratio)
    return {**level, "capacity": {"I": parts.I, "W": parts.W, "O": parts.O}}


def _precision_and_mac(doc: dict[str, Any], given: Mapping[str, Any]) -> None:
    """Element widths, the MAC energy and the MAC array of the old keywords, set in `doc`."""
    datapath = doc["datapath"]
    if "elem_bytes" in given:
        datapath["in_bits"] = datapath["w_bits"] = 8 * given["elem_bytes"]
        doc["memory"]["elem_bytes"] = given["elem_bytes"]
    if "psum_bytes" in given:
        datapath["acc_bits"] = 8 * given["psum_bytes"]
    if "mac_pj" in given:
        doc["energy"] = {"mac_pj": given["mac_pj"], "core_pj_per_cycle": None}
    if "datapath" in given:
        if given["datapath"] not in DATAPATHS:
            raise WorkbenchError(f"datapath must be one of {list(DATAPATHS)}, got "
                                 f"{given['datapath']!r}")
        array = DATAPATHS[given["datapath"]]
        datapath["unroll"] = None if array is None else dict(array.unroll)
        datapath["macs_per_cycle"] = 1 if array is None else math.prod(array.unroll.values())


@dataclass(frozen=True)
class HierarchySetup:
    """What the memory-hierarchy app starts from: the network (conv layers, and fc with
    `include_fc`); the platform (a preset name, a platform file or a Platform) whose memory
    hierarchy and MAC array are edited in the platform panel; the capacity budget (KB) and the
    co-design grid of sizes (KB); the budget's axis ("capacity" or "area": mm² at
    `mm2_per_kb` on levels that declare no area); whether to search ahead (`prefetch`) and in
    the background. The old hardware keywords (memory_kb, sizes_kb, split, ratio, width_bits,
    elem_bytes, psum_bytes, mac_pj, dram_pj_per_16b, datapath) are read onto the platform
    with a notice (`app_platform`)."""

    network: str = "lenet5"
    platform: str | Path | Platform = "seed001_3level"
    budget_kb: float = 64
    grid_kb: tuple[float, ...] = (1, 4, 16, 64, 256)
    include_fc: bool = False
    axis: str = "capacity"
    area_budget_mm2: float = 0.5
    mm2_per_kb: float = SEED001_MM2_PER_KB
    prefetch: bool = False
    background: bool = False
    memory_kb: InitVar[tuple[float, ...] | None] = None
    sizes_kb: InitVar[tuple[float, ...] | None] = None
    split: InitVar[bool | None] = None
    ratio: InitVar[tuple[int, int, int] | None] = None
    width_bits: InitVar[int | None] = None
    elem_bytes: InitVar[int | None] = None
    psum_bytes: InitVar[int | None] = None
    mac_pj: InitVar[float | None] = None
    dram_pj_per_16b: InitVar[float | None] = None
    datapath: InitVar[str | None] = None

    def __post_init__(self, *old: Any) -> None:
        names = [f.name for f in dataclasses.fields(self)]
        given = dict(zip([n for n in type(self).__dataclass_fields__ if n not in names], old,
                         strict=True))
        object.__setattr__(self, "platform", app_platform(self.platform, given))
