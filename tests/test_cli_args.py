"""Every command-line reproducer of issue 17 (bad arguments, unwritable outputs, bad data and
grid files): exactly one line on stderr naming the option or file and the rule, exit code 2,
no traceback, and nothing computed first (no output file appears)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORKBENCH = [sys.executable, "-m", "workbench.cli"]


def _read_only_dir(tmp: Path) -> str:
    """A directory nobody may create files in: a chmod 555 folder, or /sys as root (root
    writes into any folder of a writable file system)."""
    if os.geteuid() == 0:
        return "/sys"
    folder = tmp / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    return str(folder)


def _files(tmp: Path) -> dict[str, str]:
    """Files the reproducers name: {placeholder: path}."""
    (tmp / "a_file").write_text("not a folder")
    (tmp / "a_dir").mkdir()
    rng = np.random.default_rng(0)
    images = rng.random((8, 1, 28, 28)).astype(np.float32)
    np.savez(tmp / "mismatch.npz", calib_x=images, calib_y=np.arange(5), test_x=images,
             test_y=np.arange(8))
    np.savez(tmp / "float_labels.npz", calib_x=images, calib_y=np.linspace(0, 9, 8),
             test_x=images, test_y=np.arange(8))
    np.save(tmp / "array.npy", images)
    np.savez(tmp / "int_images.npz", calib_x=(images * 255).astype(np.uint8),
             calib_y=np.arange(8), test_x=images, test_y=np.arange(8))
    (tmp / "truncated.npz").write_bytes((tmp / "mismatch.npz").read_bytes()[:200])
    grids = {"grid_scalar": "networks: lenet5\nplatforms: [idsp]\n",
             "grid_nan": "networks: [lenet5]\nplatforms: [idsp]\nmemory_kb: [.nan]\n",
             "grid_empty_override": "networks: [lenet5]\nplatforms: [idsp]\n"
                                    "overrides: {cores: []}\n",
             "grid_ok": "networks: [lenet5]\nplatforms: [idsp]\nmemory_kb: [16]\n"}
    for name, text in grids.items():
        (tmp / f"{name}.yaml").write_text(text)
    (tmp / "grid_binary.yaml").write_bytes(bytes(range(256)) * 4)
    names = {"TMP": str(tmp), "RO": _read_only_dir(tmp)}
    names |= {p.name: str(p) for p in tmp.iterdir()}
    return names


def _marker_key(tmp: str) -> str:
    return f'batch\nimport os; os.system("touch {tmp}/pwned")\nx'


# (arguments, what stderr must say: a text or all of several); {name} is replaced by the path
# of that file or folder
CASES = [
    # outputs: missing folder, read-only folder, a folder given as the file, a file given as
    # the folder, an empty name, a full device
    (("explore", "lenet5", "--csv", "/nonexistent_dir/x.csv"),
     "argument --csv: directory '/nonexistent_dir' does not exist"),
    (("explore", "lenet5", "--html", "/nonexistent_dir/x.html"),
     "argument --html: directory '/nonexistent_dir' does not exist"),
    (("report", "lenet5", "--out", "/nonexistent_dir/r.html"),
     "argument --out: directory '/nonexistent_dir' does not exist"),
    (("quantize", "lenet5", "--out", "/nonexistent_dir/c.yaml"),
     "argument --out: directory '/nonexistent_dir' does not exist"),
    (("sweep", "{grid_ok.yaml}", "--out", "/nonexistent_dir/sweep"),
     "argument --out: directory '/nonexistent_dir' does not exist"),
    (("traffic", "lenet5", "--csv", "/nonexistent_dir/t.csv"),
     "argument --csv: directory '/nonexistent_dir' does not exist"),
    (("explore", "lenet5", "--csv", "{RO}/x.csv"), "argument --csv: cannot create files in"),
    (("explore", "lenet5", "--html", "{RO}/x.html"), "argument --html: cannot create files in"),
    (("report", "lenet5", "--out", "{RO}/r.html"), "argument --out: cannot create files in"),
    (("quantize", "lenet5", "--out", "{RO}/c.yaml"), "argument --out: cannot create files in"),
    (("sweep", "{grid_ok.yaml}", "--out", "{RO}/sweep"), "argument --out: cannot create files"),
    (("explore", "lenet5", "--csv", "{a_dir}"), "is a directory; give a file name"),
    (("report", "lenet5", "--out", "{a_dir}"), "is a directory; give a file name"),
    (("explore", "lenet5", "--html", "{a_file}/x.html"), "is a file, not a directory"),
    (("sweep", "{grid_ok.yaml}", "--out", "{a_file}"), "is a file, not a directory"),
    (("explore", "lenet5", "--csv", ""), "argument --csv: needs a file name"),
    (("explore", "lenet5", "--csv", "/dev/full"), "cannot write '/dev/full'"),
    (("explore", "lenet5", "--html", "/dev/full"), "cannot write '/dev/full'"),
    (("report", "lenet5", "--out", "/dev/full"), "cannot write '/dev/full'"),
    (("quantize", "lenet5", "--out", "/dev/full"), "cannot write '/dev/full'"),
    # numbers and sizes
    (("explore", "lenet5", "--memory-kb", ""), "argument --memory-kb: must be a number of KB"),
    (("explore", "lenet5", "--memory-kb", "0"), "argument --memory-kb: must be a number of KB"),
    (("explore", "lenet5", "--memory-kb=-1"), "argument --memory-kb: must be a number of KB"),
    (("explore", "lenet5", "--memory-kb", "0.0001"), "a whole number of bytes, at least 1"),
    (("explore", "lenet5", "--memory-kb", "64KB"), "must be a number of KB (e.g. 64 or 0.5)"),
    (("traffic", "lenet5", "--memory-kb", "4", ""), "argument --memory-kb: must be a number"),
    (("explore", "lenet5", "--memory", "1.5"), "must be a whole number of bytes"),  # old name
    (("traffic", "lenet5", "--memory", "4KB", ""), "argument --memory: memory size ''"),
    (("explore", "lenet5", "--jobs", "0"), "argument --jobs: must be a positive integer"),
    (("explore", "lenet5", "--jobs", "-3"), "argument --jobs: must be a positive integer"),
    (("sweep", "{grid_ok.yaml}", "--out", "{TMP}/s", "--jobs", "0"),
     "argument --jobs: must be a positive integer"),
    (("quantize", "lenet5", "--jobs", "-3"), "argument --jobs: must be a positive integer"),
    (("explore", "lenet5", "--batch", "0"), "argument --batch: must be a positive integer"),
    (("explore", "lenet5", "--cores", "0"), "argument --cores: must be a positive integer"),
    (("explore", "lenet5", "--dma-channels", "-1"), "argument --dma-channels: must be"),
    (("show", "lenet5", "--elem-bytes", "0"), "argument --elem-bytes: must be a positive"),
    (("traffic", "lenet5", "--elem-bytes", "0"), "argument --elem-bytes: must be a positive"),
    (("traffic", "lenet5", "--elem-bytes", "-2"), "argument --elem-bytes: must be a positive"),
    (("traffic", "lenet5", "--psum-bytes", "-1"), "argument --psum-bytes: must be a positive"),
    (("hierarchy", "lenet5", "--levels", "seed001_two_level", "--workers", "-1"),
     "argument --workers: must be an integer ≥ 0, got '-1'"),
    (("quantize", "lenet5", "--images", "0"), "argument --images: must be a positive integer"),
    (("quantize", "lenet5", "--images", "-1"), "argument --images: must be a positive integer"),
    (("quantize", "lenet5", "--acc-bits", "2.5"), "argument --acc-bits: must be an integer in"),
    (("quantize", "lenet5", "--acc-bits", "64"),
     "argument --acc-bits: must be an integer in 2..62, got '64'"),
    (("simd", "lenet5", "--unroll", "0"), "argument --unroll: must be a positive integer"),
    (("simd", "lenet5", "--layer", "conv1", "--tile", "0", "1", "1", "1", "1"),
     "argument --tile: must be a positive integer"),
    (("simd", "lenet5", "--layer", "conv1", "--tile", "1000", "1", "1", "1", "1"),
     "--tile 1000 1 1 1 1: layer 'conv1': tile TOx=1000 must be an integer in 1..28"),
    (("report", "lenet5", "--timeout", "0"), "argument --timeout: must be a positive integer"),
    (("networks", "--max-memory", "2x"), "argument --max-memory: memory size '2x' not underst"),
    # --input-shape C,H,W on every command that takes a network
    (("show", "lenet5", "--input-shape", "3,224"),
     "argument --input-shape: must be three positive integers C,H,W, got '3,224'"),
    (("explore", "lenet5", "--input-shape", "0,28,28"), "argument --input-shape: must be"),
    (("traffic", "lenet5", "--input-shape", "1,28"), "argument --input-shape: must be"),
    (("simd", "lenet5", "--input-shape", "a,b,c"), "argument --input-shape: must be"),
    (("quantize", "lenet5", "--input-shape", "1,-28,28"), "argument --input-shape: must be"),
    (("report", "lenet5", "--input-shape", "1,28,28,1"), "argument --input-shape: must be"),
    (("quantize", "--from-model", "{mismatch.npz}", "--input-shape", "1,28,28"),
     "--input-shape applies to a network, not to --from-model"),
    # report parameters: unknown keys (one carrying code), values that do not parse
    (("report", "lenet5", "--params", "nosuch=1"), "report parameter(s) ['nosuch'] unknown"),
    (("report", "lenet5", "--params", "{INJECT}=1"), "unknown; parameters: batch"),
    (("report", "lenet5", "--params", "batch=["), "--params batch: value '[' is not a number"),
    (("report", "lenet5", "--params", "batch"), "--params 'batch': must look like key=value"),
    # report parameters the notebook would have choked on (issue 58): its own arguments,
    # dates, sets, a number beyond float range (a string to YAML), a 120 KB value (cut)
    (("report", "lenet5", "--params", "network=vgg16"), "--params network: is the report's own"),
    (("report", "lenet5", "--params", "platform=nve"), "--params platform: is the report's own"),
    (("report", "lenet5", "--params", "batch=2020-01-01"),
     "--params batch: must be an integer in 1..2^20, got datetime.date(2020, 1, 1)"),
    (("report", "lenet5", "--params", "batch=!!set {a}"), "--params batch: must be an integer"),
    (("report", "lenet5", "--params", "memory_kb=1e400"),
     "--params memory_kb: must be a number of KB in 0..2^38 (0: the platform's), got '1e400'"),
    (("report", "lenet5", "--params", "memory_kb=1.0e400"), "KB in 0..2^38 (0: the platform's)"),
    (("report", "lenet5", "--params", "memory_kb=" + "x" * 120_000),
     "got '" + "x" * 76 + "..."),
    # a layer the command cannot use
    (("traffic", "lenet5", "--listing", "pool1"), "--listing 'pool1' is a pool layer"),
    (("traffic", "lenet5", "--listing", "nosuch"), "network 'lenet5' has no layer 'nosuch'"),
    # quantize data files
    # (read and checked as the API's quant.weights.load_data_npz does)
    (("quantize", "lenet5", "--data", "{mismatch.npz}"),
     "calib_y: holds 5 labels for 8 images in calib_x"),
    (("quantize", "lenet5", "--data", "{float_labels.npz}"),
     "calib_y: must be integer class labels (one dimension), got float64"),
    (("quantize", "lenet5", "--data", "{int_images.npz}"), "calib_x: must be float images"),
    (("quantize", "lenet5", "--data", "{array.npy}"), "a single .npy array, not an .npz"),
    (("quantize", "lenet5", "--data", "{truncated.npz}"), "cannot read as .npz"),
    # sweep grids
    (("sweep", "{grid_scalar.yaml}", "--out", "{TMP}/s"), ("grid_scalar.yaml", "networks")),
    (("sweep", "{grid_nan.yaml}", "--out", "{TMP}/s"), ("grid_nan.yaml", "memory_kb")),
    (("sweep", "{grid_empty_override.yaml}", "--out", "{TMP}/s"),
     ("grid_empty_override.yaml", "cores")),
    (("sweep", "{grid_binary.yaml}", "--out", "{TMP}/s"), "grid_binary.yaml"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("cli_args")
    names = _files(tmp)
    names["INJECT"] = _marker_key(names["TMP"])
    return names


def _fill(arg: str, files: dict[str, str]) -> str:
    for name, path in files.items():
        arg = arg.replace("{" + name + "}", path)
    return arg


def _ids() -> list[str]:
    return [" ".join(a if a else "''" for a in args)[:60] for args, _ in CASES]


def _check(code: int, err: str, out: str, argv: list[str], message: str | tuple[str, ...]
           ) -> None:
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert "Traceback" not in err and len(lines) == 1, err
    for part in (message,) if isinstance(message, str) else message:
        assert part in lines[0], lines[0]
    assert lines[0].startswith(f"workbench {argv[0]}: error: "), lines[0]
    assert out == ""  # nothing computed, nothing printed


@pytest.mark.parametrize("args, message", CASES, ids=_ids())
def test_one_line_exit_2_no_traceback(args: tuple[str, ...], message: str | tuple[str, ...],
                                      files: dict[str, str], capsys: pytest.CaptureFixture,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process (the entry point's own function; a subprocess each would take
    minutes): an exception escaping `main` fails the test like a traceback would."""
    import signal

    from workbench.cli import main

    monkeypatch.chdir(files["TMP"])
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # main's SIGTERM handler
    argv = [_fill(a, files) for a in args]
    before = set(Path(files["TMP"]).iterdir())
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    captured = capsys.readouterr()
    _check(code, captured.err, captured.out, argv, message)
    assert set(Path(files["TMP"]).iterdir()) == before  # no file or folder left behind


def test_the_installed_command_behaves_the_same(files: dict[str, str]) -> None:
    """A few reproducers through the real process (`python -m workbench.cli`), all at once."""
    picked = [CASES[0], CASES[16], CASES[20], CASES[25],
              next(c for c in CASES if "--listing" in c[0])]
    procs = []
    for args, message in picked:
        argv = [_fill(a, files) for a in args]
        procs.append((argv, message, subprocess.Popen(
            [*WORKBENCH, *argv], cwd=files["TMP"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for argv, message, proc in procs:
        out, err = proc.communicate(timeout=120)
        _check(proc.returncode, err, out, argv, message)


def test_the_checks_accept_what_they_should(tmp_path: Path) -> None:
    """The same checks pass good values: sizes in every unit, /dev/null as an output, a
    missing sweep folder in an existing one."""
    import argparse

    from workbench.cli import args

    assert [args.size(t) for t in ("4096", "64KB", "64k", "0.5KB", "1MB", "2 GB")] == \
        [4096, 65536, 65536, 512, 1 << 20, 2 << 30]
    assert args.positive_int(" 8 ") == 8
    assert args.output_file("/dev/null") == "/dev/null"
    assert args.output_file(str(tmp_path / "new.csv")) == str(tmp_path / "new.csv")
    assert args.output_dir(str(tmp_path / "sweep")) == str(tmp_path / "sweep")
    assert list(tmp_path.iterdir()) == []  # the probes leave nothing behind
    assert args.input_shape("3,224,224") == (3, 224, 224)
    for bad in ("3,224", "0,8,8", "a,b,c"):
        with pytest.raises(argparse.ArgumentTypeError, match="three positive integers"):
            args.input_shape(bad)


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    """Outputs go through a temporary file renamed onto the target: an error while writing
    leaves neither a partial target nor the temporary file, and an old target intact."""
    from workbench.report import output

    target = tmp_path / "out.csv"
    target.write_text("old")

    def fail(handle) -> None:
        handle.write("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        output.write_with(target, fail)
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"] and target.read_text() == "old"
    output.write_text(target, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"] and target.read_text() == "new"


def test_a_link_keeps_pointing_at_the_written_file(tmp_path: Path) -> None:
    from workbench.report import output

    (tmp_path / "real.csv").write_text("old")
    (tmp_path / "link.csv").symlink_to("real.csv")
    output.write_text(tmp_path / "link.csv", "new")
    assert (tmp_path / "link.csv").is_symlink() and (tmp_path / "real.csv").read_text() == "new"


def test_input_shape_reaches_every_command(capsys: pytest.CaptureFixture) -> None:
    """A good --input-shape changes the network each command sees (and the report notebook
    takes it as a parameter)."""
    import json

    from workbench.cli import main
    from workbench.report.notebook import check_parameters

    def conv1(*argv: str) -> dict:
        assert main([*argv, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        return next(r for r in rows if r["layer"] == "conv1")

    for command in ("show", "explore"):
        wide = conv1(command, "lenet5", "--input-shape", "1,32,32")["macs"]
        assert wide == conv1(command, "lenet5")["macs"] * (32 * 32) // (28 * 28), command
    wide = conv1("simd", "lenet5", "--input-shape", "1,32,32")["input_loads"]
    assert wide != conv1("simd", "lenet5")["input_loads"]
    assert conv1("show", "lenet5", "--input-shape", "1,32,32")["input"] == "1x32x32"
    check_parameters({"input_shape": [1, 32, 32]})
