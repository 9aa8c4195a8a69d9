"""ONNX operators with windows or weights: Conv (also QLinearConv, ConvInteger), ConvTranspose,
pooling and global reductions, Pad.

- Conv: kernel from `kernel_shape` or the weight's shape; strides, dilations, pads (begin and
  end apart) and auto_pad; the layer reads exactly the producer's input size (`windows`).
  A zero-constant Pad whose only reader is a Conv or a pool is folded into its padding.
- ConvTranspose with kernel = stride, no padding and no dilation (each input pixel writes its own
  K×K output patch) is exactly a 1×1 convolution with Cout·Ky·Kx output maps on the input grid
  (same MACs, weights and output elements; the output is the pixel-shuffled layout), and is
  imported as that tiled layer. Any other ConvTranspose is carried as a non-tiled layer with its
  exact MAC count (Cin·Cout/groups·Ky·Kx per input pixel), costed as streaming, with a warning.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from workbench.errors import SpecError
from workbench.layers.onnx_context import ImportContext, attrs_of
from workbench.layers.spec import ConvLayer, PoolLayer
from workbench.layers.stream_spec import GenericLayer
from workbench.layers.windows import ConvWindow, exact_conv, fitting_pool

WEIGHT_SLOT = {"Conv": 1, "QLinearConv": 3, "ConvInteger": 1, "ConvTranspose": 1}
BIAS_SLOT = {"Conv": 2, "QLinearConv": 8, "ConvTranspose": 2}


class ConvTransposeWarning(UserWarning):
    """A ConvTranspose imported as a non-tiled layer (not expressible as a ConvLayer)."""


def _ints(attrs: dict[str, Any], key: str, default: list[int] | None, where: str,
          length: int) -> list[int]:
    value = attrs.get(key, default)
    if value is None:
        raise SpecError(f"{where}: attribute {key!r} is missing")
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise SpecError(f"{where}: attribute {key!r} must be a list of integers, got {value!r}")
    if len(value) != length:
        raise SpecError(f"{where}: attribute {key!r} needs {length} values, got {list(value)}")
    return list(value)


def _pair(values: list[int]) -> tuple[int, int]:
    return (values[0], values[1]) if len(values) == 2 else (1, values[0])


def _auto_pads(auto: str, size: tuple[int, int], kernel: tuple[int, int],
               stride: tuple[int, int], dilation: tuple[int, int]) -> tuple[tuple, tuple]:
    if auto == "VALID":
        return (0, 0), (0, 0)
    begin, end = [], []
    for i, k, s, d in zip(size, kernel, stride, dilation, strict=True):
        total = max((math.ceil(i / s) - 1) * s + (k - 1) * d + 1 - i, 0) if s > 0 else 0
        small = total // 2
        begin.append(small if auto == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return tuple(begin), tuple(end)


def window(node: Any, name: str, ctx: ImportContext, x: str,
           weight_kernel: tuple[int, ...] | None) -> dict[str, Any]:
    """Kernel, stride, dilation, pads (begin, end) as (y, x) pairs of a windowed node on input
    tensor x, plus a folded Pad's padding."""
    where = ctx.where(node, name)
    attrs = attrs_of(node)
    rank = len(ctx.shape(x, node, name)) - 2
    if rank not in (1, 2):
        raise SpecError(f"{where}: only 1-D and 2-D windows are supported (input rank "
                        f"{rank + 2})")
    kernel = _pair(_ints(attrs, "kernel_shape", list(weight_kernel) if weight_kernel else None,
                         where, rank))
    stride = _pair(_ints(attrs, "strides", [1] * rank, where, rank))
    dilation = _pair(_ints(attrs, "dilations", [1] * rank, where, rank))
    pads = _ints(attrs, "pads", [0] * 2 * rank, where, 2 * rank)
    begin, end = _pair(pads[:rank]), _pair(pads[rank:])
    if rank == 1:
        begin, end = (0, begin[1]), (0, end[1])
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    for label, values in (("kernel_shape", kernel), ("strides", stride),
                          ("dilations", dilation)):
        if min(values) < 1:
            raise SpecError(f"{where}: {label} must be positive, got {list(values)}")
    if auto not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise SpecError(f"{where}: unknown auto_pad {auto!r}")
    c, h, w = ctx.maps(x, node, name)
    if auto not in ("NOTSET", ""):
        begin, end = _auto_pads(auto, (h, w), kernel, stride, dilation)
    if x in ctx.pad_before:
        x, ((t, left), (b, r)) = ctx.pad_before[x]
        begin, end = (begin[0] + t, begin[1] + left), (end[0] + b, end[1] + r)
    _, ih, iw = ctx.maps(x, node, name)  # the unpadded input when a Pad was folded
    for axis, size, k, d, b, e in zip(("height", "width"), (ih, iw), kernel, dilation, begin,
                                      end, strict=True):
        if (k - 1) * d + 1 > size + b + e:
            raise SpecError(f"{where}: kernel span {(k - 1) * d + 1} larger than padded input "
                            f"{size + b + e} on {axis}")
    return {"x": x, "kernel": kernel, "stride": stride, "dilation": dilation, "begin": begin,
            "end": end, "group": attrs.get("group", 1)}


def _out_hw(ctx: ImportContext, node: Any, name: str) -> tuple[int, int, int]:
    return ctx.maps(node.output[0], node, name)


def convert_conv(ctx: ImportContext, node: Any, name: str) -> None:
    """Conv, QLinearConv, ConvInteger."""
    where = ctx.where(node, name)
    slot = WEIGHT_SLOT[node.op_type]
    if len(node.input) <= slot or not node.input[slot]:
        raise SpecError(f"{where}: the weight input is missing")
    w_shape = ctx.g.shapes.get(node.input[slot])
    win = window(node, name, ctx, node.input[0], tuple(w_shape[2:]) if w_shape else None)
    maps, oy, ox = _out_hw(ctx, node, name)
    in_maps = ctx.maps(win["x"], node, name)
    group = win["group"]
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise SpecError(f"{where}: group must be a positive integer, got {group!r}")
    if w_shape is not None and len(w_shape) >= 2 and w_shape[1] * group != in_maps[0]:
        raise SpecError(f"{where}: weight {list(w_shape)} with group {group} does not match "
                        f"{in_maps[0]} input maps")
    layer = exact_conv(name, in_maps, maps, ConvWindow(win["kernel"], win["stride"],
                                                       win["begin"], win["end"], win["dilation"]),
                       group, ctx.batch, out=(oy, ox), where=where)
    bias = BIAS_SLOT.get(node.op_type)
    biased = bias is not None and len(node.input) > bias and bool(node.input[bias])
    ctx.add(layer, node, [win["x"]], biased=biased)
    ctx.uses_weight(node.input[slot], node.input[bias] if biased else "")


def convert_conv_transpose(ctx: ImportContext, node: Any, name: str) -> None:
    where = ctx.where(node, name)
    w_shape = ctx.g.shapes.get(node.input[1]) if len(node.input) > 1 else None
    if not w_shape or len(w_shape) < 3:
        raise SpecError(f"{where}: the weight input is missing or has no shape")
    win = window(node, name, ctx, node.input[0], tuple(w_shape[2:]))
    attrs = attrs_of(node)
    c, h, w = ctx.maps(win["x"], node, name)
    maps, oy, ox = _out_hw(ctx, node, name)
    (ky, kx), group = win["kernel"], win["group"]
    if isinstance(group, bool) or not isinstance(group, int) or group < 1 or c % group:
        raise SpecError(f"{where}: group {group!r} must be a positive divisor of {c} maps")
    biased = len(node.input) > 2 and bool(node.input[2])
    exact = (win["kernel"] == win["stride"] and win["dilation"] == (1, 1)
             and win["begin"] == win["end"] == (0, 0) and (oy, ox) == (h * ky, w * kx)
             and not any(attrs.get("output_padding", [])))
    if exact:
        layer = ConvLayer(name=name, Ox=w, Oy=h, Oc=maps * ky * kx, On=ctx.batch,
                          Kc=c // group, groups=group)
        ctx.add(layer, node, [win["x"]], biased=biased)
        return
    weights = c * (maps // group) * ky * kx
    warnings.warn(f"ONNX ConvTranspose {name!r}: carried as a non-tiled layer "
                  f"({weights * h * w} MACs per image, costed as streaming)",
                  ConvTransposeWarning, stacklevel=2)
    ctx.add(GenericLayer(name, "ConvTranspose", c, h, w, maps, oy, ox, ctx.batch,
                         macs_per_image=weights * h * w, weights=weights), node, [win["x"]])


POOL_MODE = {"MaxPool": "max", "AveragePool": "avg", "GlobalMaxPool": "max",
             "GlobalAveragePool": "avg", "ReduceMean": "avg", "ReduceMax": "max",
             "ReduceSum": "avg"}


def _global(ctx: ImportContext, node: Any, name: str, mode: str) -> None:
    x = node.input[0]
    c, h, w = ctx.maps(x, node, name)
    ctx.add(PoolLayer(name, c, w, h, w, h, 1, 1, On=ctx.batch, mode=mode), node, [x])


def convert_qlinear_global_pool(ctx: ImportContext, node: Any, name: str) -> None:
    """com.microsoft QLinearGlobalAveragePool (NCHW): a global average pool."""
    if attrs_of(node).get("channels_last", 0):
        raise SpecError(f"{ctx.where(node, name)}: channels_last pooling is not supported")
    _global(ctx, node, name, "avg")


def convert_pool(ctx: ImportContext, node: Any, name: str) -> None:
    """MaxPool, AveragePool and the global pools."""
    mode = POOL_MODE[node.op_type]
    if node.op_type.startswith("Global"):
        _global(ctx, node, name, mode)
        return
    win = window(node, name, ctx, node.input[0], None)
    c, h, w = ctx.maps(win["x"], node, name)
    _, oy, ox = _out_hw(ctx, node, name)
    layer = None
    if win["dilation"] == (1, 1):
        layer = fitting_pool(name, (c, h, w), win["kernel"], win["stride"], win["begin"],
                             win["end"], (oy, ox), mode, ctx.batch)
    if layer is None:
        layer = GenericLayer(name, node.op_type, c, h, w, c, oy, ox, ctx.batch)
    ctx.add(layer, node, [win["x"]])


def convert_reduce(ctx: ImportContext, node: Any, name: str) -> None:
    """ReduceMean/Max/Sum over the spatial axes is a global pool; other axes a generic layer."""
    x = node.input[0]
    rank = len(ctx.shape(x, node, name))
    axes = attrs_of(node).get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in ctx.g.values:
        axes = [int(a) for a in ctx.g.values[node.input[1]].ravel()]
    spatial = rank >= 3 and axes is not None and sorted(a % rank for a in axes) == list(
        range(2, rank))
    if spatial:
        _global(ctx, node, name, POOL_MODE[node.op_type])
        return
    c, h, w = ctx.maps(x, node, name)
    shape = ctx.shape(node.output[0], node, name)
    oc, oh, ow = ctx.maps(node.output[0], node, name) if len(shape) >= 2 else (1, 1, 1)
    ctx.add(GenericLayer(name, node.op_type, c, h, w, oc, oh, ow, ctx.batch), node, [x])


def convert_pad(ctx: ImportContext, node: Any, name: str) -> bool:
    """Fold a zero, constant-mode, spatial-only Pad into its only reader (a Conv or pool):
    True if folded (the caller carries it as a generic layer otherwise)."""
    attrs = attrs_of(node)
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    pads = attrs.get("pads")
    if pads is None and len(node.input) > 1:
        value = ctx.g.values.get(node.input[1])
        pads = None if value is None else [int(p) for p in value.ravel()]
    fill = ctx.g.values.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    zero = fill is None or (fill.size == 1 and float(fill.ravel()[0]) == 0.0)
    shape = ctx.g.shapes.get(node.input[0])
    readers = [n for n in ctx.g.nodes if node.output[0] in n.input]
    if (mode != "constant" or not zero or pads is None or shape is None or len(shape) != 4
            or len(pads) != 8 or any(pads[i] for i in (0, 1, 4, 5)) or min(pads) < 0
            or len(readers) != 1
            or readers[0].op_type not in ("Conv", "QLinearConv", "ConvInteger", "AveragePool")):
        return False
    ctx.pad_before[node.output[0]] = (node.input[0], ((pads[2], pads[3]), (pads[6], pads[7])))
    ctx.alias(node, node.input[0])
    return True
