"""Fuzzed importers: mutated ONNX files (the shipped corpus data/onnx and a hand-written model)
and prototxt files (generated deploy files: no prototxt ships), drawn by hypothesis strategies,
load correctly or fail with a one-line WorkbenchError within 10 s; never another exception,
never a hang (`test_fuzz_harness`: a worker subprocess, address space capped at 6 GiB). `make
fuzz` runs 2,000+ files per format and prints the counts.
"""

from __future__ import annotations

import functools
import random
import re
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_files import ALEXNET, ALEXNET_NAMES, LENET5, LENET5_NAMES, write_prototxt
from onnx import TensorProto, helper, numpy_helper
from test_fuzz_harness import check, fuzz_count, generate

from workbench import layers
from workbench.layers.stream_spec import AffineLayer

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "onnx"


# --- ONNX mutations ------------------------------------------------------------------------

def _small_model() -> onnx.ModelProto:
    """conv → BN → relu → pool → conv (dilated, asymmetric pads) → add → GAP → Gemm."""
    w = [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in (
        ("w1", (8, 3, 3, 3)), ("w2", (8, 8, 3, 3)), ("fc", (10, 8)), ("g", (8,)), ("b", (8,)),
        ("m", (8,)), ("v", (8,)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="c1", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["bn"],
                              name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="r"),
             helper.make_node("MaxPool", ["r"], ["p"], name="p", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["c2"], name="c2", kernel_shape=[3, 3],
                              dilations=[2, 2], pads=[2, 1, 2, 3]),
             helper.make_node("Slice", ["c2", "st", "en", "ax"], ["c2s"], name="crop"),
             helper.make_node("Add", ["p", "c2s"], ["s"], name="add"),
             helper.make_node("GlobalAveragePool", ["s"], ["gap"], name="gap"),
             helper.make_node("Flatten", ["gap"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1)]
    w += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
        ("st", [0]), ("en", [8]), ("ax", [3]))]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 3, 32, 32])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=w)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@functools.cache
def _sources() -> dict[str, bytes]:
    """The hand-written model and every shipped ONNX file, serialized."""
    files = {p.stem: p.read_bytes() for p in sorted(CORPUS.rglob("*.onnx"))}
    return {"small": _small_model().SerializeToString(), **files}


def _bad_attribute(model: onnx.ModelProto, rng: random.Random) -> str:
    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return "no attribute left"
    node = rng.choice(nodes)
    index = rng.randrange(len(node.attribute))
    attr = node.attribute[index]
    how = rng.choice(["drop", "float", "string", "short", "zero", "negative", "huge", "empty"])
    if how == "drop":
        del node.attribute[index]
    else:
        value = {"float": 1.5, "string": "abc", "short": [1], "zero": [0, 0, 0, 0],
                 "negative": [-3, -1, -2, -1], "huge": [10**9] * 4, "empty": []}[how]
        name = attr.name
        del node.attribute[index]
        node.attribute.append(helper.make_attribute(name, value) if value != [] else
                              helper.make_attribute(name, [], attr_type=onnx.AttributeProto.INTS))
    return f"{how} {attr.name} of {node.op_type}"


def _bad_graph(model: onnx.ModelProto, rng: random.Random) -> str:
    g = model.graph
    how = rng.choice(["dynamic", "opset", "unknown_op", "swap_op", "drop_input", "drop_node",
                      "drop_weight", "zero_dim", "rename_dup", "no_output", "domain"])
    if not g.node or not g.input:
        return "empty graph"
    node = rng.choice(list(g.node))
    dims = g.input[0].type.tensor_type.shape.dim
    if how in ("dynamic", "zero_dim") and len(dims) < 2:
        return "no spatial dimension"
    if how == "dynamic":
        dims[rng.randrange(1, len(dims))].dim_param = "h"
    elif how == "opset":
        model.opset_import[0].version = rng.choice([1, 5, 999])
    elif how == "unknown_op":
        node.op_type = "FancyOp"
    elif how == "swap_op":
        node.op_type = rng.choice(["Conv", "MaxPool", "Gemm", "Concat", "Resize", "Transpose",
                                   "ConvTranspose", "BatchNormalization", "Mul", "Pad"])
    elif how == "drop_input" and node.input:
        node.input[rng.randrange(len(node.input))] = ""
    elif how == "drop_node":
        g.node.remove(node)
    elif how == "drop_weight" and len(g.input) > 1:
        g.input.pop(rng.randrange(1, len(g.input)))
    elif how == "zero_dim":
        dims[rng.randrange(1, len(dims))].dim_value = 0
    elif how == "rename_dup":
        for n in g.node:
            n.name = "same"
    elif how == "no_output":
        del node.output[:]
    elif how == "domain":
        node.domain = "com.example"
    return f"{how} at {node.op_type}"


@st.composite
def mutated_onnx(draw: st.DrawFn) -> bytes:
    """A source model with 1–3 attribute or graph mutations, sometimes truncated or with
    flipped bytes."""
    name = draw(st.sampled_from(sorted(_sources())))
    rng = draw(st.randoms(use_true_random=False))
    model = onnx.ModelProto()
    model.ParseFromString(_sources()[name])
    for _ in range(draw(st.integers(1, 3))):
        (_bad_attribute if draw(st.booleans()) else _bad_graph)(model, rng)
    data = model.SerializeToString()
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "flip"]))
    if damage == "truncate":
        data = data[: draw(st.integers(1, max(1, len(data) - 1)))]
    elif damage == "flip":
        flips = bytearray(data)
        for _ in range(draw(st.integers(1, 20))):
            flips[rng.randrange(len(flips))] = rng.randrange(256)
        data = bytes(flips)
    return data


def test_mutated_onnx_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blobs = generate(mutated_onnx(), fuzz_count(200), fixed_seed=15)
    files = []
    for index, data in enumerate(blobs):
        path = tmp_path / f"m{index}.onnx"
        path.write_bytes(data)
        files.append(("network", path))
    counts = check("ONNX", files, tmp_path, capsys)
    assert counts["ok"] > 0 and counts["error"] > 0  # the mutations exercise both paths


def _deep_if(depth: int) -> onnx.ModelProto:
    """An If nested `depth` levels deep in its then-branch (protobuf allows ~30)."""
    leaf = helper.make_graph([helper.make_node("Relu", ["x"], ["y0"])], "leaf", [],
                             [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)])
    inner = leaf
    for level in range(depth):  # the else branch stays a leaf: linear, not exponential, size
        node = helper.make_node("If", ["cond"], [f"y{level + 1}"], then_branch=inner,
                                else_branch=leaf)
        inner = helper.make_graph([node], f"g{level}", [], [helper.make_tensor_value_info(
            f"y{level + 1}", TensorProto.FLOAT, None)])
    graph = helper.make_graph(list(inner.node) + [helper.make_node("Relu", ["x"], ["r"])], "deep",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, 8, 8]),
                               helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    return helper.make_model(graph)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _nested_bytes(levels: int) -> bytes:
    """ModelProto bytes nesting graph → node → attribute → graph `levels` times, written by
    hand (beyond what protobuf builds or parses)."""
    graph = b""
    for _ in range(levels):
        attr = b"\x32" + _varint(len(graph)) + graph      # AttributeProto.g
        node = b"\x2a" + _varint(len(attr)) + attr        # NodeProto.attribute
        graph = b"\x0a" + _varint(len(node)) + node       # GraphProto.node
    return b"\x3a" + _varint(len(graph)) + graph          # ModelProto.graph


def test_garbage_truncated_and_deep_onnx(tmp_path: Path) -> None:
    rng = random.Random(7)
    files = []
    for i in range(20):
        path = tmp_path / f"garbage{i}.onnx"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 4000))))
        files.append(path)
    data = (CORPUS / "resnet18.onnx").read_bytes()
    for i, cut in enumerate((1, 10, 100, len(data) // 2, len(data) - 1)):
        path = tmp_path / f"cut{i}.onnx"
        path.write_bytes(data[:cut])
        files.append(path)
    deep = tmp_path / "deep.onnx"
    deep.write_bytes(_deep_if(25).SerializeToString())
    deeper = tmp_path / "deeper.onnx"
    deeper.write_bytes(_nested_bytes(300))
    long_chain = tmp_path / "chain.onnx"
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"r{i}") for i in range(3000)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(
        "t0", TensorProto.FLOAT, [1, 2, 4, 4])], [helper.make_tensor_value_info(
            "t3000", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), str(long_chain))
    files += [deep, deeper, long_chain, tmp_path / "missing.onnx", tmp_path]
    from test_fuzz_harness import run_files

    rows = run_files([("network", f) for f in files], tmp_path)
    assert all(r["outcome"] in ("ok", "error") for r in rows), rows
    by_name = {Path(r["file"]).name: r for r in rows}
    assert by_name["chain.onnx"]["outcome"] == "ok"
    assert len(layers.load_network(long_chain)) == 3000
    assert all(by_name[f"garbage{i}.onnx"]["outcome"] == "error" for i in range(20))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(kernel=st.integers(-1, 6), stride=st.integers(-1, 4), dilation=st.integers(-1, 3),
       pads=st.lists(st.integers(-2, 4), min_size=0, max_size=5), group=st.integers(-1, 9),
       size=st.integers(0, 12), drop_kernel=st.booleans())
def test_hypothesis_conv_attributes(tmp_path: Path, kernel: int, stride: int, dilation: int,
                                    pads: list[int], group: int, size: int,
                                    drop_kernel: bool) -> None:
    """Random conv attributes in-process: a correct load or a one-line WorkbenchError."""
    from workbench.errors import WorkbenchError

    w = numpy_helper.from_array(np.zeros((8, 8 // max(group, 1) or 1, max(kernel, 1),
                                          max(kernel, 1)), np.float32), "w")
    attrs = {"strides": [stride, stride], "dilations": [dilation, dilation], "group": group}
    if pads:
        attrs["pads"] = pads
    if not drop_kernel:
        attrs["kernel_shape"] = [kernel, kernel]
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 8, size, size])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=[w])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    try:
        net = layers.load_network(path)
    except WorkbenchError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    conv = net["c"]
    k = kernel if not drop_kernel else max(kernel, 1)
    assert (conv.Kx, conv.Sx, conv.Dx, conv.groups) == (k, stride, dilation, group)
    assert conv.in_shape == (8, size, size)
    span = (k - 1) * dilation + 1
    pads = pads or [0, 0, 0, 0]
    assert len(pads) == 4 and min(pads) >= 0 and min(kernel, stride, dilation, group) >= 1
    assert conv.Ox == (size + pads[1] + pads[3] - span) // stride + 1
    assert conv.Oy == (size + pads[0] + pads[2] - span) // stride + 1


# --- prototxt mutations --------------------------------------------------------------------

RESNET_CAFFE = """name: "tiny_resnet"
input: "data"
input_shape { dim: 1 dim: 3 dim: 32 dim: 32 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 8 kernel_size: 7 stride: 2 pad: 3 bias_term: false } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "dw" type: "DepthwiseConvolution" bottom: "pool1" top: "dw"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 group: 8 } }
layer { name: "pw" type: "Convolution" bottom: "dw" top: "pw"
  convolution_param { num_output: 8 kernel_size: 1 stride: 2 bias_term: false } }
layer { name: "sum" type: "Eltwise" bottom: "pw" bottom: "pw" top: "sum" }
layer { name: "fc" type: "InnerProduct" bottom: "sum" top: "fc"
  inner_product_param { num_output: 10 } }
"""


@functools.cache
def _prototxt_sources() -> tuple[str, ...]:
    """Deploy prototxts: the tiny ResNet above, LeNet-5 and AlexNet (model_files)."""
    with tempfile.TemporaryDirectory() as folder:
        lenet = write_prototxt(Path(folder) / "lenet.prototxt", LENET5, LENET5_NAMES, (1, 28, 28))
        alex = write_prototxt(Path(folder) / "alex.prototxt", ALEXNET, ALEXNET_NAMES,
                              (3, 227, 227))
        return (RESNET_CAFFE, lenet.read_text(), alex.read_text())


PROTO_TOKENS = ["{", "}", ":", '"', "0", "-1", "abc", "layer", "1e99", "\n", "#", "'", "dim: 0",
                'type: "Convolution"', "kernel_size: 0", "stride: 0", "group: 3", 'bottom: "x"',
                "layer { }", "input_shape: 5", "convolution_param: 3", "lrn_param { beta: nan }",
                "pooling_param { pool: STOCHASTIC }", "\x00", "é", "\\"]
PROTO_VALUES = ["0", "-2", "x", "99999", "nan", "inf", "2.5", "true", '"8"', "{ }", "1e999",
                "-0", "99999999999999999999"]
FIELD = re.compile(r"(\w+): (\S+)")


@st.composite
def mutated_prototxt(draw: st.DrawFn) -> bytes:
    """A deploy prototxt with 1–4 mutations: spans cut, tokens spliced, the file truncated,
    field values replaced, a layer block repeated; sometimes invalid UTF-8."""
    text = draw(st.sampled_from(_prototxt_sources()))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["cut", "splice", "truncate", "value", "value", "repeat"]))
        if how == "cut":
            text = text[:pos] + text[pos + draw(st.integers(1, 30)):]
        elif how == "splice":
            text = text[:pos] + draw(st.sampled_from(PROTO_TOKENS)) + text[pos:]
        elif how == "truncate":
            text = text[:pos]
        elif how == "value":
            fields = list(FIELD.finditer(text))
            if fields:
                match = draw(st.sampled_from(fields))
                text = (text[:match.start(2)] + draw(st.sampled_from(PROTO_VALUES))
                        + text[match.end(2):])
        else:
            start = text.find("layer {", pos)
            if start >= 0:
                end = text.find("\nlayer", start + 1)
                text = text[:start] + text[start:end if end > 0 else None] + "\n" + text[start:]
    data = text.encode()
    if draw(st.integers(0, 19)) == 0:
        data = data + bytes([draw(st.integers(128, 255))])
    return data


def test_mutated_prototxt_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blobs = generate(mutated_prototxt(), fuzz_count(300), fixed_seed=3)
    files = []
    for index, data in enumerate(blobs):
        path = tmp_path / f"p{index}.prototxt"
        path.write_bytes(data)
        files.append(("network", path))
    nested = tmp_path / "nested.prototxt"
    nested.write_text("layer { " * 20000 + "}" * 20000)
    binary = tmp_path / "binary.prototxt"
    binary.write_bytes(bytes(range(256)) * 8)
    files += [("network", nested), ("network", binary)]
    counts = check("prototxt", files, tmp_path, capsys)
    assert counts["ok"] > 0 and counts["error"] > 0


def test_caffe_batchnorm_depthwise_and_bias_term(tmp_path: Path) -> None:
    path = tmp_path / "tiny.prototxt"
    path.write_text(RESNET_CAFFE)
    net = layers.load_network(path)
    assert [layer.name for layer in net] == ["conv1", "relu1", "pool1", "dw", "pw", "sum", "fc"]
    conv1 = net["conv1"]
    assert (conv1.in_shape, conv1.out_shape, conv1.Px_end) == ((3, 32, 32), (8, 16, 16), 2)
    assert net["dw"].groups == 8 and net["dw"].Kc == 1
    assert (net["pw"].in_shape, net["pw"].out_shape, net["pw"].Px_end) == (
        (8, 8, 8), (8, 4, 4), -1)
    # conv1 (bias_term false) gains a bias from its folded BatchNorm; pw has none
    assert net.unbiased == {"pw"} and net.biases == 8 + 8 + 10
    assert net.summary().set_index("layer").loc["pw", "biases"] == 0
    assert net.producers("sum") == ("pw", "pw") and net.producers("conv1") == ("",)
    # a BatchNorm that follows no conv: an affine layer (scale and shift per map), with the
    # Scale after it folded in
    path.write_text(RESNET_CAFFE.replace('name: "bn1" type: "BatchNorm" bottom: "conv1" '
                                         'top: "conv1"', 'name: "bn1" type: "BatchNorm" '
                                         'bottom: "data" top: "bnd"')
                    .replace('name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"',
                             'name: "scale1" type: "Scale" bottom: "bnd" top: "bnd"'))
    net = layers.load_network(path)
    assert net["bn1"] == AffineLayer("bn1", 3, 32, 32, 1, scales=3, shifts=3)
    assert "scale1" not in [layer.name for layer in net] and "conv1" in net.unbiased
