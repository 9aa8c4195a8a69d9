"""Trained weights for a network: .npz files (data/weights) or ONNX initializers, checked
against the network's shapes. Keys are "<layer>.weight" (conv: Oc×Kc×Ky×Kx, fc: Oc×Kc) and
"<layer>.bias" (Oc)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.errors import FileFormatError, SpecError
from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer
from workbench.paths import data_dir

Params = dict[str, tuple[np.ndarray, np.ndarray]]


def weight_shape(layer: ConvLayer) -> tuple[int, ...]:
    if layer.kind == "fc":
        return (layer.Oc, layer.Kc)
    width = max(len(r) for r in layer.connections) if layer.connections else layer.Kc
    return (layer.Oc, width, layer.Ky, layer.Kx)


def check_params(net: Network, params: Params) -> Params:
    """Every conv/fc layer has weights and bias of the right shapes (errors name both)."""
    for layer in net.tiled_layers():
        if layer.name not in params:
            raise SpecError(f"weights: no weights for layer {layer.name!r}")
        w, b = params[layer.name]
        if tuple(w.shape) != weight_shape(layer):
            raise SpecError(f"weights: layer {layer.name!r} expects weight shape "
                            f"{weight_shape(layer)}, file has {tuple(w.shape)}")
        if tuple(b.shape) != (layer.Oc,):
            raise SpecError(f"weights: layer {layer.name!r} expects bias shape ({layer.Oc},), "
                            f"file has {tuple(b.shape)}")
    return params


def load_npz(path: str | Path, net: Network) -> Params:
    path = Path(path)
    if not path.exists() and not path.is_absolute():
        shipped = data_dir() / "weights" / path.name
        path = shipped if shipped.exists() else path
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise FileFormatError(f"weights file {str(path)!r}: cannot read ({exc})") from None
    params = {}
    for layer in net.tiled_layers():
        w, b = arrays.get(f"{layer.name}.weight"), arrays.get(f"{layer.name}.bias")
        if w is not None:
            params[layer.name] = (w.astype(np.float32), (b if b is not None else np.zeros(
                layer.Oc)).astype(np.float32))
    return check_params(net, params)


def load_onnx(path: str | Path, net: Network) -> Params:
    """Weights from the initializers of the Conv/Gemm/MatMul nodes named like the layers."""
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # noqa: BLE001 - onnx raises several unrelated types
        raise FileFormatError(f"ONNX file {str(path)!r}: cannot load ({exc})") from None
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    params = {}
    for index, node in enumerate(model.graph.node):
        name = node.name or (node.output[0] if node.output else f"node{index}")
        if node.op_type not in ("Conv", "Gemm", "MatMul") or node.input[1] not in inits:
            continue
        w = inits[node.input[1]]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "MatMul" or (node.op_type == "Gemm" and not attrs.get("transB", 0)):
            w = w.T
        b = inits.get(node.input[2]) if len(node.input) > 2 else None
        params[name] = (w.astype(np.float32),
                        (b if b is not None else np.zeros(w.shape[0])).astype(np.float32))
    return check_params(net, params)


def load_weights(path: str | Path, net: Network) -> Params:
    """Weights from a .npz (or a name under data/weights) or an .onnx file."""
    return load_onnx(path, net) if str(path).lower().endswith(".onnx") else load_npz(path, net)
