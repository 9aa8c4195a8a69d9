"""Bad ONNX input gets one accurate line naming the thing and the rule (issue 58's importer and
quantizer items): a zero dimension, a cycle, a kernel larger than its input, an LRN without
`size`, and a float model given to `quantize --from-model`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from model_files import save_graph as _save
from onnx import helper, numpy_helper

from workbench import layers
from workbench.errors import WorkbenchError


def _weight(*shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.zeros(shape, np.float32), "w")


def _one_line(path: Path) -> str:
    with pytest.raises(WorkbenchError) as err:
        layers.load_network(path)
    text = str(err.value)
    assert "\n" not in text and "no static shape" not in text
    return text


def test_zero_dimension_is_named(tmp_path: Path) -> None:
    conv = [helper.make_node("Conv", ["x", "w"], ["y"], name="c")]
    text = _one_line(_save(tmp_path / "zero.onnx", conv, [1, 0, 8, 8], [1, 4, 6, 6],
                           [_weight(4, 3, 3, 3)]))
    assert "zero dimension at axis 1" in text and "[1, 0, 8, 8]" in text
    assert "dynamic" not in text


def test_cycle_is_named(tmp_path: Path) -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Relu", ["a"], ["y"], name="out")]
    text = _one_line(_save(tmp_path / "cycle.onnx", nodes, [1, 3, 8, 8], [1, 3, 8, 8], []))
    assert "cycle through node" in text and "acyclic" in text


@pytest.mark.parametrize("op", ["Conv", "MaxPool"])
def test_oversized_kernel_is_named(tmp_path: Path, op: str) -> None:
    """A 7×7 window on a 5×5 input, inside the graph (no declared output shape to go by)."""
    first = helper.make_node("Conv", ["x", "w"], ["c"], name="k") if op == "Conv" else \
        helper.make_node("MaxPool", ["x"], ["c"], name="k", kernel_shape=[7, 7])
    nodes = [first, helper.make_node("Relu", ["c"], ["y"], name="r")]
    text = _one_line(_save(tmp_path / "big.onnx", nodes, [1, 3, 5, 5], [1, 4, 1, 1],
                           [_weight(4, 3, 7, 7)] if op == "Conv" else []))
    assert f"'k' ({op})" in text and "kernel span 7 larger than padded input 5" in text


def test_lrn_without_size_is_refused(tmp_path: Path) -> None:
    lrn = [helper.make_node("LRN", ["x"], ["y"], name="lrn", alpha=1e-4, beta=0.75)]
    text = _one_line(_save(tmp_path / "lrn.onnx", lrn, [1, 3, 5, 5], [1, 3, 5, 5], []))
    assert "'lrn' (LRN)" in text and "'size' is missing" in text
    with_size = [helper.make_node("LRN", ["x"], ["y"], name="lrn", size=3)]
    net = layers.load_network(_save(tmp_path / "lrn3.onnx", with_size, [1, 3, 5, 5],
                                    [1, 3, 5, 5], []))
    assert net["lrn"].size == 3


def test_quantize_from_model_on_a_float_model(tmp_path: Path, capsys) -> None:
    from workbench.cli import main

    conv = [helper.make_node("Conv", ["x", "w"], ["y"], name="c")]
    path = _save(tmp_path / "float.onnx", conv, [1, 3, 8, 8], [1, 4, 6, 6],
                 [_weight(4, 3, 3, 3)])
    assert main(["quantize", "--from-model", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "float model" in err and "Traceback" not in err
