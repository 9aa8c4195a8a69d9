"""Detection graphs (data/onnx/detection/): the input transform and the data-dependent
post-processing are cut with one warning line each, the backbone and heads are counted.

References: torchvision's published GFLOPS (= GMACs) of each model's COCO weights, and MACs
recomputed per Conv node from the shapes onnxruntime produces when it runs the whole graph
(random weights, transform and post-processing included).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from model_files import save_graph
from onnx import helper, numpy_helper

from workbench import layers
from workbench.errors import WorkbenchError
from workbench.layers.onnx_cut import CutWarning

ROOT = Path(__file__).resolve().parents[1]
FILES = ROOT / "data" / "onnx" / "detection"
# model: (image side, GMACs, parameters in millions)
PUBLISHED = {"ssdlite320_mobilenet_v3_large": (320, 0.583, 3.440934),
             "retinanet_resnet50_fpn": (800, 151.54, 34.014999)}


def _load(name: str, side: int) -> tuple[layers.Network, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = layers.load_network(FILES / f"{name}.onnx", input_shape=(3, side, side))
    return net, [str(w.message) for w in caught if issubclass(w.category, CutWarning)]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_backbone_and_heads_give_the_published_macs(name: str) -> None:
    side, gmacs, mparams = PUBLISHED[name]
    net, cut = _load(name, side)
    assert net.macs / 1e9 == pytest.approx(gmacs, rel=0.01)
    # weights shared by layers (RetinaNet's heads at five pyramid levels) count once
    assert (net.params + net.biases) / 1e6 == pytest.approx(mparams, rel=0.01)
    assert len(net.shared) == (40 if name.startswith("retinanet") else 0)
    assert len(cut) == 2 and all("\n" not in line for line in cut)
    transform, post = cut
    assert "cut the input transform" in transform and f"1×3×{side}×{side}" in transform
    assert "Resize" in transform and "Pad" in transform
    assert "cut data-dependent post-processing" in post
    assert any(op in post for op in ("NonZero", "TopK", "If"))
    assert net.layers[0].in_shape == (3, side, side)
    heads = [lay for lay in net if lay.name.startswith("head.")]
    assert heads and {lay.kind for lay in heads} <= {
        "conv", "activation", "transpose", "concat", "affine", "eltwise"}
    assert sum(lay.kind == "conv" for lay in heads) >= 10


def test_faster_rcnn_cuts_its_box_decoding_and_second_stage() -> None:
    net, cut = _load("fasterrcnn_resnet50_fpn", 800)
    assert len(cut) == 2 and "RoiAlign" not in cut[0]
    assert any(op in cut[1] for op in ("TopK", "NonZero")) and "\n" not in cut[1]
    assert [lay.name for lay in net if lay.name.startswith("rpn.")][-1].startswith(
        "rpn.head")
    assert not any(lay.name.startswith("roi_heads") for lay in net)


def test_explore_plans_ssdlite_with_input_shape(capsys: pytest.CaptureFixture) -> None:
    """`workbench explore FILE --input-shape 3,320,320`: one warning line per cut sub-graph
    on stderr, no traceback, and a plan of the backbone and heads with the published MACs."""
    import json

    from workbench.cli import main

    path = str(FILES / "ssdlite320_mobilenet_v3_large.onnx")
    assert main(["explore", path, "--input-shape", "3,320,320", "--platform", "idsp",
                 "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["rows"]
    cut = [line for line in captured.err.splitlines() if "cut " in line]
    assert len(cut) == 2 and "Traceback" not in captured.err
    assert sum(row["macs"] for row in rows) / 1e9 == pytest.approx(0.583, rel=0.01)
    heads = [row for row in rows if row["layer"].startswith("head.") and row["kind"] == "conv"]
    assert len(heads) >= 10 and all(row["cycles"] > 0 for row in rows)


def test_transform_needs_the_input_shape() -> None:
    with pytest.raises(WorkbenchError) as err:
        layers.load_network(FILES / "ssdlite320_mobilenet_v3_large.onnx")
    text = str(err.value)
    assert "\n" not in text and "--input-shape C,H,W" in text


def _conv_macs_on_onnxruntime_shapes(name: str, side: int) -> int:
    """Σ over the graph's Conv nodes of output elements × Cin/groups × kernel, on the shapes
    onnxruntime computes running the whole graph (random weights, one side × side image)."""
    ort = pytest.importorskip("onnxruntime")
    model = onnx.load(str(FILES / f"{name}.onnx"))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    # only the nodes the convolutions depend on: what comes after them may not run on
    # random weights (a second stage with no proposals)
    made_by = {o: n for n in model.graph.node for o in n.output}
    needed, stack = set(), [n.output[0] for n in convs]
    while stack:
        node = made_by.get(stack.pop())
        if node is not None and id(node) not in needed:
            needed.add(id(node))
            stack.extend(i for i in node.input if i)
    kept = [n for n in model.graph.node if id(n) in needed]
    del model.graph.node[:], model.graph.output[:]
    model.graph.node.extend(kept)
    model.graph.output.extend(helper.make_empty_tensor_value_info(n.output[0]) for n in convs)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: (rng.standard_normal(i.shape) * 0.1).astype(np.float32)
             for i in session.get_inputs()}
    feeds["input"] = rng.uniform(0, 1, (3, side, side)).astype(np.float32)
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, session.run(None, feeds), strict=True))
    weights = {i.name: i.shape for i in session.get_inputs()}
    return sum(math.prod(got[n.output[0]].shape) * math.prod(weights[n.input[1]][1:])
               for n in convs)


def test_ssdlite_conv_macs_equal_onnxruntime_shapes() -> None:
    net, _ = _load("ssdlite320_mobilenet_v3_large", 320)
    assert net.macs == _conv_macs_on_onnxruntime_shapes("ssdlite320_mobilenet_v3_large", 320)


@pytest.mark.oracle
def test_faster_rcnn_backbone_fpn_and_rpn_equal_onnxruntime_shapes() -> None:
    """Faster R-CNN: backbone, FPN and RPN head are kept; the box head, which runs on a
    data-dependent number of proposals after RoiAlign, is cut (120.0 G of the published
    134.38 G are these convolutions)."""
    net, cut = _load("fasterrcnn_resnet50_fpn", 800)
    assert len(cut) == 2 and net.macs / 1e9 == pytest.approx(120.02, rel=1e-4)
    assert net.macs == _conv_macs_on_onnxruntime_shapes("fasterrcnn_resnet50_fpn", 800)


def test_topk_and_if_are_cut_with_one_line_each(tmp_path: Path) -> None:
    """conv → relu → TopK (data-dependent selection) → Gather: conv and relu stay."""
    w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    k = numpy_helper.from_array(np.array([5], np.int64), "k")
    flat = numpy_helper.from_array(np.array([1, -1], np.int64), "flat")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "flat"], ["f"], name="reshape"),
             helper.make_node("TopK", ["f", "k"], ["v", "i"], name="topk"),
             helper.make_node("Gather", ["f", "i"], ["y"], name="pick", axis=1)]
    path = save_graph(tmp_path / "topk.onnx", nodes, [1, 3, 8, 8], [1, 5], [w, k, flat])
    with pytest.warns(CutWarning) as caught:
        net = layers.load_network(path)
    assert [lay.name for lay in net] == ["conv", "relu"]
    lines = [str(c.message) for c in caught if c.category is CutWarning]
    assert len(lines) == 1 and "2 node(s) from 'topk' (TopK, Gather)" in lines[0]


def test_masks_the_network_reads_are_not_cut(tmp_path: Path) -> None:
    """Equal → Where on the main path (as Swin's window mask): no cut, the layers stay."""
    w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Equal", ["c", "zero"], ["m"], name="mask"),
             helper.make_node("Where", ["m", "zero", "c"], ["y"], name="select")]
    path = save_graph(tmp_path / "mask.onnx", nodes, [1, 3, 8, 8], [1, 4, 6, 6], [w, zero])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = layers.load_network(path)
    assert not [c for c in caught if c.category is CutWarning]
    assert [lay.name for lay in net] == ["conv", "mask", "select"]


def test_pads_from_shape_arithmetic_with_mod(tmp_path: Path) -> None:
    """Pad amounts computed as (W mod 4) from the input's shape (Swin's window padding)."""
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
        ("three", 3), ("four", 4), ("zeros", [0] * 7), ("ax", [0]))]
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "three"], ["wd"], name="width", axis=0),
             helper.make_node("Mod", ["wd", "four"], ["r"], name="mod"),
             helper.make_node("Unsqueeze", ["r", "ax"], ["r1"], name="unsq"),
             helper.make_node("Concat", ["zeros", "r1"], ["pads"], name="pads", axis=0),
             helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    path = save_graph(tmp_path / "mod.onnx", nodes, [1, 3, 5, 5], [1, 3, 5, 6], consts)
    net = layers.load_network(path)
    assert net["relu"].in_shape == (3, 5, 6)  # 5 mod 4 = 1 column of padding
