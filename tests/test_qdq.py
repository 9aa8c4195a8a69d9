"""Quantized ONNX models in: formats read from QDQ and QLinear models built here with known
scales, flags for what does not map exactly, bit-true inference against a numpy reference,
accumulator bounds and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import quant_reference as ref
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from qdq_models import qdq_net, qdq_residual, qlinear_conv

from workbench import layers
from workbench.errors import SpecError
from workbench.quant import FixedFormat, infer
from workbench.quant.from_model import load_quantized, map_scale
from workbench.quant.onnx_quant import Scale
from workbench.quant.overflow import overflow_table


def test_qdq_formats_are_the_models_scales(tmp_path: Path) -> None:
    built = qdq_net(tmp_path / "m.onnx", np.random.default_rng(0))
    model = load_quantized(built.path, acc_bits=16, overflow="saturate")
    assert [layer.name for layer in model.net.tiled_layers()] == ["conv1", "conv2", "fc"]
    direct = layers.load_network(str(built.path))  # the importer reads the same structure
    assert (direct.layers, direct.inputs) == (model.net.layers, model.net.inputs)
    f = model.formats
    # conv1: input 2^-4, per-tensor weights 2^-6, output 2^-3, all int8 symmetric
    assert (f["conv1"].in_fmt, f["conv1"].w_fmt, f["conv1"].out_fmt) == (
        FixedFormat(8, 4), FixedFormat(8, 6), FixedFormat(8, 3))
    # conv2: per-channel 2^-5, 2^-7, 2^-6: FL 7, two more bits for the spread
    assert (f["conv2"].in_fmt, f["conv2"].w_fmt, f["conv2"].out_fmt) == (
        FixedFormat(8, 3), FixedFormat(10, 7), FixedFormat(8, 2))
    assert (f["fc"].in_fmt, f["fc"].w_fmt, f["fc"].out_fmt) == (
        FixedFormat(8, 2), FixedFormat(8, 7), FixedFormat(8, 1))
    assert all(x.acc_bits == 16 and x.overflow == "saturate" for x in f.values())
    assert not any(info.flags for info in model.layers.values()) and not model.unquantized
    # the model's codes are kept: channel c of conv2 shifted left by 7 - f_c
    q_w, q_b = infer.quantized_params(*model.params["conv2"], f["conv2"])
    expected = built.w["conv2"] * (2 ** (7 - built.f_w["conv2"])).reshape(3, 1, 1, 1)
    np.testing.assert_array_equal(q_w, expected)
    q_w, q_b = infer.quantized_params(*model.params["conv1"], f["conv1"])
    np.testing.assert_array_equal(q_w, built.w["conv1"])
    np.testing.assert_array_equal(q_b, built.b["conv1"])  # int32 bias in scale 2^-(4+6)
    np.testing.assert_array_equal(
        infer.quantized_params(*model.params["fc"], f["fc"])[0], built.w["fc"])


def test_qlinear_conv_formats(tmp_path: Path) -> None:
    built = qlinear_conv(tmp_path / "q.onnx", np.random.default_rng(1))
    model = load_quantized(built.path, acc_bits=24)
    fmt = model.formats["qconv"]
    assert layers.load_network(str(built.path)).layers == model.net.layers
    assert model.layers["qconv"].op == "QLinearConv" and not model.layers["qconv"].flags
    assert (fmt.in_fmt, fmt.w_fmt, fmt.out_fmt, fmt.acc_bits) == (
        FixedFormat(8, 5), FixedFormat(10, 8), FixedFormat(8, 2), 24)
    q_w, q_b = infer.quantized_params(*model.params["qconv"], fmt)
    shifts = 2 ** (8 - built.f_w["qconv"])  # per-channel 2^-6, 2^-8 onto FL 8
    np.testing.assert_array_equal(q_w, built.w["qconv"] * shifts.reshape(2, 1, 1, 1))
    np.testing.assert_array_equal(q_b, built.b["qconv"] * shifts)  # scale 2^-5 · 2^-f_c


def test_qlinear_conv_bit_true(tmp_path: Path) -> None:
    built = qlinear_conv(tmp_path / "q.onnx", np.random.default_rng(2))
    model = load_quantized(built.path, acc_bits=16)
    x = np.random.default_rng(3).uniform(-4, 4, (3, 3, 5, 5))
    shifts = (2 ** (8 - built.f_w["qconv"])).reshape(2, 1, 1, 1)
    acc = ref.conv(ref.codes(x, 5, 8), built.w["qconv"] * shifts,
                   built.b["qconv"] * shifts.ravel(), 1, 16, "wrap")
    expected = ref.shift(acc, 5 + 8 - 2, 8)
    got = infer.forward(model.net, model.params, x, model.formats, graph=model.graph)
    assert got.fmt == FixedFormat(8, 2)
    np.testing.assert_array_equal(np.swapaxes(got.values, 0, 1), expected)


def test_qdq_residual_add_takes_the_models_output_scale(tmp_path: Path) -> None:
    built = qdq_residual(tmp_path / "r.onnx", np.random.default_rng(9))
    model = load_quantized(built.path, acc_bits=16)
    assert model.net.inputs["add"] == ("conv2", "conv1")
    assert model.formats["add"] == FixedFormat(8, 1)
    x = np.random.default_rng(10).uniform(-6, 6, (2, 2, 5, 5))
    zero = np.zeros(2, np.int64)
    c1 = ref.shift(ref.conv(ref.codes(x, 4, 8), built.w["conv1"], zero, 1, 16, "wrap"),
                   4 + 6 - 3, 8)
    c2 = ref.shift(ref.conv(c1, built.w["conv2"], zero, 0, 16, "wrap"), 3 + 5 - 2, 8)
    # the sum aligned exactly to the finer operand (2^-3), then rounded once to 2^-1
    expected = ref.shift(c2 * 2 + c1, 3 - 1, 8)
    got = infer.forward(model.net, model.params, x, model.formats, graph=model.graph)
    assert got.fmt == FixedFormat(8, 1)
    np.testing.assert_array_equal(np.swapaxes(got.values, 0, 1), expected)


def test_scales_that_do_not_map_exactly_are_flagged(tmp_path: Path) -> None:
    built = qdq_net(tmp_path / "m.onnx", np.random.default_rng(0), in_scale=0.05)
    model = load_quantized(built.path)
    # -log2(0.05) = 4.32: nearest 2^-4 = 0.0625, 25 % larger
    assert model.formats["conv1"].in_fmt == FixedFormat(8, 4)
    (flag,) = model.layers["conv1"].flags
    assert "0.05" in flag and "not a power of two" in flag and "2^-4" in flag \
        and "+25.00%" in flag
    assert not model.layers["conv2"].flags
    # per channel: the worst channel is named (0.3 is nearest 2^-2 = 0.25, like channel 0)
    mapped = map_scale(Scale(np.array([0.25, 0.3]), np.zeros(2, np.int64), "int8"), "w")
    assert mapped.fmt == FixedFormat(8, 2) and "0.3 " in mapped.flags[0] \
        and f"{0.25 / 0.3 - 1:+.2%}" in mapped.flags[0]


@pytest.mark.parametrize(("zp", "dtype", "bw"), [(0, "int8", 8), (0, "uint8", 9),
                                                 (128, "uint8", 8), (10, "int8", 9)])
def test_zero_points_are_exact_codes_and_asymmetry_is_flagged(zp: int, dtype: str,
                                                              bw: int) -> None:
    mapped = map_scale(Scale(np.array(0.125), np.array(zp), dtype), "t")
    assert mapped.fmt == FixedFormat(bw, 3)
    assert bool(mapped.flags) == (dtype == "uint8" or zp != 0)


def _reference(built, x: np.ndarray, bits: int, mode: str) -> tuple[np.ndarray, dict]:
    """qdq_net on NCHW reals: output codes (N × 5, FL 1) and each layer's exact sums."""
    exact = {}
    q = ref.codes(x, 4, 8)
    exact["conv1"] = ref.conv(q, built.w["conv1"], built.b["conv1"], 1, None, mode)
    acc = ref.conv(q, built.w["conv1"], built.b["conv1"], 1, bits, mode)
    q = np.maximum(ref.shift(acc, 4 + 6 - 3, 8), 0)  # to 2^-3, relu
    w2 = built.w["conv2"] * (2 ** (7 - built.f_w["conv2"])).reshape(3, 1, 1, 1)
    exact["conv2"] = ref.conv(q, w2, np.zeros(3, np.int64), 0, None, mode)
    q = ref.shift(ref.conv(q, w2, np.zeros(3, np.int64), 0, bits, mode), 3 + 7 - 2, 8)
    q = q.reshape(len(q), -1)
    exact["fc"] = ref.fc(q, built.w["fc"], np.zeros(5, np.int64), None, mode)
    return ref.shift(ref.fc(q, built.w["fc"], np.zeros(5, np.int64), bits, mode),
                     2 + 7 - 1, 8), exact


@pytest.mark.parametrize(("bits", "mode"), [(16, "wrap"), (16, "saturate"), (32, "wrap")])
def test_integer_inference_matches_reference(tmp_path: Path, bits: int, mode: str) -> None:
    built = qdq_net(tmp_path / "m.onnx", np.random.default_rng(5), big=True)
    model = load_quantized(built.path, acc_bits=bits, overflow=mode)
    x = np.random.default_rng(6).uniform(-8, 8, (4, 2, 6, 6))
    expected, exact = _reference(built, x, bits, mode)
    got = infer.forward(model.net, model.params, x, model.formats, graph=model.graph)
    np.testing.assert_array_equal(np.swapaxes(got.values, 0, 1), expected)
    assert (np.abs(exact["conv1"]) >= 1 << 15).any()  # sums that leave 16 bits
    if bits == 16:  # and the narrow register changes the outputs
        assert not np.array_equal(expected, _reference(built, x, 32, mode)[0])


@settings(max_examples=examples(20))
@given(seed=st.integers(0, 2 ** 31), bits=st.integers(12, 24),
       mode=st.sampled_from(["wrap", "saturate"]), big=st.booleans())
def test_integer_inference_random(tmp_path_factory, seed: int, bits: int, mode: str,
                                  big: bool) -> None:
    path = tmp_path_factory.mktemp("qdq") / "m.onnx"
    built = qdq_net(path, np.random.default_rng(seed), big=big)
    model = load_quantized(built.path, acc_bits=bits, overflow=mode)
    x = np.random.default_rng(seed + 1).uniform(-8, 8, (3, 2, 6, 6))
    expected, _ = _reference(built, x, bits, mode)
    got = infer.forward(model.net, model.params, x, model.formats, graph=model.graph)
    np.testing.assert_array_equal(np.swapaxes(got.values, 0, 1), expected)


def _bounds(built, exact: dict, bits: int) -> dict[str, tuple]:
    """(worst, weights, data bits, overflowing outputs) per layer from the seed 000 formulas,
    with the formats' integer lengths: IL(in) = BW − 1 − FL."""
    rows, half = {}, 1 << (bits - 1)
    w2 = built.w["conv2"] * (2 ** (7 - built.f_w["conv2"])).reshape(3, 1, 1, 1)
    layers = {"conv1": (8, 4, built.w["conv1"], 8, 6), "conv2": (8, 3, w2, 10, 7),
              "fc": (8, 2, built.w["fc"], 8, 7)}
    for name, (bw_in, fl_in, w, bw_w, fl_w) in layers.items():
        k = w[0].size
        il_in, il_w = bw_in - 1 - fl_in, bw_w - 1 - fl_w
        sum_w = np.abs(w.reshape(len(w), -1)).sum(axis=1).max() * 2.0 ** -fl_w
        peak = np.abs(exact[name]).max() * 2.0 ** -(fl_in + fl_w)
        product = bw_in + bw_w - 1
        rows[name] = (product + math.ceil(math.log2(k)),
                      product + math.floor(math.log2(sum_w)) + 1 - il_w,
                      product + max(0, math.floor(math.log2(peak)) + 1 - il_in - il_w),
                      int(((exact[name] < -half) | (exact[name] > half - 1)).sum()))
    return rows


def test_overflow_table_bounds(tmp_path: Path) -> None:
    built = qdq_net(tmp_path / "m.onnx", np.random.default_rng(5), big=True)
    model = load_quantized(built.path)
    x = np.random.default_rng(7).uniform(-8, 8, (6, 2, 6, 6))
    _, exact = _reference(built, x, None, "wrap")
    table = overflow_table(model.net, model.params, model.formats, 16, x, model.graph)
    expected = _bounds(built, exact, 16)
    for row in table.itertuples():
        assert (row.worst_bits, row.weights_bits, row.data_bits, row.overflowing) == \
            expected[row.layer], row.layer
        assert row.max_abs_acc == np.abs(exact[row.layer]).max()
        assert row.risk == ("overflows" if row.overflowing else "wrap")
    no_data = overflow_table(model.net, model.params, model.formats, 32)
    assert set(no_data.risk) == {"none"} and no_data.data_bits.isna().all()


def test_cli_from_model(tmp_path: Path) -> None:
    built = qdq_net(tmp_path / "m.onnx", np.random.default_rng(5), big=True, in_scale=0.05)
    x = np.random.default_rng(8).uniform(-8, 8, (5, 2, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", calib_x=x)
    cmd = [sys.executable, "-m", "workbench.cli", "quantize", "--from-model", str(built.path),
           "--acc-bits", "16", "--data", str(tmp_path / "cal.npz")]
    run = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    conv2 = next(row for row in doc["layers"] if row["layer"] == "conv2")
    # bounds of the model's own int8 arithmetic: |x code| ≤ 128 (int8, zero point 0)
    w2 = np.abs(built.w["conv2"].reshape(3, -1))  # conv2 has no bias
    worst = 36 * 128 * int(w2.max())
    weights = int((w2.sum(axis=1) * 128).max())
    assert conv2["worst_bits"] == math.ceil(math.log2(worst + 1)) + 1
    assert conv2["weights_bits"] == math.ceil(math.log2(weights + 1)) + 1
    assert doc["images"] == 5 and "conv1" in doc["flags"]
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert sum(line.split()[0] in ("conv1", "conv2", "fc") for line in lines) == 3
    assert any(line.startswith("flag: layer 'conv1' input scale 0.05") for line in lines)
    bad = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "--from-model",
                          str(tmp_path / "cal.npz")], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    plain = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", str(built.path)],
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 2 and "is a quantized model (DequantizeLinear); read it with " \
        "`workbench quantize --from-model`" in plain.stderr


def test_dynamic_quantization_is_refused(tmp_path: Path) -> None:
    w = helper.make_tensor("w", TensorProto.INT8, [2, 1, 1, 1], [1, -1])
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "w", "xz"], ["y"], name="c")]
    graph = helper.make_graph(nodes, "dyn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32,
                                                             [1, 2, 4, 4])], [w])
    onnx.save(helper.make_model(graph), str(tmp_path / "d.onnx"))
    with pytest.raises(SpecError, match=r"ConvInteger, DynamicQuantizeLinear \(dynamic "
                                        r"quantization\) states no activation scale"):
        load_quantized(tmp_path / "d.onnx")
