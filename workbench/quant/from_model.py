"""Quantized ONNX models in: the scales and zero points of QDQ and QLinear models as the
workbench's per-layer fixed-point formats (`load_quantized`).

Read per conv/fc layer (Conv, Gemm, MatMul in QDQ form; QLinearConv, QLinearMatMul):
- input: the DequantizeLinear that feeds the layer (QDQ), or x_scale/x_zero_point (QLinear);
- weights: DequantizeLinear of an int8/uint8 constant (QDQ), or the constant and
  w_scale/w_zero_point (QLinear), per tensor or per output channel;
- bias: int32 codes (DequantizeLinear, or QLinear's B in the scale x_scale · w_scale), a float
  constant, or a constant Add after a MatMul;
- output: the QuantizeLinear that reads the layer's output (through Relu/Clip and a bias Add),
  or y_scale/y_zero_point; without one the accumulator itself is the output.
Element-wise Add/Max and Concat take the format of the QuantizeLinear after them. A conv/fc
layer without quantized input and weights runs in float.

Mapping (stated, never silent):
- a scale s = 2^−f is the fractional length FL = f, exactly. Any other scale is flagged with
  its nearest power of two 2^−round(−log2 s) and the relative error; the model's integer codes
  are kept, so only the scale is approximated;
- per-channel power-of-two scales: FL(w) = the largest f_c, channel c's codes shifted left by
  f_max − f_c (exact); BW(w) widens by the spread f_max − f_min;
- zero points are subtracted, exactly: codes q − zp in the narrowest signed width holding
  [qmin − zp, qmax − zp] (symmetric int8: 8 bits as in the model; uint8: 9 bits, or 8 with
  zp = 128). Asymmetric tensors (uint8, or a non-zero zero point) are flagged: the model clamps
  to [qmin − zp, qmax − zp], the workbench saturates to the signed BW-bit range, so the two
  agree wherever that clamp does not act (e.g. a Relu follows).
Rounding differs at exact ties: the workbench rounds half away from zero (seed 000), ONNX
QuantizeLinear half to even. ConvInteger/MatMulInteger (dynamic quantization) state no
activation scale and are refused.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import SpecError
from workbench.layers import load_network
from workbench.layers.network import Network
from workbench.layers.onnx_external import load_model
from workbench.layers.onnx_names import short_name
from workbench.quant.fixed import FixedFormat
from workbench.quant.graph import Graph, graph_of
from workbench.quant.infer import LayerFormat
from workbench.quant.onnx_quant import (
    CODE_RANGES,
    Reader,
    Scale,
    float_twin,
    node_name,
    real,
)

DYNAMIC = ("ConvInteger", "MatMulInteger", "DynamicQuantizeLinear")
JOINS = ("Add", "Sum", "Max", "Concat")
QUANTIZED_OPS = ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul")


@dataclass(frozen=True)
class Mapped:
    """A Scale as a fixed-point format: the format, FL per channel, what is not exact."""

    fmt: FixedFormat
    fl: np.ndarray
    flags: tuple[str, ...]


@dataclass(frozen=True)
class ModelLayer:
    """One quantized conv/fc layer of a model: its formats and what is not exact."""

    name: str
    op: str
    fmt: LayerFormat
    flags: tuple[str, ...]


@dataclass(frozen=True)
class QuantizedModel:
    """A quantized model: network and graph, weights (real values of the kept codes, bias in
    the accumulator's scale), per-layer formats, and flags per layer."""

    net: Network
    graph: Graph
    params: dict
    formats: dict[str, LayerFormat | FixedFormat]  # conv/fc formats; join output formats
    layers: dict[str, ModelLayer]
    joins: dict[str, tuple[str, ...]] = field(default_factory=dict)  # join -> flags
    unquantized: tuple[str, ...] = ()  # conv/fc layers the model leaves in float

    def with_accumulator(self, acc_bits: int, overflow: str = "wrap") -> dict:
        """The formats with every conv/fc layer on a BW(acc)-bit accumulator."""
        return {name: replace(f, acc_bits=acc_bits, overflow=overflow)
                if isinstance(f, LayerFormat) else f for name, f in self.formats.items()}


def signed_bits(lo: int, hi: int) -> int:
    """Narrowest two's-complement width holding every integer in [lo, hi]."""
    bits = 1
    while lo < -(1 << (bits - 1)) or hi > (1 << (bits - 1)) - 1:
        bits += 1
    return bits


def map_scale(q: Scale, what: str) -> Mapped:
    """A Scale as a format (module docstring); flags name what is not exact."""
    s = np.atleast_1d(q.scale).astype(np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise SpecError(f"{what}: scales must be positive and finite, got {s.tolist()[:4]}")
    f = np.round(-np.log2(s)).astype(np.int64)
    rel = 2.0 ** -f.astype(np.float64) / s - 1
    worst = int(np.argmax(np.abs(rel)))
    flags = []
    if rel[worst] != 0:
        flags.append(f"{what} scale {s[worst]:.6g} is not a power of two: nearest "
                     f"2^{-int(f[worst])} ({rel[worst]:+.2%})")
    lo, hi = CODE_RANGES[q.dtype]
    zp = np.atleast_1d(q.zero_point).astype(np.int64)
    bw = signed_bits(lo - int(zp.max()), hi - int(zp.min()))
    if q.dtype == "uint8" or np.any(zp != 0):
        flags.append(f"{what} is asymmetric ({q.dtype}, zero point {int(zp.max())}): codes "
                     f"q - zp in {bw} bits, the model clamps to [{lo - int(zp.max())}, "
                     f"{hi - int(zp.max())}]")
    spread = int(f.max() - f.min())
    if bw + spread > 62:
        raise SpecError(f"{what}: per-channel exponents 2^-{f.min()}..2^-{f.max()} need "
                        f"{bw + spread} bits")
    return Mapped(FixedFormat(bw + spread, int(f.max())), f, tuple(flags))


def _per_channel(values: np.ndarray, oc: int) -> np.ndarray:
    return np.broadcast_to(np.atleast_1d(values), (oc,))


def _weights(codes: np.ndarray, scale: Scale, mapped: Mapped) -> np.ndarray:
    """Real weights of the kept codes: (q − zp) · 2^−f_c per output channel (axis 0)."""
    oc = codes.shape[0]
    shape = (oc,) + (1,) * (codes.ndim - 1)
    zp = _per_channel(scale.zero_point, oc).reshape(shape)
    fl = _per_channel(mapped.fl, oc).reshape(shape).astype(np.float64)
    return (codes - zp) * 2.0 ** -fl


def _bias(reader: Reader, name: str | None, oc: int, in_fl: int, w_fl: np.ndarray,
          where: str, qlinear: bool) -> np.ndarray:
    """Real bias values; int32 codes are in the accumulator's scale 2^−(FL(in) + f_c)."""
    if not name:
        return np.zeros(oc)
    if qlinear:
        codes = reader.array(name, where)
        return codes * 2.0 ** -(in_fl + _per_channel(w_fl, oc).astype(np.float64))
    values, scale = reader.codes(name, where)
    if scale is None:
        return _per_channel(values.reshape(-1), oc).astype(np.float64)
    mapped = map_scale(scale, f"{where} bias")
    return (values - scale.zero_point) * 2.0 ** -_per_channel(mapped.fl, oc).astype(np.float64)


def _layer(node: Any, name: str, layer: Any, reader: Reader, acc_bits: int,
           overflow: str) -> tuple[ModelLayer | None, tuple[np.ndarray, np.ndarray]]:
    """Formats and weights of one conv/fc node; None when the model leaves it in float."""
    where = f"layer {name!r}"
    op, qlinear = node.op_type, node.op_type.startswith("QLinear")
    if qlinear:
        in_scale = reader.scale(node.input[1], node.input[2], 2, where)
        w_name = node.input[3]
        w_codes = reader.array(w_name, where)
        w_scale = reader.scale(node.input[4], node.input[5], reader.inits[w_name].data_type,
                               where)
        out_scale = reader.scale(node.input[6], node.input[7], 2, where)
        bias_name = node.input[8] if len(node.input) > 8 else None
    else:
        in_scale = reader.dq_scale(node.input[0], where)
        w_codes, w_scale = reader.codes(node.input[1], where)
        out_scale, bias_name = reader.output_scale(node.output[0], where)
        if op != "MatMul" and len(node.input) > 2 and node.input[2]:
            bias_name = node.input[2]
    attrs = {a.name: a for a in node.attribute}
    if op == "Gemm" and any(attrs[k].f != 1.0 for k in ("alpha", "beta") if k in attrs):
        raise SpecError(f"{where}: Gemm with alpha or beta other than 1 is not read")
    transposed = op in ("MatMul", "QLinearMatMul") or (op == "Gemm" and not (
        "transB" in attrs and attrs["transB"].i))
    if transposed:
        w_codes = w_codes.T
    if in_scale is None or w_scale is None:  # a float layer of the model
        weights = w_codes.astype(np.float64) if w_scale is None else real(w_codes, w_scale)
        return None, (weights, _bias(reader, bias_name, layer.Oc, 0, np.zeros(1), where, False))
    m_in, m_w = map_scale(in_scale, f"{where} input"), map_scale(w_scale, f"{where} weights")
    fl_acc = m_in.fmt.fl + m_w.fmt.fl
    out_fmt, out_flags = FixedFormat(acc_bits, fl_acc), ()
    if out_scale is not None:
        m_out = map_scale(out_scale, f"{where} output")
        out_fmt, out_flags = m_out.fmt, m_out.flags
    fmt = LayerFormat(m_in.fmt, m_w.fmt, out_fmt, acc_bits, overflow)
    weights = _weights(w_codes, w_scale, m_w)
    bias = _bias(reader, bias_name, layer.Oc, m_in.fmt.fl, m_w.fl, where, qlinear)
    model_layer = ModelLayer(name, op if qlinear else f"QDQ {op}", fmt,
                             m_in.flags + m_w.flags + out_flags)
    return model_layer, (weights.reshape((layer.Oc, *w_codes.shape[1:])), bias)


def read_layers(net: Network, model: Any, reader: Reader, acc_bits: int = 32,
                overflow: str = "wrap") -> QuantizedModel:
    """Formats, flags and weights of the network's layers, read from the quantized model."""
    nodes = {node_name(n, i): n for i, n in enumerate(model.graph.node)}
    nodes |= {short_name(k): n for k, n in nodes.items()}  # the importer's readable names
    params, formats, found, joins, floats = {}, {}, {}, {}, []
    for layer in net.layers:
        node = nodes.get(layer.name)
        if layer.tiled:
            if node is None:
                raise SpecError(f"layer {layer.name!r}: no node of that name in the model")
            info, params[layer.name] = _layer(node, layer.name, layer, reader, acc_bits,
                                              overflow)
            if info is None:
                floats.append(layer.name)
            else:
                found[layer.name], formats[layer.name] = info, info.fmt
        elif layer.kind == "activation" and layer.func == "prelu" and node is not None:
            values, scale = reader.codes(node.input[1], f"layer {layer.name!r} slope")
            params[layer.name] = (values if scale is None else real(values, scale)) \
                .astype(np.float32)  # real slopes in their ONNX shape: PReLU runs in float
        elif layer.kind in ("eltwise", "concat") and node is not None and node.op_type in JOINS:
            scale, _ = reader.output_scale(node.output[0], f"layer {layer.name!r}")
            if scale is not None:
                mapped = map_scale(scale, f"layer {layer.name!r} output")
                formats[layer.name], joins[layer.name] = mapped.fmt, mapped.flags
    return QuantizedModel(net, graph_of(net), params, formats, found, joins, tuple(floats))


def read_model(path: str | Path) -> Any:
    """The ONNX model of a quantized file (FileFormatError when unreadable; SpecError for a
    float model or dynamic quantization)."""
    path = Path(path)
    model = load_model(path)  # external data under the project's own guard
    dynamic = sorted({n.op_type for n in model.graph.node if n.op_type in DYNAMIC})
    if dynamic:
        raise SpecError(f"ONNX file {str(path)!r}: {', '.join(dynamic)} (dynamic "
                        "quantization) states no activation scale; --from-model reads QDQ "
                        "and QLinear models")
    if not any(n.op_type in QUANTIZED_OPS for n in model.graph.node):
        raise SpecError(f"ONNX file {str(path)!r}: a float model (no QuantizeLinear, "
                        "DequantizeLinear or QLinear node); --from-model reads quantized "
                        "models: give the float model as the network to quantize it")
    return model


def load_quantized(path: str | Path, acc_bits: int = 32, overflow: str = "wrap"
                   ) -> QuantizedModel:
    """Read a QDQ or QLinear ONNX model: network, weights, per-layer formats and flags, with
    every conv/fc layer on a BW(acc)-bit accumulator."""
    import onnx

    path = Path(path)
    model = read_model(path)
    reader = Reader(model)
    with tempfile.TemporaryDirectory() as tmp:
        twin = Path(tmp) / path.name
        onnx.save(float_twin(model, reader), str(twin))
        net = load_network(str(twin))
    net = replace(net, name=path.stem, source=f"ONNX {path.name} (quantized)")
    found = read_layers(net, model, reader, acc_bits, overflow)
    if not any(isinstance(f, LayerFormat) for f in found.formats.values()):
        raise SpecError(f"ONNX file {str(path)!r}: no conv/fc layer has quantized input and "
                        "weights (all run in float); --from-model reads quantized models")
    return found
