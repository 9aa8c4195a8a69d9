"""The operators of `int_run`: product layers on integer codes, quantized operators through
float, and the float operators (ONNX semantics, float64)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.errors import SpecError

FLOAT_OPS = ("Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Add",
             "Sub", "Mul", "Div", "GlobalAveragePool", "GlobalMaxPool", "MaxPool",
             "AveragePool", "Flatten", "Reshape", "Transpose", "Concat", "Softmax", "Identity",
             "Squeeze", "Unsqueeze", "ReduceMean", "Dropout", "Constant", "Conv", "Gemm",
             "MatMul", "LayerNormalization", "Erf", "Gather", "Sqrt")
LAYOUT_OPS = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Gather")
QLINEAR_FLOAT = {"QLinearAdd": "Add", "QLinearMul": "Mul", "QLinearSigmoid": "Sigmoid",
                 "QLinearLeakyRelu": "LeakyRelu", "QLinearGlobalAveragePool":
                 "GlobalAveragePool", "QLinearAveragePool": "AveragePool",
                 "QLinearConcat": "Concat", "QLinearSoftmax": "Softmax"}


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


# --- windows --------------------------------------------------------------------------------

def _windows(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int],
             dilations: list[int], fill: float = 0) -> np.ndarray:
    """N × C × OH × OW × KH × KW views of the padded input."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
               constant_values=fill)
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    view = np.lib.stride_tricks.sliding_window_view(x, (span_h, span_w), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def conv(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """ONNX Conv (2-D) without bias, exact for int64 inputs."""
    if x.ndim != 4:
        raise SpecError(f"only 2-D convolutions run here, got an input of rank {x.ndim}")
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise SpecError("auto_pad SAME is not run here; export with explicit pads")
    win = _windows(x, kernel, list(attrs.get("strides", [1, 1])), pads,
                   list(attrs.get("dilations", [1, 1])))
    groups = attrs.get("group", 1)
    ci, co = x.shape[1] // groups, w.shape[0] // groups
    parts = [np.einsum("ncyxij,ocij->noyx", win[:, g * ci:(g + 1) * ci],
                       w[g * co:(g + 1) * co], optimize=True) for g in range(groups)]
    return np.concatenate(parts, axis=1)


def _pool(x: np.ndarray, attrs: dict[str, Any], mode: str) -> np.ndarray:
    kernel, pads = list(attrs["kernel_shape"]), list(attrs.get("pads", [0, 0, 0, 0]))
    if attrs.get("ceil_mode", 0):
        raise SpecError("ceil_mode pools are not run here")
    strides = list(attrs.get("strides", [1, 1]))
    if mode == "max":
        return _windows(x, kernel, strides, pads, [1, 1], -np.inf).max(axis=(4, 5))
    total = _windows(x, kernel, strides, pads, [1, 1]).sum(axis=(4, 5))
    if attrs.get("count_include_pad", 0) or not any(pads):
        return total / math.prod(kernel)
    ones = _windows(np.ones_like(x[:1, :1]), kernel, strides, pads, [1, 1]).sum(axis=(4, 5))
    return total / ones


# --- product layers -------------------------------------------------------------------------

def _matrix(run, node: Any, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """(A·B, K, whether B was read transposed) for Gemm/QGemm (trans attributes) or MatMul."""
    attrs = _attrs(node)
    if node.op_type in ("Gemm", "QGemm"):
        a = a.T if attrs.get("transA", 0) else a
        trans = bool(attrs.get("transB", 0))
        b = b.T if trans else b
        return a @ b, a.shape[-1], trans
    return np.matmul(a, b), a.shape[-1], False


def _product(run, node: Any, name: str, x, w, bias, out_scale) -> None:
    """Integer accumulators of one product layer, held in the register, requantized."""
    from workbench.quant.int_run import _Q, _along

    op = node.op_type
    xc, wc = x.centered(), w.centered()
    if op in ("Conv", "QLinearConv"):
        acc, k, rows = conv(xc, wc, _attrs(node)), math.prod(wc.shape[1:]), wc
        ch_axis = 1
    else:
        acc, k, trans = _matrix(run, node, xc, wc)
        rows = wc if trans else wc.T  # one row per output channel, for the bounds
        ch_axis = acc.ndim - 1
    if bias is not None:
        acc = acc + _along(bias, acc.ndim, ch_axis)
    w_rows = _Q(rows, w.scale, w.zero, 0, w.dtype)
    acc = run.register(name, op, acc, x, w_rows, bias, k)
    alpha = float(_attrs(node).get("alpha", 1.0)) if op == "QGemm" else 1.0
    if out_scale is None:
        w_scale = _along(w.scale.astype(np.float64), acc.ndim, ch_axis)
        run.values[node.output[0]] = acc * (x.scale.astype(np.float64) * alpha) * w_scale
        return
    scale, zero, dtype = out_scale
    f32 = np.float32  # the multiplier sx·sw·α/sy and the product in float32, as runtimes do
    ratio = (f32(np.ravel(x.scale)[0]) * w.scale.astype(f32) * f32(alpha)) / f32(
        np.ravel(scale)[0])
    run.values[node.output[0]] = requantize(acc, _along(ratio, acc.ndim, ch_axis), scale,
                                            zero, dtype)


def requantize(acc: np.ndarray, ratio: Any, scale: np.ndarray, zero: np.ndarray,
               dtype: int, offset: Any = 0) -> Any:
    """Codes clip(round_half_even(float32(acc) · ratio + offset) + zero), all in float32
    (ratio, offset float32), with the output's scale."""
    from workbench.quant.int_run import _Q, CODES

    lo, hi = CODES[dtype]
    f32 = np.float32
    y = np.rint(acc.astype(f32) * f32(ratio) + f32(offset) if np.ndim(ratio) == 0 else
                acc.astype(f32) * ratio.astype(f32) + f32(offset)).astype(np.int64)
    return _Q(np.clip(y + int(np.ravel(zero)[0]), lo, hi), np.asarray(scale),
              np.asarray(zero), 0, dtype)


def _qdq_product(run, node: Any, name: str) -> bool:
    """A float Conv/Gemm/MatMul whose data and weight are DequantizeLinear outputs; True if
    run on codes."""
    from workbench.quant.int_run import _Q, _along

    x, w = run.get(node.input[0]), run.get(node.input[1])
    if not (isinstance(x, _Q) and isinstance(w, _Q)):
        return False
    bias, after = None, None
    if node.op_type != "MatMul" and len(node.input) > 2 and node.input[2]:
        b = run.get(node.input[2])
        expect = x.scale.astype(np.float64) * np.ravel(w.scale).astype(np.float64)
        if isinstance(b, _Q) and b.dtype == 6 and np.allclose(
                np.ravel(b.scale), expect, rtol=1e-6):
            bias = b.centered().reshape(-1)
        else:
            after = run.real(node.input[2])
    _product(run, node, name, x, w, bias, None)
    if after is not None:  # a float bias (or one at another scale): added in float
        y = run.values[node.output[0]]
        axis = 1 if node.op_type == "Conv" else y.ndim - 1
        run.values[node.output[0]] = y + _along(after.reshape(-1), y.ndim, axis)
    return True


def _qoperator(run, node: Any, name: str) -> None:
    op = node.op_type
    if op == "QLinearConv":
        x, w = run.coded(node, 0, 1, 2), run.coded(node, 3, 4, 5)
        out, b_slot = run.qparams(node, 6, 7), 8
    elif op == "QLinearMatMul":
        x, w = run.coded(node, 0, 1, 2), run.coded(node, 3, 4, 5)
        out, b_slot = run.qparams(node, 6, 7), None
    else:  # QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp
        x, w = run.coded(node, 0, 1, 2), run.coded(node, 3, 4, 5)
        quantized_out = len(node.input) > 7 and node.input[7]
        out = run.qparams(node, 7, 8) if quantized_out else None
        b_slot = 6
    if op != "QLinearConv" and w.scale.size > 1:  # per output column of B
        w.axis = 0 if _attrs(node).get("transB", 0) else 1
    bias = None
    if b_slot is not None and len(node.input) > b_slot and node.input[b_slot]:
        bias = np.asarray(run.get(node.input[b_slot])).astype(np.int64).reshape(-1)
    _product(run, node, name, x, w, bias, out)


# --- everything else ------------------------------------------------------------------------

def _float(run, node: Any, ins: list) -> np.ndarray:
    op, a = node.op_type, _attrs(node)
    x = ins[0] if ins else None
    unary = {"Relu": lambda v: np.maximum(v, 0), "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
             "Tanh": np.tanh, "Identity": lambda v: v, "Dropout": lambda v: v,
             "Sqrt": np.sqrt, "Erf": np.vectorize(math.erf, otypes=[np.float64]),
             "HardSigmoid": lambda v: np.clip(a.get("alpha", 0.2) * v + a.get("beta", 0.5),
                                              0, 1),
             "HardSwish": lambda v: v * np.clip(v / 6 + 0.5, 0, 1),
             "LeakyRelu": lambda v: np.where(v >= 0, v, a.get("alpha", 0.01) * v)}
    if op in unary:
        return unary[op](x)
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}
    if op in binary:
        return binary[op](ins[0], ins[1])
    if op == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min", -np.inf)
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max", np.inf)
        return np.clip(x, lo, hi)
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        f = np.mean if op == "GlobalAveragePool" else np.max
        return f(x, axis=tuple(range(2, x.ndim)), keepdims=True)
    if op in ("MaxPool", "AveragePool"):
        return _pool(x, a, "max" if op == "MaxPool" else "avg")
    if op == "Flatten":
        axis = a.get("axis", 1)
        return x.reshape(math.prod(x.shape[:axis]), -1)
    if op == "Reshape":
        shape = [int(s) if s != 0 else x.shape[i] for i, s in enumerate(ins[1])]
        return x.reshape(shape)
    if op == "Transpose":
        return np.transpose(x, a.get("perm"))
    if op == "Gather":
        return np.take(x, np.asarray(ins[1]).astype(np.int64), axis=a.get("axis", 0))
    if op == "LayerNormalization":  # over the axes from `axis` on; scale, then bias
        axes = tuple(range(a.get("axis", -1) % x.ndim, x.ndim))
        mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
        return y + ins[2] if len(ins) > 2 and ins[2] is not None else y
    if op == "Concat":
        return np.concatenate(ins, axis=a["axis"])
    if op == "Softmax":
        e = np.exp(x - x.max(axis=a.get("axis", -1), keepdims=True))
        return e / e.sum(axis=a.get("axis", -1), keepdims=True)
    if op in ("Squeeze", "Unsqueeze", "ReduceMean"):
        axes = [int(v) for v in ins[1]] if len(ins) > 1 else list(a.get("axes", []))
        if op == "Squeeze":
            return np.squeeze(x, tuple(axes)) if axes else np.squeeze(x)
        if op == "Unsqueeze":
            return np.expand_dims(x, tuple(axes))
        return np.mean(x, axis=tuple(axes) if axes else None, keepdims=bool(a.get("keepdims",
                                                                                   1)))
    if op == "Conv":
        y = conv(x, ins[1], a)
        return y + ins[2].reshape(1, -1, 1, 1) if len(ins) > 2 else y
    product = _matrix(None, node, x, ins[1])[0]  # Gemm, MatMul in float
    return product + ins[2] if len(ins) > 2 else product


def run_node(run, node: Any, name: str) -> None:
    """Run one node on `run`'s tensors (see `int_run`)."""
    from onnx import numpy_helper

    from workbench.quant.int_run import _Q, quantize

    op = node.op_type
    if op == "Constant":
        run.values[node.output[0]] = numpy_helper.to_array(_attrs(node)["value"])
    elif op == "QuantizeLinear":
        scale, zero, dtype = run.qparams(node, 1, 2)
        run.values[node.output[0]] = quantize(run.real(node.input[0]), scale, zero,
                                              _attrs(node).get("axis", 1), dtype)
    elif op == "DequantizeLinear":
        value = run.get(node.input[0])
        codes = value.codes if isinstance(value, _Q) else np.asarray(value).astype(np.int64)
        scale, zero, dtype = run.qparams(node, 1, 2)
        dtype = value.dtype if isinstance(value, _Q) else _code_type(np.asarray(value))
        run.values[node.output[0]] = _Q(codes, scale, zero, _attrs(node).get("axis", 1), dtype)
    elif op in ("Conv", "Gemm", "MatMul") and _qdq_product(run, node, name):
        pass
    elif op in ("QLinearConv", "QLinearMatMul", "QGemm"):
        _qoperator(run, node, name)
    elif op in QLINEAR_FLOAT:
        _qlinear_float(run, node)
    elif op in LAYOUT_OPS and isinstance(run.get(node.input[0]), _Q):  # codes move as they are
        q = run.get(node.input[0])
        ins = [q.codes.astype(np.float64)] + [run.real(i) if i else None for i in node.input[1:]]
        codes = _float(run, node, ins).astype(np.int64)
        run.values[node.output[0]] = _Q(codes, q.scale, q.zero, q.axis, q.dtype)
    elif op in FLOAT_OPS:
        ins = [run.real(i) if i else None for i in node.input]
        run.values[node.output[0]] = _float(run, node, ins)
    else:
        raise SpecError(f"node {name!r}: operator {op!r} is not run by the integer inference "
                        f"(it runs {', '.join(FLOAT_OPS[:8])}, …, the QDQ and QLinear forms)")


def _code_type(value: np.ndarray) -> int:
    return {np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 6}.get(
        value.dtype, 3)


def _qlinear_float(run, node: Any) -> None:
    """A com.microsoft QLinear op in float32 as onnxruntime computes it: Add as
    ra·(a − za) + rb·(b − zb), Mul as (a − za)(b − zb)·ra·rb, the global average pool as
    Σ(x − zx) · sx/(sy·pixels) (r: input scale / output scale); the others dequantize, run the
    float op and quantize, in float32."""
    from workbench.quant.int_run import quantize

    op, ins, f32 = node.op_type, list(node.input), np.float32
    if op in ("QLinearAdd", "QLinearMul"):  # A, As, Az, B, Bs, Bz, Cs, Cz
        a, b = run.coded(node, 0, 1, 2), run.coded(node, 3, 4, 5)
        scale, zero, dtype = run.qparams(node, 6, 7)
        sa, sb, sc = (f32(np.ravel(v.scale if hasattr(v, "scale") else v)[0])
                      for v in (a, b, scale))
        if op == "QLinearAdd":
            value = (sa / sc) * a.centered().astype(f32) + (sb / sc) * b.centered().astype(f32)
        else:
            value = (a.centered() * b.centered()).astype(f32) * (sa * sb / sc)
        run.values[node.output[0]] = requantize(value, f32(1), scale, zero, dtype)
        return
    if op == "QLinearGlobalAveragePool":  # X, X_scale, X_zp, Y_scale, Y_zp
        if _attrs(node).get("channels_last", 0):
            raise SpecError("channels_last quantized pools are not run here")
        x = run.coded(node, 0, 1, 2)
        scale, zero, dtype = run.qparams(node, 3, 4)
        pixels = math.prod(x.codes.shape[2:])
        acc = x.centered().sum(axis=tuple(range(2, x.codes.ndim)), keepdims=True)
        ratio = f32(np.ravel(x.scale)[0]) / (f32(np.ravel(scale)[0]) * f32(pixels))
        run.values[node.output[0]] = requantize(acc, ratio, scale, zero, dtype)
        return
    if op == "QLinearConcat":  # Y_scale, Y_zp, then (X, X_scale, X_zp) per input
        out = run.qparams(node, 0, 1)
        xs = [run.coded(node, i, i + 1, i + 2) for i in range(2, len(ins), 3)]
    else:  # X, X_scale, X_zp, Y_scale, Y_zp
        out = run.qparams(node, 3, 4)
        xs = [run.coded(node, 0, 1, 2)]
    reals = [x.centered().astype(f32) * f32(np.ravel(x.scale)[0]) for x in xs]
    proxy = type("Node", (), {"op_type": QLINEAR_FLOAT[op], "attribute": node.attribute})
    scale, zero, dtype = out
    value = _float(run, proxy, reals).astype(f32)
    run.values[node.output[0]] = quantize(value, scale.astype(f32), zero, 0, dtype)
