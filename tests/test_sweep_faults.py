"""Sweep directory faults: a corrupted or empty row file, a read-only finished sweep, a grid
changed between runs, and a full disk; each ends in a clean message and a correct resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench import sweep
from workbench.errors import WorkbenchError
from workbench.sweep import store as store_module

GRID = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1, memory_kb=[16, 32, 64, 128])


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return sweep.run(GRID)


def test_corrupt_and_empty_row_files_are_moved_aside_and_recomputed(
        tmp_path: Path, reference: pd.DataFrame) -> None:
    sweep.run(GRID, tmp_path)
    rows = sorted((tmp_path / "rows").glob("*.json"))
    rows[0].write_text('{"case_id": "abc", "cyc')  # cut off mid-write
    rows[1].write_text("")
    rows[2].write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    frame = sweep.run(GRID, tmp_path)
    moved = [n for n in frame.attrs["notes"] if "could not be read" in n]
    assert len(moved) == 3 and all("\n" not in n for n in moved)
    assert sorted(p.name for p in (tmp_path / "corrupt").iterdir()) == sorted(
        p.name for p in rows[:3])
    assert frame.attrs["tasks"] > 0  # the three cases ran again
    pd.testing.assert_frame_equal(frame, reference)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "results.parquet"), reference)


def test_read_only_finished_sweep(tmp_path: Path, reference: pd.DataFrame,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The test may run as root, which writes anywhere: the store's own probe is what says
    read-only, so it is the probe that is made to fail here."""
    sweep.run(GRID, tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    monkeypatch.setattr(store_module.SweepStore, "writable", lambda self: False)
    frame = sweep.run(GRID, tmp_path)
    pd.testing.assert_frame_equal(frame, reference)
    assert any("read-only" in n for n in frame.attrs["notes"])
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before  # nothing written
    bigger = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1, memory_kb=[16, 256])
    with pytest.raises(WorkbenchError, match=r"is read-only and 1 case\(s\) of this grid are "
                                             "pending"):
        sweep.run(bigger, tmp_path)


def test_a_changed_grid_never_mixes_into_the_results(tmp_path: Path,
                                                     reference: pd.DataFrame) -> None:
    sweep.run(GRID, tmp_path)
    other = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1, memory_kb=[64, 256])
    frame = sweep.run(other, tmp_path)
    assert list(frame["memory_kb"]) == [64, 256]  # only this grid's cases
    assert frame.attrs["tasks"] == 1  # 64 KB was already there
    assert any("another grid" in n for n in frame.attrs["notes"])
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 2
    again = sweep.run(GRID, tmp_path)  # back to the first grid: nothing to compute
    assert again.attrs["tasks"] == 0
    pd.testing.assert_frame_equal(again, reference)


def test_a_full_disk_leaves_no_partial_file_and_resumes(tmp_path: Path, reference: pd.DataFrame,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path.write_text
    calls = {"n": 0}

    def full_after_two(self: Path, text: str, *a, **kw):
        if self.parent.name == "rows":
            calls["n"] += 1
            if calls["n"] > 2:
                real(self, text[: len(text) // 2])  # a partial write, then the error
                raise OSError(28, "No space left on device")
        return real(self, text, *a, **kw)

    monkeypatch.setattr(Path, "write_text", full_after_two)
    with pytest.raises(WorkbenchError, match="No space left on device"):
        sweep.run(GRID, tmp_path)
    monkeypatch.setattr(Path, "write_text", real)
    assert not list((tmp_path / "rows").glob(".*"))  # no partial temporary file survives
    assert len(list((tmp_path / "rows").glob("*.json"))) == 2
    assert not (tmp_path / ".lock").exists()
    pd.testing.assert_frame_equal(sweep.run(GRID, tmp_path), reference)


def test_sweep_output_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text(json.dumps({"networks": ["lenet5"], "platforms": ["idsp"]}))
    (tmp_path / "out").write_text("not a folder")
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "g.yaml"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "is a file, not a directory" in run.stderr


@pytest.mark.parametrize("text, rule", [
    ("networks: lenet5\nplatforms: [idsp]\n", "networks: must be a list, got 'lenet5'"),
    ("networks: [lenet5]\nplatforms: [idsp]\nmemory_kb: [.nan]\n",
     "memory_kb.0.: must be a finite number (no NaN or infinity), got nan"),
    ("networks: [lenet5]\nplatforms: [idsp]\nmemory_kb: []\n", "memory_kb: must not be empty"),
    ("networks: [lenet5, lenet5]\nplatforms: [idsp]\n", "networks: lists a value twice"),
    ("networks: [lenet5]\nplatforms: [idsp]\nbound: best\n", "bound: unknown bound 'best'"),
    ("networks: [lenet5]\nplatforms: [idsp]\nweights: [a.npz]\n", "weights: must be a mapping"),
    ("networks: [lenet5]\nplatforms: [idsp]\nreports: 'yes'\n", "reports: must be true or"),
    ("networks: [lenet5]\nplatforms: [idsp]\noverrides: {cores: []}\n",
     "overrides.cores: must not be empty"),
    ("networks: [lenet5]\nplatforms: [idsp]\nacc_bits: [16.5]\n",
     "acc_bits.0.: must be an integer in 2..64, got 16.5"),
])
def test_bad_grid_values_are_one_line(tmp_path: Path, text: str, rule: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(WorkbenchError, match=rule.replace("(", r"\(").replace(")", r"\)")):
        sweep.Grid.from_yaml(path)
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", str(path), "--out",
                          str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr
