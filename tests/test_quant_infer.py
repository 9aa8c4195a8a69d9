"""Bit-true integer inference against scalar references, and float inference against torch."""

from __future__ import annotations

import itertools

import numpy as np
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import layers, quant
from workbench.layers import ConvLayer
from workbench.quant import FixedFormat, LayerFormat, infer


def scalar_conv(layer: ConvLayer, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray,
                bits: int, overflow: str) -> np.ndarray:
    """One output at a time; the register is updated after every product, in the documented
    order (input map, kernel row, kernel column): wrap or clip at each step. NCHW in and out."""
    n = q_in.shape[0]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    per_out, per_in = layer.Oc // layer.groups, layer.Kc
    out = np.zeros((n, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    for b, oc, oy, ox in itertools.product(range(n), range(layer.Oc), range(layer.Oy),
                                           range(layer.Ox)):
        acc = int(q_b[oc])  # the register holds the bias: wrap or clip it in
        acc = (acc - lo) % (1 << bits) + lo if overflow == "wrap" else min(max(acc, lo), hi)
        group = oc // per_out
        for kc, ky, kx in itertools.product(range(layer.Kc), range(layer.Ky), range(layer.Kx)):
            y, x = oy * layer.Sy + ky - layer.Py, ox * layer.Sx + kx - layer.Px
            if 0 <= y < q_in.shape[2] and 0 <= x < q_in.shape[3]:
                acc += int(q_in[b, group * per_in + kc, y, x]) * int(q_w[oc, kc, ky, kx])
                if overflow == "wrap":
                    acc = (acc - lo) % (1 << bits) + lo
                else:
                    acc = min(max(acc, lo), hi)
        out[b, oc, oy, ox] = acc
    return out


@st.composite
def quantized_case(draw: st.DrawFn):
    k = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 2))
    layer = ConvLayer(name="q", Ox=draw(st.integers(1, 4)), Oy=draw(st.integers(1, 3)),
                      Oc=groups * draw(st.integers(1, 3)), Kx=k, Ky=k, Kc=draw(st.integers(1, 3)),
                      Sx=draw(st.integers(1, 2)), Sy=draw(st.integers(1, 2)), Px=(k - 1) // 2,
                      Py=(k - 1) // 2, groups=groups)
    n = draw(st.integers(1, 2))
    bw_in, bw_w, bits = draw(st.integers(2, 10)), draw(st.integers(2, 10)), draw(st.integers(4, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 31)))
    q_in = rng.integers(-(1 << (bw_in - 1)), 1 << (bw_in - 1), (n, layer.in_maps, layer.Iy,
                                                               layer.Ix))
    q_w = rng.integers(-(1 << (bw_w - 1)), 1 << (bw_w - 1), (layer.Oc, layer.Kc, k, k))
    q_b = rng.integers(-(1 << (bits - 2)), 1 << (bits - 2), layer.Oc)
    fmt = LayerFormat(FixedFormat(bw_in, 0), FixedFormat(bw_w, 0), FixedFormat(bits, 0), bits,
                      draw(st.sampled_from(["wrap", "saturate"])))
    return layer, q_in, q_w, q_b, fmt


@settings(max_examples=examples(150))
@given(case=quantized_case())
def test_conv_fixed_equals_scalar_reference(case) -> None:
    layer, q_in, q_w, q_b, fmt = case
    got = infer.conv_fixed(layer, infer.to_channel_major(q_in), q_w, q_b, fmt)
    want = scalar_conv(layer, q_in, q_w, q_b, fmt.acc_bits, fmt.overflow)
    np.testing.assert_array_equal(np.swapaxes(got, 0, 1), want)


def test_wide_operands_take_the_int64_path() -> None:
    """Operands too wide for exact float sums still wrap exactly (int64 wraps mod 2^64)."""
    layer = ConvLayer(name="w", Ox=2, Oy=1, Oc=2, Kx=1, Ky=1, Kc=3)
    rng = np.random.default_rng(1)
    q_in = rng.integers(-(1 << 29), 1 << 29, (1, 3, 1, 2))
    q_w = rng.integers(-(1 << 29), 1 << 29, (2, 3, 1, 1))
    fmt = LayerFormat(FixedFormat(30, 0), FixedFormat(30, 0), FixedFormat(40, 0), 40)
    got = infer.conv_fixed(layer, infer.to_channel_major(q_in), q_w, np.zeros(2, np.int64), fmt)
    want = scalar_conv(layer, q_in, q_w, np.zeros(2, np.int64), 40, "wrap")
    np.testing.assert_array_equal(np.swapaxes(got, 0, 1), want)


LENET = layers.load_network("lenet5")


def test_float_inference_matches_torch_logits() -> None:
    """The training script stored torch's logits of the first 20 test digits."""
    from workbench.quant import mnist

    params = quant.load_weights("lenet5_mnist.npz", LENET)
    x, _ = mnist.load("test")
    reference = np.load(quant.weights.data_file("weights", "lenet5_mnist.npz"))
    np.testing.assert_allclose(infer.logits(LENET, params, x[:20]),
                               reference["reference.logits"], atol=1e-4, rtol=1e-4)


def test_pooling_and_lrn_integer_paths() -> None:
    net = layers.network_from_dict({"name": "p", "input": [4, 6, 6], "layers": [
        {"name": "mp", "type": "pool", "mode": "max", "kernel": 3, "stride": 2, "pad": 1},
        {"name": "ap", "type": "pool", "mode": "avg", "kernel": 2, "stride": 1},
        {"name": "n", "type": "lrn", "size": 3}]}, "test")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 6, 6))
    fmt = FixedFormat(12, 8)
    codes = quant.to_fixed(x, fmt)
    act = infer.Act(infer.to_channel_major(codes), fmt)
    for layer in net:
        floats = infer.apply_layer(layer, infer.Act(act.as_float(np.float64)), {}, None)
        act = infer.apply_layer(layer, act, {}, None)
        step = act.fmt.step
        assert np.abs(act.as_float(np.float64) - floats.values).max() <= step / 2 + 1e-12
    assert act.fmt.bw == 32  # LRN is kept in 32-bit fixed point
