"""The one name of a local-memory size, and the old spellings still read.

A local-memory size is `memory_kb` (KiB) wherever a user reads or writes it: sweep grids,
JSON keys, CSV/parquet columns, report and notebook parameters, app keywords; on the command
line `--memory-kb`; the sizes a sweep tries, beside one such size, `sweep_memory_kb`. Internal
byte quantities keep `*_bytes`. The old spellings (`buffer_kb`, `local_mem_kb`, `sizes_kb`,
`buffer_sizes_kb`, `buffer_range_log2`, `--memory`, `--sizes-kb`) are read as the new one with
one `RenamedNotice` line naming both (docs/architecture.md, "Names"); an app keyword that
moved into the platform is read there with one such line naming where (`moved`)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

from workbench.errors import WorkbenchError

MEMORY_KB = "memory_kb"
MEMORY_KB_OPTION = "--memory-kb"
OLD_MEMORY_COLUMN = "local_mem_kb"  # the memory_kb column as older sweeps wrote their rows


class RenamedNotice(UserWarning):
    """An old spelling of a name, read as the new one (named once, on one line)."""


def notice(old: str, new: str, where: str = "") -> None:
    """Warn once, on one line, that `old` (in `where`) is read as `new`."""
    place = f"{where}: " if where else ""
    warnings.warn(f"{place}{old} is the old spelling of {new}; read as {new}", RenamedNotice,
                  stacklevel=3)


def moved(old: str, new: str, where: str = "") -> None:
    """Warn once, on one line, that the keyword `old` (in `where`) now lives elsewhere (`new`
    says where) and is read there."""
    place = f"{where}: " if where else ""
    warnings.warn(f"{place}{old} is the old way to set {new}; read as that", RenamedNotice,
                  stacklevel=3)


def renamed_keys(doc: Mapping[str, Any], renames: Mapping[str, str], where: str = ""
                 ) -> dict[str, Any]:
    """`doc` with each old key of `renames` (old → new) under its new name, one notice per old
    key found; a document giving both spellings of one name is refused (one line)."""
    for old, new in renames.items():
        if old in doc and new in doc:
            place = f"{where}: " if where else ""
            raise WorkbenchError(f"{place}{old} and {new} are two spellings of one name; "
                                 f"give {new} only")
        if old in doc:
            notice(old, new, where)
    return {renames.get(key, key): value for key, value in doc.items()}  # order kept


def old_keyword(obj: Any, old: str, new: str, value: Any, where: str) -> None:
    """In a frozen dataclass's `__post_init__`: a value given under the old keyword `old` (an
    InitVar, None when not given) becomes the field `new`, with one notice; refused beside a
    `new` other than its default."""
    if value is None:
        return
    spec = next(f for f in dataclasses.fields(obj) if f.name == new)
    default = spec.default if spec.default is not dataclasses.MISSING else spec.default_factory()
    given = {old: value} | ({new: getattr(obj, new)} if getattr(obj, new) != default else {})
    object.__setattr__(obj, new, renamed_keys(given, {old: new}, where)[new])


def renamed_columns(frame: Any, names: list[Any], where: str) -> tuple[Any, list[Any]]:
    """A results frame and column names with the old column `local_mem_kb` read as
    `memory_kb` (one notice if either uses it)."""
    old = OLD_MEMORY_COLUMN
    if old in frame.columns or old in names:
        notice(old, MEMORY_KB, where)
        frame = frame.rename(columns={old: MEMORY_KB})
        names = [MEMORY_KB if name == old else name for name in names]
    return frame, names
