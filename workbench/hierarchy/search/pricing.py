"""How `search` prices one level's blocks over many tile points: pJ per bit into each level
(`pj_per_bit`), a transfer's energy (`side_cost`), and each (array, position) block's transfer
energy and footprint (`LevelBlocks`, eq. 1 and 2 of seed 001 with the codes of
`search.placements`); the compiled kernels price the same counts (`search.kernel`, called by
`search.calls`). Proofs: docs/search.md, "Counts and monotonicity"."""

from __future__ import annotations

import numpy as np

from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy, SizeEnergy
from workbench.hierarchy.search.placements import (
    BIT,
    G0BIT,
    INNER,
    LANE,
    ROLL,
    buffer_spec,
    lane_dims,
    moved_code,
    step_roll,
)


def pj_per_bit(hierarchy: Hierarchy, size_energy: SizeEnergy | None) -> np.ndarray:
    """[level, array] pJ per bit accessed (access_pj / access_bits)."""
    return np.array([[lvl.access_pj(a, size_energy) / lvl.access_bits for a in ARRAYS]
                     for lvl in hierarchy.levels])



def _window(c, stride: int, kernel: int):
    return np.where(stride >= kernel, c * kernel, (c - 1) * stride + kernel)


def side_cost(array: str, moved, coef: float, outputs, precision):
    """pJ of one transfer moving `moved` elements (O: write-backs, partial sums read back
    twice at partial-sum width), coef = pJ per bit of both sides together."""
    if array == "O":
        return coef * (outputs * 8 * precision.outputs
                       + 2 * (moved - outputs) * 8 * precision.partial_sums)
    bits = 8 * (precision.inputs if array == "I" else precision.weights)
    return coef * moved * bits


class LevelBlocks:
    """One on-chip level over a set of grid points (flat float arrays): for every (array,
    prefix) its transfer energy (pJ, one group) and footprint (bytes), computed once and shared
    by the placements using it. gamma: the level's group; lo, hi = t_{γ−1}, t_γ (t_L = P);
    step = min(u_d, t_{γ−1}), a datapath step's extent (lanes: `unrolled_dims`)."""

    def __init__(self, layer, grid: dict, gamma: int, on_chip: int, coef: dict,
                 precision, lanes: frozenset[str] = frozenset()) -> None:
        self.layer, self.coef, self.precision, self.gamma = layer, coef, precision, gamma
        self.lanes = lanes  # the datapath's unrolled dimensions (`step_bits`) and their lanes
        self.p = {d: grid[d][1] for d in DIMS}
        self.lo = {d: grid[d][0][gamma - 1] for d in DIMS}
        self.hi = {d: grid[d][0][gamma] if gamma < on_chip else self.p[d] for d in DIMS}
        self.step = {d: np.minimum(lane_count(lanes, d), self.lo[d]) for d in DIMS}
        self.outputs = self.p["N"] * self.p["M"] * self.p["Y"] * self.p["X"]
        self._memo: dict[tuple[str, int], tuple] = {}

    def block(self, array: str, prefix: int) -> tuple:
        """(energy pJ, buffer bytes) of `array` with the loops `prefix` inside its buffer
        (a code ≥ INNER: the innermost level's buffer inside group 0; rolling: it holds
        `buffer_spec`'s loops). moved = footprint × (Kx/kx)(Ky/ky)·Π_d P_d/c_d, every factor
        an integer, so the products are exact in any order and shared between codes
        (`_product`)."""
        key = (array, prefix)
        if key not in self._memo:
            lay, prec = self.layer, self.precision
            code = moved_code(prefix)
            if code >= INNER and self.gamma != 1:
                raise ValueError("only the innermost level's buffers lie inside group 0")
            which, kx, ky = self._which(code)
            refills = self._product(tuple(("r", d, which[d]) for d in DIMS))
            elements = self._elements(array, which, kx, ky)
            moved = elements * refills
            if (lay.Kx // kx) * (lay.Ky // ky) != 1:
                moved = moved * ((lay.Kx // kx) * (lay.Ky // ky))
            foot = self._held(array, prefix) if prefix & (ROLL | LANE) else elements
            width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}[array]
            self._memo[key] = (side_cost(array, moved, self.coef[array], self.outputs, prec),
                               foot * width)
        return self._memo[key]

    def _which(self, code: int) -> tuple[dict, int, int]:
        """Which tile per dimension ('lo', 'hi', 'one') and the kernel windows of a code."""
        lay = self.layer
        if code >= INNER:
            return ({d: "lo" if code & G0BIT[d] else "one" for d in DIMS},
                    lay.Kx if code & G0BIT["FX"] else 1, lay.Ky if code & G0BIT["FY"] else 1)
        return {d: "hi" if code & BIT[d] else "lo" for d in DIMS}, lay.Kx, lay.Ky

    def _elements(self, array: str, which: dict, kx: int, ky: int):
        """Elements of the array's block with those tiles and windows (eq. 1)."""
        if array == "W":
            return self._product((("c", "M", which["M"]), ("c", "C", which["C"]))) * (kx * ky)
        if array == "O":
            return self._product(tuple(("c", d, which[d]) for d in ("N", "M", "Y", "X")))
        return self._product((("c", "N", which["N"]), ("c", "C", which["C"]),
                              ("w", "Y", which["Y"], ky), ("w", "X", which["X"], kx)))

    def _held(self, array: str, code: int):
        """Elements a rolling code's buffer holds (`buffer_spec`: a stride's worth of a
        kernel loop it rolls along; along an unrolled output loop, a step's lanes) or a LANE
        code's (`lane_dims`: a step's lanes)."""
        held, sx, sy = buffer_spec(code)
        which, kx, ky = self._which(held)
        for q in (step_roll(code, self.lanes), *lane_dims(array, code, self.lanes)):
            if q is not None:
                which[q] = "step"
        lay = self.layer
        return self._elements(array, which, min(lay.Sx, kx) if sx else kx,
                              min(lay.Sy, ky) if sy else ky)

    def _product(self, keys: tuple):
        """The product of the factors `keys` (kind, dimension, which tile, [kernel window]):
        c_d, P_d/c_d or the window W(c_d, k), with c_d = t_{γ−1} (lo), t_γ (hi) or 1 (one);
        every prefix of `keys` kept, so codes sharing factors share the work."""
        if not keys:
            return 1.0
        if keys not in self._memo:
            kind, d, which = keys[-1][:3]
            c = {"lo": self.lo[d], "hi": self.hi[d], "one": 1.0, "step": self.step[d]}[which]
            if kind == "r":
                factor = self.p[d] / c
            elif kind == "w":
                factor = _window(c, self.layer.Sx if d == "X" else self.layer.Sy, keys[-1][3])
            else:
                factor = c
            self._memo[keys] = self._product(keys[:-1]) * factor
        return self._memo[keys]


def lane_count(lanes: frozenset[str], dim: str) -> int:
    """Lanes along `dim` (`unrolled_dims`' `Lanes`; 1 when not unrolled)."""
    if dim not in lanes:
        return 1
    if not hasattr(lanes, "of"):
        raise TypeError(f"the lanes along {dim} are unknown: pass unrolled_dims(datapath)")
    return lanes.of(dim)



__all__ = ["LevelBlocks", "lane_count", "pj_per_bit", "side_cost"]
