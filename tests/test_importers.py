"""ONNX and Caffe prototxt imports give the same Network as the zoo files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from model_files import ALEXNET, ALEXNET_NAMES, LENET5, LENET5_NAMES, write_onnx, write_prototxt
from onnx import TensorProto, helper

from workbench import layers
from workbench.errors import FileFormatError, SpecError
from workbench.layers.caffe_import import parse_prototxt
from workbench.layers.stream_spec import AffineLayer, ScaleLayer

CASES = {"lenet5": (LENET5, LENET5_NAMES, (1, 28, 28)),
         "alexnet_oxford102": (ALEXNET, ALEXNET_NAMES, (3, 227, 227))}


def _same_layers(imported: layers.Network, zoo: layers.Network) -> None:
    assert [type(a) for a in imported] == [type(b) for b in zoo]
    for got, want in zip(imported, zoo, strict=True):
        assert got == want, (got, want)
    assert imported.macs == zoo.macs and imported.params == zoo.params


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_import_matches_zoo(name: str, tmp_path: Path) -> None:
    ops, names, shape = CASES[name]
    path = write_onnx(tmp_path / f"{name}.onnx", ops, names, shape, batch=8)
    _same_layers(layers.load_network(path), layers.load_network(name, batch=8))


def test_onnx_import_with_real_initializers(tmp_path: Path) -> None:
    path = write_onnx(tmp_path / "lenet.onnx", LENET5, LENET5_NAMES, (1, 28, 28),
                      real_weights=True)
    assert len(onnx.load(str(path)).graph.initializer) == 4
    _same_layers(layers.load_network(path), layers.load_network("lenet5"))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("legacy", [False, True])
def test_prototxt_import_matches_zoo(name: str, legacy: bool, tmp_path: Path) -> None:
    ops, names, shape = CASES[name]
    path = write_prototxt(tmp_path / f"{name}.prototxt", ops, names, shape, batch=2,
                          legacy_input=legacy)
    _same_layers(layers.load_network(path), layers.load_network(name, batch=2))


def test_onnx_asymmetric_padding_and_global_pool(tmp_path: Path) -> None:
    """A TF-style 'same' stride-2 conv (pads 0,0,1,1) and a global average pool."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3, 3, 3])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="c", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[0, 0, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["g"], name="g")]
    graph = helper.make_graph(nodes, "g", [x, w], [helper.make_tensor_value_info(
        "g", TensorProto.FLOAT, None)])
    path = tmp_path / "same.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    net = layers.load_network(path)
    assert net["c"].out_shape == (4, 4, 4) and net["c"].macs == 4 * 4 * 4 * 27
    assert net["g"].out_shape == (4, 1, 1)


def test_onnx_bad_inputs(tmp_path: Path) -> None:
    garbage = tmp_path / "bad.onnx"
    garbage.write_bytes(b"\x00not a protobuf at all\xff" * 10)
    with pytest.raises(FileFormatError, match="bad.onnx.*cannot load"):
        layers.load_network(garbage)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Erf", ["x"], ["y"], name="e")], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "erf.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(SpecError, match="node 'e': unknown operator 'Erf'"):
        layers.load_network(path, strict=True)
    with pytest.warns(UserWarning, match="unknown operator 'Erf'") as caught:
        net = layers.load_network(path)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert net["e"].kind == "other" and net["e"].out_shape == (3, 8, 8)


def test_prototxt_parser_and_errors(tmp_path: Path) -> None:
    doc = parse_prototxt('name: "n" # comment\nlayer { name: \'a\' type: "ReLU" top: "x" '
                         'param { lr_mult: 1 } }\ninput_dim: 1')
    assert doc["name"] == ["n"] and doc["layer"][0]["param"][0]["lr_mult"] == [1]
    bad = tmp_path / "bad.prototxt"
    bad.write_text('layer { name: "a" type: "ReLU" ')
    with pytest.raises(FileFormatError, match="missing '}'"):
        layers.load_network(bad)
    bad.write_text('layer { name: "d" type: "Deconvolution" bottom: "data" top: "d" }\n'
                   'input: "data" input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8')
    with pytest.raises(SpecError, match="unknown layer type 'Deconvolution'"):
        layers.load_network(bad)
    bad.write_text('layer { name: "c" type: "Convolution" bottom: "data" top: "c" }')
    with pytest.raises(FileFormatError, match="reads blob 'data' that no layer produced"):
        layers.load_network(bad)
    for scalar in ("5", '"abc"'):  # a scalar where a block belongs (an AttributeError before)
        bad.write_text('input: "data" input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8\n'
                       'layer { name: "c" type: "Convolution" bottom: "data" top: "c" '
                       f'convolution_param: {scalar} }}')
        with pytest.raises(SpecError, match=r"prototxt layer 'c' \(Convolution\): "
                                            r"convolution_param must be a \{ \.\.\. \} block "
                                            r"of fields, got (5|'abc')$"):
            layers.load_network(bad)


def _conv_node(name: str, x: str, maps: int, channels: int, inits: list) -> onnx.NodeProto:
    inits.append(onnx.numpy_helper.from_array(np.zeros((maps, channels, 1, 1), np.float32),
                                              f"{name}_w"))
    return helper.make_node("Conv", [x, f"{name}_w"], [name], name=name, kernel_shape=[1, 1])


def _save(tmp_path: Path, nodes: list, inits: list, shape: list[int], out: str) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(
        out, TensorProto.FLOAT, None)], initializer=inits)
    path = tmp_path / "joins.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_onnx_eltwise_and_concat(tmp_path: Path) -> None:
    """A residual Add, a channel Concat, Mul/Sum/Max of data tensors become layers; a bias Add
    and a scale by a Constant after a non-conv layer are affine layers (after a conv they fold,
    see test_onnx_folds_into_conv); the Concat of a flatten's shape arithmetic is passed over."""
    inits = [onnx.numpy_helper.from_array(np.zeros((4, 1, 1), np.float32), "bias"),
             onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"),
             onnx.numpy_helper.from_array(np.array([0], np.int64), "axes"),
             onnx.numpy_helper.from_array(np.array([-1], np.int64), "rest")]
    nodes = [_conv_node("c1", "x", 4, 4, inits),
             helper.make_node("Add", ["x", "c1"], ["res"], name="res"),
             helper.make_node("Add", ["res", "bias"], ["biased"], name="biased"),
             _conv_node("b1", "biased", 2, 4, inits), _conv_node("b2", "biased", 3, 4, inits),
             helper.make_node("Concat", ["b1", "b2"], ["cat"], name="cat", axis=1),
             helper.make_node("Mul", ["cat", "cat"], ["sq"], name="sq"),
             helper.make_node("Sum", ["sq", "cat", "cat"], ["sum3"], name="sum3"),
             helper.make_node("Max", ["sum3", "cat"], ["top"], name="top"),
             helper.make_node("Constant", [], ["half"], name="half",
                              value=helper.make_tensor("h", TensorProto.FLOAT, [], [0.5])),
             helper.make_node("Mul", ["top", "half"], ["scaled"], name="scaled"),
             helper.make_node("Shape", ["scaled"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "zero"], ["n"], name="n"),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="n1"),
             helper.make_node("Concat", ["n1", "rest"], ["flat_shape"], name="flat_shape",
                              axis=0),
             helper.make_node("Reshape", ["scaled", "flat_shape"], ["flat"], name="flat")]
    net = layers.load_network(_save(tmp_path, nodes, inits, [2, 4, 6, 6], "flat"))
    assert [layer.name for layer in net] == ["c1", "res", "biased", "b1", "b2", "cat", "sq",
                                             "sum3", "top", "scaled"]
    assert net["biased"] == AffineLayer("biased", 4, 6, 6, 2, shifts=4)
    assert net["scaled"] == AffineLayer("scaled", 5, 6, 6, 2, scales=1)
    assert net.producers("b1") == ("biased",) and net.producers("res") == ("", "c1")
    assert net["res"] == layers.EltwiseLayer("res", 4, 6, 6, 2, inputs=2, op="sum")
    assert net["cat"] == layers.ConcatLayer("cat", (2, 3), 6, 6, 2)
    assert (net["sq"].op, net["sq"].inputs) == ("prod", 2)
    assert (net["sum3"].op, net["sum3"].inputs, net["sum3"].ops) == ("sum", 3, 2 * 5 * 36 * 2)
    assert (net["top"].op, net["top"].C) == ("max", 5)


def test_onnx_other_joins(tmp_path: Path) -> None:
    """Concat along rows is a generic layer; the squeeze-and-excitation Mul of a map by a
    per-map vector a scale layer; Sub of two maps an eltwise layer."""
    nodes = [helper.make_node("Concat", ["x", "x"], ["y"], name="rows", axis=2)]
    net = layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))
    assert (net["rows"].kind, net["rows"].in_shape, net["rows"].out_shape, net["rows"].inputs) \
        == ("other", (4, 6, 6), (4, 12, 6), 2)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="g"),
             helper.make_node("Mul", ["x", "g"], ["y"], name="se")]
    net = layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))
    assert net["se"] == ScaleLayer("se", 4, 6, 6, 1, op="prod")
    assert net.producers("se") == ("", "g")
    nodes = [helper.make_node("Sub", ["x", "x"], ["y"], name="d")]
    net = layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))
    assert net["d"] == layers.EltwiseLayer("d", 4, 6, 6, 1, inputs=2, op="sum")


_JOINS = """name: "joins"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 4 dim: 6
  dim: 6 } } }
layer { name: "c1" type: "Convolution" bottom: "data" top: "c1"
  convolution_param { num_output: 4 kernel_size: 1 } }
layer { name: "res" type: "Eltwise" bottom: "data" bottom: "c1" top: "res" }
layer { name: "b1" type: "Convolution" bottom: "res" top: "b1"
  convolution_param { num_output: 2 kernel_size: 1 } }
layer { name: "b2" type: "Convolution" bottom: "res" top: "b2"
  convolution_param { num_output: 3 kernel_size: 1 } }
layer { name: "cat" type: "Concat" bottom: "b1" bottom: "b2" top: "cat" }
layer { name: "sq" type: "Eltwise" bottom: "cat" bottom: "cat" bottom: "cat" top: "sq"
  eltwise_param { operation: PROD } }
layer { name: "top" type: "Eltwise" bottom: "sq" bottom: "cat" top: "top"
  eltwise_param { operation: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "top" top: "fc"
  inner_product_param { num_output: 10 } }
"""


def test_prototxt_eltwise_and_concat(tmp_path: Path) -> None:
    path = tmp_path / "joins.prototxt"
    path.write_text(_JOINS)
    net = layers.load_network(path)
    assert [layer.name for layer in net] == ["c1", "res", "b1", "b2", "cat", "sq", "top", "fc"]
    assert net["res"] == layers.EltwiseLayer("res", 4, 6, 6, 2, inputs=2, op="sum")
    assert net["cat"] == layers.ConcatLayer("cat", (2, 3), 6, 6, 2)
    assert (net["sq"].op, net["sq"].inputs, net["top"].op) == ("prod", 3, "max")
    assert net["fc"].Kc == 5 * 6 * 6
    for old, new, error, message in [
            ('top: "cat" }', 'top: "cat" concat_param { axis: 2 } }', SpecError,
             "layer 'cat': only concatenation along the channels"),
            ('bottom: "data" bottom: "c1"', 'bottom: "data" bottom: "b1"', FileFormatError,
             "layer 'res' reads blob 'b1' that no layer produced"),
            ('bottom: "sq" bottom: "cat"', 'bottom: "sq" bottom: "res"', SpecError,
             "layer 'top': Eltwise inputs have different shapes"),
            ("operation: 2", "operation: MIN", SpecError, "eltwise operation 'MIN'")]:
        path.write_text(_JOINS.replace(old, new))
        with pytest.raises(error, match=message):
            layers.load_network(path)


# --- the operators of deployed models (issue 15) ------------------------------------------

def _model(tmp_path: Path, nodes: list, inits: list, shape: list, out: str, opset: int = 17,
           name: str = "model.onnx") -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "main_graph", [x], [helper.make_tensor_value_info(
        out, TensorProto.FLOAT, None)], initializer=inits)
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
              str(path))
    return path


def _w(name: str, *dims: int, dtype=np.float32) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.ones(dims, dtype), name)


def test_onnx_activations_and_folds(tmp_path: Path) -> None:
    """BN and a scalar Mul fold into the conv before them (it gains a bias); Clip(0, 6) is
    ReLU6; x·Sigmoid(x) one SiLU; HardSwish and HardSigmoid activations."""
    inits = [_w("w1", 8, 3, 3, 3), _w("w2", 8, 8, 1, 1), _w("b2", 8), _w("g", 8), _w("b", 8),
             _w("m", 8), _w("v", 8), _w("zero", dtype=np.float32), _w("six", dtype=np.float32),
             _w("half", dtype=np.float32)]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["bn"],
                              name="bn"),
             helper.make_node("Clip", ["bn", "zero", "six"], ["r6"], name="r6"),
             helper.make_node("Conv", ["r6", "w2"], ["c2"], name="c2"),
             helper.make_node("Mul", ["c2", "half"], ["c2h"], name="scale"),
             helper.make_node("Sigmoid", ["c2h"], ["sig"], name="sig"),
             helper.make_node("Mul", ["c2h", "sig"], ["silu"], name="silu"),
             helper.make_node("HardSwish", ["silu"], ["hs"], name="hs"),
             helper.make_node("Conv", ["hs", "w2", "b2"], ["c3"], name="c3"),
             helper.make_node("HardSigmoid", ["c3"], ["y"], name="hsig")]
    inits[7:10] = [onnx.numpy_helper.from_array(np.array(v, np.float32), n)
                   for n, v in (("zero", 0.0), ("six", 6.0), ("half", 0.5))]
    net = layers.load_network(_model(tmp_path, nodes, inits, [1, 3, 16, 16], "y"))
    assert [(lay.name, lay.kind) for lay in net] == [
        ("c1", "conv"), ("r6", "activation"), ("c2", "conv"), ("sig", "activation"),
        ("hs", "activation"), ("c3", "conv"), ("hsig", "activation")]
    assert [net[n].func for n in ("r6", "sig", "hs", "hsig")] == [
        "relu6", "silu", "hardswish", "hardsigmoid"]
    assert net.unbiased == {"c2"} and net.biases == 16  # c1 gains BN's shift, c3 has b2
    assert net.producers("hs") == ("sig",) and net.producers("sig") == ("c2",)


def test_onnx_dilation_asymmetric_and_same_pads(tmp_path: Path) -> None:
    inits = [_w("w", 4, 2, 3, 3)]
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], name="dil", dilations=[2, 2],
                              strides=[2, 2], pads=[0, 1, 1, 2]),
             helper.make_node("Conv", ["x", "w"], ["b"], name="same", strides=[2, 2],
                              auto_pad="SAME_UPPER")]
    net = layers.load_network(_model(tmp_path, nodes, inits, [1, 2, 11, 10], "a"))
    dil, same = net["dil"], net["same"]
    # height: (11 + 0 + 1 − 5) // 2 + 1 = 4; width: (10 + 1 + 2 − 5) // 2 + 1 = 5
    assert (dil.Oy, dil.Ox, dil.Dy, dil.Dx, dil.Py, dil.Px) == (4, 5, 2, 2, 0, 1)
    assert dil.in_shape == (2, 11, 10) and dil.macs == 4 * 5 * 4 * 2 * 9
    assert (dil.Py_end, dil.Px_end) == (None, 2)  # 3·2 + 5 − 0 − 11 = Py and 4·2 + 5 − 1 − 10
    # SAME_UPPER: out = ceil(11/2) x ceil(10/2) = 6 x 5
    assert (same.Oy, same.Ox, same.in_shape) == (6, 5, (2, 11, 10))


def test_onnx_conv_transpose(tmp_path: Path) -> None:
    """Kernel = stride: an exact 1×1 conv with Cout·K² maps; otherwise a streamed layer with
    its MACs and a warning."""
    inits = [_w("w", 6, 4, 2, 2), _w("w3", 6, 4, 3, 3)]
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["up"], name="up", strides=[2, 2],
                              kernel_shape=[2, 2]),
             helper.make_node("ConvTranspose", ["x", "w3"], ["up3"], name="up3",
                              strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])]
    with pytest.warns(UserWarning, match="ConvTranspose 'up3': carried as a non-tiled layer"):
        net = layers.load_network(_model(tmp_path, nodes, inits, [1, 6, 5, 7], "up"))
    up, up3 = net["up"], net["up3"]
    assert (up.kind, up.in_shape, up.Oc, up.Kx, up.macs, up.params) == (
        "conv", (6, 5, 7), 16, 1, 6 * 4 * 4 * 5 * 7, 6 * 4 * 4)
    assert (up3.kind, up3.out_shape, up3.macs, up3.params) == (
        "other", (4, 10, 14), 6 * 4 * 9 * 5 * 7, 6 * 4 * 9)


def test_onnx_pad_resize_reduce_split(tmp_path: Path) -> None:
    inits = [_w("w", 4, 4, 3, 3), onnx.numpy_helper.from_array(
        np.array([0, 0, 1, 2, 0, 0, 1, 2], np.int64), "pads"),
        onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        onnx.numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
        onnx.numpy_helper.from_array(np.array([2, 2], np.int64), "split")]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("Conv", ["p", "w"], ["c"], name="conv"),
             helper.make_node("Resize", ["c", "", "scales"], ["r"], name="up", mode="nearest"),
             helper.make_node("Split", ["r", "split"], ["s1", "s2"], name="split", axis=1),
             helper.make_node("Add", ["s1", "s2"], ["s"], name="add"),
             helper.make_node("ReduceMean", ["s", "axes"], ["y"], name="gap", keepdims=1)]
    net = layers.load_network(_model(tmp_path, nodes, inits, [1, 4, 8, 8], "y", opset=18))
    assert [lay.name for lay in net] == ["conv", "up", "add", "gap"]
    conv = net["conv"]
    assert (conv.in_shape, conv.Py, conv.Px, conv.out_shape) == ((4, 8, 8), 1, 2, (4, 8, 10))
    assert (net["up"].kind, net["up"].out_shape) == ("resize", (4, 16, 20))
    assert net["add"].out_shape == (2, 16, 20) and net.producers("add") == ("up", "up")
    assert (net["gap"].kind, net["gap"].out_shape) == ("pool", (2, 1, 1))


def test_onnx_qdq_and_qlinear_layers(tmp_path: Path) -> None:
    """Quantize/DequantizeLinear pass through; QLinearConv, ConvInteger, QLinearMatMul and
    MatMulInteger are the conv/fc layers they compute, named after their nodes."""
    s = onnx.numpy_helper.from_array(np.array(0.5, np.float32), "s")
    z = onnx.numpy_helper.from_array(np.array(0, np.int8), "z")
    inits = [s, z, _w("wq", 8, 4, 3, 3, dtype=np.int8), _w("w8", 8, 8, 1, 1, dtype=np.int8),
             _w("fc", 128, 10, dtype=np.int8), _w("fc2", 10, 5, dtype=np.int8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["wf"], name="dqw"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"], name="dqx"),
             helper.make_node("Conv", ["xf", "wf"], ["c"], name="qdq_conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"], name="q2"),
             helper.make_node("QLinearConv", ["cq", "s", "z", "w8", "s", "z", "s", "z"], ["d"],
                              name="qlinear", strides=[2, 2]),
             helper.make_node("ConvInteger", ["d", "w8"], ["e"], name="int_conv"),
             helper.make_node("Cast", ["e"], ["e8"], name="cast", to=TensorProto.INT8),
             helper.make_node("Flatten", ["e8"], ["f"], name="flat"),
             helper.make_node("MatMulInteger", ["f", "fc"], ["g"], name="int_fc"),
             helper.make_node("Cast", ["g"], ["g8"], name="cast2", to=TensorProto.INT8),
             helper.make_node("QLinearMatMul", ["g8", "s", "z", "fc2", "s", "z", "s", "z"],
                              ["yq"], name="qlinear_fc"),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"], name="dq_out")]
    net = layers.load_network(_model(tmp_path, nodes, inits, [1, 4, 8, 8], "y"))
    assert [(lay.name, lay.kind) for lay in net] == [
        ("qdq_conv", "conv"), ("qlinear", "conv"), ("int_conv", "conv"), ("int_fc", "fc"),
        ("qlinear_fc", "fc")]
    assert net["qdq_conv"].macs == 8 * 8 * 8 * 4 * 9 and net["qlinear"].out_shape == (8, 4, 4)
    assert (net["int_fc"].Kc, net["int_fc"].Oc, net["qlinear_fc"].Kc) == (128, 10, 10)


def test_onnx_architecture_only_files(tmp_path: Path) -> None:
    """Weights in a missing external-data file, or declared as typed graph inputs, are not
    needed; a symbolic batch is 1; a symbolic height is a one-line error."""
    inits = [onnx.numpy_helper.from_array(np.ones((16, 3, 3, 3), np.float32), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    graph = helper.make_graph(nodes, "main_graph", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 3, 10, 10])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=inits)
    path = tmp_path / "external.onnx"
    onnx.save(helper.make_model(graph), str(path), save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    (tmp_path / "weights.bin").unlink()
    net = layers.load_network(path)
    assert (net.name, net.batch, net["conv"].macs) == ("external", 1, 16 * 8 * 8 * 27)
    graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    onnx.save(helper.make_model(graph), str(tmp_path / "dyn.onnx"))
    with pytest.raises(FileFormatError, match="dynamic dimension 'height' at axis 2"):
        layers.load_network(tmp_path / "dyn.onnx")


def test_cli_strict_and_one_line_warning(tmp_path: Path, capsys) -> None:
    from workbench import cli

    nodes = [helper.make_node("Erf", ["x"], ["e"], name="e1"),
             helper.make_node("Erf", ["e"], ["y"], name="e2")]
    path = _model(tmp_path, nodes, [], [1, 2, 4, 4], "y")
    assert cli.main(["show", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning: ONNX file 'model.onnx': unknown operator 'Erf' " \
        "(2 node(s): 'e1', 'e2')" in err
    assert cli.main(["show", str(path), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "unknown operator 'Erf'" in err


def test_onnx_custom_domain_operator(tmp_path: Path) -> None:
    """An operator ONNX itself does not know (a custom domain) gets its input's shape, so the
    layers after it still import; it is one warning line."""
    nodes = [helper.make_node("Fancy", ["x"], ["f"], name="fancy", domain="com.example"),
             helper.make_node("Conv", ["f", "w"], ["y"], name="conv", kernel_shape=[3, 3])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], initializer=[_w("w", 2, 4, 3, 3)])
    path = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]), str(path))
    with pytest.warns(UserWarning, match="unknown operator 'Fancy'"):
        net = layers.load_network(path)
    assert [(lay.name, lay.kind, lay.out_shape) for lay in net] == [
        ("fancy", "other", (4, 9, 9)), ("conv", "conv", (2, 7, 7))]
    assert net.producers("conv") == ("fancy",)


_RESNET50_CAFFE = """name: "ResNet-50"
input: "data"
input_dim: 1
input_dim: 3
input_dim: 224
input_dim: 224
layer { bottom: "data" top: "conv1" name: "conv1" type: "Convolution"
  convolution_param { num_output: 64 kernel_size: 7 pad: 3 stride: 2 } }
layer { bottom: "conv1" top: "conv1" name: "bn_conv1" type: "BatchNorm"
  batch_norm_param { use_global_stats: true } }
layer { bottom: "conv1" top: "conv1" name: "scale_conv1" type: "Scale"
  scale_param { bias_term: true } }
layer { bottom: "conv1" top: "conv1" name: "conv1_relu" type: "ReLU" }
layer { bottom: "conv1" top: "pool1" name: "pool1" type: "Pooling"
  pooling_param { kernel_size: 3 stride: 2 pool: MAX } }
layer { bottom: "pool1" top: "res2a_branch1" name: "res2a_branch1" type: "Convolution"
  convolution_param { num_output: 256 kernel_size: 1 pad: 0 stride: 1 bias_term: false } }
layer { bottom: "res2a_branch1" top: "res3a_branch1" name: "res3a_branch1"
  type: "Convolution"
  convolution_param { num_output: 512 kernel_size: 1 pad: 0 stride: 2 bias_term: false } }
layer { bottom: "res3a_branch1" top: "res3a_branch1" name: "bn3a_branch1" type: "BatchNorm" }
layer { bottom: "res3a_branch1" top: "res3a_branch1" name: "scale3a_branch1" type: "Scale"
  scale_param { bias_term: true } }
"""


def test_caffe_resnet50_real_sizes(tmp_path: Path) -> None:
    """The Caffe ResNet-50 deploy's stem reads 224×224 (not 223) and its stride-2 1×1
    shortcut reads all 56 rows (not 55); BatchNorm + Scale fold into the convs."""
    path = tmp_path / "ResNet-50-deploy.prototxt"
    path.write_text(_RESNET50_CAFFE)
    net = layers.load_network(path)
    assert [layer.name for layer in net] == ["conv1", "conv1_relu", "pool1", "res2a_branch1",
                                             "res3a_branch1"]
    conv1, short = net["conv1"], net["res3a_branch1"]
    assert (conv1.in_shape, conv1.out_shape, conv1.Px_end) == ((3, 224, 224), (64, 112, 112), 2)
    assert net["pool1"].out_shape == (64, 56, 56)
    assert (short.in_shape, short.out_shape, short.Px_end) == ((256, 56, 56), (512, 28, 28), -1)
    assert net.unbiased == {"res2a_branch1"} and net.biases == 64 + 512
