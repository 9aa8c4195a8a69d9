"""Conv and pooling layers from an importer's window description, with the producer's real
input size (sizes in elements).

A file gives the input extent I, kernel K, stride S, dilation D and padding P_begin, P_end;
the output is O = ⌊(I + P_begin + P_end − (K − 1)·D − 1) / S⌋ + 1. The ConvLayer keeps
P_begin as Px and sets Px_end so that its input extent is exactly I:
Px_end = (O − 1)·S + (K − 1)·D + 1 − P_begin − I, which is P_end less the trailing input
columns the stride steps over (so it may be negative, down to −(S − 1)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import SpecError
from workbench.layers.spec import ConvLayer, PoolLayer, Shape, out_size

Pair = tuple[int, int]  # (y, x)


def _positive(where: str, **values: Sequence[int] | int) -> None:
    for field, value in values.items():
        items = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in items):
            raise SpecError(f"{where}: {field} must be positive integers, got {value!r}")


def _extent(where: str, axis: str, size: int, kernel: int, stride: int, dilation: int,
            begin: int, end: int) -> tuple[int, int]:
    """(O, end padding for ConvLayer) of one axis."""
    span = (kernel - 1) * dilation + 1
    if begin < 0 or end < 0:
        raise SpecError(f"{where}: pads must be non-negative, got {begin}, {end} on {axis}")
    if size + begin + end < span:
        raise SpecError(f"{where}: kernel span {span} larger than padded input "
                        f"{size + begin + end} on {axis}")
    out = (size + begin + end - span) // stride + 1
    return out, (out - 1) * stride + span - begin - size


@dataclass(frozen=True)
class ConvWindow:
    """A convolution's window, (height, width) each: kernel, stride, padding before and after
    (after: as before when None) and dilation."""

    kernel: Pair
    stride: Pair = (1, 1)
    pad_begin: Pair = (0, 0)
    pad_end: Pair | None = None
    dilation: Pair = (1, 1)


def exact_conv(name: str, in_shape: Shape, maps: int, window: ConvWindow, groups: int = 1,
               On: int = 1, out: Pair | None = None, where: str | None = None) -> ConvLayer:
    """A conv layer reading exactly `in_shape` (C, H, W) through `window`; `out` (Oy, Ox),
    when the file states it, must agree with the window arithmetic."""
    kernel, stride, pad_begin, pad_end, dilation = (window.kernel, window.stride,
                                                    window.pad_begin, window.pad_end,
                                                    window.dilation)
    where = where or f"layer {name!r}"
    pad_end = pad_begin if pad_end is None else pad_end
    _positive(where, kernel=kernel, strides=stride, dilations=dilation, group=groups,
              output_maps=maps)
    c, h, w = in_shape
    if c % groups:
        raise SpecError(f"{where}: input maps {c} not divisible by group {groups}")
    if maps % groups:
        raise SpecError(f"{where}: output maps {maps} not divisible by group {groups}")
    oy, end_y = _extent(where, "height", h, kernel[0], stride[0], dilation[0], pad_begin[0],
                        pad_end[0])
    ox, end_x = _extent(where, "width", w, kernel[1], stride[1], dilation[1], pad_begin[1],
                        pad_end[1])
    if out is not None and tuple(out) != (oy, ox):
        raise SpecError(f"{where}: output {out[0]}x{out[1]} disagrees with input {h}x{w}, "
                        f"kernel {kernel[0]}x{kernel[1]}, stride {stride[0]}x{stride[1]}, "
                        f"pads {pad_begin}/{pad_end}, dilation {dilation} (gives {oy}x{ox})")
    return ConvLayer(name=name, Ox=ox, Oy=oy, Oc=maps, On=On, Kx=kernel[1], Ky=kernel[0],
                     Kc=c // groups, Sx=stride[1], Sy=stride[0], Px=pad_begin[1],
                     Py=pad_begin[0], groups=groups, Dx=dilation[1], Dy=dilation[0],
                     Px_end=None if end_x == pad_begin[1] else end_x,
                     Py_end=None if end_y == pad_begin[0] else end_y)


def fitting_pool(name: str, in_shape: Shape, kernel: Pair, stride: Pair, pad_begin: Pair,
                 pad_end: Pair, out: Pair, mode: str, On: int = 1) -> PoolLayer | None:
    """A PoolLayer (symmetric padding, floor or ceil rounding) with exactly output `out`
    (Oy, Ox), or None when none matches (e.g. very asymmetric pads)."""
    c, h, w = in_shape
    for py in dict.fromkeys((pad_begin[0], pad_end[0], max(pad_begin[0], pad_end[0]))):
        for px in dict.fromkeys((pad_begin[1], pad_end[1], max(pad_begin[1], pad_end[1]))):
            for ceil in (False, True):
                if kernel[0] > h + 2 * py or kernel[1] > w + 2 * px:
                    continue
                if (out_size(h, kernel[0], stride[0], py, ceil),
                        out_size(w, kernel[1], stride[1], px, ceil)) == tuple(out):
                    return PoolLayer(name, c, w, h, kernel[1], kernel[0], stride[1], stride[0],
                                     px, py, On=On, mode=mode, ceil_mode=ceil)
    return None
