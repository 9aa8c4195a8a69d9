"""Accumulator bounds of seed 000 §4.4: how many of the accumulator bits BW(in) + BW(w) may use.

The product of BW(in)- and BW(w)-bit codes needs BW(in) + BW(w) − 1 bits; the accumulator must
also hold Δ extra integer bits: BW(in) + BW(w) − 1 + Δ ≤ BW(acc), so
available = BW(acc) + 1 − Δ with, per bound:
- worst:   Δ = ⌈log2 K⌉                               (K products of worst-case values)
- weights: Δ = ⌊log2 Σ|w|⌋ + 1 − IL(w)                (known weights, worst-case inputs)
- data:    Δ = max(0, IL(out) − IL(in) − IL(w))        (final sums measured on data; needs the
           register to wrap, as intermediate sums may overflow)
"""

from __future__ import annotations

import math

from workbench.errors import WorkbenchError
from workbench.quant.fixed import integer_length

BOUNDS = ("worst", "weights", "data")


def delta_bits(bound: str, *, K: int | None = None, w_abs_sum: float | None = None,
               w_abs_max: float | None = None, in_abs_max: float | None = None,
               acc_abs_max: float | None = None) -> int:
    """Extra accumulator integer bits Δ for a bound (see the module docstring)."""
    def need(**values: object) -> None:
        missing = [k for k, v in values.items() if v is None]
        if missing:
            raise WorkbenchError(f"the {bound!r} bound needs {', '.join(missing)}")

    if bound == "worst":
        need(K=K)
        if K < 1:
            raise WorkbenchError(f"kernel size K must be positive, got {K}")
        return math.ceil(math.log2(K))
    if bound == "weights":
        need(w_abs_sum=w_abs_sum, w_abs_max=w_abs_max)
        return integer_length(w_abs_sum) - integer_length(w_abs_max)
    if bound == "data":
        need(in_abs_max=in_abs_max, w_abs_max=w_abs_max, acc_abs_max=acc_abs_max)
        return max(0, integer_length(acc_abs_max) - integer_length(in_abs_max)
                   - integer_length(w_abs_max))
    raise WorkbenchError(f"unknown bound {bound!r}; valid: " + ", ".join(BOUNDS))


def available_bits(acc_bits: int, bound: str, **ranges: float) -> int:
    """BW(in) + BW(w) allowed by a BW(acc)-bit accumulator under a bound: BW(acc) + 1 − Δ."""
    if isinstance(acc_bits, bool) or not isinstance(acc_bits, int) or acc_bits < 2:
        raise WorkbenchError(f"accumulator bits must be an integer >= 2, got {acc_bits!r}")
    return acc_bits + 1 - delta_bits(bound, **ranges)


def format_delta(bound: str, ils: tuple[int, int], *, K: int | None = None,
                 w_abs_sum: float | None = None, acc_abs_max: float | None = None) -> int:
    """Δ of a bound for given formats: their integer lengths ils = (IL(in), IL(w)), each
    BW − 1 − FL, stand in for the ones measured from data (a model's own formats)."""
    il_in, il_w = ils
    if bound == "weights":
        if w_abs_sum is None:
            raise WorkbenchError("the 'weights' bound needs w_abs_sum")
        return integer_length(w_abs_sum) - il_w
    if bound == "data":
        if acc_abs_max is None:
            raise WorkbenchError("the 'data' bound needs acc_abs_max")
        return max(0, integer_length(acc_abs_max) - il_in - il_w)
    return delta_bits(bound, K=K)
