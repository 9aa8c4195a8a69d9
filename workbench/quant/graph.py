"""The dataflow graph quantized inference follows, and the fixed-point rule of its joins.

A `Graph` names, for every layer, the tensors it reads: the outputs of earlier layers, or
`INPUT` (the network's images). A layer read by several layers is a branch; its tensor stays
alive until its last reader has run. `graph_of(net)` takes the graph from the Network
(`Network.producers`: the importers record it in `Network.inputs`; without it a network is a
chain, every layer reading the one before) and checks that every layer reads tensors of the
shapes it expects, so a chain read of a branching network is a one-line error.

Joins in fixed point (element-wise sum, max, product; concat), codes q in formats (BW, FL):
- sum and max: the operands are aligned exactly to the finest fractional length among them
  (left shifts, no rounding), combined exactly in int64, and the result is requantized once
  (arithmetic shift, round half away from zero, saturation) to the output format;
- concat: every operand is requantized to the output format;
- product: codes multiply exactly, BW = Σ BW, FL = Σ FL (no rounding).
The output format is given (a model's own scale) or follows the rule: the widest operand's bit
width BW = max BW_i, IL = max IL_i (+ ⌈log2 n⌉ for a sum of n operands), FL = BW − 1 − IL, so
no operand saturates and a sum only rounds (clipping at most the single top code).
A join with any float operand runs in float (later layers of a search run unquantized).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from workbench.errors import SpecError
from workbench.layers.network import Network
from workbench.layers.spec import Layer
from workbench.quant.fixed import FixedFormat, requantize

INPUT = ""  # the network's input images, as a producer name (as in `Network.inputs`)
KINDS = ("conv", "fc", "pool", "lrn", "activation", "softmax", "eltwise", "concat")
# activations quantized inference runs (`maps.activation`; prelu with its slopes, weights)
FUNCS = ("relu", "relu6", "clip", "sigmoid", "tanh", "hardsigmoid", "hardswish", "silu",
         "leaky_relu", "prelu", "elu", "selu", "gelu", "gelu_tanh", "softplus", "mish")
WIDE = 62  # bits of the exact int64 alignment register


@dataclass(frozen=True)
class Graph:
    """Producers per layer name (in operand order); `INPUT` stands for the images."""

    inputs: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, net: Network) -> Graph:
        """The network's own graph (`Network.producers`; a chain when it records none)."""
        return cls({layer.name: net.producers(layer.name) for layer in net.layers})

    def last_use(self, net: Network) -> dict[str, int]:
        """Index of the last layer that reads each tensor."""
        last: dict[str, int] = {}
        for index, layer in enumerate(net.layers):
            for name in self.inputs[layer.name]:
                last[name] = index
        return last

    def needed(self, net: Network, start: int) -> set[str]:
        """Tensors produced before layer `start` (or the images) that layers start.. read."""
        before = {INPUT, *(layer.name for layer in net.layers[:start])}
        return {name for layer in net.layers[start:] for name in self.inputs[layer.name]
                if name in before}


def expected_inputs(layer: Layer) -> int:
    """How many tensors a layer reads."""
    if layer.kind == "eltwise":
        return layer.inputs
    if layer.kind == "concat":
        return len(layer.parts)
    return 1


def _fits(layer: Layer, shapes: list[tuple[int, int, int]]) -> bool:
    """Do the producers' (C, H, W) shapes feed this layer?"""
    if layer.kind == "concat":
        return [s[0] for s in shapes] == list(layer.parts) and all(
            s[1:] == (layer.H, layer.W) for s in shapes)
    if layer.kind == "eltwise":
        return all(s == layer.in_shape for s in shapes)
    (c, h, w), want = shapes[0], layer.in_shape
    if layer.kind == "fc":
        return c * h * w == layer.Kc
    if layer.kind in ("conv", "pool"):  # a conv may read fewer rows/columns than exist
        return c == want[0] and h >= want[1] and w >= want[2]
    return (c, h, w) == want


def validate(net: Network, graph: Graph, chain: bool = False) -> Graph:
    """Every layer is one inference runs and reads earlier tensors of the shapes it expects
    (one-line SpecError)."""
    shapes: dict[str, tuple[int, int, int]] = {INPUT: net.layers[0].in_shape}
    hint = (f"; network {net.name!r} records no graph, so its layers are read as a chain"
            if chain else "")
    for layer in net.layers:
        if layer.kind not in KINDS or (layer.kind == "activation" and layer.func not in FUNCS):
            what = layer.kind if layer.kind != "activation" else f"activation {layer.func}"
            raise SpecError(f"layer {layer.name!r} ({what}): quantized inference runs "
                            f"{', '.join(KINDS)} layers and the activations {', '.join(FUNCS)}")
        sources = graph.inputs.get(layer.name)
        if sources is None:
            raise SpecError(f"graph of network {net.name!r}: layer {layer.name!r} has no inputs")
        unknown = [s for s in sources if s not in shapes]
        if unknown:
            raise SpecError(f"graph of network {net.name!r}: layer {layer.name!r} reads "
                            f"{unknown[0]!r}, which is not an earlier layer")
        if len(sources) != expected_inputs(layer):
            raise SpecError(f"layer {layer.name!r} ({layer.kind}) joins "
                            f"{expected_inputs(layer)} inputs but reads {len(sources)}{hint}")
        got = [shapes[s] for s in sources]
        if not _fits(layer, got):
            raise SpecError(f"layer {layer.name!r} ({layer.kind}) expects input "
                            f"{list(layer.in_shape)} (C, H, W) but reads "
                            + ", ".join(f"{s} {list(g)}" for s, g in zip(sources, got,
                                                                         strict=True)) + hint)
        shapes[layer.name] = layer.out_shape
    return graph


def graph_of(net: Network, graph: Graph | None = None) -> Graph:
    """The graph to follow: the one given, else the network's own (both checked)."""
    if graph is not None:
        return validate(net, graph)
    return validate(net, Graph.of(net), chain=net.inputs is None)


def join_format(layer: Layer, fmts: list[FixedFormat]) -> FixedFormat:
    """Output format of a fixed-point join under the module's rule."""
    if layer.kind == "eltwise" and layer.op == "prod":
        bw = sum(f.bw for f in fmts)
        if bw > WIDE:
            raise SpecError(f"layer {layer.name!r}: a product of {bw} bits does not fit the "
                            f"{WIDE}-bit register")
        return FixedFormat(bw, sum(f.fl for f in fmts))
    bw = max(f.bw for f in fmts)
    il = max(f.il for f in fmts)
    if layer.kind == "eltwise" and layer.op == "sum":
        il += math.ceil(math.log2(len(fmts)))
    return FixedFormat(bw, bw - 1 - il)


def join_float(layer: Layer, values: list[np.ndarray]) -> np.ndarray:
    """A join of float tensors (channel-major, maps on axis 0)."""
    if layer.kind == "concat":
        return np.concatenate(values, axis=0)
    combine = {"sum": np.add, "max": np.maximum, "prod": np.multiply}[layer.op]
    out = values[0].copy()
    for v in values[1:]:
        combine(out, v, out=out)
    return out


def join_fixed(layer: Layer, codes: list[np.ndarray], fmts: list[FixedFormat],
               out_fmt: FixedFormat | None = None) -> tuple[np.ndarray, FixedFormat]:
    """A join of integer codes (module docstring): (codes, format) of the output."""
    out_fmt = out_fmt or join_format(layer, fmts)
    if layer.kind == "concat":
        return np.concatenate([requantize(np.asarray(q, dtype=np.int64), f, out_fmt)
                               for q, f in zip(codes, fmts, strict=True)], axis=0), out_fmt
    if layer.op == "prod":
        out = np.ones_like(codes[0], dtype=np.int64)
        for q in codes:
            out = out * q
        return requantize(out, join_format(layer, fmts), out_fmt), out_fmt
    fine = max(f.fl for f in fmts)
    for f in fmts:
        if f.bw + fine - f.fl + math.ceil(math.log2(len(fmts))) > WIDE:
            raise SpecError(f"layer {layer.name!r}: aligning a {f} operand to {fine} fractional "
                            f"bits overflows the {WIDE}-bit register")
    aligned = [np.asarray(q, dtype=np.int64) << np.int64(fine - f.fl)
               for q, f in zip(codes, fmts, strict=True)]
    exact = join_float(layer, aligned)
    return requantize(exact, FixedFormat(WIDE, fine), out_fmt), out_fmt
