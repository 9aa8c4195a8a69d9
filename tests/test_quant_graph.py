"""Quantized inference and the greedy search follow the graph: a residual network (a branch
read twice, an element-wise sum or max) and a concat network, bit-true against a numpy
reference that walks the graph itself; chain reads of a branching network fail in one line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
import quant_reference as ref
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from workbench import layers, quant
from workbench.errors import SpecError
from workbench.layers import (
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    Network,
)
from workbench.quant import FixedFormat, LayerFormat, infer


def residual_net(op: str = "sum") -> Network:
    """x (2×6×6) → c1 → r1 → c2 → r2 → c3; add = c3 ⊕ c1 (c1 is read by r1 and add); r3; fc."""
    return Network("res", (
        ConvLayer("c1", Ox=6, Oy=6, Oc=4, Kx=3, Ky=3, Kc=2, Px=1, Py=1),
        ActivationLayer("r1", 4, 6, 6),
        ConvLayer("c2", Ox=6, Oy=6, Oc=4, Kx=3, Ky=3, Kc=4, Px=1, Py=1),
        ActivationLayer("r2", 4, 6, 6),
        ConvLayer("c3", Ox=6, Oy=6, Oc=4, Kx=1, Ky=1, Kc=4),
        EltwiseLayer("add", 4, 6, 6, inputs=2, op=op),
        ActivationLayer("r3", 4, 6, 6),
        ConvLayer.fc("fc", 4 * 36, 5)),
        inputs={"c1": ("",), "r1": ("c1",), "c2": ("r1",), "r2": ("c2",), "c3": ("r2",),
                "add": ("c3", "c1"), "r3": ("add",), "fc": ("r3",)})


def concat_net() -> Network:
    """x → c1 (3 maps) and x → c2 (2 maps, 1×1) → r2; cat = [c1, r2]; c3; fc."""
    return Network("cat", (
        ConvLayer("c1", Ox=6, Oy=6, Oc=3, Kx=3, Ky=3, Kc=2, Px=1, Py=1),
        ConvLayer("c2", Ox=6, Oy=6, Oc=2, Kx=1, Ky=1, Kc=2),
        ActivationLayer("r2", 2, 6, 6),
        ConcatLayer("cat", (3, 2), 6, 6),
        ConvLayer("c3", Ox=6, Oy=6, Oc=4, Kx=3, Ky=3, Kc=5, Px=1, Py=1),
        ConvLayer.fc("fc", 4 * 36, 5)),
        inputs={"c1": ("",), "c2": ("",), "r2": ("c2",), "cat": ("c1", "r2"), "c3": ("cat",),
                "fc": ("c3",)})


def random_params(net: Network, rng: np.random.Generator) -> dict:
    return {layer.name: (rng.normal(0, 0.5, quant.weights.weight_shape(layer)),
                         rng.normal(0, 0.5, layer.Oc)) for layer in net.tiled_layers()}


def reference(net: Network, params: dict, formats: dict, x: np.ndarray) -> np.ndarray:
    """Output codes (N × 5) following net.inputs, with the rules written out here: conv/fc as
    in quant_reference; joins align operands exactly to the finest FL, combine, then round
    once to BW = max BW, IL = max IL (+1 for a sum of two), FL = BW − 1 − IL; concat
    requantizes each operand to that format."""
    values = {"": (x, None)}  # name -> (NCHW codes or reals, (bw, fl) or None)
    for layer in net.layers:
        srcs = [values[s] for s in net.inputs[layer.name]]
        if layer.tiled:
            f = formats[layer.name]
            v, fmt = srcs[0]
            q = ref.codes(v, f.in_fmt.fl, f.in_fmt.bw) if fmt is None else \
                ref.shift(v, fmt[1] - f.in_fmt.fl, f.in_fmt.bw)
            w, b = params[layer.name]
            fl_acc = f.in_fmt.fl + f.w_fmt.fl
            q_w = ref.codes(w, f.w_fmt.fl, f.w_fmt.bw)
            q_b = ref.round_half_away(b * 2.0 ** fl_acc).astype(np.int64)
            if layer.kind == "fc":
                acc = ref.fc(q.reshape(len(q), -1), q_w, q_b, f.acc_bits, f.overflow)
            else:
                acc = ref.conv(q, q_w, q_b, layer.Px, f.acc_bits, f.overflow)
            values[layer.name] = (ref.shift(acc, fl_acc - f.out_fmt.fl, f.out_fmt.bw),
                                  (f.out_fmt.bw, f.out_fmt.fl))
        elif layer.kind == "activation":
            v, fmt = srcs[0]
            values[layer.name] = (np.maximum(v, 0), fmt)
        else:
            bw = max(fmt[0] for _, fmt in srcs)
            il = max(fmt[0] - 1 - fmt[1] for _, fmt in srcs)
            il += 1 if layer.kind == "eltwise" and layer.op == "sum" else 0
            fl = bw - 1 - il
            if layer.kind == "concat":
                out = np.concatenate([ref.shift(v, f_[1] - fl, bw) for v, f_ in srcs], axis=1)
            else:
                fine = max(fmt[1] for _, fmt in srcs)
                a, b_ = (v * 2 ** (fine - fmt[1]) for v, fmt in srcs)
                out = ref.shift(a + b_ if layer.op == "sum" else np.maximum(a, b_), fine - fl,
                                bw)
            values[layer.name] = (out, (bw, fl))
    return values[net.layers[-1].name][0]


@st.composite
def formats_for(draw: st.DrawFn, net: Network) -> dict[str, LayerFormat]:
    acc_bits = draw(st.integers(10, 28))
    mode = draw(st.sampled_from(["wrap", "saturate"]))
    out = {}
    for layer in net.tiled_layers():
        bw_in, bw_w = draw(st.integers(3, 9)), draw(st.integers(3, 9))
        out[layer.name] = LayerFormat(
            FixedFormat(bw_in, draw(st.integers(0, bw_in))),
            FixedFormat(bw_w, draw(st.integers(bw_w - 2, bw_w + 2))),
            FixedFormat(draw(st.integers(6, 16)), draw(st.integers(0, 10))), acc_bits, mode)
    return out


@pytest.mark.parametrize("make", [lambda: residual_net("sum"), lambda: residual_net("max"),
                                  concat_net], ids=["add", "max", "concat"])
@settings(max_examples=examples(15))
@given(data=st.data(), seed=st.integers(0, 2 ** 31))
def test_bit_true_along_the_graph(make, data: st.DataObject, seed: int) -> None:
    net = make()
    rng = np.random.default_rng(seed)
    params = random_params(net, rng)
    formats = data.draw(formats_for(net))
    x = rng.uniform(-3, 3, (3, 2, 6, 6))
    got = infer.forward(net, params, x, formats)
    np.testing.assert_array_equal(np.swapaxes(got.values, 0, 1), reference(net, params,
                                                                             formats, x))


def test_join_format_rule() -> None:
    net = residual_net()
    add, cat = net["add"], concat_net()["cat"]
    fmts = [FixedFormat(16, 12), FixedFormat(8, 3)]  # IL 3 and 4
    assert quant.graph.join_format(add, fmts) == FixedFormat(16, 10)  # IL 4 + 1 carry
    assert quant.graph.join_format(cat, fmts) == FixedFormat(16, 11)
    q, fmt = quant.graph.join_fixed(add, [np.array([4095]), np.array([-1])], fmts)
    # 4095·2^-12 − 2^-3 = 0.874755859375 → ·2^10 = 895.75 → 896
    assert fmt == FixedFormat(16, 10) and q.tolist() == [896]
    given = FixedFormat(8, 2)  # a model's own output format: each operand rounded to it
    a, b = np.array([[100, -7000]]), np.array([[9, -300]])
    q, fmt = quant.graph.join_fixed(cat, [a, b], fmts, given)
    # 100/2^10 → 0, -7000/2^10 = -6.8 → -7, 9/2 = 4.5 → 5, -300/2 = -150 → clipped to -128
    assert fmt == given and q.tolist() == [[0, -7], [5, -128]]


def test_float_inference_follows_the_graph() -> None:
    net = residual_net()
    params = random_params(net, np.random.default_rng(1))
    x = np.random.default_rng(2).normal(0, 1, (2, 2, 6, 6))

    def conv(v, layer):
        w, b = params[layer.name]
        return ref.conv(v, w, b, layer.Px, None, "wrap") if layer.kind == "conv" else \
            v.reshape(len(v), -1) @ w.T + b

    c1 = conv(x, net["c1"])
    c3 = conv(np.maximum(conv(np.maximum(c1, 0), net["c2"]), 0), net["c3"])
    expected = conv(np.maximum(c3 + c1, 0), net["fc"])
    np.testing.assert_allclose(infer.logits(net, params, x), expected, rtol=1e-4, atol=1e-4)


def test_chain_read_of_a_branching_network_is_one_line() -> None:
    net = residual_net()
    chain = Network("res", net.layers)  # no graph recorded
    params = random_params(net, np.random.default_rng(0))
    with pytest.raises(SpecError, match=r"layer 'add' \(eltwise\) joins 2 inputs but reads 1; "
                                        r"network 'res' records no graph"):
        infer.forward(chain, params, np.zeros((1, 2, 6, 6)))


def test_search_on_a_residual_network() -> None:
    net = residual_net()
    rng = np.random.default_rng(3)
    params = random_params(net, rng)
    x = rng.uniform(-2, 2, (64, 2, 6, 6)).astype(np.float32)
    y = infer.logits(net, params, x).argmax(axis=1)  # the float network is right by definition
    res = quant.search(net, params, x, x, y,
                       quant.SearchOptions(acc_bits=20, bound="data", jobs=1))
    assert set(res.config) == {"c1", "c2", "c3", "fc"} and res.float_accuracy == 1.0
    assert res.accuracy == quant.accuracy(net, params, x, y, res.config)
    got = infer.logits(net, params, x, res.config)
    codes = reference(net, params, res.config, x.astype(np.float64))
    np.testing.assert_array_equal(got, codes * 2.0 ** -res.config["fc"].out_fmt.fl)
    assert res.accuracy > 0.8


def _residual_onnx(path: Path, rng: np.random.Generator) -> Path:
    """A float ResNet-style block as an ONNX file: Conv-Relu-Conv, Add with the block's input,
    Relu, GlobalAveragePool, Flatten, Gemm."""
    def init(name, shape):
        return numpy_helper.from_array(rng.normal(0, 0.4, shape).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["a"], name="stem",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="stem_relu"),
             helper.make_node("Conv", ["ar", "w1", "b1"], ["h"], name="conv1",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
             helper.make_node("Conv", ["hr", "w2", "b2"], ["h2"], name="conv2",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["h2", "ar"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["sr"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["sr"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1)]
    inits = [init("w0", (4, 1, 3, 3)), init("b0", (4,)), init("w1", (4, 4, 3, 3)),
             init("b1", (4,)), init("w2", (4, 4, 3, 3)), init("b2", (4,)),
             init("w3", (3, 4)), init("b3", (3,))]
    graph = helper.make_graph(nodes, "block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_onnx_residual_block_quantizes(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    path = _residual_onnx(tmp_path / "block.onnx", rng)
    net = layers.load_network(str(path))
    params = quant.load_weights(path, net)
    x = rng.uniform(0, 1, (96, 1, 8, 8)).astype(np.float32)
    y = infer.logits(net, params, x).argmax(axis=1)
    res = quant.search(net, params, x, x, y,
                       quant.SearchOptions(acc_bits=16, bound="data", jobs=1))
    assert set(res.config) == {"stem", "conv1", "conv2", "fc"}
    assert res.accuracy == quant.accuracy(net, params, x, y, res.config)
    assert math.isfinite(res.accuracy) and res.float_accuracy == 1.0


def test_onnx_weights_fold_what_the_importer_folds(tmp_path: Path) -> None:
    """Conv without bias → BatchNormalization → Relu → Conv → Mul and Sub by per-map
    constants → GlobalAveragePool → Gemm: the float network equals a numpy reference."""
    rng = np.random.default_rng(5)
    arrays = {"w0": rng.normal(0, 0.5, (3, 1, 3, 3)), "gamma": rng.uniform(0.5, 2, 3),
              "beta": rng.normal(0, 1, 3), "mean": rng.normal(0, 1, 3),
              "var": rng.uniform(0.5, 2, 3), "w1": rng.normal(0, 0.5, (2, 3, 1, 1)),
              "b1": rng.normal(0, 1, 2), "m": rng.uniform(0.5, 2, (1, 2, 1, 1)),
              "s": rng.normal(0, 1, (1, 2, 1, 1)), "w2": rng.normal(0, 0.5, (4, 2)),
              "b2": rng.normal(0, 1, 4)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["a", "gamma", "beta", "mean", "var"],
                              ["bn"], name="bn", epsilon=1e-3),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w1", "b1"], ["c"], name="c1", kernel_shape=[1, 1]),
             helper.make_node("Mul", ["c", "m"], ["cm"], name="scale"),
             helper.make_node("Sub", ["cm", "s"], ["cs"], name="shift"),
             helper.make_node("GlobalAveragePool", ["cs"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "folded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in arrays.items()])
    path = tmp_path / "folded.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    net = layers.load_network(str(path))
    params = quant.load_weights(path, net)
    x = rng.normal(0, 1, (2, 1, 5, 5))
    a = {k: v.astype(np.float32).astype(np.float64) for k, v in arrays.items()}
    h = ref.conv(x, a["w0"], np.zeros(3), 1, None, "wrap")
    h = (h - a["mean"][:, None, None]) / np.sqrt(a["var"][:, None, None] + 1e-3) \
        * a["gamma"][:, None, None] + a["beta"][:, None, None]
    h = ref.conv(np.maximum(h, 0), a["w1"], a["b1"], 0, None, "wrap") * a["m"] - a["s"]
    expected = h.mean(axis=(2, 3)) @ a["w2"].T + a["b2"]
    np.testing.assert_allclose(infer.logits(net, params, x), expected, rtol=1e-4, atol=1e-4)


RESNET18 = Path(__file__).resolve().parents[1] / "data" / "onnx" / "resnet18.onnx"


@pytest.mark.skipif(not RESNET18.exists(), reason="the structure-only ONNX corpus is absent")
def test_resnet18_runs_bit_true_along_its_graph() -> None:
    """The issue's ResNet-18 (chain inference ended in `could not broadcast`): with random
    weights and 8-bit formats from ranges, fixed point tracks float along the graph."""
    net = layers.load_network(str(RESNET18))
    rng = np.random.default_rng(0)
    params = {layer.name: (rng.normal(0, 0.05, quant.weights.weight_shape(layer)),
                           rng.normal(0, 0.01, layer.Oc)) for layer in net.tiled_layers()}
    x = rng.uniform(0, 1, (1, *net.layers[0].in_shape)).astype(np.float32)
    found = quant.ranges(net, params, x, 1, 1)
    formats = {name: LayerFormat(quant.format_for(r.in_abs_max, 8), quant.format_for(
        r.w_abs_max, 8), quant.format_for(r.acc_abs_max, 16), 24) for name, r in found.items()}
    assert sum(layer.kind == "eltwise" for layer in net.layers) == 8
    fixed, real = infer.logits(net, params, x, formats), infer.logits(net, params, x)
    assert fixed.shape == real.shape == (1, 1000)
    assert np.corrcoef(fixed.ravel(), real.ravel())[0, 1] > 0.99
