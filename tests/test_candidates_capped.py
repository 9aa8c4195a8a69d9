"""Capped candidate sets (`tiling.capped`, `candidates.candidate_set(cap=...)`): the set built
without the tiles above a footprint cap is the whole set filtered to the cap, row for row; the
answers at a memory size do not change; a larger cap serves a smaller one; the up-front
estimate bounds the tiles actually priced."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, perf, platforms, tiling
from workbench.errors import WorkbenchError
from workbench.explore import query
from workbench.explore.network import network_plan
from workbench.layers import ConvLayer
from workbench.layers.network import Network
from workbench.layers.spec import ActivationLayer, PoolLayer, conv_from_input
from workbench.memo import Caches
from workbench.tiling import candidates, capped
from workbench.tiling.candidate_set import DiskIndex

KINDS = ("cost", "traffic", "arrays")

layers_st = st.builds(  # small, grouped, strided and dilated layers
    lambda ox, oy, oc, on, kc, k, s, g, d: ConvLayer(
        name="r", Ox=ox, Oy=oy, Oc=oc * g, On=on, Kx=k, Ky=max(1, k - 1), Kc=kc, Sx=s,
        Sy=1, Px=(k - 1) // 2, Py=0, groups=g, Dx=d),
    ox=st.integers(1, 12), oy=st.integers(1, 8), oc=st.integers(1, 9), on=st.integers(1, 4),
    kc=st.integers(1, 9), k=st.integers(1, 4), s=st.integers(1, 3),
    g=st.sampled_from([1, 1, 2, 3]), d=st.sampled_from([1, 1, 2]))


@contextlib.contextmanager
def fresh_caches() -> Iterator[None]:
    """An empty disk cache and empty in-memory memos (the memoized local accesses; the
    engine's other memos live in the `Caches` each call is given, none here: its own)."""
    old = os.environ.get("WORKBENCH_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="capped-") as folder:
        os.environ["WORKBENCH_CACHE_DIR"] = folder
        _clear()
        try:
            yield
        finally:
            os.environ["WORKBENCH_CACHE_DIR"] = old or ""
            if old is None:
                del os.environ["WORKBENCH_CACHE_DIR"]
            _clear()


def _clear() -> None:
    candidates.local_accesses.cache_clear()


def _fraction(cs: candidates.CandidateSet, f: float) -> int:
    """A cap between 0 and a bit past the set's largest footprint."""
    fp = cs.column("footprint_elems")
    return int(f * (int(fp.max()) + 3)) if len(fp) else 0


@settings(max_examples=examples(100))
@given(layer=layers_st, schedule=st.sampled_from(tiling.SCHEDULES),
       kind=st.sampled_from(KINDS), f=st.floats(0, 1.1))
def test_capped_set_is_the_whole_set_filtered(layer, schedule, kind, f) -> None:
    whole = candidates.build(layer, schedule, kind)
    cap = _fraction(whole, f)
    keep = whole.column("footprint_elems") <= cap
    built = candidates.build(layer, schedule, kind, cap)
    assert built.cap == cap and built.grid_size == whole.grid_size
    assert np.array_equal(built.tiles, whole.tiles[keep])
    assert np.array_equal(built.vectors, whole.vectors[keep])
    served = whole.restrict(cap)  # the whole set serves every cap, the same rows
    assert np.array_equal(served.tiles, built.tiles) and served.cap == cap
    if kind != "traffic":  # sorted by footprint: a prefix
        assert keep[:keep.sum()].all()


@settings(max_examples=examples(40))
@given(layer=layers_st, schedule=st.sampled_from(tiling.SCHEDULES), f=st.floats(0, 1.1),
       rows=st.integers(1, 50))
def test_estimate_bounds_the_tiles_priced(layer, schedule, f, rows) -> None:
    """The capped enumeration yields exactly the grid's fitting tiles, in grid order, and the
    request estimate counts them (never fewer)."""
    pairs = candidates._spatial_pairs(layer, schedule)
    cap = _fraction(candidates.build(layer, schedule), f)
    grid = np.concatenate(list(candidates._gen_grid(
        [pairs, tiling.toc_values(layer)[:, None],
         tiling.tile_candidates(layer.On)[:, None], tiling.tile_candidates(layer.Kc)[:, None]],
        1 << 16)))
    fitting = grid[capped.footprint(layer, grid) <= cap]
    chunks = list(capped.gen_capped_tiles(layer, pairs, cap, rows))
    assert all(len(c) == rows for c in chunks[:-1])
    visited = np.concatenate(chunks) if chunks else np.zeros((0, 5), dtype=np.int64)
    assert np.array_equal(visited, fitting)
    estimate = candidates.enumerated_tiles(layer, schedule, cap)
    assert len(visited) <= estimate <= candidates.enumerated_tiles(layer, schedule)
    assert capped.capped_size(layer, pairs, cap) == len(visited)


def test_build_prices_only_the_estimated_tiles(monkeypatch) -> None:
    layer = ConvLayer(name="c", Ox=30, Oy=20, Oc=64, On=4, Kx=3, Ky=3, Kc=48, Sx=1, Sy=1,
                      Px=1, Py=1)
    cap = 600
    priced = []
    real = candidates.count_vectors

    def counting(lay, tiles, schedule, kind="cost"):
        assert (capped.footprint(lay, tiles) <= cap).all()  # nothing above the cap priced
        priced.append(len(tiles))
        return real(lay, tiles, schedule, kind)

    monkeypatch.setattr(candidates, "count_vectors", counting)
    candidates.build(layer, "inter_oc", "cost", cap)
    estimate = candidates.enumerated_tiles(layer, "inter_oc", cap)
    assert sum(priced) == estimate < candidates.enumerated_tiles(layer, "inter_oc") / 4


def test_a_larger_cap_serves_a_smaller_one_from_memory_and_disk(monkeypatch) -> None:
    layer = ConvLayer(name="c", Ox=14, Oy=14, Oc=32, On=2, Kx=3, Ky=3, Kc=16, Sx=1, Sy=1,
                      Px=1, Py=1)
    with fresh_caches():
        whole = candidates.build(layer, "intra", "arrays")
        caches = Caches()
        big = candidates.candidate_set(layer, "intra", "arrays", cap=5000, caches=caches)
        real_build = candidates.build

        def refuse(*args, **kwargs):
            raise AssertionError("built again")

        monkeypatch.setattr(candidates, "build", refuse)
        for source in ("memory", "disk"):
            if source == "disk":
                caches = Caches()  # nothing in memory
            for cap in (5000, 1200, 0):
                cs = candidates.candidate_set(layer, "intra", "arrays", cap=cap, caches=caches)
                keep = whole.column("footprint_elems") <= cap
                assert cs.cap == cap and np.array_equal(cs.tiles, whole.tiles[keep])
        assert np.array_equal(big.tiles, whole.restrict(5000).tiles)
        with pytest.raises(AssertionError, match="built again"):  # a larger cap builds
            candidates.candidate_set(layer, "intra", "arrays", cap=5001, caches=caches)
        monkeypatch.setattr(candidates, "build", real_build)
        assert candidates.candidate_set(layer, "intra", "arrays", caches=caches).cap is None
        assert DiskIndex().caps(candidates.shape_key(layer), "intra", "arrays") == [None]
        # nothing in memory: the whole file (the name of before caps) serves
        monkeypatch.setattr(candidates, "build", refuse)
        cs = candidates.candidate_set(layer, "intra", "arrays", cap=777, caches=Caches())
        assert np.array_equal(cs.tiles, whole.restrict(777).tiles)


def test_a_capped_file_whose_rows_pass_its_cap_is_rebuilt() -> None:
    layer = ConvLayer(name="c", Ox=9, Oy=9, Oc=8, On=1, Kx=3, Ky=3, Kc=8, Sx=1, Sy=1)
    with fresh_caches():
        cs = candidates.candidate_set(layer, "inter_kc", cap=400)
        path = candidates._file(candidates.shape_key(layer), "inter_kc", "cost", 400)
        assert candidates._load(path, layer, "inter_kc", "cost", 400) is not None
        assert candidates._load(path, layer, "inter_kc", "cost", 300) is None  # wrong cap
        whole = candidates.build(layer, "inter_kc")
        forged = candidates.CandidateSet(cs.shape, "inter_kc", whole.tiles, whole.vectors,
                                         cs.grid_size, "cost", 400)
        DiskIndex().store(path, forged)  # checksum fine, rows above the cap
        assert candidates._load(path, layer, "inter_kc", "cost", 400) is None


plats_st = st.builds(
    lambda mem, elem, double, cores_, rf: platforms.load_platform(
        "idsp", local_mem_bytes=mem, elem_bytes=elem, double_buffer=double, cores=cores_,
        register_file_bytes=rf),
    mem=st.sampled_from([512, 2048, 6000, 16384]), elem=st.sampled_from([1, 2]),
    double=st.booleans(), cores_=st.integers(1, 2), rf=st.sampled_from([16, 64, 512]))


def _chain(c: int, m1: int, m2: int, hw: int) -> Network:
    conv1 = conv_from_input("conv1", (c, hw, hw), m1, (3, 3), (1, 1), (1, 1))
    relu1 = ActivationLayer("relu1", m1, hw, hw)
    pool1 = PoolLayer("pool1", m1, hw, hw, 2, 2, 2, 2)
    conv2 = conv_from_input("conv2", pool1.out_shape, m2, (3, 3), (1, 1), (1, 1))
    return Network("chain", (conv1, relu1, pool1, conv2, ConvLayer.fc("fc", m2 * 4 * 4, 5)))


def _answers(net: Network, plat: platforms.Platform, objective: str,
             sizes: list[int]) -> tuple:
    """(network plan or its error, best mappings at the sizes) with fresh caches."""
    with fresh_caches():
        try:
            plan = network_plan(net, plat, objective)
        except WorkbenchError as error:
            plan = str(error)
        best = explore.best_mappings(net.tiled_layers(), plat, sizes, objective=objective)
    return plan, best


@settings(max_examples=examples(20))
@given(plat=plats_st, objective=st.sampled_from(explore.OBJECTIVES),
       sizes=st.lists(st.integers(64, 20000), min_size=1, max_size=3),
       maps=st.tuples(st.integers(1, 3), st.integers(2, 6), st.integers(2, 6)))
def test_plans_and_best_mappings_equal_the_uncapped_answers(plat, objective, sizes, maps,
                                                            monkeypatch_module) -> None:
    net = _chain(*maps, hw=8)
    plan, best = _answers(net, plat, objective, sizes)
    with monkeypatch_module.context() as patch:  # the queries of before caps: whole sets
        patch.setattr(candidates, "candidate_set", _whole(candidates.candidate_set))
        patch.setattr(perf, "local_accesses", _local_accesses_of_whole_sets)
        plan_whole, best_whole = _answers(net, plat, objective, sizes)
    if isinstance(plan, str):
        assert plan == plan_whole
    else:
        pd.testing.assert_frame_equal(plan, plan_whole)
    pd.testing.assert_frame_equal(best, best_whole)


def _whole(real):
    """candidate_set that ignores the cap: the whole set, as before caps (the callers keep
    the rows that fit themselves)."""
    def whole(layer, schedule, kind="cost", use_disk=True, cap=None, caches=None):
        return real(layer, schedule, kind, use_disk, caches=caches)
    return whole


def _local_accesses_of_whole_sets(layer, register_file_bytes, elem_bytes) -> int:
    """`candidates.local_accesses` as before caps: the fitting rows of the whole sets."""
    limit = register_file_bytes // elem_bytes
    lows = []
    for schedule in tiling.SCHEDULES:
        cs = candidates.candidate_set(layer, schedule)
        fits = cs.column("footprint_elems") <= limit
        if fits.any():
            lows.append(int(cs.column("ext_accesses")[fits].min()))
    if not lows:
        c = tiling.counts_array(layer, np.ones((1, 5), dtype=np.int64), "intra")
        return int(c["in_accesses"][0] + c["w_accesses"][0] + c["out_accesses"][0])
    return min(lows)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_the_benchmark_conv_capped_at_idsp_memory_is_small() -> None:
    """The 8192-map 224x224 conv at batch 256 (854 M tiles a schedule): at idsp's 128 KiB
    (double-buffered 16-bit: 32768 elements) the capped enumeration prices under 1 %."""
    layer = ConvLayer(name="conv", Ox=224, Oy=224, Oc=8192, On=256, Kx=3, Ky=3, Kc=8192,
                      Sx=1, Sy=1, Px=1, Py=1)
    plat = platforms.load_platform("idsp")
    cap = query.table_cap([plat], None)
    assert cap == 32768
    estimate = candidates.enumerated_tiles(layer, "intra", cap)
    assert estimate < candidates.grid_size(layer) / 100
    candidates.check_request([(layer, s) for s in tiling.SCHEDULES], cap)  # not refused
