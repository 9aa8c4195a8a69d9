"""The state of one ONNX import: layers so far, which layer produced each tensor, helpers the
operator converters share (`onnx_ops`, `onnx_maps`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import SpecError
from workbench.layers.onnx_graph import OnnxGraph
from workbench.layers.spec import Shape

Pads = tuple[tuple[int, int], tuple[int, int]]  # ((top, left), (bottom, right))


def attrs_of(node: Any) -> dict[str, Any]:
    """The node's attributes as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


@dataclass
class ImportContext:
    """Layers built so far and the bookkeeping of the tensors between them."""

    g: OnnxGraph
    layers: list[Any] = field(default_factory=list)
    producer: dict[str, str] = field(default_factory=dict)     # tensor -> layer name
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)  # layer -> producers
    tensor_of: dict[str, str] = field(default_factory=dict)    # layer -> its output tensor
    unbiased: set[str] = field(default_factory=set)
    consumers: dict[str, int] = field(default_factory=dict)
    pad_before: dict[str, tuple[str, Pads]] = field(default_factory=dict)  # folded Pad
    unknown: dict[str, list[str]] = field(default_factory=dict)  # op type -> node names
    notes: list[str] = field(default_factory=list)
    weight_owner: dict[tuple, str] = field(default_factory=dict)  # (weight, bias) -> layer
    shared: set[str] = field(default_factory=set)  # layers reusing an owner's weights

    def __post_init__(self) -> None:
        for node in self.g.nodes:
            for name in node.input:
                if name:
                    self.consumers[name] = self.consumers.get(name, 0) + 1
        for name in self.g.data_inputs:
            self.producer[name] = ""

    @property
    def batch(self) -> int:
        return self.g.batch

    def where(self, node: Any, name: str) -> str:
        return f"ONNX node {name!r} ({node.op_type})"

    def shape(self, tensor: str, node: Any, name: str) -> tuple[int, ...]:
        """The static shape of a tensor, or a one-line error naming the node."""
        shape = self.g.shapes.get(tensor)
        if shape is None:
            raise SpecError(f"{self.where(node, name)}: no static shape for tensor {tensor!r} "
                            "(shape inference could not derive it)")
        if any(d < 1 for d in shape):
            raise SpecError(f"{self.where(node, name)}: tensor {tensor!r} has an empty "
                            f"dimension {list(shape)}")
        return shape

    def maps(self, tensor: str, node: Any, name: str) -> Shape:
        """(C, H, W) of an NCHW tensor, (C, 1, L) of NCL, (F, 1, 1) of NF, (C·D·…, H, W) of
        N × C × D × … × H × W. A leading dimension
        other than the batch N (tokens, or N·heads) is a multiple of it: the tensor is then read
        as N × (its leading dim / N) × the rest, so that no element is lost."""
        shape = self.per_image(self.shape(tensor, node, name), tensor, node, name)
        if len(shape) == 4:
            return (shape[1], shape[2], shape[3])
        if len(shape) == 3:
            return (shape[1], 1, shape[2])
        if len(shape) == 2:
            return (shape[1], 1, 1)
        if len(shape) > 4:  # N × … × H × W: the dimensions between N and H·W are maps
            return (math.prod(shape[1:-2]), shape[-2], shape[-1])
        raise SpecError(f"{self.where(node, name)}: expected an N×C×H×W, N×C×L or N×F tensor, "
                        f"got shape {list(shape)} for {tensor!r}")

    def per_image(self, shape: tuple[int, ...], tensor: str, node: Any,
                  name: str) -> tuple[int, ...]:
        """The shape with a leading dimension that is not the batch N split into N × the rest
        (a [tokens, features] tensor at N = 1 is 1 × tokens × features)."""
        lead, n = shape[0] if shape else 1, self.batch
        if not shape or lead == n or lead < n:  # a tensor broadcast over the batch: as is
            return shape
        if lead % n:
            raise SpecError(f"{self.where(node, name)}: tensor {tensor!r} of shape "
                            f"{list(shape)} has a leading dimension {lead} that is not a "
                            f"multiple of the batch {n}")
        return (n, lead // n, *shape[1:])

    def data_inputs(self, node: Any) -> list[str]:
        """The node's inputs that carry data (not weights or constants)."""
        return [i for i in node.input if i and not self.g.is_constant(i)]

    def source(self, tensor: str) -> str:
        return self.producer.get(tensor, "")

    def layer(self, name: str) -> Any:
        return next(lay for lay in self.layers if lay.name == name)

    def unique(self, name: str) -> str:
        taken = {lay.name for lay in self.layers}
        if name not in taken:
            return name
        k = 2
        while f"{name}#{k}" in taken:
            k += 1
        return f"{name}#{k}"

    def add(self, layer: Any, node: Any, reads: list[str], biased: bool | None = None) -> None:
        """Append a layer made from `node`, reading tensors `reads`, producing its outputs."""
        name = self.unique(layer.name)
        if name != layer.name:
            layer = dataclasses.replace(layer, name=name)
        self.layers.append(layer)
        self.reads[name] = tuple(self.source(t) for t in reads)
        for out in node.output:
            if out:
                self.producer[out] = name
        self.tensor_of[name] = node.output[0] if node.output else ""
        if biased is False:
            self.unbiased.add(name)

    def uses_weight(self, weight: str, bias: str = "") -> None:
        """The layer just added reads these weight and bias tensors: shared when an earlier
        layer read both."""
        name, key = self.layers[-1].name, (weight, bias)
        if key in self.weight_owner:
            self.shared.add(name)
        else:
            self.weight_owner[key] = name

    def alias(self, node: Any, tensor: str) -> None:
        """The node's outputs are `tensor` for the layer graph (shape ops, folded ops)."""
        for out in node.output:
            if out and tensor in self.producer:
                self.producer[out] = self.producer[tensor]

    def foldable_into(self, tensor: str) -> Any | None:
        """The conv/fc layer that produced `tensor` when nothing else reads it (so a bias, a
        per-map scale or a BatchNormalization can be folded into its weights)."""
        name = self.producer.get(tensor)
        if not name or self.consumers.get(tensor, 0) != 1:
            return None
        layer = self.layer(name)
        if not getattr(layer, "tiled", False) or self.tensor_of.get(name) != tensor:
            return None
        return layer

    def fold(self, node: Any, layer: Any, bias: bool) -> None:
        """Fold the node into `layer` (its output is the layer's from now on)."""
        if bias:
            self.unbiased.discard(layer.name)
        for out in node.output:
            if out:
                self.producer[out] = layer.name
        self.tensor_of[layer.name] = node.output[0]

    def replace(self, old: Any, new: Any) -> None:
        self.layers[self.layers.index(old)] = new
