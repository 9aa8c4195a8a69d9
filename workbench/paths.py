"""Where the shipped data lives: the repository's data/ folder (override: WORKBENCH_DATA)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The data folder: $WORKBENCH_DATA if set, else data/ beside the package."""
    env = os.environ.get("WORKBENCH_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data"
