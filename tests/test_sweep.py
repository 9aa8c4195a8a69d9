"""Sweeps: grid files, a real process kill and resume, failing cases and reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from workbench import sweep
from workbench.errors import FileFormatError, WorkbenchError

GRID = """networks: [lenet5, cifar10_quick]
platforms: [idsp, nve]
batch: 4
memory_kb: [4, 16, 64, 256]
acc_bits: [16]
overrides: {simd_lanes: [8, 16, 32]}
"""


def _sweep(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "workbench.cli", "sweep", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_killed_sweep_resumes_without_losing_or_duplicating_rows(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    total = len(sweep.cases(sweep.Grid.from_yaml(grid)))
    proc = _sweep([str(grid), "--out", str(tmp_path / "killed")])
    rows = tmp_path / "killed" / "rows"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(rows.glob("*.json"))) < 5:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # a real kill, mid-run
    proc.wait()
    done = len(list(rows.glob("*.json")))
    assert 0 < done < total
    resumed = _sweep([str(grid), "--out", str(tmp_path / "killed"), "--json"])
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    whole = _sweep([str(grid), "--out", str(tmp_path / "whole"), "--json", "--jobs", "2"])
    whole.communicate(timeout=600)
    a = pd.read_parquet(tmp_path / "killed" / "results.parquet")
    b = pd.read_parquet(tmp_path / "whole" / "results.parquet")
    assert len(a) == total and a["case_id"].is_unique
    pd.testing.assert_frame_equal(a, b)


def test_failing_case_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=2, memory_kb=[0.1, 64])
    frame = sweep.run(grid, tmp_path)
    assert len(frame) == 1 and frame["memory_kb"].iloc[0] == 64
    (error,) = frame.attrs["failures"]
    assert "too small for any tile" in error and "\n" not in error
    assert json.loads((tmp_path / "failures.json").read_text()) == [error]


def test_grid_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("networks: [lenet5]\nplatforms: [idsp]\nbufer_kb: [4]\n")
    with pytest.raises(FileFormatError, match=r"bad\.yaml': bufer_kb: unknown key; known: "):
        sweep.Grid.from_yaml(bad)
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", str(bad), "--out",
                          str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "Traceback" not in run.stderr


def test_per_case_reports_with_a_failure(tmp_path: Path) -> None:
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=2, memory_kb=[64],
                      reports=True, report_timeout_s=300, report_retries=0)
    sweep.run(grid, tmp_path)
    failures = sweep.run_reports(grid, tmp_path, jobs=2)
    assert failures == {}
    (page,) = (tmp_path / "reports").glob("*.html")
    assert "lenet5" in page.read_text()
    bad = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=2, memory_kb=[0.1],
                     reports=True, report_retries=1)
    failures = sweep.run_reports(bad, tmp_path / "bad", jobs=1)
    (message,) = failures.values()
    assert "too small for any tile" in message


def test_sweep_switches_traffic_models(tmp_path: Path) -> None:
    """A grid's traffic_models give one tidy row per model and memory size; the general model
    is never above Peemen, the cache model or the seed 000 schedules, nor below the
    compulsory traffic; only seed 000 rows carry the engine's cycles and energy."""
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1, memory_kb=[4, 64],
                      acc_bits=[16], traffic_models=["seed000", "dataflow", "peemen", "cache"])
    frame = sweep.run(grid, tmp_path)
    assert len(frame) == 8 and frame["case_id"].is_unique and not frame.attrs["failures"]
    at = frame.set_index(["memory_kb", "traffic_model"])
    for kb in (4, 64):
        mb = at.loc[kb, "traffic_mb"]
        assert mb["dataflow"] <= mb["peemen"] <= mb["cache"]
        assert at.loc[(kb, "dataflow"), "compulsory_mb"] <= mb["dataflow"] <= mb["seed000"]
    assert at["cycles"].notna().groupby(level="traffic_model").all().to_dict() == {
        "cache": False, "dataflow": False, "peemen": False, "seed000": True}
    with pytest.raises(WorkbenchError, match=r"traffic_models\[0\]: unknown traffic model "
                                             "'oracle'"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], traffic_models=["oracle"])


def test_sweep_objectives_from_the_grid_and_the_command_line(tmp_path: Path) -> None:
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=8, memory_kb=[128],
                      objectives=["cycles", "accesses"], fusion=["off", "auto"])
    frame = sweep.run(grid, tmp_path / "a")
    fused = frame[frame["fusion"] == "auto"].set_index("objective")
    by = frame[frame["fusion"] == "off"].set_index("objective")  # seed 000 fuses nothing
    assert fused.loc["accesses", "ext_accesses"] < by.loc["accesses", "ext_accesses"]
    assert by.loc["accesses", "conv_fc_energy_uj"] == pytest.approx(1608, rel=0.02)  # t. 7.10
    assert by.loc["accesses", "energy_uj"] > by.loc["accesses", "conv_fc_energy_uj"]
    assert by.loc["accesses", "ext_accesses"] <= by.loc["cycles", "ext_accesses"]
    assert by.loc["cycles", "cycles"] <= by.loc["accesses", "cycles"]
    (tmp_path / "g.yaml").write_text("networks: [lenet5]\nplatforms: [idsp]\nbatch: 8\n")
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "g.yaml"),
                          "--out", str(tmp_path / "b"), "--objective", "edp", "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["rows"] == 1
    assert list(pd.read_parquet(tmp_path / "b" / "results.parquet")["objective"]) == ["edp"]
    with pytest.raises(WorkbenchError, match="unknown objective 'fast'"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], objectives=["fast"])
    with pytest.raises(WorkbenchError, match=r"fusion\[0\]: unknown fusion mode 'always'; "
                                             "valid: auto, off, force"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], fusion=["always"])


def test_sweeping_cores_changes_the_answer(tmp_path: Path) -> None:
    """`cores` used to be stored and ignored; each core count now gives its own plan."""
    grid = sweep.Grid(networks=["cifar10_quick"], platforms=["shave"], memory_kb=[128],
                      overrides={"cores": [1, 4, 12], "dma_broadcast": [False, True]},
                      objectives=["cycles", "accesses"])
    frame = sweep.run(grid)
    least = frame[frame["objective"] == "accesses"].set_index(["cores", "dma_broadcast"])
    frame = frame[frame["objective"] == "cycles"].set_index(["cores", "dma_broadcast"])
    cycles = frame["cycles"]
    assert cycles[(1, False)] > cycles[(4, False)] > cycles[(12, False)]
    assert frame.loc[(1, False), "most_cores_used"] == 1
    assert frame.loc[(12, False), "most_cores_used"] > 4
    assert cycles[(1, True)] == cycles[(1, False)]  # one core: nothing to broadcast
    # a broadcast never adds traffic, so the least traffic with it is no more than without
    assert least.loc[(12, True), "ext_accesses"] <= least.loc[(12, False), "ext_accesses"]
