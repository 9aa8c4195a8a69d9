"""ONNX external data under the project's own guard (issue 58): a location with '..', an
absolute path, a symlink out of the model's folder and a FIFO are each one line, whatever the
installed onnx refuses itself; a good external file loads the same weights."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from bounded import python, workbench
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

from workbench.errors import FileFormatError

W = np.arange(8 * 3, dtype=np.float32).reshape(8, 3, 1, 1)


def _model(folder: Path, location: str) -> Path:
    """A one-conv model whose weight lives in external data at `location`."""
    folder.mkdir(parents=True, exist_ok=True)
    tensor = numpy_helper.from_array(W, "w")
    set_external_data(tensor, location=location, offset=0, length=W.nbytes)
    tensor.data_location = TensorProto.EXTERNAL
    tensor.ClearField("raw_data")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 4, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=[tensor])
    path = folder / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _hostile(tmp_path: Path) -> dict[str, Path]:
    """Models whose external data is reached by '..', an absolute path, a symlink out of the
    folder and a FIFO, and a good one."""
    secret = tmp_path / "secret.bin"
    secret.write_bytes(W.tobytes())
    cases = {"dotdot": _model(tmp_path / "dotdot", "../secret.bin"),
             "absolute": _model(tmp_path / "absolute", str(secret)),
             "symlink": _model(tmp_path / "symlink", "link.bin"),
             "fifo": _model(tmp_path / "fifo", "pipe.bin"),
             "good": _model(tmp_path / "good", "w.bin")}
    (tmp_path / "symlink" / "link.bin").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo" / "pipe.bin")  # reading it would block forever
    (tmp_path / "good" / "w.bin").write_bytes(W.tobytes())
    return cases


RULES = {"dotdot": "external data location '../secret.bin' leaves the model's folder ('..')",
         "absolute": "is an absolute path",
         "symlink": "external data location 'link.bin' resolves (through a symlink) outside "
                    "the model's folder",
         "fifo": "external data location 'pipe.bin' is not a regular file (a FIFO, device "
                 "or folder)"}


def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
    cases = _hostile(tmp_path)
    code = f"""
import json
from workbench.errors import WorkbenchError
from workbench.layers.onnx_external import load_model
from onnx import numpy_helper
out = {{}}
for name, path in {json.dumps({k: str(v) for k, v in cases.items()})}.items():
    try:
        model = load_model(path)
        out[name] = numpy_helper.to_array(model.graph.initializer[0]).ravel().tolist()
    except WorkbenchError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""
    run = python(code, timeout_s=60)  # a child: a blocking FIFO read would time out, not hang
    assert run.rc == 0, run.err[-2000:]
    out = json.loads(run.out)
    for name, rule in RULES.items():
        assert out[name].startswith(f"ONNX file {str(cases[name])!r}: tensor 'w': ") \
            and out[name].endswith(rule), out[name]
    assert "external data location '/" in out["absolute"]  # the path, cut to 80 characters
    assert out["good"] == W.ravel().tolist()


def test_quantize_from_model_reads_external_data_under_the_same_guard(tmp_path: Path) -> None:
    """`quantize --from-model` read its model with onnx.load, whose own guard differs between
    the onnx versions pyproject.toml allows: each hostile location is now the same one line,
    within seconds (the FIFO never blocks), before the model's kind is even looked at."""
    cases = _hostile(tmp_path)
    for name, rule in RULES.items():
        run = workbench("quantize", "--from-model", str(cases[name]), timeout_s=60)
        line = run.one_line_refusal()
        assert f"ONNX file {str(cases[name])!r}: tensor 'w': " in line and line.endswith(rule), \
            line
        assert run.seconds < 30, run.figures()
    # the good one is read, weights and all: a float model, refused for that reason
    assert "a float model" in workbench("quantize", "--from-model", str(cases["good"]),
                                        timeout_s=60).one_line_refusal()
    from workbench.quant import int_run

    for name in ("dotdot", "symlink"):  # the integer run reads it the same way
        with pytest.raises(FileFormatError, match=re.escape(RULES[name])):
            int_run.run_model(cases[name], np.zeros((1, 3, 4, 4), np.float32))


def test_external_bytes_beyond_the_file_are_refused(tmp_path: Path) -> None:
    from workbench.errors import FileFormatError
    from workbench.layers.onnx_external import load_model

    path = _model(tmp_path, "w.bin")
    (tmp_path / "w.bin").write_bytes(W.tobytes()[:10])
    try:
        load_model(path)
    except FileFormatError as exc:
        assert str(exc).endswith("tensor 'w': external data bytes 0..96 lie outside its file "
                                 "of 10 B")
    else:
        raise AssertionError("a short external file was read")
