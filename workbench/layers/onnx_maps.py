"""ONNX operators on feature maps: activations, BatchNormalization, arithmetic, Concat, Softmax,
LRN, Resize/Upsample and the channel shuffle.

- Activations: Relu, Clip (ReLU6 when clipping to [0, 6]), Sigmoid, Tanh, HardSwish,
  HardSigmoid, LeakyRelu, PRelu, Elu, Selu, Gelu, Softplus, Mish. Mul(x, Sigmoid(x)) where
  nothing else reads the sigmoid is one SiLU (Swish) activation, named after the Sigmoid node.
- BatchNormalization, and Add/Sub (bias) or Mul/Div (scale) by a per-map or scalar constant,
  right after a conv/fc layer that nothing else reads, are folded into it (the layer gains a
  bias); elsewhere they are an affine layer.
- Two or more data inputs of one shape: an eltwise layer (Sub counts as sum, Div as prod,
  Min as max, Mean as sum). A C×H×W map times a C×1×1 vector from the data (the
  squeeze-and-excitation scale): a scale layer. Other broadcasts: a generic layer.
- Concat along the channels: a concat layer (other axes: a generic layer).
- Resize/Upsample by integer factors: a resize layer (other sizes: a generic layer).
- Reshape → Transpose(perm 0, 2, 1, 3, 4) → Reshape (ShuffleNet): a shuffle layer at the
  Transpose; the Reshapes around it pass through. Any other Transpose that moves data (tokens
  ↔ features, heads ↔ tokens) is a transpose layer, a copy; Reshape and Flatten are views.
- LayerNormalization over the last axis: a layernorm layer. Softmax over the last axis of a
  tensor with rows (attention scores): a row softmax.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.errors import SpecError
from workbench.layers.onnx_context import ImportContext, attrs_of
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    EltwiseLayer,
    LRNLayer,
    SoftmaxLayer,
)
from workbench.layers.stream_spec import (
    AffineLayer,
    GenericLayer,
    LayerNormLayer,
    ResizeLayer,
    RowSoftmaxLayer,
    ScaleLayer,
    ShuffleLayer,
    TransposeLayer,
)

ACTIVATION_OPS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HardSwish": "hardswish",
                  "HardSigmoid": "hardsigmoid", "LeakyRelu": "leaky_relu", "PRelu": "prelu",
                  "Elu": "elu", "Selu": "selu", "Gelu": "gelu", "Softplus": "softplus",
                  "Mish": "mish", "Clip": "clip", "QLinearSigmoid": "sigmoid",
                  "QLinearLeakyRelu": "leaky_relu"}
ARITHMETIC = {"Add": "sum", "Sum": "sum", "Sub": "sum", "Mul": "prod", "Div": "prod",
              "Max": "max", "Min": "max", "Mean": "sum", "Pow": "prod",
              "QLinearAdd": "sum", "QLinearMul": "prod"}  # the last two: com.microsoft


def _f32(value: float) -> float:
    """An ONNX float attribute (stored as float32) back to its shortest decimal."""
    return float(f"{value:.7g}")


def generic_layer(ctx: ImportContext, node: Any, name: str, reads: list[str]) -> None:
    """The node as a GenericLayer from its first data input's shape to its output's."""
    c, h, w = ctx.maps(reads[0], node, name) if reads else (1, 1, 1)
    oc, oh, ow = ctx.maps(node.output[0], node, name)
    ctx.add(GenericLayer(name, node.op_type, c, h, w, oc, oh, ow, ctx.batch,
                         inputs=max(1, len(reads))), node, reads)


def _clip(ctx: ImportContext, node: Any) -> tuple[str, float | None, float | None]:
    """relu6, relu, or clip with its bounds (min, max; None: unbounded)."""
    attrs = attrs_of(node)
    low, high = attrs.get("min"), attrs.get("max")
    if len(node.input) > 1 and node.input[1] in ctx.g.values:
        low = float(ctx.g.values[node.input[1]].ravel()[0])
    if len(node.input) > 2 and node.input[2] in ctx.g.values:
        high = float(ctx.g.values[node.input[2]].ravel()[0])
    if low == 0 and high == 6:
        return "relu6", None, None
    if low == 0 and high is None:
        return "relu", None, None
    return "clip", None if low is None else _f32(low), None if high is None else _f32(high)


# ONNX attributes kept as an activation's (alpha, beta), their defaults when absent
_PARAMS = {"HardSigmoid": (("alpha", 0.2), ("beta", 0.5)), "LeakyRelu": (("alpha", 0.01),),
           "Elu": (("alpha", 1.0),),
           "Selu": (("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875))}


def _broadcasts(shape: tuple[int, ...], into: tuple[int, ...]) -> bool:
    """Does `shape` broadcast to `into` one way (ONNX's unidirectional broadcasting)?"""
    return len(shape) <= len(into) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(into), strict=False))


def convert_activation(ctx: ImportContext, node: Any, name: str) -> None:
    x = node.input[0]
    if node.op_type == "Clip":
        func, alpha, beta = _clip(ctx, node)
    else:
        attrs = attrs_of(node)
        func = ACTIVATION_OPS[node.op_type]
        if node.op_type == "Gelu" and attrs.get("approximate", b"none") in (b"tanh", "tanh"):
            func = "gelu_tanh"  # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        values = [_f32(attrs[key]) if key in attrs else default
                  for key, default in _PARAMS.get(node.op_type, ())]
        alpha, beta = (values + [None, None])[:2]
    names = ("min", "max") if node.op_type == "Clip" else \
        tuple(key for key, _ in _PARAMS.get(node.op_type, ()))
    for key, value in zip(names, (alpha, beta), strict=False):
        if value is not None and not math.isfinite(value):  # named as in the ONNX file
            raise SpecError(f"layer {name!r} ({node.op_type}): {key} must be a finite number, "
                            f"got {value}")
    c, h, w = ctx.maps(x, node, name)
    slopes = 0  # PRelu: its slope tensor's size, when its shape is known
    if node.op_type == "PRelu" and len(node.input) > 1:
        shape, into = ctx.g.shapes.get(node.input[1]), ctx.g.shapes.get(x)
        slopes = math.prod(shape) if shape is not None and None not in shape else 0
        if slopes and into is not None and None not in into and not _broadcasts(shape, into):
            raise SpecError(f"layer {name!r} (PRelu): slope of shape {tuple(shape)} does not "
                            f"broadcast against its input {tuple(into)} (per channel: "
                            f"({into[1]}, 1, 1))" if len(into) == 4 else
                            f"layer {name!r} (PRelu): slope of shape {tuple(shape)} does not "
                            f"broadcast against its input {tuple(into)}")
    ctx.add(ActivationLayer(name, c, h, w, ctx.batch, func=func, alpha=alpha, beta=beta,
                            slopes=slopes), node, [x])


def convert_batchnorm(ctx: ImportContext, node: Any, name: str) -> None:
    x = node.input[0]
    conv = ctx.foldable_into(x)
    if conv is not None:
        ctx.fold(node, conv, bias=True)
        return
    c, h, w = ctx.maps(x, node, name)
    ctx.add(AffineLayer(name, c, h, w, ctx.batch, scales=c, shifts=c), node, [x])


def _silu(ctx: ImportContext, node: Any, data: list[str]) -> bool:
    """Mul(x, Sigmoid(x)) → the Sigmoid layer becomes a SiLU; True if done."""
    if node.op_type != "Mul" or len(data) != 2:
        return False
    for sig_out, x in ((data[0], data[1]), (data[1], data[0])):
        name = ctx.producer.get(sig_out)
        if not name or ctx.consumers.get(sig_out) != 1 or ctx.tensor_of.get(name) != sig_out:
            continue
        layer = ctx.layer(name)
        if (isinstance(layer, ActivationLayer) and layer.func in ("sigmoid", "hardsigmoid")
                and ctx.reads[name] == (ctx.source(x),)):
            sig = next(n for n in ctx.g.nodes if sig_out in n.output)
            if sig.input[0] != x:
                continue
            # x·hardsigmoid(x; α, β) is hardswish with the same α, β (ONNX HardSwish: 1/6, 1/2)
            func, (alpha, beta) = ("silu", (None, None)) if layer.func == "sigmoid" else \
                ("hardswish", (layer.alpha, layer.beta))
            ctx.replace(layer, ActivationLayer(layer.name, layer.C, layer.H, layer.W, layer.On,
                                               func=func, alpha=alpha, beta=beta))
            ctx.fold(node, layer, bias=False)
            return True
    return False


def _by_constant(ctx: ImportContext, node: Any, name: str, x: str) -> None:
    """Arithmetic of one data tensor with constants: folded, affine or generic."""
    c, h, w = ctx.maps(x, node, name)
    consts = [i for i in node.input if i and i != x]
    sizes = [-1 if ctx.g.shapes.get(i) is None else int(np.prod(ctx.g.shapes[i]))
             for i in consts]
    per_map = all(s in (1, c) for s in sizes) and node.op_type in ("Add", "Sub", "Mul", "Div")
    out = ctx.maps(node.output[0], node, name)
    if _row_bias(ctx, node, x, consts):
        return
    if not per_map or out != (c, h, w):
        generic_layer(ctx, node, name, [x])
        return
    shift = node.op_type in ("Add", "Sub")
    conv = ctx.foldable_into(x)
    if conv is not None:
        ctx.fold(node, conv, bias=shift)
        return
    count = max(sizes) if sizes else 1
    layer = AffineLayer(name, c, h, w, ctx.batch, scales=0 if shift else count,
                        shifts=count if shift else 0)
    ctx.add(layer, node, [x])


def _row_bias(ctx: ImportContext, node: Any, x: str, consts: list[str]) -> bool:
    """A bias (Add/Sub) or scale (Mul/Div) along the last axis, of one value per output
    feature, after a linear layer (MatMul by a matrix) that nothing else reads: folded into it
    as its bias or its weights; True if done."""
    layer = ctx.foldable_into(x)
    shape = ctx.g.shapes.get(x)
    if layer is None or shape is None or node.op_type not in ("Add", "Sub", "Mul", "Div"):
        return False
    for const in consts:
        cs = ctx.g.shapes.get(const)
        if cs is None or math.prod(cs) not in (1, layer.Oc) or (
                cs and math.prod(cs) != cs[-1]) or ctx.g.shapes.get(node.output[0]) != shape:
            return False
    if shape[-1] != layer.Oc:
        return False
    ctx.fold(node, layer, bias=node.op_type in ("Add", "Sub"))
    return True


def convert_arithmetic(ctx: ImportContext, node: Any, name: str) -> None:
    data = ctx.data_inputs(node)
    if len(data) == 1:
        _by_constant(ctx, node, name, data[0])
        return
    if _silu(ctx, node, data):
        return
    out = ctx.maps(node.output[0], node, name)
    shapes = [ctx.shape(i, node, name) for i in data]
    full = ctx.shape(node.output[0], node, name)
    c, h, w = out
    if all(s == full for s in shapes):
        ctx.add(EltwiseLayer(name, c, h, w, ctx.batch, inputs=len(data),
                             op=ARITHMETIC[node.op_type]), node, data)
        return
    vector = [i for i, s in zip(data, shapes, strict=True) if s != full]
    if (len(data) == 2 and len(vector) == 1 and len(full) == 4 and node.op_type != "Pow"
            and ctx.shape(vector[0], node, name) in ((full[0], c, 1, 1), (c, 1, 1))):
        ctx.add(ScaleLayer(name, c, h, w, ctx.batch, op=ARITHMETIC[node.op_type]), node,
                [i for i in data if i not in vector] + vector)
        return
    generic_layer(ctx, node, name, data)


def convert_concat(ctx: ImportContext, node: Any, name: str) -> None:
    """Concat (and onnxruntime's QLinearConcat, whose data are its inputs 2, 5, 8, …)."""
    parts = [i for i in (node.input[2::3] if node.op_type == "QLinearConcat" else node.input)
             if i]
    out = ctx.shape(node.output[0], node, name)
    axis = attrs_of(node).get("axis", 1)
    dims = [ctx.maps(i, node, name) for i in parts]
    if (not isinstance(axis, int) or len(out) < 2 or axis % len(out) != 1
            or len({d[1:] for d in dims}) != 1):
        generic_layer(ctx, node, name, ctx.data_inputs(node))
        return
    ctx.add(ConcatLayer(name, tuple(d[0] for d in dims), dims[0][1], dims[0][2], ctx.batch),
            node, parts)


def convert_softmax(ctx: ImportContext, node: Any, name: str) -> None:
    """Softmax over the last axis of a tensor with rows (rank ≥ 3, W > 1: attention over the
    tokens) normalizes each row alone; any other softmax normalizes across the maps."""
    x = node.input[0]
    c, h, w = ctx.maps(x, node, name)
    rank = len(ctx.per_image(ctx.shape(x, node, name), x, node, name))
    default = -1 if ctx.g.opset >= 13 else 1
    axis = attrs_of(node).get("axis", default)
    if rank >= 3 and w > 1 and isinstance(axis, int) and axis % rank == rank - 1:
        ctx.add(RowSoftmaxLayer(name, c, h, w, ctx.batch), node, [x])
        return
    ctx.add(SoftmaxLayer(name, c, h, w, ctx.batch), node, [x])


def convert_layernorm(ctx: ImportContext, node: Any, name: str) -> None:
    """LayerNormalization over the last axis, with its scale (and shift) of W values."""
    x = node.input[0]
    shape = ctx.per_image(ctx.shape(x, node, name), x, node, name)
    axis = attrs_of(node).get("axis", -1)
    if not isinstance(axis, int) or axis % len(shape) != len(shape) - 1:
        raise SpecError(f"{ctx.where(node, name)}: normalization over axis {axis} of "
                        f"{list(shape)}; only the last axis is supported")
    c, h, w = ctx.maps(x, node, name) if len(shape) > 2 else (1, 1, shape[-1])  # N × F: a row
    counts = []
    for slot in (1, 2):
        given = len(node.input) > slot and bool(node.input[slot])
        size = math.prod(ctx.g.shapes.get(node.input[slot]) or (w,)) if given else 0
        if size not in (0, 1, w):
            raise SpecError(f"{ctx.where(node, name)}: {('scale', 'bias')[slot - 1]} of "
                            f"{size} values for rows of {w}")
        counts.append(w if size else 0)
    ctx.add(LayerNormLayer(name, c, h, w, ctx.batch, scales=counts[0], shifts=counts[1]),
            node, [x])


def convert_lrn(ctx: ImportContext, node: Any, name: str) -> None:
    attrs = attrs_of(node)
    if "size" not in attrs:
        raise SpecError(f"{ctx.where(node, name)}: attribute 'size' is missing (the ONNX spec "
                        "requires it: the number of maps each window sums over)")
    c, h, w = ctx.maps(node.input[0], node, name)
    ctx.add(LRNLayer(name, c, h, w, ctx.batch, size=attrs["size"],
                     alpha=_f32(attrs.get("alpha", 1e-4)), beta=_f32(attrs.get("beta", 0.75)),
                     k=_f32(attrs.get("bias", 1.0))), node, [node.input[0]])


def convert_resize(ctx: ImportContext, node: Any, name: str) -> None:
    x = node.input[0]
    c, h, w = ctx.maps(x, node, name)
    oc, oh, ow = ctx.maps(node.output[0], node, name)
    mode = attrs_of(node).get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if oc == c and oh % h == 0 and ow % w == 0 and oh >= h and ow >= w:
        ctx.add(ResizeLayer(name, c, h, w, oh // h, ow // w, ctx.batch,
                            mode="nearest" if mode == "nearest" else "linear"), node, [x])
        return
    generic_layer(ctx, node, name, [x])


def convert_transpose(ctx: ImportContext, node: Any, name: str) -> None:
    """The channel shuffle's Transpose is a shuffle layer; a Transpose that moves data a
    transpose layer (a copy); one that only moves size-1 dimensions is a view, passed
    through."""
    x = node.input[0]
    shape = ctx.g.shapes.get(x)
    perm = list(attrs_of(node).get("perm", []))
    if shape is not None and len(shape) == 5 and perm == [0, 2, 1, 3, 4]:
        c, h, w = shape[1] * shape[2], shape[3], shape[4]
        ctx.add(ShuffleLayer(name, c, h, w, ctx.batch, groups=shape[1]), node, [x])
        return
    moved = [p for p in perm if shape is not None and 0 <= p < len(shape) and shape[p] > 1]
    if shape is None or moved == sorted(moved):  # only size-1 dimensions move: a view
        ctx.alias(node, x)
        return
    c, h, w = ctx.maps(node.output[0], node, name)
    ctx.add(TransposeLayer(name, c, h, w, ctx.batch), node, [x])
