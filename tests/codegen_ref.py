"""Scalar reference for the code generator's tests: every output of a (sparse) convolution
added up one product at a time in plain Python integers, wrapped to the accumulator width
once at the end (wrap-around accumulation does not depend on the order of additions), or
saturated after the bias and after every product, in (input map, kernel row, kernel column)
order."""

from __future__ import annotations

import numpy as np


def _clip(value: int, bits: int) -> int:
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, value))


def scalar_conv(layer, operands: dict, bits: int = 32, overflow: str = "wrap") -> np.ndarray:
    """(On, Oc, Oy, Ox) accumulator codes of layer for q_in, q_w, q_b."""
    q_in, q_w, q_b = (np.asarray(operands[k]).tolist() for k in ("q_in", "q_w", "q_b"))
    per_group = layer.Oc // layer.groups
    out = np.zeros((layer.On, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    for n in range(layer.On):
        for m in range(layer.Oc):
            if layer.connections is not None:
                maps = [(c, c) for c in layer.connections[m]]
            else:
                g = m // per_group
                maps = [(g * layer.Kc + c, c) for c in range(layer.Kc)]
            for y in range(layer.Oy):
                for x in range(layer.Ox):
                    acc = q_b[m] if overflow == "wrap" else _clip(q_b[m], bits)
                    for src, wi in maps:
                        for ky in range(layer.Ky):
                            for kx in range(layer.Kx):
                                iy = y * layer.Sy + ky - layer.Py
                                ix = x * layer.Sx + kx - layer.Px
                                if 0 <= iy < layer.Iy and 0 <= ix < layer.Ix:
                                    acc += q_in[n][src][iy][ix] * q_w[m][wi][ky][kx]
                                if overflow == "saturate":
                                    acc = _clip(acc, bits)
                    if overflow == "wrap":
                        acc = (acc + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
                    out[n, m, y, x] = acc
    return out
