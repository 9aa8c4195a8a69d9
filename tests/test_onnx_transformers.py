"""Transformers in the corpus (data/onnx/transformers/) and the matrix-product counting rule.

Expected values are independent of the importer: torchvision's published GFLOPS (= GMACs) and
parameter counts, DeiT-S's published 4.6 GFLOPs (Touvron et al. 2021, table 1), and MACs
recomputed per node from the shapes onnxruntime produces when it runs the graph (random
weights in place of the stripped ones); for the MatMul property, numpy's own matmul shapes.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_files import save_graph as _save
from onnx import TensorProto, helper, numpy_helper

from workbench import layers
from workbench.errors import SpecError

ROOT = Path(__file__).resolve().parents[1]
FILES = ROOT / "data" / "onnx" / "transformers"
# file: (GMACs, parameters in millions) as published; None where no figure is published
PUBLISHED = {"vit_b_16": (17.564, 86.567656), "vit_b_16_dynamo": (17.564, 86.567656),
             "deit_small": (4.6, None), "convnext_tiny": (4.456, 28.589128),
             "mobilevit_xxs": (None, None)}


def _load(name: str) -> layers.Network:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown operator, no other warning
        return layers.load_network(FILES / f"{name}.onnx")


@pytest.mark.parametrize("name", [n for n, (g, _) in PUBLISHED.items() if g is not None])
def test_macs_equal_the_published_figures(name: str) -> None:
    gmacs, mparams = PUBLISHED[name]
    net = _load(name)
    assert net.macs / 1e9 == pytest.approx(gmacs, rel=0.01)
    if name.startswith("vit"):  # + class token and position embedding, − 24 q/k scalings
        extra = 768 + 197 * 768 - 24
        assert (net.params + net.biases + extra) / 1e6 == pytest.approx(mparams, abs=1e-6)


def test_vit_layers_are_known_streaming_layers() -> None:
    for name in ("vit_b_16", "vit_b_16_dynamo"):
        net = _load(name)
        kinds = Counter(layer.kind for layer in net)
        assert kinds["layernorm"] == 25 and kinds["softmax"] == 12
        assert Counter(lay.func for lay in net if lay.kind == "activation") == {"gelu": 12}
        attention = [lay for lay in net if lay.kind == "other"
                     and lay.op in ("MatMul", "Softmax")]
        assert len(attention) == 24 and all(lay.inputs == 2 for lay in attention)
        qkv = [lay for lay in net if lay.kind == "conv" and lay.Oc == 3 * 768]
        assert len(qkv) == 12 and all((q.Ox, q.Kc) == (197, 768) for q in qkv)
        assert all(lay.macs == 12 * 197 * 197 * 64 for lay in attention)


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _ort_shapes(path: Path) -> tuple[onnx.ModelProto, dict[str, tuple[int, ...]]]:
    """Every tensor's shape as onnxruntime computes it, with random weights fed."""
    ort = pytest.importorskip("onnxruntime")
    model = onnx.load(str(path))
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for out in node.output:
            if out and out not in known:
                model.graph.output.append(helper.make_empty_tensor_value_info(out))
                known.add(out)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32)
             if "float" in i.type else None for i in session.get_inputs()}
    outs = session.run(None, {k: v for k, v in feeds.items() if v is not None})
    shapes = {o.name: tuple(v.shape) for o, v in zip(session.get_outputs(), outs, strict=True)}
    shapes |= {k: v.shape for k, v in feeds.items() if v is not None}
    shapes |= {t.name: tuple(t.dims) for t in model.graph.initializer}
    return model, shapes


def _node_macs(model: onnx.ModelProto, shapes: dict) -> int:
    """Σ per node: Conv = output elements × Cin/groups × kernel; MatMul and Gemm = output
    elements × K (ONNX semantics)."""
    total = 0
    for n in model.graph.node:
        out = shapes[n.output[0]]
        if n.op_type == "Conv":
            total += math.prod(out) * math.prod(shapes[n.input[1]][1:])
        elif n.op_type == "MatMul":
            total += math.prod(out) * shapes[n.input[0]][-1]
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            total += math.prod(out) * (a[0] if _attrs(n).get("transA", 0) else a[1])
    return total


@pytest.mark.parametrize("name", ["deit_small", "mobilevit_xxs", "convnext_tiny"])
def test_macs_equal_the_per_node_formula_on_onnxruntime_shapes(name: str) -> None:
    model, shapes = _ort_shapes(FILES / f"{name}.onnx")
    assert _load(name).macs == _node_macs(model, shapes)


def test_mobilevit_plan(capsys: pytest.CaptureFixture) -> None:
    """`workbench explore` plans every layer of the MobileViT-style network (attention on
    unfolded patches: 4 patch pixels × 256 tokens per sequence in its first block)."""
    import json

    from workbench.cli import main

    net = _load("mobilevit_xxs")
    first = next(lay for lay in net if lay.kind == "other" and lay.op == "MatMul")
    assert first.macs == 4 * 4 * 256 * 256 * 16  # 4 sequences × 4 heads, 256² scores, d 16
    path = str(FILES / "mobilevit_xxs.onnx")
    assert main(["explore", path, "--platform", "idsp", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["layer"] for row in rows] == [layer.name for layer in net]
    assert all(row["cycles"] > 0 for row in rows if row["kind"] in ("conv", "fc"))
    assert sum(row["macs"] for row in rows) == net.macs


@pytest.mark.parametrize("name", ["vit_b_16", "deit_small"])
def test_show_and_explore_plan_vit_and_deit(name: str, capsys: pytest.CaptureFixture) -> None:
    """`workbench show` and `workbench explore` on ViT-B/16 and DeiT-S: the published MACs
    (torchvision's 17.564 G, the paper's 4.6 G), every layer planned with cycles, and each
    attention product priced with both operands and its output crossing memory at least once
    (Q·Kᵀ: B has A's elements; scores·V: B has the output's)."""
    import json

    from workbench.cli import main

    net = _load(name)
    path = str(FILES / f"{name}.onnx")
    assert main(["show", path, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["rows"]
    assert sum(row["macs"] for row in shown) / 1e9 == pytest.approx(PUBLISHED[name][0],
                                                                    rel=0.01)
    assert main(["explore", path, "--platform", "idsp", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["layer"] for row in rows] == [row["layer"] for row in shown]
    assert sum(row["macs"] for row in rows) / 1e9 == pytest.approx(PUBLISHED[name][0], rel=0.01)
    assert all(row["cycles"] > 0 for row in rows)
    attention = [row for row in rows if row["kind"] == "other" and row["macs"]]
    assert len(attention) == 24
    for row in attention:
        layer = net[row["layer"]]
        a, out = math.prod(layer.in_shape), math.prod(layer.out_shape)
        assert row["ext_accesses"] >= a + out + min(a, out)


# --- the MatMul counting rule on generated graphs ---------------------------------------------

def _matmul_model(path: Path, a: list[int], b: list[int], b_const: bool) -> Path:
    nodes = [helper.make_node("MatMul", ["A", "B"], ["Y"], name="mm")]
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, a)]
    inits = []
    if b_const:
        inits.append(numpy_helper.from_array(np.zeros(b, np.float32), "B"))
    else:  # computed from a second input (a graph input read as B would be a weight)
        inputs.append(helper.make_tensor_value_info("B_in", TensorProto.FLOAT, b))
        nodes.insert(0, helper.make_node("Relu", ["B_in"], ["B"], name="relu"))
    out = list(np.matmul(np.zeros(a), np.zeros(b)).shape)
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, out)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@st.composite
def _operands(draw):
    """A: N × batch dims × M × K; B: a constant K × P, or data of A's rank whose batch dims are
    A's or 1 (numpy broadcasting; its first stays N so that it is a data input)."""
    rank = draw(st.integers(2, 5))
    dims = draw(st.lists(st.integers(1, 4), min_size=rank - 2, max_size=rank - 2))
    m, k, p = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    a = [*dims, m, k]
    if rank == 2 or draw(st.booleans()):
        return a, [k, p], True
    b_dims = [dims[0]] + [draw(st.sampled_from([d, 1])) for d in dims[1:]]
    if draw(st.booleans()):  # broadcast the other way: A's dim 1, B's larger
        i = draw(st.integers(0, len(dims) - 1))
        if i:
            a[i], b_dims[i] = 1, dims[i]
    return a, [*b_dims, k, p], False


@pytest.mark.property
@settings(deadline=None)
@given(_operands())
def test_matmul_macs_are_the_shape_product(tmp_path_factory, operands) -> None:
    a, b, b_const = operands
    path = _matmul_model(tmp_path_factory.mktemp("mm") / "mm.onnx", a, b, b_const)
    net = layers.load_network(path)
    out = np.matmul(np.zeros(a), np.zeros(b)).shape
    assert net["mm"].macs == math.prod(out) * a[-1]
    assert net.batch == a[0]


def test_tokens_first_operands_keep_their_rows(tmp_path: Path) -> None:
    """[tokens, 1, features] · W and Gemm on [tokens, features] after a Reshape: the tokens
    are rows of one image, not images."""
    w = numpy_helper.from_array(np.zeros((8, 12), np.float32), "W")
    w2 = numpy_helper.from_array(np.zeros((12, 5), np.float32), "W2")
    shape = numpy_helper.from_array(np.array([7, 12], np.int64), "shape")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2], name="t"),
             helper.make_node("MatMul", ["t", "W"], ["y"], name="mm"),
             helper.make_node("Reshape", ["y", "shape"], ["r"], name="r"),
             helper.make_node("Gemm", ["r", "W2"], ["z"], name="gemm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 7, 8])], [helper.make_tensor_value_info(
            "z", TensorProto.FLOAT, [7, 5])], [w, w2, shape])
    path = tmp_path / "tokens.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    net = layers.load_network(path)
    assert [lay.kind for lay in net] == ["conv", "conv"]  # the Transpose moves a 1: a view
    assert (net["mm"].macs, net["gemm"].macs) == (7 * 8 * 12, 7 * 12 * 5)


def test_rows_that_do_not_divide_into_images_are_refused(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.zeros((2, 3), np.float32), "W")
    shape = numpy_helper.from_array(np.array([5, 2], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="r"),
             helper.make_node("MatMul", ["r", "W"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 5])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [5, 3])], [w, shape])
    path = tmp_path / "odd.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(SpecError) as err:
        layers.load_network(path)
    text = str(err.value)
    assert "\n" not in text and "'mm'" in text and "2 images" in text


def _c(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


def test_gelu_pattern_and_its_near_misses(tmp_path: Path) -> None:
    """x·½·(1 + erf(x/√2)) in the legacy exporter's order is one GELU; with 1.5 for √2 it is
    not a GELU: Erf stays an unknown operator (one warning line)."""
    def model(root: float) -> Path:
        nodes = [helper.make_node("Div", ["x", "r2"], ["d"], name="div"),
                 helper.make_node("Erf", ["d"], ["e"], name="erf"),
                 helper.make_node("Add", ["e", "one"], ["a"], name="add"),
                 helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
                 helper.make_node("Mul", ["m", "half"], ["y"], name="mul_half")]
        return _save(tmp_path / f"gelu{root}.onnx", nodes, [1, 4, 6], [1, 4, 6],
                     [_c("r2", root), _c("one", 1.0), _c("half", 0.5)])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = layers.load_network(model(math.sqrt(2)))
    assert [(lay.name, lay.kind, lay.func) for lay in net] == [("mul_half", "activation",
                                                                "gelu")]
    assert net["mul_half"].in_shape == (4, 1, 6)
    with pytest.warns(UserWarning, match="unknown operator 'Erf'"):
        net = layers.load_network(model(1.5))
    assert [lay.kind for lay in net] == ["affine", "other", "affine", "eltwise", "affine"]


def test_layer_norm_and_row_softmax(tmp_path: Path) -> None:
    scale = numpy_helper.from_array(np.ones(6, np.float32), "g")
    bias = numpy_helper.from_array(np.zeros(6, np.float32), "b")
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], name="ln"),
             helper.make_node("Softmax", ["n"], ["y"], name="sm", axis=-1)]
    net = layers.load_network(_save(tmp_path / "ln.onnx", nodes, [1, 5, 6], [1, 5, 6],
                                    [scale, bias]))
    ln, sm = net["ln"], net["sm"]
    assert (ln.kind, ln.in_shape, ln.params, ln.biases) == ("layernorm", (5, 1, 6), 6, 6)
    assert (type(sm).__name__, sm.ops) == ("RowSoftmaxLayer", 3 * 30)
    bad = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=1)]
    with pytest.raises(SpecError, match=r"'ln'.*axis 1 .*only the last axis"):
        layers.load_network(_save(tmp_path / "ln1.onnx", bad, [1, 5, 6], [1, 5, 6],
                                  [numpy_helper.from_array(np.ones(30, np.float32), "g"),
                                   numpy_helper.from_array(np.ones(30, np.float32), "b")]))


def test_layer_norm_of_feature_vectors(tmp_path: Path) -> None:
    """N × F (a classifier's LayerNorm, as in MaxViT): one row of F features per image."""
    scale = numpy_helper.from_array(np.ones(12, np.float32), "g")
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="ln")]
    net = layers.load_network(_save(tmp_path / "ln2.onnx", nodes, [1, 12], [1, 12], [scale]))
    ln = net["ln"]
    assert (ln.in_shape, ln.params, ln.biases, ln.ops) == ((1, 1, 12), 12, 0, 6 * 12)


@pytest.mark.parametrize(("equation", "a", "b"), [
    ("bghid,bghjd->bghij", [1, 2, 3, 5, 4], [1, 2, 3, 7, 4]),  # MaxViT's Q·Kᵀ
    ("bghij,bghjd->bghid", [1, 2, 3, 5, 7], [1, 2, 3, 7, 4]),  # its scores·V
    ("bij,bjk->bik", [2, 3, 4], [2, 4, 6])])
def test_einsum_macs_are_output_times_contracted(tmp_path: Path, equation: str, a: list[int],
                                                 b: list[int]) -> None:
    """Reference: numpy's einsum output size × the sizes of the indices it sums over."""
    nodes = [helper.make_node("Relu", ["B_in"], ["B"], name="relu"),
             helper.make_node("Einsum", ["x", "B"], ["y"], name="es", equation=equation)]
    out = np.einsum(equation, np.zeros(a), np.zeros(b))
    graph = helper.make_graph(nodes, "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, a),
        helper.make_tensor_value_info("B_in", TensorProto.FLOAT, b)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out.shape))])
    path = tmp_path / "es.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = layers.load_network(path)
    ins, result = equation.split("->")
    summed = set(ins.replace(",", "")) - set(result)
    sizes = dict(zip(ins.split(",")[0], a, strict=True)) | dict(zip(ins.split(",")[1], b,
                                                                    strict=True))
    assert net["es"].macs == out.size * math.prod(sizes[i] for i in summed)
    assert net["es"].inputs == 2
