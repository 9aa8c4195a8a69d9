"""Emitted C programs (workbench.emit) compiled and run: no warnings under -Wall -Wextra
-std=c99, measured DMA counts equal to the seed 000 trace's in both count modes, core by core
and array by array, and output codes equal to the bit-true reference (quant.infer)."""

from __future__ import annotations

import shutil

import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.emit import LayerMapping, ShareMapping, run_mapping
from workbench.layers.spec import ConvLayer, in_size
from workbench.quant.fixed import FixedFormat
from workbench.quant.infer import LayerFormat
from workbench.tiling import partition

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@st.composite
def small_layer(draw: st.DrawFn) -> ConvLayer:
    """A small conv (strides, padding, dilation, groups, depthwise) or fc layer."""
    kind = draw(st.sampled_from(["conv", "conv", "depthwise", "fc"]))
    if kind == "fc":
        return ConvLayer.fc("fc", draw(st.integers(1, 9)), draw(st.integers(1, 9)),
                            On=draw(st.integers(1, 3)))
    kx, ky = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    dx, dy = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    px, py = draw(st.integers(0, (kx - 1) * dx)), draw(st.integers(0, (ky - 1) * dy))
    ox, oy = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    sx, sy = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    assume(in_size(ox, (kx - 1) * dx + 1, sx, px) >= 1
           and in_size(oy, (ky - 1) * dy + 1, sy, py) >= 1)
    if kind == "depthwise":
        groups = draw(st.integers(1, 5))
        oc, kc = groups, 1
    else:
        groups = draw(st.integers(1, 3))
        oc, kc = groups * draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return ConvLayer(name="rand", Ox=ox, Oy=oy, Oc=oc, On=draw(st.integers(1, 2)), Kx=kx,
                     Ky=ky, Kc=kc, Sx=sx, Sy=sy, Px=px, Py=py, groups=groups, Dx=dx, Dy=dy)


@st.composite
def layer_format(draw: st.DrawFn) -> LayerFormat:
    """Operand widths 2..16 bits, accumulators from narrow (overflowing) to wide."""
    def fmt(bits: int) -> FixedFormat:
        return FixedFormat(bits, draw(st.integers(-2, bits)))

    bits_in, bits_w = draw(st.integers(2, 16)), draw(st.integers(2, 16))
    return LayerFormat(fmt(bits_in), fmt(bits_w), fmt(draw(st.integers(2, 16))),
                       draw(st.integers(4, 40)), draw(st.sampled_from(["wrap", "saturate"])))


@st.composite
def mapping(draw: st.DrawFn, schedule: str) -> LayerMapping:
    layer = draw(small_layer())
    kinds = [k for k in partition.SPLITS if partition.split_extent(layer, k) >= 1]
    kind = draw(st.sampled_from(kinds))
    k = draw(st.integers(1, min(3, partition.split_extent(layer, kind))))
    parts = partition.shares(layer, kind, k)
    shares = []
    for part in parts:
        limits = tiling.tile_limits(part.layer)
        ocg = part.layer.Oc // part.layer.groups
        sizes = [draw(st.integers(1, d)) for d in limits]
        if sizes[2] > ocg:  # whole groups
            sizes[2] = ocg * draw(st.integers(1, part.layer.groups))
        shares.append(ShareMapping(part.cores, schedule, tiling.Tile(*sizes)))
    return LayerMapping(layer, kind, tuple(shares), draw(layer_format()),
                        draw(st.booleans()))


def check(run) -> None:
    assert run.warnings == ""
    for mode in ("model", "physical"):
        assert run.measured[mode] == run.modelled[mode], mode
        assert run.exact[mode], mode


@pytest.mark.parametrize("schedule", tiling.SCHEDULES)
@settings(max_examples=examples(12))
@given(data=st.data())
def test_emitted_layer_counts_and_outputs(schedule, data, tmp_path_factory) -> None:
    m = data.draw(mapping(schedule))
    folder = tmp_path_factory.mktemp("emit")
    check(run_mapping(m, folder, seed=data.draw(st.integers(0, 2**31))))
