"""Operator patterns that exporters write for one layer: the exact GELU of torch's exporters,
x·½·(1 + erf(x/√2)), as Div (or Mul by 1/√2) → Erf → Add 1 → Mul by x → Mul by ½, with the
½ taken first (Mul(x, ½) · (1 + erf)) or last, in any operand order; in a QDQ model with a
QuantizeLinear → DequantizeLinear pair between any two of its nodes; in a QOperator model
with onnxruntime's QLinearAdd and QLinearMul for Add and Mul. Every intermediate
tensor must have no reader outside the pattern, so that the pattern is one activation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.layers.onnx_graph import OnnxGraph

TOL = 1e-3  # relative, on the constants √2, 1/√2, 1 and ½


@dataclass(frozen=True)
class Pattern:
    """One matched pattern: its data input, the index of its last node, all its nodes."""

    x: str
    last: int
    members: frozenset[int]


QLINEAR = {"QLinearAdd": "Add", "QLinearMul": "Mul"}  # onnxruntime's: A at 0, B at 3


def _op(node: Any) -> str:
    """The op a node computes: QLinearAdd/Mul (com.microsoft) as Add/Mul."""
    return QLINEAR.get(node.op_type, node.op_type) if node.domain == "com.microsoft" \
        else node.op_type


def _operands(node: Any) -> list[str]:
    if node.domain == "com.microsoft" and node.op_type in QLINEAR:
        return [node.input[0], node.input[3]] if len(node.input) > 3 else []
    return [i for i in node.input if i]


def _const(gr: _Graph, tensor: str, want: float, reader: Any = None) -> bool:
    """Whether `tensor` is the one-element constant `want`: a value, a DequantizeLinear of
    constant codes (a QDQ model's quantized constant), or constant codes that `reader`, a
    QLinearAdd/Mul, reads with its scale and zero point."""
    value = gr.g.values.get(tensor)
    if value is not None and reader is not None and reader.op_type in QLINEAR and \
            reader.domain == "com.microsoft":
        slot = 0 if reader.input[0] == tensor else 3
        scale, zero = (gr.g.values.get(reader.input[slot + i]) for i in (1, 2))
        if scale is None or zero is None or scale.size != 1 or zero.size != 1:
            return False
        value = (np.asarray(value, np.float64) - float(zero.ravel()[0])) * float(
            scale.ravel()[0])
    dq = gr.node(gr.made_by.get(tensor))
    if value is None and dq is not None and dq.op_type == "DequantizeLinear":
        ins = [gr.g.values.get(i) for i in dq.input[:3] if i]
        if len(ins) >= 2 and all(v is not None and v.size == 1 for v in ins):
            zero = float(ins[2].ravel()[0]) if len(ins) > 2 else 0.0
            value = (np.asarray(ins[0], np.float64) - zero) * float(ins[1].ravel()[0])
    return value is not None and value.size == 1 and math.isclose(
        float(value.ravel()[0]), want, rel_tol=TOL)


def _other(node: Any, tensor: str) -> str | None:
    """The other operand of a binary node with `tensor` as one operand."""
    ins = _operands(node)
    if len(ins) != 2 or tensor not in ins:
        return None
    return ins[1] if ins[0] == tensor else ins[0]


class _Graph:
    def __init__(self, g: OnnxGraph) -> None:
        self.g = g
        self.made_by = {o: i for i, n in enumerate(g.nodes) for o in n.output if o}
        self.readers: dict[str, list[int]] = {}
        for i, n in enumerate(g.nodes):
            for t in n.input:
                if t:
                    self.readers.setdefault(t, []).append(i)

    def only_reader(self, tensor: str) -> int | None:
        found = self.readers.get(tensor, [])
        return found[0] if len(found) == 1 else None

    def node(self, index: int | None) -> Any:
        return None if index is None else self.g.nodes[index]


def _next(gr: _Graph, tensor: str) -> tuple[int, str, set[int]] | None:
    """(index of the only reader of `tensor`, the name it reads it by, the nodes passed): a
    QuantizeLinear → DequantizeLinear pair in between (a QDQ model) is passed through, and
    a QuantizeLinear whose codes a QLinearAdd/Mul reads (a QOperator model)."""
    passed: set[int] = set()
    while True:
        index = gr.only_reader(tensor)
        node = gr.node(index)
        if node is None:
            return None
        if node.op_type != "QuantizeLinear":
            return index, tensor, passed
        dq_i = gr.only_reader(node.output[0])
        dq = gr.node(dq_i)
        if dq is not None and _op(dq) in ("Add", "Mul") and dq.op_type in QLINEAR:
            return dq_i, node.output[0], passed | {index}
        if dq is None or dq.op_type != "DequantizeLinear":
            return None
        passed |= {index, dq_i}
        tensor = dq.output[0]


def _source(gr: _Graph, tensor: str) -> tuple[str, set[int]]:
    """(the tensor that `tensor` is, before QuantizeLinear → DequantizeLinear pairs whose
    outputs have no other reader, the nodes passed)."""
    passed: set[int] = set()
    while gr.only_reader(tensor) is not None:
        dq_i = gr.made_by.get(tensor)
        dq = gr.node(dq_i)
        if dq is None or dq.op_type != "DequantizeLinear" or not dq.input:
            break
        q_i = gr.made_by.get(dq.input[0])
        q = gr.node(q_i)
        if q is None or q.op_type != "QuantizeLinear" or gr.only_reader(dq.input[0]) is None:
            break
        passed |= {dq_i, q_i}
        tensor = q.input[0]
    return tensor, passed


def _scaled_input(gr: _Graph, erf: Any) -> tuple[str, int, set[int]] | None:
    """(x, index of the Div/Mul node, Q/DQ nodes passed) for erf's input x/√2 or x·(1/√2)."""
    if gr.only_reader(erf.input[0]) is None:
        return None
    tensor, passed = _source(gr, erf.input[0])
    index = gr.made_by.get(tensor)
    node = gr.node(index)
    if node is None or gr.only_reader(tensor) is None:
        return None
    if node.op_type == "Div" and len(node.input) == 2 and _const(gr, node.input[1],
                                                                  math.sqrt(2)):
        return node.input[0], index, passed
    if node.op_type == "Mul":
        for x, c in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
            if _const(gr, c, 1 / math.sqrt(2)):
                return x, index, passed
    return None


def _then(gr: _Graph, tensor: str, op: str, members: set[int]) -> tuple[Any, int, str] | None:
    """The only reader of `tensor` (through Q/DQ pairs) if it is an `op` node: (node, index,
    the name it reads `tensor` by); its index and the pairs passed join `members`."""
    step = _next(gr, tensor)
    if step is None or _op(gr.node(step[0])) != op:
        return None
    members |= {step[0], *step[2]}
    return gr.node(step[0]), step[0], step[1]


def _same(gr: _Graph, y: str | None, x: str) -> bool:
    """y is x, or the codes that x dequantizes (a QLinearMul reads x's codes)."""
    dq = gr.node(gr.made_by.get(x))
    return y is not None and (y == x or (dq is not None and dq.op_type == "DequantizeLinear"
                                         and dq.input[0] == y))


def _match(gr: _Graph, i: int) -> Pattern | None:
    erf = gr.g.nodes[i]
    start = _scaled_input(gr, erf)
    if start is None:
        return None
    x, first, passed = start
    members = {first, i, *passed}
    found = _then(gr, erf.output[0], "Add", members)
    if found is None or not _const(gr, _other(found[0], found[2]) or "", 1.0, found[0]):
        return None
    found = _then(gr, found[0].output[0], "Mul", members)
    if found is None:
        return None
    m1, m1_i, read = found
    y = _other(m1, read)
    if _same(gr, y, x):  # x·(1 + erf) then ·½
        found = _then(gr, m1.output[0], "Mul", members)
        if found is None or not _const(gr, _other(found[0], found[2]) or "", 0.5, found[0]):
            return None
        return Pattern(x, found[1], frozenset(members))
    if y is not None and _const(gr, y, 0.5, m1):  # (1 + erf)·½ then ·x
        found = _then(gr, m1.output[0], "Mul", members)
        if found is None or not _same(gr, _other(found[0], found[2]), x):
            return None
        return Pattern(x, found[1], frozenset(members))
    y, passed = _source(gr, y) if y else ("", set())
    half_i = gr.made_by.get(y) if y else None
    half = gr.node(half_i)
    if half is None or half.op_type != "Mul" or gr.only_reader(y) is None or \
            not _const(gr, _other(half, x) or "", 0.5):  # (x·½)·(1 + erf)
        return None
    return Pattern(x, m1_i, frozenset(members | passed | {half_i}))


def find_gelu(g: OnnxGraph) -> list[Pattern]:
    """Every GELU pattern of the graph (disjoint)."""
    gr = _Graph(g)
    found = []
    for i, node in enumerate(g.nodes):
        if node.op_type == "Erf" and node.input and node.output:
            pattern = _match(gr, i)
            if pattern is not None:
                found.append(pattern)
    return found
