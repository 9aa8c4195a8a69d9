"""The imported non-tiled layers (scale, affine, shuffle, resize, generic): validation, counts,
and streaming counts by formula equal to the literal chunk walk."""

from __future__ import annotations

import math

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import streaming
from workbench.errors import SpecError
from workbench.layers.stream_spec import (
    AffineLayer,
    GenericLayer,
    ResizeLayer,
    ScaleLayer,
    ShuffleLayer,
)
from workbench.platforms import load_platform


@st.composite
def imported_layers(draw: st.DrawFn):
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 6))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["scale", "affine", "shuffle", "resize", "generic"]))
    if kind == "scale":
        return ScaleLayer("s", c, h, w, n)
    if kind == "affine":
        return AffineLayer("a", c, h, w, n, scales=draw(st.sampled_from([0, 1, c])) or c,
                           shifts=draw(st.sampled_from([0, 1, c])))
    if kind == "shuffle":
        return ShuffleLayer("sh", 2 * c, h, w, n, groups=2)
    if kind == "resize":
        return ResizeLayer("r", c, h, w, draw(st.integers(1, 3)), draw(st.integers(1, 3)), n)
    return GenericLayer("g", "Op", c, h, w, draw(st.integers(1, 6)), h, w, n,
                        inputs=draw(st.integers(1, 3)), macs_per_image=draw(st.integers(0, 500)))


@settings(max_examples=examples(200))
@given(layer=imported_layers(), data=st.data())
def test_formula_equals_trace(layer, data: st.DataObject) -> None:
    g = streaming.geometry(layer)
    k = data.draw(st.integers(1, g.units))
    share = data.draw(st.sampled_from(streaming.split_maps(g.units, k)))
    rows, maps = data.draw(st.integers(1, g.out_rows + 1)), data.draw(st.integers(1, g.units + 1))
    assert streaming.chunk_counts(layer, rows, maps, share) == \
        streaming.trace_counts(layer, rows, maps, share)


def test_hand_counts() -> None:
    """A 4×3×3 map times a 4-vector, in chunks of 3 rows × 2 maps: 2 chunks, each fetching
    2·9 map elements and 2 vector values (2 gets) and writing 18."""
    c = streaming.chunk_counts(ScaleLayer("se", 4, 3, 3), 3, 2)
    assert (c.chunks, c.in_elems, c.out_elems, c.dma_transfers, c.ops) == (2, 40, 36, 6, 36)
    r = streaming.chunk_counts(ResizeLayer("up", 2, 3, 4, 2, 2), 3, 2)
    assert (r.in_elems, r.out_elems, r.ops, r.out_buffer) == (24, 96, 96, 96)
    s = streaming.stream_counts(ShuffleLayer("sh", 4, 2, 2, groups=2))
    assert (s["in_elems"], s["out_elems"], s["ops"]) == (16, 16, 0)
    gen = GenericLayer("ct", "ConvTranspose", 2, 2, 2, 3, 4, 4, macs_per_image=100)
    assert (gen.ops_per_output, gen.ops, gen.macs) == (5, 240, 100)


def test_best_stream_prices_them() -> None:
    plat = load_platform("idsp")
    for layer in (ScaleLayer("se", 96, 14, 14, 2), AffineLayer("bn", 64, 56, 56, scales=64,
                                                               shifts=64),
                  ResizeLayer("up", 32, 20, 20), ShuffleLayer("sh", 116, 28, 28)):
        best = streaming.best_stream(layer, plat)
        outputs = math.prod(layer.out_shape) * layer.On
        inputs = math.prod(layer.in_shape) * layer.On
        assert best.cycles > 0 and best.ext_accesses >= inputs + outputs


def test_validation() -> None:
    with pytest.raises(SpecError, match="scales must be 0, 1 or C = 4"):
        AffineLayer("a", 4, 2, 2, scales=3)
    with pytest.raises(SpecError, match="needs a scale or a shift"):
        AffineLayer("a", 4, 2, 2)
    with pytest.raises(SpecError, match="maps 5 not divisible by shuffle groups 2"):
        ShuffleLayer("s", 5, 2, 2, groups=2)
    with pytest.raises(SpecError, match="resize mode must be one of"):
        ResizeLayer("r", 1, 2, 2, mode="cubic")
    with pytest.raises(SpecError, match="macs_per_image must be a non-negative integer"):
        GenericLayer("g", "X", 1, 1, 1, 1, 1, 1, macs_per_image=-1)
    with pytest.raises(SpecError, match="scale op must be one of"):
        ScaleLayer("s", 1, 1, 1, op="div")
