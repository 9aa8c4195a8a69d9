"""Streamed layers: chunk counts (formula == literal trace), pricing by the perf pipeline, the
(cores, chunk) search against brute force, and the I/O-bound pooling of seed 004."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import perf, streaming
from workbench.errors import WorkbenchError
from workbench.layers.spec import (
    ActivationLayer,
    ConcatLayer,
    ConvLayer,
    EltwiseLayer,
    LRNLayer,
    PoolLayer,
    SoftmaxLayer,
)
from workbench.layers.stream_spec import GenericLayer
from workbench.platforms import Platform, from_fields, load_platform


@st.composite
def streamed_layers(draw: st.DrawFn):
    n = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["pool", "lrn", "eltwise", "concat", "act", "softmax",
                                 "product"]))
    c, h, w = draw(st.integers(1, 6)), draw(st.integers(1, 7)), draw(st.integers(1, 5))
    if kind == "pool":
        kx, ky = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        px, py = draw(st.integers(0, kx)), draw(st.integers(0, ky))  # P = K: empty windows
        ix = draw(st.integers(max(1, kx - 2 * px), 9))
        iy = draw(st.integers(max(1, ky - 2 * py), 9))
        return PoolLayer("p", c, ix, iy, kx, ky, draw(st.integers(1, 4)), draw(st.integers(1, 4)),
                         px, py, On=n, ceil_mode=draw(st.booleans()))
    if kind == "lrn":
        return LRNLayer("l", c, h, w, n, size=draw(st.sampled_from([1, 3, 5, 7])))
    if kind == "eltwise":
        return EltwiseLayer("e", c, h, w, n, inputs=draw(st.integers(2, 4)))
    if kind == "product":  # G × M × K times G × K × N, both data (attention)
        k = draw(st.integers(1, 6))
        return GenericLayer("m", "MatMul", c, h, k, c, h, w, n, inputs=2,
                            macs_per_image=c * h * w * k)
    if kind == "concat":
        return ConcatLayer("c", tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))),
                           h, w, n)
    return (ActivationLayer if kind == "act" else SoftmaxLayer)("a", c, h, w, n)


@settings(max_examples=examples(300))
@given(layer=streamed_layers(), data=st.data())
def test_formula_equals_trace(layer, data: st.DataObject) -> None:
    g = streaming.geometry(layer)
    k = data.draw(st.integers(1, g.units))
    share = data.draw(st.sampled_from(streaming.split_maps(g.units, k)))
    rows, maps = data.draw(st.integers(1, g.out_rows + 1)), data.draw(st.integers(1, g.units + 1))
    assert streaming.chunk_counts(layer, rows, maps, share) == \
        streaming.trace_counts(layer, rows, maps, share)


@given(layer=streamed_layers(), k=st.integers(1, 6))
def test_shares_cover_the_layer(layer, k: int) -> None:
    """The cores' shares write every output once and run the layer's ops; arrays == scalars."""
    g = streaming.geometry(layer)
    shares = streaming.split_maps(g.units, min(k, g.units))
    sizes = [b - a for a, b in shares]
    assert shares[0][0] == 0 and shares[-1][1] == g.units and max(sizes) - min(sizes) <= 1
    whole = [streaming.chunk_counts(layer, 1, 1, s) for s in shares]
    assert sum(c.out_elems for c in whole) == int(np.prod(layer.out_shape)) * layer.On
    assert sum(c.ops for c in whole) == layer.ops
    rows, maps = np.arange(1, g.out_rows + 1), np.full(g.out_rows, 2)
    vec = streaming.chunk_counts(layer, rows, maps, shares[0])
    for i, r in enumerate(rows):
        one = streaming.chunk_counts(layer, int(r), 2, shares[0])
        assert one.footprint == vec.footprint[i] and one.in_elems == vec.in_elems[i]
        assert one.dma_transfers == vec.dma_transfers[i]


def test_hand_counts() -> None:
    # 2 maps 6x6, 3x3 stride-2 max pool: output 2x2, columns 0..4 used; bands of 1 row read
    # input rows 0-2 and 2-4 (halo row 2 twice): 2 maps x 6 rows x 5 columns = 60
    c = streaming.chunk_counts(PoolLayer("p", 2, 6, 6, 3, 3, 2, 2), 1, 1)
    assert (c.in_elems, c.out_elems, c.chunks, c.dma_transfers) == (60, 8, 4, 8)
    assert (c.in_buffer, c.out_buffer, c.ops_per_chunk, c.ops) == (15, 2, 18, 72)
    assert c.local_accesses == 68
    # 5x5, 3x3 stride 2 pad 1: 3x3 output; bands of 2 rows read rows 0-3 then 3-4; columns 0-4
    c = streaming.chunk_counts(PoolLayer("p", 1, 5, 5, 3, 3, 2, 2, 1, 1), 2, 1)
    assert (c.in_elems, c.out_elems, c.chunks, c.in_buffer, c.out_buffer) == (30, 9, 2, 20, 6)
    assert (c.ops_per_chunk, c.ops) == (54, 81)
    # LRN over 5 maps of 2x2, size 3, groups of 2 maps: maps 0-2, 1-4, 3-4 → 9 maps x 4
    c = streaming.chunk_counts(LRNLayer("l", 5, 2, 2, size=3), 2, 2)
    assert (c.in_elems, c.out_elems, c.chunks, c.dma_transfers) == (36, 20, 3, 6)
    assert (c.in_buffer, c.out_buffer, c.ops_per_chunk, c.ops) == (16, 8, 72, 180)
    # eltwise of 3 inputs, 2 images of 2x2x3, chunks of 1 row x 2 maps: 3 gets + 1 put each
    c = streaming.chunk_counts(EltwiseLayer("e", 2, 2, 3, 2, inputs=3), 1, 2)
    assert (c.in_elems, c.out_elems, c.chunks, c.dma_transfers) == (72, 24, 4, 16)
    assert (c.in_buffer, c.out_buffer, c.ops_per_chunk, c.ops) == (18, 6, 12, 48)
    # concat of 2 + 3 maps of 1x4: groups of 3 maps are [0,3) (both parts) and [3,5)
    c = streaming.chunk_counts(ConcatLayer("c", (2, 3), 1, 4), 1, 3)
    assert (c.in_elems, c.out_elems, c.chunks, c.dma_transfers) == (20, 20, 2, 5)
    assert (c.ops, c.local_accesses) == (0, 0)
    assert streaming.chunk_counts(ConcatLayer("c", (2, 3), 1, 4), 1, 2).dma_transfers == 6
    # attention's product of 2 maps (heads): A 3 rows × K 4, B 4 × 5; chunks of 1 row × 2
    # maps: each fetches 2 × 1 × 4 of A and both maps' 4 × 5 blocks of B (2 gets, 1 put)
    c = streaming.chunk_counts(GenericLayer("m", "MatMul", 2, 3, 4, 2, 3, 5, inputs=2,
                                            macs_per_image=2 * 3 * 5 * 4), 1, 2)
    assert (c.in_elems, c.out_elems, c.chunks, c.dma_transfers) == (24 + 3 * 40, 30, 3, 9)
    assert (c.in_buffer, c.out_buffer, c.ops_per_chunk, c.ops) == (8 + 40, 10, 80, 240)
    # softmax normalizes across maps: one unit, a row is W x C elements
    c = streaming.chunk_counts(SoftmaxLayer("s", 10, 2, 3), 1, 1)
    assert (c.in_elems, c.chunks, c.in_buffer, c.ops_per_chunk) == (60, 2, 30, 90)


def test_batch_scales_counts() -> None:
    one = PoolLayer("p", 4, 9, 9, 3, 3, 2, 2, 1, 1)
    three = one.with_batch(3)
    a, b = streaming.chunk_counts(one, 2, 3), streaming.chunk_counts(three, 2, 3)
    for name in ("in_elems", "out_elems", "dma_transfers", "chunks", "ops", "local_accesses"):
        assert getattr(b, name) == 3 * getattr(a, name)
    assert (b.footprint, b.ops_per_chunk) == (a.footprint, a.ops_per_chunk)
    assert streaming.trace_counts(three, 2, 3) == b
    assert streaming.cores_table(three, load_platform("shave"))["cores"].tolist() == [1, 2, 3, 4]


def _toy(**overrides) -> Platform:
    fields = dict(name="toy", clock_mhz=100, bus_elems_per_cycle=2, macs_per_cycle=1,
                  elem_bytes=2, dma_setup_cycles=10, local_mem_bytes=4096,
                  register_file_bytes=64, simd_lanes=4, cores=2, dma_channels=1,
                  core_pj_per_cycle=1.0, local_access_pj=0.5, local_access_bytes=2,
                  ext_access_pj=2.0, ext_access_bytes=2)
    return from_fields(**(fields | overrides))


def test_hand_priced() -> None:
    """Activation on 2 maps of 2x4, chunks of one row of one map (4 chunks of 4 elements)."""
    relu, p = ActivationLayer("r", 2, 2, 4), _toy()
    # 1 core: footprint 8, tile 4 ops / 4 lanes = 1 cycle, ρ = 3/4, 8 transfers, N_local 32:
    # 8/2 + 3·10 + 1 + max(3·1 + 0.75·8·10, 0.75·(32 + 32)/2) = 4 + 30 + 1 + 63
    one = streaming.price_stream(relu, p, 1, 1, 1)
    assert one["cycles"] == 98 and one["ext_accesses"] == 32 and one["footprint_elems"] == 8
    # energy: 4 tiles·1 + (30 + 60) setup cycles, 32 local accesses·0.5, 32 external·2
    assert one["energy_pj"] == 4 + 90 + 16 + 64
    # 2 cores, one map each, setups queue on 1 channel (20 cycles each), ρ = 1/2, bus carries
    # both cores: 2·8/2 + 3·20 + 1 + max(1 + 0.5·4·20, 0.5·(2·16 + 16)/2) = 8 + 60 + 1 + 41
    two = streaming.price_stream(relu, p, 2, 1, 1)
    assert two["cycles"] == 110 and two["dma_transfers"] == 8
    assert two["energy_pj"] == 2 * (2 + 100 + 8 + 32)


def _brute(layer, platform: Platform) -> list[tuple]:
    """(k, rows, maps, cycles, energy, accesses, footprint) of every fitting configuration,
    from the literal trace of each core's share priced row by row."""
    g, out = streaming.geometry(layer), []
    for k in range(1, min(platform.cores, g.units) + 1):
        contention = perf.Contention(k, k, platform.dma_channels)
        for rows in range(1, g.out_rows + 1):
            for maps in range(1, g.units + 1):
                cores = [streaming.trace_counts(layer, rows, maps, s)
                         for s in streaming.split_maps(g.units, k)]
                foot = max(c.footprint for c in cores)
                if foot * 2 * platform.elem_bytes > platform.local_mem_bytes:
                    continue
                priced = [perf.price(platform, perf.CountVector.of(
                    [c.footprint], [c.in_elems + c.out_elems], [c.dma_transfers], [c.chunks],
                    [0]), c.local_accesses, tile_cycles=c.ops_per_chunk / platform.simd_lanes,
                    contention=contention) for c in cores]
                out.append((k, rows, maps, max(float(q["cycles"][0]) for q in priced),
                            sum(float(q["energy_pj"][0]) for q in priced),
                            sum(c.in_elems + c.out_elems for c in cores), foot))
    return out


@pytest.mark.parametrize("layer", [
    PoolLayer("pool", 5, 7, 7, 3, 3, 2, 2, 1, 1, On=2),
    LRNLayer("norm", 6, 3, 3, size=5),
    ConcatLayer("cat", (2, 1, 3), 2, 5),
    EltwiseLayer("add", 4, 4, 3, inputs=2),
], ids=lambda layer: layer.name)
def test_best_stream_is_brute_force_optimum(layer) -> None:
    platform = _toy(cores=4, local_mem_bytes=320, dma_setup_cycles=7, dma_channels=2)
    every = _brute(layer, platform)
    assert every
    for objective, score in [("cycles", lambda r: r[3]), ("energy", lambda r: r[4]),
                             ("accesses", lambda r: r[5]), ("edp", lambda r: r[3] * r[4])]:
        want = min((score(r), r[3], r[5], r[6]) for r in every)
        got = streaming.best_stream(layer, platform, objective)
        assert (score((0, 0, 0, got.cycles, got.energy_pj, got.ext_accesses)), got.cycles,
                got.ext_accesses, got.footprint_elems) == pytest.approx(want, rel=1e-12)
        table = streaming.cores_table(layer, platform, objective)
        for k, row in table.set_index("cores").iterrows():
            best_k = min((score(r), r[3], r[5], r[6]) for r in every if r[0] == k)
            assert score((0, 0, 0, row["cycles"], row["energy_pj"], row["ext_accesses"])) \
                == pytest.approx(best_k[0], rel=1e-12)


def test_ties_fall_back_to_cycles() -> None:
    """Without energy figures every chunk ties on energy: the fastest one wins."""
    free = _toy(cores=3, core_pj_per_cycle=0.0, local_access_pj=0.0, ext_access_pj=0.0)
    pool = PoolLayer("pool", 6, 8, 8, 2, 2, 2, 2)
    fast = streaming.best_stream(pool, free)
    for objective in ("energy", "edp"):
        got = streaming.best_stream(pool, free, objective)
        assert got.energy_pj == 0 and got.cycles == fast.cycles


def test_shave_pooling_is_io_bound() -> None:
    """Seed 004 fig. 6.7: 2x2 MAX pool, stride 2, pad 1, 128x64x64 input on 1..12 SHAVEs."""
    shave = load_platform("shave")
    pool = PoolLayer("pool", 128, 64, 64, 2, 2, 2, 2, 1, 1)
    table = streaming.cores_table(pool, shave)
    print("\n" + table[["cores", "rows", "maps", "cycles", "speedup", "cycles_compute",
                        "cycles_dma_setup", "cycles_bus_stall", "cycles_prolog_epilog"]]
          .to_string(index=False))
    assert table["cores"].tolist() == list(range(1, 13))
    cycles = table.set_index("cores")["cycles"]
    assert cycles[1] / cycles[12] < 3  # far below 12
    assert cycles[12] >= 0.85 * cycles[4]  # three times the cores, ≤ 15 % faster
    floor = streaming.stream_counts(pool)
    assert floor == {"in_elems": 128 * 64 * 64, "out_elems": 128 * 33 * 33,
                     "ops": 4 * 128 * 33 * 33}
    bus_floor = (floor["in_elems"] + floor["out_elems"]) / shave.bus_elems_per_cycle
    assert bus_floor < cycles.min() < 1.2 * bus_floor  # the shared bus sets the time
    best = streaming.best_stream(pool, shave)
    assert best.cycles == cycles.min() and best.cores == cycles.idxmin()


def test_errors() -> None:
    shave = load_platform("shave")
    conv = ConvLayer("c", 4, 4, 8, Kc=3)
    with pytest.raises(WorkbenchError, match="'c' is a conv layer"):
        streaming.best_stream(conv, shave)
    big = SoftmaxLayer("prob", 100000, 1, 1)
    with pytest.raises(WorkbenchError, match="layer 'prob': no chunk .* fits 131072 B") as info:
        streaming.best_stream(big, shave)
    assert "\n" not in str(info.value)
    relu = ActivationLayer("r", 4, 4, 4)
    with pytest.raises(WorkbenchError, match="objective must be one of"):
        streaming.best_stream(relu, shave, objective="speed")
    with pytest.raises(WorkbenchError, match="cores must be a positive integer"):
        streaming.best_stream(relu, shave, cores=0)
    with pytest.raises(WorkbenchError, match="chunk rows and maps must be >= 1"):
        streaming.chunk_counts(relu, 0, 1)
    assert streaming.best_stream(relu, shave, cores=2).cores <= 2
