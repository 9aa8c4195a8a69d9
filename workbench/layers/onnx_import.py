"""Import an ONNX model as a Network, with shapes from ONNX shape inference.

Conv, Gemm/MatMul, MaxPool/AveragePool (and global), LRN, Relu/Sigmoid/Tanh, Softmax,
Add/Sum/Mul/Max of two or more same-shape data tensors (eltwise) and Concat along the channels
become layers; shape-only operators (Flatten, Reshape, ...), a bias or scale (Add/Mul with one
data input, the other a constant) and arithmetic on shape tensors (rank < 2) are passed over.
Every layer takes its input shape from the tensor it reads, so branching graphs import too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, SpecError
from workbench.layers.network import Network
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    Layer,
    LRNLayer,
    PoolLayer,
    SoftmaxLayer,
    conv_from_input,
)

PASSED_OVER = ("Flatten", "Reshape", "Dropout", "Identity", "Constant", "BatchNormalization",
               "Squeeze", "Unsqueeze", "Shape", "Gather", "Cast")
ACTIVATION_OPS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}
POOL_OPS = {"MaxPool": "max", "AveragePool": "avg", "GlobalMaxPool": "max",
            "GlobalAveragePool": "avg"}
ELTWISE_OPS = {"Add": "sum", "Sum": "sum", "Mul": "prod", "Max": "max"}
SUPPORTED = ("Conv", "Gemm", "MatMul", "LRN", "Softmax", "Concat", *POOL_OPS, *ACTIVATION_OPS,
             *ELTWISE_OPS, *PASSED_OVER)


def _f32(value: float) -> float:
    """An ONNX float attribute (stored as float32) back to its shortest decimal."""
    return float(f"{value:.7g}")


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _spatial(shape: tuple[int, ...], where: str) -> tuple[int, int, int]:
    """(C, H, W) of an NCHW tensor, (F, 1, 1) of an NF one."""
    if len(shape) == 4:
        return shape[1], shape[2], shape[3]
    if len(shape) == 2:
        return shape[1], 1, 1
    raise SpecError(f"{where}: expected an NCHW or NF tensor, got shape {list(shape)}")


def _window(attrs: dict[str, Any], where: str) -> tuple[tuple[int, int], ...]:
    kernel = tuple(attrs["kernel_shape"])
    strides = tuple(attrs.get("strides", (1, 1)))
    pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
    if len(kernel) != 2:
        raise SpecError(f"{where}: only 2-D windows are supported, got kernel {list(kernel)}")
    if any(d != 1 for d in attrs.get("dilations", (1, 1))):
        raise SpecError(f"{where}: dilated windows are not supported")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise SpecError(f"{where}: auto_pad is not supported; export with explicit pads")
    return kernel, strides, (max(pads[0], pads[2]), max(pads[1], pads[3]))


def _joining(node: Any, name: str, shapes: dict[str, tuple[int, ...]], batch: int,
             constants: set[str]) -> Layer | None:
    """An eltwise layer of the node's data (non-constant) inputs, or None for a bias or a
    scale; a concat layer of all its inputs."""
    where = f"ONNX node {name!r} ({node.op_type})"
    out = shapes[node.output[0]]
    if node.op_type == "Concat":
        axis = _attrs(node).get("axis", 1)
        if axis % len(out) != 1:
            raise SpecError(f"{where}: only concatenation along the channels (axis 1) is "
                            f"supported, got axis {axis}")
        dims = [_spatial(shapes[i], where) for i in node.input if i]
        if len({d[1:] for d in dims}) != 1:
            raise SpecError(f"{where}: inputs differ in height or width: {dims}")
        return ConcatLayer(name, tuple(d[0] for d in dims), dims[0][1], dims[0][2], batch)
    data = [i for i in node.input if i and i not in constants]
    if len(data) < 2:
        return None
    if any(shapes[i] != out for i in data):
        raise SpecError(f"{where}: broadcasting between inputs of shapes "
                        f"{[list(shapes[i]) for i in data]} is not supported")
    c, h, w = _spatial(out, where)
    return EltwiseLayer(name, c, h, w, batch, inputs=len(data), op=ELTWISE_OPS[node.op_type])


def _layer(node: Any, name: str, shapes: dict[str, tuple[int, ...]], batch: int) -> Layer | None:
    where = f"ONNX node {name!r} ({node.op_type})"
    op, attrs = node.op_type, _attrs(node)
    c, h, w = _spatial(shapes[node.input[0]], where)
    out = shapes[node.output[0]]
    if op == "Conv":
        kernel, strides, pads = _window(attrs, where)
        return conv_from_input(name, (c, h, w), out[1], kernel, strides, pads,
                               groups=attrs.get("group", 1), out=(out[2], out[3]), On=batch)
    if op in ("Gemm", "MatMul"):
        return ConvLayer.fc(name, c * h * w, out[-1], On=batch)
    if op in POOL_OPS:
        if op.startswith("Global"):
            return PoolLayer(name, c, w, h, w, h, 1, 1, On=batch, mode=POOL_OPS[op])
        (ky, kx), (sy, sx), (py, px) = _window(attrs, where)
        return PoolLayer(name, c, w, h, kx, ky, sx, sy, px, py, On=batch, mode=POOL_OPS[op],
                         ceil_mode=bool(attrs.get("ceil_mode", 0)))
    if op == "LRN":
        return LRNLayer(name, c, h, w, batch, size=attrs["size"],
                        alpha=_f32(attrs.get("alpha", 1e-4)), beta=_f32(attrs.get("beta", 0.75)),
                        k=_f32(attrs.get("bias", 1.0)))
    if op in ACTIVATION_OPS:
        return ActivationLayer(name, c, h, w, batch, func=ACTIVATION_OPS[op])
    if op == "Softmax":
        return SoftmaxLayer(name, c, h, w, batch)
    return None


def network_from_onnx(path: str | Path, name: str | None = None) -> Network:
    """A Network from an ONNX file; batch = the input's N when it is a number, else 1."""
    try:
        import onnx
        from onnx import shape_inference
    except ImportError:  # pragma: no cover - onnx is a core dependency
        raise FileFormatError("reading ONNX files needs the 'onnx' package") from None
    path = Path(path)
    try:
        model = shape_inference.infer_shapes(onnx.load(str(path)))
    except Exception as exc:  # onnx raises DecodeError, ValidationError, InferenceError...
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileFormatError(f"ONNX file {str(path)!r}: cannot load ({message})") from None
    graph = model.graph
    shapes: dict[str, tuple[int, ...]] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(d.dim_value if d.dim_value > 0 else 1 for d in dims)
    for init in graph.initializer:
        shapes[init.name] = tuple(init.dims)
    weights = {init.name for init in graph.initializer}
    data_inputs = [v for v in graph.input if v.name not in weights]
    if not data_inputs:
        raise FileFormatError(f"ONNX file {str(path)!r}: the graph has no data input")
    batch = shapes[data_inputs[0].name][0] if shapes[data_inputs[0].name] else 1
    constants = set(weights)
    layers: list[Layer] = []
    for index, node in enumerate(graph.node):
        node_name = node.name or (node.output[0] if node.output else f"node{index}")
        if node.op_type not in SUPPORTED:
            raise SpecError(f"ONNX node {node_name!r}: unknown layer type {node.op_type!r}; "
                            "supported: " + ", ".join(SUPPORTED))
        if node.op_type == "Constant" or (node.input and all(i in constants
                                                             for i in node.input if i)):
            constants.update(node.output)  # constants and what is computed from them alone
        if node.op_type in PASSED_OVER:
            continue
        joining = node.op_type in ELTWISE_OPS or node.op_type == "Concat"
        if joining and len(shapes.get(node.output[0], (0, 0))) < 2:
            continue  # arithmetic on shape tensors
        needed = [i for i in node.input if i and (node.op_type == "Concat"
                                                  or i not in constants)] if joining \
            else node.input[:1]
        if any(i not in shapes for i in [*needed, node.output[0]]):
            raise FileFormatError(f"ONNX file {str(path)!r}: shape inference gave no shape "
                                  f"around node {node_name!r}")
        layer = _joining(node, node_name, shapes, batch, constants) if joining \
            else _layer(node, node_name, shapes, batch)
        if layer is not None:
            layers.append(layer)
    return Network(name or graph.name or path.stem, tuple(layers), title=graph.name,
                   source=f"ONNX {path.name}")
