"""Bit-exact vector execution of one tile: lanes hold outputs (or input maps, for the kc
reduction), and every vector MAC updates all lanes at once.

Order of additions (what saturating registers see):
- vectorized over an output dimension (ox, oy, oc, on): each lane is set to its bias (wrapped
  or saturated into the register) and adds
  its products in (input map, kernel row, kernel column) order, as `quant.infer` documents;
- vectorized over the kc reduction: lane l starts at 0 (lane 0 at the bias) and adds the
  products of input maps l, l + lanes, … in (kernel row, kernel column) order within each map
  block; the lanes are then summed by a halving tree (lane i += lane i + width/2).
The register wraps or saturates after every addition.
"""

from __future__ import annotations

import numpy as np

from workbench.layers.dims import SEED000_ORDER, SIMD_DIM, SIMD_LABEL, Dim
from workbench.layers.spec import ConvLayer
from workbench.quant.fixed import saturate, wrap

VECTOR_DIMS = tuple(SIMD_LABEL[d] for d in SEED000_ORDER)  # ox oy oc on kc, as a tile


def _update(acc: np.ndarray, add: np.ndarray, bits: int, overflow: str) -> np.ndarray:
    total = acc + add
    return wrap(total, bits) if overflow == "wrap" else saturate(total, bits)


def tile_inputs(layer: ConvLayer, q_in: np.ndarray, origin: tuple[int, int, int, int],
                tile: tuple[int, int, int, int, int], group: int = 0) -> np.ndarray:
    """Input codes a tile reads, zero padded: (TOn, TKc, (TOy−1)·Sy+Ky, (TOx−1)·Sx+Kx)."""
    ox, oy, on, kc = origin
    tox, toy, _, ton, tkc = tile
    height, width = (toy - 1) * layer.Sy + layer.Ky, (tox - 1) * layer.Sx + layer.Kx
    y0, x0 = oy * layer.Sy - layer.Py, ox * layer.Sx - layer.Px
    out = np.zeros((ton, tkc, height, width), dtype=np.int64)
    src = q_in[on:on + ton, group * layer.Kc + kc:group * layer.Kc + kc + tkc]
    ys, xs = slice(max(y0, 0), min(y0 + height, src.shape[2])), slice(max(x0, 0),
                                                                       min(x0 + width,
                                                                           src.shape[3]))
    out[:, :, ys.start - y0:ys.stop - y0, xs.start - x0:xs.stop - x0] = src[:, :, ys, xs]
    return out


def execute(layer: ConvLayer, window: np.ndarray, q_w: np.ndarray, q_b: np.ndarray,
            tile: tuple[int, int, int, int, int], vector_dim: str, lanes: int, bits: int,
            overflow: str) -> np.ndarray:
    """Accumulator codes of a tile, (TOn, TOc, TOy, TOx), executed lane-wise.

    window: `tile_inputs` of the tile; q_w: (TOc, TKc, Ky, Kx) weight codes; q_b: (TOc,)."""
    tox, toy, toc, ton, tkc = tile
    sy, sx = layer.Sy, layer.Sx
    if SIMD_DIM[vector_dim] != Dim.C:
        zero = np.zeros((ton, toc, toy, tox), dtype=np.int64)
        acc = _update(zero, q_b[None, :, None, None], bits, overflow)  # the register takes it
        for kc in range(tkc):
            for ky in range(layer.Ky):
                for kx in range(layer.Kx):
                    pixels = window[:, kc, ky:ky + (toy - 1) * sy + 1:sy,
                                    kx:kx + (tox - 1) * sx + 1:sx]            # (n, y, x)
                    acc = _update(acc, pixels[:, None] * q_w[None, :, kc, ky, kx, None, None],
                                  bits, overflow)
        return acc
    blocks = -(-tkc // lanes)
    lane_acc = np.zeros((ton, toc, toy, tox, lanes), dtype=np.int64)
    lane_acc[..., 0] = _update(lane_acc[..., 0], q_b[None, :, None, None], bits, overflow)
    padded_w = np.zeros((toc, blocks * lanes, layer.Ky, layer.Kx), dtype=np.int64)
    padded_w[:, :tkc] = q_w
    padded_in = np.zeros((ton, blocks * lanes) + window.shape[2:], dtype=np.int64)
    padded_in[:, :tkc] = window
    for block in range(blocks):
        chans = slice(block * lanes, (block + 1) * lanes)
        for ky in range(layer.Ky):
            for kx in range(layer.Kx):
                pixels = padded_in[:, chans, ky:ky + (toy - 1) * sy + 1:sy,
                                   kx:kx + (tox - 1) * sx + 1:sx]             # (n, l, y, x)
                product = (pixels.transpose(0, 2, 3, 1)[:, None]
                           * padded_w[:, chans, ky, kx][None, :, None, None, :])
                lane_acc = _update(lane_acc, product, bits, overflow)
    width = lanes
    while width > 1:  # halving tree over the lanes
        half = width // 2
        lane_acc[..., :half] = _update(lane_acc[..., :half], lane_acc[..., half:2 * half],
                                       bits, overflow)
        if width % 2:
            lane_acc[..., 0] = _update(lane_acc[..., 0], lane_acc[..., width - 1], bits,
                                       overflow)
        width = half
    return lane_acc[..., 0]
