"""Float formats on an ONNX model's own data (`workbench quantize MODEL.onnx --data own.npz
--float-formats ...`): a LeNet-5-shaped network with its weights in the file, and images
whose labels are onnxruntime's own top-1 classes for them.

Reference: onnxruntime running the same file with the layer's weights cast by ml_dtypes and
the layer's output put through ONNX Cast nodes to the float8 type and back (round to nearest
even, saturating), independent of `quant.floats` and of the workbench's inference.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from model_files import LENET5, LENET5_NAMES, write_onnx
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")
TYPES = {"fp8-e4m3": (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 448.0),
         "fp8-e5m2": (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, 57344.0)}
IMAGES = 60
# LeNet-5 up to its logits: a softmax output rounded to 8 bits ties classes, and which of
# them is "the" top-1 is then a convention, not arithmetic
NAMES = LENET5_NAMES[:-1]


def _model(tmp_path: Path) -> Path:
    """LeNet-5 with seeded normal weights scaled by 1/√fan-in (activations of order 1), the
    fc rows centred (without it one class takes every image: the ReLU features are all
    positive)."""
    path = write_onnx(tmp_path / "net.onnx", LENET5[:-1], NAMES, (1, 28, 28),
                      real_weights=True)
    model = onnx.load(str(path))
    rng = np.random.default_rng(4)
    for i, init in enumerate(model.graph.initializer):
        shape = tuple(init.dims)
        w = rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]))
        w = w - w.mean(axis=1, keepdims=True) if w.ndim == 2 else w
        scaled = w.astype(np.float32)
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(scaled, init.name))
    onnx.save(model, str(path))
    return path


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    model.ir_version = min(model.ir_version, 9)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.array([session.run(None, {"data": image[None]})[0].argmax() for image in x])


def _in_format(path: Path, layers: set[str], name: str) -> onnx.ModelProto:
    """The file with `layers` (node names) in the format: weights cast, outputs cast."""
    onnx_type, np_type, largest = TYPES[name]
    model = onnx.load(str(path))
    inits = {t.name: i for i, t in enumerate(model.graph.initializer)}
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        if node.name not in layers:
            continue
        if len(node.input) > 1 and node.input[1] in inits:
            i = inits[node.input[1]]
            w = np.clip(numpy_helper.to_array(model.graph.initializer[i]), -largest, largest)
            cast = w.astype(np_type).astype(np.float32)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(cast, node.input[1]))
        out = node.output[0]
        node.output[0] = f"{out}_wide"
        nodes += [helper.make_node("Cast", [f"{out}_wide"], [f"{out}_narrow"], to=onnx_type),
                  helper.make_node("Cast", [f"{out}_narrow"], [out], to=TensorProto.FLOAT)]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 19))
    return model


def test_per_layer_accuracy_on_the_models_own_data(tmp_path: Path, capsys) -> None:
    from workbench.cli import main

    path = _model(tmp_path)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((IMAGES, 1, 28, 28)).astype(np.float32)
    y = _run(onnx.load(str(path)), x)
    data = tmp_path / "own.npz"
    np.savez(data, calib_x=x, calib_y=y, test_x=x, test_y=y)
    assert main(["quantize", str(path), "--data", str(data), "--images", str(IMAGES),
                 "--float-formats", ",".join(TYPES), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["float32_accuracy"] == 1.0  # the workbench's float inference is onnxruntime's
    below = 0
    for name, row in doc["accuracy"].items():
        for layer, got in row.items():
            names = {n for n in NAMES if n} if layer == "all" else {layer}
            want = float((_run(_in_format(path, names, name), x) == y).mean())
            assert abs(got - want) <= 1 / IMAGES + 1e-9, (name, layer, got, want)
            below += want < 1
    assert below >= 2  # some rows lose images: the table is not all 100 %
    assert doc["bytes_per_image"]["fp8-e4m3"] == doc["bytes_per_image"]["fp8-e5m2"] > 0
