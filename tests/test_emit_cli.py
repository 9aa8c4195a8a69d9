"""`workbench emit`: the programs it writes build with their Makefiles and run; --run prints
the program's measured counts (checked here against tiling.trace_cores on the same mapping)
and the output check; bad input and a missing compiler end in one line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import layers
from workbench.emit import plan_mappings, trace_counts
from workbench.platforms import load_platform

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli", "emit", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_run_prints_measured_counts_equal_to_the_trace(tmp_path: Path) -> None:
    out = run("lenet5", "--cores", "2", "--layer", "conv2", "--out", str(tmp_path), "--run",
              "--wide")
    assert out.returncode == 0, out.stderr
    assert "model bit-exact, physical bit-exact" in out.stdout
    net = layers.load_network("lenet5")
    (m,) = [m for m in plan_mappings(net, load_platform("idsp").replace(cores=2))
            if m.layer.name == "conv2"]
    assert m.cores == 2
    rows = re.findall(r"^\s*(in|w|out)\s+(model|physical)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)"
                      r"\s+([\d,]+)\s*$", out.stdout, re.M)
    assert len(rows) == 6
    for array, mode, measured, _, transfers, _ in rows:
        want = trace_counts(m, mode)
        assert int(measured.replace(",", "")) == sum(
            v[0] for (a, _), v in want.items() if a == array)
        assert int(transfers.replace(",", "")) == sum(
            v[1] for (a, _), v in want.items() if a == array)


def test_written_programs_build_with_their_makefiles(tmp_path: Path) -> None:
    out = run("lenet5", "--batch", "2", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    for folder in ("conv1", "conv2", "fc3", "fc4", "network"):
        assert (tmp_path / folder / "Makefile").exists()
        made = subprocess.run(["make", "-C", str(tmp_path / folder)], capture_output=True,
                              text=True, check=False)
        assert made.returncode == 0, made.stderr
        assert "warning" not in made.stderr
    assert (tmp_path / "network" / "weights" / "fc3.w.bin").stat().st_size == 3136 * 512 * 4


def test_network_run_on_digits(tmp_path: Path) -> None:
    out = run("lenet5", "--batch", "5", "--out", str(tmp_path), "--run", "--images", "20",
              "--counts", "model")
    assert out.returncode == 0, out.stderr
    assert "output codes bit-exact with quant.infer" in out.stdout
    assert "counts of every layer equal the trace's" in out.stdout


def test_errors_are_one_line(tmp_path: Path) -> None:
    out = run("lenet5", "--layer", "pool1", "--out", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "not a conv/fc layer" in out.stderr
    out = run("lenet5", "--platform", "seed001_3level", "--out", str(tmp_path))
    assert out.returncode == 2 and "memory levels" in out.stderr
    out = run("lenet5", "--run", "--images", "7", "--out", str(tmp_path), "--layer", "fc4")
    assert out.returncode == 2 and "without --layer" in out.stderr
    out = run("lenet5", "--batch", "5", "--run", "--images", "7", "--out", str(tmp_path))
    assert out.returncode == 2 and "multiple of the batch" in out.stderr
    assert out.stderr.strip().count("\n") == 0
    empty = tmp_path / "bin"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    out = run("lenet5", "--layer", "fc4", "--run", "--out", str(tmp_path / "x"), env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == ("workbench emit: error: no C compiler: emit --run needs "
                                  "`cc` (gcc) on PATH")


def test_json_document(tmp_path: Path) -> None:
    out = run("lenet5", "--layer", "fc4", "--out", str(tmp_path), "--run", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    (layer,) = doc["layers"]
    assert layer["layer"] == "fc4" and layer["bit_exact"] == {"model": True, "physical": True}
    assert {r["array"] for r in layer["counts"]} == {"in", "w", "out"}
    w = next(r for r in layer["counts"] if r["array"] == "w" and r["counts"] == "model")
    assert w["measured elements"] >= 512 * 10  # every weight of fc4 fetched at least once


def test_halide_schedule_run_and_refusal(tmp_path: Path) -> None:
    pytest.importorskip("halide")
    out = run("lenet5", "--layer", "fc4", "--out", str(tmp_path), "--run", "--halide")
    assert out.returncode == 0, out.stderr
    assert "Halide" in out.stdout and "output bit-exact" in out.stdout
    assert "equal the model's input and weight counts" in " ".join(out.stdout.split())
    assert ".split(" in (tmp_path / "fc4" / "halide_schedule.txt").read_text()
    out = run("lenet5", "--layer", "conv2", "--cores", "2", "--out", str(tmp_path),
              "--halide")
    assert out.returncode == 0 and "Halide: not expressed" in out.stdout
