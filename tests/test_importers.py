"""ONNX and Caffe prototxt imports give the same Network as the zoo files."""

from __future__ import annotations

from pathlib import Path

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
