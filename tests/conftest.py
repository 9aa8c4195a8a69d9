"""Shared test helpers."""

from __future__ import annotations

import os
import tempfile

from hypothesis import settings

# candidate sets are cached on disk: the suite uses its own cache, never the user's
os.environ.setdefault("WORKBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="workbench-test-cache-"))

# "ci" (the default) replays a fixed set of examples so CI is deterministic; set
# HYPOTHESIS_PROFILE=dev to draw fresh random examples on every run while developing.
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def within_print(value: float, printed: str) -> bool:
    """True when `value` rounds to the number printed: within half a unit of its last digit."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-12
