"""What a sweep varies: the grid (from YAML or Python), its cases and their stable ids.

A case is one point of the cartesian product; its id is a hash of its settings, so the same
case has the same id in every run, on every machine, and a sweep directory can be resumed or
extended with new grid values without recomputing the cases it already holds.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import InitVar, dataclass, field, fields
from pathlib import Path
from typing import Any

from workbench import explore, platforms, resources, spelling
from workbench.errors import FileFormatError, WorkbenchError
from workbench.numbers import fmt_bytes
from workbench.schemas.base import message
from workbench.schemas.grid import validate_grid
from workbench.tiling import SCHEDULES

BOUNDS = ("worst", "weights", "data")  # the quantizer's bounds (workbench.quant.bounds)
OLD_KEYS = {"buffer_kb": spelling.MEMORY_KB}  # old spellings a grid is still read in
FIXED = "fixed"  # the number format of the quantizer's dynamic fixed point (`acc_bits` wide)


def names() -> dict[str, tuple[str, ...]]:
    """The names a grid may use, per key of `schemas.grid.NAMES`."""
    from workbench.quant.floats import FORMATS

    return {"schedules": tuple(SCHEDULES), "objectives": tuple(explore.OBJECTIVES),
            "fusion": tuple(explore.FUSION_MODES),
            "traffic_models": tuple(explore.TRAFFIC_MODELS), "bounds": BOUNDS,
            "hierarchy": tuple(platforms.list_hierarchies()),
            "number_formats": (FIXED, *FORMATS)}


def check_overrides(overrides: dict[str, list], origin: str, error: type[WorkbenchError]) -> None:
    """Refuse, in one line naming the value (`overrides.clock_mhz[1]`), an override that is
    no platform field or lies outside its field's type and physical range on its own, before
    any case runs (rules across fields are each case's)."""
    for key, values in overrides.items():
        if key not in platforms.FIELD_NAMES:
            raise error(message(origin, ("overrides", key), "unknown platform field; fields: "
                                + ", ".join(platforms.FIELD_NAMES)))
        for i, value in enumerate(values):
            rule = platforms.field_rule(key, value)
            if rule is not None:
                raise error(message(origin, ("overrides", key, i), rule))


@dataclass(frozen=True)
class Grid:
    """What a sweep varies. `overrides` maps platform fields to lists of values (crossed);
    a `simd_lanes` override also sets `macs_per_cycle` (one MAC per lane per cycle).
    `weights` maps networks to weight files; `data` maps networks to .npz files of
    calibration and test data (`calib_x`, `calib_y`, `test_x`, `test_y`; may also hold the
    weights). A network with weights gets its quantized accuracy per width (MNIST-shaped
    networks default to the shipped MNIST digits). `hierarchy` lists memory hierarchies
    (shipped names or .yaml files) that replace each platform's levels, one case each: the
    platform's external/local memory fields follow the hierarchy, then `memory_kb` (KiB) sizes
    its outermost on-chip level (the local memory). A platform with levels, or a case with a
    hierarchy, adds the hierarchy plan's columns to its row. `number_formats` ("fixed", fp16,
    bf16, fp8-e4m3, fp8-e5m2) gives one case per format: a float format sets the platform's
    `elem_bytes` to its size (traffic, memory and energy follow) and the accuracy is the whole
    network's in that format (`quant.floats`); "fixed" keeps the platform's `elem_bytes` and
    the fixed-point accuracy at `acc_bits`. `buffer_kb`, the old spelling of `memory_kb`, is
    read as it with one notice."""

    networks: list[str]
    platforms: list[str]
    batch: int | None = None
    memory_kb: list[float] = field(default_factory=lambda: [128])
    acc_bits: list[int] = field(default_factory=lambda: [16])
    schedules: list[str] = field(default_factory=lambda: list(SCHEDULES))
    overrides: dict[str, list] = field(default_factory=dict)
    weights: dict[str, str] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    bound: str = "data"
    traffic_models: list[str] = field(default_factory=list)
    number_formats: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=lambda: ["cycles"])
    fusion: list[str] = field(default_factory=lambda: ["auto"])
    hierarchy: list[str] = field(default_factory=list)
    reports: bool = False
    report_timeout_s: int = 600
    report_retries: int = 1
    buffer_kb: InitVar[list[float] | None] = None  # the old spelling of memory_kb

    def __post_init__(self, buffer_kb: list[float] | None) -> None:
        spelling.old_keyword(self, "buffer_kb", "memory_kb", buffer_kb, "grid")
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        validate_grid(doc, "grid", WorkbenchError, names())
        check_overrides(self.overrides, "grid", WorkbenchError)
        for hierarchy in self.hierarchy:  # a broken file fails the grid, before any case runs
            platforms.check_hierarchy(hierarchy)
        if self.number_formats and "elem_bytes" in self.overrides:
            raise WorkbenchError("grid: number_formats sets elem_bytes per case; do not also "
                                 "override elem_bytes")

    @classmethod
    def from_yaml(cls, path: str | Path) -> Grid:
        """A grid from a YAML file; every problem is one FileFormatError line naming the file,
        the field path (`memory_kb[1]`, `overrides.cores`) and the rule."""
        from workbench.layers.zoo import read_yaml

        origin = f"grid file {str(path)!r}"
        return cls.from_doc(read_yaml(Path(path), "grid"), origin)

    @classmethod
    def from_doc(cls, doc: Any, origin: str) -> Grid:
        """A grid from a document of grid keys (old spellings read with one notice each);
        every problem is one FileFormatError line naming `origin`."""
        if isinstance(doc, dict):
            try:
                doc = spelling.renamed_keys(doc, OLD_KEYS, origin)
            except WorkbenchError as exc:
                raise FileFormatError(str(exc)) from None
        validate_grid(doc, origin, FileFormatError, names())
        check_overrides(doc.get("overrides") or {}, origin, FileFormatError)
        try:
            return cls(**doc)
        except WorkbenchError as exc:  # not expected after the schema; kept one line
            raise FileFormatError(f"{origin}: {exc}") from None

    def axes(self) -> list[str]:
        """The result columns that vary over the grid (the axes a browser filters on)."""
        names = ["network", "platform", spelling.MEMORY_KB, "acc_bits", *sorted(self.overrides),
                 "objective", "fusion"]
        return (names + (["traffic_model"] if self.traffic_models else [])
                + (["hierarchy"] if self.hierarchy else [])
                + (["number_format"] if self.number_formats else []))


@dataclass(frozen=True)
class Case:
    network: str
    platform: str
    batch: int | None
    memory_bytes: int
    acc_bits: int
    overrides: tuple[tuple[str, Any], ...]
    schedules: tuple[str, ...]
    traffic_model: str | None = None
    objective: str = "cycles"
    fusion: str = "auto"
    hierarchy: str | None = None   # a hierarchy replacing the platform's levels
    number_format: str | None = None  # "fixed" or a float format (`Grid.number_formats`)

    @property
    def case_id(self) -> str:
        text = repr(self).replace(", number_format=None", "")  # ids without formats stay put
        text = text.replace(", hierarchy=None", "")  # ids without hierarchies stay put
        if self.objective == "cycles":  # the ids of sweeps ranked by cycles stay put
            text = text.replace(", objective='cycles'", "")
        if self.traffic_model is None:  # the ids of sweeps without traffic models stay put
            text = text.replace(", traffic_model=None", "")
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """One line naming the case's settings (for failure messages)."""
        model = f", {self.traffic_model} traffic" if self.traffic_model else ""
        model += f", hierarchy {self.hierarchy}" if self.hierarchy else ""
        model += f", {self.number_format}" if self.number_format else ""
        return (f"case {self.case_id} ({self.network} on {self.platform}, "
                f"{self.memory_bytes} B, {self.acc_bits}-bit, {dict(self.overrides)}{model})")


ROW_BYTES = 16 << 10  # memory one case takes in a run: its Case, result row and frame row


def case_count(grid: Grid) -> int:
    """Cases in the grid, counted without building them."""
    return math.prod(len(axis) for axis in (
        grid.networks, grid.platforms, grid.hierarchy or [None], grid.memory_kb, grid.acc_bits,
        *grid.overrides.values(), grid.traffic_models or [None], grid.objectives, grid.fusion,
        grid.number_formats or [None]))


def check_size(grid: Grid, what: str = "grid") -> int:
    """The case count, after refusing (one line, `resources.check`) a grid whose cases would
    take more memory than the budget in a run."""
    n = case_count(grid)
    resources.check(f"{what} of {n:,} cases ({fmt_bytes(ROW_BYTES)} each in a run)",
                    n * ROW_BYTES)
    return n


def iter_cases(grid: Grid) -> Iterator[Case]:
    """The cartesian product of the grid, lazily, in a stable order (networks outermost, so
    cases of one network sit together and share its candidate sets)."""
    names = sorted(grid.overrides)
    for net, plat, hierarchy, kb, bits in itertools.product(
            grid.networks, grid.platforms, grid.hierarchy or [None], grid.memory_kb,
            grid.acc_bits):
        for combo in itertools.product(*(grid.overrides[n] for n in names)):
            for model, objective, fusion, number in itertools.product(
                    grid.traffic_models or [None], grid.objectives, grid.fusion,
                    grid.number_formats or [None]):
                yield Case(net, plat, grid.batch, int(kb * 1024), bits,
                           tuple(zip(names, combo, strict=True)), tuple(grid.schedules), model,
                           objective, fusion, hierarchy, number)


def cases(grid: Grid) -> list[Case]:
    """Every case of the grid (`iter_cases`) as a list, once `check_size` lets it."""
    check_size(grid)
    return list(iter_cases(grid))
