"""Small quantized ONNX models built with onnx.helper, for the quantized-model tests: QDQ
(QuantizeLinear/DequantizeLinear around float ops) and QLinear (QLinearConv) forms, with the
integer codes and scales they were built from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass
class Built:
    """A model file and what it was built from: codes and exponents f (scale 2^-f)."""

    path: Path
    w: dict[str, np.ndarray]  # int8 weight codes, as stored (conv OIHW, Gemm [out, in])
    b: dict[str, np.ndarray]  # int32 bias codes, in the accumulator's scale
    f_w: dict[str, np.ndarray]  # weight exponents, one per output channel
    f_act: dict[str, int]  # activation exponents by tensor role


def _init(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


class _Graph:
    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(_init(name, value))
        return name

    def qdq(self, tensor: str, exponent: int, tag: str, dtype=np.int8, zp: int = 0) -> str:
        """Q then DQ of an activation at scale 2^-exponent."""
        s = self.const(f"{tag}_s", np.array(2.0 ** -exponent, np.float32))
        z = self.const(f"{tag}_z", np.array(zp, dtype))
        self.nodes.append(helper.make_node("QuantizeLinear", [tensor, s, z], [f"{tag}_q"],
                                           name=f"{tag}_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{tag}_q", s, z],
                                           [f"{tag}_dq"], name=f"{tag}_DQ"))
        return f"{tag}_dq"

    def weight(self, name: str, codes: np.ndarray, scales: np.ndarray, axis: int = 0) -> str:
        q = self.const(f"{name}_q", codes.astype(np.int8))
        s = self.const(f"{name}_s", scales.astype(np.float32))
        z = self.const(f"{name}_z", np.zeros(scales.shape, np.int8))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [name], axis=axis,
                                           name=f"{name}_DQ"))
        return name

    def bias(self, name: str, codes: np.ndarray, scales: np.ndarray) -> str:
        q = self.const(f"{name}_q", codes.astype(np.int32))
        s = self.const(f"{name}_s", scales.astype(np.float32))
        z = self.const(f"{name}_z", np.zeros(scales.shape, np.int32))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [name], axis=0,
                                           name=f"{name}_DQ"))
        return name

    def save(self, path: Path, in_shape: list[int], out: str, out_shape: list[int]) -> Path:
        graph = helper.make_graph(
            self.nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(model)
        onnx.save(model, str(path))
        return path


def qdq_net(path: Path, rng: np.random.Generator, big: bool = False,
            in_scale: float | None = None) -> Built:
    """x [1,2,6,6] → conv1 (4 maps, 3×3 pad 1, per-tensor 2^-6, int32 bias) → Q 2^-3 → relu →
    conv2 (3 maps, 3×3, per-channel 2^-5, 2^-7, 2^-6) → Q 2^-2 → flatten → fc (5 outputs,
    2^-7, transB) → Q 2^-1. Input at 2^-4 (or the scale `in_scale`). big: conv1 weights of
    magnitude ≥ 100, so that 16-bit accumulators overflow."""
    g = _Graph()
    f_act = {"in": 4, "c1": 3, "c2": 2, "fc": 1}
    w1 = (rng.integers(100, 128, (4, 2, 3, 3)) * rng.choice([-1, 1], (4, 2, 3, 3))) if big \
        else rng.integers(-60, 61, (4, 2, 3, 3))
    w2 = rng.integers(-128, 128, (3, 4, 3, 3))
    w3 = rng.integers(-128, 128, (5, 3 * 4 * 4))
    f_w = {"conv1": np.array([6] * 4), "conv2": np.array([5, 7, 6]), "fc": np.array([7] * 5)}
    b1 = rng.integers(-3000, 3000, 4)
    scale_in = in_scale if in_scale is not None else 2.0 ** -f_act["in"]
    s = g.const("in_s", np.array(scale_in, np.float32))
    z = g.const("in_z", np.array(0, np.int8))
    g.nodes.append(helper.make_node("QuantizeLinear", ["x", s, z], ["in_q"], name="in_Q"))
    g.nodes.append(helper.make_node("DequantizeLinear", ["in_q", s, z], ["in_dq"], name="in_DQ"))
    g.weight("w1", w1, np.array(2.0 ** -6))
    g.bias("b1", b1, np.full(4, 2.0 ** -(f_act["in"] + 6)))
    g.nodes.append(helper.make_node("Conv", ["in_dq", "w1", "b1"], ["c1"], name="conv1",
                                    kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    a = g.qdq("c1", f_act["c1"], "c1")
    g.nodes.append(helper.make_node("Relu", [a], ["r1"], name="relu1"))
    a = g.qdq("r1", f_act["c1"], "r1")
    g.weight("w2", w2, 2.0 ** -f_w["conv2"].astype(float))
    g.nodes.append(helper.make_node("Conv", [a, "w2"], ["c2"], name="conv2",
                                    kernel_shape=[3, 3]))
    a = g.qdq("c2", f_act["c2"], "c2")
    g.nodes.append(helper.make_node("Flatten", [a], ["flat"], name="flatten"))
    g.weight("w3", w3, np.array(2.0 ** -7))
    g.nodes.append(helper.make_node("Gemm", ["flat", "w3"], ["y"], name="fc", transB=1))
    out = g.qdq("y", f_act["fc"], "y")
    g.save(path, [1, 2, 6, 6], out, [1, 5])
    return Built(path, {"conv1": w1, "conv2": w2, "fc": w3}, {"conv1": b1}, f_w, f_act)


def qlinear_conv(path: Path, rng: np.random.Generator) -> Built:
    """x [1,3,5,5] → QuantizeLinear 2^-5 int8 → QLinearConv (2 maps, 3×3 pad 1, weights
    per-channel 2^-6, 2^-8, int32 bias) → y at 2^-2 int8 → DequantizeLinear."""
    g = _Graph()
    w = rng.integers(-128, 128, (2, 3, 3, 3))
    b = rng.integers(-5000, 5000, 2)
    f_w = np.array([6, 8])
    xs = g.const("xs", np.array(2.0 ** -5, np.float32))
    xz = g.const("xz", np.array(0, np.int8))
    ys = g.const("ys", np.array(2.0 ** -2, np.float32))
    yz = g.const("yz", np.array(0, np.int8))
    g.const("w", w.astype(np.int8))
    g.const("ws", (2.0 ** -f_w).astype(np.float32))
    g.const("wz", np.zeros(2, np.int8))
    g.const("b", b.astype(np.int32))
    g.nodes.append(helper.make_node("QuantizeLinear", ["x", xs, xz], ["xq"], name="quant"))
    g.nodes.append(helper.make_node("QLinearConv", ["xq", xs, xz, "w", "ws", "wz", ys, yz, "b"],
                                    ["yq"], name="qconv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    g.nodes.append(helper.make_node("DequantizeLinear", ["yq", ys, yz], ["y"], name="dequant"))
    g.save(path, [1, 3, 5, 5], "y", [1, 2, 5, 5])
    return Built(path, {"qconv": w}, {"qconv": b}, {"qconv": f_w}, {"in": 5, "out": 2})


def qdq_residual(path: Path, rng: np.random.Generator) -> Built:
    """x [1,2,5,5] at 2^-4 → conv1 (2 maps, 3×3 pad 1, 2^-6) → Q 2^-3 → conv2 (2 maps, 1×1,
    2^-5) → Q 2^-2; add = DQ(conv2) + DQ(conv1) → Q 2^-1 (conv1's output is read twice)."""
    g = _Graph()
    w1, w2 = rng.integers(-128, 128, (2, 2, 3, 3)), rng.integers(-128, 128, (2, 2, 1, 1))
    a = g.qdq("x", 4, "in")
    g.weight("w1", w1, np.array(2.0 ** -6))
    g.nodes.append(helper.make_node("Conv", [a, "w1"], ["c1"], name="conv1",
                                    kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    a = g.qdq("c1", 3, "c1")
    g.weight("w2", w2, np.array(2.0 ** -5))
    g.nodes.append(helper.make_node("Conv", [a, "w2"], ["c2"], name="conv2",
                                    kernel_shape=[1, 1]))
    b = g.qdq("c2", 2, "c2")
    g.nodes.append(helper.make_node("Add", [b, a], ["s"], name="add"))
    out = g.qdq("s", 1, "s")
    g.save(path, [1, 2, 5, 5], out, [1, 2, 5, 5])
    return Built(path, {"conv1": w1, "conv2": w2}, {}, {"conv1": np.array([6] * 2),
                                                        "conv2": np.array([5] * 2)},
                 {"in": 4, "c1": 3, "c2": 2, "add": 1})
