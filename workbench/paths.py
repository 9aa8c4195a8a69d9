"""Where the shipped data lives (data/, override WORKBENCH_DATA) and where caches go."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The data folder: $WORKBENCH_DATA if set, else data/ beside the package."""
    env = os.environ.get("WORKBENCH_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data"


def cache_dir() -> Path:
    """The user cache folder: $WORKBENCH_CACHE_DIR, else $XDG_CACHE_HOME/workbench, else
    ~/.cache/workbench (created on first write)."""
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "workbench"
