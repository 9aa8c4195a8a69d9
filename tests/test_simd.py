"""SIMD simulator: bit-exact execution, seed 000 §7.5 and seed 003 behaviours, integration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_quant_infer import scalar_conv

from workbench import layers, perf, platforms, simd, tiling
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer
from workbench.quant import FixedFormat, LayerFormat, infer

IDSP = platforms.load_platform("idsp")
LENET8 = layers.load_network("lenet5", batch=8)


@st.composite
def case(draw: st.DrawFn):
    k = draw(st.integers(1, 3))
    layer = ConvLayer(name="s", Ox=draw(st.integers(1, 6)), Oy=draw(st.integers(1, 4)),
                      Oc=draw(st.integers(1, 5)), On=draw(st.integers(1, 3)), Kx=k, Ky=k,
                      Kc=draw(st.integers(1, 6)), Sx=draw(st.integers(1, 2)),
                      Sy=draw(st.integers(1, 2)), Px=(k - 1) // 2, Py=(k - 1) // 2)
    tile = tiling.Tile(*(draw(st.integers(1, d)) for d in tiling.dims(layer)))
    lanes, bits = draw(st.sampled_from([2, 4, 8, 16])), draw(st.integers(6, 20))
    plat = IDSP.replace(simd_lanes=lanes, acc_bits=bits, in_bits=draw(st.integers(2, 8)),
                        w_bits=draw(st.integers(2, 8)), register_file_bytes=1 << 20,
                        overflow=draw(st.sampled_from(["wrap", "saturate"])))
    return layer, tile, plat, draw(st.sampled_from(simd.VECTOR_DIMS)), draw(st.integers(0, 99))


def _reference(layer: ConvLayer, tile: tiling.Tile, ops: dict, bits: int, overflow: str,
               lanes: int, vector_dim: str) -> np.ndarray:
    """The layer restricted to the tile's maps, images and first TKc input maps, computed
    independently over the whole image; then the tile's outputs are cut out."""
    t = tile
    sub = ConvLayer(name="ref", Ox=layer.Ox, Oy=layer.Oy, Oc=t.M, On=t.N, Kx=layer.Kx,
                    Ky=layer.Ky, Kc=t.C, Sx=layer.Sx, Sy=layer.Sy, Px=layer.Px, Py=layer.Py)
    q_in = ops["q_in"][:t.N, :t.C]
    q_w, q_b = ops["q_w"][:t.M, :t.C], ops["q_b"][:t.M]
    if overflow == "wrap":
        fmt = LayerFormat(FixedFormat(16, 0), FixedFormat(16, 0), FixedFormat(bits, 0), bits)
        full = np.swapaxes(infer.conv_fixed(sub, infer.to_channel_major(q_in), q_w, q_b, fmt),
                           0, 1)
    elif vector_dim != "kc":
        full = scalar_conv(sub, q_in, q_w, q_b, bits, "saturate")
    else:
        full = _scalar_lane_tree(sub, q_in, q_w, q_b, bits, lanes)
    return full[:, :, :t.Y, :t.X]


def _scalar_lane_tree(layer, q_in, q_w, q_b, bits, lanes) -> np.ndarray:
    """kc vectorization in scalar steps: per lane, maps l, l+lanes, …; then a halving tree."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    clip = lambda v: min(max(v, lo), hi)  # noqa: E731
    out = np.zeros((layer.On, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    for n, oc, oy, ox in itertools.product(range(layer.On), range(layer.Oc), range(layer.Oy),
                                           range(layer.Ox)):
        acc = [clip(int(q_b[oc])) if lane == 0 else 0 for lane in range(lanes)]
        for block in range(-(-layer.Kc // lanes)):
            for ky, kx in itertools.product(range(layer.Ky), range(layer.Kx)):
                for lane in range(lanes):
                    kc = block * lanes + lane
                    y, x = oy * layer.Sy + ky - layer.Py, ox * layer.Sx + kx - layer.Px
                    if kc < layer.Kc and 0 <= y < q_in.shape[2] and 0 <= x < q_in.shape[3]:
                        acc[lane] = clip(acc[lane] + int(q_in[n, kc, y, x]) * int(q_w[oc, kc,
                                                                                       ky, kx]))
        width = lanes
        while width > 1:
            half = width // 2
            for i in range(half):
                acc[i] = clip(acc[i] + acc[i + half])
            if width % 2:
                acc[0] = clip(acc[0] + acc[width - 1])
            width = half
        out[n, oc, oy, ox] = acc[0]
    return out


@settings(max_examples=examples(150))
@given(c=case())
def test_outputs_bit_exact(c) -> None:
    layer, tile, plat, vector_dim, seed = c
    try:
        r = simd.simulate(layer, tile, plat, vector_dim=vector_dim, seed=seed)
    except WorkbenchError as exc:  # e.g. a reduction that does not fill whole loop bodies
        assert "steps" in str(exc) or "unroll" in str(exc)
        return
    ops = simd._random_operands(layer, plat, seed)
    want = _reference(layer, tile, ops, plat.acc_bits, plat.overflow, plat.simd_lanes,
                      vector_dim)
    np.testing.assert_array_equal(r.outputs, want)


def test_seed000_lane_utilization() -> None:
    """§7.5: conv1 over ox with TOx = 28 uses 28/32 lanes; fc4 over oc 10/32, over on 8/32."""
    conv1 = simd.simulate(LENET8["conv1"], tiling.Tile(28, 28, 32, 1, 1), IDSP, "ox")
    assert conv1.lane_utilization == 28 / 32
    fc4_tile = tiling.Tile(1, 1, 10, 8, 512)
    assert simd.simulate(LENET8["fc4"], fc4_tile, IDSP, "oc").lane_utilization == 10 / 32
    assert simd.simulate(LENET8["fc4"], fc4_tile, IDSP, "on").lane_utilization == 8 / 32


def test_live_accumulators_cut_partial_sum_traffic() -> None:
    """§7.5: keeping accumulators live 16 steps instead of reloading every iteration cuts
    partial-sum transfers by about 16x."""
    conv2, tile = LENET8["conv2"], tiling.Tile(2, 14, 32, 1, 32)
    reload = simd.counts(conv2, tile, IDSP, simd.Plan("oc", 4, steps=1, acc_live_steps=1))
    live = simd.counts(conv2, tile, IDSP, simd.Plan("oc", 4, steps=1, acc_live_steps=16))
    ratio = (reload.loads["psums"] + reload.stores["psums"]) / (
        live.loads["psums"] + live.stores["psums"])
    assert 15 <= ratio <= 17
    assert reload.cycles > live.cycles


def test_insufficient_ilp_and_unaligned_loads() -> None:
    conv1, tile = LENET8["conv1"], tiling.Tile(28, 28, 32, 1, 1)
    one = simd.counts(conv1, tile, IDSP, simd.Plan("ox", 1))
    two = simd.counts(conv1, tile, IDSP, simd.Plan("ox", 2))
    assert one.ii_by_resource["recurrence"] > one.ii_by_resource["mac"]  # latency-bound
    assert two.cycles < one.cycles
    assert one.unaligned_loads > 0  # kx offsets of an ox vector are unaligned
    assert simd.counts(conv1, tile, IDSP, simd.Plan("oc", 2)).unaligned_loads == 0


def test_nve_3x3_mii() -> None:
    """Seed 003 §5.2: a 3x3 filter's loop body has VMAC and WREG busy 10 slots: MII 10."""
    nve = platforms.load_platform("nve")
    layer = ConvLayer(name="f3", Ox=64, Oy=8, Oc=1, Kx=3, Ky=3, Kc=1)
    r = simd.simulate(layer, tiling.Tile(16, 1, 1, 1, 1), nve)
    ii = r.counts.ii_by_resource
    assert r.counts.mii == 10 and ii["VMAC"] == ii["WREG"] == 10 and ii["IREG"] == 9
    # MEMA: 3 ri[0-7] reads, 3 weight reads and the 3 words of the new pixel column
    # (16 + 2 pixels: two vector words and one extra word), seed 003 fig. 17's "wr" in MEMA
    assert (ii["MEMA"], ii["MEMB"], ii["ACT"]) == (9, 6, 2)
    assert r.counts.extra["macs_per_vmac"] == pytest.approx(14.4)  # of 16
    assert (r.counts.extra["wreg_sets"], r.counts.extra["wreg_shifts"]) == (3, 7)


def test_perf_uses_simulator_cycles_and_traffic() -> None:
    conv2, tile = LENET8["conv2"], tiling.Tile(2, 14, 32, 1, 32)
    e = perf.estimate(conv2, tile, "inter_kc", IDSP, compute="simd")
    sim = simd.counts(conv2, tile, IDSP, simd.best_plan(conv2, tile, IDSP))
    n_tiles = tiling.counts(conv2, tile, "inter_kc").n_tiles
    assert e.breakdown["compute"] == pytest.approx(sim.cycles * n_tiles)
    assert e.local_accesses == sim.vector_transfers * 32 * n_tiles


def test_mapping_report_parts_sum_to_total() -> None:
    report = simd.mapping_report(LENET8["conv2"], tiling.Tile(2, 14, 32, 1, 32), IDSP,
                                 simd.Plan("oc", 4, steps=1, acc_live_steps=1))
    row = report.iloc[0]
    assert sum(row[p] for p in simd.TRANSFER_CAUSES) == row["total"]
    assert row["redundant_psums"] > 0 and "other" not in report.columns


NVE = platforms.load_platform("nve")


@pytest.mark.parametrize("layer, tile, plat, plan", [
    ("conv1", (28, 28, 32, 1, 1), IDSP, simd.Plan("ox")),
    ("conv1", (28, 28, 32, 1, 1), IDSP, simd.Plan("oc", 2)),
    ("conv2", (2, 14, 32, 1, 32), IDSP, simd.Plan("oc", 4, steps=1, acc_live_steps=1)),
    ("conv2", (14, 14, 64, 1, 8), IDSP.replace(register_file_bytes=448), simd.Plan("oc", 2)),
    ("conv2", (14, 7, 16, 2, 32), IDSP, simd.Plan("oy", 2, acc_live_steps=25)),
    ("conv2", (14, 14, 64, 1, 32), IDSP, simd.Plan("kc", 2)),
    ("conv1", (28, 28, 8, 1, 1), NVE, simd.Plan("ox")),
])
def test_mapping_report_names_every_transfer_and_cycle(layer, tile, plat, plan) -> None:
    """The causes add up to the simulator's own transfer count and the cycle parts to its
    cycle count (`simulate` on the tile, times the layer's tiles), with nothing left over."""
    conv, t = LENET8[layer], tiling.Tile(*tile)
    row = simd.mapping_report(conv, t, plat, plan).iloc[0]
    sim = simd.simulate(conv, t, plat, plan.vector_dim, plan.unroll, plan.steps,
                        plan.acc_live_steps)
    n_tiles = tiling.counts(conv, t, "intra").n_tiles
    assert sum(row[p] for p in simd.TRANSFER_CAUSES) == row["total"] \
        == sim.counts.vector_transfers * n_tiles
    assert sum(row[p] for p in simd.CYCLE_PARTS) == row["compute_cycles"] \
        == pytest.approx(sim.cycles * n_tiles)
    assert min(row[p] for p in (*simd.TRANSFER_CAUSES, *simd.CYCLE_PARTS)) >= 0
    assert row["mii_bound_by"] in sim.counts.ii_by_resource
    assert sim.counts.ii_by_resource[row["mii_bound_by"]] == sim.counts.mii


def test_bad_plans() -> None:
    conv1, tile = LENET8["conv1"], tiling.Tile(28, 28, 32, 1, 1)
    with pytest.raises(WorkbenchError, match="vector dimension must be one of"):
        simd.simulate(conv1, tile, IDSP, vector_dim="oz")
    with pytest.raises(WorkbenchError, match="unroll 64 exceeds the tile's 28 output vectors"):
        simd.simulate(conv1, tiling.Tile(28, 1, 1, 1, 1), IDSP, vector_dim="oy", unroll=64)
    with pytest.raises(WorkbenchError, match="register file holds 256"):
        simd.simulate(conv1, tile, IDSP.replace(register_file_bytes=256), vector_dim="oc",
                      unroll=16)
    with pytest.raises(WorkbenchError, match="NVE vectorizes along ox only"):
        simd.simulate(conv1, tile, platforms.load_platform("nve"), vector_dim="oc")
