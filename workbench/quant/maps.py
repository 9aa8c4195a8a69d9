"""Pooling, LRN and activations in quantized inference, on integer codes or floats.

Max pooling and ReLU/ReLU6 work on codes and keep the format; average pooling rounds the window
mean to the nearest code; LRN runs on the dequantized values and is kept in 32-bit fixed point;
sigmoid and tanh run in float.
"""

from __future__ import annotations

import numpy as np

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


def activation(layer, act: Act, owned: bool) -> Act:
    """ReLU and ReLU6 on codes (6 as the nearest code of the format), the others in float."""
    if layer.func in ("sigmoid", "tanh"):
        x = act.as_float()
        return Act(np.tanh(x) if layer.func == "tanh" else 1 / (1 + np.exp(-x)))
    out = np.maximum(act.values, 0, out=act.values if owned else None)
    if layer.func == "relu6":
        six = 6.0 if act.fmt is None else to_fixed(6.0, act.fmt).astype(out.dtype)
        np.minimum(out, six, out=out)
    return Act(out, act.fmt)
