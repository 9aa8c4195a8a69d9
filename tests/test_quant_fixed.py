"""Fixed-point core and accumulator bounds: seed 000 chapter 4 worked examples and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from workbench import quant
from workbench.errors import WorkbenchError
from workbench.quant import FixedFormat


def test_seed_worked_examples() -> None:
    assert quant.quantize(3.123432, bw=16, fl=8) == 3.125            # Q8.8 example
    assert quant.integer_length(3.5324) == 2                          # §4.1
    assert quant.format_for(3.5324, 16) == FixedFormat(16, 13)        # FL = 16 − 1 − 2
    assert quant.available_bits(16, "worst", K=800) == 7              # §4.4
    assert quant.available_bits(16, "weights", w_abs_sum=27.41, w_abs_max=0.2593) == 11
    assert quant.available_bits(16, "data", in_abs_max=3.946, w_abs_max=0.2593,
                                acc_abs_max=12.61) == 14


def test_eq_4_12_worst_case_growth() -> None:
    """Summing n values of BW bits needs BW + ⌈log2 n⌉ bits: 8-bit x 8-bit over 1600 taps: 26."""
    assert 8 + 8 - 1 + quant.delta_bits("worst", K=1600) == 26


@given(x=st.floats(-100, 100, allow_nan=False), bw=st.integers(4, 24), extra=st.integers(0, 3))
def test_round_trip_error_within_half_step(x: float, bw: int, extra: int) -> None:
    fmt = quant.format_for(abs(x) + 1e-9, bw)
    fmt = FixedFormat(bw, fmt.fl - extra)
    assume(fmt.qmin * fmt.step <= x <= fmt.qmax * fmt.step)  # inside the representable range
    error = abs(quant.quantize(x, fmt.bw, fmt.fl) - x)
    assert error <= fmt.step / 2 + 1e-12


@given(values=st.lists(st.integers(-(2 ** 20), 2 ** 20), min_size=1, max_size=50),
       bits=st.integers(2, 30), seed=st.integers(0, 1000))
def test_wrap_is_order_independent(values: list[int], bits: int, seed: int) -> None:
    """A wrapping register gives exact integer arithmetic modulo 2^bits in any order."""
    order = np.random.default_rng(seed).permutation(len(values))
    acc = 0
    for i in order:
        acc = int(quant.wrap(np.int64(acc + values[i]), bits))
    exact = sum(values) % (1 << bits)
    assert acc % (1 << bits) == exact
    assert -(1 << (bits - 1)) <= acc < (1 << (bits - 1))


def test_fig_4_6_intermediate_overflow() -> None:
    """Partial sums overflow an 8-bit register but the final sum fits: exact when wrapping,
    wrong when saturating."""
    products = [100, 100, -150]
    wrapped = saturated = 0
    for p in products:
        wrapped = int(quant.wrap(np.int64(wrapped + p), 8))
        saturated = int(quant.saturate(np.int64(saturated + p), 8))
    assert sum(products) == 50 and wrapped == 50 and saturated == 127 - 150


@given(q=st.integers(-(2 ** 30), 2 ** 30), src_fl=st.integers(-4, 20), dst_fl=st.integers(-4, 20),
       bw=st.integers(2, 31))
def test_requantize_rounds_and_saturates(q: int, src_fl: int, dst_fl: int, bw: int) -> None:
    src, dst = FixedFormat(32, src_fl), FixedFormat(bw, dst_fl)
    got = int(quant.requantize(np.array([q]), src, dst)[0])
    exact = q * 2.0 ** (dst_fl - src_fl)  # exact in float64 for these magnitudes
    rounded = np.sign(exact) * np.floor(abs(exact) + 0.5)
    assert got == int(np.clip(rounded, dst.qmin, dst.qmax))


@given(seed=st.integers(0, 2 ** 31), src_bw=st.integers(2, 31), shift=st.integers(-3, 30),
       dst_bw=st.integers(2, 32), bits=st.integers(2, 32))
def test_int32_registers_agree_with_int64(seed: int, src_bw: int, shift: int, dst_bw: int,
                                          bits: int) -> None:
    """The int32 fast paths of wrap and requantize give the int64 results, edges included."""
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (src_bw - 1)), (1 << (src_bw - 1)) - 1
    q = np.concatenate([rng.integers(lo, hi + 1, 200), [lo, hi, 0, -1, 1]])
    src, dst = FixedFormat(src_bw, 8 + shift), FixedFormat(dst_bw, 8)
    narrow, wide = quant.requantize(q.astype(np.int32), src, dst), quant.requantize(q, src, dst)
    np.testing.assert_array_equal(narrow, wide)
    big = np.concatenate([q, rng.integers(-(1 << 31), 1 << 31, 50), [-(1 << 31), (1 << 31) - 1]])
    np.testing.assert_array_equal(quant.wrap(big.astype(np.int32), bits), quant.wrap(big, bits))


def test_bad_inputs() -> None:
    with pytest.raises(WorkbenchError, match="unknown bound 'tight'"):
        quant.available_bits(16, "tight", K=9)
    with pytest.raises(WorkbenchError, match="needs K"):
        quant.available_bits(16, "worst")
    with pytest.raises(WorkbenchError, match="bit width must be an integer in 1..62"):
        FixedFormat(0, 3)
