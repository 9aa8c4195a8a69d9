"""ONNX external data under the project's own guard (issue 58): a location with '..', an
absolute path, a symlink out of the model's folder and a FIFO are each one line, whatever the
installed onnx refuses itself; a good external file loads the same weights."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
from bounded import python
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

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


def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
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
    rules = {"dotdot": "external data location '../secret.bin' leaves the model's folder ('..')",
             "absolute": "is an absolute path",
             "symlink": "external data location 'link.bin' resolves (through a symlink) outside "
                        "the model's folder",
             "fifo": "external data location 'pipe.bin' is not a regular file (a FIFO, device "
                     "or folder)"}
    for name, rule in rules.items():
        assert out[name].startswith(f"ONNX file {str(cases[name])!r}: tensor 'w': ") \
            and out[name].endswith(rule), out[name]
    assert "external data location '/" in out["absolute"]  # the path, cut to 80 characters
    assert out["good"] == W.ravel().tolist()


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
