"""Cut what has no static plan out of a detection or segmentation graph, saying what was cut.

- The input transform: when the nodes between the data input and the first convolution
  resize the image (Resize, Upsample), read its size (Shape) or branch (If, Loop), as
  torchvision's detection transform does, they are cut, and the first convolution reads a new
  input of the per-image size `input_shape` (C, H, W): the size the backbone sees, which the
  transform would have made. Without `input_shape` that is a one-line error asking for it.
- Post-processing: control flow (If, Loop, Scan), data-dependent selection (NonZero, TopK,
  NonMaxSuppression, RoiAlign), the nodes that read the image sizes the cut transform made,
  every node that reads what was cut, and the comparisons and masks (Greater, Less, Equal,
  Not, And, Or, Where) and the nodes without a static shape that only cut nodes read (box
  decoding before NMS). The backbone and the heads stay.

Each connected cut sub-graph is one warning line (`CutWarning`): its node count, its operator
types and its first node.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from workbench.errors import FileFormatError

TRANSFORM_OPS = ("Resize", "Upsample", "Shape", "If", "Loop")
CUT_OPS = ("If", "Loop", "Scan", "NonZero", "TopK", "NonMaxSuppression", "RoiAlign")
# comparisons and masks: cut when everything that reads them is cut (they only select)
SELECT_OPS = ("Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual", "Not", "And", "Or",
              "Where")
CONVS = ("Conv", "QLinearConv", "ConvInteger")


class CutWarning(UserWarning):
    """A sub-graph cut from an ONNX model (one line per sub-graph)."""


def _describe(nodes: list[Any], where: str) -> str:
    ops = Counter(n.op_type for n in nodes if n.op_type != "Constant")
    shown = ", ".join(f"{op} ×{k}" if k > 1 else op for op, k in ops.most_common())
    head = next((n for n in nodes if n.op_type != "Constant"), nodes[0])
    first = head.name or head.output[0]
    return f"{where}: {len(nodes)} node(s) from {first!r} ({shown})"


def cut_front(model: Any, data_input: str, input_shape: tuple[int, ...] | None,
              origin: str) -> str | None:
    """Cut a resizing input transform (module docstring) from the model in place; the
    warning text, or None when there is none to cut."""
    from onnx import TensorProto, helper

    graph = model.graph
    first = next((n for n in graph.node if n.op_type in CONVS), None)
    if first is None or first.input[0] == data_input:
        return None
    made_by = {o: n for n in graph.node for o in n.output}
    inits = {i.name for i in graph.initializer}
    region, seen, stack = [], set(), [first.input[0]]
    while stack:
        tensor = stack.pop()
        if tensor in seen or tensor in inits or tensor not in made_by:
            continue
        seen.add(tensor)
        node = made_by[tensor]
        region.append(node)
        stack.extend(i for i in node.input if i)
    if not any(n.op_type in TRANSFORM_OPS for n in region):
        return None
    if input_shape is None:
        raise FileFormatError(f"{origin}: an input transform ({len(region)} nodes: Resize, "
                              f"Pad, Shape, …) makes the size node {first.name!r} reads; give "
                              "--input-shape C,H,W, the size the backbone sees")
    order = {id(n): i for i, n in enumerate(graph.node)}
    region.sort(key=lambda n: order[id(n)])
    text = _describe(region, "cut the input transform") + \
        f"; {first.name!r} reads a 1×{'×'.join(map(str, input_shape))} input"
    cut = {id(n) for n in region}
    kept = [n for n in graph.node if id(n) not in cut]
    del graph.node[:]
    graph.node.extend(kept)
    for value in [v for v in graph.input if v.name == data_input]:
        graph.input.remove(value)
    graph.input.insert(0, helper.make_tensor_value_info(first.input[0], TensorProto.FLOAT,
                                                        [1, *input_shape]))
    return text


def cut_back(nodes: list[Any], known: set[str],
             shapes: dict | None = None) -> tuple[set[int], list[str]]:
    """(indices of the nodes to cut, one warning text per connected cut sub-graph): the
    CUT_OPS nodes, the nodes reading a tensor that nothing makes any more (the transform's
    image sizes, once it is cut; `known`: graph inputs and initializers), and every node that
    reads what was cut."""
    cut: set[int] = set()
    cut_tensors: set[str] = set()
    made = known | {o for n in nodes for o in n.output if o}
    for i, node in enumerate(nodes):
        dangling = any(t and t not in made for t in node.input)
        if node.op_type in CUT_OPS or dangling or any(t in cut_tensors for t in node.input):
            cut.add(i)
            cut_tensors.update(o for o in node.output if o)
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for t in node.input:
            if t:
                readers.setdefault(t, []).append(i)
    shapes = shapes if shapes is not None else {}
    for i in range(len(nodes) - 1, -1, -1):  # selections, shapeless nodes only cut ones read
        node = nodes[i]
        read_by = [r for o in node.output if o for r in readers.get(o, [])]
        shapeless = any(o and o in shapes and shapes[o] is None for o in node.output)
        if (node.op_type in SELECT_OPS or shapeless) and read_by and all(
                r in cut for r in read_by):
            cut.add(i)
    parent = {i: i for i in cut}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    made_by = {o: i for i in cut for o in nodes[i].output if o}
    for i in cut:
        for t in nodes[i].input:
            if t in made_by:
                parent[root(i)] = root(made_by[t])
    groups: dict[int, list[int]] = {}
    for i in sorted(cut):
        groups.setdefault(root(i), []).append(i)
    texts = [_describe([nodes[i] for i in members], "cut data-dependent post-processing")
             for members in groups.values()]
    return cut, texts
