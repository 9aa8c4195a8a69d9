"""The shipped structure-only ONNX corpus (data/onnx/) imports with the right counts and shapes.

Expected values are independent of the importer: MACs and parameters are recomputed here from
the ONNX graph with per-node formulas and a small shape propagation written in this file, and
checked against torchvision's published figures (the `num_params` and `_ops` GFLOPS = GMACs of
each model's IMAGENET1K_V1 weights entry; DenseNet-121 is 2.834 there, Inception-v3's
27.16 M parameters include the 3.33 M of its auxiliary classifier, which an inference export
drops).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from workbench import layers
from workbench.layers.onnx_names import short_name

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "onnx"
# model: (GMACs, parameters in millions) as published by torchvision
PUBLISHED = {
    "resnet18": (1.814, 11.689512), "resnet50": (4.089, 25.557032),
    "mobilenet_v2": (0.301, 3.504872), "mobilenet_v3_small": (0.057, 2.542856),
    "efficientnet_b0": (0.386, 5.288548), "shufflenet_v2_x1_0": (0.145, 2.278604),
    "squeezenet1_0": (0.819, 1.248424), "googlenet": (1.498, 6.624904),
    "densenet121": (2.834, 7.978856), "inception_v3": (5.713, 27.161264 - 3.326696),
}
MODELS = sorted(PUBLISHED)


def test_corpus_is_complete_and_small() -> None:
    files = {p.stem: p.stat().st_size for p in CORPUS.glob("*.onnx")}
    assert set(files) == set(PUBLISHED)
    assert max(files.values()) < 200 * 1024  # structure only: kilobytes, not megabytes
    assert set(PUBLISHED) <= set(layers.list_networks())


# --- an independent shape propagation over the corpus's operators ---------------------------

def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _window_out(size: int, k: int, s: int, pb: int, pe: int, d: int = 1,
                ceil: bool = False) -> int:
    span = (k - 1) * d + 1
    steps = (size + pb + pe - span) / s
    return int(math.ceil(steps) if ceil else math.floor(steps)) + 1


def _integer_op(op: str, v: list[np.ndarray], a: dict) -> np.ndarray:
    if op == "Gather":
        return np.take(v[0], v[1], axis=a.get("axis", 0))
    if op == "Unsqueeze":
        return np.expand_dims(v[0], tuple(v[1]) if len(v) > 1 else 0)
    if op == "Concat":
        return np.concatenate([np.atleast_1d(x) for x in v])
    return {"Add": np.add, "Mul": np.multiply, "Div": np.floor_divide,
            "Cast": lambda x, *_: x}[op](*v)


def _propagate(model: onnx.ModelProto) -> tuple[dict, dict]:
    """(shapes, values) of every tensor, evaluating integer shape arithmetic on the way."""
    g = model.graph
    shapes = {v.name: [d.dim_value or 1 for d in v.type.tensor_type.shape.dim] for v in g.input}
    values = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    shapes |= {k: list(v.shape) for k, v in values.items()}
    for n in g.node:
        a, ins = _attrs(n), [i for i in n.input]
        op, out = n.op_type, None
        s0 = shapes.get(ins[0]) if ins else None
        if op == "Constant":
            values[n.output[0]] = numpy_helper.to_array(a["value"])
        elif op == "Shape":
            values[n.output[0]] = np.array(s0, np.int64)
        elif all(i in values for i in ins if i) and op in ("Gather", "Add", "Div", "Mul",
                                                             "Unsqueeze", "Concat", "Cast"):
            values[n.output[0]] = _integer_op(op, [values[i] for i in ins if i], a)
        elif op in ("Conv", "MaxPool", "AveragePool"):
            k = a.get("kernel_shape") or shapes[ins[1]][2:]
            st, p = a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0])
            d = a.get("dilations", [1, 1])
            c = shapes[ins[1]][0] if op == "Conv" else s0[1]
            out = [s0[0], c] + [_window_out(s0[2 + i], k[i], st[i], p[i], p[2 + i], d[i],
                                            bool(a.get("ceil_mode", 0))) for i in range(2)]
        elif op in ("GlobalAveragePool", "ReduceMean"):
            out = s0[:2] + [1, 1] if a.get("keepdims", 1) else s0[:2]
        elif op == "Concat":
            out = list(s0)
            out[a["axis"]] = sum(shapes[i][a["axis"]] for i in ins)
        elif op == "Gemm":
            w = shapes[ins[1]]
            out = [s0[0], w[0] if a.get("transB", 0) else w[1]]
        elif op == "Flatten":
            out = [s0[0], math.prod(s0[1:])]
        elif op == "Reshape":
            target = [int(x) for x in values[ins[1]]]
            target = [s0[i] if t == 0 else t for i, t in enumerate(target)]
            if -1 in target:
                target[target.index(-1)] = math.prod(s0) // -math.prod(target)
            out = target
        elif op == "Transpose":
            out = [s0[p] for p in a["perm"]]
        elif op == "Slice":
            starts, ends, axes = (values[i] for i in ins[1:4])
            out = list(s0)
            for s, e, ax in zip(starts, ends, axes, strict=True):
                out[ax] = min(e, s0[ax]) - s
        elif op in ("Add", "Mul", "Sub", "Div"):
            sh = [shapes[i] for i in ins if i in shapes]
            out = list(np.broadcast_shapes(*map(tuple, sh)))
        elif op == "Expand" or op == "CastLike":
            continue
        elif ins and s0 is not None:
            out = list(s0)  # Relu, Clip, Sigmoid, HardSwish, BatchNormalization, Identity, ...
        if out is not None:
            shapes[n.output[0]] = out
        elif n.output[0] in values:
            shapes[n.output[0]] = list(values[n.output[0]].shape)
    return shapes, values


def _expected(model: onnx.ModelProto) -> dict:
    """MACs, weights and biases by per-node formulas (ONNX semantics, not the importer)."""
    shapes, _ = _propagate(model)
    g = model.graph
    readers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    macs = weights = biases = published_params = 0
    for n in g.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            macs += math.prod(shapes[n.output[0]][1:]) * math.prod(w[1:])
            weights += math.prod(w)
            bn = [r for r in readers.get(n.output[0], []) if r.op_type == "BatchNormalization"]
            has_bias = len(n.input) > 2 and bool(n.input[2])
            biases += w[0] if has_bias or bn else 0
            published_params += math.prod(w) + (w[0] if has_bias else 0)
        elif n.op_type == "Gemm":
            w = shapes[n.input[1]]
            macs += math.prod(w)
            weights += math.prod(w)
            biases += shapes[n.input[2]][-1] if len(n.input) > 2 else 0
            published_params += math.prod(w) + (shapes[n.input[2]][-1] if len(n.input) > 2 else 0)
        elif n.op_type == "BatchNormalization":
            c = shapes[n.input[1]][0]
            published_params += 2 * c
            src = next((m for m in g.node if n.input[0] in m.output), None)
            if src is None or src.op_type != "Conv":  # a stand-alone per-map scale and shift
                weights, biases = weights + c, biases + c
    return {"macs": macs, "params": weights, "biases": biases,
            "published_params": published_params, "shapes": shapes}


def _maps(shape: list[int]) -> tuple[int, int, int]:
    if len(shape) == 5:  # N × groups × C/groups × H × W inside a channel shuffle
        return (shape[1] * shape[2], shape[3], shape[4])
    return (shape[1], shape[2], shape[3]) if len(shape) == 4 else (shape[1], 1, 1)


@pytest.fixture(scope="module", params=MODELS)
def corpus_model(request):
    name = request.param
    model = onnx.load(str(CORPUS / f"{name}.onnx"))
    return name, model, _expected(model), layers.load_network(name)


def test_counts_equal_the_graph_and_the_published_figures(corpus_model) -> None:
    name, model, expected, net = corpus_model
    assert net.name == name and net.source == f"ONNX {name}.onnx"
    assert (net.macs, net.params, net.biases) == (
        expected["macs"], expected["params"], expected["biases"])
    gmacs, mparams = PUBLISHED[name]
    assert net.macs / 1e9 == pytest.approx(gmacs, rel=0.02)
    assert (net.params + net.biases) / 1e6 == pytest.approx(mparams, rel=0.02)
    assert expected["published_params"] / 1e6 == pytest.approx(mparams, rel=0.02)


def test_shapes_are_the_graph_shapes_and_chain(corpus_model) -> None:
    name, model, expected, net = corpus_model
    shapes = expected["shapes"]
    nodes = {short_name(n.name): n for n in model.graph.node}
    made_by = {o: n for n in model.graph.node for o in n.output}
    constant = {i.name for i in model.graph.initializer} | {i.name for i in model.graph.input[1:]}
    for n in model.graph.node:
        if all(i in constant for i in n.input if i):
            constant.update(n.output)
    for layer in net:
        node = nodes[layer.name]
        if layer.kind not in ("concat", "eltwise", "scale"):
            assert layer.in_shape == _maps(shapes[node.input[0]]), layer.name
        if node.op_type != "Sigmoid":  # a SiLU layer writes the output of its Mul
            assert layer.out_shape == _maps(shapes[node.output[0]]), layer.name
        tensors = [i for i in node.input if i and i not in constant]
        if layer.kind == "scale":  # producers: the feature map, then the per-map vector
            tensors.sort(key=lambda i: -math.prod(shapes[i]))
        for tensor, src in zip(tensors, net.producers(layer.name), strict=True):
            if not src:
                continue
            sliced = made_by.get(tensor) is not None and made_by[tensor].op_type == "Slice"
            got = math.prod(net[src].out_shape)
            want = (layer.parts[tensors.index(tensor)] * layer.H * layer.W
                    if layer.kind == "concat"
                    else math.prod(_maps(shapes[tensor])))
            assert (got > want) if sliced else (got == want), (layer.name, src)
    first = net.layers[0]
    side = 299 if name == "inception_v3" else 224
    assert first.in_shape == (3, side, side)


def test_resnet18_real_sizes() -> None:
    net = layers.load_network("resnet18")
    conv1, stem_out = net["conv1/Conv"], net["maxpool/MaxPool"]
    assert (conv1.Ix, conv1.Iy, conv1.Ox, conv1.Px, conv1.Px_end) == (224, 224, 112, 3, 2)
    assert stem_out.out_shape == (64, 56, 56)
    down = net["layer2.0.downsample.0/Conv"]
    assert (down.in_shape, down.out_shape, down.Px_end) == ((64, 56, 56), (128, 28, 28), -1)
    assert sum(layer.kind == "eltwise" for layer in net) == 8  # the residual Adds are shown


def _signature(net) -> list[tuple]:
    index = {layer.name: i for i, layer in enumerate(net)}
    rows = []
    for layer in net:
        fields = {k: getattr(layer, k) for k in layer.__dataclass_fields__ if k != "name"}
        rows.append((type(layer).__name__, tuple(sorted(fields.items())),
                     tuple(index.get(p, -1) for p in net.producers(layer.name)),
                     layer.name in net.unbiased))
    return rows


def test_legacy_and_dynamo_exports_give_the_same_layers() -> None:
    legacy = layers.load_network("resnet18")
    dynamo = layers.load_network(CORPUS / "variants" / "resnet18_dynamo.onnx")
    assert _signature(legacy) == _signature(dynamo)
    assert dynamo.biases == legacy.biases > 0  # its BatchNormalizations fold into the convs


def test_squeeze_and_excitation_blocks() -> None:
    """MobileNet-v3 and EfficientNet SE blocks: pool → 1×1 convs → gate → broadcast scale."""
    for name, gate in (("mobilenet_v3_small", "hardsigmoid"), ("efficientnet_b0", "sigmoid")):
        net = layers.load_network(name)
        scales = [layer for layer in net if layer.kind == "scale"]
        assert scales, name
        for scale in scales:
            feature, vector = net.producers(scale.name)
            assert net[feature].out_shape == scale.in_shape
            assert net[vector].kind == "activation" and net[vector].func == gate
            assert net[vector].out_shape == (scale.C, 1, 1)
    assert sum(layer.kind == "activation" and layer.func == "silu"
               for layer in layers.load_network("efficientnet_b0")) == 49


def test_depthwise_and_shuffle_layers() -> None:
    mnv2 = layers.load_network("mobilenet_v2")
    depthwise = [layer for layer in mnv2.tiled_layers() if layer.groups > 1]
    assert len(depthwise) == 17 and all(d.groups == d.Oc == d.in_maps for d in depthwise)
    assert sum(layer.kind == "activation" and layer.func == "relu6" for layer in mnv2) == 35
    shuffle = layers.load_network("shufflenet_v2_x1_0")
    assert [lay.groups for lay in shuffle if lay.kind == "shuffle"] == [2] * 16


def test_explore_runs_on_every_corpus_model(tmp_path: Path) -> None:
    """`workbench explore MODEL --platform idsp` in subprocesses, two at a time (their
    candidate sets, about 1 GB, go to a cache of their own, removed at the end)."""
    env = {**os.environ, "PYTHONWARNINGS": "error::UserWarning",
           "WORKBENCH_CACHE_DIR": str(tmp_path / "cache")}
    try:
        _explore_every_model(tmp_path, env)
    finally:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def _explore_every_model(tmp_path: Path, env: dict) -> None:
    start, pending = time.time(), list(MODELS)
    running: dict[str, subprocess.Popen] = {}
    codes: dict[str, int] = {}
    while pending or running:
        while pending and len(running) < 2:
            name = pending.pop(0)
            with open(tmp_path / f"{name}.out", "w") as out, \
                    open(tmp_path / f"{name}.err", "w") as err:
                running[name] = subprocess.Popen(
                    [sys.executable, "-m", "workbench.cli", "explore", name, "--platform",
                     "idsp", "--batch", "1", "--json"], stdout=out, stderr=err, env=env,
                    cwd=ROOT)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                codes[name] = proc.returncode
                del running[name]
        if time.time() - start > 600:
            for proc in running.values():
                proc.kill()
            pytest.fail(f"explore still running after 600 s on {sorted(running)}")
        time.sleep(0.2)
    for name in MODELS:
        err = (tmp_path / f"{name}.err").read_text()
        assert codes[name] == 0 and err == "", (name, err[-500:])
        doc = json.loads((tmp_path / f"{name}.out").read_text())
        net = layers.load_network(name)
        assert [row["layer"] for row in doc["rows"]] == [layer.name for layer in net]
        assert all(row["cycles"] > 0 for row in doc["rows"] if row["kind"] in ("conv", "fc"))


def test_layer_names_are_torch_module_paths() -> None:
    """Scope paths become the module path torch uses in a state dict, then the op."""
    cases = {"/features/features.1/conv/conv.0/conv.0.0/Conv": "features.1.conv.0.0/Conv",
             "/features/features.3/Add": "features.3/Add",
             "/layer1/layer1.0/relu_1/Relu": "layer1.0.relu_1/Relu",
             "/GlobalAveragePool": "GlobalAveragePool", "conv1": "conv1"}
    assert {raw: short_name(raw) for raw in cases} == cases
    net = layers.load_network("mobilenet_v2")
    assert net.layers[0].name == "features.0.0/Conv"
    assert len({layer.name for layer in net}) == len(net)
