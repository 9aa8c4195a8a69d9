"""Evaluate small integer/float constant subgraphs of an ONNX model (shape arithmetic), so that
shape inference can see through them; and give operators inference does not know a shape.

Only nodes whose inputs are all known values (or, for Shape and Size, whose input has a static
shape) are evaluated, on numpy arrays of at most MAX_VALUE_ELEMS elements; an evaluated node is
replaced in the model by a Constant node with the same output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.layers.onnx_graph import MAX_VALUE_ELEMS, OnnxGraph


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axes(node: Any, args: list[np.ndarray], attrs: dict[str, Any]) -> list[int]:
    if len(args) > 1:
        return [int(a) for a in np.ravel(args[1])]
    return [int(a) for a in attrs.get("axes", [])]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)
    return a / b


def _unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    rank = x.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = np.expand_dims(x, axis)
    return x


def _slice(node: Any, args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = args[0]
    if len(args) > 1:
        starts, ends = np.ravel(args[1]), np.ravel(args[2])
        axes = np.ravel(args[3]) if len(args) > 3 else np.arange(len(starts))
        steps = np.ravel(args[4]) if len(args) > 4 else np.ones(len(starts), dtype=np.int64)
    else:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _reshape(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, shape = args[0], [int(d) for d in np.ravel(args[1])]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _constant(node: Any, attrs: dict[str, Any]) -> np.ndarray:
    from onnx import numpy_helper

    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    for key in ("value_int", "value_ints", "value_float", "value_floats"):
        if key in attrs:
            return np.asarray(attrs[key], dtype=np.int64 if "int" in key else np.float32)
    raise ValueError("unsupported Constant")


def _cast(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    from onnx import helper

    return args[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))


def _constant_of_shape(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    from onnx import numpy_helper

    shape = [int(d) for d in np.ravel(args[0])]
    if any(d < 0 for d in shape) or int(np.prod(shape)) > MAX_VALUE_ELEMS:
        raise ValueError("too large")
    fill = numpy_helper.to_array(attrs["value"]).ravel()[0] if "value" in attrs \
        else np.float32(0)
    return np.full(shape, fill)


def _range(args: list[np.ndarray]) -> np.ndarray:
    start, limit, delta = (np.ravel(a)[0] for a in args[:3])
    if delta == 0 or abs((limit - start) / delta) > MAX_VALUE_ELEMS:
        raise ValueError("bad range")
    return np.arange(start, limit, delta)


Op = Callable[[Any, list[np.ndarray], dict[str, Any]], np.ndarray]
OPS: dict[str, Op] = {
    "Identity": lambda n, a, k: a[0],
    "Add": lambda n, a, k: a[0] + a[1],
    "Sub": lambda n, a, k: a[0] - a[1],
    "Mul": lambda n, a, k: a[0] * a[1],
    "Div": lambda n, a, k: _int_div(a[0], a[1]),
    "Neg": lambda n, a, k: -a[0],
    "Mod": lambda n, a, k: (np.fmod if k.get("fmod", 0) else np.mod)(a[0], a[1]),
    "Transpose": lambda n, a, k: np.transpose(a[0], k.get("perm")),
    "Max": lambda n, a, k: np.maximum.reduce(a),
    "Min": lambda n, a, k: np.minimum.reduce(a),
    "Floor": lambda n, a, k: np.floor(a[0]),
    "Ceil": lambda n, a, k: np.ceil(a[0]),
    "Equal": lambda n, a, k: np.equal(a[0], a[1]),
    "Where": lambda n, a, k: np.where(a[0], a[1], a[2]),
    "Gather": lambda n, a, k: np.take(a[0], a[1].astype(np.int64), axis=k.get("axis", 0)),
    "Concat": lambda n, a, k: np.concatenate([np.atleast_1d(x) for x in a], axis=k["axis"]),
    "Unsqueeze": lambda n, a, k: _unsqueeze(a[0], _axes(n, a, k)),
    "Squeeze": lambda n, a, k: np.squeeze(a[0], axis=tuple(_axes(n, a, k)) or None),
    "Slice": _slice,
    "Reshape": lambda n, a, k: _reshape(a, k),
    "Cast": lambda n, a, k: _cast(a, k),
    "ConstantOfShape": lambda n, a, k: _constant_of_shape(a, k),
    "Range": lambda n, a, k: _range(a),
    "ReduceProd": lambda n, a, k: np.prod(a[0], keepdims=bool(k.get("keepdims", 1))),
    "Expand": lambda n, a, k: np.broadcast_to(a[0], np.broadcast_shapes(
        a[0].shape, tuple(int(d) for d in np.ravel(a[1])))).copy(),
}
BROADCASTING = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Where")


def _evaluate(node: Any, g: OnnxGraph) -> np.ndarray | None:
    attrs = _attrs(node)
    if node.op_type == "Constant":
        return _constant(node, attrs)
    if node.op_type in ("Shape", "Size"):
        shape = g.shapes.get(node.input[0]) if node.input else None
        if shape is None:
            return None
        if node.op_type == "Size":
            return np.asarray(int(np.prod(shape)), dtype=np.int64)
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return np.asarray(shape[start:end], dtype=np.int64)
    if node.op_type not in OPS or not node.input:
        return None
    names = list(node.input)
    while names and not names[-1]:
        names.pop()
    if any(not name or name not in g.values for name in names):
        return None
    args = [g.values[n] for n in names]
    if node.op_type in BROADCASTING or node.op_type == "Expand":
        shapes = [a.shape for a in args] if node.op_type != "Expand" else \
            [args[0].shape, tuple(int(d) for d in np.ravel(args[1]))]
        if any(d < 0 for s in shapes for d in s) or \
                np.prod(np.broadcast_shapes(*shapes), dtype=np.float64) > MAX_VALUE_ELEMS:
            return None
    return np.asarray(OPS[node.op_type](node, args, attrs))


def fold_constants(model: Any, g: OnnxGraph) -> bool:
    """Evaluate what can be, record it in g.values, and replace the nodes by Constants in the
    model; True if a new value was found."""
    from onnx import helper, numpy_helper

    changed = False
    for index, node in enumerate(model.graph.node):
        if len(node.output) != 1 or not node.output[0] or node.output[0] in g.values:
            continue
        try:
            value = _evaluate(node, g)
        except Exception:  # noqa: BLE001 - malformed or unusual input: leave it to inference
            value = None
        if value is None or value.size > MAX_VALUE_ELEMS or value.dtype == object:
            continue
        g.values[node.output[0]] = value
        g.shapes[node.output[0]] = tuple(value.shape)
        changed = True
        if node.op_type != "Constant":
            try:
                tensor = numpy_helper.from_array(value, node.output[0])
            except Exception:  # noqa: BLE001
                continue
            const = helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                     value=tensor)
            model.graph.node[index].CopyFrom(const)
    return changed


def give_unknown_shapes(model: Any, g: OnnxGraph) -> bool:
    """Declare the output of each operator ONNX does not know with its first data input's
    shape and type (onnxruntime's QGemm, global pool, QLinearAdd/Mul: their own, `_ms_shape`);
    True if one was added."""
    from onnx import helper

    added = False
    for node in model.graph.node:
        if node.op_type in g.known_ops and node.domain in ("", "ai.onnx", "com.microsoft"):
            continue
        if not node.output or not node.output[0] or g.shapes.get(node.output[0]) is not None:
            continue
        source = next((i for i in node.input if i and not g.is_constant(i)
                       and g.shapes.get(i) is not None), None)
        if source is None:
            continue
        shape = _ms_shape(node, g) if node.op_type in MS_SHAPES else g.shapes[source]
        if shape is None:
            continue
        info = helper.make_tensor_value_info(node.output[0], _ms_dtype(node, g, source),
                                             list(shape))
        model.graph.value_info.append(info)
        g.shapes[node.output[0]] = shape
        added = True
    return added


MS_SHAPES = ("QGemm", "QLinearGlobalAveragePool", "QLinearAdd", "QLinearMul", "QLinearConcat")
# onnxruntime's quantized operators: the input slot of the output's zero point (its code type)
MS_OUT_ZERO = {"QLinearGlobalAveragePool": 4, "QLinearAdd": 7, "QLinearMul": 7, "QGemm": 8,
               "QLinearSigmoid": 4, "QLinearLeakyRelu": 4, "QLinearSoftmax": 4,
               "QLinearAveragePool": 4, "QLinearConcat": 1}


def _ms_dtype(node: Any, g: OnnxGraph, source: str) -> int:
    """The element type of an unknown operator's output: for onnxruntime's quantized ones the
    type of the output zero point (QGemm without one writes float), else the source's."""
    slot = MS_OUT_ZERO.get(node.op_type) if node.domain == "com.microsoft" else None
    if slot is None:
        return g.dtypes.get(source, 1) or 1
    if len(node.input) > slot and node.input[slot]:
        return g.dtypes.get(node.input[slot], 3) or 3
    return 1 if node.op_type == "QGemm" else 2  # an omitted zero point is uint8's


def _ms_shape(node: Any, g: OnnxGraph) -> tuple[int, ...] | None:
    """The output shape of an onnxruntime quantized operator whose shape is not its first
    input's: QGemm [M, N] (A at input 0, B at input 3, transA/transB), the NCHW global pool
    [N, C, 1, 1], QLinearAdd/Mul the broadcast of A (input 0) and B (input 3), QLinearConcat
    its inputs (2, 5, 8, …) joined along `axis`."""
    if node.op_type == "QLinearConcat":
        return _ms_concat(node, g)
    a = g.shapes.get(node.input[0])
    b = g.shapes.get(node.input[3]) if len(node.input) > 3 else None
    if a is None:
        return None
    attrs = _attrs(node)
    if node.op_type == "QLinearGlobalAveragePool":
        return None if attrs.get("channels_last", 0) or len(a) < 3 else (
            *a[:2], *[1] * (len(a) - 2))
    if b is None:
        return None
    if node.op_type in ("QLinearAdd", "QLinearMul"):
        try:
            return tuple(int(d) for d in np.broadcast_shapes(a, b))
        except ValueError:
            return None
    if len(a) != 2 or len(b) != 2:
        return None
    m = a[1] if attrs.get("transA", 0) else a[0]
    n = b[0] if attrs.get("transB", 0) else b[1]
    return (m, n)


def _ms_concat(node: Any, g: OnnxGraph) -> tuple[int, ...] | None:
    """QLinearConcat's output shape: its inputs (slots 2, 5, 8, …) joined along `axis`."""
    shapes = [g.shapes.get(i) for i in node.input[2::3]]
    axis = _attrs(node).get("axis")
    if not shapes or any(s is None or len(s) != len(shapes[0]) for s in shapes) or \
            not isinstance(axis, int) or not -len(shapes[0]) <= axis < len(shapes[0]):
        return None
    axis %= len(shapes[0])
    if any(s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        return None
    return (*shapes[0][:axis], sum(s[axis] for s in shapes), *shapes[0][axis + 1:])
