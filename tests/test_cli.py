"""The command line: tables, --json, and one-line errors without tracebacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import layers


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


def test_show_header_of_a_file_without_title_or_source(tmp_path: Path) -> None:
    """A network file of the README's form (no title, no source) heads its table with its
    name and totals only, not an empty title and "[]"; a zoo network keeps both."""
    (tmp_path / "mynet.yaml").write_text(
        "name: mynet\ninput: [3, 32, 32]\nbatch: 1\nlayers:\n"
        "  - {name: conv1, type: conv, maps: 32, kernel: 5, stride: 1, pad: 2}\n"
        "  - {name: fc1, type: fc, outputs: 10}\n")
    head = run("show", str(tmp_path / "mynet.yaml")).stdout.splitlines()[0]
    params = 5 * 5 * 3 * 32 + 32 * 32 * 32 * 10  # conv1 kernels, then fc1 over 32×32×32
    macs = 32 * 32 * 5 * 5 * 3 * 32 + 32 * 32 * 32 * 10
    assert (macs, params) == (2_785_280, 330_080)  # three significant digits, SI prefixes:
    assert head == "mynet:  batch 1, 2.79 M MACs, 330 k params (footprints at 2 B/element)"
    assert run("show", "lenet5").stdout.startswith(  # 12,273,152 MACs
        "lenet5: LeNet5-clone (MNIST) [seed 000 appendix A.1]  batch 1, 12.3 M MACs")


def test_text_commands_never_load_bokeh() -> None:
    """Only plots and pages need bokeh: `show` and `explore` (as text or JSON) never import it
    (it used to be most of the CLI's start-up: 2.9 s against 1.2 s to build the parser)."""
    code = ("import sys\nfrom workbench.cli import main\n"
            "for argv in (['show', 'lenet5'], ['explore', 'lenet5', '--platform', 'idsp'],\n"
            "             ['explore', 'lenet5', '--json']):\n"
            "    assert main(argv) == 0\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'bokeh')\n"
            "print('bokeh modules:', loaded, file=sys.stderr)\n"
            "sys.exit(1 if loaded else 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


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


def test_explore_prints_best_per_layer_and_writes_files(tmp_path: Path) -> None:
    csv, page = tmp_path / "best.csv", tmp_path / "demo.html"
    out = run("explore", "lenet5", "--platform", "idsp", "--batch", "8", "--memory-kb", "64",
              "--csv", str(csv), "--html", str(page))
    assert out.returncode == 0, out.stderr
    assert "conv2" in out.stdout and "64 KB local memory" in out.stdout
    import pandas as pd

    table = pd.read_csv(csv)
    assert list(table["layer"]) == [layer.name for layer in layers.load_network("lenet5")]
    assert (table["footprint_bytes"] <= 64 * 1024).all()
    assert {"pool", "activation", "softmax"} <= set(table["kind"])
    text = page.read_text()
    assert "<table" in text and "http" not in text and "<script" not in text


def test_explore_json_and_schedule_filter() -> None:
    out = run("explore", "lenet5", "--schedule", "inter_kc", "--json")
    doc = json.loads(out.stdout)
    assert {row["schedule"] for row in doc["rows"] if row["kind"] in ("conv", "fc")} == \
        {"inter_kc"}
    assert doc["totals"]["cycles"] == sum(row["cycles"] for row in doc["rows"])


def test_explore_bad_inputs() -> None:
    cases = [(("explore", "lenet5", "--memory-kb", "0.09765625"),  # 100 B
              "smallest tile (1x1x1x1x1) needs"),
             (("explore", "lenet5", "--memory-kb", "lots"), "must be a number of KB"),
             (("explore", "lenet5", "--platform", "gpu"), "unknown platform 'gpu'"),
             (("explore", "lenet5", "--schedule", "zigzag"), "invalid choice: 'zigzag'")]
    for args, message in cases:
        out = run(*args)
        assert out.returncode != 0 and message in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_simd_mapping_report_and_errors() -> None:
    out = run("simd", "lenet5", "--batch", "8", "--json")
    rows = json.loads(out.stdout)["rows"]
    assert [r["layer"] for r in rows] == ["conv1", "conv2", "fc3", "fc4"]
    for r in rows:
        parts = ("input_loads", "unaligned_loads", "weight_loads", "output_stores",
                 "redundant_psums", "spills")
        assert sum(r[p] for p in parts) == r["total"] and "other" not in r
        assert r["cycles_issue"] + r["cycles_fill"] + r["cycles_loop"] == r["compute_cycles"]
    out = run("simd", "lenet5", "--layer", "conv1", "--tile", "28", "28", "32", "1", "1",
              "--vector-dim", "ox", "--json")
    assert json.loads(out.stdout)["rows"][0]["lane_utilization"] == 28 / 32
    bad = run("simd", "lenet5", "--layer", "conv1", "--vector-dim", "oc", "--unroll", "999")
    assert bad.returncode != 0 and "unroll 999 exceeds" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_simd_code_versions() -> None:
    """`workbench simd NET --version`: the generated code's utilization per layer, measured
    by running it (seed 003 figure 36's bars); tables fit 100 columns."""
    out = run("simd", "face_detector", "--version", "modulo")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    l1 = next(line for line in lines if line.split()[:1] == ["L1"])
    assert "6x6/2" in l1 and " 43 " in l1 and " 42 " in l1      # II against MII
    doc = json.loads(run("simd", "face_detector", "--version", "automatic", "--json").stdout)
    assert [r["layer"] for r in doc["rows"]] == ["L1", "L2", "L3", "L4"]
    for r in doc["rows"]:
        assert r["version"] == "automatic"
        assert r["mac_per_cycle"] == pytest.approx(r["macs"] / r["cycles"], rel=1e-9)
    assert doc["rows"][0]["macs"] == 4 * 638 * 358 * 36   # seed 003 table 1: 32.9 M
    for args, message in ((("--version", "all", "--layer", "L1"), "takes no --layer"),
                          (("--version", "modulo", "--platform", "idsp"), "targets the NVE"),
                          (("--version", "manual"), "invalid choice")):
        bad = run("simd", "face_detector", *args)
        assert bad.returncode != 0 and message in bad.stderr and "Traceback" not in bad.stderr


def test_explore_objective_accesses_reproduces_table_7_10() -> None:
    out = run("explore", "lenet5", "--batch", "8", "--objective", "accesses", "--fusion", "off",
              "--json")
    doc = json.loads(out.stdout)
    tiled = [row for row in doc["rows"] if row["kind"] in ("conv", "fc")]  # the seed's layers
    assert sum(row["energy_pj"] for row in tiled) / 1e6 == pytest.approx(1608, rel=0.02)
    assert doc["totals"]["energy_pj"] > sum(row["energy_pj"] for row in tiled)  # + pool, relu
    assert {row["objective"] for row in doc["rows"]} == {"accesses"}
    assert "best by accesses" in doc["title"]
    table = run("explore", "lenet5", "--batch", "8", "--objective", "energy")
    assert table.returncode == 0 and "chosen by" in table.stdout and "energy" in table.stdout
    bad = run("explore", "lenet5", "--objective", "speed")
    assert bad.returncode == 2 and "invalid choice: 'speed'" in bad.stderr
    assert bad.stderr.startswith("workbench explore: error: argument --objective")
    assert len(bad.stderr.strip().splitlines()) == 1  # no usage block


def test_a_closed_pipe_exits_quietly() -> None:
    out = subprocess.run(f"{sys.executable} -m workbench.cli show vgg16 | head -1", shell=True,
                         capture_output=True, text=True, timeout=120,
                         executable="/bin/bash")
    assert out.stdout.startswith("vgg16: VGG16")
    assert out.stderr == ""  # no BrokenPipeError traceback
    status = subprocess.run(f"set -o pipefail; {sys.executable} -m workbench.cli show vgg16 "
                            "| head -1 >/dev/null", shell=True, executable="/bin/bash",
                            timeout=120)
    assert status.returncode == 0


def test_three_reports_at_once_and_a_relative_model_path(tmp_path: Path) -> None:
    """Concurrent reports keep their kernels apart (private socket folders), and a model file
    named relative to the caller's folder is found although the notebook runs elsewhere."""
    from model_files import LENET5, LENET5_NAMES, write_onnx

    write_onnx(tmp_path / "mynet.onnx", LENET5, LENET5_NAMES, (1, 28, 28), batch=1)
    jobs = [("lenet5", "a.html"), ("cifar10_quick", "b.html"), ("mynet.onnx", "c.html")]
    procs = [subprocess.Popen([sys.executable, "-m", "workbench.cli", "report", network,
                               "--params", "batch=2", "sweep_memory_kb=[16]", "--out", out],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for network, out in jobs]
    for proc, (network, out) in zip(procs, jobs, strict=True):
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, (network, stderr)
        assert stderr == "", (network, stderr)
        assert "report written to" in stdout and (tmp_path / out).stat().st_size > 100_000
    assert not list((Path(__file__).parents[1] / "notebooks").glob("kernel-ipc*"))


def test_json_before_or_after_the_command() -> None:
    before, after = run("--json", "platforms"), run("platforms", "--json")
    assert before.returncode == after.returncode == 0
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert run("platforms").stdout.lstrip().startswith("platform")
    explore = run("--json", "explore", "lenet5", "--batch", "8")
    assert json.loads(explore.stdout)["totals"]["cycles"] > 0


def test_explore_cores_and_fusion_options() -> None:
    out = run("explore", "cifar10_quick", "--platform", "shave", "--cores", "4",
              "--broadcast", "on", "--fuse", "conv1=off", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert max(row["cores"] for row in doc["rows"]) == 4
    conv1 = next(row for row in doc["rows"] if row["layer"] == "conv1")
    assert not conv1["fused_out"]
    assert "4 core(s)" in doc["title"]
    forced = run("explore", "lenet5", "--fusion", "force", "--fuse", "conv1=off", "--json")
    assert forced.returncode == 0, forced.stderr
    rows = {row["layer"]: row for row in json.loads(forced.stdout)["rows"]}
    assert not rows["conv1"]["fused_out"] and not rows["relu1"]["folded"]
    assert rows["conv2"]["fused_out"] or rows["relu2"]["folded"]
    for args, message in [(("--fuse", "conv1=maybe"), "fusion mode of layer 'conv1' must be"),
                          (("--fuse", "conv1"), "--fuse 'conv1': expected LAYER=MODE"),
                          (("--fuse", "prob=force"), "'prob': fusion forced, but it is the last"),
                          (("--cores", "0"), "argument --cores: must be a positive integer")]:
        bad = run("explore", "cifar10_quick", *args)
        assert bad.returncode != 0 and message in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1


def test_report_refuses_unknown_parameter_keys_and_unwritable_paths(tmp_path: Path) -> None:
    """A --params key reaches the notebook only if its parameters cell assigns it: a key
    carrying code is refused before any kernel starts."""
    marker = tmp_path / "pwned"
    key = f'batch\nimport os; os.system("touch {marker}")\nx'
    out = run("report", "lenet5", "--params", f"{key}=1", "--out", str(tmp_path / "r.html"))
    assert out.returncode != 0 and "unknown; parameters: batch" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not marker.exists()
    bad = run("explore", "lenet5", "--csv", str(tmp_path / "missing" / "x.csv"))
    assert bad.returncode == 2 and "argument --csv: directory" in bad.stderr
    assert "does not exist" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_kernel_log_stays_out_of_the_callers_stderr(tmp_path: Path, capfd) -> None:
    """What the kernel process itself prints on stderr (ipykernel's log: e.g. an interrupt when
    a loaded machine shuts it down slowly) goes to its private log, not to the caller."""
    import nbformat

    from workbench.report.notebook import execute

    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import os\nos.write(2, b'kernel-noise\\n')")]
    path = tmp_path / "noise.ipynb"
    nbformat.write(nb, str(path))
    executed = execute(path, {"x": 2}, timeout_s=120)
    assert executed.cells[-1].cell_type == "code"
    assert "kernel-noise" not in capfd.readouterr().err


def test_report_on_a_terminal_shows_progress(tmp_path: Path) -> None:
    """On a terminal, `workbench report` shows the executed cells, elapsed time and ETA (the
    bar is left out when stderr is not a terminal, as in the test above)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on a pseudo-terminal of 40 rows x 120 columns
        try:
            import fcntl
            import struct
            import termios

            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            os.chdir(tmp_path)
            os.execv(sys.executable, [sys.executable, "-m", "workbench.cli", "report",
                                      "lenet5", "--params", "batch=2", "sweep_memory_kb=[16]",
                                      "--out", "r.html"])
        finally:
            os._exit(127)  # never return into the test runner
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert re.search(r"Executing: +100%.*\d+/\d+ \[\d\d:\d\d<00:00", text), text[-500:]
    assert (tmp_path / "r.html").exists()
