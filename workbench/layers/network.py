"""Network: an ordered, named sequence of layer specs with whole-network counts.

`inputs` (optional) records the graph: for each layer name, the names of the layers whose
outputs it reads, in order ("" for the network's input). Without it the network is a chain
(each layer reads the previous one). `unbiased` names the conv/fc layers that have no bias
term (a Caffe `bias_term: false`, an ONNX Conv without bias input). `shared` names the layers
that run an earlier layer's weights and bias again (RetinaNet's heads at each pyramid level):
they count once in `params` and `biases`; each layer still reads them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pandas as pd

from workbench.errors import SpecError, UnknownNameError
from workbench.layers.spec import ConvLayer, Layer


@dataclass(frozen=True)
class Network:
    """Layers in execution order; counts are for the batch each layer carries (On)."""

    name: str
    layers: tuple[Layer, ...]
    title: str = ""
    source: str = ""
    inputs: Mapping[str, tuple[str, ...]] | None = field(default=None, compare=False)
    unbiased: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()  # layers reusing an earlier layer's weights

    def __post_init__(self) -> None:
        if not self.layers:
            raise SpecError(f"network {self.name!r}: has no layers")
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise SpecError(f"network {self.name!r}: layer name {layer.name!r} used twice")
            if self.inputs is not None and any(
                    src and src not in seen for src in self.inputs.get(layer.name, ())):
                raise SpecError(f"network {self.name!r}: layer {layer.name!r} reads a layer "
                                "that does not come before it")
            seen.add(layer.name)
        object.__setattr__(self, "unbiased", frozenset(self.unbiased))
        object.__setattr__(self, "shared", frozenset(self.shared))

    def producers(self, name: str) -> tuple[str, ...]:
        """Names of the layers whose outputs layer `name` reads ("" for the network input)."""
        index = next((i for i, lay in enumerate(self.layers) if lay.name == name), None)
        if index is None:
            self[name]  # the one-line UnknownNameError
        if self.inputs is not None:
            return tuple(self.inputs.get(name, ("",)))
        return (self.layers[index - 1].name,) if index else ("",)

    def layer_biases(self, layer: Layer) -> int:
        """Bias terms of one layer (0 for an unbiased conv/fc layer)."""
        return 0 if layer.name in self.unbiased else layer.biases

    def __getitem__(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise UnknownNameError(f"network {self.name!r} has no layer {name!r}; layers: "
                               + ", ".join(layer.name for layer in self.layers))

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def batch(self) -> int:
        return self.layers[0].On

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    @property
    def params(self) -> int:
        """Weights of all layers (biases excluded, see `biases`), each shared set once."""
        return sum(layer.params for layer in self.layers if layer.name not in self.shared)

    @property
    def biases(self) -> int:
        return sum(self.layer_biases(layer) for layer in self.layers
                   if layer.name not in self.shared)

    def tiled_layers(self) -> list[ConvLayer]:
        """The conv and fully connected layers: the ones the tiling engine maps."""
        return [layer for layer in self.layers if layer.tiled]

    def with_batch(self, n: int) -> Network:
        """The same network processing n images at once (On = n in every layer)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SpecError(f"network {self.name!r}: batch must be a positive integer, got {n!r}")
        return Network(self.name, tuple(layer.with_batch(n) for layer in self.layers),
                       self.title, self.source, self.inputs, self.unbiased, self.shared)

    def summary(self, elem_bytes: int = 2) -> pd.DataFrame:
        """One row per layer: kind (an activation's function and parameters), shapes, MACs,
        params, footprints of inputs/weights/outputs (bytes)."""
        rows = []
        for layer in self.layers:
            c_in, h_in, w_in = layer.in_shape
            c_out, h_out, w_out = layer.out_shape
            rows.append({
                "layer": layer.name,
                "kind": layer.kind,
                "function": _function(layer),
                "input": f"{c_in}x{h_in}x{w_in}",
                "output": f"{c_out}x{h_out}x{w_out}",
                "kernel": f"{layer.Ky}x{layer.Kx}/{layer.Sy}" if hasattr(layer, "Kx") else "",
                "groups": getattr(layer, "groups", 1),
                "macs": layer.macs,
                "params": layer.params,
                "biases": self.layer_biases(layer),
                "input_bytes": c_in * h_in * w_in * layer.On * elem_bytes,
                "weight_bytes": layer.params * elem_bytes,
                "output_bytes": c_out * h_out * w_out * layer.On * elem_bytes,
            })
        return pd.DataFrame(rows)


def _function(layer) -> str:
    """An activation's function with its parameters as given (e.g. leaky_relu(α=0.1)); ""
    for other layers."""
    if layer.kind != "activation":
        return ""
    given = [f"{k}={v:g}" for k, v in (("α", layer.alpha), ("β", layer.beta)) if v is not None]
    return layer.func + (f"({', '.join(given)})" if given else "")
