"""Shared test helpers."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import tempfile

import pytest
from budget import profile
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


# Hypothesis profiles (tests/budget.py scales each test's own count the same way): "ci", the
# default and `make test`, replays a fixed set of examples with no example database, so every
# run draws the same examples; "check" (`make check`) a tenth of them; "deep" (`make test-deep`)
# ten times as many, fresh ones; "dev" fresh examples at the CI count.
_COMMON = {"deadline": None, "print_blob": True, "database": None}
settings.register_profile("ci", derandomize=True, max_examples=100, **_COMMON)
settings.register_profile("check", derandomize=True, max_examples=10, **_COMMON)
settings.register_profile("deep", max_examples=1000, **_COMMON)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.load_profile(profile())

# Tiers (README, "Contributing"). Every test is `unit` unless it is one of these; `property`
# and `oracle` may go together.
#   property: a hypothesis test (@given);
#   oracle:   compares against a brute force (its code calls one: `brute…`, `every_blocking…`,
#             `_s_blockings`, `_r_plus_blockings`);
#   e2e:      whole programs: the CLI, papermill, Dask clusters, a built wheel, fuzzed files
#             (the files below, and any test whose code starts a process: `subprocess.`);
#   browser:  Chromium through Playwright (the files below).
BROWSER = {"test_browser", "test_browser_sweep"}
E2E = {"test_bounded", "test_onnx_external", "test_sweep_patience", "test_cli", "test_cli_args",
       "test_notebooks", "test_readme_commands", "test_wheel", "test_sweep", "test_sweep_dask",
       "test_sweep_faults", "test_onnx_corpus", "test_fuzz_yaml", "test_import_fuzz",
       "test_fuzz_harness", "test_fuzz_extremes", "test_hierarchy_prefetch", "test_emit",
       "test_emit_cli", "test_emit_halide", "test_emit_network"}
ORACLE = re.compile(r"brute|every_blocking|_s_blockings\(|_r_plus_blockings\(")
PROCESS = re.compile(r"subprocess\.")


# The longest files (each over ~25 s on 2 cores), longest first: xdist (`--dist loadfile`)
# hands files out in collection order, so these start first and none of them starts last,
# leaving one worker idle while the other finishes it. The rest keep their order.
LONGEST_FIRST = ("test_hierarchy_search", "test_notebooks", "test_cli", "test_readme_commands",
                 "test_hierarchy_prefetch", "test_onnx_corpus", "test_browser",
                 "test_sweep_dask", "test_hierarchy_interrupt", "test_hierarchy_mirror",
                 "test_quant_search", "test_sweep", "test_browser_sweep",
                 "test_hierarchy_alone")


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rsplit(".", 1)[-1],
                                         len(rank)))
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        function = getattr(item, "function", None)
        marks = set()
        if module in BROWSER:
            marks.add("browser")
        elif module in E2E or (function is not None and PROCESS.search(_source(function))):
            marks.add("e2e")
        if function is not None and getattr(function, "is_hypothesis_test", False):
            marks.add("property")
        if function is not None and ORACLE.search(_source(function)):
            marks.add("oracle")
        for mark in sorted(marks) or ["unit"]:
            item.add_marker(getattr(pytest.mark, mark))


def _source(function) -> str:
    """The test's own code (a hypothesis test's inner function)."""
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", function)
    try:
        return inspect.getsource(inner)
    except (OSError, TypeError):
        return ""


def within_print(value: float, printed: str) -> bool:
    """True when `value` rounds to the number printed: within half a unit of its last digit."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-12
