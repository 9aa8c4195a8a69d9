"""Counts never wrap: layers past int64 are counted exactly with Python integers (one tile) or
refused in one line (vectorized paths); candidate sets stream in bounded memory, equal to the
one-shot filter, and a tile space that cannot fit is refused up front without allocating."""

from __future__ import annotations

import math
import random
import re
import tracemalloc

import numpy as np
import pytest

from workbench import perf, platforms, tiling
from workbench.errors import SpecError
from workbench.layers import load_network
from workbench.layers.spec import ConvLayer
from workbench.tiling import candidates, model
from workbench.tiling.dominance import nondominated


def reference_counts(layer: ConvLayer, tile: tuple[int, ...], schedule: str) -> dict[str, int]:
    """The DESIGN.md table in Python integers, for dense layers (groups = 1)."""
    tox, toy, toc, ton, tkc = tile
    nx, ny, nc = -(-layer.Ox // tox), -(-layer.Oy // toy), -(-layer.Oc // toc)
    nn, nk = -(-layer.On // ton), -(-layer.Kc // tkc)
    rows = ((toy - 1) * layer.Sy + layer.Ky_span) * tkc * ton
    b_in = ((tox - 1) * layer.Sx + layer.Kx_span) * rows
    b_w, b_out = layer.Kx * layer.Ky * tkc * toc, tox * toy * toc * ton
    out_tiles, n = nx * ny * nc * nn, nx * ny * nc * nn * nk
    out_all = out_tiles * (2 * nk - 1)
    acc = {"intra": (n * b_in, n * b_w, out_all * b_out, 2 * n + out_all),
           "inter_kc": (n * b_in, n * b_w, out_tiles * b_out, 2 * n + out_tiles),
           "inter_oc": (nx * ny * nn * nk * b_in, n * b_w, out_all * b_out,
                        nx * ny * nn * nk + n + out_all),
           "inter_oxoyon": (n * b_in, nc * nk * b_w, out_all * b_out, n + nc * nk + out_all)}
    if schedule == "inter_oxoyon_dirx":
        overlap = max(layer.Kx_span - layer.Sx, 0)
        b_ol = overlap * rows
        acc[schedule] = (nc * nk * nn * ny * (nx * (b_in - b_ol) + b_ol), nc * nk * b_w,
                         out_all * b_out,
                         nc * nk * nn * ny * (nx + (overlap > 0)) + nc * nk + out_all)
    i, w, o, dma = acc[schedule]
    return {"in_accesses": i, "w_accesses": w, "out_accesses": o, "dma_transfers": dma,
            "n_tiles": n, "bin": b_in, "bw": b_w, "bout": b_out}


def as_dict(c: tiling.Counts) -> dict[str, int]:
    return {k: getattr(c, k) for k in ("in_accesses", "w_accesses", "out_accesses",
                                       "dma_transfers", "n_tiles", "bin", "bw", "bout")}


HUGE = ConvLayer(name="huge", Ox=2**20, Oy=2**20, Oc=2048, On=1, Kx=3, Ky=3, Kc=2048, Sx=1,
                 Sy=1, Px=1, Py=1)
HUGE_FC = ConvLayer.fc("huge_fc", in_features=2**20, out_features=2**20, On=2**22)


@pytest.mark.parametrize("layer", [HUGE, HUGE_FC], ids=["conv", "fc"])
@pytest.mark.parametrize("schedule", tiling.SCHEDULES)
def test_a_2_20_layer_is_counted_exactly_never_negative(layer: ConvLayer, schedule: str) -> None:
    assert not model.fits_int64(layer)
    largest = 0
    for tile in [(1, 1, 1, 1, 1), (min(7, layer.Ox), 1, 5, min(3, layer.On), 2),
                 (layer.Ox, 1, 1, 1, layer.Kc), (1, 1, layer.Oc, layer.On, 1)]:
        got = as_dict(tiling.counts(layer, tiling.Tile(*tile), schedule))
        assert got == reference_counts(layer, tile, schedule)
        assert min(got.values()) > 0
        largest = max(largest, got["in_accesses"] + got["w_accesses"] + got["out_accesses"])
    assert largest > 2**63  # past int64: these counts wrapped before


def test_the_reproducer_is_past_int64_and_every_vectorized_path_refuses() -> None:
    c = tiling.counts(HUGE, tiling.Tile(1, 1, 1, 1, 1), "intra")
    assert c.in_accesses == 2**40 * 2048 * 2048 * 9 and c.ext_accesses > 2**63
    many = np.ones((model.EXACT_ROWS + 1, 5), dtype=np.int64)
    for call in (lambda: model.counts_array(HUGE, many, "intra"),
                 lambda: next(model.gen_tiles(HUGE)),
                 lambda: candidates.build(HUGE, "intra"),
                 lambda: perf.estimate(HUGE, tiling.Tile(1, 1, 1, 1, 1), "intra",
                                       platforms.load_platform("idsp"))):
        with pytest.raises(SpecError, match=r"layer 'huge'.*2\^60") as err:
            call()
        assert "\n" not in str(err.value)


def test_estimate_of_a_huge_layer_without_local_traffic_is_finite_and_positive() -> None:
    idsp = platforms.load_platform("idsp")
    whole = perf.estimate(HUGE, tiling.Tile(*model.tile_limits(HUGE)), "intra", idsp,
                          local_traffic=False)  # one tile of 9·2^62 MACs: wrapped before
    assert whole.cycles >= 9 * 2**62 / idsp.macs_per_cycle and 0 < whole.utilization <= 1
    e = perf.estimate(HUGE, tiling.Tile(64, 64, 64, 1, 64), "inter_kc", idsp,
                      local_traffic=False)
    assert 0 < e.cycles < math.inf and e.ctc > 0 and min(e.energy_pj.values()) >= 0
    assert e.counts.ext_accesses == sum(reference_counts(
        HUGE, (64, 64, 64, 1, 64), "inter_kc")[k] for k in ("in_accesses", "w_accesses",
                                                           "out_accesses"))


def _random_layer(rng: random.Random, top: int) -> ConvLayer:
    k, s = rng.randint(1, 7), rng.randint(1, 3)
    ox, oy = rng.randint(1, top), rng.randint(1, top)
    return ConvLayer(name="r", Ox=ox, Oy=oy, Oc=rng.randint(1, top),
                     On=rng.randint(1, min(64, top)), Kx=k, Ky=k, Kc=rng.randint(1, top),
                     Sx=s, Sy=s, Px=0, Py=0)


@pytest.mark.parametrize("seed", range(6))
def test_random_huge_layers_are_exact_or_refused(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        layer = _random_layer(rng, 2**rng.randint(10, 24))
        tile = tuple(rng.randint(1, d) for d in model.tile_limits(layer))
        schedule = rng.choice(tiling.SCHEDULES)
        assert as_dict(tiling.counts(layer, tiling.Tile(*tile), schedule)) == \
            reference_counts(layer, tile, schedule)
        if model.fits_int64(layer):  # the int64 path: equal to the Python integers
            got = model.counts_array(layer, np.array([tile] * 2), schedule)
            assert {k: int(v[1]) for k, v in got.items()} == reference_counts(layer, tile,
                                                                               schedule)
        else:
            with pytest.raises(SpecError, match="2\\^60"):
                model.counts_array(layer, np.array([tile] * (model.EXACT_ROWS + 1)), schedule)


@pytest.mark.parametrize("seed", range(4))
def test_count_bound_bounds_every_count_of_every_tile(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(10):
        layer = _random_layer(random.Random(int(rng.integers(1 << 30))), 12)
        if rng.random() < 0.4:
            groups = int(rng.choice([2, 4]))
            layer = ConvLayer(name="g", Ox=layer.Ox, Oy=layer.Oy, Oc=groups * layer.Oc,
                              On=layer.On, Kx=layer.Kx, Ky=layer.Ky, Kc=layer.Kc, Sx=layer.Sx,
                              Sy=layer.Sy, Px=0, Py=0, groups=groups)
        tiles = np.concatenate(list(model.gen_tiles(layer, reduced=False)))
        bound = model.count_bound(layer)
        for schedule in tiling.SCHEDULES:
            c = model.counts_array(layer, tiles, schedule)
            assert max(int(v.max()) for v in c.values()) <= bound
            assert int(tiles.prod(axis=1).max()) <= bound
            assert min(int(v.min()) for v in c.values()) >= 1


def _one_shot(layer: ConvLayer, schedule: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The candidate set as it was built before streaming: the whole grid, one filter."""
    pairs = candidates._spatial_pairs(layer, schedule)
    rest = np.stack(np.meshgrid(model.toc_values(layer), model.tile_candidates(layer.On),
                                model.tile_candidates(layer.Kc), indexing="ij"),
                    axis=-1).reshape(-1, 3)
    tiles = np.column_stack([np.repeat(pairs, len(rest), axis=0),
                             np.tile(rest, (len(pairs), 1))])
    vectors = candidates.count_vectors(layer, tiles, schedule, kind)
    keep = nondominated(vectors)
    return tiles[keep], vectors[keep]


@pytest.mark.parametrize("seed", range(4))
def test_streamed_sets_equal_the_one_shot_filter_bit_for_bit(seed: int, monkeypatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(candidates, "CHUNK_ROWS", 997)  # many chunks and clean-ups
    for _ in range(3):
        layer = _random_layer(rng, 30)
        if seed % 2:
            layer = ConvLayer(name="g", Ox=layer.Ox, Oy=layer.Oy, Oc=4 * layer.Oc, On=layer.On,
                              Kx=layer.Kx, Ky=layer.Ky, Kc=layer.Kc, Sx=layer.Sx, Sy=layer.Sy,
                              Px=0, Py=0, groups=4)
        for schedule in tiling.SCHEDULES:
            kind = rng.choice(list(candidates.VECTORS))
            cs = candidates.build(layer, schedule, kind)
            tiles, vectors = _one_shot(layer, schedule, kind)
            assert np.array_equal(cs.tiles, tiles) and np.array_equal(cs.vectors, vectors)
            sizes = [len(model.tile_candidates(d)) for d in (layer.Ox, layer.Oy, layer.On,
                                                             layer.Kc)]
            assert cs.grid_size == math.prod(sizes) * len(model.toc_values(layer))


def test_tile_candidates_of_a_huge_extent_are_cheap_and_counted_without_building() -> None:
    for extent in [*range(1, 2000), 10**6 + 7, 2**31 - 1]:
        old = None if extent > 10**7 else np.unique(-(-extent // np.arange(1, extent + 1)))
        got = model.tile_candidates(extent)
        assert old is None or np.array_equal(got, old)
        assert model.n_tile_candidates(extent) == len(got)
    tracemalloc.start()
    assert len(model.tile_candidates(10**12)) == model.n_tile_candidates(10**12)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20  # was np.arange(10**12): 7.3 TiB


def test_a_10_12_map_network_is_refused_up_front_without_allocating(tmp_path) -> None:
    from workbench import explore

    path = tmp_path / "giant.yaml"
    path.write_text("name: giant\ninput: [3, 32, 32]\nbatch: 1\nlayers:\n"
                    "  - {name: conv1, type: conv, maps: 1000000000000, kernel: 3, pad: 1}\n"
                    "  - {name: fc1, type: fc, outputs: 10}\n")
    net = load_network(str(path))
    for progress in (False, True):  # layer by layer, or every set first (on a terminal)
        tracemalloc.start()
        with pytest.raises(SpecError) as err:
            explore.network_plan(net, platforms.load_platform("idsp"), progress=progress)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        message = str(err.value)
        assert "\n" not in message and "conv1" in message
        assert "Oc per group = 1.00 T gives 2.00 M tile sizes, beyond the 32,768" in message
        assert peak < 100 * 2**20  # was: an allocation of 7.3 TiB


def test_a_request_over_the_enumeration_budget_is_refused_with_its_estimate() -> None:
    big = ConvLayer(name="big", Ox=224, Oy=224, Oc=8192, On=256, Kx=3, Ky=3, Kc=8192,
                    Sx=1, Sy=1, Px=1, Py=1)
    other = ConvLayer(name="other", Ox=224, Oy=224, Oc=8192, On=255, Kx=3, Ky=3, Kc=8192,
                      Sx=1, Sy=1, Px=1, Py=1)
    tracemalloc.start()
    with pytest.raises(SpecError) as err:
        candidates.candidate_sets([(layer, s) for layer in (big, other)
                                   for s in tiling.SCHEDULES])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert re.fullmatch(r"10 candidate sets to build would price 2\.7\d G tiles \(about "
                        r"1\.5\d h of one core; largest layer '(big|other)'\), beyond the limit "
                        r"of 2\.15 G; use a smaller layer or batch", str(err.value))
    assert peak < 100 * 2**20


def test_the_8192_map_conv_is_accepted_and_its_grid_counted() -> None:
    layer = ConvLayer(name="big", Ox=224, Oy=224, Oc=8192, On=256, Kx=3, Ky=3, Kc=8192,
                      Sx=1, Sy=1, Px=1, Py=1)
    assert model.fits_int64(layer)
    model.check_grid(layer)  # not refused: bench_memory.py builds it in bounded memory
    candidates.check_request([(layer, s) for s in tiling.SCHEDULES])
    assert sum(candidates.enumerated_tiles(layer, s) for s in tiling.SCHEDULES) == \
        (4 * 240 + 392) * 181 * 31 * 181  # spatial pairs left × (TOc, TOn, TKc)
    assert model.grid_size(layer) == 29 * 29 * 181 * 31 * 181
