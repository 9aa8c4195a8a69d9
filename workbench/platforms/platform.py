"""`Platform`: one accelerator, composed of the parts of `workbench.platforms.parts` (memory,
datapath, DMA, cluster, energy) and a clock.

The single-level names the seed 000 model reads (`local_mem_bytes`, `bus_elems_per_cycle`,
`cores`, ...) are read-only properties derived from the parts (`FLAT`, `LEVEL_RULES`): levels[0]
is the external memory (ext_access_bytes = access_bits / 8, ext_access_pj = energy_pj,
bus_elems_per_cycle = bandwidth) and levels[1], the outermost on-chip level, the local memory
(local_mem_bytes = its total capacity, local_access_bytes = access_bits / 8, local_access_pj =
energy_pj, size_aware_energy when energy_pj is null: seed 001 table 3 by size). `replace`
takes those names too: an override moves the part it is a view of (a split local level keeps
its proportions).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from workbench.errors import WorkbenchError
from workbench.platforms.energy import energy_table, memory_energy_pj_per_16b
from workbench.platforms.parts import (
    Cluster,
    Datapath,
    Dma,
    Energy,
    Memory,
    MemoryLevel,
    level_rules,
    number,
    scaled_parts,
)
from workbench.resources import cut
from workbench.schemas.base import StrictModel, Text, is_int, message, rule_of

PARTS = ("memory", "datapath", "dma", "cluster", "energy")
# single-level name → (part, field) it is
FLAT = {"elem_bytes": ("memory", "elem_bytes"), "double_buffer": ("memory", "double_buffer"),
        "dma_setup_cycles": ("dma", "setup_cycles"), "dma_channels": ("dma", "channels"),
        "dma_broadcast": ("dma", "broadcast"), "cores": ("cluster", "cores"),
        "static_pj_per_cycle": ("cluster", "static_pj_per_cycle"),
        **{name: ("datapath", name) for name in (
            "macs_per_cycle", "register_file_bytes", "simd_lanes", "acc_bits", "overflow",
            "in_bits", "w_bits", "simd_style", "vector_load_bytes", "mac_slots", "load_ports",
            "store_ports", "alu_slots", "load_latency", "mac_latency",
            "loop_overhead_cycles")}}
# single-level name → (level index, level field) it is a view of
LEVEL_RULES = {"ext_access_bytes": (0, "access_bits"), "ext_access_pj": (0, "energy_pj"),
               "bus_elems_per_cycle": (0, "bandwidth"), "local_mem_bytes": (1, "capacity"),
               "local_access_bytes": (1, "access_bits"), "local_access_pj": (1, "energy_pj"),
               "size_aware_energy": (1, "energy_pj")}
# every single-level name, in the order the old flat platform declared them
FIELD_NAMES = (
    "name", "clock_mhz", "bus_elems_per_cycle", "macs_per_cycle", "elem_bytes",
    "dma_setup_cycles", "local_mem_bytes", "register_file_bytes", "double_buffer",
    "simd_lanes", "acc_bits", "overflow", "in_bits", "w_bits", "cores", "dma_channels",
    "dma_broadcast", "core_pj_per_cycle", "local_access_pj", "local_access_bytes",
    "ext_access_pj", "ext_access_bytes", "size_aware_energy", "simd_style",
    "vector_load_bytes", "mac_slots", "load_ports", "store_ports", "alu_slots", "load_latency",
    "mac_latency", "loop_overhead_cycles", "static_pj_per_cycle", "title", "source")


# part path → the single-level name it is (how an override's error names the field)
FLAT_PATHS: dict[tuple, tuple] = {
    **{(part, field): (name,) for name, (part, field) in FLAT.items()},
    **{("memory", "levels", i, field): (name,) for name, (i, field) in LEVEL_RULES.items()
       if name != "size_aware_energy"},
    ("energy", "core_pj_per_cycle"): ("core_pj_per_cycle",)}


def flat_type(name: str) -> type:
    """The Python type of a single-level name's values (int, float, bool or str)."""
    if name in FLAT:
        part, field = FLAT[name]
        annotation = Platform.model_fields[part].annotation.model_fields[field].annotation
        return annotation if annotation in (int, float, bool, str) else float
    kinds = {"local_mem_bytes": int, "local_access_bytes": int, "ext_access_bytes": int,
             "size_aware_energy": bool, "clock_mhz": float}
    return kinds.get(name, str if name in ("name", "title", "source") else float)


def field_rule(name: str, value: Any) -> str | None:
    """The rule a value of the single-level name `name` breaks on its own (an unknown name,
    its type or its physical range; rules across fields are the platform's), else None: what
    a sweep grid's `overrides` are checked with before any case runs."""
    if name not in FIELD_NAMES:
        return "unknown platform field; fields: " + ", ".join(FIELD_NAMES)
    if name in ("name", "title", "source", "size_aware_energy"):
        return None if isinstance(value, bool if name == "size_aware_energy" else str) \
            else f"must be {'true or false' if name == 'size_aware_energy' else 'a text'}"
    if name in FLAT:
        part, key = FLAT[name]
        info = Platform.model_fields[part].annotation.model_fields[key]
    elif name in ("ext_access_bytes", "local_access_bytes"):  # a level's access_bits / 8
        return None if is_int(value) and 1 <= value <= 8192 else \
            f"must be a whole number of bytes in 1..8,192, got {cut(value)}"
    elif name in LEVEL_RULES:
        info = MemoryLevel.model_fields[LEVEL_RULES[name][1]]
    else:
        info = (Platform.model_fields if name == "clock_mhz"
                else Energy.model_fields)[name]
    try:
        kind = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
        TypeAdapter(kind, config=StrictModel.model_config).validate_python(value)
    except ValidationError as exc:
        return rule_of(exc.errors(include_url=False)[0])
    return None


def renamed(loc: tuple, renames: dict[tuple, tuple]) -> tuple:
    """`loc` with its longest prefix in `renames` replaced (a part path written the way the
    user wrote it: a flat name, or a file's own key)."""
    for prefix in sorted(renames, key=len, reverse=True):
        if loc[:len(prefix)] == prefix:
            return (*renames[prefix], *loc[len(prefix):])
    return loc


def problem(exc: ValidationError) -> tuple[tuple, str, int]:
    """(field path, rule, number of further problems) of a platform's ValidationError; a rule
    across parts is placed at the field it names."""
    errors = exc.errors(include_url=False)
    first = min(errors, key=lambda e: e["type"] not in ("extra_forbidden", "invalid_key"))
    loc = tuple(first["loc"])
    if first["type"] == "cross_rule":
        loc = (*loc, *first["ctx"]["path"])
    return loc, rule_of(first), len(errors) - 1


def _cross(path: tuple, text: str) -> PydanticCustomError:
    """A rule across parts, at the field path `path` (below the platform)."""
    return PydanticCustomError("cross_rule", text, {"path": path})


class Platform(StrictModel):
    """One accelerator: a clock (MHz) and its parts. See the module docstring for the
    single-level names derived from them."""

    name: Text
    clock_mhz: Annotated[float, number(1e-3, 1e5, "MHz: 1 kHz to 100 GHz")]
    memory: Memory
    datapath: Datapath
    dma: Dma = Dma()
    cluster: Cluster = Cluster()
    energy: Energy = Energy()
    title: str = ""
    source: str = ""

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, doc: Any) -> Any:
        """macs_per_cycle from the datapath's unroll when left out."""
        if isinstance(doc, dict) and isinstance(doc.get("datapath"), dict):
            path = doc["datapath"]
            unroll = path.get("unroll")
            if isinstance(unroll, tuple):  # a part as dumped: ((dimension, lanes), ...)
                unroll = dict(unroll) if all(len(p) == 2 for p in unroll) else None
            if "macs_per_cycle" not in path and isinstance(unroll, dict) and unroll \
                    and all(isinstance(v, int) for v in unroll.values()):
                doc = {**doc, "datapath": {**path, "macs_per_cycle": math.prod(unroll.values())}}
        return doc

    @model_validator(mode="after")
    def _rules(self) -> Platform:
        """The rules across parts (one line each, naming the field)."""
        levels = self.memory.levels
        broken = level_rules(levels)
        if broken is not None:
            raise _cross(("memory", *broken[0]), broken[1])
        for i in (0, 1):
            if levels[i].access_bits % 8:
                raise _cross(("memory", "levels", i, "access_bits"), "must be a whole number "
                             f"of bytes on a platform, got {levels[i].access_bits!r}")
        if levels[0].energy_pj is None:
            raise _cross(("memory", "levels", 0, "energy_pj"), "the external memory needs a "
                         "number (pJ per access), got None")
        if levels[0].bandwidth is None:
            raise _cross(("memory", "levels", 0, "bandwidth"), "the external memory (the bus "
                         "shared by the cores) needs a number (elements per cycle), got None")
        if levels[1].energy_pj is None:
            widths = [w // 8 for w in energy_table().widths_bits]
            if self.local_access_bytes not in widths:
                raise _cross(("memory", "levels", 1, "access_bits"), "an energy from size "
                             f"(null energy_pj) needs an access of {widths} bytes (seed 001 "
                             f"table 3 widths), got {self.local_access_bytes!r} bytes")
        unroll = self.datapath.unroll
        if unroll and self.datapath.macs_per_cycle != math.prod(v for _, v in unroll):
            raise _cross(("datapath", "macs_per_cycle"), "must equal the product of "
                         f"datapath.unroll ({math.prod(v for _, v in unroll)}) or be left "
                         f"out, got {self.datapath.macs_per_cycle!r}")
        core, mac = self.energy.core_pj_per_cycle, self.energy.mac_pj
        if core is not None and mac is not None and \
                not math.isclose(core, mac * self.macs_per_cycle, rel_tol=1e-9):
            raise _cross(("energy", "core_pj_per_cycle"), "must equal the MAC energy × "
                         f"macs_per_cycle ({mac!r} × {self.macs_per_cycle!r}) or be left "
                         f"out, got {core!r}")
        return self

    # -- the single-level names (read-only) ------------------------------------------------
    @property
    def local_mem_bytes(self) -> int:
        """Bytes of the local memory (levels[1], all its banks)."""
        return int(self.memory.levels[1].total_bytes)

    @property
    def local_access_bytes(self) -> int:
        return self.memory.levels[1].access_bits // 8

    @property
    def local_access_pj(self) -> float:
        """pJ per local access as given (0 when the energy comes from size)."""
        energy = self.memory.levels[1].energy_pj
        return 0.0 if energy is None else energy

    @property
    def size_aware_energy(self) -> bool:
        """True when the local memory's access energy comes from its size (table 3)."""
        return self.memory.levels[1].energy_pj is None

    @property
    def ext_access_bytes(self) -> int:
        return self.memory.levels[0].access_bits // 8

    @property
    def ext_access_pj(self) -> float:
        return float(self.memory.levels[0].energy_pj)

    @property
    def bus_elems_per_cycle(self) -> float:
        """Elements per cycle of the external memory's bus, shared by the cores."""
        return float(self.memory.levels[0].bandwidth)

    @property
    def core_pj_per_cycle(self) -> float:
        """Compute energy per core cycle (pJ): as given, or mac_pj × macs_per_cycle."""
        core, mac = self.energy.core_pj_per_cycle, self.energy.mac_pj
        if core is not None:
            return core
        return 0.0 if mac is None else mac * self.macs_per_cycle

    @property
    def mac_pj(self) -> float:
        """Energy of one MAC (pJ): as given, or core_pj_per_cycle / macs_per_cycle."""
        mac = self.energy.mac_pj
        return self.core_pj_per_cycle / self.macs_per_cycle if mac is None else mac

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
        """True when the memory or datapath says more than the single-level model reads (more
        than DRAM + one local memory, banks, a MAC array's unroll or a MAC energy), so the
        hierarchy model has something of its own to add."""
        local = self.memory.levels[1]
        return (len(self.memory.levels) > 2 or isinstance(local.capacity, tuple)
                or self.datapath.unroll is not None or self.energy.mac_pj is not None)

    @property
    def hierarchy_doc(self) -> dict[str, Any]:
        """The memory hierarchy as a hierarchy document (what `hierarchy.hierarchy_from_dict`
        reads): the levels, the MAC energy `mac_pj` and, when the datapath declares its
        unroll, the MAC array at clock_mhz."""
        doc: dict[str, Any] = {"name": self.memory.name or self.name,
                               "levels": [level.doc() for level in self.memory.levels],
                               "mac_energy_pj": self.mac_pj}
        if self.datapath.unroll is not None:
            doc["datapath"] = {"unroll": dict(self.datapath.unroll),
                               "clock_mhz": self.clock_mhz}
        return doc

    def replace(self, **overrides: Any) -> Platform:
        """A copy with some single-level names or parts changed (validated like a new
        platform; one WorkbenchError line naming the override). The local memory's energy is
        one value: local_access_pj sets it, size_aware_energy=True derives it from size
        (winning when both are given), size_aware_energy=False needs a local_access_pj."""
        unknown = set(overrides) - set(FIELD_NAMES) - set(PARTS)
        if unknown:
            raise WorkbenchError(f"platform {self.name!r}: unknown field(s) {sorted(unknown)}; "
                                 "fields: " + ", ".join(FIELD_NAMES))
        doc = self.model_dump()
        changed = {k: v for k, v in overrides.items() if k in PARTS or getattr(self, k) != v}
        aware = overrides.get("size_aware_energy")
        if aware is not None:  # given, it decides even when unchanged (see `set_flat`)
            if not isinstance(aware, bool):
                raise WorkbenchError(f"platform {self.name!r}: size_aware_energy: must be true "
                                     f"or false, got {aware!r}")
            changed["size_aware_energy"] = aware
            if not aware and self.size_aware_energy and "local_access_pj" not in overrides:
                raise WorkbenchError(f"platform {self.name!r}: size_aware_energy=False needs "
                                     "local_access_pj, the fixed pJ per local access")
        for key in sorted(changed, key=lambda k: k == "size_aware_energy"):  # it last
            set_flat(doc, key, changed[key])
        try:
            return Platform.model_validate(doc)
        except ValidationError as exc:
            loc, rule, more = problem(exc)
            loc = renamed(loc, FLAT_PATHS)
            shown = ", ".join(f"{k}={v!r}" for k, v in changed.items())
            raise WorkbenchError(message(f"platform {self.name!r} with {shown} (an override, "
                                         "e.g. --memory-kb or a sweep's memory_kb)", loc, rule,
                                         more)) from None


def set_flat(doc: dict[str, Any], key: str, value: Any) -> None:
    """Set a single-level name (or a whole part) in a platform document in part form."""
    levels = doc["memory"]["levels"]
    if key in FLAT:
        part, field = FLAT[key]
        doc[part][field] = value
    elif key == "local_mem_bytes":
        capacity = levels[1]["capacity"]
        if isinstance(capacity, tuple | dict) and isinstance(value, int) and value > 0:
            banks = dict(capacity)
            value = dict(zip(banks, scaled_parts(list(banks.values()), value), strict=True))
        levels[1]["capacity"] = value
    elif key in ("local_access_bytes", "ext_access_bytes"):
        whole = isinstance(value, int) and not isinstance(value, bool)
        levels[key.startswith("local")]["access_bits"] = 8 * value if whole else value
    elif key == "size_aware_energy":  # true: from size; false: the local_access_pj given
        if value:
            levels[1]["energy_pj"] = None
    elif key == "core_pj_per_cycle":
        doc["energy"] = {"core_pj_per_cycle": value, "mac_pj": None}
    elif key in LEVEL_RULES:
        index, field = LEVEL_RULES[key]
        levels[index][field] = value
    else:
        doc[key] = value


def _flat_property(name: str, part: str, field: str) -> property:
    def get(self: Platform) -> Any:
        return getattr(getattr(self, part), field)
    get.__doc__ = f"{part}.{field} (read-only; `replace({name}=...)` changes it)."
    return property(get)


for _name, (_part, _field) in FLAT.items():  # the direct single-level names
    setattr(Platform, _name, _flat_property(_name, _part, _field))
