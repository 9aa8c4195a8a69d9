"""Build a Network from a plain description (the zoo's YAML format), propagating shapes.

Format (all sizes in elements; pairs are [height, width], a single int means both)::

    name: lenet5
    input: [1, 28, 28]          # channels, height, width of one image
    batch: 1
    layers:
      - {name: conv1, type: conv, maps: 32, kernel: 5, stride: 1, pad: 2}
      - {name: relu1, type: relu}
      - {name: pool1, type: pool, mode: max, kernel: 2, stride: 2}
      - {name: fc3, type: fc, outputs: 512}

`eltwise` (inputs: 2, op: sum|prod|max) combines `inputs` maps of the current shape; `concat`
(parts: [maps, ...]) stacks inputs of the current height and width into sum(parts) maps.

A layer's input is the previous layer's output unless it gives `input: [C, H, W]` (for tables
of independent layers). A conv may give `out: [H, W]`: without `pad` the smallest padding that
reaches it is used; with `pad` the output is cropped to it. `connections` is a sparse table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import FileFormatError, SpecError
from workbench.layers.network import Network
from workbench.layers.spec import (
    ACTIVATIONS,
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    Layer,
    LRNLayer,
    PoolLayer,
    Shape,
    SoftmaxLayer,
    conv_from_input,
    pad_for_output,
)

_COMMON = {"name", "type", "input"}
_KEYS = {
    "conv": {"maps", "kernel", "stride", "pad", "groups", "out", "connections"},
    "fc": {"outputs"},
    "pool": {"mode", "kernel", "stride", "pad", "ceil_mode", "global"},
    "lrn": {"size", "alpha", "beta", "k"},
    "softmax": set(),
    "eltwise": {"inputs", "op"},
    "concat": {"parts"},
    "flatten": set(),
    **{func: set() for func in ACTIVATIONS},
}
LAYER_TYPES = tuple(sorted(_KEYS))


def _pair(spec: Mapping[str, Any], key: str, default: int | None, where: str) -> tuple[int, int]:
    value = spec.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return (value[0], value[1])
    raise SpecError(f"{where}: {key} must be an integer or [height, width], got {value!r}")


def _shape(value: Any, where: str) -> Shape:
    if (isinstance(value, list | tuple) and len(value) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        return (value[0], value[1], value[2])
    raise SpecError(f"{where}: input must be [channels, height, width] of positive integers, "
                    f"got {value!r}")


def _int(spec: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def _conv(spec: Mapping[str, Any], name: str, shape: Shape, batch: int, where: str) -> ConvLayer:
    kernel = _pair(spec, "kernel", None, where)
    stride = _pair(spec, "stride", 1, where)
    out = _pair(spec, "out", None, where) if "out" in spec else None
    if "pad" in spec or out is None:
        pad = _pair(spec, "pad", 0, where)
    else:
        pad = (pad_for_output(shape[1], out[0], kernel[0], stride[0]),
               pad_for_output(shape[2], out[1], kernel[1], stride[1]))
    table = spec.get("connections")
    if table is not None:
        if not isinstance(table, list) or not all(isinstance(row, list) for row in table):
            raise SpecError(f"{where}: connections must be a list of lists of input maps")
        table = tuple(tuple(row) for row in table)
    return conv_from_input(name, shape, _int(spec, "maps", where), kernel, stride, pad,
                           groups=_int(spec, "groups", where, 1), out=out, On=batch,
                           connections=table)


def _pool(spec: Mapping[str, Any], name: str, shape: Shape, batch: int, where: str) -> PoolLayer:
    c, h, w = shape
    if spec.get("global", False):
        kernel, stride, pad = (h, w), (1, 1), (0, 0)
    else:
        kernel = _pair(spec, "kernel", None, where)
        stride = _pair(spec, "stride", kernel[0], where)
        pad = _pair(spec, "pad", 0, where)
    return PoolLayer(name=name, C=c, Ix=w, Iy=h, Kx=kernel[1], Ky=kernel[0], Sx=stride[1],
                     Sy=stride[0], Px=pad[1], Py=pad[0], On=batch, mode=spec.get("mode", "max"),
                     ceil_mode=bool(spec.get("ceil_mode", False)))


def _lrn(spec: Mapping[str, Any], name: str, shape: Shape, batch: int, where: str) -> LRNLayer:
    c, h, w = shape
    return LRNLayer(name=name, C=c, H=h, W=w, On=batch, size=spec.get("size", 5),
                    alpha=float(spec.get("alpha", 1e-4)), beta=float(spec.get("beta", 0.75)),
                    k=float(spec.get("k", 1.0)))


def _eltwise(spec: Mapping[str, Any], name: str, shape: Shape, batch: int,
             where: str) -> EltwiseLayer:
    c, h, w = shape
    return EltwiseLayer(name=name, C=c, H=h, W=w, On=batch, inputs=spec.get("inputs", 2),
                        op=spec.get("op", "sum"))


def _concat(spec: Mapping[str, Any], name: str, shape: Shape, batch: int,
            where: str) -> ConcatLayer:
    parts = spec.get("parts")
    if not isinstance(parts, list | tuple):
        raise SpecError(f"{where}: parts must be a list of input map counts, got {parts!r}")
    return ConcatLayer(name=name, parts=tuple(parts), H=shape[1], W=shape[2], On=batch)


def _fc(spec: Mapping[str, Any], name: str, shape: Shape, batch: int, where: str) -> ConvLayer:
    c, h, w = shape
    return ConvLayer.fc(name, c * h * w, _int(spec, "outputs", where), On=batch)


_BUILDERS: dict[str, Callable[..., Layer]] = {
    "conv": _conv,
    "fc": _fc,
    "pool": _pool,
    "lrn": _lrn,
    "eltwise": _eltwise,
    "concat": _concat,
    "softmax": lambda spec, name, s, n, where: SoftmaxLayer(name, s[0], s[1], s[2], n),
    **{func: (lambda spec, name, s, n, where, f=func: ActivationLayer(name, s[0], s[1], s[2], n,
                                                                       func=f))
       for func in ACTIVATIONS},
}


def build_layers(specs: list[Mapping[str, Any]], input_shape: Shape | None, batch: int,
                 net_name: str) -> tuple[Layer, ...]:
    """Layers from their descriptions, each one's input the previous one's output."""
    layers: list[Layer] = []
    shape = input_shape
    for index, spec in enumerate(specs):
        if not isinstance(spec, Mapping):
            raise FileFormatError(f"network {net_name!r}: layer #{index} must be a mapping")
        name = spec.get("name", f"layer{index}")
        where = f"network {net_name!r} layer {name!r}"
        kind = spec.get("type")
        if kind not in _KEYS:
            raise SpecError(f"{where}: unknown layer type {kind!r}; known: "
                            + ", ".join(LAYER_TYPES))
        unknown = set(spec) - _COMMON - _KEYS[kind]
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {sorted(unknown)} for type {kind!r}")
        if "input" in spec:
            shape = _shape(spec["input"], where)
        if shape is None:
            raise SpecError(f"{where}: no input shape (give the network or the layer an input)")
        if kind == "flatten":
            shape = (shape[0] * shape[1] * shape[2], 1, 1)
            continue
        layer = _BUILDERS[kind](spec, name, shape, batch, where)
        layers.append(layer)
        shape = layer.out_shape
    return tuple(layers)


def network_from_dict(doc: Any, origin: str) -> Network:
    """A Network from a parsed zoo document; `origin` names the file in error messages."""
    if not isinstance(doc, Mapping):
        raise FileFormatError(f"{origin}: expected a mapping with 'name' and 'layers'")
    unknown = set(doc) - {"name", "title", "source", "notes", "input", "batch", "layers"}
    if unknown:
        raise FileFormatError(f"{origin}: unknown top-level key(s) {sorted(unknown)}")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise FileFormatError(f"{origin}: 'name' must be a non-empty string")
    specs = doc.get("layers")
    if not isinstance(specs, list) or not specs:
        raise FileFormatError(f"{origin}: 'layers' must be a non-empty list")
    shape = _shape(doc["input"], f"network {name!r}") if "input" in doc else None
    batch = _int(doc, "batch", f"network {name!r}", 1)
    return Network(name, build_layers(specs, shape, batch, name), title=str(doc.get("title", "")),
                   source=str(doc.get("source", "")))
