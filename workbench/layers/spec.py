"""Layer specifications: frozen dataclasses with sizes in elements, counts per layer.

Convolution dimensions follow seed 000: output Ox × Oy × Oc for On images, kernel Kx × Ky over
Kc input maps per group, stride Sx, Sy and zero padding Px, Py. A fully connected layer is a
convolution with Ox = Oy = Kx = Ky = 1 and Kc = input features.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import ClassVar

from workbench.errors import SpecError

Shape = tuple[int, int, int]  # (channels, height, width) of one image


def out_size(in_size: int, kernel: int, stride: int, pad: int, ceil_mode: bool = False) -> int:
    """Output extent from input extent (seed 000 eq. 2.1).

    ceil_mode rounds up as Caffe pools do, dropping a last window that would start in the
    right padding (the Caffe/ONNX rule).
    """
    span = in_size + 2 * pad - kernel
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    steps = -(-span // stride)
    if pad > 0 and steps * stride >= in_size + pad:
        steps -= 1
    return steps + 1


def in_size(out: int, kernel: int, stride: int, pad: int) -> int:
    """Smallest input extent that yields `out` outputs: (O − 1)·S + K − 2·P."""
    return (out - 1) * stride + kernel - 2 * pad


def _check_ints(owner: str, **values: int) -> None:
    for field, value in values.items():
        minimum = 0 if field.startswith("P") or field in {"pad"} else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            rule = "a non-negative integer" if minimum == 0 else "a positive integer"
            raise SpecError(f"layer {owner!r}: {field} must be {rule}, got {value!r}")


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name:
        raise SpecError(f"layer name must be a non-empty string, got {name!r}")


@dataclass(frozen=True, slots=True)
class ConvLayer:
    """Convolution (or fully connected, kind="fc") layer; sizes in elements.

    `connections`, when given, is a sparse connection table (seed 003): for every output map the
    tuple of input maps it reads; Kc is then the number of input maps and groups must be 1.

    Dilation Dx, Dy: kernel taps are Dx (Dy) input columns (rows) apart, so one window spans
    (Kx − 1)·Dx + 1 columns (`Kx_span`). Padding: Px, Py zeros before the first column (row);
    Px_end, Py_end after the last one (None: equal to Px, Py). An end padding may be negative,
    down to −(Sx − 1) (−(Sy − 1)): trailing input columns (rows) that no window reaches because
    the stride steps over them, so that Ix, Iy are the producer's real size (torchvision
    ResNet-18 conv1, 7×7/2 pad 3 on 224 → 112, is Px = 3, Px_end = 2, Ix = 224; a 1×1/2 on
    56 → 28 is Px_end = −1). The input extent read is
    Ix = (Ox − 1)·Sx + (Kx − 1)·Dx + 1 − Px − Px_end (likewise Iy). The defaults (D = 1, end
    padding = start padding) are the seed 000 layer.
    """

    name: str
    Ox: int
    Oy: int
    Oc: int
    On: int = 1
    Kx: int = 1
    Ky: int = 1
    Kc: int = 1
    Sx: int = 1
    Sy: int = 1
    Px: int = 0
    Py: int = 0
    groups: int = 1
    connections: tuple[tuple[int, ...], ...] | None = None
    kind: str = "conv"
    Dx: int = 1
    Dy: int = 1
    Px_end: int | None = None
    Py_end: int | None = None

    tiled: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_ints(self.name, Ox=self.Ox, Oy=self.Oy, Oc=self.Oc, On=self.On, Kx=self.Kx,
                    Ky=self.Ky, Kc=self.Kc, Sx=self.Sx, Sy=self.Sy, Px=self.Px, Py=self.Py,
                    groups=self.groups, Dx=self.Dx, Dy=self.Dy)
        for field, end, stride in (("Px_end", self.Px_end, self.Sx),
                                   ("Py_end", self.Py_end, self.Sy)):
            if end is None:
                continue
            if isinstance(end, bool) or not isinstance(end, int) or end < -(stride - 1):
                raise SpecError(f"layer {self.name!r}: {field} must be None or an integer "
                                f">= -(stride - 1) = {-(stride - 1)}, got {end!r}")
        if self.kind not in ("conv", "fc"):
            raise SpecError(f"layer {self.name!r}: kind must be 'conv' or 'fc', got {self.kind!r}")
        if self.kind == "fc" and (self.Ox, self.Oy, self.Kx, self.Ky, self.Sx, self.Sy,
                                  self.Px, self.Py, self.Px_e, self.Py_e, self.Dx,
                                  self.Dy) != (1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1):
            raise SpecError(f"layer {self.name!r}: a fully connected layer needs "
                            "Ox = Oy = Kx = Ky = Sx = Sy = 1, no dilation and no padding")
        if self.Oc % self.groups:
            raise SpecError(f"layer {self.name!r}: output maps {self.Oc} not divisible by "
                            f"groups {self.groups}")
        if self.Ix < 1 or self.Iy < 1:
            raise SpecError(f"layer {self.name!r}: padding {self.Px}+{self.Px_e} x "
                            f"{self.Py}+{self.Py_e} leaves no input data for kernel "
                            f"{self.Kx}x{self.Ky} dilated {self.Dx}x{self.Dy} "
                            f"(input {self.Ix}x{self.Iy})")
        if self.connections is not None:
            self._check_connections()

    def _check_connections(self) -> None:
        table = self.connections
        if self.groups != 1:
            raise SpecError(f"layer {self.name!r}: a connection table needs groups = 1")
        if len(table) != self.Oc:
            raise SpecError(f"layer {self.name!r}: connection table has {len(table)} rows, "
                            f"expected one per output map ({self.Oc})")
        for oc, row in enumerate(table):
            if not row or len(set(row)) != len(row) or not all(0 <= i < self.Kc for i in row):
                raise SpecError(f"layer {self.name!r}: connection row {oc} must list distinct "
                                f"input maps in 0..{self.Kc - 1}, got {list(row)}")

    @classmethod
    def fc(cls, name: str, in_features: int, out_features: int, On: int = 1) -> ConvLayer:
        """A fully connected layer: in_features × out_features weights per image."""
        return cls(name=name, Ox=1, Oy=1, Oc=out_features, On=On, Kc=in_features, kind="fc")

    @property
    def Px_e(self) -> int:
        """Padding after the last input column (elements; Px_end, or Px when None)."""
        return self.Px if self.Px_end is None else self.Px_end

    @property
    def Py_e(self) -> int:
        """Padding after the last input row (elements; Py_end, or Py when None)."""
        return self.Py if self.Py_end is None else self.Py_end

    @property
    def Kx_span(self) -> int:
        """Columns one dilated window covers: (Kx − 1)·Dx + 1 (elements)."""
        return (self.Kx - 1) * self.Dx + 1

    @property
    def Ky_span(self) -> int:
        """Rows one dilated window covers: (Ky − 1)·Dy + 1 (elements)."""
        return (self.Ky - 1) * self.Dy + 1

    @property
    def plain_window(self) -> bool:
        """True without dilation and with equal start/end padding (the seed 000 window)."""
        return (self.Dx == 1 and self.Dy == 1 and self.Px_e == self.Px
                and self.Py_e == self.Py)

    @property
    def Ix(self) -> int:
        """Input width read by the layer (elements, padding excluded)."""
        return (self.Ox - 1) * self.Sx + self.Kx_span - self.Px - self.Px_e

    @property
    def Iy(self) -> int:
        """Input height read by the layer (elements, padding excluded)."""
        return (self.Oy - 1) * self.Sy + self.Ky_span - self.Py - self.Py_e

    @property
    def in_maps(self) -> int:
        return self.Kc if self.connections is not None else self.Kc * self.groups

    @property
    def in_shape(self) -> Shape:
        return (self.in_maps, self.Iy, self.Ix)

    @property
    def out_shape(self) -> Shape:
        return (self.Oc, self.Oy, self.Ox)

    @property
    def connection_count(self) -> int:
        """Number of (output map, input map) pairs that carry a kernel."""
        if self.connections is not None:
            return sum(len(row) for row in self.connections)
        return self.Kc * self.Oc

    @property
    def macs(self) -> int:
        """Multiply-accumulates for the whole batch."""
        return self.Kx * self.Ky * self.connection_count * self.Ox * self.Oy * self.On

    @property
    def params(self) -> int:
        """Weights (biases excluded, see `biases`)."""
        return self.Kx * self.Ky * self.connection_count

    @property
    def biases(self) -> int:
        return self.Oc

    @property
    def ops(self) -> int:
        """Operations, 1 MAC = 2 ops."""
        return 2 * self.macs

    def with_batch(self, n: int) -> ConvLayer:
        return dataclasses.replace(self, On=n)


@dataclass(frozen=True, slots=True)
class PoolLayer:
    """Max or average pooling over Kx × Ky windows of C maps; sizes in elements.

    ceil_mode (Caffe's rounding) is kept only where it changes the output size, so the same
    pooling imported from Caffe or ONNX compares equal.
    """

    name: str
    C: int
    Ix: int
    Iy: int
    Kx: int
    Ky: int
    Sx: int
    Sy: int
    Px: int = 0
    Py: int = 0
    On: int = 1
    mode: str = "max"
    ceil_mode: bool = False

    kind: ClassVar[str] = "pool"
    tiled: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_ints(self.name, C=self.C, Ix=self.Ix, Iy=self.Iy, Kx=self.Kx, Ky=self.Ky,
                    Sx=self.Sx, Sy=self.Sy, Px=self.Px, Py=self.Py, On=self.On)
        if self.mode not in ("max", "avg"):
            raise SpecError(f"layer {self.name!r}: pooling mode must be 'max' or 'avg', "
                            f"got {self.mode!r}")
        if self.Kx > self.Ix + 2 * self.Px or self.Ky > self.Iy + 2 * self.Py:
            raise SpecError(f"layer {self.name!r}: kernel {self.Kx}x{self.Ky} larger than padded "
                            f"input {self.Ix + 2 * self.Px}x{self.Iy + 2 * self.Py}")
        if self.ceil_mode and all(
                out_size(i, k, s, p, True) == out_size(i, k, s, p)
                for i, k, s, p in ((self.Ix, self.Kx, self.Sx, self.Px),
                                   (self.Iy, self.Ky, self.Sy, self.Py))):
            object.__setattr__(self, "ceil_mode", False)

    @property
    def Ox(self) -> int:
        return out_size(self.Ix, self.Kx, self.Sx, self.Px, self.ceil_mode)

    @property
    def Oy(self) -> int:
        return out_size(self.Iy, self.Ky, self.Sy, self.Py, self.ceil_mode)

    @property
    def in_shape(self) -> Shape:
        return (self.C, self.Iy, self.Ix)

    @property
    def out_shape(self) -> Shape:
        return (self.C, self.Oy, self.Ox)

    macs = property(lambda self: 0, doc="Pooling has no MACs.")
    params = property(lambda self: 0)
    biases = property(lambda self: 0)

    @property
    def ops(self) -> int:
        """One compare (max) or add (avg) per window element per output."""
        return self.Kx * self.Ky * self.C * self.Ox * self.Oy * self.On

    def with_batch(self, n: int) -> PoolLayer:
        return dataclasses.replace(self, On=n)


@dataclass(frozen=True, slots=True)
class MapLayer:
    """Base of the shape-preserving layers (activation, LRN, softmax, eltwise) on C × H × W
    maps."""

    name: str
    C: int
    H: int
    W: int
    On: int = 1

    kind: ClassVar[str] = "map"
    tiled: ClassVar[bool] = False
    ops_per_element: ClassVar[int] = 1

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_ints(self.name, C=self.C, H=self.H, W=self.W, On=self.On)

    @property
    def in_shape(self) -> Shape:
        return (self.C, self.H, self.W)

    out_shape = in_shape
    macs = property(lambda self: 0)
    params = property(lambda self: 0)
    biases = property(lambda self: 0)

    @property
    def elements(self) -> int:
        return self.C * self.H * self.W * self.On

    @property
    def ops(self) -> int:
        return self.ops_per_element * self.elements

    def with_batch(self, n: int) -> MapLayer:
        return dataclasses.replace(self, On=n)


ACTIVATIONS = ("relu", "sigmoid", "tanh", "relu6", "clip", "hardswish", "hardsigmoid", "silu",
               "leaky_relu", "prelu", "elu", "selu", "gelu", "gelu_tanh", "softplus", "mish")


# the activations taking parameters, with ONNX's defaults: (alpha, beta) as ONNX names them
# (clip: min, max, None unbounded; hardsigmoid and hardswish: y = x·max(0, min(1, αx + β)) for
# hardswish, the max(…) for hardsigmoid; leaky_relu, elu: α; selu: α and γ as beta)
ACTIVATION_PARAMS: dict[str, tuple[float | None, float | None]] = {
    "clip": (None, None), "hardsigmoid": (0.2, 0.5), "hardswish": (1 / 6, 0.5),
    "leaky_relu": (0.01, None), "elu": (1.0, None),
    "selu": (1.67326319217681884765625, 1.05070102214813232421875)}


def slope_counts(c: int, h: int, w: int) -> set[int]:
    """The sizes a PReLU slope broadcasting against a C×H×W map can have: each of C, H and W
    kept or broadcast (1)."""
    return {a * b * d for a in {1, c} for b in {1, h} for d in {1, w}}


@dataclass(frozen=True, slots=True)
class ActivationLayer(MapLayer):
    """Element-wise activation: one op per element. alpha, beta: its parameters (None: the
    default of `ACTIVATION_PARAMS`; only the activations listed there take them). slopes:
    prelu's count of learned slopes, its params (1 shared, C per map, …; 0 when not stated)."""

    func: str = "relu"
    alpha: float | None = None
    beta: float | None = None
    slopes: int = 0
    kind: ClassVar[str] = "activation"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        if self.func not in ACTIVATIONS:
            raise SpecError(f"layer {self.name!r}: activation must be one of {ACTIVATIONS}, "
                            f"got {self.func!r}")
        for key in ("alpha", "beta"):
            value = getattr(self, key)
            if value is None:
                continue
            if self.func not in ACTIVATION_PARAMS or \
                    ACTIVATION_PARAMS[self.func][key == "beta"] is None and \
                    (self.func != "clip"):
                raise SpecError(f"layer {self.name!r}: activation {self.func!r} takes no "
                                f"{key}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value):
                raise SpecError(f"layer {self.name!r}: {key} must be a finite number, got "
                                f"{value!r}")
        if self.slopes != 0 or type(self.slopes) is not int:
            _check_ints(self.name, slopes=self.slopes)
            if self.func != "prelu":
                raise SpecError(f"layer {self.name!r}: only prelu has slopes, "
                                f"not {self.func!r}")
            counts = slope_counts(self.C, self.H, self.W)
            if self.slopes not in counts:
                raise SpecError(f"layer {self.name!r}: slopes {self.slopes} is no slope shape's "
                                f"size on its {self.C}×{self.H}×{self.W} map (one of "
                                f"{', '.join(map(str, sorted(counts)))}: 1, C, H, W or their "
                                "products, as ONNX's PRelu broadcasts)")
        if self.func == "clip" and None not in (self.alpha, self.beta) and \
                self.alpha > self.beta:
            raise SpecError(f"layer {self.name!r}: clip's alpha (min) {self.alpha} is above its "
                            f"beta (max) {self.beta}")

    @property
    def params(self) -> int:
        return self.slopes

    @property
    def parameters(self) -> tuple[float | None, float | None]:
        """(alpha, beta) with the defaults filled in (`ACTIVATION_PARAMS`)."""
        alpha, beta = ACTIVATION_PARAMS.get(self.func, (None, None))
        return (alpha if self.alpha is None else float(self.alpha),
                beta if self.beta is None else float(self.beta))


@dataclass(frozen=True, slots=True)
class LRNLayer(MapLayer):
    """Local response normalization across `size` neighbouring maps (Krizhevsky et al.).

    Ops per element: `size` multiply-adds for the window sum of squares plus scale, power and
    divide.
    """

    size: int = 5
    alpha: float = 1e-4
    beta: float = 0.75
    k: float = 1.0
    kind: ClassVar[str] = "lrn"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        _check_ints(self.name, size=self.size)
        if self.size % 2 == 0:
            raise SpecError(f"layer {self.name!r}: LRN size must be odd, got {self.size}")

    @property
    def ops(self) -> int:
        return (2 * self.size + 3) * self.elements


@dataclass(frozen=True, slots=True)
class SoftmaxLayer(MapLayer):
    """Softmax over the maps: exponent, sum and divide per element."""

    kind: ClassVar[str] = "softmax"
    ops_per_element: ClassVar[int] = 3


ELTWISE_OPS = ("sum", "prod", "max")


@dataclass(frozen=True, slots=True)
class EltwiseLayer(MapLayer):
    """Element-wise sum, product or maximum of `inputs` maps of the same C × H × W shape:
    inputs − 1 ops per output element."""

    inputs: int = 2
    op: str = "sum"
    kind: ClassVar[str] = "eltwise"

    def __post_init__(self) -> None:
        MapLayer.__post_init__(self)
        if isinstance(self.inputs, bool) or not isinstance(self.inputs, int) or self.inputs < 2:
            raise SpecError(f"layer {self.name!r}: an element-wise layer needs at least 2 "
                            f"inputs, got {self.inputs!r}")
        if self.op not in ELTWISE_OPS:
            raise SpecError(f"layer {self.name!r}: element-wise op must be one of "
                            f"{ELTWISE_OPS}, got {self.op!r}")

    @property
    def ops(self) -> int:
        return (self.inputs - 1) * self.elements


@dataclass(frozen=True, slots=True)
class ConcatLayer:
    """Concatenation along the maps of inputs with `parts` maps each, all H × W: C = sum(parts)
    output maps; a copy, no ops. in_shape is the inputs taken together (C, H, W)."""

    name: str
    parts: tuple[int, ...]
    H: int
    W: int
    On: int = 1

    kind: ClassVar[str] = "concat"
    tiled: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_ints(self.name, H=self.H, W=self.W, On=self.On)
        parts = self.parts
        if (not isinstance(parts, tuple | list) or not parts
                or any(isinstance(p, bool) or not isinstance(p, int) or p < 1 for p in parts)):
            raise SpecError(f"layer {self.name!r}: parts must be a non-empty list of positive "
                            f"map counts, got {parts!r}")
        object.__setattr__(self, "parts", tuple(parts))

    @property
    def C(self) -> int:
        return sum(self.parts)

    @property
    def in_shape(self) -> Shape:
        return (self.C, self.H, self.W)

    out_shape = in_shape
    macs = property(lambda self: 0)
    params = property(lambda self: 0)
    biases = property(lambda self: 0)
    ops = property(lambda self: 0, doc="A copy: no ops.")

    @property
    def elements(self) -> int:
        return self.C * self.H * self.W * self.On

    def with_batch(self, n: int) -> ConcatLayer:
        return dataclasses.replace(self, On=n)


Layer = (ConvLayer | PoolLayer | ActivationLayer | LRNLayer | SoftmaxLayer | EltwiseLayer
         | ConcatLayer)


def map_elems(layer: Layer, side: str) -> int:
    """Elements of a layer's input ("in") or output ("out") maps, all images."""
    shape = layer.in_shape if side == "in" else layer.out_shape
    return math.prod(shape) * layer.On


def as_grouped(layer: ConvLayer) -> ConvLayer:
    """The layer with a connection table that is G disjoint complete blocks, each of the same
    number of output maps reading the same k input maps (no map read by two blocks), as the
    grouped convolution it is (G groups, Kc = k, maps renumbered: no count changes; input maps
    no output reads are dropped, as they are never read); any other layer unchanged (an
    irregular table is then priced as the dense layer, an upper bound)."""
    if layer.connections is None:
        return layer
    return _as_grouped(layer)


@functools.lru_cache(maxsize=1024)
def _as_grouped(layer: ConvLayer) -> ConvLayer:
    blocks: dict[frozenset[int], int] = {}
    for row in layer.connections or ():
        key = frozenset(row)
        blocks[key] = blocks.get(key, 0) + 1
    reads = {len(block) for block in blocks}
    outputs = set(blocks.values())
    if len(reads) != 1 or len(outputs) != 1 or \
            sum(map(len, blocks)) != len(frozenset().union(*blocks)):
        return layer
    return dataclasses.replace(layer, Kc=reads.pop(), groups=len(blocks), connections=None)


def regular_connections(layer: ConvLayer) -> bool:
    """Whether the layer is dense or grouped, or its connection table is (`as_grouped`)."""
    return as_grouped(layer).connections is None


def conv_from_input(name: str, in_shape: Shape, maps: int, kernel: tuple[int, int],
                    stride: tuple[int, int], pad: tuple[int, int], groups: int = 1,
                    out: tuple[int, int] | None = None, On: int = 1,
                    connections: tuple[tuple[int, ...], ...] | None = None) -> ConvLayer:
    """Build a conv layer from its input shape (C, H, W); `out` (Oy, Ox) may crop the output."""
    c, h, w = in_shape
    (ky, kx), (sy, sx), (py, px) = kernel, stride, pad
    _check_ints(name, Kx=kx, Ky=ky, Sx=sx, Sy=sy, Px=px, Py=py, groups=groups, maps=maps)
    if kx > w + 2 * px or ky > h + 2 * py:
        raise SpecError(f"layer {name!r}: kernel {ky}x{kx} larger than padded input "
                        f"{h + 2 * py}x{w + 2 * px}")
    if connections is None and c % groups:
        raise SpecError(f"layer {name!r}: input maps {c} not divisible by groups {groups}")
    oy, ox = out_size(h, ky, sy, py), out_size(w, kx, sx, px)
    if out is not None:
        if not (1 <= out[0] <= oy and 1 <= out[1] <= ox):
            raise SpecError(f"layer {name!r}: output {out[0]}x{out[1]} not reachable from input "
                            f"{h}x{w} with kernel {ky}x{kx}, stride {sy}x{sx}, pad {py}x{px} "
                            f"(at most {oy}x{ox})")
        oy, ox = out
    kc = c if connections is not None else c // groups
    return ConvLayer(name=name, Ox=ox, Oy=oy, Oc=maps, On=On, Kx=kx, Ky=ky, Kc=kc, Sx=sx, Sy=sy,
                     Px=px, Py=py, groups=groups, connections=connections)


def pad_for_output(in_extent: int, out: int, kernel: int, stride: int) -> int:
    """Smallest padding P ≥ 0 with out_size(in, K, S, P) ≥ out (used when a table gives only O)."""
    need = (out - 1) * stride + kernel - in_extent
    return max(0, math.ceil(need / 2))
