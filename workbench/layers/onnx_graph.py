"""Read an ONNX file into static shapes and known constant values (`OnnxGraph`).

- Weight data is not needed: an initializer stored in a missing external-data file, or a
  weight declared only as a graph input with its type and shape (an architecture-only file)
  reads the same. A weight is any initializer, and any graph input that feeds a node's
  parameter slot (the weight, bias, scale or zero-point inputs of a Conv, Gemm, MatMul,
  BatchNormalization, QLinearConv, DequantizeLinear, ..., directly or through Identity, Cast,
  Transpose, Reshape, QuantizeLinear or DequantizeLinear).
- The data inputs are the graph inputs that are not weights; after the first, only those of
  its rank and batch dimension (a stripped bias or layer scale of another rank is a weight).
- The batch dimension of the data inputs may be symbolic (taken as 1); any other symbolic
  dimension of a data input is an error asking for a fixed input shape, which `input_shape`
  (C, H, W) gives the first data input before shape inference. An opset this onnx release
  does not know is refused.
- Shapes come from ONNX shape inference (with data propagation). Shape arithmetic that
  inference does not evaluate (Shape → Gather → Div → Slice, as torch exports a `chunk`) is
  evaluated here on integers and inference is run again. An operator inference knows nothing of
  (a custom domain) is given its first data input's shape so that inference goes on past it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import FileFormatError

WEIGHT_SLOTS = {"Conv": (1, 2), "ConvTranspose": (1, 2), "QLinearConv": tuple(range(1, 9)),
                "ConvInteger": (1, 2, 3), "Gemm": (1, 2), "MatMul": (1,),
                "QLinearMatMul": tuple(range(1, 8)), "MatMulInteger": (1, 2, 3),
                "BatchNormalization": (1, 2, 3, 4), "InstanceNormalization": (1, 2),
                "LayerNormalization": (1, 2), "GroupNormalization": (1, 2), "PRelu": (1,),
                "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2)}
PASS_BACK = {"Identity", "Cast", "Transpose", "Reshape", "QuantizeLinear", "DequantizeLinear",
             "Unsqueeze", "Squeeze", "Flatten"}
MAX_VALUE_ELEMS = 4096  # constants evaluated or kept as values (shape arithmetic)
ROUNDS = 4  # inference ↔ folding rounds, at least (more while shapes are still being added)


@dataclass
class OnnxGraph:
    """Static shapes (None for unknown) and small constant values of every tensor."""

    name: str
    nodes: list[Any]
    shapes: dict[str, tuple[int, ...] | None]
    dtypes: dict[str, int]
    values: dict[str, np.ndarray]
    weights: set[str]
    data_inputs: list[str]
    batch: int
    opset: int
    known_ops: frozenset[str] = field(default_factory=frozenset)
    cut: list[str] = field(default_factory=list)  # what `onnx_cut.cut_front` cut, one line

    def is_constant(self, tensor: str) -> bool:
        return tensor in self.weights or tensor in self.values


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _load(path: Path) -> Any:
    import onnx

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FileFormatError(f"ONNX file {str(path)!r}: cannot read ({exc.strerror})") from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # DecodeError, RecursionError, ...
        raise FileFormatError(f"ONNX file {str(path)!r}: cannot load (not an ONNX model: "
                              f"{_first_line(exc)})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise FileFormatError(f"ONNX file {str(path)!r}: the model has no graph nodes")
    return model


def _weights(graph: Any) -> set[str]:
    """Initializers and the graph inputs that feed parameter slots."""
    weights = {init.name for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    stack = [node.input[slot] for node in graph.node
             for slot in WEIGHT_SLOTS.get(node.op_type, ()) if slot < len(node.input)]
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if not name:
            continue
        if node is None:
            weights.add(name)
        elif node.op_type in PASS_BACK and node.input:
            stack.append(node.input[0])
    inputs = {v.name for v in graph.input}
    return weights & (inputs | {init.name for init in graph.initializer})


def _main_inputs(graph: Any, names: list[str]) -> tuple[list[str], set[str]]:
    """(data inputs, the other candidates, taken as weights): after the first, an input is data
    only with the first's rank and batch dimension; a stripped bias or layer scale (rank 1, or
    C×1×1) is not."""
    dims = {v.name: v.type.tensor_type.shape.dim for v in graph.input}

    def lead(name: str) -> tuple[int, str | int]:
        d = dims[name]
        return len(d), (d[0].dim_param or d[0].dim_value) if len(d) else 0

    keep = [n for n in names if n == names[0] or lead(n) == lead(names[0])]
    return keep, set(names) - set(keep)


def _set_input_shape(graph: Any, name: str, input_shape: tuple[int, ...], origin: str) -> None:
    """Give the data input `name` the fixed per-image shape `input_shape` (its batch
    dimension is left to `_fix_batch`)."""
    value = next(v for v in graph.input if v.name == name)
    tensor = value.type.tensor_type
    dims = tensor.shape.dim
    if tensor.HasField("shape") and len(dims) != len(input_shape) + 1:
        raise FileFormatError(f"{origin}: input {name!r} has rank {len(dims)}; input_shape "
                              f"{tuple(input_shape)} needs rank {len(input_shape) + 1} "
                              "(batch first)")
    if not tensor.HasField("shape") or not len(dims):
        tensor.shape.dim.add()  # the batch, left symbolic
        for _ in input_shape:
            tensor.shape.dim.add()
    for dim, size in zip(list(tensor.shape.dim)[1:], input_shape, strict=True):
        dim.Clear()
        dim.dim_value = size


def _fix_batch(graph: Any, data_inputs: list[str], origin: str) -> int:
    """Set a symbolic batch of the data inputs to 1; the batch (first dim of the first)."""
    batch = 1
    for value in graph.input:
        if value.name not in data_inputs:
            continue
        dims = value.type.tensor_type.shape.dim
        for axis, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if dim.HasField("dim_value") and dim.dim_value == 0:
                shape = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?"
                         for d in dims]
                raise FileFormatError(f"{origin}: input {value.name!r} has a zero dimension at "
                                      f"axis {axis} (shape {shape}): an empty tensor")
            if axis != 0:
                label = dim.dim_param or "?"
                raise FileFormatError(f"{origin}: input {value.name!r} has a dynamic dimension "
                                      f"{label!r} at axis {axis}; give a fixed input shape "
                                      "(load_network(..., input_shape=(C, H, W)))")
            dim.Clear()
            dim.dim_value = 1
        if value.name == data_inputs[0] and len(dims):
            batch = dims[0].dim_value
    return batch


def _check_acyclic(graph: Any, origin: str) -> None:
    """A one-line error naming a node on a cycle (ONNX graphs are acyclic)."""
    made_by = {o: i for i, n in enumerate(graph.node) for o in n.output if o}
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in range(len(graph.node)):
        stack = [(start, iter(graph.node[start].input))]
        while stack:
            index, inputs = stack[-1]
            state.setdefault(index, 1)
            nxt = next((made_by[t] for t in inputs if t in made_by), None)
            if nxt is None:
                state[index] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                name = graph.node[nxt].name or graph.node[nxt].output[0]
                raise FileFormatError(f"{origin}: the graph has a cycle through node {name!r} "
                                      f"({graph.node[nxt].op_type}); ONNX graphs must be "
                                      "acyclic")
            elif nxt not in state:
                stack.append((nxt, iter(graph.node[nxt].input)))


def _check_opset(model: Any, origin: str) -> int:
    """The default-domain opset, refused when this onnx release does not know it."""
    import onnx

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    newest = onnx.defs.onnx_opset_version()
    if model.opset_import and not 1 <= opset <= newest:
        raise FileFormatError(f"{origin}: unknown opset {opset} (this onnx {onnx.__version__} "
                              f"knows opsets 1..{newest})")
    return opset


def _static(value: Any) -> tuple[int, ...] | None:
    t = value.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None
        dims.append(d.dim_value)
    return tuple(dims)


def _infer(model: Any, origin: str) -> Any:
    from onnx import shape_inference

    try:
        return shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:  # InferenceError, ValidationError, ...
        raise FileFormatError(f"{origin}: shape inference failed ({_first_line(exc)})") from None


def _initial_values(graph: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    values = {}
    for init in graph.initializer:
        size = int(np.prod(init.dims)) if init.dims else 1
        if size > MAX_VALUE_ELEMS or init.data_location == 1:  # EXTERNAL: not read
            continue
        try:
            values[init.name] = np.asarray(numpy_helper.to_array(init))
        except Exception:  # noqa: BLE001 - malformed tensor data: treat as unknown
            continue
    return values


@functools.cache
def _known_ops() -> frozenset[str]:
    """Operators ONNX shape inference knows (standard and com.microsoft domains)."""
    import onnx

    return frozenset(s.name for s in onnx.defs.get_all_schemas_with_history()
                     if s.domain in ("", "ai.onnx", "com.microsoft"))


def read_onnx(path: str | Path,
              input_shape: tuple[int, ...] | None = None) -> tuple[Any, OnnxGraph]:
    """The shape-inferred model and its OnnxGraph (FileFormatError for unreadable files).
    input_shape: the per-image shape (C, H, W) given to the first data input before shape
    inference (for a model exported with dynamic sizes)."""
    from workbench.layers.onnx_fold import fold_constants, give_unknown_shapes

    path = Path(path)
    origin = f"ONNX file {str(path)!r}"
    model = _load(path)
    graph = model.graph
    _check_acyclic(graph, origin)
    cut = _cut_transform(model, input_shape, origin)
    if cut:
        input_shape = None  # the new input has it
    weights = _weights(graph)
    data_inputs = [v.name for v in graph.input if v.name not in weights]
    if not data_inputs:  # every input feeds a weight slot somewhere: take the first one
        data_inputs = [v.name for v in graph.input
                       if v.name not in {i.name for i in graph.initializer}][:1]
        weights -= set(data_inputs)
    if not data_inputs:
        raise FileFormatError(f"{origin}: the graph has no data input")
    data_inputs, extra = _main_inputs(graph, data_inputs)
    weights |= extra
    if input_shape is not None:
        _set_input_shape(graph, data_inputs[0], input_shape, origin)
    batch = _fix_batch(graph, data_inputs, origin)
    opset = _check_opset(model, origin)
    known = _known_ops()
    values = _initial_values(graph)
    # each round that changes the graph adds a shape or a constant: bounded by the nodes
    for _ in range(max(ROUNDS, len(graph.node) + 1)):
        model = _infer(model, origin)
        g = _collect(model, values, weights, data_inputs, batch, opset, known)
        changed = fold_constants(model, g) | give_unknown_shapes(model, g)
        if not changed:
            break
    model = _infer(model, origin)
    g = _collect(model, values, weights, data_inputs, batch, opset, known)
    g.cut = [cut] if cut else []
    return model, g


def _cut_transform(model: Any, input_shape: tuple[int, ...] | None, origin: str) -> str:
    """Cut a resizing input transform (`onnx_cut.cut_front`); its warning text or ""."""
    from workbench.layers.onnx_cut import cut_front

    graph = model.graph
    inits = {i.name for i in graph.initializer}
    data = next((v.name for v in graph.input if v.name not in inits), None)
    return (cut_front(model, data, input_shape, origin) or "") if data else ""


def _collect(model: Any, values: dict[str, np.ndarray], weights: set[str],
             data_inputs: list[str], batch: int, opset: int,
             known: frozenset[str]) -> OnnxGraph:
    graph = model.graph
    shapes: dict[str, tuple[int, ...] | None] = {}
    dtypes: dict[str, int] = {}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if shapes.get(value.name) is None:
            shapes[value.name] = _static(value)
            dtypes[value.name] = value.type.tensor_type.elem_type
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
        dtypes[init.name] = init.data_type
    for name, value in values.items():
        shapes.setdefault(name, tuple(value.shape))
    return OnnxGraph(model.graph.name, list(graph.node), shapes, dtypes, values, weights,
                     data_inputs, batch, opset, known)
