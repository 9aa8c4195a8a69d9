"""Float formats beside dynamic fixed point: fp16, bf16 and fp8 (E4M3, E5M2).

A format rounds a value to its nearest representable number, ties to even, in the format's
exponent range, with subnormals: fp16 (IEEE binary16: 5 exponent bits, 10 mantissa bits,
largest 65504), bf16 (8, 7: float32's range), fp8 E4M3 (OCP "FN": 4, 3, bias 7, largest
448, no infinities) and fp8 E5M2 (5, 2, bias 15, largest 57344). A value beyond the largest
saturates to it (as accelerators convert; the IEEE formats would give ±inf).

`layer_accuracy` measures what a format costs a network, layer by layer: the weights of one
layer and the activations it writes rounded to the format (the others in float32), with
products summed in float32, as a float unit with a wide accumulator does; and the whole
network in the format. `bytes_moved` gives the bytes each format moves per image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.errors import SpecError


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: exponent and mantissa bits, exponent bias, largest value."""

    name: str
    exponent: int
    mantissa: int
    bias: int
    largest: float

    @property
    def bits(self) -> int:
        return 1 + self.exponent + self.mantissa

    @property
    def bytes(self) -> int:
        return self.bits // 8

    def round(self, x: np.ndarray) -> np.ndarray:
        """x rounded to the format (float64 in, float64 out): nearest, ties to even;
        saturating at ±largest; NaN stays NaN."""
        x = np.asarray(x, np.float64)
        smallest_exp = 1 - self.bias  # the exponent of the smallest normal number
        with np.errstate(divide="ignore", invalid="ignore"):
            exp = np.floor(np.log2(np.abs(x)))
        exp = np.where(np.isfinite(exp), np.maximum(exp, smallest_exp), smallest_exp)
        step = np.exp2(exp - self.mantissa)  # spacing of the format's numbers near x
        y = np.rint(x / step) * step  # np.rint: ties to even
        return np.clip(y, -self.largest, self.largest)


FORMATS = {
    "fp16": FloatFormat("fp16", 5, 10, 15, 65504.0),
    "bf16": FloatFormat("bf16", 8, 7, 127, float(np.float32(3.3895313892515355e38))),
    "fp8-e4m3": FloatFormat("fp8-e4m3", 4, 3, 7, 448.0),
    "fp8-e5m2": FloatFormat("fp8-e5m2", 5, 2, 15, 57344.0),
}


def float_format(name: str) -> FloatFormat:
    """The format of that name (one-line SpecError naming the known ones)."""
    if name not in FORMATS:
        raise SpecError(f"unknown float format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


def _rounded_params(params: dict, fmt: FloatFormat, names: set[str]) -> dict:
    out = dict(params)
    for name in names:
        if name in params:
            w, b = params[name]
            out[name] = (fmt.round(w).astype(np.float32), np.asarray(b, np.float32))
    return out


def accuracy_in(net, params: dict, x: np.ndarray, y: np.ndarray, fmt: FloatFormat,
                names: set[str]) -> float:
    """Top-1 accuracy with the layers `names` in the format (weights, and the activations
    they write); every other layer in float32."""
    from workbench.quant.graph import INPUT, graph_of
    from workbench.quant.infer import Act, advance, to_channel_major

    graph = graph_of(net)
    rounded = _rounded_params(params, fmt, names)
    state = {INPUT: Act(to_channel_major(np.asarray(x, np.float32)))}
    for index, layer in enumerate(net.layers):
        state = advance(net, rounded, state, start=index, stop=index + 1, graph=graph)
        if layer.name in names:
            out = state[layer.name]
            state[layer.name] = Act(fmt.round(out.as_float(np.float64)).astype(np.float32))
    out = state[net.layers[-1].name].as_float(np.float64)
    scores = out.reshape(out.shape[0], -1)
    return float((scores.argmax(axis=0) == y).mean())


def layer_accuracy(net, params: dict, x: np.ndarray, y: np.ndarray,
                   formats: list[str]) -> dict[str, dict[str, float]]:
    """{format: {layer name: accuracy with that layer alone in the format, "all": with every
    layer in it}}."""
    table: dict[str, dict[str, float]] = {}
    for name in formats:
        fmt = float_format(name)
        row = {layer.name: accuracy_in(net, params, x, y, fmt, {layer.name})
               for layer in net.layers}
        row["all"] = accuracy_in(net, params, x, y, fmt, {lay.name for lay in net.layers})
        table[name] = row
    return table


def bytes_moved(net, fmt_bytes: int) -> int:
    """Bytes one image moves at `fmt_bytes` per element: every layer's weights once, and its
    input and output maps once (the streaming lower bound)."""
    total = 0
    for layer in net.with_batch(1).layers:
        c, h, w = layer.in_shape
        oc, oh, ow = layer.out_shape
        total += layer.params + c * h * w + oc * oh * ow
    return total * fmt_bytes
