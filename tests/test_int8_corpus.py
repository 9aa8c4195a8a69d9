"""The int8 corpus (data/onnx/int8/): torchvision networks that data/make_onnx_corpus.py
exports with seeded weights and quantizes with onnxruntime's `quantize_static`:
MobileNet-v3-small ×0.25 (depthwise convolutions, squeeze-and-excitation, hard-swish,
residual adds, QGemm) per tensor in QDQ form and per channel in QOperator form, and a small
ViT (attention's two-activation products, LayerNorm, GELU, softmax, QLinearMatMul,
QLinearConcat, QLinearSoftmax) per channel in QDQ form and per tensor in QOperator form.

References, independent of the code under test:
- onnxruntime running the model as written (graph optimizations off; its fusions of a QDQ
  graph re-round inside fused kernels, i.e. another arithmetic than the file's);
- every product layer's accumulators recomputed here in numpy from its int8 input codes as
  onnxruntime computes them: Σ (x − zx)·(w − zw) in int64, a direct loop over the kernel
  taps for convolutions, plus the bias codes;
- MACs per node from the shapes onnxruntime computes.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from workbench import layers
from workbench.layers.onnx_names import short_name
from workbench.quant.int_run import run_model

ort = pytest.importorskip("onnxruntime")

FILES = Path(__file__).resolve().parents[1] / "data" / "onnx" / "int8"
NAMES = ["mobilenet_v3_small_025_pt_qdq", "mobilenet_v3_small_025_pc_qop", "vit_mini_pc_qdq",
         "vit_mini_pt_qop"]
SIDE = {"mobilenet": 96, "vit": 32}
PRODUCTS = ("Conv", "Gemm", "MatMul", "QLinearConv", "QLinearMatMul", "QGemm")


def _images(name: str, n: int) -> np.ndarray:
    side = SIDE[name.split("_")[0]]
    return np.random.default_rng(5).standard_normal((n, 3, side, side)).astype(np.float32)


def _session(model: onnx.ModelProto, optimize: bool = False):
    opts = ort.SessionOptions()
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _every_tensor(model: onnx.ModelProto, x: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Every node output, per image, as onnxruntime computes the model as written."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        model.graph.output.extend(helper.make_empty_tensor_value_info(o)
                                  for o in node.output if o and o not in known)
    session = _session(model)
    names = [o.name for o in session.get_outputs()]
    return [dict(zip(names, session.run(None, {"input": image[None]}), strict=True))
            for image in x]


def _inits(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_onnxruntime(name: str) -> None:
    """The logits equal onnxruntime's on the model as written, to a millionth of the output
    quantizer's step (they are the same codes); also with onnxruntime's graph optimizations
    on, except for the QDQ ViT, whose nodes onnxruntime then fuses and re-rounds."""
    path = FILES / f"{name}.onnx"
    model = onnx.load(str(path))
    x = _images(name, 6)
    got, stats = run_model(path, x)
    step = float(_inits(model)["logits_scale"])
    forms = [False] if name == "vit_mini_pc_qdq" else [False, True]
    for optimize in forms:
        session = _session(model, optimize)
        reference = np.concatenate([session.run(None, {"input": im[None]})[0] for im in x])
        assert reference.std() > 10 * step  # the logits differ between classes and images
        assert np.abs(got["logits"] - reference).max() <= 1e-6 * step * np.abs(
            reference / step).max()
    products = [n for n in model.graph.node if n.op_type in PRODUCTS]
    assert len(stats) == len(products) == (54 if name.startswith("mobilenet") else 14)


def _conv_reference(x: np.ndarray, w: np.ndarray, attrs: dict) -> np.ndarray:
    """Σ over taps (ky, kx) and the group's input channels of x shifted · w: int64, one
    image (x: C × H × W centered codes, w: O × C/groups × KH × KW centered codes)."""
    pads, strides = attrs.get("pads", [0, 0, 0, 0]), attrs.get("strides", [1, 1])
    groups = attrs.get("group", 1)
    xp = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    o, cg, kh, kw = w.shape
    oh = (xp.shape[1] - kh) // strides[0] + 1
    ow = (xp.shape[2] - kw) // strides[1] + 1
    acc = np.zeros((o, oh, ow), np.int64)
    og = o // groups
    for g in range(groups):
        xs, ws = xp[g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, ky:ky + strides[0] * (oh - 1) + 1:strides[0],
                           kx:kx + strides[1] * (ow - 1) + 1:strides[1]]
                acc[g * og:(g + 1) * og] += np.tensordot(ws[:, :, ky, kx], patch, axes=(1, 0))
    return acc


def _centered(codes: np.ndarray, zero: np.ndarray, axis: int) -> np.ndarray:
    zero = np.asarray(zero, np.int64)
    if zero.size > 1:
        shape = [1] * codes.ndim
        shape[axis] = -1
        zero = zero.reshape(shape)
    return codes.astype(np.int64) - zero


def _operands(node, made_by: dict, inits: dict, tensors: dict) -> tuple:
    """(x, w centered codes, bias codes or None) of one product node, the codes of its
    activation inputs as onnxruntime computed them."""
    def codes(name: str) -> np.ndarray:
        return inits[name] if name in inits else tensors[name]

    if node.op_type.startswith("Q"):  # QLinearConv, QLinearMatMul, QGemm
        w_axis = 0 if node.op_type == "QLinearConv" or _attrs(node).get("transB", 0) else 1
        x = _centered(codes(node.input[0]), inits[node.input[2]], 0)
        w = _centered(codes(node.input[3]), inits[node.input[5]], w_axis)
        slot = {"QLinearConv": 8, "QGemm": 6}.get(node.op_type)
        has_bias = slot is not None and len(node.input) > slot and node.input[slot]
        return x, w, inits[node.input[slot]].astype(np.int64) if has_bias else None
    dq_x, dq_w = made_by[node.input[0]], made_by[node.input[1]]
    w_axis = _attrs(dq_w).get("axis", 1)
    x = _centered(codes(dq_x.input[0]), inits[dq_x.input[2]], 0)
    w = _centered(codes(dq_w.input[0]), inits[dq_w.input[2]], w_axis)
    bias = None
    if len(node.input) > 2 and node.input[2] and node.input[2] in made_by:
        bias = inits[made_by[node.input[2]].input[0]].astype(np.int64)
    return x, w, bias


def _accumulators(node, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    attrs = _attrs(node)
    if node.op_type in ("Conv", "QLinearConv"):
        acc = _conv_reference(x[0], w, attrs)
        return acc + (bias.reshape(-1, 1, 1) if bias is not None else 0)
    if node.op_type in ("Gemm", "QGemm"):
        a = x.T if attrs.get("transA", 0) else x
        acc = a @ (w.T if attrs.get("transB", 0) else w)
    else:
        acc = np.matmul(x, w)
    return acc + (bias if bias is not None else 0)


@pytest.mark.parametrize("name", NAMES)
def test_accumulators_equal_a_numpy_integer_reference(name: str) -> None:
    """Per product layer: the largest accumulator magnitude, how many leave 16 bits and how
    many there are, from the model's own int8 codes (exact registers)."""
    path = FILES / f"{name}.onnx"
    model = onnx.load(str(path))
    x = _images(name, 3)
    _, stats = run_model(path, x, acc_bits=32, count_bits=16)
    runs = _every_tensor(model, x)
    inits = _inits(model)
    made_by = {o: n for n in model.graph.node for o in n.output}
    overflowing = 0
    for index, node in enumerate(model.graph.node):
        if node.op_type not in PRODUCTS:
            continue
        accs = [_accumulators(node, *_operands(node, made_by, inits, tensors))
                for tensors in runs]
        acc = np.stack(accs)
        got = stats[node.name or f"{node.op_type}_{index}"]
        assert (got.max_abs, got.outputs) == (np.abs(acc).max(), acc.size), node.name
        outside = int(((acc < -(1 << 15)) | (acc > (1 << 15) - 1)).sum())
        assert got.overflowing == outside, node.name
        assert got.max_abs <= got.weights <= got.worst
        overflowing += outside
    assert overflowing > 0  # int8 products do leave 16 bits: the counts are not all zero


def _node_macs(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> int:
    """Σ per product node: convolutions output elements × (input channels / groups) × kernel,
    matrix products output elements × K."""
    total = 0
    for node in model.graph.node:
        out = shapes[node.output[0]]
        if node.op_type in ("Conv", "QLinearConv"):
            w = shapes[node.input[3 if node.op_type == "QLinearConv" else 1]]
            total += math.prod(out) * math.prod(w[1:])
        elif node.op_type in ("MatMul", "QLinearMatMul"):
            total += math.prod(out) * shapes[node.input[0]][-1]
        elif node.op_type in ("Gemm", "QGemm"):
            a = shapes[node.input[0]]
            total += math.prod(out) * (a[0] if _attrs(node).get("transA", 0) else a[1])
    return total


@pytest.mark.parametrize("name", NAMES)
def test_macs_equal_the_per_node_formula(name: str) -> None:
    """The importer counts what onnxruntime's shapes multiply to; the QDQ and QOperator
    forms import with no warning (the GELU is matched through Q/DQ pairs and through
    QLinearAdd/QLinearMul)."""
    path = FILES / f"{name}.onnx"
    model = onnx.load(str(path))
    tensors = _every_tensor(model, _images(name, 1))[0]
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    shapes |= {k: tuple(v.shape) for k, v in _inits(model).items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = layers.load_network(path)
    assert [str(w.message) for w in caught] == []
    assert net.macs == _node_macs(model, shapes)
    if name.startswith("vit"):
        attention = [lay for lay in net if lay.kind == "other" and lay.macs]
        assert len(attention) == 4 and all(lay.inputs == 2 for lay in attention)
        assert all(lay.macs == 2 * 17 * 17 * 32 for lay in attention)  # heads × 17² × d
        assert sum(lay.kind == "layernorm" for lay in net) == 5
        gelus = [lay for lay in net if lay.kind == "activation" and lay.func == "gelu"]
        assert len(gelus) == 2


@pytest.mark.parametrize("name", ["vit_mini_pc_qdq", "vit_mini_pt_qop"])
def test_gelu_with_another_constant_is_not_a_gelu(name: str, tmp_path: Path) -> None:
    """The "1" of 1 + erf(x/√2), quantized, given twice its scale (it then dequantizes to 2):
    not a GELU; the Erf is one warning line."""
    model = onnx.load(str(FILES / f"{name}.onnx"))
    adds = [n for n in model.graph.node if n.op_type in ("Add", "QLinearAdd")
            and any("Erf" in i for i in n.input)]
    assert len(adds) == 2
    inits = {t.name: t for t in model.graph.initializer}
    made_by = {o: n for n in model.graph.node for o in n.output}
    for add in adds:
        if add.op_type == "Add":  # QDQ: DequantizeLinear(codes, scale, zero point)
            scale = made_by[next(i for i in add.input if "Erf" not in i)].input[1]
        else:  # QLinearAdd: the constant's scale follows its codes
            slot = 0 if add.input[0] in inits else 3
            scale = add.input[slot + 1]
        value = numpy_helper.to_array(inits[scale]) * 2
        inits[scale].CopyFrom(numpy_helper.from_array(value, scale))
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    with pytest.warns(UserWarning, match="unknown operator 'Erf'") as caught:
        net = layers.load_network(path)
    assert len([w for w in caught if "Erf" in str(w.message)]) == 1
    assert not [lay for lay in net if getattr(lay, "func", None) == "gelu"]


@pytest.mark.parametrize("name", ["mobilenet_v3_small_025_pc_qop", "vit_mini_pc_qdq"])
def test_cli_reports_every_product_layer(name: str, capsys) -> None:
    from workbench.cli import main

    path = FILES / f"{name}.onnx"
    assert main(["quantize", "--from-model", str(path), "--acc-bits", "16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["generated_images"] and doc["images"] == 16
    model = onnx.load(str(path))
    products = [n for n in model.graph.node if n.op_type in PRODUCTS]
    rows = {row["layer"]: row for row in doc["layers"]}
    assert len(rows) == len(products)
    for row in rows.values():
        assert row["data_bits"] <= row["weights_bits"] <= row["worst_bits"]
    assert {short_name(n.name) for n in products} == set(rows)
