"""Build real ONNX and Caffe prototxt files for tests, from layer lists written out by hand.

The dimensions come from the seeds' tables (typed here), not from the zoo, so an import that
matches the zoo checks both. Shapes of ONNX files are left to ONNX shape inference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

# (op, args): conv(maps, kernel, stride, pad, groups), pool(mode, kernel, stride), lrn(size),
# relu, flatten, fc(outputs), softmax
LENET5 = [("conv", 32, 5, 1, 2, 1), ("relu",), ("pool", "max", 2, 2),
          ("conv", 64, 5, 1, 2, 1), ("relu",), ("pool", "max", 2, 2), ("flatten",),
          ("fc", 512), ("relu",), ("fc", 10), ("softmax",)]
LENET5_NAMES = ["conv1", "relu1", "pool1", "conv2", "relu2", "pool2", None, "fc3", "relu3", "fc4",
                "prob"]
ALEXNET = [("conv", 96, 11, 4, 0, 1), ("relu",), ("pool", "max", 3, 2), ("lrn", 5),
           ("conv", 256, 5, 1, 2, 2), ("relu",), ("pool", "max", 3, 2), ("lrn", 5),
           ("conv", 384, 3, 1, 1, 1), ("relu",), ("conv", 384, 3, 1, 1, 2), ("relu",),
           ("conv", 256, 3, 1, 1, 2), ("relu",), ("pool", "max", 3, 2), ("flatten",),
           ("fc", 4096), ("relu",), ("fc", 4096), ("relu",), ("fc", 102), ("softmax",)]
ALEXNET_NAMES = ["conv1", "relu1", "pool1", "norm1", "conv2", "relu2", "pool2", "norm2", "conv3",
                 "relu3", "conv4", "relu4", "conv5", "relu5", "pool5", None, "fc6", "relu6",
                 "fc7", "relu7", "fc8", "prob"]


def write_onnx(path: Path, ops: list[tuple], names: list[str | None], input_chw: tuple,
               batch: int = 1, real_weights: bool = False) -> Path:
    """An ONNX model; weights are initializers (real_weights) or typed graph inputs."""
    nodes, inputs, inits = [], [], []
    x = "data"
    inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, *input_chw]))
    channels, features = input_chw[0], None
    rng = np.random.default_rng(0)

    def weight(name: str, dims: list[int]) -> str:
        dims = [d if d > 0 else 1 for d in dims]
        if real_weights:
            data = rng.standard_normal(dims).astype(np.float32)
            inits.append(onnx.numpy_helper.from_array(data, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
        return name

    for op, name in zip(ops, names, strict=True):
        node_name = name or f"{op[0]}_{len(nodes)}"
        y = f"{node_name}_out"
        if op[0] == "conv":
            maps, k, s, p, g = op[1:]
            w = weight(f"{node_name}_w", [maps, channels // g, k, k])
            nodes.append(helper.make_node("Conv", [x, w], [y], name=node_name, kernel_shape=[k, k],
                                          strides=[s, s], pads=[p, p, p, p], group=g))
            channels = maps
        elif op[0] == "pool":
            kind = "MaxPool" if op[1] == "max" else "AveragePool"
            nodes.append(helper.make_node(kind, [x], [y], name=node_name, kernel_shape=[op[2]] * 2,
                                          strides=[op[3]] * 2))
        elif op[0] == "lrn":
            nodes.append(helper.make_node("LRN", [x], [y], name=node_name, size=op[1],
                                          alpha=1e-4, beta=0.75, bias=1.0))
        elif op[0] == "flatten":
            nodes.append(helper.make_node("Flatten", [x], [y], name=node_name, axis=1))
        elif op[0] == "fc":
            features = features or channels  # set below from the flatten shape
            w = weight(f"{node_name}_w", [op[1], -1])  # placeholder, fixed by caller's dims
            nodes.append(helper.make_node("Gemm", [x, w], [y], name=node_name, transB=1))
        else:
            kind = {"relu": "Relu", "softmax": "Softmax"}[op[0]]
            nodes.append(helper.make_node(kind, [x], [y], name=node_name))
        x = y
    graph = helper.make_graph(nodes, "test_net", inputs,
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    _fix_fc_weights(model)
    onnx.save(model, str(path))
    return path


def _fix_fc_weights(model: onnx.ModelProto) -> None:
    """Give each Gemm weight its real input width, from shape inference of what precedes it."""
    for node in model.graph.node:
        if node.op_type != "Gemm":
            continue
        inferred = onnx.shape_inference.infer_shapes(model)
        known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.input]}
        dims = [d.dim_value for d in known[node.input[0]].type.tensor_type.shape.dim]
        width = int(np.prod(dims[1:]))
        for value in model.graph.input:
            if value.name == node.input[1]:
                value.type.tensor_type.shape.dim[1].dim_value = width
        for i, init in enumerate(model.graph.initializer):
            if init.name == node.input[1]:
                out = init.dims[0]
                data = np.zeros((out, width), np.float32)
                model.graph.initializer[i].CopyFrom(onnx.numpy_helper.from_array(data, init.name))


def write_prototxt(path: Path, ops: list[tuple], names: list[str | None], input_chw: tuple,
                   batch: int = 1, legacy_input: bool = False) -> Path:
    """A Caffe deploy prototxt with in-place ReLUs, as Caffe model zoo files are written."""
    lines = ['name: "test_net"']
    if legacy_input:
        lines += ['input: "data"'] + [f"input_dim: {d}" for d in (batch, *input_chw)]
    else:
        dims = " ".join(f"dim: {d}" for d in (batch, *input_chw))
        lines += ['layer { name: "data" type: "Input" top: "data"',
                  f"  input_param {{ shape {{ {dims} }} }} }}"]
    blob = "data"
    for op, name in zip(ops, names, strict=True):
        if op[0] == "flatten":
            continue
        if op[0] in ("relu",):
            lines.append(f'layer {{ name: "{name}" type: "ReLU" bottom: "{blob}" top: "{blob}" }}')
            continue
        body = _caffe_body(op)
        lines.append(f'layer {{ name: "{name}" type: "{body[0]}" bottom: "{blob}" '
                     f'top: "{name}"  # {op}\n  {body[1]} }}')
        blob = name
    path.write_text("\n".join(lines) + "\n")
    return path


def _caffe_body(op: tuple) -> tuple[str, str]:
    """Caffe layer type and parameter block of one op."""
    if op[0] == "conv":
        return "Convolution", (f"convolution_param {{ num_output: {op[1]} kernel_size: {op[2]} "
                               f"stride: {op[3]} pad: {op[4]} group: {op[5]} }}")
    if op[0] == "pool":
        method = "MAX" if op[1] == "max" else "AVE"
        return "Pooling", f"pooling_param {{ pool: {method} kernel_size: {op[2]} stride: {op[3]} }}"
    if op[0] == "lrn":
        return "LRN", f"lrn_param {{ local_size: {op[1]} alpha: 0.0001 beta: 0.75 }}"
    if op[0] == "fc":
        return "InnerProduct", f"inner_product_param {{ num_output: {op[1]} }}"
    return "Softmax", ""


def save_graph(path: Path, nodes: list, x: list[int], y: list[int], inits: list,
               opset: int = 17) -> Path:
    """An ONNX file of `nodes` from data input "x" (shape x) to output "y" (shape y)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, x)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, y)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, str(path))
    return path
