"""Reading the quantization of an ONNX model: scales and zero points of its tensors, integer
weight codes, and the float twin whose structure the importer reads.

The twin is the model with its quantization taken out: a DequantizeLinear of a constant becomes
that constant's real values, QuantizeLinear/DequantizeLinear of an activation become Identity,
QLinearConv/QLinearMatMul become Conv/MatMul with real weights and bias. Node names are kept,
so the importer names the layers as it would name those of the quantized model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import SpecError

THROUGH = ("Relu", "Clip")  # between a layer and its output QuantizeLinear
# between a DequantizeLinear and the layer it feeds: keep the values' scale
SCALE_KEEPING = ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Relu",
                 "MaxPool")
CODE_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(1 << 31), (1 << 31) - 1)}
DTYPES = {3: "int8", 2: "uint8", 6: "int32"}  # ONNX TensorProto element types
UINT8 = 2  # QuantizeLinear's element type when it has no zero point


@dataclass(frozen=True)
class Scale:
    """A tensor's quantization as the model states it: real = scale · (q − zero_point)."""

    scale: np.ndarray  # float64: one value, or one per output channel
    zero_point: np.ndarray  # int64, same shape
    dtype: str  # int8, uint8 or int32


def node_name(node: Any, index: int) -> str:
    """A node's layer name, as the importer gives it: its name, else its first output."""
    return node.name or (node.output[0] if node.output else f"node{index}")


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


@dataclass
class Reader:
    """The model's nodes indexed by tensor, and its constants (initializers, Constant nodes)."""

    model: Any
    inits: dict[str, Any] = field(init=False)
    producer: dict[str, Any] = field(init=False)
    consumers: dict[str, list[Any]] = field(init=False)

    def __post_init__(self) -> None:
        graph = self.model.graph
        self.inits = {t.name: t for t in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                tensor = type(node.attribute[0].t)()
                tensor.CopyFrom(node.attribute[0].t)
                tensor.name = node.output[0]
                self.inits[node.output[0]] = tensor
        self.producer = {o: n for n in graph.node for o in n.output if o}
        self.consumers = {}
        for n in graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)

    def array(self, name: str, what: str) -> np.ndarray:
        """A constant's values (int64 for integer types, float64 otherwise)."""
        from onnx import numpy_helper

        if name not in self.inits:
            raise SpecError(f"{what}: {name!r} is not a constant initializer")
        value = numpy_helper.to_array(self.inits[name])
        return value.astype(np.int64 if value.dtype.kind in "iu" else np.float64)

    def scale(self, scale: str, zp: str | None, dtype: int, what: str) -> Scale:
        """Scale and zero point from their constants; dtype is the codes' element type when
        there is no zero point to tell it."""
        s = self.array(scale, what).astype(np.float64)
        if zp:
            dtype = self.inits[zp].data_type if zp in self.inits else dtype
            z = self.array(zp, what)
        else:
            z = np.zeros_like(s, dtype=np.int64)
        if dtype not in DTYPES:
            raise SpecError(f"{what}: only int8, uint8 (and int32 bias) codes are read, got "
                            f"ONNX element type {dtype}")
        return Scale(s, z, DTYPES[dtype])

    def _q_scale(self, node: Any, dtype: int, what: str) -> Scale:
        zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
        return self.scale(node.input[1], zp, dtype, what)

    def codes(self, name: str, what: str) -> tuple[np.ndarray, Scale | None]:
        """A weight or bias: its integer codes and Scale (through a DequantizeLinear of a
        constant), or its float values and None."""
        node = self.producer.get(name)
        if node is not None and node.op_type == "DequantizeLinear" and node.input[0] in self.inits:
            scale = self._q_scale(node, self.inits[node.input[0]].data_type, what)
            return self.array(node.input[0], what), scale
        return self.array(name, what), None

    def dq_scale(self, tensor: str, what: str) -> Scale | None:
        """The Scale of the DequantizeLinear that produces an activation tensor (through
        operators that keep the scale: shape operators, Relu, MaxPool)."""
        node = self.producer.get(tensor)
        while node is not None and node.op_type in SCALE_KEEPING:
            node = self.producer.get(node.input[0])
        if node is None or node.op_type != "DequantizeLinear" or node.input[0] in self.inits:
            return None
        source = self.producer.get(node.input[0])
        dtype = UINT8
        if source is not None and source.op_type == "QuantizeLinear" and len(source.input) > 2:
            dtype = self.inits[source.input[2]].data_type if source.input[2] in self.inits \
                else UINT8
        return self._q_scale(node, dtype, what)

    def _is_bias(self, tensor: str) -> bool:
        node = self.producer.get(tensor)
        return tensor in self.inits or (node is not None and node.op_type == "DequantizeLinear"
                                        and node.input[0] in self.inits)

    def output_scale(self, tensor: str, what: str) -> tuple[Scale | None, str | None]:
        """The Scale of the QuantizeLinear that reads `tensor` (through Relu/Clip and one
        constant bias Add), and the name of that bias."""
        bias = None
        while True:
            readers = self.consumers.get(tensor, [])
            if len(readers) != 1:
                return None, bias
            node = readers[0]
            if node.op_type == "QuantizeLinear":
                return self._q_scale(node, UINT8, what), bias
            others = [i for i in node.input if i and i != tensor]
            if node.op_type == "Add" and bias is None and len(others) == 1 \
                    and self._is_bias(others[0]):
                bias = others[0]
            elif node.op_type not in THROUGH:
                return None, bias
            tensor = node.output[0]


def real(q: np.ndarray, scale: Scale, axis: int = 0) -> np.ndarray:
    """scale · (q − zero_point), per channel along `axis` when the scale is a vector."""
    s, z = np.asarray(scale.scale), np.asarray(scale.zero_point)
    if s.size == 1:  # one scale, whatever its shape ((1,) on a 1-D bias is per tensor)
        s, z = s.reshape(()), z.reshape(())
    if s.ndim:
        if not q.ndim or s.size != q.shape[axis % q.ndim]:
            raise SpecError(f"{s.size} scales for a tensor of shape {list(q.shape)} along "
                            f"axis {axis}")
        shape = [1] * q.ndim
        shape[axis % q.ndim] = -1
        s, z = s.reshape(shape), z.reshape(shape)
    return s * (q - z)


def float_twin(model: Any, reader: Reader) -> Any:
    """The model without its quantization (module docstring), for the structure importer."""
    import onnx
    from onnx import helper, numpy_helper

    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    graph = twin.graph
    del graph.value_info[:]  # the quantized tensors' integer types no longer hold
    for value in [*graph.input, *graph.output]:
        if value.type.tensor_type.elem_type in DTYPES:
            value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    nodes, inits = [], []

    def constant(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    for index, node in enumerate(model.graph.node):
        op, name = node.op_type, node_name(node, index)
        if op == "DequantizeLinear" and node.input[0] in reader.inits:
            q, scale = reader.codes(node.output[0], f"ONNX node {name!r}")
            constant(node.output[0], real(q, scale, _attrs(node).get("axis", 1)))
        elif op in ("QuantizeLinear", "DequantizeLinear"):
            nodes.append(helper.make_node("Identity", [node.input[0]], [node.output[0]],
                                          name=node.name))
        elif op in ("QLinearConv", "QLinearMatMul"):
            nodes.append(_qlinear_twin(node, name, reader, constant))
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(inits)
    return twin


def _qlinear_twin(node: Any, name: str, reader: Reader, constant) -> Any:
    """Conv or MatMul with real weights (and bias) in place of a QLinear node."""
    from onnx import helper

    where = f"ONNX node {name!r} ({node.op_type})"
    x, xs, xz, w, ws, wz = node.input[:6]
    x_scale = reader.scale(xs, xz, UINT8, where)
    w_scale = reader.scale(ws, wz, reader.inits[w].data_type if w in reader.inits else 3, where)
    weights = real(reader.array(w, where), w_scale, 0 if node.op_type == "QLinearConv" else 1)
    inputs = [x, constant(f"{name}::weight", weights)]
    if node.op_type == "QLinearMatMul":
        return helper.make_node("MatMul", inputs, [node.output[0]], name=name)
    if len(node.input) > 8 and node.input[8]:
        bias = reader.array(node.input[8], where) * x_scale.scale * w_scale.scale
        inputs.append(constant(f"{name}::bias", bias))
    return helper.make_node("Conv", inputs, [node.output[0]], name=name, **_attrs(node))
