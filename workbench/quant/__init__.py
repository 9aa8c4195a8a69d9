"""Quantization for narrow accumulators: dynamic fixed point, bounds, search, bit-true inference."""

from workbench.quant.bounds import BOUNDS, available_bits, delta_bits
from workbench.quant.fixed import (
    FixedFormat,
    format_for,
    integer_length,
    quantize,
    requantize,
    saturate,
    to_fixed,
    to_float,
    wrap,
)
from workbench.quant.from_model import QuantizedModel, load_quantized
from workbench.quant.graph import Graph, graph_of
from workbench.quant.infer import Act, LayerFormat, accuracy, forward
from workbench.quant.overflow import overflow_table
from workbench.quant.search import (
    LayerRange,
    SearchOptions,
    SearchResult,
    accuracy_table,
    config_from_yaml,
    config_to_yaml,
    ranges,
    search,
)
from workbench.quant.weights import check_params, load_weights

__all__ = ["Act", "Graph", "LayerFormat", "LayerRange", "QuantizedModel", "SearchOptions",
           "SearchResult",
           "accuracy", "accuracy_table", "check_params", "graph_of", "load_quantized",
           "overflow_table",
           "config_from_yaml", "config_to_yaml", "forward", "load_weights", "ranges", "search",
           "BOUNDS", "FixedFormat", "available_bits", "delta_bits", "format_for",
           "integer_length", "quantize", "requantize", "saturate", "to_fixed", "to_float", "wrap"]
