"""Schema of the network YAML document (the zoo format of `workbench.layers.builder`).

`validate_network(doc, origin)` checks the whole document — types, ranges, finiteness, keys
per layer type and the rules within one layer (groups divide the output maps, a connection
table has one row per output map, an LRN size is odd) — and returns the validated parts.
`check_against_input(layer, shape)` holds the rules that need the layer's input shape
(kernel vs padded input, groups dividing the input maps, connection rows in range); the
builder calls it while it propagates shapes. Errors are one line:
`<origin>: layers[3].alpha: must be a finite number (no NaN or infinity), got nan (layer 'norm1')`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, PlainValidator, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from workbench.errors import FileFormatError, SpecError
from workbench.schemas.base import (
    MAX_INT,
    TOO_LARGE,
    FiniteFloat,
    Loc,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    StrictModel,
    Text,
    fail,
    int_in,
    is_int,
    one_of,
    shown,
    validate,
)

Shape = tuple[int, int, int]
ACTIVATIONS = ("relu", "sigmoid", "tanh", "relu6", "clip", "hardswish", "hardsigmoid", "silu",
               "leaky_relu", "prelu", "elu", "selu", "gelu", "gelu_tanh", "softplus", "mish")
ELTWISE_OPS = ("sum", "prod", "max")
POOL_MODES = ("max", "avg")


def _pair(least: int) -> Any:
    what = "positive" if least == 1 else "non-negative"

    def check(value: Any) -> tuple[int, int]:
        if is_int(value) and least <= value <= MAX_INT:
            return (value, value)
        if (isinstance(value, list) and len(value) == 2
                and all(is_int(v) and least <= v <= MAX_INT for v in value)):
            return (value[0], value[1])
        if is_int(value) or isinstance(value, list) and all(is_int(v) for v in value):
            if max([value] if is_int(value) else value or [0]) > MAX_INT:
                raise PydanticCustomError("pair_rule", TOO_LARGE)
        raise PydanticCustomError("pair_rule", f"must be a {what} integer or [height, width] "
                                  f"of {what} integers")
    return PlainValidator(check)


def _shape(value: Any) -> Shape | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 3 and all(
            is_int(v) and 0 < v <= MAX_INT for v in value):
        return (value[0], value[1], value[2])
    raise PydanticCustomError("shape_rule", "must be [channels, height, width] of positive "
                              "integers")


Pair = Annotated[tuple[int, int], _pair(1)]
PadPair = Annotated[tuple[int, int], _pair(0)]
OptShape = Annotated[Shape | None, PlainValidator(_shape)]


def _optional(validator: Any) -> Any:
    """The same rule, with None (the key given as null) meaning 'not given'."""
    inner = validator.func

    def check(value: Any) -> Any:
        return None if value is None else inner(value)
    return PlainValidator(check)


OptPair = Annotated[tuple[int, int] | None, _optional(_pair(1))]
OptPadPair = Annotated[tuple[int, int] | None, _optional(_pair(0))]


class LayerDoc(StrictModel):
    """Keys every layer may have."""

    name: Text | None = None
    type: str
    input: OptShape = None


class ConvDoc(LayerDoc):
    maps: PositiveInt
    kernel: Pair
    stride: Pair = (1, 1)
    pad: OptPadPair = None
    groups: PositiveInt = 1
    out: OptPair = None
    connections: list[Annotated[list[NonNegativeInt], Field(min_length=1)]] | None = None

    @field_validator("groups")
    @classmethod
    def _groups_divide_maps(cls, groups: int, info: ValidationInfo) -> int:
        maps = info.data.get("maps")
        if maps is not None and maps % groups:
            raise PydanticCustomError("groups_rule", f"output maps {maps} not divisible by "
                                      f"groups {groups}")
        return groups

    @field_validator("connections")
    @classmethod
    def _one_row_per_map(cls, table: list[list[int]] | None,
                         info: ValidationInfo) -> list[list[int]] | None:
        if table is None:
            return None
        maps, groups = info.data.get("maps"), info.data.get("groups", 1)
        if groups != 1:
            raise PydanticCustomError("table_rule", "a connection table needs groups = 1")
        if maps is not None and len(table) != maps:
            raise PydanticCustomError("table_rule", f"has {len(table)} rows, expected one per "
                                      f"output map ({maps})")
        for row, inputs in enumerate(table):
            if len(set(inputs)) != len(inputs):
                raise PydanticCustomError("table_rule", f"row {row} lists an input map twice: "
                                          f"{shown(inputs)}")
        return table


class FcDoc(LayerDoc):
    outputs: PositiveInt


class PoolDoc(LayerDoc):
    mode: Annotated[str, one_of(POOL_MODES)] = "max"
    kernel: OptPair = None
    stride: OptPair = None
    pad: PadPair = (0, 0)
    ceil_mode: bool = False
    global_: bool = Field(False, alias="global")

    @model_validator(mode="after")
    def _kernel_unless_global(self) -> PoolDoc:
        if self.kernel is None and not self.global_:
            raise PydanticCustomError("kernel_rule", "kernel is required (or global: true)")
        if self.global_ and (self.kernel is not None or self.stride is not None):
            raise PydanticCustomError("kernel_rule", "a global pooling takes no kernel or "
                                      "stride (it covers the whole input)")
        return self


class LRNDoc(LayerDoc):
    size: PositiveInt = 5
    alpha: NonNegativeFloat = 1e-4
    beta: FiniteFloat = 0.75
    k: PositiveFloat = 1.0

    @field_validator("size")
    @classmethod
    def _odd(cls, size: int) -> int:
        if size % 2 == 0:
            raise PydanticCustomError("size_rule", f"LRN size must be odd, got {size}")
        return size


class EltwiseDoc(LayerDoc):
    inputs: Annotated[int, int_in(2, 2**20)] = 2
    op: Annotated[str, one_of(ELTWISE_OPS)] = "sum"


class ConcatDoc(LayerDoc):
    parts: Annotated[list[PositiveInt], Field(min_length=1)]


class PlainDoc(LayerDoc):
    """softmax, flatten and the activations without parameters: no keys of their own."""


class ParamActivationDoc(LayerDoc):
    """clip, hardsigmoid, hardswish, leaky_relu, elu, selu: alpha and beta as ONNX names them
    (clip: min and max; selu: alpha and gamma), ONNX's defaults when left out."""

    alpha: FiniteFloat | None = None
    beta: FiniteFloat | None = None


class PReluDoc(LayerDoc):
    """prelu: slopes, the count of its learned slopes (1 shared, C per map, …); its params."""

    slopes: NonNegativeInt = 0


PARAM_ACTIVATIONS = ("clip", "hardsigmoid", "hardswish", "leaky_relu", "elu", "selu")


KINDS: dict[str, type[LayerDoc]] = {
    "conv": ConvDoc, "fc": FcDoc, "pool": PoolDoc, "lrn": LRNDoc, "eltwise": EltwiseDoc,
    "concat": ConcatDoc, "softmax": PlainDoc, "flatten": PlainDoc,
    **dict.fromkeys(ACTIVATIONS, PlainDoc), **dict.fromkeys(PARAM_ACTIVATIONS, ParamActivationDoc),
    "prelu": PReluDoc,
}
LAYER_TYPES = tuple(sorted(KINDS))


class NetworkDoc(StrictModel):
    """The top level of a network file."""

    name: Text
    title: str = ""
    source: str = ""
    notes: str = ""
    input: OptShape = None
    batch: PositiveInt = 1
    layers: Annotated[list[Any], Field(min_length=1)]


def _note(item: Mapping[Any, Any]) -> str:
    name = item.get("name")
    return f"layer {name!r}" if isinstance(name, str) and name else ""


def validate_layer(item: Any, index: int, origin: str) -> LayerDoc:
    """One layer description (a mapping with a known `type`), validated."""
    loc: Loc = ("layers", index)
    if not isinstance(item, Mapping):
        fail(origin, loc, f"must be a mapping with a 'type', got {shown(item)}", FileFormatError)
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in KINDS:
        rule = "is required" if "type" not in item else f"unknown layer type {shown(kind)}"
        fail(origin, (*loc, "type"), f"{rule}; known: " + ", ".join(LAYER_TYPES), SpecError,
             _note(item))
    return validate(KINDS[kind], item, origin, SpecError, loc, note=_note(item))


def validate_network(doc: Any, origin: str) -> tuple[NetworkDoc, list[LayerDoc]]:
    """The top level and every layer of a network document (one-line errors naming
    `origin`: FileFormatError for the document's shape, SpecError for a layer)."""
    if not isinstance(doc, Mapping):
        raise FileFormatError(f"{origin}: expected a mapping with 'name' and 'layers', "
                              f"got {shown(doc)}")
    top = validate(NetworkDoc, doc, origin, FileFormatError)
    docs = [validate_layer(item, index, origin) for index, item in enumerate(top.layers)]
    seen: set[str] = set()
    for index, layer in enumerate(docs):
        if layer.name is not None and layer.name in seen:
            fail(origin, ("layers", index, "name"), f"layer name {layer.name!r} used twice",
                 SpecError)
        seen.add(layer.name or "")
    return top, docs


def check_against_input(layer: LayerDoc, shape: Shape) -> tuple[Loc, str] | None:
    """(field, rule) of the first rule `layer` breaks on an input of `shape` (C, H, W)."""
    c, h, w = shape
    if isinstance(layer, ConvDoc | PoolDoc) and layer.kernel is not None and not (
            isinstance(layer, PoolDoc) and layer.global_):
        (ky, kx) = layer.kernel
        pad = layer.pad if isinstance(layer, PoolDoc) or layer.pad is not None else (
            None if layer.out is not None else (0, 0))
        if pad is not None and (kx > w + 2 * pad[1] or ky > h + 2 * pad[0]):
            return ("kernel",), (f"kernel {ky}x{kx} larger than padded input "
                                 f"{h + 2 * pad[0]}x{w + 2 * pad[1]}")
    if isinstance(layer, ConvDoc):
        if layer.connections is None and c % layer.groups:
            return ("groups",), f"input maps {c} not divisible by groups {layer.groups}"
        for row, inputs in enumerate(layer.connections or ()):
            if max(inputs) >= c:
                return ("connections", row), (f"connection row {row} must list input maps "
                                              f"in 0..{c - 1}, got {inputs}")
    return None
