"""Splitting a tiled layer over cores: which part of the layer each core computes.

A layer is cut along one extent into as-even-as-possible shares, one per core used:

- ``oc``: output maps (per group), seed 004 §5.2.1; on a fully connected layer these are the
  row bands of seed 004 §5.4.2. Every core reads the whole input: the input is *shared*.
- ``xy``: output rows (image area, seed 001 §3.3 "XY partitioning", bands along Y). Every core
  reads all weights: the weights are shared. Input halos overlap between bands.
- ``on``: images of the batch. The weights are shared.
- ``g``: whole groups of a grouped layer (a depthwise layer's channels). Each core reads its
  groups' inputs and weights only: nothing is shared. A dense layer has one group.

A grouped layer's ``oc``, ``xy`` and ``on`` shares keep its groups (an ``oc`` share has `size`
maps in every group), and their tiles may span whole groups like any layer's (`tiling.model`);
a depthwise layer (one map per group) splits by ``xy``, ``on`` or ``g``. Each core tiles its
share as a layer of its own (`share_layer`); the first ``extent % k`` cores get one more
row/map/image/group than the others, so a split has at most two distinct share shapes. Counts
of a share depend only on its shape (padding never enters them), so an XY band is a layer with
its rows and no vertical padding.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from workbench.errors import SpecError, UnknownNameError
from workbench.layers.spec import ConvLayer
from workbench.tiling.model import dims

SPLITS = ("oc", "xy", "on", "g")
SHARED = {"oc": "in", "xy": "w", "on": "w", "g": ""}  # the array every core reads whole, if any
SPLIT_TITLES = {"oc": "output maps", "xy": "image rows", "on": "batch", "g": "groups"}
_ONE = {"oc": "output map", "xy": "image row", "on": "image", "g": "group"}


@dataclass(frozen=True, slots=True)
class Share:
    """`cores` cores that each compute a `layer`-shaped part; `starts`: where each core's part
    begins along the split extent (maps per group, rows or images)."""

    layer: ConvLayer
    cores: int
    starts: tuple[int, ...]


def check_split(kind: str) -> None:
    if kind not in SPLITS:
        raise UnknownNameError(f"unknown split {kind!r}; valid: " + ", ".join(SPLITS))


def split_extent(layer: ConvLayer, kind: str) -> int:
    """How many maps (per group), rows, images or groups the split divides."""
    check_split(kind)
    _, oy, oc, on, _ = dims(layer)
    return {"oc": oc, "xy": oy, "on": on, "g": layer.groups}[kind]


def max_cores(layer: ConvLayer, kind: str, cores: int) -> int:
    """The most cores a split can use: one row/map/image each at least."""
    return min(cores, split_extent(layer, kind))


def share_layer(layer: ConvLayer, kind: str, size: int) -> ConvLayer:
    """The part of `layer` one core computes when its share is `size` along the split."""
    fields = {"oc": {"Oc": size * layer.groups}, "xy": {"Oy": size, "Py": 0, "Py_end": None},
              "on": {"On": size},
              "g": {"Oc": size * (layer.Oc // layer.groups), "groups": size}}[kind]
    return dataclasses.replace(layer, name=f"{layer.name}[{kind}{size}]", connections=None,
                               **fields)


def shares(layer: ConvLayer, kind: str, k: int) -> tuple[Share, ...]:
    """The distinct shares of a split over k cores, larger first, with their core counts."""
    extent = split_extent(layer, kind)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= extent:
        raise SpecError(f"layer {layer.name!r}: a {kind!r} split needs 1..{extent} cores "
                        f"(one {_ONE[kind]} each at least), got {k!r}")
    small, extra = divmod(extent, k)
    starts = [i * small + min(i, extra) for i in range(k)]
    out = []
    if extra:
        out.append(Share(share_layer(layer, kind, small + 1), extra, tuple(starts[:extra])))
    if k > extra:
        out.append(Share(share_layer(layer, kind, small), k - extra, tuple(starts[extra:])))
    return tuple(out)


def bus_accesses(kind: str, per_share: list[tuple[int, int, int, int]],
                 broadcast: bool) -> dict[str, int]:
    """External accesses over the shared bus (elements per array "in", "w", "out") of a split
    whose shares, as (cores, input, weight, output accesses of one such core), are given.

    Private arrays cross the bus once per core. The shared array (`SHARED[kind]`) too, unless
    the DMA broadcasts: then one fetch serves every core of a share, all of which run the same
    program (same shape, tile and schedule) and so fetch the same boxes in the same order.
    A broadcast serves the cores of one program, so each share's fetches cross once even where
    two shares' boxes happen to coincide (then this is an upper bound)."""
    check_split(kind)
    total = {"in": 0, "w": 0, "out": 0}
    for cores, *acc in per_share:
        for array, value in zip(("in", "w", "out"), acc, strict=True):
            copies = 1 if broadcast and array == SHARED[kind] else cores
            total[array] += copies * int(value)
    return total
