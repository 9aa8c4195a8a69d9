"""Pooling, LRN and activations in quantized inference, on integer codes or floats.

Max pooling and ReLU/ReLU6/clip work on codes and keep the format; average pooling rounds the
window mean to the nearest code; LRN runs on the dequantized values and is kept in 32-bit fixed
point; the other activations (sigmoid, tanh, hardsigmoid, hardswish, silu, leaky_relu, elu,
selu, gelu, gelu_tanh, softplus, mish) run in float on the dequantized values, with ONNX's
definitions and the layer's parameters (`ActivationLayer.parameters`); PReLU in float with
its slopes from the weights.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.errors import SpecError
from workbench.quant.act import Act
from workbench.quant.fixed import FixedFormat, to_fixed


def pool(layer, act: Act) -> Act:
    """Max or average pooling: the window maximum, or the window mean (integer codes: rounded
    to nearest). Windows reaching into padding see −∞ (max) or 0 (average, divided by the full
    window as Caffe does)."""
    x = act.values
    fill = (np.iinfo(x.dtype).min if act.fmt is not None else -np.inf) \
        if layer.mode == "max" else 0
    # pad only what the windows reach: the padding, and beyond it for round-up (ceil) pools
    extra_y = max(0, (layer.Oy - 1) * layer.Sy + layer.Ky - x.shape[2] - 2 * layer.Py)
    extra_x = max(0, (layer.Ox - 1) * layer.Sx + layer.Kx - x.shape[3] - 2 * layer.Px)
    pads = ((0, 0), (0, 0), (layer.Py, layer.Py + extra_y), (layer.Px, layer.Px + extra_x))
    if any(p for pair in pads for p in pair):
        x = np.pad(x, pads, constant_values=fill)
    out = None
    for ky in range(layer.Ky):
        for kx in range(layer.Kx):
            part = x[:, :, ky:ky + (layer.Oy - 1) * layer.Sy + 1:layer.Sy,
                     kx:kx + (layer.Ox - 1) * layer.Sx + 1:layer.Sx]
            if out is None:
                out = part.astype(np.float64 if act.fmt is not None and layer.mode == "avg"
                                  else part.dtype, copy=True)
            elif layer.mode == "max":
                np.maximum(out, part, out=out)
            else:
                out += part
    if layer.mode == "max":
        return Act(out, act.fmt)
    mean = out / (layer.Kx * layer.Ky)
    if act.fmt is None:
        return Act(mean.astype(act.values.dtype), None)
    return Act(to_fixed(mean, FixedFormat(act.fmt.bw, 0)), act.fmt)


def lrn(layer, act: Act) -> Act:
    x = act.as_float(np.float64)
    sq = np.pad(x * x, ((layer.size // 2, layer.size // 2), (0, 0), (0, 0), (0, 0)))
    window = sum(sq[i:i + x.shape[0]] for i in range(layer.size))
    y = x / (layer.k + layer.alpha / layer.size * window) ** layer.beta
    if act.fmt is None:
        return Act(y.astype(act.values.dtype), None)
    wide = FixedFormat(32, act.fmt.fl + 32 - act.fmt.bw)  # |y| <= |x| when k >= 1
    return Act(to_fixed(y, wide), wide)


_ERF = np.vectorize(math.erf, otypes=[float])


def float_activation(func: str, alpha: float | None, beta: float | None,
                     x: np.ndarray) -> np.ndarray:
    """An activation on real values, as ONNX defines it (alpha, beta: its parameters)."""
    with np.errstate(over="ignore", under="ignore"):
        if func == "sigmoid":
            return 1 / (1 + np.exp(-x))
        if func == "tanh":
            return np.tanh(x)
        if func == "silu":
            return x / (1 + np.exp(-x))
        if func in ("hardsigmoid", "hardswish"):
            gate = np.clip(alpha * x + beta, 0, 1)
            return gate if func == "hardsigmoid" else x * gate
        if func == "leaky_relu":
            return np.where(x >= 0, x, alpha * x)
        if func in ("elu", "selu"):
            y = np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))
            return y if func == "elu" else beta * y
        if func == "gelu":
            return 0.5 * x * (1 + _ERF(x / math.sqrt(2)))
        if func == "gelu_tanh":  # ONNX Gelu, approximate="tanh"
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        if func == "softplus":
            return np.logaddexp(0, x)
        if func == "mish":
            return x * np.tanh(np.logaddexp(0, x))
    raise SpecError(f"activation {func!r} does not run in float")


def prelu_slopes(layer, slopes: np.ndarray, flat: bool) -> np.ndarray:
    """PReLU's slopes broadcast as ONNX broadcasts them against its input: N × C × H × W (the
    last axes aligned: (C, 1, 1) is per channel, (W,) per column), or N × F when `flat`;
    returned as C × H × W (or F). One-line SpecError when they do not broadcast."""
    slopes = np.asarray(slopes)
    target = (1, layer.C * layer.H * layer.W) if flat else (1, layer.C, layer.H, layer.W)
    try:
        return np.broadcast_to(slopes, target)[0]
    except ValueError:
        raise SpecError(f"layer {layer.name!r}: {layer.name}.slope of shape "
                        f"{tuple(slopes.shape)} does not broadcast against its input "
                        f"{'N×' + str(target[1]) if flat else 'N×{}×{}×{}'.format(*target[1:])}"
                        f", as ONNX's PRelu requires (per channel: ({layer.C}, 1, 1))") from None


def activation(layer, act: Act, owned: bool, slopes: np.ndarray | None = None) -> Act:
    """ReLU, ReLU6 and clip on codes (bounds as the nearest codes of the format), the others
    in float (`float_activation`); PReLU in float with its `slopes` (one, or one per
    channel)."""
    alpha, beta = layer.parameters
    if layer.func == "prelu":
        if slopes is None:
            raise SpecError(f"layer {layer.name!r}: prelu needs its slopes (the PRelu node's "
                            f"slope constant, or {layer.name}.slope in a weights .npz)")
        x = act.as_float()
        slope = prelu_slopes(layer, slopes, x.ndim == 2).astype(x.dtype)
        # channel-major: (C, N, H, W) or (F, N)
        slope = slope.reshape(len(slope), 1) if x.ndim == 2 else slope[:, None]
        return Act(np.where(x >= 0, x, slope * x))
    if layer.func not in ("relu", "relu6", "clip"):
        x = act.as_float()
        return Act(float_activation(layer.func, alpha, beta, x).astype(x.dtype, copy=False))
    low, high = {"relu": (0.0, None), "relu6": (0.0, 6.0)}.get(layer.func, (alpha, beta))
    out = act.values if owned else act.values.copy()

    def bound(v: float):
        return v if act.fmt is None else to_fixed(v, act.fmt).astype(out.dtype)
    if low is not None:
        np.maximum(out, bound(low), out=out)
    if high is not None:
        np.minimum(out, bound(high), out=out)
    return Act(out, act.fmt)
