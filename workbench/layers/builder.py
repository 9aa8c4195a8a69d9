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
of independent layers; in a network with an `input:` it must agree with the previous output:
equal for a streamed layer, as many values for an fc, the same maps and each side within the
kernel for a conv, see `_agrees`). A conv may give `out: [H, W]`:
without `pad` the smallest padding that reaches it is used; with `pad` the output is cropped to
it. `connections` is a sparse table.

Every document is validated by `workbench.schemas.network` (types, ranges, finiteness, keys
per layer type); the rules that need the propagated input shape are checked here, layer by
layer. Each error is one line naming the file, the field path (`layers[3].alpha`) and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import SpecError
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
from workbench.resources import cut
from workbench.schemas.base import fail, message
from workbench.schemas.network import LAYER_TYPES as LAYER_TYPES  # re-exported
from workbench.schemas.network import (
    ConcatDoc,
    ConvDoc,
    EltwiseDoc,
    FcDoc,
    LayerDoc,
    LRNDoc,
    PoolDoc,
    check_against_input,
    validate_layer,
    validate_network,
)


def _conv(doc: ConvDoc, name: str, shape: Shape, batch: int) -> Layer:
    kernel, stride, out = doc.kernel, doc.stride, doc.out
    if doc.pad is not None or out is None:
        pad = doc.pad or (0, 0)
    else:
        pad = (pad_for_output(shape[1], out[0], kernel[0], stride[0]),
               pad_for_output(shape[2], out[1], kernel[1], stride[1]))
    table = tuple(tuple(row) for row in doc.connections) if doc.connections else None
    return conv_from_input(name, shape, doc.maps, kernel, stride, pad, groups=doc.groups,
                           out=out, On=batch, connections=table)


def _pool(doc: PoolDoc, name: str, shape: Shape, batch: int) -> Layer:
    c, h, w = shape
    if doc.global_:
        kernel, stride, pad = (h, w), (1, 1), (0, 0)
    else:
        kernel = doc.kernel or (1, 1)
        stride = doc.stride or (kernel[0], kernel[0])
        pad = doc.pad
    return PoolLayer(name=name, C=c, Ix=w, Iy=h, Kx=kernel[1], Ky=kernel[0], Sx=stride[1],
                     Sy=stride[0], Px=pad[1], Py=pad[0], On=batch, mode=doc.mode,
                     ceil_mode=doc.ceil_mode)


def _lrn(doc: LRNDoc, name: str, shape: Shape, batch: int) -> Layer:
    c, h, w = shape
    return LRNLayer(name=name, C=c, H=h, W=w, On=batch, size=doc.size, alpha=doc.alpha,
                    beta=doc.beta, k=doc.k)


def _eltwise(doc: EltwiseDoc, name: str, shape: Shape, batch: int) -> Layer:
    c, h, w = shape
    return EltwiseLayer(name=name, C=c, H=h, W=w, On=batch, inputs=doc.inputs, op=doc.op)


def _concat(doc: ConcatDoc, name: str, shape: Shape, batch: int) -> Layer:
    return ConcatLayer(name=name, parts=tuple(doc.parts), H=shape[1], W=shape[2], On=batch)


def _fc(doc: FcDoc, name: str, shape: Shape, batch: int) -> Layer:
    c, h, w = shape
    return ConvLayer.fc(name, c * h * w, doc.outputs, On=batch)


_BUILDERS: dict[str, Callable[[Any, str, Shape, int], Layer]] = {
    "conv": _conv,
    "fc": _fc,
    "pool": _pool,
    "lrn": _lrn,
    "eltwise": _eltwise,
    "concat": _concat,
    "softmax": lambda doc, name, s, n: SoftmaxLayer(name, s[0], s[1], s[2], n),
    **{func: (lambda doc, name, s, n, f=func: ActivationLayer(
        name, s[0], s[1], s[2], n, func=f, alpha=getattr(doc, "alpha", None),
        beta=getattr(doc, "beta", None), slopes=getattr(doc, "slopes", 0)))
        for func in ACTIVATIONS},
}


def _agrees(doc: LayerDoc, shape: Shape, origin: str, index: int) -> None:
    """In a chain, a layer's own `input:` must be the previous layer's output `shape`: the
    same for a streamed layer; for an fc the same number of values; for a conv the same maps,
    and a height and width each within its kernel of the previous output's (a printed table's
    own sizes, as seed 003's L2 reads one row and column more than L1 writes)."""
    given, prev = tuple(doc.input), list(shape)
    if doc.type == "fc":
        ok = math.prod(given) == math.prod(shape)
        rule = f"hold as many values as the previous layer's output {prev} (an fc reads it)"
    elif doc.type == "conv":
        ok = given[0] == shape[0] and all(
            abs(a - b) < k for a, b, k in zip(given[1:], shape[1:], doc.kernel, strict=True))
        rule = (f"have the maps of the previous layer's output {prev} and each side within "
                f"the kernel {list(doc.kernel)} of its sides (a conv reads it)")
    else:
        ok = given == tuple(shape)
        rule = f"be the previous layer's output {prev} (a {doc.type} layer reads it)"
    if not ok:
        fail(origin, ("layers", index, "input"), f"must {rule}, got {cut(list(given))}",
             SpecError, f"layer {doc.name or f'layer{index}'!r}")


def _build(docs: list[LayerDoc], input_shape: Shape | None, batch: int,
           origin: str) -> tuple[Layer, ...]:
    """Layers from validated descriptions, each one's input the previous one's output; a
    rule broken on the propagated shapes is one SpecError line naming the field."""
    layers: list[Layer] = []
    shape = input_shape
    chain = input_shape is not None  # a network with an input, not a table of layers
    for index, doc in enumerate(docs):
        name = doc.name or f"layer{index}"
        note = f"layer {name!r}"
        if doc.input is not None:
            if chain and layers:
                _agrees(doc, shape, origin, index)
            shape = doc.input
        if shape is None:
            fail(origin, ("layers", index, "input"), "no input shape (give the network or the "
                 "layer an input: [channels, height, width])", SpecError, note)
        broken = check_against_input(doc, shape)
        if broken is not None:
            fail(origin, ("layers", index, *broken[0]), broken[1], SpecError, note)
        if doc.type == "flatten":
            shape = (shape[0] * shape[1] * shape[2], 1, 1)
            continue
        try:
            layer = _BUILDERS[doc.type](doc, name, shape, batch)
        except SpecError as exc:  # a rule of the layer's own dataclass
            raise SpecError(message(origin, ("layers", index), str(exc))) from None
        layers.append(layer)
        shape = layer.out_shape
    return tuple(layers)


def build_layers(specs: list[Mapping[str, Any]], input_shape: Shape | None, batch: int,
                 net_name: str) -> tuple[Layer, ...]:
    """Layers from their descriptions (mappings of the network format), each one's input the
    previous one's output."""
    origin = f"network {net_name!r}"
    docs = [validate_layer(spec, index, origin) for index, spec in enumerate(specs)]
    return _build(docs, input_shape, batch, origin)


def network_from_dict(doc: Any, origin: str) -> Network:
    """A Network from a parsed network document; `origin` names the file in error messages
    (every error is one line: origin, field path such as `layers[3].alpha`, rule)."""
    top, docs = validate_network(doc, origin)
    layers = _build(docs, top.input, top.batch, origin)
    try:
        return Network(top.name, layers, title=top.title, source=top.source)
    except SpecError as exc:
        raise SpecError(f"{origin}: {exc}") from None
