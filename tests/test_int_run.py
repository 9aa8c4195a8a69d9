"""int8 models read from their own arithmetic (`quant.int_run`), on models that onnxruntime's
own `quantize_static` makes from a small float network with a squeeze-and-excitation block:
per-tensor and per-channel, QDQ and QOperator (QLinearConv, QGemm, QLinearMul,
QLinearSigmoid, QLinearGlobalAveragePool).

References, both independent of the code under test: onnxruntime's outputs on the same model
and images, and accumulators recomputed here in numpy from the model's int8 codes (input codes
as onnxruntime computes them), with a direct loop over the kernel taps.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.layers.onnx_names import short_name
from workbench.quant.from_model import load_quantized
from workbench.quant.int_run import run_model

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")


def _float_model(path: Path, se: bool) -> Path:
    """x [1,3,8,8] → conv1 3×3 pad 1 → Relu → [SE: pool → 1×1 conv → Sigmoid → Mul] →
    conv2 3×3 → Relu → Flatten → Gemm 10 (transB)."""
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32),
                                       name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1],
                              name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1")]
    inits = [init("w1", 8, 3, 3, 3), init("b1", 8), init("w2", 6, 8, 3, 3), init("b2", 6),
             init("wf", 10, 6 * 6 * 6), init("bf", 10)]
    feature = "r1"
    if se:
        nodes += [helper.make_node("GlobalAveragePool", ["r1"], ["p"], name="pool"),
                  helper.make_node("Conv", ["p", "ws", "bs"], ["s1"], name="se_fc"),
                  helper.make_node("Sigmoid", ["s1"], ["s2"], name="se_gate"),
                  helper.make_node("Mul", ["r1", "s2"], ["m"], name="se_scale")]
        inits += [init("ws", 8, 8, 1, 1), init("bs", 8)]
        feature = "m"
    nodes += [helper.make_node("Conv", [feature, "w2", "b2"], ["c2"], name="conv2"),
              helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
              helper.make_node("Flatten", ["r2"], ["f"], name="flat"),
              helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 8, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(path))
    return path


class _Reader(quantization.CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        self.feeds = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
                           for _ in range(8)])

    def get_next(self):
        return next(self.feeds, None)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """{pt|pc}_{qdq|qop}[_se] → a model quantize_static made (int8 weights and activations)."""
    root = tmp_path_factory.mktemp("int8")
    made = {}
    for se in (True, False):
        source = _float_model(root / f"float{se}.onnx", se)
        for per_channel in (False, True):
            for fmt in (quantization.QuantFormat.QDQ, quantization.QuantFormat.QOperator):
                name = (f"{'pc' if per_channel else 'pt'}_"
                        f"{'qdq' if fmt == quantization.QuantFormat.QDQ else 'qop'}"
                        f"{'_se' if se else ''}")
                quantization.quantize_static(
                    str(source), str(root / f"{name}.onnx"), _Reader(), quant_format=fmt,
                    per_channel=per_channel, activation_type=quantization.QuantType.QInt8,
                    weight_type=quantization.QuantType.QInt8)
                made[name] = root / f"{name}.onnx"
    return made


def _images(n: int = 6) -> np.ndarray:
    return np.random.default_rng(2).standard_normal((n, 3, 8, 8)).astype(np.float32)


def _ort_run(path: Path, x: np.ndarray, every: bool = False) -> list[dict[str, np.ndarray]]:
    model = onnx.load(str(path))
    if every:
        for node in model.graph.node:
            model.graph.output.extend(helper.make_empty_tensor_value_info(o)
                                      for o in node.output)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return [dict(zip(names, session.run(None, {"x": image[None]}), strict=True))
            for image in x]


NAMES = [f"{q}_{f}{s}" for q in ("pt", "pc") for f in ("qdq", "qop") for s in ("_se", "")]


@pytest.mark.parametrize("name", NAMES)
def test_outputs_agree_with_onnxruntime(models, name: str) -> None:
    """Within the rounding of the last quantizer: at most one output step apart."""
    x = _images()
    outputs, stats = run_model(models[name], x)
    reference = np.concatenate([r["y"] for r in _ort_run(models[name], x)])
    model = onnx.load(str(models[name]))
    last_dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear"
               and n.output[0] == "y"]
    step = float(numpy_helper.to_array(next(
        t for t in model.graph.initializer if t.name == last_dq[0].input[1]))) \
        if last_dq else 1e-5
    assert np.abs(outputs["y"] - reference).max() <= step * 1.001
    assert len(stats) == (4 if name.endswith("_se") else 3)


def _taps_reference(xq: np.ndarray, zx: int, w: np.ndarray, zw: np.ndarray, b: np.ndarray,
                    pad: int) -> np.ndarray:
    """Σ over taps (ky, kx) of (x − zx) shifted · (w − zw), + bias: int64, one image."""
    x = np.pad(xq.astype(np.int64) - zx, ((0, 0), (pad, pad), (pad, pad)))
    wc = w.astype(np.int64) - zw.reshape(-1, 1, 1, 1)
    o, _, kh, kw = w.shape
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    acc = np.zeros((o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = x[:, ky:ky + oh, kx:kx + ow]
            acc += np.tensordot(wc[:, :, ky, kx], patch, axes=(1, 0))
    return acc + b.astype(np.int64).reshape(-1, 1, 1)


@pytest.mark.parametrize("name", ["pt_qop_se", "pc_qop_se"])
def test_overflow_counts_equal_a_numpy_integer_reference(models, name: str) -> None:
    """Every QLinearConv's accumulators recomputed from its input codes as onnxruntime
    computes them: the largest magnitude and the count outside 16 bits are the run's (the
    model as written, int32 registers, counted against 16 bits)."""
    x = _images(4)
    _, stats = run_model(models[name], x, acc_bits=32, count_bits=16)
    runs = _ort_run(models[name], x, every=True)
    model = onnx.load(str(models[name]))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    convs = [n for n in model.graph.node if n.op_type == "QLinearConv"]
    assert len(convs) == 3
    for node in convs:
        pads = {a.name: helper.get_attribute_value(a) for a in node.attribute}.get(
            "pads", [0] * 4)
        w, zw = inits[node.input[3]], np.broadcast_to(inits[node.input[5]],
                                                      (inits[node.input[3]].shape[0],))
        zx = int(inits[node.input[2]])
        accs = [_taps_reference(r[node.input[0]][0], zx, w, zw, inits[node.input[8]], pads[0])
                for r in runs]
        acc = np.stack(accs)
        got = stats[node.name]
        assert got.max_abs == np.abs(acc).max()
        assert got.overflowing == int(((acc < -(1 << 15)) | (acc > (1 << 15) - 1)).sum())
        assert got.outputs == acc.size


def test_per_tensor_qdq_bias_of_shape_1_is_read(models) -> None:
    """quantize_static's bias DequantizeLinear has a scale of shape (1,) on a 1-D bias with
    the default axis: valid ONNX, read as a per-tensor scale (it was an IndexError)."""
    model = onnx.load(str(models["pt_qdq"]))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    bias_dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear"
               and inits.get(n.input[0], np.zeros(0)).dtype == np.int32]
    assert bias_dq and all(inits[n.input[1]].shape == (1,) for n in bias_dq)
    mapped = load_quantized(models["pt_qdq"])
    assert set(mapped.layers) == {"conv1", "conv2", "fc"}


@pytest.mark.parametrize("name", ["pc_qdq_se", "pt_qop_se"])
def test_cli_reports_the_models_arithmetic(models, name: str, capsys) -> None:
    """SE blocks and QOperator models run (they were refused); the numbers are the run's."""
    from workbench.cli import main

    assert main(["quantize", "--from-model", str(models[name]), "--acc-bits", "16",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["generated_images"] and doc["images"] == 16
    assert doc["workbench_formats"] != "mapped"  # the SE scale has no fixed-point format yet
    shape = (16, 3, 8, 8)
    lo_hi = _input_range(models[name])
    x = np.random.default_rng(0).uniform(*lo_hi, shape).astype(np.float32)
    _, stats = run_model(models[name], x, acc_bits=64, count_bits=16)
    rows = {row["layer"]: row for row in doc["layers"]}
    assert len(rows) == 4
    for s in stats.values():
        row = rows[short_name(s.name)]
        assert (row["max_abs_acc"], row["overflowing"]) == (s.max_abs, s.overflowing)
        assert row["data_bits"] <= row["weights_bits"] <= row["worst_bits"]
    assert main(["quantize", "--from-model", str(models[name]), "--acc-bits", "16"]) == 0
    text = capsys.readouterr()
    assert "not mapped" in text.out and "Traceback" not in text.err


def _input_range(path: Path) -> tuple[float, float]:
    """The float range of the input QuantizeLinear's int8 codes, read here from the file."""
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x")
    s, z = float(inits[q.input[1]]), int(inits[q.input[2]])
    return (-128 - z) * s, (127 - z) * s


def test_qdq_accumulators_equal_a_numpy_integer_reference(models) -> None:
    """The same for the QDQ form, per channel: each Conv reads DequantizeLinear(codes); the
    codes are what onnxruntime's QuantizeLinear nodes output."""
    x = _images(4)
    _, stats = run_model(models["pc_qdq_se"], x, acc_bits=32, count_bits=16)
    runs = _ort_run(models["pc_qdq_se"], x, every=True)
    model = onnx.load(str(models["pc_qdq_se"]))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    made_by = {o: n for n in model.graph.node for o in n.output}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 3
    for node in convs:
        dq_x, dq_w, dq_b = (made_by[i] for i in node.input[:3])
        w, zw = inits[dq_w.input[0]], inits[dq_w.input[2]]
        assert inits[dq_w.input[1]].size == w.shape[0]  # per channel
        pads = {a.name: helper.get_attribute_value(a) for a in node.attribute}.get(
            "pads", [0] * 4)
        zx = int(inits[dq_x.input[2]])
        acc = np.stack([_taps_reference(r[dq_x.input[0]][0], zx, w, zw, inits[dq_b.input[0]],
                                        pads[0]) for r in runs])
        got = stats[node.name]
        assert (got.max_abs, got.outputs) == (np.abs(acc).max(), acc.size)
        assert got.overflowing == int(((acc < -(1 << 15)) | (acc > (1 << 15) - 1)).sum())


@pytest.mark.parametrize("name", ["pt_qop_se", "pc_qop_se"])
def test_qoperator_models_import_with_their_macs(models, name: str) -> None:
    """QGemm, QLinearMul (the SE scale), QLinearSigmoid and QLinearGlobalAveragePool of
    onnxruntime's domain import as their float forms, with no unknown operator: conv1 8 maps
    × 8×8 × 3·3·3, the SE 1×1 conv 8 × 8 on one pixel, conv2 6 × 6×6 × 8·3·3, fc 10 × 216."""
    from workbench import layers

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = layers.load_network(models[name])
    assert [lay.macs for lay in net if lay.macs] == [8 * 64 * 27, 8 * 8, 6 * 36 * 72, 10 * 216]
    assert [lay.kind for lay in net] == ["conv", "pool", "conv", "activation", "scale", "conv",
                                         "fc"]
