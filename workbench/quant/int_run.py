"""Bit-true integer inference of a quantized ONNX model as written (QDQ or QOperator).

Every product layer runs on the model's integer codes: (x − zx) · (w − zw) summed in an exact
int64 register, plus the int32 bias codes, then held in an `acc_bits` register (two's-complement
wrap, or saturation) and requantized with the model's own scales and zero points:
y = clip(round_half_even(acc · sx·sw / sy) + zy). Product layers: a Conv, Gemm or MatMul whose
data and weight inputs are DequantizeLinear outputs (QDQ, bias codes when its bias is a
DequantizeLinear of int32), QLinearConv, QLinearMatMul and QGemm. Every other node runs in
float64 on dequantized values, as ONNX defines it (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearGlobalAveragePool, QLinearConcat: dequantize, the float op, quantize). An operator
outside `FLOAT_OPS` and the product and quantized ops is a one-line SpecError.

Per product layer the run records its accumulators (before the register's width acts): the
largest magnitude and how many leave `count_bits` (`acc_bits` unless given: a run with exact
registers counting against a narrower width tells how many of the model's own accumulators a
narrow register would not hold), with two bounds from the codes alone (`AccStats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import SpecError
from workbench.quant import int_ops

CODES = {2: (0, 255), 3: (-128, 127), 4: (0, 65535), 5: (-32768, 32767),
         6: (-(1 << 31), (1 << 31) - 1)}  # ONNX data type → code range (uint8 … int32)


@dataclass(frozen=True)
class AccStats:
    """One product layer's accumulators over the images run (integers: code units).
    worst: K · max|x − zx| · max|w − zw| + max|bias|; weights: max over output channels of
    Σ|w − zw| · max|x − zx| + |bias|."""

    name: str
    op: str
    outputs: int
    max_abs: int
    overflowing: int
    worst: int
    weights: int


@dataclass
class _Q:
    """A tensor of integer codes with its scale and zero point (per axis when vectors)."""

    codes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    axis: int
    dtype: int

    def centered(self) -> np.ndarray:
        return self.codes.astype(np.int64) - _along(self.zero, self.codes.ndim, self.axis)

    def real(self) -> np.ndarray:
        return self.centered() * _along(self.scale.astype(np.float64), self.codes.ndim,
                                        self.axis)


def _along(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A per-axis vector shaped to broadcast along `axis` (a scalar or 1-element as is)."""
    v = np.asarray(v)
    if v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def quantize(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int,
             dtype: int) -> _Q:
    """ONNX QuantizeLinear: round half to even, add the zero point, saturate."""
    lo, hi = CODES[dtype]
    q = np.rint(x / _along(scale, x.ndim, axis).astype(x.dtype)) + _along(zero, x.ndim, axis)
    return _Q(np.clip(q, lo, hi).astype(np.int64), np.asarray(scale), np.asarray(zero), axis,
              dtype)


class IntRun:
    """One run of a model on a batch of images (see the module docstring)."""

    def __init__(self, model: Any, acc_bits: int = 32, overflow: str = "wrap",
                 count_bits: int | None = None) -> None:
        from onnx import numpy_helper

        self.model, self.acc_bits, self.overflow = model, acc_bits, overflow
        self.count_bits = count_bits or acc_bits
        self.values: dict[str, Any] = {t.name: numpy_helper.to_array(t)
                                       for t in model.graph.initializer}
        self.stats: dict[str, AccStats] = {}

    # --- tensors -------------------------------------------------------------------------
    def get(self, name: str) -> Any:
        if name not in self.values:
            raise SpecError(f"tensor {name!r} is read before it is computed")
        return self.values[name]

    def real(self, name: str) -> np.ndarray:
        value = self.get(name)
        return value.real() if isinstance(value, _Q) else np.asarray(value, np.float64)

    def qparams(self, node: Any, s: int, z: int) -> tuple[np.ndarray, np.ndarray, int]:
        scale = np.asarray(self.get(node.input[s]), np.float64)
        has_zero = len(node.input) > z and node.input[z]
        zero = np.asarray(self.get(node.input[z])) if has_zero else np.zeros((), np.uint8)
        return scale, zero.astype(np.int64), _dtype(zero)

    def coded(self, node: Any, i: int, s: int, z: int) -> _Q:
        """Input i of a QOperator node as codes with its scale (s) and zero point (z)."""
        scale, zero, dtype = self.qparams(node, s, z)
        value = self.get(node.input[i])
        codes = value.codes if isinstance(value, _Q) else np.asarray(value).astype(np.int64)
        return _Q(codes, scale, zero, 0, dtype)

    # --- accumulators --------------------------------------------------------------------
    def register(self, name: str, op: str, acc: np.ndarray, x: _Q, w: _Q,
                 bias: np.ndarray | None, k: int) -> np.ndarray:
        """Record the exact accumulators, then hold them in the acc_bits register."""
        half = 1 << (min(self.acc_bits, 63) - 1)
        x_max = int(max(abs(v - int(z)) for v in CODES[x.dtype] for z in np.ravel(x.zero)))
        w_c = np.abs(w.centered()).reshape(w.codes.shape[0], -1)
        b = np.abs(bias).reshape(-1) if bias is not None else np.zeros(1, np.int64)
        b = np.broadcast_to(b, (w_c.shape[0],)) if b.size in (1, w_c.shape[0]) else b
        prev = self.stats.get(name)
        bound = 1 << (min(self.count_bits, 63) - 1)
        over = int(((acc < -bound) | (acc > bound - 1)).sum())
        self.stats[name] = AccStats(
            name, op, acc.size + (prev.outputs if prev else 0),
            max(int(np.abs(acc).max(initial=0)), prev.max_abs if prev else 0),
            over + (prev.overflowing if prev else 0),
            k * x_max * int(w_c.max(initial=0)) + int(b.max(initial=0)),
            int((w_c.sum(axis=1) * x_max + b[:w_c.shape[0]]).max(initial=0)))
        if self.acc_bits >= 63:  # the exact register (int64 arithmetic)
            return acc
        if self.overflow == "saturate":
            return np.clip(acc, -half, half - 1)
        return ((acc + half) % (1 << self.acc_bits)) - half

    # --- the graph -----------------------------------------------------------------------
    def run(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The graph outputs (float64, dequantized) for images x (N × the input's per-image
        shape), run one image at a time (exported shapes often fix the batch at 1)."""
        inits = dict(self.values)
        data = [v.name for v in self.model.graph.input if v.name not in inits]
        if not data:
            raise SpecError("the model has no data input")
        outputs: dict[str, list[np.ndarray]] = {}
        for image in np.asarray(x, np.float64):
            self.values = dict(inits)
            self.values[data[0]] = image[None]
            for index, node in enumerate(self.model.graph.node):
                self._node(node, index)
            for o in self.model.graph.output:
                outputs.setdefault(o.name, []).append(self.real(o.name))
        return {k: np.concatenate(v) for k, v in outputs.items()}

    def _node(self, node: Any, index: int) -> None:
        name = node.name or f"{node.op_type}_{index}"
        try:
            int_ops.run_node(self, node, name)
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise SpecError(f"node {name!r} ({node.op_type}): cannot run it "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:80]})"
                            ) from None


def _dtype(zero: np.ndarray) -> int:
    return {np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4,
            np.dtype(np.int16): 5, np.dtype(np.int32): 6}.get(np.asarray(zero).dtype, 2)


def run_model(path: str | Path, x: np.ndarray, acc_bits: int = 32, overflow: str = "wrap",
              count_bits: int | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, AccStats]]:
    """(graph outputs, accumulator statistics per product layer) of the model on images x,
    with acc_bits registers; `overflowing` counts the accumulators outside count_bits
    (default acc_bits)."""
    from workbench.layers.onnx_external import load_model

    run = IntRun(load_model(path), acc_bits, overflow, count_bits)  # under the project's guard
    outputs = run.run(x)
    return outputs, run.stats


def input_range(model: Any) -> tuple[list[int], float, float]:
    """The data input's per-image shape and the float range its QuantizeLinear represents
    (codes lo..hi; [-1, 1] when no QuantizeLinear reads it)."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    data = next(v for v in model.graph.input if v.name not in inits)
    shape = [d.dim_value or 1 for d in data.type.tensor_type.shape.dim][1:]
    q = next((n for n in model.graph.node if n.op_type == "QuantizeLinear"
              and n.input[0] == data.name), None)
    if q is None or q.input[1] not in inits:
        return shape, -1.0, 1.0
    scale = float(np.ravel(inits[q.input[1]])[0])
    zero = inits[q.input[2]] if len(q.input) > 2 and q.input[2] in inits else np.uint8(0)
    lo, hi = CODES[_dtype(zero)]
    z = int(np.ravel(zero)[0])
    return shape, (lo - z) * scale, (hi - z) * scale
