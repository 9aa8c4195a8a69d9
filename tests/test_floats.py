"""Float formats (`quant.floats`): roundings against independent references (numpy's float16,
ml_dtypes' bfloat16 and float8 types), and the per-layer accuracy and bytes of a format."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import layers, quant
from workbench.errors import SpecError
from workbench.quant import floats, mnist

ml_dtypes = pytest.importorskip("ml_dtypes")
REFERENCE = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16,
             "fp8-e4m3": ml_dtypes.float8_e4m3fn, "fp8-e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.property
@settings(deadline=None)
@given(name=st.sampled_from(sorted(REFERENCE)), seed=st.integers(0, 2 ** 31),
       scale=st.sampled_from([1e-9, 1e-5, 1e-2, 1.0, 100.0, 1e4]))
def test_rounding_equals_the_reference_types(name: str, seed: int, scale: float) -> None:
    """Within range (normal and subnormal values, exact ties included): the same number."""
    fmt = floats.FORMATS[name]
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal(500) * scale,
                        floats.FORMATS[name].round(rng.standard_normal(50) * scale) * 1.5])
    x = x[np.abs(x) <= fmt.largest].astype(np.float32)  # the reference casts from float32
    expected = x.astype(REFERENCE[name]).astype(np.float64)
    np.testing.assert_array_equal(fmt.round(x), expected)


def test_out_of_range_saturates_and_sizes() -> None:
    assert floats.FORMATS["fp8-e4m3"].round(np.array([1e6, -500.0])).tolist() == [448, -448]
    assert floats.FORMATS["fp16"].round(np.array([7e4])).tolist() == [65504]
    assert [f.bytes for f in floats.FORMATS.values()] == [2, 2, 1, 1]
    with pytest.raises(SpecError, match="unknown float format 'fp4'"):
        floats.float_format("fp4")


def test_layer_accuracy_and_bytes_on_lenet5() -> None:
    net = layers.load_network("lenet5")
    params = quant.load_weights("lenet5_mnist.npz", net)
    x, y = mnist.load("test")
    x, y = x[:60], y[:60]
    table = floats.layer_accuracy(net, params, x, y, ["fp16", "fp8-e5m2"])
    base = quant.accuracy(net, params, x, y)
    assert set(table["fp16"]) == {layer.name for layer in net} | {"all"}
    assert table["fp16"]["all"] == base  # 11 mantissa bits do not move any of these digits
    # independently: every weight rounded to E5M2 by ml_dtypes, activations left in float32
    w8 = {k: (np.asarray(w, np.float32).astype(ml_dtypes.float8_e5m2).astype(np.float32),
              b) for k, (w, b) in params.items()}
    only_weights = quant.accuracy(net, w8, x, y)
    assert abs(only_weights - table["fp8-e5m2"]["all"]) <= 3 / 60
    summary = net.with_batch(1).summary(elem_bytes=1)
    assert floats.bytes_moved(net, 1) == int(
        (summary.input_bytes + summary.weight_bytes + summary.output_bytes).sum())
