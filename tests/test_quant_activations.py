"""Activations with parameters, from ONNX, Caffe and network files, and every activation in
quantized inference (PReLU with its slopes from the weights): the importer keeps each node's
attributes, and inference on the imported layer equals ONNX's own reference implementation
(`onnx.reference`) of the node."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from test_importers import _model

from workbench import layers
from workbench.errors import SpecError
from workbench.layers import ActivationLayer
from workbench.quant.act import Act
from workbench.quant.fixed import FixedFormat, to_fixed, to_float
from workbench.quant.graph import FUNCS
from workbench.quant.maps import activation

SHAPE = [1, 3, 5, 7]
# (ONNX op, its attributes, the function imported, its (alpha, beta) after import, defaults
# filled in: ONNX's)
CASES = [
    ("Sigmoid", {}, "sigmoid", (None, None)),
    ("Tanh", {}, "tanh", (None, None)),
    ("HardSigmoid", {}, "hardsigmoid", (0.2, 0.5)),
    ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, "hardsigmoid", (0.1666667, 0.5)),
    ("HardSwish", {}, "hardswish", (1 / 6, 0.5)),
    ("LeakyRelu", {}, "leaky_relu", (0.01, None)),
    ("LeakyRelu", {"alpha": 0.1}, "leaky_relu", (0.1, None)),
    ("Elu", {"alpha": 0.7}, "elu", (0.7, None)),
    ("Selu", {}, "selu", (1.67326319217681884765625, 1.05070102214813232421875)),
    ("Gelu", {}, "gelu", (None, None)),
    ("Gelu", {"approximate": "tanh"}, "gelu_tanh", (None, None)),
    ("Softplus", {}, "softplus", (None, None)),
    ("Mish", {}, "mish", (None, None)),
]


def _inputs() -> np.ndarray:
    """Values across every activation's bends, ±8 included."""
    x = np.linspace(-8, 8, int(np.prod(SHAPE)), dtype=np.float32)
    return np.random.default_rng(0).permutation(x).reshape(SHAPE)


def _run(tmp_path: Path, nodes: list, inits: list | None = None, opset: int = 20):
    """The imported network, and ONNX's reference output on `_inputs()`."""
    path = _model(tmp_path, nodes, inits or [], SHAPE, "y", opset=opset)
    net = layers.load_network(path)
    return net, ReferenceEvaluator(str(path)).run(None, {"x": _inputs()})[0]


@pytest.mark.parametrize(("op", "attrs", "func", "params"), CASES,
                         ids=[f"{c[0]}{'-' + str(c[1]) if c[1] else ''}" for c in CASES])
def test_onnx_activation_equals_the_reference(tmp_path: Path, op, attrs, func, params) -> None:
    net, want = _run(tmp_path, [helper.make_node(op, ["x"], ["y"], name="act", **attrs)])
    layer = net["act"]
    assert (layer.func, *layer.parameters) == (func, *params)
    assert func in FUNCS
    got = activation(layer, Act(_inputs()), owned=False).values
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


def test_clip_bounds_are_kept_and_work_on_codes(tmp_path: Path) -> None:
    """Clip(−1.5, 2.25) on floats as ONNX does, and on 8-bit codes with 4 fractional bits as
    the nearest codes (the bounds are exact codes here: the result is exact)."""
    inits = [helper.make_tensor("lo", 1, [], [-1.5]), helper.make_tensor("hi", 1, [], [2.25])]
    net, want = _run(tmp_path, [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="c")],
                     inits)
    layer = net["c"]
    assert (layer.func, layer.alpha, layer.beta) == ("clip", -1.5, 2.25)
    np.testing.assert_array_equal(activation(layer, Act(_inputs()), owned=False).values, want)
    fmt = FixedFormat(8, 4)
    codes = to_fixed(_inputs(), fmt)
    out = activation(layer, Act(codes, fmt), owned=False)
    assert out.fmt == fmt
    np.testing.assert_array_equal(to_float(out.values, fmt),
                                  np.clip(to_float(codes, fmt), -1.5, 2.25))
    upper = _run(tmp_path, [helper.make_node("Clip", ["x", "", "hi"], ["y"], name="c")],
                 inits)[0]["c"]
    assert (upper.func, upper.alpha, upper.beta) == ("clip", None, 2.25)


def test_x_times_hardsigmoid_keeps_its_parameters(tmp_path: Path) -> None:
    """Mul(x, HardSigmoid(x)) folds into one hardswish with the HardSigmoid's alpha and beta:
    ONNX's default alpha 0.2 is not HardSwish's 1/6, and the result still equals the two
    nodes run by the reference."""
    for attrs, alpha in (({}, 0.2), ({"alpha": 1 / 6}, 0.1666667)):
        net, want = _run(tmp_path, [
            helper.make_node("HardSigmoid", ["x"], ["g"], name="gate", **attrs),
            helper.make_node("Mul", ["x", "g"], ["y"], name="mul")])
        (layer,) = net.layers
        assert (layer.func, layer.alpha, layer.beta) == ("hardswish", alpha, 0.5)
        got = activation(layer, Act(_inputs()), owned=False).values
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


def test_caffe_negative_slope_is_a_leaky_relu(tmp_path: Path) -> None:
    path = tmp_path / "n.prototxt"
    path.write_text("""name: "n" input: "data" input_dim: 1 input_dim: 2 input_dim: 4
    input_dim: 4
    layer { name: "r" type: "ReLU" bottom: "data" top: "r" relu_param { negative_slope: 0.1 } }
    layer { name: "p" type: "ReLU" bottom: "r" top: "p" }""")
    net = layers.load_network(path)
    assert (net["r"].func, net["r"].alpha) == ("leaky_relu", 0.1)
    assert (net["p"].func, net["p"].alpha) == ("relu", None)


def test_caffe_prelu_and_elu_mtcnn_pnet(tmp_path: Path) -> None:
    """MTCNN's P-Net deploy (Zhang et al. 2016) as its prototxt writes it: PReLU after each
    3x3 conv, one slope per channel. Its parameters by hand: weights 3·10·9 + 10·16·9 +
    16·32·9 + 32·2 + 32·4 = 6,510, biases 10 + 16 + 32 + 2 + 4 = 64, slopes 10 + 16 + 32 = 58;
    6,632 in all; a channel_shared PReLU has one slope, and an ELU keeps its alpha."""
    conv = ('layer {{ name: "{0}" type: "Convolution" bottom: "{1}" top: "{0}" '
            'convolution_param {{ num_output: {2} kernel_size: {3} }} }}\n')
    prelu = 'layer {{ name: "{0}" type: "PReLU" bottom: "{1}" top: "{1}" }}\n'
    path = tmp_path / "pnet.prototxt"
    path.write_text(
        'name: "PNet" input: "data" input_dim: 1 input_dim: 3 input_dim: 12 input_dim: 12\n'
        + conv.format("conv1", "data", 10, 3) + prelu.format("PReLU1", "conv1")
        + 'layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" '
          'pooling_param { pool: MAX kernel_size: 2 stride: 2 } }\n'
        + conv.format("conv2", "pool1", 16, 3) + prelu.format("PReLU2", "conv2")
        + conv.format("conv3", "conv2", 32, 3) + prelu.format("PReLU3", "conv3")
        + conv.format("conv4-1", "conv3", 2, 1) + conv.format("conv4-2", "conv3", 4, 1))
    net = layers.load_network(path)
    assert [net[n].slopes for n in ("PReLU1", "PReLU2", "PReLU3")] == [10, 16, 32]
    assert net.params == 6510 + 58
    assert int(net.summary()["biases"].sum()) + net.params == 6632
    path.write_text('name: "n" input: "data" input_dim: 1 input_dim: 2 input_dim: 4 '
                    'input_dim: 4\nlayer { name: "p" type: "PReLU" bottom: "data" top: "p" '
                    'prelu_param { channel_shared: true } }\nlayer { name: "e" type: "ELU" '
                    'bottom: "p" top: "e" elu_param { alpha: 0.5 } }\n')
    net = layers.load_network(path)
    assert (net["p"].func, net["p"].slopes, net["e"].func, net["e"].alpha) == \
        ("prelu", 1, "elu", 0.5)
    path.write_text(path.read_text().replace("channel_shared: true", "channel_shared: 2"))
    with pytest.raises(SpecError, match="prelu_param.channel_shared must be true or false"):
        layers.load_network(path)


def test_network_files_take_alpha_and_beta(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text("name: n\ninput: [2, 4, 4]\nlayers:\n"
                    "  - {name: a, type: leaky_relu, alpha: 2e-1}\n"  # YAML 1.2's float
                    "  - {name: b, type: hardsigmoid}\n"
                    "  - {name: c, type: clip, alpha: 0, beta: 4}\n")
    net = layers.load_network(path)
    assert (net["a"].parameters, net["b"].parameters, net["c"].parameters) == \
        ((0.2, None), (0.2, 0.5), (0.0, 4.0))
    shown = net.summary().set_index("layer")["function"]  # `workbench show` prints them
    assert list(shown) == ["leaky_relu(α=0.2)", "hardsigmoid", "clip(α=0, β=4)"]
    path.write_text("name: n\ninput: [2, 4, 4]\nlayers:\n"
                    "  - {name: a, type: leaky_relu, beta: 0.2}\n")
    with pytest.raises(SpecError, match="layer 'a': activation 'leaky_relu' takes no beta"):
        layers.load_network(path)


def test_network_files_give_prelu_its_slope_count(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text("name: n\ninput: [2, 4, 4]\nlayers:\n  - {name: a, type: prelu, slopes: 2}\n"
                    "  - {name: b, type: prelu}\n")
    net = layers.load_network(path)
    assert (net["a"].params, net["b"].params, net.params) == (2, 0, 2)
    for line, rule in (("{name: a, type: relu, slopes: 2}", "layers\\[0\\].slopes"),
                       ("{name: a, type: prelu, slopes: -1}", "layers\\[0\\].slopes"),
                       ("{name: a, type: prelu, slopes: 33}",
                        "layer 'a': slopes 33 is no slope shape's size on its 2×4×4 map "
                        "\\(one of 1, 2, 4, 8, 16, 32: 1, C, H, W or their products"),
                       ("{name: a, type: prelu, slopes: 3}", "slopes 3 is no slope shape's")):
        path.write_text(f"name: n\ninput: [2, 4, 4]\nlayers:\n  - {line}\n")
        with pytest.raises(SpecError, match=rule):
            layers.load_network(path)


def test_onnx_parameters_are_checked_under_their_onnx_names(tmp_path: Path) -> None:
    for node, inits, rule in (
            (helper.make_node("Selu", ["x"], ["y"], name="z", gamma=float("nan")), [],
             "layer 'z' \\(Selu\\): gamma must be a finite number, got nan"),
            (helper.make_node("Clip", ["x", "lo"], ["y"], name="z"),
             [helper.make_tensor("lo", 1, [], [float("inf")])],
             "layer 'z' \\(Clip\\): min must be a finite number, got inf")):
        path = _model(tmp_path, [node], inits, SHAPE, "y", opset=20)
        with pytest.raises(SpecError, match=rule):
            layers.load_network(path)


@pytest.mark.parametrize(("kwargs", "rule"), [
    ({"func": "relu", "alpha": 0.1}, "activation 'relu' takes no alpha"),
    ({"func": "elu", "alpha": float("nan")}, "alpha must be a finite number"),
    ({"func": "clip", "alpha": 3.0, "beta": 1.0}, "clip's alpha \\(min\\) 3.0 is above"),
    ({"func": "relu", "slopes": 2}, "only prelu has slopes, not 'relu'"),
    ({"func": "prelu", "slopes": 1.0}, "slopes must be a positive integer, got 1.0"),
    ({"func": "prelu", "slopes": 0.0}, "slopes must be a positive integer, got 0.0"),
])
def test_bad_activation_parameters_are_one_line_errors(kwargs, rule) -> None:
    with pytest.raises(SpecError, match=rule):
        ActivationLayer("act", 2, 4, 4, **kwargs)


@pytest.mark.parametrize("slopes", [[0.1, -0.2, 0.3], [0.25]])
def test_prelu_runs_with_its_slopes(tmp_path: Path, slopes) -> None:
    """PRelu with one slope per channel or one for all: the slopes come with the weights
    (the ONNX file's constant, or "<layer>.slope" in an .npz) and inference equals the
    reference; without them, one line."""
    from workbench.quant.infer import logits
    from workbench.quant.weights import load_weights

    shape = [len(slopes), 1, 1] if len(slopes) > 1 else [1]
    slope = helper.make_tensor("s", 1, shape, slopes)
    net, want = _run(tmp_path, [helper.make_node("PRelu", ["x", "s"], ["y"], name="p")], [slope])
    assert net["p"].func == "prelu" and "prelu" in FUNCS
    assert net["p"].params == len(slopes)  # the slopes are its params, as `workbench show` says
    assert net.summary().set_index("layer")["params"]["p"] == len(slopes)
    params = load_weights(tmp_path / "model.onnx", net)
    got = logits(net, params, _inputs())
    np.testing.assert_allclose(got, want.reshape(len(got), -1), rtol=1e-6, atol=1e-7)
    npz = tmp_path / "w.npz"
    np.savez(npz, **{"p.slope": np.array(slopes, dtype=np.float32).reshape(shape)})
    np.testing.assert_array_equal(logits(net, load_weights(npz, net), _inputs()), got)
    np.savez(npz, **{"p.slope": np.zeros(1), "q.slope": np.zeros(1)})
    with pytest.raises(SpecError, match="q.slope: only prelu layers take slopes; prelu layers: p"):
        load_weights(npz, net)
    np.savez(npz, other=np.zeros(1))
    with pytest.raises(SpecError, match="p.slope: no slopes for PReLU layer 'p'"):
        load_weights(npz, net)
    np.savez(npz, **{"p.slope": np.zeros(2)})
    with pytest.raises(SpecError, match=r"p.slope of shape \(2,\) does not broadcast against "
                                        r"its input N×3×5×7, as ONNX's PRelu requires"):
        load_weights(npz, net)
    if len(slopes) > 1:  # one slope broadcasts, but the layer was imported with three
        np.savez(npz, **{"p.slope": np.zeros(1)})
        with pytest.raises(SpecError, match="p.slope: 1 values, but layer 'p' has slopes: 3"):
            load_weights(npz, net)


def test_prelu_slopes_broadcast_as_onnx_broadcasts_them(tmp_path: Path) -> None:
    """A slope of shape (W,) applies along the columns, (H, W) per pixel, (C, 1, 1) per
    channel, as ONNX's reference does; NaN slopes are named as such."""
    from workbench.quant.infer import logits
    from workbench.quant.weights import load_weights

    rng = np.random.default_rng(2)
    for shape in ([SHAPE[3]], [SHAPE[2], SHAPE[3]], [SHAPE[1], 1, 1], SHAPE[1:], [1]):
        values = rng.uniform(-0.5, 0.5, shape).astype(np.float32)
        slope = helper.make_tensor("s", 1, shape, values.ravel())
        net, want = _run(tmp_path, [helper.make_node("PRelu", ["x", "s"], ["y"], name="p")],
                         [slope])
        got = logits(net, load_weights(tmp_path / "model.onnx", net), _inputs())
        np.testing.assert_allclose(got, want.reshape(len(got), -1), rtol=1e-6, atol=1e-7)
        assert net["p"].params == int(np.prod(shape))
    for shape in ([3], [1, 1, 1, 1, 1], [2, 1, 1]):  # refused on import, named as in ONNX
        slope = helper.make_tensor("s", 1, shape, np.zeros(int(np.prod(shape))))
        path = _model(tmp_path, [helper.make_node("PRelu", ["x", "s"], ["y"], name="p")],
                      [slope], SHAPE, "y", opset=20)
        with pytest.raises(SpecError, match=f"layer 'p' \\(PRelu\\): slope of shape "
                                            f"{re.escape(str(tuple(shape)))} does not broadcast"
                                            " against its input \\(1, 3, 5, 7\\) \\(per "
                                            "channel: \\(3, 1, 1\\)\\)"):
            layers.load_network(path)
    nan = helper.make_tensor("s", 1, [3, 1, 1], [0.1, float("nan"), 0.2])
    net, _ = _run(tmp_path, [helper.make_node("PRelu", ["x", "s"], ["y"], name="p")], [nan])
    with pytest.raises(SpecError, match="p.slope: holds NaN or infinity"):
        load_weights(tmp_path / "model.onnx", net)


def test_a_network_with_modern_activations_runs_float_and_bit_true(tmp_path: Path) -> None:
    """Conv → HardSwish → Conv → LeakyRelu(0.1) → Flatten → Gemm → Mish, with weights: the
    float run of the imported network equals ONNX's reference run of the file, and the
    fixed-point run (16-bit formats, 32-bit accumulators) stays within its rounding of it."""
    from onnx import numpy_helper

    from workbench.quant.infer import LayerFormat, logits
    from workbench.quant.weights import load_weights

    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.normal(0, 0.4, shape).astype(np.float32), name)
             for name, shape in (("w1", (4, 3, 3, 3)), ("b1", (4,)), ("w2", (5, 4, 3, 3)),
                                 ("b2", (5,)), ("w3", (6, 5 * 5 * 3)), ("b3", (6,)))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1"),
             helper.make_node("HardSwish", ["c1"], ["h1"], name="hswish"),
             helper.make_node("Conv", ["h1", "w2", "b2"], ["c2"], name="conv2", pads=[1] * 4),
             helper.make_node("LeakyRelu", ["c2"], ["l2"], name="leaky", alpha=0.1),
             helper.make_node("Flatten", ["l2"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["g"], name="fc", transB=1),
             helper.make_node("Mish", ["g"], ["y"], name="mish")]
    path = _model(tmp_path, nodes, inits, SHAPE, "y", opset=20)
    net = layers.load_network(path)
    params = load_weights(path, net)
    x = _inputs() / 4
    want = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(logits(net, params, x), want, rtol=1e-5, atol=1e-6)
    fmt = {name: LayerFormat(FixedFormat(16, 12), FixedFormat(16, 14), FixedFormat(16, 10), 32)
           for name in ("conv1", "conv2", "fc")}
    fixed = logits(net, params, x, fmt)
    assert not np.array_equal(fixed, logits(net, params, x))  # it did run in fixed point
    np.testing.assert_allclose(fixed, want, atol=0.02)


def test_qdq_prelu_reads_its_quantized_slopes(tmp_path: Path) -> None:
    """A QDQ model with a PRelu whose slopes are int8 codes at 2^-7: read as their real values
    exactly, and the bit-true run follows ONNX's reference run of the model to within one
    output step (2^-3; the two round ties differently)."""
    from qdq_models import _Graph

    from workbench.quant.from_model import load_quantized
    from workbench.quant.infer import logits

    rng = np.random.default_rng(4)
    g = _Graph()
    a = g.qdq("x", 4, "in")
    w = rng.integers(-60, 61, (3, 2, 3, 3))
    g.weight("w1", w, np.array(2.0 ** -6))
    g.nodes.append(helper.make_node("Conv", [a, "w1"], ["c1"], name="conv1",
                                    kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    a = g.qdq("c1", 3, "c1")
    codes = np.array([13, -26, 64]).reshape(3, 1, 1)
    g.weight("slope", codes, np.array(2.0 ** -7))
    g.nodes.append(helper.make_node("PRelu", [a, "slope"], ["y"], name="p"))
    path = g.save(tmp_path / "q.onnx", [1, 2, 6, 6], "y", [1, 3, 6, 6])
    proto = onnx.load(str(path))  # opset 21: onnx.reference's QuantizeLinear starts at 19
    proto.opset_import[0].version = 21
    onnx.save(proto, str(path))
    model = load_quantized(path, acc_bits=32)
    np.testing.assert_array_equal(model.params["p"], codes / 128)
    x = rng.uniform(-4, 4, (2, 2, 6, 6)).astype(np.float32)
    want = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    got = logits(model.net, model.params, x, model.formats)
    np.testing.assert_allclose(got, want.reshape(2, -1), atol=2.0 ** -3 + 1e-9)
