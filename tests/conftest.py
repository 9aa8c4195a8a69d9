"""Shared test helpers."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import settings

# candidate sets are cached on disk: the suite uses its own cache, never the user's, and
# removes it when the session ends (hundreds of MB; a CI machine's /tmp may persist)
_OWN_CACHE = None if "WORKBENCH_CACHE_DIR" in os.environ else \
    tempfile.mkdtemp(prefix="workbench-test-cache-")
if _OWN_CACHE is not None:
    os.environ["WORKBENCH_CACHE_DIR"] = _OWN_CACHE


def pytest_sessionfinish(session, exitstatus) -> None:
    # under pytest-xdist the workers inherit the controller's cache; only the controller (no
    # `workerinput`) removes it, once every worker is done
    if _OWN_CACHE is not None and not hasattr(session.config, "workerinput"):
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


# "ci" (the default) replays a fixed set of examples so CI is deterministic; set
# HYPOTHESIS_PROFILE=dev to draw fresh random examples on every run while developing.
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def within_print(value: float, printed: str) -> bool:
    """True when `value` rounds to the number printed: within half a unit of its last digit."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-12
