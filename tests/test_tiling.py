"""Analytical counts against the literal loop-nest trace, and the exact tile-space reduction."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import layers, tiling
from workbench.errors import SpecError, UnknownNameError
from workbench.layers import ConvLayer


@st.composite
def layer_and_tile(draw: st.DrawFn) -> tuple[ConvLayer, tiling.Tile, str]:
    kx, ky = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    px, py = draw(st.integers(0, kx - 1)), draw(st.integers(0, ky - 1))
    groups = draw(st.integers(1, 2))
    ox, oy = draw(st.integers(1, 9)), draw(st.integers(1, 7))
    sx, sy = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    assume(layers.in_size(ox, kx, sx, px) >= 1 and layers.in_size(oy, ky, sy, py) >= 1)
    layer = ConvLayer(name="rand", Ox=ox, Oy=oy, Oc=groups * draw(st.integers(1, 6)),
                      On=draw(st.integers(1, 3)), Kx=kx, Ky=ky, Kc=draw(st.integers(1, 6)),
                      Sx=sx, Sy=sy, Px=px, Py=py, groups=groups)
    extents = tiling.dims(layer)
    tile = tiling.Tile(*(draw(st.integers(1, d)) for d in extents))
    return layer, tile, draw(st.sampled_from(tiling.SCHEDULES))


@settings(max_examples=examples(1500))
@given(case=layer_and_tile())
def test_counts_equal_model_trace_and_bound_physical(case) -> None:
    layer, tile, schedule = case
    model = tiling.counts(layer, tile, schedule)
    assert tiling.trace(layer, tile, schedule, mode="model") == model
    physical = tiling.trace(layer, tile, schedule, mode="physical")
    assert physical.in_accesses <= model.in_accesses
    assert physical.w_accesses <= model.w_accesses
    assert physical.out_accesses <= model.out_accesses
    assert physical.dma_transfers <= model.dma_transfers
    assert physical.n_tiles == model.n_tiles


def test_fc_layers_trace() -> None:
    net = layers.load_network("lenet5", batch=8)
    tile = tiling.Tile(1, 1, 100, 3, 300)
    for schedule in tiling.SCHEDULES:
        assert tiling.trace(net["fc3"], tile, schedule) == tiling.counts(net["fc3"], tile,
                                                                          schedule)


def test_formulas_by_hand() -> None:
    """DESIGN.md table on LeNet5 conv2 (batch 8) with a tile computed by hand."""
    conv2 = layers.load_network("lenet5", batch=8)["conv2"]
    c = tiling.counts(conv2, tiling.Tile(7, 7, 16, 2, 8), "inter_kc")
    b_in, b_w, b_out = 11 * 11 * 8 * 2, 5 * 5 * 8 * 16, 7 * 7 * 16 * 2  # (7-1)*1+5 = 11
    assert (c.bin, c.bw, c.bout) == (b_in, b_w, b_out)
    assert c.ext_accesses == 2 * 2 * 4 * 4 * (4 * (b_in + b_w) + b_out)
    assert c.dma_transfers == 2 * 2 * 4 * 4 * (4 * 2 + 1)
    assert c.footprint_elems == b_in + b_w + b_out


def test_dirx_without_overlap() -> None:
    """Kx <= Sx: no halo to reuse, so no overlap transfer and no negative buffer."""
    layer = ConvLayer(name="s2", Ox=6, Oy=6, Oc=4, Kx=1, Ky=1, Kc=3, Sx=2, Sy=2)
    tile = tiling.Tile(2, 3, 2, 1, 3)
    c = tiling.counts(layer, tile, "inter_oxoyon_dirx")
    assert c == tiling.trace(layer, tile, "inter_oxoyon_dirx")
    assert c.in_accesses == tiling.counts(layer, tile, "inter_oxoyon").in_accesses


@given(extent=st.integers(1, 3000))
def test_tile_candidates_are_the_smallest_per_tile_count(extent: int) -> None:
    cands = tiling.tile_candidates(extent)
    counts = -(-extent // cands)
    assert len(set(counts.tolist())) == len(cands)  # one candidate per tile count
    for t, n in zip(cands.tolist(), counts.tolist(), strict=True):
        assert t == 1 or -(-extent // (t - 1)) != n  # nothing smaller has the same count
    assert len(cands) <= 2 * np.sqrt(extent) + 1
    assert set(counts.tolist()) == {-(-extent // t) for t in range(1, extent + 1)}


def test_bad_tiles_and_schedules() -> None:
    conv2 = layers.load_network("lenet5")["conv2"]
    with pytest.raises(UnknownNameError, match="unknown schedule 'inter_xy'; valid: intra, "):
        tiling.counts(conv2, tiling.Tile(1, 1, 1, 1, 1), "inter_xy")
    with pytest.raises(SpecError, match="tile TOc=65 must be an integer in 1..64"):
        tiling.counts(conv2, tiling.Tile(1, 1, 65, 1, 1), "intra")
    with pytest.raises(SpecError, match="only conv and fc layers are tiled"):
        tiling.dims(layers.load_network("lenet5")["pool1"])
