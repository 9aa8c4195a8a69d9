"""Grouped and depthwise convolutions tiled across groups (TOc = g·Oc/groups), dilation and
asymmetric padding: the model against the literal trace (the ground truth), dense layers against
the counts of the code before tiles could span groups, and the candidate sets still exact."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.errors import SpecError
from workbench.layers import ConvLayer
from workbench.tiling import candidates, partition
from workbench.tiling.dominance import nondominated
from workbench.tiling.model import toc_values

ARRAYS = ("in", "w", "out")


@st.composite
def grouped_layer(draw: st.DrawFn, dilated: bool = True) -> ConvLayer:
    """Random grouped (often depthwise) layers, with dilation and asymmetric padding."""
    groups = draw(st.integers(1, 7))
    ocg = draw(st.sampled_from([1, 1, 2, 3]))
    kc = draw(st.sampled_from([1, 1, 2, 3]))
    kx, ky = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    sx, sy = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dx, dy = (draw(st.integers(1, 3)), draw(st.integers(1, 2))) if dilated else (1, 1)
    px, py = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    px_end = draw(st.one_of(st.none(), st.integers(-(sx - 1), 2)))
    py_end = draw(st.one_of(st.none(), st.integers(-(sy - 1), 2)))
    ox, oy = draw(st.integers(1, 7)), draw(st.integers(1, 6))
    fields = dict(name="grp", Ox=ox, Oy=oy, Oc=groups * ocg, On=draw(st.integers(1, 2)), Kx=kx,
                  Ky=ky, Kc=kc, Sx=sx, Sy=sy, Px=px, Py=py, groups=groups, Dx=dx, Dy=dy,
                  Px_end=px_end, Py_end=py_end)
    try:
        return ConvLayer(**fields)
    except SpecError:
        assume(False)
        raise


def a_tile(draw: st.DrawFn, layer: ConvLayer) -> tiling.Tile:
    """Any valid tile, TOc inside a group or spanning whole groups (leaning to spans)."""
    ox, oy, _, on, kc = tiling.dims(layer)
    tocs = toc_values(layer, reduced=False)
    spans = tocs[tocs >= layer.Oc // layer.groups]
    toc = int(draw(st.one_of(st.sampled_from(tocs.tolist()), st.sampled_from(spans.tolist()))))
    return tiling.Tile(draw(st.integers(1, ox)), draw(st.integers(1, oy)), toc,
                       draw(st.integers(1, on)), draw(st.integers(1, kc)))


@st.composite
def case(draw: st.DrawFn, dilated: bool = True):
    layer = draw(grouped_layer(dilated))
    return layer, a_tile(draw, layer), draw(st.sampled_from(tiling.SCHEDULES))


@settings(max_examples=examples(1500), deadline=None)
@given(c=case())
def test_model_equals_trace_on_grouped_dilated_and_padded_layers(c) -> None:
    layer, tile, schedule = c
    model = tiling.counts(layer, tile, schedule)
    assert tiling.trace(layer, tile, schedule, mode="model") == model
    physical = tiling.trace(layer, tile, schedule, mode="physical")
    assert physical.in_accesses <= model.in_accesses
    assert physical.w_accesses <= model.w_accesses
    assert physical.out_accesses <= model.out_accesses
    assert physical.dma_transfers <= model.dma_transfers
    assert physical.n_tiles == model.n_tiles
    # every MAC of the layer exactly once (the trace also checks every output's Kc steps)
    run = tiling.trace_cores(layer, "on", 1, [tile], schedule, mode="physical")
    assert run.macs == (layer.macs,)


@settings(max_examples=examples(400), deadline=None)
@given(c=case(dilated=False))
def test_a_tile_of_g_groups_moves_blocks_not_groups(c) -> None:
    """Spanning g groups runs ⌈G/g⌉ blocks where one-group tiles ran G convolutions of the
    same loop trips: transfers and tiles scale by ⌈G/g⌉/G (the trace, literally)."""
    layer, tile, schedule = c
    ocg = layer.Oc // layer.groups
    assume(tile.M >= ocg)
    g = tile.M // ocg
    one = tiling.Tile(tile.X, tile.Y, ocg, tile.N, tile.C)
    span = tiling.trace(layer, tile, schedule)
    alone = tiling.trace(layer, one, schedule)
    blocks = -(-layer.groups // g)
    assert span.dma_transfers * layer.groups == alone.dma_transfers * blocks
    assert span.n_tiles * layer.groups == alone.n_tiles * blocks
    assert span.bin == alone.bin * g and span.bw == alone.bw * g and span.bout == alone.bout * g


def test_depthwise_by_hand() -> None:
    """Depthwise 3x3, pad 1, on 4 maps of 4x4, one image; tile 4x4 spatial, inter_kc.
    TOc=1 (one group per tile): 4 tiles, each gets 6x6 inputs, 9 weights, puts 16 outputs:
    in 4·36 = 144, w 4·9 = 36, out 4·16 = 64, 3 transfers per tile = 12.
    TOc=2 (two groups per tile): 2 tiles of 2 maps: in 2·72, w 2·18, out 2·32; 6 transfers.
    TOc=3 (three groups, the last block partial): model 2 full tiles of 3 maps: in 2·108,
    w 2·27, out 2·48, 6 transfers; physical: second block holds 1 map, and padding clips the
    4x4 input to 16 per map: in 4·16 = 64, w 36, out 64."""
    layer = ConvLayer(name="dw", Ox=4, Oy=4, Oc=4, Kx=3, Ky=3, Kc=1, Px=1, Py=1, groups=4)
    want = {1: (144, 36, 64, 12, 4), 2: (144, 36, 64, 6, 2), 3: (216, 54, 96, 6, 2)}
    for toc, (i, w, o, dma, n) in want.items():
        t = tiling.Tile(4, 4, toc, 1, 1)
        for c in (tiling.counts(layer, t, "inter_kc"), tiling.trace(layer, t, "inter_kc")):
            assert (c.in_accesses, c.w_accesses, c.out_accesses, c.dma_transfers,
                    c.n_tiles) == (i, w, o, dma, n)
    p = tiling.trace(layer, tiling.Tile(4, 4, 3, 1, 1), "inter_kc", mode="physical")
    assert (p.in_accesses, p.w_accesses, p.out_accesses, p.dma_transfers) == (64, 36, 64, 6)


def test_dilated_asymmetric_boxes_by_hand() -> None:
    """Ox=4, Kx=3 dilated 2 (window 5 columns), stride 1, pad 2 left and 1 right:
    Ix = 3 + 5 − 2 − 1 = 5. TOx=2: boxes [−2, 4) and [0, 6), 6 columns each (model 12);
    physical clips to [0, 4) and [0, 5): 4 + 5 = 9 columns (one row, one map, one image)."""
    layer = ConvLayer(name="dil", Ox=4, Oy=1, Oc=1, Kx=3, Ky=1, Kc=1, Dx=2, Px=2, Px_end=1)
    assert layer.Ix == 5 and layer.Kx_span == 5
    t = tiling.Tile(2, 1, 1, 1, 1)
    assert tiling.counts(layer, t, "intra").in_accesses == 12
    assert tiling.trace(layer, t, "intra", mode="physical").in_accesses == 9
    # inter_oxoyon_dirx: halo 5 − 1 = 4 columns [−2, 2), then 2 new columns per tile
    dirx = tiling.trace(layer, t, "inter_oxoyon_dirx", mode="physical")
    assert dirx.in_accesses == 2 + 2 + 1  # [0, 2) halo, [2, 4), [4, 5) clipped from [4, 6)


# Counts of dense (and one-group) tiles computed by the code before this change (git HEAD
# c7d33c1, tiling.counts and tiling.trace(mode="physical")): (layer, tile, schedule,
# (in, w, out, dma, tiles, Bin, Bw, Bout), physical (in, w, out, dma)).
OLD_LAYERS = {
    "a": dict(name="a", Ox=13, Oy=11, Oc=24, On=2, Kx=3, Ky=3, Kc=10, Px=1, Py=1),
    "b": dict(name="b", Ox=7, Oy=9, Oc=10, On=3, Kx=5, Ky=2, Kc=6, Sx=2, Sy=3, Px=2, Py=0),
    "c": dict(name="c", Ox=1, Oy=1, Oc=17, On=4, Kc=50, kind="fc"),
    "d": dict(name="d", Ox=6, Oy=5, Oc=12, On=1, Kx=2, Ky=4, Kc=4, Sx=3, Sy=1, Px=0, Py=1),
    "g": dict(name="g", Ox=9, Oy=8, Oc=12, On=2, Kx=3, Ky=3, Kc=5, Sx=1, Sy=2, Px=1, Py=1,
              groups=3),
}
OLD_COUNTS = [
    ('a', (4, 1, 17, 1, 3), 'inter_kc', (38016, 323136, 11968, 1584, 704, 54, 459, 68),
     (23560, 190080, 6864, 1584)),
    ('a', (1, 1, 22, 1, 6), 'inter_kc', (61776, 1359072, 12584, 2860, 1144, 54, 1188, 22),
     (45880, 617760, 6864, 2860)),
    ('a', (2, 6, 15, 2, 5), 'inter_oxoyon', (17920, 2700, 30240, 144, 56, 320, 675, 360),
     (13000, 2160, 20592, 144)),
    ('a', (5, 6, 8, 1, 6), 'inter_oc', (8064, 31104, 25920, 204, 72, 336, 432, 240),
     (4420, 25920, 20592, 204)),
    ('a', (4, 5, 24, 2, 4), 'inter_oxoyon_dirx', (9072, 2592, 57600, 108, 36, 336, 864, 960),
     (3900, 2160, 34320, 99)),
    ('b', (4, 7, 8, 1, 4), 'inter_oxoyon_dirx', (36480, 1280, 16128, 148, 48, 880, 320, 224),
     (11700, 600, 5670, 148)),
    ('b', (7, 6, 8, 3, 3), 'inter_oxoyon', (20808, 960, 12096, 24, 8, 2601, 240, 1008),
     (11700, 600, 5670, 24)),
    ('b', (4, 2, 8, 1, 2), 'inter_kc', (19800, 28800, 3840, 420, 180, 110, 160, 64),
     (12672, 18000, 1890, 420)),
    ('b', (5, 3, 10, 3, 6), 'intra', (11232, 3600, 2700, 18, 6, 1872, 600, 450),
     (6912, 3600, 1890, 18)),
    ('b', (3, 9, 8, 1, 1), 'intra', (25272, 8640, 42768, 414, 108, 234, 80, 216),
     (17784, 5400, 20790, 414)),
    ('c', (1, 1, 3, 4, 47), 'inter_oxoyon_dirx', (2256, 1692, 216, 42, 12, 188, 141, 12),
     (1200, 850, 204, 42)),
    ('c', (1, 1, 17, 2, 12), 'inter_oxoyon_dirx', (240, 1020, 612, 33, 10, 24, 204, 34),
     (200, 850, 612, 33)),
    ('c', (1, 1, 8, 3, 20), 'inter_kc', (1080, 2880, 144, 42, 18, 60, 160, 24),
     (600, 1700, 68, 42)),
    ('c', (1, 1, 16, 3, 29), 'intra', (696, 3712, 576, 28, 8, 87, 464, 48),
     (400, 1700, 204, 28)),
    ('c', (1, 1, 5, 1, 44), 'inter_oxoyon', (1408, 1760, 240, 88, 32, 44, 220, 5),
     (800, 850, 204, 88)),
    ('d', (4, 4, 1, 1, 1), 'inter_oc', (1232, 1536, 5376, 544, 192, 77, 8, 16),
     (576, 1536, 2520, 544)),
    ('d', (1, 1, 8, 1, 3), 'inter_kc', (2880, 23040, 480, 300, 120, 24, 192, 8),
     (1728, 11520, 360, 300)),
    ('d', (4, 5, 8, 1, 1), 'inter_oxoyon_dirx', (1408, 512, 4480, 52, 16, 88, 64, 160),
     (768, 384, 2520, 52)),
    ('d', (1, 4, 2, 1, 2), 'inter_oxoyon_dirx', (4032, 384, 1728, 372, 144, 28, 32, 8),
     (2592, 384, 1080, 372)),
    ('d', (4, 3, 11, 1, 1), 'intra', (2112, 2816, 7392, 120, 32, 66, 88, 132),
     (1152, 1536, 2520, 120)),
    ('g', (6, 7, 4, 2, 1), 'inter_oxoyon_dirx', (12600, 540, 36288, 213, 60, 240, 36, 336),
     (4320, 540, 15552, 213)),
    ('g', (5, 8, 3, 1, 4), 'inter_oxoyon', (22848, 1296, 8640, 132, 48, 476, 108, 120),
     (9900, 540, 5184, 132)),
    ('g', (1, 6, 4, 1, 2), 'inter_oc', (25272, 23328, 12960, 1188, 324, 78, 72, 24),
     (12000, 19440, 8640, 1188)),
    ('g', (4, 8, 3, 2, 2), 'inter_oxoyon_dirx', (17136, 972, 17280, 180, 54, 408, 54, 192),
     (8100, 540, 8640, 162)),
    ('g', (6, 8, 3, 1, 5), 'inter_oc', (8160, 3240, 3456, 60, 24, 680, 135, 144),
     (4950, 2160, 1728, 60)),
]


@pytest.mark.parametrize(("name", "tile", "schedule", "model", "physical"), OLD_COUNTS)
def test_counts_of_the_code_before_are_kept(name, tile, schedule, model, physical) -> None:
    layer, t = ConvLayer(**OLD_LAYERS[name]), tiling.Tile(*tile)
    for c in (tiling.counts(layer, t, schedule), tiling.trace(layer, t, schedule)):
        assert (c.in_accesses, c.w_accesses, c.out_accesses, c.dma_transfers, c.n_tiles,
                c.bin, c.bw, c.bout) == model
    p = tiling.trace(layer, t, schedule, mode="physical")
    assert (p.in_accesses, p.w_accesses, p.out_accesses, p.dma_transfers) == physical


@settings(max_examples=examples(60), deadline=None)
@given(layer=grouped_layer(), schedule=st.sampled_from(tiling.SCHEDULES),
       kind=st.sampled_from(sorted(candidates.VECTORS)))
def test_candidate_set_is_the_front_of_every_tile(layer, schedule, kind) -> None:
    """With TOc spanning groups, the reduced TOc values and the spatial pre-reduction lose
    nothing: the candidate vectors are the non-dominated vectors of every valid tile."""
    tiles = np.concatenate(list(tiling.gen_tiles(layer, reduced=False)))
    assert len(tiles) == (layer.Ox * layer.Oy * len(toc_values(layer, reduced=False))
                          * layer.On * layer.Kc)
    vectors = candidates.count_vectors(layer, tiles, schedule, kind)
    front = {tuple(v) for v in vectors[nondominated(vectors)]}
    cs = candidates.build(layer, schedule, kind)
    assert {tuple(v) for v in cs.vectors} == front and len(cs.vectors) == len(front)


@st.composite
def grouped_split(draw: st.DrawFn):
    layer = draw(grouped_layer())
    kind = draw(st.sampled_from(partition.SPLITS))
    k = draw(st.integers(1, partition.split_extent(layer, kind)))
    parts = partition.shares(layer, kind, k)
    return layer, kind, k, parts, [a_tile(draw, s.layer) for s in parts], \
        draw(st.sampled_from(tiling.SCHEDULES))


@settings(max_examples=examples(400), deadline=None)
@given(c=grouped_split(), broadcast=st.booleans())
def test_multi_core_shares_tiled_across_groups(c, broadcast: bool) -> None:
    """Each core's literal run equals its share's model counts; together the cores compute
    every output once (checked by trace_cores) and every MAC; physical never exceeds model."""
    layer, kind, k, parts, tiles, schedule = c
    run = tiling.trace_cores(layer, kind, k, tiles, schedule, broadcast=broadcast)
    physical = tiling.trace_cores(layer, kind, k, tiles, schedule, broadcast=broadcast,
                                  mode="physical")
    core, per_share = 0, []
    for share, tile in zip(parts, tiles, strict=True):
        c = tiling.counts(share.layer, tile, schedule)
        per_share.append((share.cores, c.in_accesses, c.w_accesses, c.out_accesses))
        for _ in range(share.cores):
            assert run.counts[core] == c
            core += 1
    assert run.bus == partition.bus_accesses(kind, per_share, broadcast)
    assert sum(physical.macs) == sum(run.macs) == layer.macs
    assert all(physical.bus[a] <= run.bus[a] for a in ARRAYS)


def test_spec_defaults_dilation_and_end_padding() -> None:
    base = ConvLayer(name="c", Ox=14, Oy=9, Oc=8, Kx=5, Ky=3, Kc=2, Sx=2, Sy=1, Px=2, Py=1)
    assert (base.Ix, base.Iy) == ((14 - 1) * 2 + 5 - 4, (9 - 1) * 1 + 3 - 2)
    assert base.plain_window and (base.Px_e, base.Py_e) == (2, 1)
    conv1 = ConvLayer(name="conv1", Ox=112, Oy=112, Oc=64, Kx=7, Ky=7, Kc=3, Sx=2, Sy=2, Px=3,
                      Py=3, Px_end=2, Py_end=2)  # torchvision ResNet-18 on 224x224
    assert (conv1.Ix, conv1.Iy) == (224, 224) and not conv1.plain_window
    down = ConvLayer(name="down", Ox=28, Oy=28, Oc=128, Kc=64, Sx=2, Sy=2, Px_end=-1,
                     Py_end=-1)   # 1x1/2 on 56x56
    assert (down.Ix, down.Iy) == (56, 56)
    dil = ConvLayer(name="dil", Ox=30, Oy=30, Oc=8, Kx=3, Ky=3, Kc=8, Dx=2, Dy=2, Px=2, Py=2)
    assert (dil.Kx_span, dil.Ix) == (5, 30) and dil.macs == 30 * 30 * 8 * 8 * 9


@pytest.mark.parametrize(("fields", "words"), [
    (dict(Dx=0), ("'bad'", "Dx", "positive")),
    (dict(Dy=True), ("'bad'", "Dy", "positive")),
    (dict(Px_end=-1), ("'bad'", "Px_end", "-(stride - 1)")),
    (dict(Sy=2, Py_end=-2), ("'bad'", "Py_end", "-(stride - 1)")),
    (dict(Px_end=1.5), ("'bad'", "Px_end", "integer")),
    (dict(Kx=3, Px=1, Px_end=3, Ox=1), ("'bad'", "leaves no input")),
])
def test_bad_dilation_and_padding_are_one_line_errors(fields, words) -> None:
    with pytest.raises(SpecError) as err:
        ConvLayer(**{"name": "bad", "Ox": 4, "Oy": 4, "Oc": 2} | fields)
    assert "\n" not in str(err.value) and all(w in str(err.value) for w in words)


def test_bad_group_tiles_are_refused() -> None:
    layer = ConvLayer(name="g", Ox=4, Oy=4, Oc=12, Kc=2, groups=4)   # 3 maps per group
    for toc in (4, 5, 13):
        with pytest.raises(SpecError, match="TOc"):
            tiling.counts(layer, tiling.Tile(1, 1, toc, 1, 1), "intra")
    assert tiling.counts(layer, tiling.Tile(1, 1, 6, 1, 1), "intra").n_tiles == 16 * 2 * 2


def test_dataflow_model_refuses_dilation_and_compulsory_counts_it() -> None:
    from workbench.tiling import dataflow, dataflow_search

    layer = ConvLayer(name="dil", Ox=5, Oy=3, Oc=4, Kx=3, Ky=2, Kc=2, Sx=2, Dx=2, Dy=3,
                      groups=2)
    with pytest.raises(SpecError, match="'dil'.*dilation") as err:
        dataflow.extents(layer)
    assert "\n" not in str(err.value)
    # touched input columns {2p + 2k}: p < 5, k < 3 -> 0..12 even = 7; rows {p + 3k}: p < 3,
    # k < 2 -> 0,1,2,3,4,5 = 6; per group 2 maps · 42 inputs, 2·2·6 weights, 2·15 outputs
    assert dataflow_search.compulsory_bytes(layer, dataflow.Precision(1, 1, 1, 1)) == \
        2 * (2 * 42 + 2 * 2 * 6 + 2 * 15)


def test_listing_shows_the_groups_of_a_tile() -> None:
    layer = ConvLayer(name="dw", Ox=8, Oy=8, Oc=32, Kx=3, Ky=3, Kc=1, Px=1, Py=1, groups=32)
    text = tiling.listing(layer, tiling.Tile(8, 4, 8, 1, 1), "inter_kc")
    assert "in[o_n:1][g:8][k_c:1][i_y:6][i_x:10]" in text and "4 tiles" in text


@pytest.mark.parametrize(("plat_name", "fusion", "kb"), [
    ("idsp", "off", 16), ("idsp", "auto", 64), ("shave", "auto", 16), ("shave", "auto", 64)])
def test_depthwise_separable_plan_replays_exactly(plat_name: str, fusion: str, kb: int) -> None:
    """A MobileNet-style chain (3x3 stem, depthwise, pointwise, strided depthwise with the
    real input size, pointwise) planned with tiles across groups, on one and on 12 cores,
    fused or not (idsp at 64 KB keeps stem→dw1 and dw2→pw2 on chip): the literal replay moves
    exactly what the plan counts, within local memory."""
    from workbench import platforms
    from workbench.explore.network import network_plan
    from workbench.explore.plan_trace import trace_plan
    from workbench.layers.network import Network

    chain = (
        ConvLayer(name="stem", Ox=16, Oy=16, Oc=16, On=2, Kx=3, Ky=3, Kc=3, Px=1, Py=1),
        ConvLayer(name="dw1", Ox=16, Oy=16, Oc=16, On=2, Kx=3, Ky=3, Kc=1, Px=1, Py=1,
                  groups=16),
        ConvLayer(name="pw1", Ox=16, Oy=16, Oc=48, On=2, Kc=16),
        ConvLayer(name="dw2", Ox=8, Oy=8, Oc=48, On=2, Kx=3, Ky=3, Kc=1, Sx=2, Sy=2, Px=1,
                  Py=1, Px_end=0, Py_end=0, groups=48),
        ConvLayer(name="pw2", Ox=8, Oy=8, Oc=24, On=2, Kc=48),
    )
    assert chain[3].Ix == 16
    net = Network("separable", chain)
    plat = platforms.load_platform(plat_name, local_mem_bytes=kb * 1024)
    plan = network_plan(net, plat, fusion=fusion)
    dw_tocs = [share[2][2] for name in ("dw1", "dw2")
               for share in plan.loc[plan["layer"] == name, "shares"].iloc[0]]
    assert max(dw_tocs) > 1   # the depthwise layers are tiled across groups
    replay = trace_plan(net, plat, plan)
    assert replay["ext_accesses"].tolist() == plan["ext_accesses"].tolist()
    assert (replay["local_bytes"] <= plat.local_mem_bytes).all()


@settings(max_examples=examples(15), deadline=None)
@given(ox=st.sampled_from([2, 4, 6]), oy=st.sampled_from([2, 4]), groups=st.integers(2, 5),
       ocg=st.integers(1, 2), kc=st.integers(1, 2), memory=st.sampled_from([512, 2048, 1 << 20]),
       objective=st.sampled_from(["cycles", "energy", "accesses", "edp"]))
def test_pool_fold_on_grouped_convs_equals_every_aligned_tile(ox, oy, groups, ocg, kc, memory,
                                                             objective) -> None:
    """The folded conv+pool search includes tiles across groups and loses none of them."""
    from workbench import perf, platforms
    from workbench.explore import pool_fold
    from workbench.layers.spec import PoolLayer

    oc = groups * ocg
    conv = ConvLayer("c", Ox=ox, Oy=oy, Oc=oc, Kx=3, Ky=3, Kc=kc, Px=1, Py=1, groups=groups)
    pool = PoolLayer("p", oc, ox, oy, 2, 2, 2, 2)
    plat = platforms.load_platform("idsp", local_mem_bytes=memory, register_file_bytes=16)
    got = pool_fold.best_folded(conv, pool, plat, objective, False, False, tiling.SCHEDULES,
                                True)
    best = None
    for schedule in tiling.SCHEDULES:
        for tiles in tiling.gen_tiles(conv, reduced=False):
            tiles = tiles[(tiles[:, 0] % 2 == 0) & (tiles[:, 1] % 2 == 0)]
            c = tiling.counts_array(conv, tiles, schedule)
            fits = (c["bin"] + c["bw"] + c["bout"]) * 4 <= memory
            tiles, c = tiles[fits], {k: v[fits] for k, v in c.items()}
            if not len(tiles):
                continue
            final = c["n_tiles"] // -(-kc // tiles[:, 4]) * c["bout"]  # one put per out tile
            ext = c["in_accesses"] + c["w_accesses"] + final // 4 + c["out_accesses"] - final
            p = perf.price(plat, perf.CountVector.of(
                c["bin"] + c["bw"] + c["bout"], ext, c["dma_transfers"], c["n_tiles"],
                tiles.prod(1) * 9), perf.layer_local_accesses(conv, plat, True))
            cyc = p["cycles"] + pool.ops / plat.simd_lanes
            en = p["energy_pj"] + pool.ops / plat.simd_lanes * plat.core_pj_per_cycle
            value = {"cycles": cyc, "energy": en, "accesses": ext, "edp": cyc * en}[objective]
            best = value.min() if best is None else min(best, value.min())
    if best is None:
        assert got is None
        return
    row, pooled = got
    total = {"cycles": row["cycles"] + pooled["cycles"],
             "energy": row["energy_pj"] + pooled["energy_pj"],
             "accesses": row["ext_accesses"],
             "edp": (row["cycles"] + pooled["cycles"]) * (row["energy_pj"]
                                                         + pooled["energy_pj"])}[objective]
    assert total == pytest.approx(float(best), rel=1e-12)
