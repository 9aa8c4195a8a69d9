"""The memory hierarchy a platform declares (`levels:`, `datapath:`, `mac_energy_pj`) as a
hierarchy document, and the rule tying its two outer levels to the platform's single-level
fields (stated in `workbench.platforms`); shipped hierarchy files (data/hierarchies/*.yaml).

Platforms are specs: this module reads and checks documents (through the platform schema's
`LevelsDoc`, one FileFormatError line naming the file, the field path and the rule) and never
builds `hierarchy.Hierarchy` objects; `hierarchy.hierarchy_from_dict` parses the documents
(`explore.hierarchy_plan.platform_hierarchy`), so there is one parser.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, UnknownNameError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files
from workbench.schemas.platform import (
    LEVEL_KEYS,
    capacity_total,
    scaled_parts,
    validate_level_keys,
)

# single-level field ← (level index, level field) it is a view of (see workbench.platforms)
LEVEL_RULES = {"ext_access_bytes": (0, "access_bits"), "ext_access_pj": (0, "energy_pj"),
               "bus_elems_per_cycle": (0, "bandwidth"), "local_mem_bytes": (1, "capacity"),
               "local_access_bytes": (1, "access_bits"), "local_access_pj": (1, "energy_pj"),
               "size_aware_energy": (1, "energy_pj")}


def level_fields(doc: dict[str, Any], where: str) -> dict[str, tuple[Any, str]]:
    """The single-level fields a validated hierarchy document defines: {field: (value,
    'levels[i].field')}; FileFormatError when levels[0] or levels[1] cannot be a platform's
    external and local memory."""
    out: dict[str, tuple[Any, str]] = {}
    for name, (index, key) in LEVEL_RULES.items():
        level, path = doc["levels"][index], f"levels[{index}].{key}"
        value = level.get(key)
        if key == "access_bits":
            if value % 8:
                raise FileFormatError(f"{where}: {path}: must be a whole number of bytes on a "
                                      f"platform ({name}), got {value!r}")
            out[name] = (value // 8, path)
        elif key == "capacity":
            out[name] = (capacity_total(value), path)
        elif name == "size_aware_energy":
            out[name] = (value is None, path)
        elif value is not None:
            out[name] = (value, path)
        elif name == "ext_access_pj":
            raise FileFormatError(f"{where}: {path}: the external memory needs a number on a "
                                  "platform (ext_access_pj), got None")
    clock = (doc.get("datapath") or {}).get("clock_mhz")
    if clock is not None:
        out["clock_mhz"] = (clock, "datapath.clock_mhz")
    unroll = (doc.get("datapath") or {}).get("unroll")
    if unroll:  # the MAC array: one step of Π u_d multiply-accumulates per cycle
        out["macs_per_cycle"] = (math.prod(unroll.values()),
                                 "the product of datapath.unroll (MACs per step)")
    return out


def levels_from_doc(doc: dict[str, Any], where: str, name: str) -> tuple[dict[str, Any], str]:
    """(the platform fields of `doc` with those its levels define filled in, the hierarchy
    document as canonical JSON named `name`); a field given with another value than its
    level's is refused (one line: `where`, the field, the rule)."""
    keys = {k: doc[k] for k in LEVEL_KEYS if k in doc}
    validate_level_keys(keys, where)
    fields = {k: v for k, v in doc.items() if k not in LEVEL_KEYS}
    for field, (value, source) in level_fields(keys, where).items():
        if field in fields and fields[field] != value:
            raise FileFormatError(f"{where}: {field}: must equal {source} ({value!r}) or be "
                                  f"left out, got {fields[field]!r}")
        fields[field] = value
    mac = keys.get("mac_energy_pj")
    if mac is not None and "macs_per_cycle" in fields:  # the engine's compute energy too
        core = mac * fields["macs_per_cycle"]
        given = fields.get("core_pj_per_cycle")
        if given is not None and not math.isclose(given, core, rel_tol=1e-9):
            raise FileFormatError(f"{where}: core_pj_per_cycle: must equal mac_energy_pj × "
                                  f"macs_per_cycle ({mac!r} × {fields['macs_per_cycle']!r} = "
                                  f"{core!r}) or be left out, got {given!r}")
        fields["core_pj_per_cycle"] = core
    return fields, json.dumps({"name": name, **keys}, sort_keys=True)


def resized(capacity: Any, total: int) -> Any:
    """`total` bytes, split (or banked) in the proportions of a per-array `capacity` {I, W, O}
    or {I+O, W} (`scaled_parts`: summing to `total`, a part never 0 unless it was)."""
    if not isinstance(capacity, dict):
        return total
    return dict(zip(capacity, scaled_parts(list(capacity.values()), total), strict=True))


def implied_doc(name: str) -> dict[str, Any]:
    """The hierarchy of a platform without `levels:`: DRAM and the local memory (every value
    the fields define is set by `stamped_doc`)."""
    return {"name": name, "levels": [{"name": "DRAM", "capacity": None, "access_bits": 8},
                                     {"name": "local", "capacity": 1, "access_bits": 8}]}


def stamped_doc(plat: Any, doc: dict[str, Any]) -> dict[str, Any]:
    """The hierarchy document with levels[0] and levels[1] set from the platform's fields
    (external memory: ext_access_bytes·8 bits, ext_access_pj, bandwidth bus_elems_per_cycle;
    local memory: local_mem_bytes, local_access_bytes·8 bits, local_access_pj or null with
    size_aware_energy), the datapath's clock clock_mhz and MAC energy `plat.mac_pj`."""
    dram, local, *inner = doc["levels"]
    dram = {**dram, "access_bits": 8 * plat.ext_access_bytes, "energy_pj": plat.ext_access_pj,
            "bandwidth": plat.bus_elems_per_cycle}
    local = {**local, "capacity": resized(local["capacity"], plat.local_mem_bytes),
             "access_bits": 8 * plat.local_access_bytes,
             "energy_pj": None if plat.size_aware_energy else plat.local_access_pj}
    out = {**doc, "levels": [dram, local, *inner], "mac_energy_pj": plat.mac_pj}
    if doc.get("datapath") is not None:
        out["datapath"] = {**doc["datapath"], "clock_mhz": plat.clock_mhz}
    return out


def list_hierarchies() -> list[str]:
    """Names of the shipped memory hierarchies (data/hierarchies/*.yaml)."""
    return [p.stem for p in data_files("hierarchies", "*.yaml")]


def hierarchy_path(name_or_path: str | Path) -> Path:
    """A hierarchy file, or a shipped hierarchy's by name (UnknownNameError: neither)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    shipped = data_file("hierarchies", f"{name_or_path}.yaml")
    if not shipped.exists():
        raise UnknownNameError(f"unknown hierarchy {str(name_or_path)!r}; shipped: "
                               + ", ".join(list_hierarchies()) + " (or a .yaml file)")
    return shipped


HIERARCHY_KEYS = ("name", *LEVEL_KEYS)  # a hierarchy file's fields


def read_hierarchy(name_or_path: str | Path) -> tuple[dict[str, Any], str]:
    """(the hierarchy document of a file or shipped name, the file's path): read, its keys
    checked (only `HIERARCHY_KEYS`; one FileFormatError line naming the file), not parsed
    (`hierarchy.hierarchy_from_dict` parses it; `check_hierarchy` validates it)."""
    path = hierarchy_path(name_or_path)
    doc = read_yaml(path, "hierarchy")
    where = f"hierarchy file {str(path)!r}"
    if not isinstance(doc, dict):
        raise FileFormatError(f"{where}: expected a mapping with a 'levels' list, got "
                              f"{type(doc).__name__}")
    unknown = sorted(set(map(str, doc)) - set(HIERARCHY_KEYS))
    if unknown:  # e.g. a platform file given as a hierarchy: its fields would override
        raise FileFormatError(f"{where}: unknown field(s) {unknown}; a hierarchy file has "
                              f"only: {', '.join(HIERARCHY_KEYS)}")
    return doc, str(path)


def check_hierarchy(name_or_path: str | Path) -> None:
    """Refuse a hierarchy file or name whose document is not a valid platform hierarchy (one
    FileFormatError line naming the file, the field path and the rule): a sweep checks its
    grid's hierarchies before it runs a case."""
    doc, path = read_hierarchy(name_or_path)
    validate_level_keys({k: v for k, v in doc.items() if k in LEVEL_KEYS},
                        f"hierarchy file {path!r}")
