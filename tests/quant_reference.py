"""A numpy reference of bit-true integer inference, written for the tests from the stated rules
(seed 000 §4, DESIGN.md, workbench.quant.graph), not from the code under test: int64 codes,
explicit shifts, one product at a time into the register."""

from __future__ import annotations

import itertools

import numpy as np


def round_half_away(v: np.ndarray) -> np.ndarray:
    """Nearest integer, ties away from zero (floats)."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def codes(x: np.ndarray, fl: int, bw: int) -> np.ndarray:
    """Quantize reals: round(x · 2^fl), clipped to bw-bit two's complement."""
    q = round_half_away(np.asarray(x, np.float64) * 2.0 ** fl).astype(np.int64)
    return np.clip(q, -(1 << (bw - 1)), (1 << (bw - 1)) - 1)


def shift(q: np.ndarray, by: int, bw: int) -> np.ndarray:
    """q · 2^−by (by > 0: divide, rounding half away from zero; by < 0: multiply), clipped."""
    q = np.asarray(q, np.int64)
    if by > 0:
        mag = (np.abs(q) + (1 << (by - 1))) // (1 << by)
        q = np.where(q < 0, -mag, mag)
    elif by < 0:
        q = q * (1 << -by)
    return np.clip(q, -(1 << (bw - 1)), (1 << (bw - 1)) - 1)


def register(acc: np.ndarray, bits: int, mode: str) -> np.ndarray:
    """What a bits-wide register holds: modulo 2^bits (wrap) or clipped (saturate)."""
    half = 1 << (bits - 1)
    if mode == "wrap":
        return (acc + half) % (1 << bits) - half
    return np.clip(acc, -half, half - 1)


def conv(q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray, pad: int, bits: int,
         mode: str) -> np.ndarray:
    """NCHW int64 convolution, stride 1: the register starts at the bias (quantized into the
    register's range: clipped, as every quantization saturates) and takes one product after
    another in (input map, kernel row, kernel column) order, wrapped or clipped after each.
    bits=None: exact (and reals work too)."""
    n, c, h, w = q_in.shape
    oc, _, k, _ = q_w.shape
    x = np.pad(q_in, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    kind = np.result_type(q_in, q_w, q_b, np.int64)  # int64 codes (float64 for reals)
    acc = np.broadcast_to(q_b.reshape(1, oc, 1, 1), (n, oc, oh, ow)).astype(kind)
    if bits:
        acc = register(acc, bits, "saturate")
    for ci, ky, kx in itertools.product(range(c), range(k), range(k)):
        window = x[:, ci, ky:ky + oh, kx:kx + ow]  # n, oh, ow
        acc = acc + q_w[None, :, ci, ky, kx, None, None] * window[:, None]
        if bits:
            acc = register(acc, bits, mode)
    return acc


def fc(q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray, bits: int, mode: str) -> np.ndarray:
    """N × F int64 fully connected layer, products in feature order (like `conv`)."""
    acc = np.broadcast_to(q_b, (q_in.shape[0], q_w.shape[0])).astype(np.int64)
    if bits:
        acc = register(acc, bits, "saturate")  # the bias, quantized into the register
    for f in range(q_in.shape[1]):
        acc = acc + q_in[:, f, None] * q_w[None, :, f]
        if bits:
            acc = register(acc, bits, mode)
    return acc
