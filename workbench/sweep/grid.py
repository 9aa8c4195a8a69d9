"""What a sweep varies: the grid (from YAML or Python), its cases and their stable ids.

A case is one point of the cartesian product; its id is a hash of its settings, so the same
case has the same id in every run, on every machine, and a sweep directory can be resumed or
extended with new grid values without recomputing the cases it already holds.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import explore
from workbench.errors import FileFormatError, WorkbenchError
from workbench.tiling import SCHEDULES

BOUNDS = ("worst", "weights", "data")  # the quantizer's bounds (workbench.quant.bounds)
LIST_FIELDS = ("networks", "platforms", "buffer_kb", "acc_bits", "schedules", "traffic_models",
               "objectives", "fusion")
MAP_FIELDS = ("overrides", "weights", "data")


def _check_list(name: str, value: Any, *, empty_ok: bool = False) -> None:
    if not isinstance(value, list) or (not value and not empty_ok):
        raise WorkbenchError(f"grid: {name!r} must be a {'' if empty_ok else 'non-empty '}list, "
                             f"got {value!r}")
    seen = [repr(v) for v in value]
    if len(set(seen)) != len(seen):
        raise WorkbenchError(f"grid: {name!r} lists a value twice: {value!r}")


@dataclass(frozen=True)
class Grid:
    """What a sweep varies. `overrides` maps platform fields to lists of values (crossed);
    a `simd_lanes` override also sets `macs_per_cycle` (one MAC per lane per cycle).
    `weights` maps networks to weight files; `data` maps networks to .npz files of
    calibration and test data (`calib_x`, `calib_y`, `test_x`, `test_y`; may also hold the
    weights). A network with weights gets its quantized accuracy per width (MNIST-shaped
    networks default to the shipped MNIST digits)."""

    networks: list[str]
    platforms: list[str]
    batch: int | None = None
    buffer_kb: list[float] = field(default_factory=lambda: [128])
    acc_bits: list[int] = field(default_factory=lambda: [16])
    schedules: list[str] = field(default_factory=lambda: list(SCHEDULES))
    overrides: dict[str, list] = field(default_factory=dict)
    weights: dict[str, str] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    bound: str = "data"
    traffic_models: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=lambda: ["cycles"])
    fusion: list[str] = field(default_factory=lambda: ["auto"])
    reports: bool = False
    report_timeout_s: int = 600
    report_retries: int = 1

    def __post_init__(self) -> None:
        for name in LIST_FIELDS:
            _check_list(name, getattr(self, name), empty_ok=name == "traffic_models")
        for name in MAP_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, dict):
                raise WorkbenchError(f"grid: {name!r} must be a mapping, got {value!r}")
        for key, values in self.overrides.items():
            _check_list(f"overrides.{key}", values)
        for name in ("weights", "data"):
            for net, path in getattr(self, name).items():
                if not isinstance(path, str) or not path:
                    raise WorkbenchError(f"grid: {name}.{net} must be a file name, got {path!r}")
        for kb in self.buffer_kb:
            if isinstance(kb, bool) or not isinstance(kb, int | float) or not math.isfinite(
                    kb) or kb <= 0:
                raise WorkbenchError(f"grid: buffer_kb values must be finite numbers > 0, "
                                     f"got {kb!r}")
        for bits in self.acc_bits:
            if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 64:
                raise WorkbenchError(f"grid: acc_bits values must be integers in 2..64, "
                                     f"got {bits!r}")
        if self.batch is not None and (isinstance(self.batch, bool)
                                       or not isinstance(self.batch, int) or self.batch < 1):
            raise WorkbenchError(f"grid: 'batch' must be a positive integer, got {self.batch!r}")
        for name in ("reports",):
            if not isinstance(getattr(self, name), bool):
                raise WorkbenchError(f"grid: {name!r} must be true or false, "
                                     f"got {getattr(self, name)!r}")
        for name, least in (("report_timeout_s", 1), ("report_retries", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise WorkbenchError(f"grid: {name!r} must be an integer >= {least}, "
                                     f"got {value!r}")
        if self.bound not in BOUNDS:
            raise WorkbenchError(f"grid: unknown bound {self.bound!r}; valid: "
                                 + ", ".join(BOUNDS))
        for objective in self.objectives:
            explore.check_objective(objective)
        if any(mode not in explore.FUSION_MODES for mode in self.fusion):
            raise WorkbenchError("grid: 'fusion' must be a non-empty list of "
                                 + ", ".join(explore.FUSION_MODES))
        for model in self.traffic_models:
            if model not in explore.TRAFFIC_MODELS:
                raise WorkbenchError(f"grid: unknown traffic model {model!r}; valid: "
                                     + ", ".join(explore.TRAFFIC_MODELS))
        for schedule in self.schedules:
            if schedule not in SCHEDULES:
                raise WorkbenchError(f"grid: unknown schedule {schedule!r}; valid: "
                                     + ", ".join(SCHEDULES))

    @classmethod
    def from_yaml(cls, path: str | Path) -> Grid:
        from workbench.layers.zoo import read_yaml

        doc = read_yaml(Path(path), "grid")
        if not isinstance(doc, dict):
            raise FileFormatError(f"grid file {str(path)!r}: expected a mapping")
        known = set(cls.__dataclass_fields__)
        unknown = set(doc) - known
        if unknown:
            raise FileFormatError(f"grid file {str(path)!r}: unknown key(s) {sorted(unknown)}; "
                                  "known: " + ", ".join(sorted(known)))
        for key in ("networks", "platforms"):
            if not isinstance(doc.get(key), list) or not doc[key]:
                raise FileFormatError(f"grid file {str(path)!r}: '{key}' must be a non-empty list")
        try:
            return cls(**doc)
        except WorkbenchError as exc:
            raise FileFormatError(f"grid file {str(path)!r}: {exc}") from None

    def axes(self) -> list[str]:
        """The result columns that vary over the grid (the axes a browser filters on)."""
        names = ["network", "platform", "local_mem_kb", "acc_bits", *sorted(self.overrides),
                 "objective", "fusion"]
        return names + (["traffic_model"] if self.traffic_models else [])


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

    @property
    def case_id(self) -> str:
        text = repr(self)
        if self.objective == "cycles":  # the ids of sweeps ranked by cycles stay put
            text = text.replace(", objective='cycles'", "")
        if self.traffic_model is None:  # the ids of sweeps without traffic models stay put
            text = text.replace(", traffic_model=None", "")
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """One line naming the case's settings (for failure messages)."""
        model = f", {self.traffic_model} traffic" if self.traffic_model else ""
        return (f"case {self.case_id} ({self.network} on {self.platform}, "
                f"{self.memory_bytes} B, {self.acc_bits}-bit, {dict(self.overrides)}{model})")


def cases(grid: Grid) -> list[Case]:
    """The cartesian product of the grid, in a stable order (networks outermost, so cases of
    one network sit together and share its candidate sets)."""
    names = sorted(grid.overrides)
    combos = list(itertools.product(*(grid.overrides[n] for n in names))) or [()]
    return [Case(net, plat, grid.batch, int(kb * 1024), bits, tuple(zip(names, combo,
                                                                          strict=True)),
                 tuple(grid.schedules), model, objective, fusion)
            for net in grid.networks for plat in grid.platforms for kb in grid.buffer_kb
            for bits in grid.acc_bits for combo in combos
            for model in (grid.traffic_models or [None]) for objective in grid.objectives
            for fusion in grid.fusion]
