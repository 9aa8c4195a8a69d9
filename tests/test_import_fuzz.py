"""Fuzzed importers: mutated ONNX and prototxt files (from the shipped corpus and hand-written
models) load correctly or fail with a one-line WorkbenchError; never another exception, never
a hang.

Each batch of files is loaded in one worker subprocess (address space capped at 6 GiB), every
file under a 10 s alarm, the whole batch under a subprocess timeout; the worker reports one
JSON line per file.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from workbench import layers
from workbench.layers.stream_spec import AffineLayer

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "onnx"
PER_FILE_S = 10

WORKER = r"""
import json, resource, signal, sys, warnings
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a runaway allocation fails here
from workbench import layers
from workbench.layers.stream_spec import AffineLayer
from workbench.errors import WorkbenchError

def alarm(signum, frame):
    raise TimeoutError("file took too long")

signal.signal(signal.SIGALRM, alarm)
warnings.simplefilter("ignore")
for path in json.load(open(sys.argv[1])):
    print(json.dumps({"file": path, "started": True}), flush=True)
    signal.alarm(int(sys.argv[2]))
    try:
        net = layers.load_network(path)
        ok = all(isinstance(v, int) and v > 0 for lay in net
                 for v in (*lay.in_shape, *lay.out_shape, lay.On))
        ok = ok and net.macs >= 0 and net.params >= 0 and len(net) > 0
        row = {"outcome": "ok" if ok else "bad load", "layers": len(net)}
    except WorkbenchError as exc:
        row = {"outcome": "error", "type": type(exc).__name__, "message": str(exc)}
    except BaseException as exc:
        row = {"outcome": "crash", "type": type(exc).__name__, "message": repr(exc)[:300]}
    finally:
        signal.alarm(0)
    print(json.dumps({"file": path, **row}), flush=True)
"""


def _run(files: list[Path], tmp_path: Path) -> list[dict]:
    """Load every file in a worker; the rows, or a failure naming the file that hung."""
    listing = tmp_path / f"files_{len(list(tmp_path.glob('files_*')))}.json"
    listing.write_text(json.dumps([str(f) for f in files]))
    try:
        proc = subprocess.run([sys.executable, "-c", WORKER, str(listing), str(PER_FILE_S)],
                              capture_output=True, text=True, cwd=ROOT,
                              timeout=30 + PER_FILE_S * len(files))
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        last = [json.loads(line) for line in out.splitlines() if line.strip()][-1:]
        pytest.fail(f"worker hung on {last}")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    done = [r for r in rows if "outcome" in r]
    assert len(done) == len(files), (proc.stderr[-2000:], rows[-1:])
    return done


def _check(rows: list[dict]) -> None:
    bad = [r for r in rows if r["outcome"] not in ("ok", "error")
           or (r["outcome"] == "error" and ("\n" in r["message"] or not r["message"]))]
    assert not bad, bad[:5]


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


def _sources() -> dict[str, onnx.ModelProto]:
    models = {p.stem: onnx.load(str(p)) for p in sorted(CORPUS.glob("*.onnx"))}
    return {"small": _small_model(), **{k: models[k] for k in (
        "mobilenet_v3_small", "shufflenet_v2_x1_0", "resnet18", "efficientnet_b0")}}


def _bad_attribute(model: onnx.ModelProto, rng: random.Random) -> str:
    nodes = [n for n in model.graph.node if n.attribute]
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
    node = rng.choice(list(g.node))
    if how == "dynamic":
        g.input[0].type.tensor_type.shape.dim[rng.choice([1, 2, 3])].dim_param = "h"
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
        g.input[0].type.tensor_type.shape.dim[rng.choice([1, 2, 3])].dim_value = 0
    elif how == "rename_dup":
        for n in g.node:
            n.name = "same"
    elif how == "no_output":
        del node.output[:]
    elif how == "domain":
        node.domain = "com.example"
    return f"{how} at {node.op_type}"


def _mutated_onnx(tmp_path: Path, count: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    sources = _sources()
    files = []
    for i in range(count):
        name = rng.choice(list(sources))
        model = onnx.ModelProto()
        model.CopyFrom(sources[name])
        for _ in range(rng.randint(1, 3)):
            (_bad_attribute if rng.random() < 0.5 else _bad_graph)(model, rng)
        data = model.SerializeToString()
        if rng.random() < 0.15:
            data = data[: rng.randrange(1, len(data))]  # truncated
        elif rng.random() < 0.1:
            flips = bytearray(data)
            for _ in range(rng.randint(1, 20)):
                flips[rng.randrange(len(flips))] = rng.randrange(256)
            data = bytes(flips)
        path = tmp_path / f"m{seed}_{i}_{name}.onnx"
        path.write_bytes(data)
        files.append(path)
    return files


def test_mutated_onnx_files(tmp_path: Path) -> None:
    files = _mutated_onnx(tmp_path, 150, seed=15)
    rows = _run(files, tmp_path)
    _check(rows)
    outcomes = {r["outcome"] for r in rows}
    assert outcomes == {"ok", "error"}  # the mutations exercise both paths


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
    rows = _run(files, tmp_path)
    _check(rows)
    by_name = {Path(r["file"]).name: r for r in rows}
    assert by_name["chain.onnx"]["outcome"] == "ok" and by_name["chain.onnx"]["layers"] == 3000
    assert all(by_name[f"garbage{i}.onnx"]["outcome"] == "error" for i in range(20))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
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


def _mutated_prototxt(tmp_path: Path, count: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    base = RESNET_CAFFE
    tokens = ["{", "}", ":", '"', "0", "-1", "abc", "layer", "1e99", "\n", "#", "'", "dim: 0",
              "type: \"Convolution\"", "kernel_size: 0", "stride: 0", "group: 3", "bottom: \"x\""]
    files = []
    for i in range(count):
        text = base
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(text))
            how = rng.random()
            if how < 0.3:
                text = text[:pos] + text[pos + rng.randint(1, 30):]
            elif how < 0.6:
                text = text[:pos] + rng.choice(tokens) + text[pos:]
            elif how < 0.8:
                text = text[:pos]
            else:
                text = text.replace(rng.choice(["8", "3", "2", "1"]),
                                    rng.choice(["0", "-2", "x", "99999"]), 1)
        path = tmp_path / f"p{seed}_{i}.prototxt"
        path.write_text(text)
        files.append(path)
    nested = tmp_path / "nested.prototxt"
    nested.write_text("layer { " * 20000 + "}" * 20000)
    binary = tmp_path / "binary.prototxt"
    binary.write_bytes(bytes(range(256)) * 8)
    return [*files, nested, binary]


def test_mutated_prototxt_files(tmp_path: Path) -> None:
    rows = _run(_mutated_prototxt(tmp_path, 120, seed=3), tmp_path)
    _check(rows)
    assert {r["outcome"] for r in rows} == {"ok", "error"}


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
