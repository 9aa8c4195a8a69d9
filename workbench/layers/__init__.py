"""Layer specs, networks, the zoo and model importers."""

from workbench.layers.builder import LAYER_TYPES, build_layers, network_from_dict
from workbench.layers.network import Network
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    Layer,
    LRNLayer,
    MapLayer,
    PoolLayer,
    SoftmaxLayer,
    in_size,
    out_size,
)
from workbench.layers.stream_spec import (
    AffineLayer,
    GenericLayer,
    ResizeLayer,
    ScaleLayer,
    ShuffleLayer,
)
from workbench.layers.zoo import list_networks, load_network

__all__ = [
    "LAYER_TYPES", "ActivationLayer", "AffineLayer", "ConcatLayer", "ConvLayer", "EltwiseLayer",
    "GenericLayer", "LRNLayer", "Layer", "MapLayer", "Network", "PoolLayer", "ResizeLayer",
    "ScaleLayer", "ShuffleLayer", "SoftmaxLayer", "build_layers", "in_size", "list_networks",
    "load_network", "network_from_dict", "out_size",
]
