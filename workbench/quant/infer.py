"""Float and bit-true integer inference of a network (conv, fc, pooling, ReLU, LRN, and the
element-wise and concat joins of branching networks, which follow `quant.graph`).

Images come in NCHW; inside, activations are channel-major, (C, N, H, W) or (F, N), so a
layer is one matrix product W·P per chunk of images (`logits` returns N × outputs). A
quantized conv/fc layer takes integer codes in its input format, multiplies them with weight
codes, and accumulates in a BW(acc)-bit two's-complement register that starts at the bias (in
the accumulator's format) and then either
- wraps: the register is reduced modulo 2^BW(acc); only the final value matters, so the sum is
  computed exactly (float32 or float64 BLAS while every partial sum is an integer the type
  holds exactly, else int64, whose own wrap-around modulo 2^64 keeps the result) and wrapped;
- saturates: after adding each product, in the order (input map, kernel row, kernel column),
  the register is clipped. Outputs whose sum of |products| cannot leave the range take the
  exact sum; the others are accumulated step by step in that order.
The register is then requantized (shift, round, saturate) to the layer's output format.
LRN runs on the dequantized values and is kept in 32-bit fixed point; softmax is left out
(inference reports the arg-max class).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer, Layer
from workbench.quant.act import Act
from workbench.quant.fixed import FixedFormat, requantize, to_fixed, wrap
from workbench.quant.graph import INPUT, Graph, graph_of, join_fixed, join_float
from workbench.quant.maps import activation, lrn, pool

OVERFLOW_MODES = ("wrap", "saturate")


@dataclass(frozen=True, slots=True)
class LayerFormat:
    """Fixed-point formats of one conv/fc layer and the accumulator it runs in."""

    in_fmt: FixedFormat
    w_fmt: FixedFormat
    out_fmt: FixedFormat
    acc_bits: int
    overflow: str = "wrap"

    def __post_init__(self) -> None:
        if self.overflow not in OVERFLOW_MODES:
            raise WorkbenchError(f"overflow must be one of {OVERFLOW_MODES}, "
                                 f"got {self.overflow!r}")

    @property
    def acc_fmt(self) -> FixedFormat:
        return FixedFormat(self.acc_bits, self.in_fmt.fl + self.w_fmt.fl)


CHUNK_ELEMENTS = 1 << 22  # patch-matrix entries per matrix product (a cache-sized chunk)


def patches(x: np.ndarray, layer: ConvLayer) -> np.ndarray:
    """Padded channel-major input (C, n, H, W) → (C·Ky·Kx, n·Oy·Ox) patch matrix, rows in
    (input map, kernel row, kernel column) order; taps Dy rows and Dx columns apart."""
    c, n = x.shape[:2]
    dy, dx = getattr(layer, "Dy", 1), getattr(layer, "Dx", 1)
    out = np.empty((c, layer.Ky, layer.Kx, n, layer.Oy, layer.Ox), dtype=x.dtype)
    for ky in range(layer.Ky):
        for kx in range(layer.Kx):
            out[:, ky, kx] = x[:, :, ky * dy:ky * dy + (layer.Oy - 1) * layer.Sy + 1:layer.Sy,
                               kx * dx:kx * dx + (layer.Ox - 1) * layer.Sx + 1:layer.Sx]
    return out.reshape(c * layer.Ky * layer.Kx, n * layer.Oy * layer.Ox)


def _conv_pads(layer: ConvLayer) -> tuple[tuple[int, int], ...]:
    """np.pad widths of a channel-major input: start padding, and the end padding where it
    is positive (a negative one marks columns no window reaches: they are never read)."""
    py_end, px_end = getattr(layer, "Py_e", layer.Py), getattr(layer, "Px_e", layer.Px)
    return ((0, 0), (0, 0), (layer.Py, max(0, py_end)), (layer.Px, max(0, px_end)))


def _dense_weights(layer: ConvLayer, w: np.ndarray) -> np.ndarray:
    """Weights as (Oc, Kc, Ky, Kx), expanding a sparse connection table."""
    if layer.connections is None:
        return w
    dense = np.zeros((layer.Oc, layer.Kc, layer.Ky, layer.Kx), dtype=w.dtype)
    for oc, row in enumerate(layer.connections):
        dense[oc, list(row)] = w[oc, : len(row)]
    return dense


def _matmuls(layer: ConvLayer, x: np.ndarray, w: np.ndarray, product) -> np.ndarray:
    """product(weight matrix (Oc/g, K), patches (K, M), group slice) → (Oc/g, M), over groups
    and chunks of images. x and the result are channel-major: (C, n, H, W) or (F, n)."""
    if layer.kind == "fc":
        return product(w.reshape(w.shape[0], -1), x.reshape(-1, x.shape[-1]), slice(None))
    w = _dense_weights(layer, w)
    per, n = layer.Oc // layer.groups, x.shape[1]
    out = None
    images = max(1, CHUNK_ELEMENTS // (layer.Kc * layer.Ky * layer.Kx * layer.Oy * layer.Ox))
    pads = _conv_pads(layer)
    for lo in range(0, n, images):
        part = x[:, lo:lo + images]
        part = np.pad(part, pads) if any(p for pair in pads for p in pair) else part
        for g in range(layer.groups):
            cols = patches(part[g * layer.Kc:(g + 1) * layer.Kc], layer)
            sl = slice(g * per, (g + 1) * per)
            res = product(w[sl].reshape(per, -1), cols, sl)
            if out is None:
                out = np.empty((layer.Oc, n, layer.Oy, layer.Ox), dtype=res.dtype)
            out[sl, lo:lo + images] = res.reshape(per, -1, layer.Oy, layer.Ox)
    return out


def conv_float(layer: ConvLayer, x: np.ndarray, w: np.ndarray, b: np.ndarray,
               dtype: type = np.float32) -> np.ndarray:
    """Float convolution / fully connected layer (pre-activation, channel-major)."""
    bias = b.astype(dtype)

    def product(mat: np.ndarray, cols: np.ndarray, sl: slice) -> np.ndarray:
        return mat @ cols + bias[sl, None]

    return _matmuls(layer, np.asarray(x, dtype=dtype), w.astype(dtype), product)


def _saturating_dot(mat: np.ndarray, cols: np.ndarray, bias: np.ndarray, bits: int,
                    exact: type = np.float64) -> np.ndarray:
    """Sequential saturating accumulation: bias, then the products in patch-row order,
    (input map, kernel row, kernel column); exact integers. Outputs whose sum of |products|
    cannot leave the register take the exact sum."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    bias = bias[:, None]
    if exact is np.int64:  # too wide for floats: every output is accumulated step by step
        acc = np.zeros((mat.shape[0], cols.shape[1]), dtype=np.int64)
        risky = np.arange(cols.shape[1])
    else:
        acc = (mat.astype(exact) @ cols.astype(exact)).astype(np.int64) + bias
        reach = np.abs(mat).astype(np.float64) @ np.abs(cols).astype(np.float64) + np.abs(bias)
        risky = np.flatnonzero((reach > hi).any(axis=0))
    if len(risky):
        part = np.broadcast_to(bias, (mat.shape[0], len(risky))).astype(np.int64)
        sub = cols[:, risky].astype(np.int64)
        m64 = mat.astype(np.int64)
        for k in range(mat.shape[1]):
            part = np.clip(part + m64[:, k, None] * sub[None, k, :], lo, hi)
        acc[:, risky] = part
    return acc


def conv_fixed(layer: ConvLayer, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray,
               fmt: LayerFormat, out_fmt: FixedFormat | None = None) -> np.ndarray:
    """Accumulator codes (format fmt.acc_fmt, BW(acc) bits) of a quantized layer, or, given
    out_fmt, those codes requantized to out_fmt (done per chunk, while it is in cache)."""
    # |partial sums| ≤ K · 2^(BW(in)−1) · 2^(BW(w)−1): the float type that holds them exactly
    sum_bits = fmt.in_fmt.bw + fmt.w_fmt.bw - 2 + int(np.ceil(np.log2(layer.Kx * layer.Ky
                                                                       * layer.Kc)))
    exact = np.float32 if sum_bits <= 24 else np.float64 if sum_bits <= 53 else None
    # int32 registers when |sum| + |bias| + 2^(BW(acc)−1) stays below 2^31
    narrow = exact is not None and sum_bits <= 29 and fmt.acc_bits <= 30
    q_in = q_in.astype(exact or np.int64)

    def product(mat: np.ndarray, cols: np.ndarray, sl: slice) -> np.ndarray:
        bias = q_b[sl, None]
        if fmt.overflow == "saturate":
            acc = _saturating_dot(mat, cols, q_b[sl], fmt.acc_bits, exact or np.int64)
        else:
            if exact is not None:  # every partial sum is an integer the type holds exactly
                acc = (mat.astype(exact) @ cols).astype(np.int32 if narrow else np.int64)
            else:  # int64 arithmetic wraps modulo 2^64, which 2^BW(acc) divides: still exact
                acc = mat.astype(np.int64) @ cols
            acc += bias.astype(acc.dtype)
            acc = wrap(acc, fmt.acc_bits)
        return acc if out_fmt is None else requantize(acc, fmt.acc_fmt, out_fmt)

    return _matmuls(layer, q_in, q_w, product)


def quantized_params(w: np.ndarray, b: np.ndarray, fmt: LayerFormat) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Weight codes in fmt.w_fmt and bias codes in the accumulator format."""
    return to_fixed(w, fmt.w_fmt), to_fixed(b, fmt.acc_fmt)


def _layer_input(layer: ConvLayer, act: Act) -> np.ndarray:
    """A conv/fc layer's input; an fc layer's as (C·H·W, n), features in (c, h, w) order."""
    x = act.values
    if layer.kind == "fc" and x.ndim == 4:
        x = x.transpose(0, 2, 3, 1).reshape(-1, x.shape[1])
    return x


def _fixed_operands(layer: ConvLayer, act: Act, params: dict, fmt: LayerFormat,
                    cache: dict | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input codes in fmt.in_fmt, weight codes and bias codes (cached per layer and format)."""
    x = _layer_input(layer, act)
    q_in = to_fixed(x, fmt.in_fmt) if act.fmt is None else requantize(x, act.fmt, fmt.in_fmt)
    key = (layer.name, fmt)
    if cache is None or key not in cache:
        qp = quantized_params(*params[layer.name], fmt)
        if cache is not None:
            cache[key] = qp
    else:
        qp = cache[key]
    return q_in, qp[0], qp[1]


def accumulators(layer: ConvLayer, act: Act, params: dict, fmt: LayerFormat,
                 cache: dict | None = None) -> np.ndarray:
    """The final BW(acc)-bit register codes of a quantized conv/fc layer (fmt.acc_fmt)."""
    return conv_fixed(layer, *_fixed_operands(layer, act, params, fmt, cache), fmt)


def apply_layer(layer: Layer, act: Act, params: dict, fmt: LayerFormat | None,
                cache: dict | None = None, owned: bool = False) -> Act:
    """One layer on an activation; conv/fc use `fmt` when given, float otherwise.

    owned: the caller will not use `act` again, so element-wise layers may work in place."""
    kind = layer.kind
    if kind in ("conv", "fc"):
        if fmt is None:
            w, b = params[layer.name]
            return Act(conv_float(layer, Act(_layer_input(layer, act), act.fmt).as_float(),
                                  w, b))
        out = conv_fixed(layer, *_fixed_operands(layer, act, params, fmt, cache), fmt,
                         fmt.out_fmt)
        narrow = fmt.out_fmt.bw <= 32 and out.dtype != np.int32
        return Act(out.astype(np.int32) if narrow else out, fmt.out_fmt)
    if kind == "activation":  # PReLU's slopes are among the weights, by layer name
        return activation(layer, act, owned, params.get(layer.name))
    if kind == "pool":
        return pool(layer, act)
    if kind == "lrn":
        return lrn(layer, act)
    return act  # softmax: monotone, the arg-max is unchanged


IMAGES_PER_PASS = 32  # forward() runs this many images through all layers before the next

State = dict[str, Act]  # live tensors by producer name (graph.INPUT for the images)
Formats = Mapping[str, "LayerFormat | FixedFormat"]  # conv/fc formats; join output formats


def to_channel_major(x: np.ndarray) -> np.ndarray:
    """NCHW → (C, N, H, W); N×F → (F, N)."""
    return np.ascontiguousarray(np.swapaxes(x, 0, 1))


def step(layer: Layer, acts: list[Act], params: dict,
         fmt: LayerFormat | FixedFormat | None, cache: dict | None = None,
         owned: bool = False) -> Act:
    """One layer on the tensors it reads (joins follow the rule of `quant.graph`)."""
    if layer.kind not in ("eltwise", "concat"):
        return apply_layer(layer, acts[0], params, fmt, cache, owned)
    if any(a.fmt is None for a in acts):
        return Act(join_float(layer, [a.as_float() for a in acts]))
    codes, out_fmt = join_fixed(layer, [a.values for a in acts], [a.fmt for a in acts], fmt)
    return Act(codes.astype(np.int32) if out_fmt.bw <= 32 else codes, out_fmt)


def advance(net: Network, params: dict, state: State, formats: Formats | None = None,
            start: int = 0, stop: int | None = None, cache: dict | None = None,
            graph: Graph | None = None, given: frozenset[str] | None = None) -> State:
    """Run layers start..stop−1 on the live tensors `state`; returns the tensors later layers
    read plus the last layer's output. Tensors in `given` (default: all of `state`) belong to
    the caller and are never changed in place. graph: as `graph_of` returns it (default:
    the network's own)."""
    graph = graph if graph is not None else graph_of(net)
    formats = formats or {}
    stop = len(net.layers) if stop is None else stop
    last = graph.last_use(net)
    given = frozenset(state) if given is None else given
    state = dict(state)
    for index in range(start, stop):
        layer = net.layers[index]
        sources = graph.inputs[layer.name]
        missing = [s for s in sources if s not in state]
        if missing:
            raise WorkbenchError(f"layer {layer.name!r} reads {missing[0]!r}, which was not "
                                 "computed")
        owned = (len(sources) == 1 and sources[0] not in given
                 and last.get(sources[0], -1) <= index)
        state[layer.name] = step(layer, [state[s] for s in sources], params,
                                 formats.get(layer.name), cache, owned)
        for s in set(sources):
            if last.get(s, -1) <= index:
                del state[s]
    return state


def _initial_state(net: Network, graph: Graph, x: np.ndarray | Act | State,
                   start: int) -> tuple[State, bool]:
    """Live tensors before layer `start`, and whether they belong to the caller."""
    if isinstance(x, dict):
        return x, True
    if not isinstance(x, Act):
        return {INPUT: Act(to_channel_major(np.asarray(x, dtype=np.float32)))}, False
    needed = graph.needed(net, start)
    if len(needed) != 1:
        raise WorkbenchError(f"layers from {net.layers[start].name!r} on read "
                             f"{len(needed)} tensors; pass them as a dict by producer name")
    return {needed.pop(): x}, True


def forward(net: Network, params: dict, x: np.ndarray | Act | State,
            formats: Formats | None = None, start: int = 0, stop: int | None = None,
            cache: dict | None = None, graph: Graph | None = None) -> Act:
    """Run layers start..stop−1 along the graph (default: the network's own); layers named in
    `formats` run bit-true in fixed point. Returns the output of layer stop−1.

    x: NCHW images, an Act in the channel-major layout (as returned here) holding the one
    tensor layers start.. read, or a dict of such tensors by producer name."""
    graph = graph_of(net, graph)
    state, given = _initial_state(net, graph, x, start)
    owner = frozenset(state) if given else frozenset()
    stop = len(net.layers) if stop is None else stop
    name = net.layers[stop - 1].name
    n = next(iter(state.values())).values.shape[1]
    if n > IMAGES_PER_PASS:  # a few images through every layer at a time: cache-resident
        parts = [advance(net, params, {k: Act(a.values[:, lo:lo + IMAGES_PER_PASS], a.fmt)
                                       for k, a in state.items()}, formats, start, stop, cache,
                         graph, owner)[name]
                 for lo in range(0, n, IMAGES_PER_PASS)]
        return Act(np.concatenate([p.values for p in parts], axis=1), parts[0].fmt)
    return advance(net, params, state, formats, start, stop, cache, graph, owner)[name]


def logits(net: Network, params: dict, x: np.ndarray, formats: Formats | None = None,
           graph: Graph | None = None) -> np.ndarray:
    """Network outputs for NCHW images as an N × outputs float64 array."""
    out = forward(net, params, x, formats, graph=graph).as_float(np.float64)
    return np.swapaxes(out, 0, 1).reshape(out.shape[1], -1)


def accuracy(net: Network, params: dict, x: np.ndarray | Act | State, y: np.ndarray,
             formats: Formats | None = None, start: int = 0, cache: dict | None = None,
             graph: Graph | None = None) -> float:
    """Top-1 accuracy (0..1) of the network's arg-max output."""
    out = forward(net, params, x, formats, start, cache=cache,
                  graph=graph).as_float(np.float64)
    out = out.reshape(out.shape[0], -1) if out.ndim == 2 else out.reshape(out.shape[0],
                                                                          out.shape[1], -1)
    scores = out if out.ndim == 2 else out.max(axis=2)
    return float((scores.argmax(axis=0) == y).mean())
