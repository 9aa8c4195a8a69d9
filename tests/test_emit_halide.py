"""The Halide path of emit (workbench.emit.halide_path): for random small dense layers, every
seed 000 schedule, random tiles and both overflow rules, the Halide pipeline's output equals
the bit-true reference, and the elements Halide's own tracing sees stored into the local
buffers B_in and B_w equal the seed 000 trace's input and weight counts (model mode: whole
tiles, padding included). Mappings it does not express are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.emit import LayerMapping, ShareMapping, reference, trace_counts
from workbench.emit.compare import random_operands
from workbench.emit.halide_path import HalideRefusal, check_halide, run_halide
from workbench.layers.spec import ConvLayer, in_size
from workbench.quant.fixed import FixedFormat
from workbench.quant.infer import LayerFormat

hl = pytest.importorskip("halide")


@st.composite
def dense_mapping(draw: st.DrawFn, schedule: str) -> LayerMapping:
    if draw(st.integers(0, 4)) == 0:
        layer = ConvLayer.fc("fc", draw(st.integers(1, 12)), draw(st.integers(1, 6)),
                             On=draw(st.integers(1, 2)))
    else:
        kx, ky = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        dx = draw(st.integers(1, 2))
        px, py = draw(st.integers(0, (kx - 1) * dx)), draw(st.integers(0, ky - 1))
        ox, oy = draw(st.integers(1, 6)), draw(st.integers(1, 5))
        sx, sy = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        assume(in_size(ox, (kx - 1) * dx + 1, sx, px) >= 1 and in_size(oy, ky, sy, py) >= 1)
        layer = ConvLayer("conv", Ox=ox, Oy=oy, Oc=draw(st.integers(1, 4)),
                          On=draw(st.integers(1, 2)), Kx=kx, Ky=ky,
                          Kc=draw(st.integers(1, 4)), Sx=sx, Sy=sy, Px=px, Py=py, Dx=dx)
    tile = tiling.Tile(*(draw(st.integers(1, d)) for d in tiling.tile_limits(layer)))
    bits = draw(st.integers(2, 12))
    fmt = LayerFormat(FixedFormat(bits, draw(st.integers(0, bits))),
                      FixedFormat(draw(st.integers(2, 12)), draw(st.integers(0, 8))),
                      FixedFormat(draw(st.integers(2, 16)), draw(st.integers(-2, 8))),
                      draw(st.integers(6, 32)), draw(st.sampled_from(["wrap", "saturate"])))
    return LayerMapping(layer, "oc", (ShareMapping(1, schedule, tile),), fmt)


@pytest.mark.parametrize("schedule", tiling.SCHEDULES)
@settings(max_examples=examples(4))
@given(data=st.data())
def test_halide_output_and_traced_buffers(schedule, data) -> None:
    m = data.draw(dense_mapping(schedule))
    operands = random_operands(m, data.draw(st.integers(0, 2**31)))
    codes, schedule_text, counts = run_halide(m, *operands, traced=True)
    assert np.array_equal(codes, reference(m, *operands))
    modelled = trace_counts(m, "model")
    assert counts == {"B_in": modelled["in", 0][0], "B_w": modelled["w", 0][0]}
    assert any(".split(" in line and ".reorder(" in line for line in schedule_text)


def test_refusals_are_one_line() -> None:
    layer = ConvLayer("dw", Ox=4, Oy=4, Oc=4, Kx=3, Ky=3, Kc=1, groups=4, Px=1, Py=1)
    fmt = LayerFormat(FixedFormat(8, 4), FixedFormat(8, 4), FixedFormat(8, 4), 16)
    grouped = LayerMapping(layer, "g", (ShareMapping(1, "intra", tiling.Tile(4, 4, 1, 1, 1)),),
                           fmt)
    with pytest.raises(HalideRefusal, match="grouped layers are emitted in C only"):
        check_halide(grouped)
    dense = ConvLayer("c", Ox=4, Oy=4, Oc=4, Kx=3, Ky=3, Kc=2, Px=1, Py=1)
    split = LayerMapping(dense, "oc", (ShareMapping(2, "intra", tiling.Tile(4, 4, 2, 1, 2)),),
                         fmt)
    with pytest.raises(HalideRefusal, match="split over 2 cores"):
        check_halide(split)
