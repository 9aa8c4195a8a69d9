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
    with pytest.raises(SpecError, match="node 'e': unknown layer type 'Erf'"):
        layers.load_network(path)


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
    """A residual Add, a channel Concat, Mul/Sum/Max of data tensors become layers; a bias Add,
    a scale by a Constant and the Concat of a flatten's shape arithmetic are passed over."""
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
    assert [layer.name for layer in net] == ["c1", "res", "b1", "b2", "cat", "sq", "sum3", "top"]
    assert net["res"] == layers.EltwiseLayer("res", 4, 6, 6, 2, inputs=2, op="sum")
    assert net["cat"] == layers.ConcatLayer("cat", (2, 3), 6, 6, 2)
    assert (net["sq"].op, net["sq"].inputs) == ("prod", 2)
    assert (net["sum3"].op, net["sum3"].inputs, net["sum3"].ops) == ("sum", 3, 2 * 5 * 36 * 2)
    assert (net["top"].op, net["top"].C) == ("max", 5)


def test_onnx_joins_unsupported(tmp_path: Path) -> None:
    nodes = [helper.make_node("Concat", ["x", "x"], ["y"], name="rows", axis=2)]
    with pytest.raises(SpecError, match="node 'rows' \\(Concat\\): only concatenation along "
                                        "the channels \\(axis 1\\) is supported, got axis 2"):
        layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="g"),
             helper.make_node("Mul", ["x", "g"], ["y"], name="se")]
    with pytest.raises(SpecError, match="node 'se' \\(Mul\\): broadcasting between inputs"):
        layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))
    nodes = [helper.make_node("Sub", ["x", "x"], ["y"], name="d")]
    with pytest.raises(SpecError, match="node 'd': unknown layer type 'Sub'"):
        layers.load_network(_save(tmp_path, nodes, [], [1, 4, 6, 6], "y"))


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
