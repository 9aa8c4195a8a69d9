"""Trained weights for a network: .npz files (data/weights) or ONNX initializers, checked
against the network's shapes. Keys are "<layer>.weight" (conv: Oc×Kc×Ky×Kx, fc: Oc×Kc) and
"<layer>.bias" (Oc)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from workbench import resources
from workbench.errors import FileFormatError, SpecError, WorkbenchError
from workbench.layers.network import Network
from workbench.layers.onnx_external import load_model
from workbench.layers.onnx_names import short_name
from workbench.layers.spec import ConvLayer
from workbench.numbers import fmt_bytes
from workbench.paths import data_file
from workbench.quant.maps import prelu_slopes
from workbench.resources import cut
from workbench.schemas.arrays import validate_data, validate_weights

Params = dict[str, tuple[np.ndarray, np.ndarray]]


def weight_shape(layer: ConvLayer) -> tuple[int, ...]:
    if layer.kind == "fc":
        return (layer.Oc, layer.Kc)
    width = max(len(r) for r in layer.connections) if layer.connections else layer.Kc
    return (layer.Oc, width, layer.Ky, layer.Kx)


def check_params(net: Network, params: Params, origin: str = "weights") -> Params:
    """Every conv/fc layer has weights and bias of the right shapes (one-line errors naming
    `origin`, the array and both shapes)."""
    for layer in net.tiled_layers():
        if layer.name not in params:
            raise SpecError(f"{origin}: {layer.name}.weight: no weights for layer "
                            f"{layer.name!r}")
        w, b = params[layer.name]
        if tuple(w.shape) != weight_shape(layer):
            raise SpecError(f"{origin}: {layer.name}.weight: layer {layer.name!r} expects "
                            f"weight shape {weight_shape(layer)}, file has {tuple(w.shape)}")
        if tuple(b.shape) != (layer.Oc,):
            raise SpecError(f"{origin}: {layer.name}.bias: layer {layer.name!r} expects bias "
                            f"shape ({layer.Oc},), file has {tuple(b.shape)}")
    for layer in _prelus(net):
        slopes = params.get(layer.name)
        if slopes is None:
            raise SpecError(f"{origin}: {layer.name}.slope: no slopes for PReLU layer "
                            f"{layer.name!r}")
        if not np.all(np.isfinite(slopes)):
            raise SpecError(f"{origin}: {layer.name}.slope: holds NaN or infinity")
        try:  # as ONNX broadcasts them: against N×C×H×W, or N×F after a flatten (H = W = 1)
            prelu_slopes(layer, slopes, False)
        except SpecError as exc:
            try:
                if layer.H * layer.W > 1:
                    raise
                prelu_slopes(layer, slopes, True)
            except SpecError:
                raise SpecError(f"{origin}: {exc}") from None
        if layer.slopes and np.size(slopes) != layer.slopes:  # as the network file says
            raise SpecError(f"{origin}: {layer.name}.slope: {np.size(slopes)} values, but layer "
                            f"{layer.name!r} has slopes: {layer.slopes}")
    return params


def _prelus(net: Network) -> list:
    return [lay for lay in net.layers if lay.kind == "activation" and lay.func == "prelu"]


MAX_NPZ_BYTES = 4 << 30  # arrays of one .npz, uncompressed
DECODE_FACTOR = 2  # peak bytes per array byte while numpy reads a compressed member
Shapes = dict[str, tuple[tuple[int, ...], str]]  # key → (shape, who expects it)


def _header(archive: np.lib.npyio.NpzFile, member: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of one .npy member, from its header: nothing is decompressed beyond it."""
    fmt = np.lib.format
    with archive.zip.open(member) as f:
        version = fmt.read_magic(f)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _fortran, dtype = read(f)
    return tuple(int(n) for n in shape), dtype


def _check_headers(archive: np.lib.npyio.NpzFile, origin: str, expect: Shapes) -> None:
    """Shapes, dtypes and the decompressed size of every array, from the npy headers, before
    any array is read: a pickled array, a shape other than `expect` says (SpecError), or
    arrays beyond MAX_NPZ_BYTES or the memory budget (`resources`) are one line."""
    total = 0
    for member in archive.zip.namelist():
        key = member.removesuffix(".npy")
        shape, dtype = _header(archive, member)
        if dtype.hasobject:
            raise FileFormatError(f"{origin}: array {cut(key)} holds Python objects "
                                  f"(dtype {dtype}); only numeric arrays are read")
        if key in expect and dtype.kind in "iuf" and shape != expect[key][0]:
            wanted, who = expect[key]
            raise SpecError(f"{origin}: {key}: {who} expects {key.rsplit('.', 1)[-1]} shape "
                            f"{wanted}, file has {cut(shape)}")
        total += math.prod(shape) * dtype.itemsize
    if total > MAX_NPZ_BYTES:
        raise FileFormatError(f"{origin}: arrays of {fmt_bytes(total)} decompressed, beyond "
                              f"the {fmt_bytes(MAX_NPZ_BYTES)} limit")
    resources.check(f"{origin} ({fmt_bytes(total)} of arrays decompressed)",
                    total * DECODE_FACTOR)


def read_npz(path: str | Path, what: str, expect: Shapes | None = None) -> dict[str, np.ndarray]:
    """Every array of an .npz file; any problem (missing, not an .npz archive, truncated,
    pickled objects, a shape other than `expect` gives, arrays too large for the limit or the
    memory budget) is one FileFormatError line, the last three found in the npy headers
    before anything is decompressed."""
    origin = f"{what} file {str(path)!r}"
    try:
        archive = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - OSError, BadZipFile, ValueError, EOFError, ...
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else (
            cut(str(exc).splitlines()[0], 120) if str(exc) else type(exc).__name__)
        raise FileFormatError(f"{origin}: cannot read as .npz ({reason})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise FileFormatError(f"{origin}: a single .npy array, not an .npz archive of named "
                              "arrays")
    with archive:
        try:
            _check_headers(archive, origin, expect or {})
            return {key: archive[key] for key in archive.files}
        except WorkbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged member: zlib, zipfile, numpy
            raise FileFormatError(f"{origin}: cannot read as .npz ({type(exc).__name__}: "
                                  f"{cut(str(exc).splitlines()[0], 100) if str(exc) else ''})") \
                from None


def _shipped(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists() and not path.is_absolute():
        shipped = data_file("weights", path.name)
        path = shipped if shipped.exists() else path
    return path


def load_npz(path: str | Path, net: Network) -> Params:
    """Weights of `net` from an .npz ("<layer>.weight", "<layer>.bias"), or a name under
    data/weights; arrays checked numeric and finite (schemas.arrays), shapes against the
    network."""
    path = _shipped(path)
    origin = f"weights file {str(path)!r}"
    expect = {f"{layer.name}.{part}": (shape, f"layer {layer.name!r}")
              for layer in net.tiled_layers()
              for part, shape in (("weight", weight_shape(layer)), ("bias", (layer.Oc,)))}
    arrays = validate_weights(read_npz(path, "weights", expect), origin)
    params = {}
    for layer in net.tiled_layers():
        w, b = arrays.get(f"{layer.name}.weight"), arrays.get(f"{layer.name}.bias")
        if w is not None:
            params[layer.name] = (w.astype(np.float32), (b if b is not None else np.zeros(
                layer.Oc)).astype(np.float32))
    prelus = {lay.name for lay in _prelus(net)}
    for key in arrays:
        if key.endswith(".slope") and key[:-len(".slope")] not in prelus:
            raise SpecError(f"{origin}: {key}: only prelu layers take slopes; prelu layers: "
                            + (", ".join(sorted(prelus)) or "none"))
    for layer in _prelus(net):  # "<layer>.slope", as ONNX's PRelu slope broadcasts
        if f"{layer.name}.slope" in arrays:
            params[layer.name] = arrays[f"{layer.name}.slope"].astype(np.float32)
    return check_params(net, params, origin)


def load_data_npz(path: str | Path, net: Network,
                  calibration_only: bool = False) -> dict[str, np.ndarray | None]:
    """Calibration and test data (`calib_x`, `calib_y`, `test_x`, `test_y`) for `net` from an
    .npz: float N×C×H×W images of the network's input shape, integer labels one per image
    (calibration_only: calib_x, and calib_y when present)."""
    origin = f"data file {str(path)!r}"
    shape = tuple(net.layers[0].in_shape) if len(net) else None
    return validate_data(read_npz(path, "data"), origin, shape, calibration_only)


FOLDED = ("BatchNormalization", "Add", "Sub", "Mul", "Div")


def _fold(model, inits: dict[str, np.ndarray], tensor: str, w: np.ndarray,
          b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold into (w, b) what the importer folds into a conv/fc layer: the BatchNormalization
    and per-map constant Add/Sub/Mul/Div that alone read its output, one after another."""
    import onnx

    readers: dict[str, list] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    per_map = (w.shape[0],)
    while len(readers.get(tensor, [])) == 1 and readers[tensor][0].op_type in FOLDED:
        node = readers[tensor][0]
        consts = [i for i in node.input if i and i != tensor]
        if not consts or any(c not in inits for c in consts):
            break
        values = [inits[c].astype(np.float64) for c in consts]
        if node.op_type == "BatchNormalization":
            gamma, beta, mean, var = values
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            scale = gamma / np.sqrt(var + attrs.get("epsilon", 1e-5))
            w, b = w * scale.reshape(-1, *[1] * (w.ndim - 1)), (b - mean) * scale + beta
        else:
            if len(values) != 1 or values[0].size not in (1, w.shape[0]):
                break
            c = np.broadcast_to(values[0].reshape(-1), per_map)
            first = node.input[0] != tensor  # c − y or c / y
            if node.op_type == "Add":
                b = b + c
            elif node.op_type == "Sub":
                w, b = (-w, c - b) if first else (w, b - c)
            elif node.op_type == "Mul" or not first:
                factor = c if node.op_type == "Mul" else 1 / c
                w, b = w * factor.reshape(-1, *[1] * (w.ndim - 1)), b * factor
            else:
                break  # c / y is not linear in y
        tensor = node.output[0]
    return w, b


def load_onnx(path: str | Path, net: Network) -> Params:
    """Weights from the initializers of the Conv/Gemm/MatMul nodes named like the layers, with
    the BatchNormalization and per-map constants the importer folds into them."""
    import onnx
    from onnx import numpy_helper

    model = load_model(path)  # external data under the project's own guard
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            inits[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    params = {}
    for index, node in enumerate(model.graph.node):
        name = node.name or (node.output[0] if node.output else f"node{index}")
        if node.op_type in ("QLinearConv", "QLinearMatMul", "DequantizeLinear") \
                or node.op_type.endswith("Integer"):
            raise SpecError(f"weights: ONNX file {str(path)!r} is a quantized model "
                            f"({node.op_type}); read it with `workbench quantize --from-model` "
                            "(quant.load_quantized)")
        if node.op_type == "PRelu" and len(node.input) > 1 and node.input[1] in inits:
            params[name] = inits[node.input[1]].astype(np.float32)  # its ONNX shape
            params[short_name(name)] = params[name]
            continue
        if node.op_type not in ("Conv", "Gemm", "MatMul") or node.input[1] not in inits:
            continue
        w = inits[node.input[1]].astype(np.float64)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "MatMul" or (node.op_type == "Gemm" and not attrs.get("transB", 0)):
            w = w.T
        b = inits.get(node.input[2]) if len(node.input) > 2 else None
        b = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
        w, b = _fold(model, inits, node.output[0], w, b)
        params[name] = (w.astype(np.float32), b.astype(np.float32))
        params[short_name(name)] = params[name]  # the importer's readable name
    return check_params(net, params, f"weights of ONNX file {str(path)!r}")


def load_weights(path: str | Path, net: Network) -> Params:
    """Weights from a .npz (or a name under data/weights) or an .onnx file."""
    return load_onnx(path, net) if str(path).lower().endswith(".onnx") else load_npz(path, net)
