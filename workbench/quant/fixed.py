"""Dynamic fixed point (seed 000 §4.1): formats, quantization, two's-complement registers.

A format has bit width BW and fractional length FL; with the sign bit BW = IL + FL + 1. An
integer code q stands for the value q · 2^−FL and lies in [−2^(BW−1), 2^(BW−1) − 1].
Rounding is to nearest with ties away from zero (as C's round()); arrays are int64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.errors import WorkbenchError


@dataclass(frozen=True, slots=True)
class FixedFormat:
    """A fixed-point format: bw total bits (sign included), fl fractional bits (may be < 0)."""

    bw: int
    fl: int

    def __post_init__(self) -> None:
        if isinstance(self.bw, bool) or not isinstance(self.bw, int) or not 1 <= self.bw <= 62:
            raise WorkbenchError(f"fixed-point bit width must be an integer in 1..62, "
                                 f"got {self.bw!r}")
        if isinstance(self.fl, bool) or not isinstance(self.fl, int):
            raise WorkbenchError(f"fractional length must be an integer, got {self.fl!r}")

    @property
    def il(self) -> int:
        """Integer bits: BW − FL − 1."""
        return self.bw - self.fl - 1

    @property
    def qmin(self) -> int:
        return -(1 << (self.bw - 1))

    @property
    def qmax(self) -> int:
        return (1 << (self.bw - 1)) - 1

    @property
    def step(self) -> float:
        return 2.0 ** -self.fl

    def __str__(self) -> str:
        return f"Q{self.il}.{self.fl} ({self.bw} bits)"


def integer_length(max_abs: float) -> int:
    """IL = ⌊log2 max|x|⌋ + 1 (seed 000 eq. 4.6); a group of zeros needs none."""
    if max_abs < 0 or not math.isfinite(max_abs):
        raise WorkbenchError(f"range must be a finite non-negative number, got {max_abs!r}")
    if max_abs == 0:
        return 0
    return math.floor(math.log2(max_abs)) + 1


def format_for(max_abs: float, bw: int) -> FixedFormat:
    """The format with the most fractional bits that holds max|x| in bw bits."""
    return FixedFormat(bw, bw - 1 - integer_length(max_abs))


def round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def to_fixed(x: np.ndarray | float, fmt: FixedFormat) -> np.ndarray:
    """Integer codes: clip(round(x · 2^FL), −2^(BW−1), 2^(BW−1) − 1) (eq. 4.3 with saturation)."""
    scaled = np.asarray(x, dtype=np.float64) * 2.0 ** fmt.fl
    rounded = np.copysign(np.floor(np.abs(scaled) + 0.5), scaled)
    return np.clip(rounded, fmt.qmin, fmt.qmax).astype(np.int64)


def to_float(q: np.ndarray | int, fmt: FixedFormat) -> np.ndarray:
    """Values of integer codes: q · 2^−FL (eq. 4.4)."""
    return np.asarray(q, dtype=np.float64) * 2.0 ** -fmt.fl


def quantize(x: np.ndarray | float, bw: int, fl: int) -> np.ndarray | float:
    """x rounded to the nearest code of (bw, fl), as a float: quantize(3.123432, 16, 8) = 3.125."""
    fmt = FixedFormat(bw, fl)
    out = to_float(to_fixed(x, fmt), fmt)
    return float(out) if np.ndim(x) == 0 else out


def saturate(q: np.ndarray, bits: int) -> np.ndarray:
    """Clip integers to the bits-wide two's-complement range (in place when q is a temporary)."""
    return np.clip(q, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def wrap(q: np.ndarray, bits: int) -> np.ndarray:
    """Reduce integers modulo 2^bits into the two's-complement range (what a register does).

    int32 input stays int32 when bits ≤ 30 and every |q| < 2^30 (no intermediate overflows);
    anything else is computed in int64."""
    q = np.asarray(q)
    if q.dtype != np.int32:
        q = q.astype(np.int64)
    half = 1 << (bits - 1)
    if q.size == 0:
        return q
    low, high = q.min(), q.max()
    if low >= -half and high < half:
        return q  # already in range: wrapping changes nothing (and costs a copy)
    if q.dtype == np.int32 and (bits > 30 or low < -(1 << 30) or high >= 1 << 30):
        q = q.astype(np.int64)
    q = q + q.dtype.type(half)
    q &= q.dtype.type((1 << bits) - 1)
    q -= q.dtype.type(half)
    return q


def requantize(q: np.ndarray, src: FixedFormat, dst: FixedFormat) -> np.ndarray:
    """Codes of src as codes of dst: arithmetic shift by src.fl − dst.fl with round to nearest
    (ties away from zero) on right shifts, then saturation to dst.bw.

    Right shifts (≤ 30) and unshifted clips keep int32 input in int32 when src.bw ≤ 31
    (q + half cannot overflow); everything else is computed in int64."""
    q = np.asarray(q)
    shift = src.fl - dst.fl
    narrow = q.dtype == np.int32 and 0 <= shift <= 30 and src.bw <= 31 and dst.bw <= 32
    if not narrow and q.dtype != np.int64:
        q = q.astype(np.int64)
    kind = q.dtype.type
    if shift > 0:
        # round half away from zero = floor((q + half − [q < 0]) / 2^shift)
        out = q + kind(1 << (shift - 1))
        out -= q < 0
        out >>= kind(shift)
        q = out
    elif shift < 0:
        q = q << kind(-shift)
    elif src.bw <= dst.bw:
        return q  # same scale, and every src code fits dst
    else:
        q = q.copy()
    return np.clip(q, dst.qmin, dst.qmax, out=q)
