"""Platform files: presets (data/platforms/*.yaml) and users' files, in part form (memory,
datapath, dma, cluster, energy; `docs/platforms.md`) or in the old flat form (the single-level
names, optionally `levels:`, `datapath: {unroll, clock_mhz}` and `mac_energy_pj`), which is
read into parts with a one-line notice. Errors are one FileFormatError line naming the file,
the field as the file spells it, and the rule."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.errors import FileFormatError, UnknownNameError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files
from workbench.platforms.platform import (
    FIELD_NAMES,
    FLAT,
    LEVEL_RULES,
    PARTS,
    Platform,
    problem,
    renamed,
)
from workbench.schemas.base import is_int, message

LEGACY_LEVEL_KEYS = ("levels", "datapath", "mac_energy_pj")
TOP = ("name", "title", "source", "clock_mhz")
REQUIRED = ("name", "clock_mhz", "bus_elems_per_cycle", "macs_per_cycle", "elem_bytes",
            "dma_setup_cycles", "local_mem_bytes", "register_file_bytes")
IMPLIED = {(0, "access_bits"): "ext_access_bytes", (0, "energy_pj"): "ext_access_pj",
           (0, "bandwidth"): "bus_elems_per_cycle", (1, "capacity"): "local_mem_bytes",
           (1, "access_bits"): "local_access_bytes", (1, "energy_pj"): "local_access_pj"}


class FlatFieldsNotice(UserWarning):
    """A platform file in the old flat spelling (read, and named once)."""


def build(doc: Any, where: str, renames: dict[tuple, tuple] | None = None) -> Platform:
    """A Platform from a document in part form; FileFormatError naming `where`, the field
    (as `renames` maps part paths back to the file's spelling) and the rule."""
    try:
        return Platform.model_validate(doc)
    except ValidationError as exc:
        loc, rule, more = problem(exc)
        raise FileFormatError(message(where, renamed(loc, renames or {}), rule, more)) from None


def _bytes_field(doc: dict[str, Any], name: str, where: str) -> int:
    value = doc.get(name, 1)
    if not is_int(value) or not 1 <= value <= 8192:
        raise FileFormatError(f"{where}: {name}: must be a whole number in 1..8,192 (bytes), "
                              f"got {value!r}")
    return value


def _aware(doc: dict[str, Any], where: str) -> bool:
    value = doc.get("size_aware_energy", False)
    if not isinstance(value, bool):
        raise FileFormatError(f"{where}: size_aware_energy: must be true or false, got "
                              f"{value!r}")
    return value


def _implied_levels(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """DRAM + the local memory of a flat document."""
    return [{"name": "DRAM", "capacity": None,
             "access_bits": 8 * _bytes_field(doc, "ext_access_bytes", where),
             "energy_pj": doc.get("ext_access_pj", 0.0),
             "bandwidth": doc.get("bus_elems_per_cycle")},
            {"name": "local", "capacity": doc.get("local_mem_bytes"),
             "access_bits": 8 * _bytes_field(doc, "local_access_bytes", where),
             "energy_pj": None if _aware(doc, where) else doc.get("local_access_pj", 0.0)}]


def _declared_levels(doc: dict[str, Any], where: str) -> list[Any]:
    """The file's `levels:`, with the single-level names it also gives filled in where a
    level leaves them out, and refused where they differ."""
    raw = doc["levels"]
    if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(x, dict) for x in raw[:2]):
        return raw  # the schema names the problem
    levels = [dict(x) if isinstance(x, dict) else x for x in raw]
    for name, (i, field) in LEVEL_RULES.items():
        if name not in doc:
            continue
        value, have = doc[name], levels[i].get(field)
        if field == "access_bits":
            value = 8 * _bytes_field(doc, name, where)
            if is_int(have) and have != value:
                raise FileFormatError(f"{where}: {name}: must equal levels[{i}].access_bits "
                                      f"/ 8 ({have / 8:g}) or be left out, got {doc[name]!r}")
        elif name == "size_aware_energy":
            value, have = _aware(doc, where), levels[i].get("energy_pj") is None
        elif field == "capacity":
            have = levels[i].get("capacity")
            have = sum(have.values()) if isinstance(have, dict) else have
        elif name == "local_access_pj" and have is None:
            raise FileFormatError(f"{where}: local_access_pj: levels[1].energy_pj is null (the "
                                  "energy comes from its size): leave local_access_pj out")
        if have is None and name not in ("local_mem_bytes", "size_aware_energy"):
            levels[i][field] = value
        elif have != value:
            raise FileFormatError(f"{where}: {name}: must equal levels[{i}].{field} ({have!r}) "
                                  f"or be left out, got {doc[name]!r}")
    return levels


def part_form(doc: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[tuple, tuple]]:
    """(the document in part form, part path → the file's spelling) of a flat document."""
    missing = [k for k in REQUIRED if k not in doc and not (
        "levels" in doc and k in ("bus_elems_per_cycle", "local_mem_bytes"))
        and not (k == "macs_per_cycle" and (doc.get("datapath") or {}).get("unroll"))
        and not (k == "clock_mhz" and (doc.get("datapath") or {}).get("clock_mhz"))]
    if missing:
        raise FileFormatError(f"{where}: missing platform field(s) {missing}")
    out: dict[str, Any] = {k: doc[k] for k in TOP if k in doc}
    parts: dict[str, dict[str, Any]] = {p: {} for p in PARTS}
    renames: dict[tuple, tuple] = {}
    for name, (part, field) in FLAT.items():
        renames[(part, field)] = (name,)
        if name in doc:
            parts[part][field] = doc[name]
    for name, field in (("core_pj_per_cycle", "core_pj_per_cycle"), ("mac_energy_pj", "mac_pj")):
        renames[("energy", field)] = (name,)
        if name in doc:
            parts["energy"][field] = doc[name]
    datapath = doc.get("datapath")
    if datapath is not None:
        if not isinstance(datapath, dict) or set(datapath) - {"unroll", "clock_mhz"}:
            raise FileFormatError(f"{where}: datapath: must be a mapping of unroll and "
                                  f"clock_mhz, got {datapath!r}")
        parts["datapath"]["unroll"] = datapath.get("unroll") or {}
        renames[("datapath", "unroll")] = ("datapath", "unroll")
        clock = datapath.get("clock_mhz")
        if clock is not None:
            if "clock_mhz" in doc and doc["clock_mhz"] != clock:
                raise FileFormatError(f"{where}: clock_mhz: must equal datapath.clock_mhz "
                                      f"({clock!r}) or be left out, got {doc['clock_mhz']!r}")
            out["clock_mhz"] = clock
            renames[("clock_mhz",)] = ("datapath", "clock_mhz")
    if "levels" in doc:
        parts["memory"]["levels"] = _declared_levels(doc, where)
        renames[("memory", "levels")] = ("levels",)
    else:
        parts["memory"]["levels"] = _implied_levels(doc, where)
        renames.update({("memory", "levels", i, f): (name,) for (i, f), name in IMPLIED.items()})
    return {**out, **parts}, renames


def platform_from_dict(doc: Any, origin: str) -> Platform:
    """A Platform from a parsed platform document (part or flat form); `origin` names the
    file in errors and in the one-line notice a flat file gets."""
    where = f"platform file {origin!r}"
    if not isinstance(doc, dict):
        raise FileFormatError(f"{origin}: expected a mapping of platform fields")
    flat = sorted(k for k in doc if k in FIELD_NAMES and k not in TOP
                  or k in ("levels", "mac_energy_pj"))
    parts = sorted(k for k in doc if k in PARTS and k != "datapath")
    if flat and parts:
        raise FileFormatError(f"{where}: mixes parts ({', '.join(parts)}) with the old flat "
                              f"fields ({', '.join(flat[:3])}{', ...' if flat[3:] else ''}): "
                              "write each value once, in its part")
    known = set(FIELD_NAMES) | set(LEGACY_LEVEL_KEYS) if flat else set(TOP) | set(PARTS)
    unknown = sorted(map(str, set(doc) - known))
    if unknown:
        raise FileFormatError(f"{origin}: unknown platform field(s) {unknown}; fields: "
                              + ", ".join(sorted(known)))
    if not flat:
        return build(doc, where)
    parts, renames = part_form(doc, where)
    plat = build(parts, where, renames)
    warnings.warn(f"{where}: the flat fields ({', '.join(flat[:3])}{', ...' if flat[3:] else ''}) "
                  "are the old spelling, read as parts; write memory, datapath, dma, cluster "
                  "and energy (docs/platforms.md)", FlatFieldsNotice, stacklevel=2)
    return plat


def from_fields(**fields: Any) -> Platform:
    """A Platform from its single-level names (the flat spelling, e.g. `cores=2`), with no
    notice: the API's way to write a platform in a few keywords."""
    parts, renames = part_form(fields, "platform")
    return build(parts, f"platform {fields.get('name')!r}", renames)


def list_platforms() -> list[str]:
    """Names of the platform presets of every data folder (`paths.data_dirs`)."""
    return [p.stem for p in data_files("platforms", "*.yaml")]


def load_platform(name_or_path: str | Path, **overrides: Any) -> Platform:
    """A preset by name, or a platform YAML file, with single-level overrides."""
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


def with_levels(plat: Platform, doc: dict[str, Any], origin: str) -> Platform:
    """The platform with the hierarchy document `doc` (a hierarchy file's {name?, levels,
    datapath?, mac_energy_pj?}) as its memory: its levels (DRAM's bandwidth, the bus, taken
    from the platform where the file leaves it out), MAC array and MAC energy. Errors: one
    FileFormatError line naming `origin`."""
    levels = doc.get("levels")
    if isinstance(levels, list) and levels and isinstance(levels[0], dict):
        dram = plat.memory.levels[0]
        if levels[0].get("bandwidth") is None:  # the platform's bus
            levels = [{**levels[0], "bandwidth": dram.bandwidth}, *levels[1:]]
    part = plat.model_dump()
    part["memory"] = {**part["memory"], "levels": levels, "name": doc.get("name") or plat.name}
    datapath = doc.get("datapath")
    if isinstance(datapath, dict):
        unroll = datapath.get("unroll") or {}
        part["datapath"] = {**part["datapath"], "unroll": unroll}
        if unroll and all(is_int(v) for v in unroll.values()):
            part["datapath"].pop("macs_per_cycle")
        if datapath.get("clock_mhz") is not None:
            part["clock_mhz"] = datapath["clock_mhz"]
    if doc.get("mac_energy_pj") is not None:
        part["energy"] = {"core_pj_per_cycle": None, "mac_pj": doc["mac_energy_pj"]}
    return build(part, origin, {("memory", "levels"): ("levels",),
                                ("memory", "name"): ("name",)})
