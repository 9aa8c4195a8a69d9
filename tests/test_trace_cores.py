"""The literal multi-core trace against `counts_array` per core and `partition.bus_accesses`."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import layers, tiling
from workbench.errors import SpecError, WorkbenchError
from workbench.layers import ConvLayer
from workbench.tiling import partition

ARRAYS = ("in", "w", "out")


@st.composite
def small_layer(draw: st.DrawFn) -> ConvLayer:
    if draw(st.integers(0, 5)) == 0:
        return ConvLayer.fc("fc", draw(st.integers(1, 8)), draw(st.integers(1, 8)),
                            On=draw(st.integers(1, 4)))
    kx, ky = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    px, py = draw(st.integers(0, kx - 1)), draw(st.integers(0, ky - 1))
    groups = draw(st.integers(1, 2))
    ox, oy = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    sx, sy = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    assume(layers.in_size(ox, kx, sx, px) >= 1 and layers.in_size(oy, ky, sy, py) >= 1)
    return ConvLayer(name="rand", Ox=ox, Oy=oy, Oc=groups * draw(st.integers(1, 5)),
                     On=draw(st.integers(1, 3)), Kx=kx, Ky=ky, Kc=draw(st.integers(1, 4)),
                     Sx=sx, Sy=sy, Px=px, Py=py, groups=groups)


@st.composite
def split_case(draw: st.DrawFn, one_core: bool = False):
    layer, kind = draw(small_layer()), draw(st.sampled_from(partition.SPLITS))
    extent = partition.split_extent(layer, kind)
    k = 1 if one_core else draw(st.one_of(st.integers(1, extent), st.integers(
        max(1, extent // 2), extent)))  # the second leans to many cores per share
    parts = partition.shares(layer, kind, k)
    tiles = [tiling.Tile(*(draw(st.integers(1, d)) for d in tiling.dims(s.layer)))
             for s in parts]
    return layer, kind, k, parts, tiles, draw(st.sampled_from(tiling.SCHEDULES))


def model_counts(layer: ConvLayer, tile: tiling.Tile, schedule: str) -> tiling.Counts:
    arrays = tiling.counts_array(layer, np.array([tile.as_tuple()]), schedule)
    return tiling.Counts(**{key: int(value[0]) for key, value in arrays.items()})


@settings(max_examples=examples(1500))
@given(case=split_case())
def test_cores_match_model_and_bus_matches_partition(case) -> None:
    layer, kind, k, parts, tiles, schedule = case
    per_share = []
    for share, tile in zip(parts, tiles, strict=True):
        c = model_counts(share.layer, tile, schedule)
        per_share.append((share.cores, c.in_accesses, c.w_accesses, c.out_accesses))
    physical = tiling.trace_cores(layer, kind, k, tiles, schedule, broadcast=True,
                                  mode="physical")
    for broadcast in (False, True):
        run = tiling.trace_cores(layer, kind, k, tiles, schedule, broadcast=broadcast,
                                 events=broadcast)
        assert run.bus == partition.bus_accesses(kind, per_share, broadcast)
        cores = [(share, tile) for share, tile in zip(parts, tiles, strict=True)
                 for _ in share.starts]
        assert run.starts == tuple(s for share in parts for s in share.starts)
        assert len(run.counts) == len(run.macs) == k
        for core, (share, tile) in enumerate(cores):
            assert run.counts[core] == model_counts(share.layer, tile, schedule)
            assert run.macs[core] == physical.macs[core] == share.layer.macs
        assert sum(run.macs) == layer.macs
    for core, event_sum in enumerate(_event_sums(run, k)):
        c = run.counts[core]
        assert event_sum == {"in": c.in_accesses, "w": c.w_accesses, "out": c.out_accesses}
    for p, m in zip(physical.counts, run.counts, strict=True):
        assert p.in_accesses <= m.in_accesses and p.w_accesses <= m.w_accesses
        assert p.out_accesses <= m.out_accesses and p.dma_transfers <= m.dma_transfers
        assert p.n_tiles == m.n_tiles
    assert all(physical.bus[array] <= run.bus[array] for array in ARRAYS)  # both broadcast


def _event_sums(run: tiling.CoreTrace, k: int) -> list[dict[str, int]]:
    sums = [dict.fromkeys(ARRAYS, 0) for _ in range(k)]
    for event in run.events:
        sums[event.core][event.array] += event.elements
    return sums


@settings(max_examples=examples(300))
@given(case=split_case(one_core=True), mode=st.sampled_from(("model", "physical")))
def test_one_core_is_the_single_core_trace(case, mode: str) -> None:
    layer, kind, k, _, tiles, schedule = case
    single = tiling.trace(layer, tiles[0], schedule, mode=mode)
    for broadcast in (False, True):
        run = tiling.trace_cores(layer, kind, k, tiles, schedule, broadcast=broadcast,
                                 mode=mode)
        assert run.counts == (single,)
        assert run.bus == {"in": single.in_accesses, "w": single.w_accesses,
                           "out": single.out_accesses}


def test_broadcast_by_hand() -> None:
    """4 maps of 4x4 from 2 maps of 4x4 through 3x3 kernels, padding 1, split "oc" over 2
    cores (2 maps each), tile TOx=4, TOy=2, TOc=1, TOn=1, TKc=2, schedule inter_oc: each core
    fetches 2 input row bands of 4 rows x 6 columns x 2 maps = 48 elements, 96 in all."""
    layer = ConvLayer(name="four", Ox=4, Oy=4, Oc=4, Kx=3, Ky=3, Kc=2, Px=1, Py=1)
    tiles = [tiling.Tile(4, 2, 1, 1, 2)]
    private = tiling.trace_cores(layer, "oc", 2, tiles, "inter_oc")
    shared = tiling.trace_cores(layer, "oc", 2, tiles, "inter_oc", broadcast=True, events=True)
    assert [c.in_accesses for c in shared.counts] == [96, 96]
    assert shared.bus["in"] == 96 and private.bus["in"] == 2 * 96
    # weights 3*3*2 per map and band, 2 maps x 2 bands per core; outputs 2 maps x 16 per core
    assert shared.bus["w"] == private.bus["w"] == 2 * (2 * 2 * 18)
    assert shared.bus["out"] == private.bus["out"] == 4 * 16
    gets = [[(e.step, e.box) for e in shared.events if e.core == core and e.array == "in"]
            for core in (0, 1)]
    assert gets[0] == gets[1] and [box for _, box in gets[0]] == [
        ((0, 1), (0, 2), (-1, 3), (-1, 5)), ((0, 1), (0, 2), (1, 5), (-1, 5))]
    # physical: rows [-1, 3) and [1, 5) clip to 3 real rows, columns [-1, 5) to 4
    physical = tiling.trace_cores(layer, "oc", 2, tiles, "inter_oc", broadcast=True,
                                  mode="physical")
    assert physical.bus["in"] == 2 * 3 * 4 * 2


def test_unequal_boxes_are_not_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the input is shared by an "xy" split: bands read different rows, so a broadcast
    DMA must still fetch each core's input separately (and now weights once per core)."""
    layer = ConvLayer(name="band", Ox=3, Oy=4, Oc=2, Kx=3, Ky=3, Kc=2, Px=1, Py=1)
    tiles = [tiling.Tile(3, 1, 2, 1, 2)]
    monkeypatch.setitem(partition.SHARED, "xy", "in")
    run = tiling.trace_cores(layer, "xy", 2, tiles, "intra", broadcast=True)
    assert run.bus["in"] == sum(c.in_accesses for c in run.counts) == 2 * 2 * (3 * 5 * 2)
    assert run.bus["w"] == sum(c.w_accesses for c in run.counts)


@pytest.mark.parametrize("starts", [(0, 1), (0, 0), (1, 2)])
def test_wrong_split_is_caught(monkeypatch: pytest.MonkeyPatch, starts) -> None:
    layer = ConvLayer(name="four", Ox=3, Oy=3, Oc=4, Kx=3, Ky=3, Kc=2, Px=1, Py=1)
    right = partition.shares(layer, "oc", 2)
    monkeypatch.setattr(partition, "shares", lambda *_: (
        partition.Share(right[0].layer, 2, starts),))
    with pytest.raises(WorkbenchError, match="computed (2|0) times"):
        tiling.trace_cores(layer, "oc", 2, [tiling.Tile(3, 3, 2, 1, 2)], "intra")


def test_wrong_split_outside_the_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    layer = ConvLayer(name="rows", Ox=3, Oy=4, Oc=1, Kx=3, Ky=3, Kc=1, Px=1, Py=1)
    right = partition.shares(layer, "xy", 2)
    monkeypatch.setattr(partition, "shares", lambda *_: (
        partition.Share(right[0].layer, 2, (0, 3)),))
    with pytest.raises(WorkbenchError, match="outside the layer"):
        tiling.trace_cores(layer, "xy", 2, [tiling.Tile(3, 2, 1, 1, 1)], "inter_kc")


def test_bad_arguments() -> None:
    layer = ConvLayer(name="four", Ox=3, Oy=3, Oc=4, Kx=3, Ky=3, Kc=2, Px=1, Py=1)
    tile = tiling.Tile(3, 3, 2, 1, 2)
    with pytest.raises(SpecError, match="1 shares need 1 tiles, got 2"):
        tiling.trace_cores(layer, "oc", 2, [tile, tile], "intra")
    with pytest.raises(SpecError, match="tile TOc=3 must be an integer in 1..2"):
        tiling.trace_cores(layer, "oc", 2, [tiling.Tile(3, 3, 3, 1, 2)], "intra")
    with pytest.raises(WorkbenchError, match="mode must be"):
        tiling.trace_cores(layer, "oc", 2, [tile], "intra", mode="exact")
    with pytest.raises(SpecError, match="needs 1..4 cores"):
        tiling.trace_cores(layer, "oc", 5, [tile], "intra")


def test_group_split_by_hand() -> None:
    """A depthwise 3x3 layer, 5 channels of 4x4 with padding 1, split "g" over 2 cores (3 and 2
    channels), whole-map tiles (TOx=TOy=4, TOc=1, TKc=1): each core gets its own channels'
    6x6 padded inputs and 9 weights each, nothing shared, so a broadcast DMA changes nothing."""
    layer = ConvLayer(name="dw", Ox=4, Oy=4, Oc=5, Kx=3, Ky=3, Kc=1, Px=1, Py=1, groups=5)
    parts = partition.shares(layer, "g", 2)
    assert [(s.cores, s.starts, s.layer.groups, s.layer.Oc) for s in parts] == \
        [(1, (0,), 3, 3), (1, (3,), 2, 2)]
    tiles = [tiling.Tile(4, 4, 1, 1, 1)] * 2
    private = tiling.trace_cores(layer, "g", 2, tiles, "inter_oc", events=True)
    shared = tiling.trace_cores(layer, "g", 2, tiles, "inter_oc", broadcast=True)
    assert [c.in_accesses for c in private.counts] == [3 * 36, 2 * 36]
    assert private.bus == shared.bus == {"in": 5 * 36, "w": 5 * 9, "out": 5 * 16}
    groups = {(e.core, e.box[1]) for e in private.events if e.array == "in"}
    assert groups == {(0, (0, 1)), (0, (1, 2)), (0, (2, 3)), (1, (3, 4)), (1, (4, 5))}
    with pytest.raises(SpecError, match="a 'g' split needs 1..1 cores \\(one group each"):
        partition.shares(ConvLayer(name="dense", Ox=2, Oy=2, Oc=4, Kc=2), "g", 2)
    with pytest.raises(SpecError, match="a 'on' split needs 1..1 cores \\(one image each"):
        partition.shares(layer, "on", 2)


def test_depthwise_layer_on_small_maps_spreads_over_every_core() -> None:
    """MobileNetV2's last depthwise layer (960 channels of 7x7) on the 12-SHAVE platform: rows
    give at most 7 cores, its groups give all 12; the search's choice, traced core by core,
    computes every output once with the model's counts."""
    from workbench import platforms
    from workbench.explore import cores

    net = layers.load_network("mobilenet_v2")
    layer = [lay for lay in net.tiled_layers() if lay.groups > 1][-1]
    assert (layer.groups, layer.Oc, layer.Oy) == (960, 960, 7)
    plat = platforms.load_platform("shave")
    options = cores.split_options(layer, plat, "cycles")
    assert options[options["split"] == "xy"]["cores"].max() == 7
    best = cores.best_option(layer, plat, "cycles")
    assert (best["split"], best["cores"]) == ("g", 12)
    assert best["cycles"] < options[options["split"] != "g"]["cycles"].min()
    parts = partition.shares(layer, "g", 12)
    tiles = [tiling.Tile(*tile) for _, _, tile in best["shares"]]
    schedules = [schedule for _, schedule, _ in best["shares"]]
    run = tiling.trace_cores(layer, "g", 12, tiles, schedules)
    for share, tile, schedule in zip(parts, tiles, schedules, strict=True):
        assert tiling.counts(share.layer, tile, schedule) in run.counts
    assert run.bus["in"] + run.bus["w"] + run.bus["out"] == best["ext_accesses"]
