"""Import a Caffe deploy .prototxt as a Network, deriving shapes the way Caffe does.

A small reader of the protobuf text format (no Caffe needed). Layer types: Input (or the
legacy `input`/`input_shape`/`input_dim` fields), Convolution (also DepthwiseConvolution and
ConvolutionDepthwise, whose group defaults to the input maps), InnerProduct, Pooling (Caffe's
round-up output), LRN, ReLU (a leaky ReLU with a negative_slope), ReLU6, PReLU (C slopes, or
one when channel_shared), ELU (its alpha), Sigmoid, TanH, Softmax, BatchNorm and Scale, Eltwise
(SUM, PROD, MAX) and Concat (along the channels); Dropout, Flatten and Split carry no data work and
are passed over. Legacy V1 `layers { type: CONVOLUTION }` also reads.

A convolution reads exactly its bottom blob (floor rounding, `windows.exact_conv`, so a
stride-2 layer on 56 rows reads all 56). BatchNorm and Scale right after a Convolution or
InnerProduct (the usual in-place `conv → BatchNorm → Scale` of ResNet deploys) fold into it:
the layer gains a bias (BatchNorm's −mean/σ, or the Scale's bias_term). Elsewhere they are an
affine layer (per-map scale and shift), into which a following Scale folds.
`bias_term: false` leaves a conv/fc layer without biases (`Network.unbiased`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from workbench.errors import FileFormatError, SpecError, WorkbenchError
from workbench.layers.network import Network
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    Layer,
    LRNLayer,
    PoolLayer,
    Shape,
    SoftmaxLayer,
)
from workbench.layers.stream_spec import AffineLayer
from workbench.layers.windows import ConvWindow, exact_conv
from workbench.resources import cut

_TOKEN = re.compile(r'\s*(?:#[^\n]*|"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\''
                    r'|([{}:])|([^\s{}:"\']+))')
_V1_TYPES = {"CONVOLUTION": "Convolution", "INNER_PRODUCT": "InnerProduct", "POOLING": "Pooling",
             "LRN": "LRN", "RELU": "ReLU", "SIGMOID": "Sigmoid", "TANH": "TanH",
             "SOFTMAX": "Softmax", "DROPOUT": "Dropout", "FLATTEN": "Flatten", "SPLIT": "Split",
             "CONCAT": "Concat", "ELTWISE": "Eltwise", "SOFTMAX_LOSS": "SoftmaxWithLoss"}
PASSED_OVER = ("Dropout", "Flatten", "Split", "Input")
MAX_DEPTH = 64  # nesting of { } blocks
MAX_BYTES = 8 << 20  # a deploy prototxt is a few KB; larger files are refused unread
ELTWISE_OPS = {"SUM": "sum", "PROD": "prod", "MAX": "max", 0: "prod", 1: "sum", 2: "max"}
ACTIVATIONS = {"ReLU": "relu", "ReLU6": "relu6", "Sigmoid": "sigmoid", "TanH": "tanh",
               "PReLU": "prelu", "ELU": "elu"}
CONVOLUTIONS = ("Convolution", "DepthwiseConvolution", "ConvolutionDepthwise")


def _tokens(text: str, origin: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip():
                line = text.count("\n", 0, pos) + 1
                raise FileFormatError(f"prototxt {origin!r}: cannot read line {line}")
            break
        pos = match.end()
        dq, sq, punct, word = match.groups()
        if dq is not None or sq is not None:
            out.append(("str", dq if dq is not None else sq))
        elif punct:
            out.append(("punct", punct))
        elif word:
            out.append(("word", word))
    return out


def parse_prototxt(text: str, origin: str = "<text>") -> dict[str, list[Any]]:
    """Protobuf text format as nested dicts; every field maps to a list of its values."""
    tokens, pos = _tokens(text, origin), 0

    def message(closing: bool, depth: int = 0) -> dict[str, list[Any]]:
        nonlocal pos
        if depth > MAX_DEPTH:
            raise FileFormatError(f"prototxt {origin!r}: messages nested deeper than "
                                  f"{MAX_DEPTH} levels")
        fields: dict[str, list[Any]] = {}
        while pos < len(tokens):
            kind, value = tokens[pos]
            if kind == "punct" and value == "}":
                if not closing:
                    raise FileFormatError(f"prototxt {origin!r}: unbalanced '}}'")
                pos += 1
                return fields
            if kind != "word":
                raise FileFormatError(f"prototxt {origin!r}: expected a field name, got {value!r}")
            pos += 1
            if pos < len(tokens) and tokens[pos] == ("punct", ":"):
                pos += 1
            if pos >= len(tokens):
                raise FileFormatError(f"prototxt {origin!r}: field {value!r} has no value")
            if tokens[pos] == ("punct", "{"):
                pos += 1
                fields.setdefault(value, []).append(message(True, depth + 1))
            else:
                vkind, raw = tokens[pos]
                if vkind == "punct":
                    raise FileFormatError(f"prototxt {origin!r}: field {value!r} has no value")
                pos += 1
                fields.setdefault(value, []).append(raw if vkind == "str" else _scalar(raw))
        if closing:
            raise FileFormatError(f"prototxt {origin!r}: missing '}}' at end of file")
        return fields

    return message(False)


def _scalar(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(raw, raw)


def _one(msg: dict[str, list[Any]], key: str, default: Any = None) -> Any:
    """The first value of a field; a `*_param` field must be a { ... } block."""
    values = msg.get(key)
    value = values[0] if values else default
    if key.endswith("_param") and not isinstance(value, dict):
        raise SpecError(f"{key} must be a {{ ... }} block of fields, got {cut(value)}")
    return value


def _hw(param: dict[str, list[Any]], key: str, default: int) -> tuple[int, int]:
    """(h, w) from Caffe's `key_size`/`key` (repeated or single) or `key_h`/`key_w` fields."""
    values = param.get(f"{key}_size", param.get(key, []))
    h = _one(param, f"{key}_h", values[0] if values else default)
    w = _one(param, f"{key}_w", values[-1] if values else default)
    return (h, w)


def _input_dims(net: dict[str, list[Any]], origin: str) -> list[int] | None:
    """(N, C, H, W) of the legacy `input_shape { dim: ... }` or `input_dim` fields."""
    dims = None
    if "input_shape" in net:
        block = net["input_shape"][0]
        if not isinstance(block, dict):
            raise FileFormatError(f"prototxt {origin!r}: input_shape must be a {{ dim: ... }} "
                                  "block")
        dims = block.get("dim", [])
    elif "input_dim" in net:
        dims = net["input_dim"]
    if dims is None:
        return None
    if len(dims) != 4 or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                                 for d in dims):
        raise FileFormatError(f"prototxt {origin!r}: input needs 4 positive integer dims "
                              f"(N, C, H, W), got {dims}")
    return list(dims)


def _finite(param: dict[str, list[Any]], key: str, default: float, name: str,
            section: str = "lrn_param") -> float:
    value = _one(param, key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value):
        raise SpecError(f"layer {name!r}: {section}.{key} must be a finite number, "
                        f"got {value!r}")
    return float(value)


def _layer(kind: str, name: str, msg: dict[str, list[Any]], shape: Shape, batch: int) -> Layer:
    c, h, w = shape
    if kind in CONVOLUTIONS:
        p = _one(msg, "convolution_param", {})
        group = _one(p, "group", 1 if kind == "Convolution" else c)
        dilation = _one(p, "dilation", 1)
        window = ConvWindow(_hw(p, "kernel", 1), _hw(p, "stride", 1), _hw(p, "pad", 0),
                            dilation=(dilation, dilation))
        return exact_conv(name, shape, _one(p, "num_output"), window, groups=group, On=batch,
                          where=f"layer {name!r}")
    if kind == "InnerProduct":
        return ConvLayer.fc(name, c * h * w, _one(_one(msg, "inner_product_param", {}),
                                                  "num_output"), On=batch)
    if kind == "Pooling":
        p = _one(msg, "pooling_param", {})
        mode = {"MAX": "max", "AVE": "avg", 0: "max", 1: "avg"}.get(_one(p, "pool", "MAX"))
        if mode is None:
            raise SpecError(f"layer {name!r}: pooling method {_one(p, 'pool')!r} not supported")
        if _one(p, "global_pooling", False):
            return PoolLayer(name, c, w, h, w, h, 1, 1, On=batch, mode=mode)
        (ky, kx), (sy, sx), (py, px) = _hw(p, "kernel", 1), _hw(p, "stride", 1), _hw(p, "pad", 0)
        return PoolLayer(name, c, w, h, kx, ky, sx, sy, px, py, On=batch, mode=mode,
                         ceil_mode=True)
    if kind == "LRN":
        p = _one(msg, "lrn_param", {})
        return LRNLayer(name, c, h, w, batch, size=_one(p, "local_size", 5),
                        alpha=_finite(p, "alpha", 1.0, name), beta=_finite(p, "beta", 0.75, name),
                        k=_finite(p, "k", 1.0, name))
    if kind == "ReLU":  # relu_param { negative_slope } ≠ 0: a leaky ReLU of that slope
        slope = _finite(_one(msg, "relu_param", {}), "negative_slope", 0.0, name, "relu_param")
        if slope != 0:
            return ActivationLayer(name, c, h, w, batch, func="leaky_relu", alpha=slope)
    if kind == "PReLU":  # one learned slope per channel, or one for all (channel_shared)
        shared = _one(_one(msg, "prelu_param", {}), "channel_shared", False)
        if not isinstance(shared, bool):
            raise SpecError(f"layer {name!r}: prelu_param.channel_shared must be true or "
                            f"false, got {shared!r}")
        return ActivationLayer(name, c, h, w, batch, func="prelu", slopes=1 if shared else c)
    if kind == "ELU":
        return ActivationLayer(name, c, h, w, batch, func="elu", alpha=_finite(
            _one(msg, "elu_param", {}), "alpha", 1.0, name, "elu_param"))
    if kind in ACTIVATIONS:
        return ActivationLayer(name, c, h, w, batch, func=ACTIVATIONS[kind])
    return SoftmaxLayer(name, c, h, w, batch)


def _joining(kind: str, name: str, msg: dict[str, list[Any]], shapes: list[Shape],
             batch: int) -> Layer:
    """An Eltwise or Concat layer over its bottoms' shapes."""
    if kind == "Concat":
        p = _one(msg, "concat_param", {})
        axis = _one(p, "axis", _one(p, "concat_dim", 1))
        if axis not in (1, -3):
            raise SpecError(f"layer {name!r}: only concatenation along the channels (axis 1) "
                            f"is supported, got axis {axis}")
        if len({s[1:] for s in shapes}) != 1:
            raise SpecError(f"layer {name!r}: Concat inputs differ in height or width: {shapes}")
        return ConcatLayer(name, tuple(s[0] for s in shapes), shapes[0][1], shapes[0][2], batch)
    operation = _one(_one(msg, "eltwise_param", {}), "operation", "SUM")
    if operation not in ELTWISE_OPS:
        raise SpecError(f"layer {name!r}: eltwise operation {operation!r} not supported")
    if len(set(shapes)) != 1:
        raise SpecError(f"layer {name!r}: Eltwise inputs have different shapes: {shapes}")
    c, h, w = shapes[0]
    return EltwiseLayer(name, c, h, w, batch, inputs=len(shapes), op=ELTWISE_OPS[operation])


def _bias_term(kind: str, msg: dict[str, list[Any]]) -> bool:
    key = "inner_product_param" if kind == "InnerProduct" else "convolution_param"
    return bool(_one(_one(msg, key, {}), "bias_term", True))


def _normalization(kind: str, name: str, msg: dict[str, list[Any]], bottom: str,
                   state: dict[str, Any], shape: Shape, batch: int) -> Layer | None:
    """BatchNorm ((x − mean)/σ: a scale and a shift) or Scale (a shift if bias_term) folded
    into the conv/fc or affine layer that last wrote `bottom` (None), or an affine layer."""
    shift = kind == "BatchNorm" or bool(_one(_one(msg, "scale_param", {}), "bias_term", False))
    last = state["writer"].get(bottom)
    if last is not None and last in state["foldable"]:
        if shift:
            state["unbiased"].discard(last)
        return None
    c, h, w = shape
    return AffineLayer(name, c, h, w, batch, scales=c, shifts=c if shift else 0)


def _build(kind: str, name: str, msg: dict[str, list[Any]], bottoms: list[str],
           blobs: dict[str, Shape], state: dict[str, Any], batch: int) -> Layer | None:
    if kind in ("BatchNorm", "Scale"):
        return _normalization(kind, name, msg, bottoms[0], state, blobs[bottoms[0]], batch)
    if kind in ("Eltwise", "Concat"):
        return _joining(kind, name, msg, [blobs[b] for b in bottoms], batch)
    return _layer(kind, name, msg, blobs[bottoms[0]], batch)


def _read(path: Path) -> str:
    """The file's text: UTF-8, at most MAX_BYTES, no NUL bytes (one-line errors)."""
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise FileFormatError(f"prototxt {str(path)!r}: cannot read "
                              f"({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_BYTES:
        raise FileFormatError(f"prototxt {str(path)!r}: larger than {MAX_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"prototxt {str(path)!r}: not UTF-8 text (invalid byte at offset "
                              f"{exc.start})") from None
    if "\x00" in text:
        raise FileFormatError(f"prototxt {str(path)!r}: a binary file, not prototxt text")
    return text


def network_from_prototxt(path: str | Path) -> Network:
    """A Network from a Caffe deploy prototxt (N of the input shape becomes the batch). Every
    problem is one WorkbenchError line; values of unexpected types anywhere end in a
    FileFormatError naming the file, never in another exception."""
    path = Path(path)
    try:
        return _network(path, parse_prototxt(_read(path), str(path)))
    except WorkbenchError as exc:
        if str(path) in str(exc):
            raise
        raise type(exc)(f"prototxt {str(path)!r}: {exc}") from None  # name the file
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, ZeroDivisionError,
            OverflowError, RecursionError) as exc:
        raise FileFormatError(f"prototxt {str(path)!r}: malformed ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:80] if str(exc) else ''})") from None


def _network(path: Path, net: dict[str, list[Any]]) -> Network:
    blobs: dict[str, Shape] = {}
    batch = 1
    dims = _input_dims(net, str(path))
    if dims is not None:
        blobs[str(_one(net, "input", "data"))] = (dims[1], dims[2], dims[3])
        batch = dims[0]
    layers: list[Layer] = []
    # writer: blob -> the layer that last wrote it ("" = network input); foldable: conv/fc
    # layers whose output nothing but BatchNorm/Scale touched yet
    state: dict[str, Any] = {"writer": dict.fromkeys(blobs, ""), "foldable": set(),
                             "unbiased": set()}
    inputs: dict[str, tuple[str, ...]] = {}
    known = (*CONVOLUTIONS, "InnerProduct", "Pooling", "LRN", "Softmax", "Eltwise", "Concat",
             "BatchNorm", "Scale", *ACTIVATIONS)
    for msg in net.get("layer", []) + net.get("layers", []):
        if not isinstance(msg, dict):
            raise FileFormatError(f"prototxt {str(path)!r}: 'layer' must be a {{ }} block")
        name = str(_one(msg, "name", f"layer{len(layers)}"))
        kind = str(_one(msg, "type", ""))
        kind = _V1_TYPES.get(kind, kind)
        tops = [str(t) for t in msg.get("top", [])]
        bottoms = [str(b) for b in msg.get("bottom", [])]
        if kind == "Input":
            p = _one(msg, "input_param", {})
            shape_msg = _one(p, "shape", {}) if isinstance(p, dict) else {}
            dims = shape_msg.get("dim", []) if isinstance(shape_msg, dict) else []
            if len(dims) != 4 or not tops or not all(isinstance(d, int) and d > 0 for d in dims):
                raise FileFormatError(f"prototxt {str(path)!r}: Input layer {name!r} needs a "
                                      "top and 4 positive dims")
            batch, blobs[tops[0]] = dims[0], (dims[1], dims[2], dims[3])
            state["writer"][tops[0]] = ""
            continue
        if kind in ("Data", "ImageData", "HDF5Data", "MemoryData", "SoftmaxWithLoss", "Accuracy"):
            continue  # training-only layers of a train_test definition
        if kind not in known + PASSED_OVER:
            raise SpecError(f"prototxt layer {name!r}: unknown layer type {kind!r}; supported: "
                            + ", ".join(known + PASSED_OVER))
        joining = kind in ("Eltwise", "Concat")
        missing = [b for b in (bottoms if joining else bottoms[:1]) if b not in blobs]
        if not bottoms or missing:
            raise FileFormatError(f"prototxt {str(path)!r}: layer {name!r} reads blob "
                                  f"{missing[0] if missing else None!r} that no layer produced "
                                  "(deploy prototxts need an input shape)")
        if kind in PASSED_OVER:
            c, h, w = blobs[bottoms[0]]
            if kind == "Flatten":
                c, h, w = c * h * w, 1, 1
            for top in tops:
                blobs[top] = (c, h, w)
                state["writer"][top] = state["writer"].get(bottoms[0], "")
            continue
        try:
            layer = _build(kind, name, msg, bottoms, blobs, state, batch)
        except SpecError as exc:
            if str(exc).startswith("layer "):
                raise
            raise SpecError(f"prototxt layer {name!r} ({kind}): {exc}") from None
        except (TypeError, AttributeError, KeyError, IndexError, ZeroDivisionError) as exc:
            raise SpecError(f"prototxt layer {name!r} ({kind}): malformed parameters "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:80]})") from None
        if layer is None:  # folded into the layer before
            for top in tops:
                blobs[top] = blobs[bottoms[0]]
                state["writer"][top] = state["writer"][bottoms[0]]
            continue
        if layer.name in inputs:
            raise SpecError(f"prototxt {str(path)!r}: layer name {layer.name!r} used twice")
        layers.append(layer)
        inputs[layer.name] = tuple(state["writer"].get(b, "")
                                   for b in (bottoms if joining else bottoms[:1]))
        state["foldable"].discard(state["writer"].get(bottoms[0]))
        if kind in (*CONVOLUTIONS, "InnerProduct", "BatchNorm", "Scale"):
            state["foldable"].add(layer.name)
            if not _bias_term(kind, msg):
                state["unbiased"].add(layer.name)
        for top in tops:
            blobs[top] = layer.out_shape
            state["writer"][top] = layer.name
    if not layers:
        raise FileFormatError(f"prototxt {str(path)!r}: no layers")
    return Network(str(_one(net, "name", path.stem)), tuple(layers),
                   title=str(_one(net, "name", "")), source=f"Caffe {path.name}", inputs=inputs,
                   unbiased=frozenset(state["unbiased"]))
