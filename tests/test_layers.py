"""Layer specs: size relations, counts and the errors bad specs raise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench import layers
from workbench.errors import SpecError, UnknownNameError
from workbench.layers import ConcatLayer, ConvLayer, EltwiseLayer, PoolLayer


@given(i=st.integers(1, 300), k=st.integers(1, 11), s=st.integers(1, 5), p=st.integers(0, 5))
def test_output_size_matches_window_count(i: int, k: int, s: int, p: int) -> None:
    """eq. 2.1 against counting window positions that fit in the padded input."""
    windows = sum(1 for start in range(0, i + 2 * p) if start % s == 0 and start + k <= i + 2 * p)
    assert layers.out_size(i, k, s, p) == windows
    if windows:
        assert layers.in_size(windows, k, s, p) <= i  # the smallest input giving that output


def test_caffe_ceil_pooling() -> None:
    assert layers.out_size(32, 3, 2, 0, ceil_mode=True) == 16  # CIFAR10-quick pool1
    assert layers.out_size(32, 3, 2, 0) == 15
    assert layers.out_size(6, 2, 2, 1, ceil_mode=True) == 4  # last window not in right padding


def test_conv_counts() -> None:
    conv2 = ConvLayer(name="c", Ox=14, Oy=14, Oc=64, On=1, Kx=5, Ky=5, Kc=32, Sx=1, Sy=1, Px=2,
                      Py=2)
    assert conv2.macs == 14 * 14 * 64 * 25 * 32
    assert conv2.params == 25 * 32 * 64 and conv2.biases == 64
    assert conv2.in_shape == (32, 14, 14) and conv2.ops == 2 * conv2.macs
    fc = ConvLayer.fc("fc", 3136, 512, On=8)
    assert fc.macs == 8 * 3136 * 512 and fc.kind == "fc"


@pytest.mark.parametrize("kwargs, message", [
    (dict(Ox=-1), "Ox must be a positive integer"),
    (dict(Kc=0), "Kc must be a positive integer"),
    (dict(Px=-2), "Px must be a non-negative integer"),
    (dict(Oc=6, groups=4), "not divisible by groups"),
    (dict(Px=9, Kx=3), "leaves no input"),
])
def test_bad_conv_specs(kwargs: dict, message: str) -> None:
    spec = dict(name="bad", Ox=4, Oy=4, Oc=8, Kx=3, Ky=3, Kc=2) | kwargs
    with pytest.raises(SpecError, match=message) as info:
        ConvLayer(**spec)
    assert "'bad'" in str(info.value) and "\n" not in str(info.value)


def test_bad_network_descriptions() -> None:
    def build(layer: dict, shape: list | None = None) -> None:
        layers.network_from_dict({"name": "n", "input": shape or [3, 8, 8], "layers": [layer]},
                                 "test")

    with pytest.raises(SpecError, match="kernel 11x11 larger than padded input 8x8"):
        build({"name": "c", "type": "conv", "maps": 4, "kernel": 11})
    with pytest.raises(SpecError, match="input maps 3 not divisible by groups 2"):
        build({"name": "c", "type": "conv", "maps": 4, "kernel": 3, "groups": 2})
    with pytest.raises(SpecError, match="unknown layer type 'deconv'"):
        build({"name": "c", "type": "deconv"})
    with pytest.raises(SpecError, match="unknown key"):
        build({"name": "c", "type": "conv", "maps": 4, "kernal": 3})
    with pytest.raises(SpecError, match="must be a positive integer"):
        build({"name": "c", "type": "conv", "maps": -4, "kernel": 3})
    with pytest.raises(SpecError, match="connection row 1"):
        build({"name": "c", "type": "conv", "maps": 2, "kernel": 3, "connections": [[0], [7]]})
    with pytest.raises(SpecError, match="used twice"):
        layers.network_from_dict({"name": "n", "input": [1, 8, 8], "layers": [
            {"name": "a", "type": "relu"}, {"name": "a", "type": "relu"}]}, "test")


def test_pool_validation() -> None:
    with pytest.raises(SpecError, match="larger than padded input"):
        PoolLayer("p", C=1, Ix=2, Iy=2, Kx=3, Ky=3, Sx=1, Sy=1)
    with pytest.raises(SpecError, match="pooling mode"):
        PoolLayer("p", C=1, Ix=4, Iy=4, Kx=2, Ky=2, Sx=2, Sy=2, mode="median")


def test_network_lookup_and_errors() -> None:
    net = layers.load_network("lenet5")
    assert net["conv2"].Kc == 32 and len(net) == 10
    with pytest.raises(UnknownNameError, match="no layer 'conv9'"):
        net["conv9"]
    with pytest.raises(SpecError, match="batch must be a positive integer"):
        net.with_batch(0)


def test_eltwise_and_concat_specs() -> None:
    add = EltwiseLayer("add", C=4, H=3, W=5, On=2, inputs=3, op="max")
    assert add.kind == "eltwise" and add.ops == 2 * 4 * 3 * 5 * 2 and add.macs == 0
    assert add.in_shape == add.out_shape == (4, 3, 5) and add.with_batch(1).ops == 2 * 60
    cat = ConcatLayer("cat", parts=(2, 3), H=4, W=4)
    assert cat.kind == "concat" and cat.C == 5 and cat.out_shape == (5, 4, 4) and cat.ops == 0
    assert ConcatLayer("cat", [2, 3], 4, 4) == cat and not cat.tiled and not add.tiled
    for kwargs, message in [({"inputs": 1}, "at least 2 inputs, got 1"),
                            ({"op": "min"}, "op must be one of"), ({"H": 0}, "H must be")]:
        with pytest.raises(SpecError, match=message) as info:
            EltwiseLayer(**({"name": "e", "C": 1, "H": 2, "W": 2} | kwargs))
        assert "'e'" in str(info.value)
    for parts in [(), (2, 0), (2, True), 3]:
        with pytest.raises(SpecError, match="layer 'c': parts must be a non-empty list"):
            ConcatLayer("c", parts, 2, 2)


def test_eltwise_and_concat_in_network_files() -> None:
    net = layers.network_from_dict({"name": "n", "input": [8, 6, 6], "batch": 2, "layers": [
        {"name": "add", "type": "eltwise", "op": "prod", "inputs": 3},
        {"name": "cat", "type": "concat", "parts": [8, 4]},
        {"name": "c", "type": "conv", "maps": 2, "kernel": 1}]}, "test")
    assert net["add"] == EltwiseLayer("add", 8, 6, 6, 2, inputs=3, op="prod")
    assert net["cat"] == ConcatLayer("cat", (8, 4), 6, 6, 2) and net["c"].Kc == 12
    assert "eltwise" in layers.LAYER_TYPES and "concat" in layers.LAYER_TYPES
    assert net.summary()["kind"].tolist() == ["eltwise", "concat", "conv"]
    with pytest.raises(SpecError,
                       match=r"^test: layers\[0\]\.parts: is required \(layer 'cat'\)$"):
        layers.network_from_dict({"name": "n", "input": [8, 6, 6], "layers": [
            {"name": "cat", "type": "concat"}]}, "test")
