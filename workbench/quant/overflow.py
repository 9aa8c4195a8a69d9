"""Where a narrow accumulator overflows, per conv/fc layer: the seed 000 §4.4 bounds asked of
formats a model already has.

For a layer with input format (BW(in), FL(in)) and weight format (BW(w), FL(w)), each bound
requires BW(in) + BW(w) − 1 + Δ accumulator bits, with the formats' integer lengths
IL = BW − 1 − FL (`bounds.format_delta`):
- worst:   Δ = ⌈log2 K⌉                          (every product at its extreme, K products)
- weights: Δ = IL(max over outputs of Σ|w|) − IL(w)   (known weights, inputs at their extreme:
           the largest |sum| is Σ|w| · max|x| with max|x| = 2^IL(in))
- data:    Δ = max(0, IL(max|acc|) − IL(in) − IL(w)), max|acc| the largest final sum (real
           units) measured bit-true on calibration images with exact (62-bit) registers
           upstream, so each layer is judged on the inputs the model means it to see.
The bias is not counted in the bounds (as in seed 000); the observed sums include it.
Overflowing outputs: final sums on the calibration images that leave the BW(acc)-bit range; a
narrow accumulator gets them wrong whether it wraps or saturates.
Risk: `none` when the worst-case or the weights bound fits; `wrap` when only the data bound
fits (intermediate sums may leave the range, the final ones did not: the register must wrap);
`overflows` when final sums left it; `possible` when no calibration data was given.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from workbench.layers.network import Network
from workbench.quant.act import Act
from workbench.quant.bounds import format_delta
from workbench.quant.fixed import requantize
from workbench.quant.graph import INPUT, Graph, graph_of
from workbench.quant.infer import (
    Formats,
    LayerFormat,
    accumulators,
    quantized_params,
    step,
    to_channel_major,
)

EXACT_BITS = 62  # registers of the exact run (int64 arithmetic)


def exact_sums(net: Network, params: dict, formats: Formats, x: np.ndarray,
               graph: Graph | None = None) -> dict[str, np.ndarray]:
    """Final accumulator codes of every quantized conv/fc layer (format FL(in) + FL(w)) on
    NCHW images, every layer running bit-true with exact registers."""
    graph = graph_of(net, graph)
    state = {INPUT: Act(to_channel_major(np.asarray(x, dtype=np.float32)))}
    sums = {}
    for layer in net.layers:
        acts = [state[s] for s in graph.inputs[layer.name]]
        fmt = formats.get(layer.name)
        if layer.tiled and isinstance(fmt, LayerFormat):
            fmt = replace(fmt, acc_bits=EXACT_BITS, overflow="wrap")
            sums[layer.name] = acc = accumulators(layer, acts[0], params, fmt)
            out = requantize(acc, fmt.acc_fmt, fmt.out_fmt)
            state[layer.name] = Act(out.astype(np.int32) if fmt.out_fmt.bw <= 32 else out,
                                    fmt.out_fmt)
        else:
            state[layer.name] = step(layer, acts, params, fmt)
    return sums


def _risk(acc_bits: int, worst: int, weights: int, data: int | None, over: int | None) -> str:
    if worst <= acc_bits or weights <= acc_bits:
        return "none"
    if data is None:
        return "possible"
    return "wrap" if not over else "overflows"


def overflow_table(net: Network, params: dict, formats: Formats, acc_bits: int = 16,
                   x: np.ndarray | None = None, graph: Graph | None = None) -> pd.DataFrame:
    """One row per quantized conv/fc layer: formats, the accumulator bits each bound needs,
    observed maxima and overflowing outputs on the images x (if given), and the risk."""
    sums = exact_sums(net, params, formats, x, graph) if x is not None and len(x) else {}
    rows = []
    for layer in net.tiled_layers():
        fmt = formats.get(layer.name)
        if not isinstance(fmt, LayerFormat):
            continue
        q_w, _ = quantized_params(*params[layer.name], fmt)
        w_abs_sum = float(np.abs(q_w.reshape(q_w.shape[0], -1)).sum(axis=1).max()) \
            * 2.0 ** -fmt.w_fmt.fl
        product = fmt.in_fmt.bw + fmt.w_fmt.bw - 1
        K = layer.Kx * layer.Ky * layer.Kc
        ils = (fmt.in_fmt.il, fmt.w_fmt.il)
        row = {"layer": layer.name, "K": K, "input": str(fmt.in_fmt), "weights": str(fmt.w_fmt),
               "output": str(fmt.out_fmt),
               "worst_bits": product + format_delta("worst", ils, K=K),
               "weights_bits": product + format_delta("weights", ils, w_abs_sum=w_abs_sum),
               "data_bits": None, "max_abs_acc": None, "overflowing": None, "outputs": None}
        acc = sums.get(layer.name)
        if acc is not None:
            peak = int(np.abs(acc).max()) if acc.size else 0
            half = 1 << (acc_bits - 1)
            row.update(data_bits=product + format_delta(
                "data", ils, acc_abs_max=peak * 2.0 ** -fmt.acc_fmt.fl),
                max_abs_acc=peak, overflowing=int(((acc < -half) | (acc >= half)).sum()),
                outputs=int(acc.size))
        row["acc_bits"] = acc_bits
        row["risk"] = _risk(acc_bits, row["worst_bits"], row["weights_bits"], row["data_bits"],
                            row["overflowing"])
        rows.append(row)
    return pd.DataFrame(rows)
