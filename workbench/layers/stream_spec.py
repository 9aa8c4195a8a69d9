"""Non-tiled layers beyond the seed 000 set, met when importing deployed models (sizes in
elements, counts per layer). All are streamed (`workbench.streaming`), none has MACs.

- `ScaleLayer`: a C × H × W map combined element-wise with a per-map C × 1 × 1 vector computed
  from the data (the broadcast Mul of a squeeze-and-excitation block).
- `AffineLayer`: a per-map (or scalar) scale and/or shift by constants (a BatchNormalization
  that no convolution precedes, a Mul/Add/Sub/Div by a constant).
- `ShuffleLayer`: a channel shuffle (ShuffleNet's Reshape → Transpose → Reshape): a copy that
  permutes the maps, no ops.
- `ResizeLayer`: upsampling by integer factors (Resize/Upsample, nearest or linear).
- `GenericLayer`: any other operator, with its inferred input and output shapes; costed as an
  element-wise layer on its output shape, or, for a product of two data tensors
  (`product_k`), as one (see `workbench.streaming`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from workbench.errors import SpecError
from workbench.layers.spec import ELTWISE_OPS, MapLayer, Shape, _check_ints, _check_name


@dataclass(frozen=True, slots=True)
class ScaleLayer(MapLayer):
    """C × H × W map `op` (prod, sum or max) a per-map vector of C values (broadcast over H × W):
    one op per output element."""

    op: str = "prod"
    kind: ClassVar[str] = "scale"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        if self.op not in ELTWISE_OPS:
            raise SpecError(f"layer {self.name!r}: scale op must be one of {ELTWISE_OPS}, "
                            f"got {self.op!r}")


@dataclass(frozen=True, slots=True)
class AffineLayer(MapLayer):
    """x·scale + shift with constant scale and shift values (`scales`, `shifts`: how many, C for
    per-map, 1 for a scalar, 0 for none); counted as params and biases; one op per element per
    part."""

    scales: int = 0
    shifts: int = 0
    kind: ClassVar[str] = "affine"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        for field, value in (("scales", self.scales), ("shifts", self.shifts)):
            if isinstance(value, bool) or not isinstance(value, int) or value not in (
                    0, 1, self.C):
                raise SpecError(f"layer {self.name!r}: {field} must be 0, 1 or C = {self.C}, "
                                f"got {value!r}")
        if not self.scales and not self.shifts:
            raise SpecError(f"layer {self.name!r}: an affine layer needs a scale or a shift")

    params = property(lambda self: self.scales)
    biases = property(lambda self: self.shifts)

    @property
    def ops(self) -> int:
        return (bool(self.scales) + bool(self.shifts)) * self.elements


@dataclass(frozen=True, slots=True)
class ShuffleLayer(MapLayer):
    """Channel shuffle of C maps in `groups` groups (map g·(C/groups) + i moves to
    i·groups + g): a copy, no ops."""

    groups: int = 2
    kind: ClassVar[str] = "shuffle"
    ops_per_element: ClassVar[int] = 0

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        _check_ints(self.name, groups=self.groups)
        if self.C % self.groups:
            raise SpecError(f"layer {self.name!r}: maps {self.C} not divisible by shuffle "
                            f"groups {self.groups}")


RESIZE_MODES = ("nearest", "linear")


@dataclass(frozen=True, slots=True)
class ResizeLayer:
    """Upsampling of C × H × W maps by integer factors Fy, Fx to C × H·Fy × W·Fx: one op per
    output element (nearest) or three (linear)."""

    name: str
    C: int
    H: int
    W: int
    Fy: int = 2
    Fx: int = 2
    On: int = 1
    mode: str = "nearest"

    kind: ClassVar[str] = "resize"
    tiled: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_ints(self.name, C=self.C, H=self.H, W=self.W, Fy=self.Fy, Fx=self.Fx, On=self.On)
        if self.mode not in RESIZE_MODES:
            raise SpecError(f"layer {self.name!r}: resize mode must be one of {RESIZE_MODES}, "
                            f"got {self.mode!r}")

    @property
    def in_shape(self) -> Shape:
        return (self.C, self.H, self.W)

    @property
    def out_shape(self) -> Shape:
        return (self.C, self.H * self.Fy, self.W * self.Fx)

    macs = property(lambda self: 0)
    params = property(lambda self: 0)
    biases = property(lambda self: 0)

    @property
    def ops_per_output(self) -> int:
        return 1 if self.mode == "nearest" else 3

    @property
    def ops(self) -> int:
        c, h, w = self.out_shape
        return self.ops_per_output * c * h * w * self.On

    def with_batch(self, n: int) -> ResizeLayer:
        return dataclasses.replace(self, On=n)


@dataclass(frozen=True, slots=True)
class GenericLayer:
    """An operator the workbench has no model for (`op`, e.g. the ONNX op type), carried with its
    input shape (Ci, Hi, Wi) and output shape (C, H, W); `inputs` data tensors. Costed as an
    element-wise layer on its output shape: each input read as a block of the output's size,
    one op per output element, or 2·MACs ops if more (`macs_per_image`, e.g. a ConvTranspose
    that no ConvLayer expresses; `weights` its parameters)."""

    name: str
    op: str
    Ci: int
    Hi: int
    Wi: int
    C: int
    H: int
    W: int
    On: int = 1
    inputs: int = 1
    macs_per_image: int = 0
    weights: int = 0

    kind: ClassVar[str] = "other"
    tiled: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not isinstance(self.op, str) or not self.op:
            raise SpecError(f"layer {self.name!r}: op must be a non-empty string")
        _check_ints(self.name, Ci=self.Ci, Hi=self.Hi, Wi=self.Wi, C=self.C, H=self.H,
                    W=self.W, On=self.On, inputs=self.inputs)
        for field, value in (("macs_per_image", self.macs_per_image),
                             ("weights", self.weights)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SpecError(f"layer {self.name!r}: {field} must be a non-negative integer, "
                                f"got {value!r}")

    @property
    def in_shape(self) -> Shape:
        return (self.Ci, self.Hi, self.Wi)

    @property
    def out_shape(self) -> Shape:
        return (self.C, self.H, self.W)

    biases = property(lambda self: 0)

    @property
    def macs(self) -> int:
        """Multiply-accumulates for the whole batch (0 unless given)."""
        return self.macs_per_image * self.On

    @property
    def params(self) -> int:
        return self.weights

    @property
    def elements(self) -> int:
        return self.C * self.H * self.W * self.On

    @property
    def product_k(self) -> int:
        """K when the layer is a product of two data tensors laid out as G × M × K (input)
        → G × M × N (output) with MACs = output elements × K (attention's Q·Kᵀ and
        scores·V); 0 otherwise."""
        if self.inputs != 2 or not self.macs_per_image or (self.Ci, self.Hi) != (self.C,
                                                                                 self.H):
            return 0
        return self.Wi if self.macs_per_image == self.C * self.H * self.W * self.Wi else 0

    @property
    def ops_per_output(self) -> int:
        """Vector ops per output element: 1, or ⌈2·MACs / outputs⌉ if more."""
        return max(1, -(-2 * self.macs_per_image // (self.C * self.H * self.W)))

    @property
    def ops(self) -> int:
        return self.ops_per_output * self.elements

    def with_batch(self, n: int) -> GenericLayer:
        return dataclasses.replace(self, On=n)


@dataclass(frozen=True, slots=True)
class LayerNormLayer(MapLayer):
    """Layer normalization of each W-long row of C × H × W (a token's features), then an
    optional per-feature scale and shift (`scales`, `shifts`: 0 or W learned values). Ops per
    element: sum, subtract the mean, square and sum, multiply by 1/σ (5), + 1 for the scale,
    + 1 for the shift; the per-row square root and divisions are not counted."""

    scales: int = 0
    shifts: int = 0
    kind: ClassVar[str] = "layernorm"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        for field, value in (("scales", self.scales), ("shifts", self.shifts)):
            if isinstance(value, bool) or not isinstance(value, int) or value not in (
                    0, self.W):
                raise SpecError(f"layer {self.name!r}: {field} must be 0 or W = {self.W}, "
                                f"got {value!r}")

    params = property(lambda self: self.scales)
    biases = property(lambda self: self.shifts)

    @property
    def ops(self) -> int:
        return (5 + bool(self.scales) + bool(self.shifts)) * self.elements


@dataclass(frozen=True, slots=True)
class RowSoftmaxLayer(MapLayer):
    """Softmax of each W-long row of C × H × W on its own (attention scores over the tokens):
    exponent, sum and divide per element; rows are independent, so the maps split over cores
    as for any map layer (unlike `SoftmaxLayer`, which normalizes across the maps)."""

    kind: ClassVar[str] = "softmax"
    ops_per_element: ClassVar[int] = 3


@dataclass(frozen=True, slots=True)
class TransposeLayer(MapLayer):
    """A layout change that moves data (a Transpose whose permutation, size-1 dimensions left
    out, is not the identity), writing C × H × W outputs: a DMA copy, no ops."""

    kind: ClassVar[str] = "transpose"
    ops_per_element: ClassVar[int] = 0
