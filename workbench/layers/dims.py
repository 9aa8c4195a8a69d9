"""The one vocabulary of a conv layer's loop dimensions (docs/architecture.md, "One mapping").

`Dim` names the seven loops of a convolution; every model speaks it: the seed 000 `Tile`
(`tile[Dim.X]`), the seed 002 dataflow model (tiles keyed by `Dim`, loops as `Loop(dim,
level)`) and the hierarchy's `Blocking`. The seeds' own notations live here only, as label
tables for display and for reading old inputs:

- seed 000 (§5.2): tile sizes TOx TOy TOc TOn TKc, tile loops o_x o_y o_c o_n k_c and element
  loops x y oc n kc kx ky of its listings; the SIMD mapping's vector dimensions ox oy oc on kc;
- seed 002 (§II): tile sizes jss iss css mss nss, element loops FX FY SX SY IF OF N and the
  loops over tiles TSX TSY TIF TOF TN.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple

from workbench.errors import WorkbenchError


class Dim(StrEnum):
    """A loop dimension of a convolution; values are the letters (str keys keep working).
    Each member's `__doc__` says what it counts and in which unit."""

    X = "X", "output columns (elements along a row of an output map)"
    Y = "Y", "output rows (elements along a column of an output map)"
    C = "C", "input channels per group (maps)"
    M = "M", "output maps per group (maps; seed 001's K)"
    N = "N", "images (of the batch)"
    FX = "FX", "kernel columns (taps)"
    FY = "FY", "kernel rows (taps)"

    def __new__(cls, value: str, doc: str) -> Dim:
        member = str.__new__(cls, value)
        member._value_ = value
        member.__doc__ = doc
        return member

    __hash__ = str.__hash__  # hashed as its letter, at str speed (dict keys in hot loops)


LAYER_DIMS = (Dim.X, Dim.Y, Dim.C, Dim.M, Dim.N)   # the dimensions a tile cuts
KERNEL_DIMS = (Dim.FX, Dim.FY)                     # loops a tile never cuts


class Loop(NamedTuple):
    """One loop of a tiled nest: its dimension and its level (0: the loop over the elements
    of a tile, 1: the loop over tiles; the hierarchy's loop groups count on)."""

    dim: Dim
    level: int


# seed 000: the tile (a Tile's columns, in the seed's order) and the listing loops
SEED000_ORDER = (Dim.X, Dim.Y, Dim.M, Dim.N, Dim.C)
SEED000_LABEL = {Dim.X: "TOx", Dim.Y: "TOy", Dim.M: "TOc", Dim.N: "TOn", Dim.C: "TKc"}
SEED000_LOOP = {Loop(Dim.X, 1): "o_x", Loop(Dim.Y, 1): "o_y", Loop(Dim.M, 1): "o_c",
                Loop(Dim.N, 1): "o_n", Loop(Dim.C, 1): "k_c", Loop(Dim.X, 0): "x",
                Loop(Dim.Y, 0): "y", Loop(Dim.M, 0): "oc", Loop(Dim.N, 0): "n",
                Loop(Dim.C, 0): "kc", Loop(Dim.FX, 0): "kx", Loop(Dim.FY, 0): "ky"}

# the SIMD mapping's vectorized dimension (`workbench simd --vector-dim`, `Plan.vector_dim`)
SIMD_LABEL = {Dim.X: "ox", Dim.Y: "oy", Dim.M: "oc", Dim.N: "on", Dim.C: "kc"}
SIMD_DIM = {label: d for d, label in SIMD_LABEL.items()}

# seed 002: the tile sizes and the twelve loops
SEED002_TILE = {Dim.X: "jss", Dim.Y: "iss", Dim.C: "css", Dim.M: "mss", Dim.N: "nss"}
SEED002_LOOP = {Loop(Dim.FX, 0): "FX", Loop(Dim.FY, 0): "FY", Loop(Dim.X, 0): "SX",
                Loop(Dim.Y, 0): "SY", Loop(Dim.C, 0): "IF", Loop(Dim.M, 0): "OF",
                Loop(Dim.N, 0): "N", Loop(Dim.X, 1): "TSX", Loop(Dim.Y, 1): "TSY",
                Loop(Dim.C, 1): "TIF", Loop(Dim.M, 1): "TOF", Loop(Dim.N, 1): "TN"}


def seed000_columns() -> tuple[str, ...]:
    """The tile columns users see (tables, JSON, CSV): TOx, TOy, TOc, TOn, TKc."""
    return tuple(SEED000_LABEL[d] for d in SEED000_ORDER)


def read_tiles(tiles: Mapping, labels: Mapping[Dim, str] = SEED002_TILE) -> dict[Dim, object]:
    """Tile sizes keyed by `Dim` from a mapping keyed by Dim (or its letter) or by the seed's
    labels (an old input: jss… by default); values kept as given (ints or arrays)."""
    by_label = {label: d for d, label in labels.items()}
    out: dict[Dim, object] = {}
    for key, value in tiles.items():
        if key in by_label:
            out[by_label[key]] = value
        elif key in Dim.__members__:
            out[Dim(key)] = value
        else:
            raise WorkbenchError(f"tile size {key!r}: not a dimension; dimensions: "
                                 + ", ".join(labels.values()) + " or "
                                 + " ".join(d.value for d in labels))
    missing = [d for d in labels if d not in out]
    if missing:
        raise WorkbenchError("tile sizes lack " + ", ".join(f"{d} ({labels[d]})"
                                                            for d in missing))
    return out


def read_loop(loop: object, labels: Mapping[Loop, str] = SEED002_LOOP) -> Loop:
    """A `Loop` from a Loop, a (dim, level) pair or the seed's label (an old input: TSX…)."""
    if isinstance(loop, tuple) and len(loop) == 2:
        dim, level = loop
        if dim in Dim.__members__ and (Dim(dim), level) in labels:
            return Loop(Dim(dim), int(level))
    by_label = {label: key for key, label in labels.items()}
    if isinstance(loop, str) and loop in by_label:
        return by_label[loop]
    raise WorkbenchError(f"loop {loop!r}: not a loop of the nest; loops: "
                         + ", ".join(labels.values()))


def extents(layer) -> dict[Dim, int]:
    """One group's loop extents of a conv layer (a `layers.ConvLayer`): output columns and
    rows, input and output maps per group, images, kernel columns and rows (elements)."""
    return {Dim.X: layer.Ox, Dim.Y: layer.Oy, Dim.C: layer.Kc, Dim.M: layer.Oc // layer.groups,
            Dim.N: layer.On, Dim.FX: layer.Kx, Dim.FY: layer.Ky}
