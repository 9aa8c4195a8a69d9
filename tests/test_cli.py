"""The command line: tables, --json, and one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_networks_and_platforms() -> None:
    out = run("networks")
    assert out.returncode == 0 and "lenet5" in out.stdout and "vgg16" in out.stdout
    out = run("platforms", "--json")
    names = [row["platform"] for row in json.loads(out.stdout)["rows"]]
    assert {"idsp", "nve", "shave", "hwc"} <= set(names)


def test_show_json_totals() -> None:
    out = run("show", "lenet5", "--batch", "8", "--json")
    doc = json.loads(out.stdout)
    per_image = 28 * 28 * 32 * 25 + 14 * 14 * 64 * 25 * 32 + 3136 * 512 + 512 * 10
    assert doc["batch"] == 8 and doc["macs"] == 8 * per_image
    conv1 = next(r for r in doc["rows"] if r["layer"] == "conv1")
    assert conv1["output_bytes"] == 28 * 28 * 32 * 8 * 2


def test_bad_inputs_exit_nonzero_without_traceback(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: n\ninput: [1, 8, 8]\nlayers:\n  - {name: c, type: conv, maps: 4, "
                        "kernel: 11}\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: n\nlayers: [\n")
    cases = [(("show", "nosuch"), "unknown network 'nosuch'"),
             (("show", str(bad_yaml)), "kernel 11x11 larger than padded input 8x8"),
             (("show", str(broken)), "malformed YAML"),
             (("show", str(tmp_path / "missing.onnx")), "does not exist")]
    for args, message in cases:
        out = run(*args)
        assert out.returncode != 0, args
        assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
