"""The extremes profile of the fuzzer (issue 58): the shipped network, grid, hierarchy and
platform files with 1–3 of their numbers set to an extreme — 0, the smallest subnormal
5e-324, 1e308, 10**100, 2**63, or a negative one. Each file must load (and, for a platform,
plan a small layer with every number finite) or fail with one WorkbenchError line within
10 s (`test_fuzz_harness`): no traceback, no time-out, no NaN or infinity. `make fuzz` runs
2,000+ files per format."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import strategies as st
from test_fuzz_harness import check, fuzz_count, generate
from test_fuzz_yaml import GRIDS, NETWORKS, _get, _paths, _set

ROOT = Path(__file__).resolve().parents[1]
HIERARCHIES = sorted((ROOT / "data" / "hierarchies").glob("*.yaml"))
PLATFORMS = sorted((ROOT / "data" / "platforms").glob("*.yaml"))
EXTREMES = [0, 0.0, 5e-324, -5e-324, 1e308, -1e308, 10**100, -(10**100), 2**63, -1, -0.5]


@functools.cache
def _docs(kind: str) -> tuple[Any, ...]:
    files = {"network": NETWORKS, "hierarchy": HIERARCHIES, "platform": PLATFORMS}
    docs = GRIDS if kind == "grid" else [yaml.safe_load(p.read_text()) for p in files[kind]]
    return tuple(d for d in docs if any(type(_get(d, p)) in (int, float) for p in _paths(d)))


@st.composite
def extreme(draw: st.DrawFn, kind: str) -> bytes:
    """A shipped document of `kind` with 1–3 of its numbers set to an extreme."""
    doc = copy.deepcopy(draw(st.sampled_from(_docs(kind))))
    numbers = [p for p in _paths(doc) if type(_get(doc, p)) in (int, float)]
    for _ in range(draw(st.integers(1, 3))):
        doc = _set(doc, draw(st.sampled_from(numbers)), draw(st.sampled_from(EXTREMES)))
    return yaml.safe_dump(doc, sort_keys=False).encode()


def _run(kind: str, count: int, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blobs = generate(extreme(kind), fuzz_count(count), fixed_seed=58)
    items = []
    for index, data in enumerate(blobs):
        path = tmp_path / f"{kind}{index}.yaml"
        path.write_bytes(data)
        items.append((kind, path))
    counts = check(f"{kind} YAML, numbers at their extremes", items, tmp_path, capsys)
    assert counts["error"] > len(blobs) // 4  # most extremes are refused, by their field


def test_extreme_mutated_network_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _run("network", 150, tmp_path, capsys)


def test_extreme_mutated_grid_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _run("grid", 80, tmp_path, capsys)


def test_extreme_mutated_hierarchy_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _run("hierarchy", 80, tmp_path, capsys)


def test_extreme_mutated_platform_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _run("platform", 80, tmp_path, capsys)
