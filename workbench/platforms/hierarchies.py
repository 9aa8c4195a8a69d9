"""Hierarchy files (data/hierarchies/*.yaml, or a user's): a memory hierarchy with an
optional MAC array, to put on a platform (`files.with_levels`) or to plan on alone. Read and
checked here with the platform's own level schema (`parts.MemoryLevel`); parsed into the
hierarchy model's objects by `hierarchy.hierarchy_from_dict`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, UnknownNameError
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files
from workbench.platforms.parts import HierarchyDoc, level_rules
from workbench.schemas.base import fail, validate

HIERARCHY_KEYS = tuple(HierarchyDoc.model_fields)  # a hierarchy file's fields


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


def validate_hierarchy(doc: Any, origin: str) -> HierarchyDoc:
    """A hierarchy document, validated: each field, and the rules across levels (one
    FileFormatError line naming `origin`, the field path and the rule)."""
    model = validate(HierarchyDoc, doc, origin, FileFormatError)
    broken = level_rules(model.levels)
    if broken is not None:
        fail(origin, *broken, FileFormatError)
    return model


def check_hierarchy(name_or_path: str | Path) -> None:
    """Refuse a hierarchy file or name whose document is not a valid hierarchy: a sweep
    checks its grid's hierarchies before it runs a case."""
    doc, path = read_hierarchy(name_or_path)
    validate_hierarchy(doc, f"hierarchy file {path!r}")
