"""Operator patterns that exporters write for one layer: the exact GELU of torch's exporters,
x·½·(1 + erf(x/√2)), as Div (or Mul by 1/√2) → Erf → Add 1 → Mul by x → Mul by ½, with the
½ taken first (Mul(x, ½) · (1 + erf)) or last, in any operand order. Every intermediate
tensor must have no reader outside the pattern, so that the pattern is one activation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workbench.layers.onnx_graph import OnnxGraph

TOL = 1e-3  # relative, on the constants √2, 1/√2, 1 and ½


@dataclass(frozen=True)
class Pattern:
    """One matched pattern: its data input, the index of its last node, all its nodes."""

    x: str
    last: int
    members: frozenset[int]


def _const(g: OnnxGraph, tensor: str, want: float) -> bool:
    value = g.values.get(tensor)
    return value is not None and value.size == 1 and math.isclose(
        float(value.ravel()[0]), want, rel_tol=TOL)


def _other(node: Any, tensor: str) -> str | None:
    """The other operand of a binary node with `tensor` as one operand."""
    ins = [i for i in node.input if i]
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


def _scaled_input(gr: _Graph, erf: Any) -> tuple[str, int] | None:
    """(x, index of the Div/Mul node) for erf's input x/√2 or x·(1/√2)."""
    index = gr.made_by.get(erf.input[0])
    node = gr.node(index)
    if node is None or gr.only_reader(erf.input[0]) is None:
        return None
    if node.op_type == "Div" and len(node.input) == 2 and _const(gr.g, node.input[1],
                                                                  math.sqrt(2)):
        return node.input[0], index
    if node.op_type == "Mul":
        for x, c in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
            if _const(gr.g, c, 1 / math.sqrt(2)):
                return x, index
    return None


def _match(gr: _Graph, i: int) -> Pattern | None:
    erf = gr.g.nodes[i]
    start = _scaled_input(gr, erf)
    if start is None:
        return None
    x, first = start
    add_i = gr.only_reader(erf.output[0])
    add = gr.node(add_i)
    if add is None or add.op_type != "Add" or not _const(gr.g, _other(add, erf.output[0]) or
                                                         "", 1.0):
        return None
    m1_i = gr.only_reader(add.output[0])
    m1 = gr.node(m1_i)
    if m1 is None or m1.op_type != "Mul":
        return None
    y = _other(m1, add.output[0])
    members = {first, i, add_i, m1_i}
    if y == x:  # x·(1 + erf) then ·½
        m2_i = gr.only_reader(m1.output[0])
        m2 = gr.node(m2_i)
        if m2 is None or m2.op_type != "Mul" or not _const(gr.g, _other(m2, m1.output[0]) or
                                                           "", 0.5):
            return None
        return Pattern(x, m2_i, frozenset(members | {m2_i}))
    if y is not None and _const(gr.g, y, 0.5):  # (1 + erf)·½ then ·x
        m2_i = gr.only_reader(m1.output[0])
        m2 = gr.node(m2_i)
        if m2 is None or m2.op_type != "Mul" or _other(m2, m1.output[0]) != x:
            return None
        return Pattern(x, m2_i, frozenset(members | {m2_i}))
    half_i = gr.made_by.get(y) if y else None
    half = gr.node(half_i)
    if half is None or half.op_type != "Mul" or gr.only_reader(y) is None or \
            not _const(gr.g, _other(half, x) or "", 0.5):  # (x·½)·(1 + erf)
        return None
    return Pattern(x, m1_i, frozenset(members | {half_i}))


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
