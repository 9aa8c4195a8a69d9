"""Where the shipped data and notebooks live, and where caches go.

Data (the network zoo and ONNX corpus, platform presets, energy tables, weights) and the
notebooks ship inside the package: a wheel holds them as `workbench/data/<folder>` and
`workbench/notebooks` (pyproject.toml maps the repository's top-level data/ and notebooks/
there), found through `importlib.resources`. A source checkout or an editable install has no
such folders inside `workbench/`; there they are the checkout's data/ and notebooks/ beside
the package.

`WORKBENCH_DATA` (folders separated by `os.pathsep`) adds data folders searched before the
shipped one, for data only: never code, never notebooks (the report notebook always comes
from the installed package).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path


@functools.cache  # where the package lies does not change while it runs (0.2 ms a lookup)
def _shipped(name: str) -> Path:
    """The package's folder `name` (data or notebooks): inside the installed package if it is
    there (a wheel), else the source checkout's top-level folder (editable or in-tree use)."""
    packaged = resources.files("workbench").joinpath(name)
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / name


def shipped_data_dir() -> Path:
    """The data that ships with the package (folders networks, onnx, platforms, energy,
    weights); WORKBENCH_DATA does not change it."""
    return _shipped("data")


def data_dirs() -> list[Path]:
    """Data folders in search order: each WORKBENCH_DATA entry, then the shipped data."""
    extra = [Path(p) for p in os.environ.get("WORKBENCH_DATA", "").split(os.pathsep) if p]
    return [*extra, shipped_data_dir()]


def data_file(folder: str, name: str) -> Path:
    """`folder/name` in the first data folder that has it (else in the shipped data, where a
    caller's exists() check then fails)."""
    for base in data_dirs():
        if (base / folder / name).exists():
            return base / folder / name
    return shipped_data_dir() / folder / name


def data_files(folder: str, pattern: str) -> list[Path]:
    """The files matching `pattern` in `folder` of every data folder, sorted by name; a name in
    an earlier folder hides the same name in later ones."""
    found: dict[str, Path] = {}
    for base in data_dirs():
        for path in (base / folder).glob(pattern):
            found.setdefault(path.name, path)
    return [found[name] for name in sorted(found)]


def data_dir() -> Path:
    """The first data folder: the first WORKBENCH_DATA entry if set, else the shipped data.
    (Callers that should also see the shipped files search `data_dirs()`.)"""
    return data_dirs()[0]


def notebooks_dir() -> Path:
    """The notebooks of the installed package (never taken from WORKBENCH_DATA)."""
    return _shipped("notebooks")


def cache_dir() -> Path:
    """The user cache folder: $WORKBENCH_CACHE_DIR, else $XDG_CACHE_HOME/workbench, else
    ~/.cache/workbench (created on first write)."""
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "workbench"
