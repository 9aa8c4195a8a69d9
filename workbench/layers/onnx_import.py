"""Import an ONNX model as a Network, with shapes from ONNX shape inference.

Reading (`onnx_graph`): weight data is never needed (architecture-only files, missing
external data), shapes come from shape inference plus the evaluation of shape arithmetic.
Layers, named after their nodes: conv/fc (`onnx_ops`: Conv, QLinearConv, ConvInteger,
ConvTranspose; `onnx_matmul`: Gemm, MatMul, QLinearMatMul, MatMulInteger), pooling and global
reductions, and the map operators of `onnx_maps` (activations, BatchNormalization, arithmetic,
Concat, Softmax, LRN, Resize, channel shuffle, LayerNormalization, a data-moving Transpose),
and the GELU that exporters write as Div → Erf → Add → Mul → Mul (`onnx_patterns`).
Shape-only operators (Flatten, Reshape, Squeeze, Unsqueeze, Split, Slice, Gather, Identity,
Dropout, Cast, QuantizeLinear, DequantizeLinear, a Transpose of size-1 dimensions) pass
through: the next layer reads the tensor with its own inferred shape.
Computations on constants or shapes alone are skipped.

An operator the workbench does not know is carried as a non-tiled `GenericLayer` with its
inferred output shape, costed as a streaming element-wise layer, and listed in one
`UnknownOperatorWarning` line per operator type; with strict=True it is a SpecError instead
(the CLI's --strict turns the warning into that one-line error).

The network is named after the file; `Network.inputs` records which layers feed which.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, SpecError, WorkbenchError
from workbench.layers import onnx_cut, onnx_maps, onnx_matmul, onnx_ops, onnx_patterns
from workbench.layers.network import Network
from workbench.layers.onnx_context import ImportContext
from workbench.layers.onnx_graph import read_onnx
from workbench.layers.onnx_names import short_name
from workbench.layers.spec import ActivationLayer

PASS_THROUGH = ("Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Cast",
                "CastLike", "QuantizeLinear", "DequantizeLinear", "Split", "Slice", "Gather",
                "Expand", "Constant")
SHAPE_OPS = ("Shape", "Size", "ConstantOfShape", "Range", "NonZero")
GENERIC_NAMES = ("main_graph", "torch_jit", "torch-jit-export", "tf2onnx", "")
MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError, ZeroDivisionError,
             OverflowError, RecursionError, StopIteration)


class UnknownOperatorWarning(WorkbenchError, UserWarning):
    """Operators the workbench has no model for, carried as generic streamed layers (one line
    per operator type). As an error (warnings filter "error", the CLI's --strict) it is a
    WorkbenchError like any other bad input."""


def _pad(ctx: ImportContext, node: Any, name: str) -> None:
    if not onnx_ops.convert_pad(ctx, node, name):
        onnx_maps.generic_layer(ctx, node, name, ctx.data_inputs(node)[:1])


CONVERTERS: dict[str, Callable[[ImportContext, Any, str], None]] = {
    **dict.fromkeys(("Conv", "QLinearConv", "ConvInteger"), onnx_ops.convert_conv),
    "ConvTranspose": onnx_ops.convert_conv_transpose,
    **dict.fromkeys(("Gemm", "MatMul", "QLinearMatMul", "MatMulInteger"),
                    onnx_matmul.convert_matmul),
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"),
                    onnx_ops.convert_pool),
    **dict.fromkeys(("ReduceMean", "ReduceMax", "ReduceSum"), onnx_ops.convert_reduce),
    "Pad": _pad,
    **dict.fromkeys(onnx_maps.ACTIVATION_OPS, onnx_maps.convert_activation),
    "BatchNormalization": onnx_maps.convert_batchnorm,
    **dict.fromkeys(onnx_maps.ARITHMETIC, onnx_maps.convert_arithmetic),
    "Concat": onnx_maps.convert_concat,
    **dict.fromkeys(("Softmax", "LogSoftmax"), onnx_maps.convert_softmax),
    "LRN": onnx_maps.convert_lrn,
    "LayerNormalization": onnx_maps.convert_layernorm,
    **dict.fromkeys(("Resize", "Upsample"), onnx_maps.convert_resize),
    "Transpose": onnx_maps.convert_transpose,
    "Einsum": onnx_matmul.convert_einsum,
}
# onnxruntime's quantized operators (domain com.microsoft): counted as their float forms
MS_CONVERTERS: dict[str, Callable[[ImportContext, Any, str], None]] = {
    "QGemm": onnx_matmul.convert_matmul,
    **dict.fromkeys(("QLinearAdd", "QLinearMul"), onnx_maps.convert_arithmetic),
    **dict.fromkeys(("QLinearSigmoid", "QLinearLeakyRelu"), onnx_maps.convert_activation),
    "QLinearGlobalAveragePool": onnx_ops.convert_qlinear_global_pool,
    "QLinearConcat": onnx_maps.convert_concat,
    "QLinearSoftmax": onnx_maps.convert_softmax,
}
SUPPORTED = tuple(sorted({*CONVERTERS, *PASS_THROUGH, *SHAPE_OPS}))


def _skipped(ctx: ImportContext, node: Any) -> bool:
    """Constants, shape arithmetic and pass-through operators (recording the pass-through)."""
    g = ctx.g
    operands = node.input[:1] if node.op_type == "CastLike" else node.input
    if node.op_type in SHAPE_OPS or all(g.is_constant(i) for i in operands if i):
        g.weights.update(o for o in node.output if o and o not in g.values)
        return True
    if node.op_type in PASS_THROUGH:
        data = ctx.data_inputs(node)
        if data:
            ctx.alias(node, data[0])
        return True
    shape = g.shapes.get(node.output[0]) if node.output else None
    return node.op_type in onnx_maps.ARITHMETIC and shape is not None and len(shape) < 2


def _unknown(ctx: ImportContext, node: Any, name: str, strict: bool, origin: str) -> None:
    if strict:
        raise SpecError(f"{origin}: node {name!r}: unknown operator {node.op_type!r} "
                        "(strict import; without --strict it is carried as a generic layer)")
    ctx.unknown.setdefault(node.op_type, []).append(name)
    onnx_maps.generic_layer(ctx, node, name, ctx.data_inputs(node))


def _warn(ctx: ImportContext, origin: str) -> None:
    for op, names in ctx.unknown.items():
        shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
        warnings.warn(f"{origin}: unknown operator {op!r} ({len(names)} node(s): {shown}) "
                      "carried as a generic layer costed as streaming element-wise",
                      UnknownOperatorWarning, stacklevel=3)


def _text(value: str | bytes) -> str:
    """A protobuf string (bytes when the file holds invalid UTF-8) as text."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _title(model: Any) -> str:
    props = {p.key: p.value for p in model.metadata_props}
    if model.graph.name not in GENERIC_NAMES:
        return model.graph.name
    return props.get("source", "") or model.doc_string.split("\n")[0][:120]


def network_from_onnx(path: str | Path, name: str | None = None, strict: bool = False,
                      input_shape: tuple[int, ...] | None = None) -> Network:
    """A Network from an ONNX file, named after the file; batch = the data input's N when it
    is a number, else 1. strict: an unknown operator is an error instead of a warning.
    input_shape: (C, H, W) of the data input, for a model exported with dynamic sizes."""
    path = Path(path)
    try:
        return _network(path, name, strict, input_shape)
    except WorkbenchError as exc:
        if "ONNX file" in str(exc):
            raise
        raise type(exc)(f"ONNX file {path.name!r}: {exc}") from None  # name the file
    except MALFORMED as exc:  # a value of an unexpected type or size the checks missed
        raise FileFormatError(f"ONNX file {path.name!r}: malformed model "
                              f"({type(exc).__name__}: {_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:80] if text else ""


def _network(path: Path, name: str | None, strict: bool,
             input_shape: tuple[int, ...] | None) -> Network:
    origin = f"ONNX file {path.name!r}"
    model, g = read_onnx(path, input_shape)
    ctx = ImportContext(g)
    raw = [_text(node.name) or (_text(node.output[0]) if node.output and node.output[0]
                                else f"{node.op_type}_{index}")
           for index, node in enumerate(g.nodes)]
    short = [short_name(n) for n in raw]
    names = short if len(set(short)) == len(set(raw)) else raw  # readable, if still unique
    gelu = {p.last: p for p in onnx_patterns.find_gelu(g)}
    cut, cut_texts = onnx_cut.cut_back(g.nodes, {v.name for v in model.graph.input} | {
        i.name for i in model.graph.initializer}, g.shapes)
    inside = ({i for p in gelu.values() for i in p.members} - set(gelu)) | cut
    for index, node in enumerate(g.nodes):
        node_name = names[index]
        if not node.output or not node.output[0]:
            raise SpecError(f"{origin}: node {node_name!r} ({node.op_type}) has no output")
        if index in inside:
            continue
        if index in gelu:
            x = gelu[index].x
            ctx.add(ActivationLayer(node_name, *ctx.maps(x, node, node_name), ctx.batch,
                                    func="gelu"), node, [x])
            continue
        if _skipped(ctx, node):
            continue
        if not node.input or not node.input[0]:
            raise SpecError(f"{origin}: node {node_name!r} ({node.op_type}) has no data input")
        converter = CONVERTERS.get(node.op_type) if node.domain in ("", "ai.onnx") else \
            MS_CONVERTERS.get(node.op_type) if node.domain == "com.microsoft" else None
        try:
            if converter is None:
                _unknown(ctx, node, node_name, strict, origin)
            else:
                converter(ctx, node, node_name)
        except (TypeError, AttributeError, KeyError, IndexError, ZeroDivisionError,
                OverflowError) as exc:  # attributes or inputs of unexpected types or sizes
            raise SpecError(f"{origin}: node {node_name!r} ({node.op_type}): malformed "
                            f"attributes or inputs ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:80] if str(exc) else ''})") from None
    if not ctx.layers:
        raise SpecError(f"{origin}: no layer to import (the graph computes only constants "
                        "or shapes)")
    _warn(ctx, origin)
    for text in g.cut + cut_texts:
        warnings.warn(f"{origin}: {text}", onnx_cut.CutWarning, stacklevel=2)
    return Network(name or path.stem, tuple(ctx.layers), title=_title(model),
                   source=f"ONNX {path.name}", inputs=dict(ctx.reads),
                   unbiased=frozenset(ctx.unbiased), shared=frozenset(ctx.shared))
