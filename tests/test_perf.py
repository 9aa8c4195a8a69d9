"""The DMA/bus performance and energy model: hand-computed cases, invariants, seed figures."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, perf, platforms, tiling

LENET8 = layers.load_network("lenet5", batch=8)


def test_equation_5_7_by_hand() -> None:
    """LeNet5 conv2, inter_kc, full-size tile: every term computed from seed 000 eqs. 5.7–5.12."""
    p = platforms.load_platform("idsp")
    conv2 = LENET8["conv2"]
    e = perf.estimate(conv2, tiling.Tile(14, 14, 64, 8, 1), "inter_kc", p, local_traffic=False)
    b_in, b_w, b_out = 18 * 18 * 8, 25 * 64, 14 * 14 * 64 * 8
    n_tiles, n_dma, n_ext = 32, 32 * 2 + 1, 32 * (b_in + b_w) + b_out
    cc_tile = 14 * 14 * 64 * 8 * 25 / 32
    cc_dsp = cc_tile + n_dma / n_tiles * 150
    cc_bus = n_ext / n_tiles / 32
    expected = ((b_in + b_w) / 32 + 2 * 150 + cc_tile + (n_tiles - 1) * max(cc_dsp, cc_bus)
                + b_out / 32 + 150)
    assert e.cycles == pytest.approx(expected, rel=1e-12)
    assert e.throughput_gops == pytest.approx(450 * 2 * conv2.macs / expected * 1e-3)
    assert e.ctc == pytest.approx(2 * conv2.macs / (n_ext * 2))
    assert sum(e.breakdown.values()) == pytest.approx(e.cycles, rel=1e-12)


@pytest.mark.parametrize("double", [True, False])
def test_breakdown_sums_to_total(double: bool) -> None:
    p = platforms.load_platform("idsp", double_buffer=double, bus_elems_per_cycle=2)
    for layer in LENET8.tiled_layers():
        for schedule in tiling.SCHEDULES:
            e = perf.estimate(layer, tiling.Tile(1, 1, min(8, layer.Oc), 2, min(16, layer.Kc)),
                              schedule, p)
            assert sum(e.breakdown.values()) == pytest.approx(e.cycles, rel=1e-9)
            assert e.cycles >= layer.macs / p.macs_per_cycle
            assert 0 < e.utilization <= 1


def test_single_buffering_is_never_faster() -> None:
    conv2, tile = LENET8["conv2"], tiling.Tile(7, 7, 16, 2, 8)
    for schedule in tiling.SCHEDULES:
        fast = perf.estimate(conv2, tile, schedule, platforms.load_platform("idsp"))
        slow = perf.estimate(conv2, tile, schedule, platforms.load_platform(
            "idsp", double_buffer=False))
        assert slow.cycles >= fast.cycles


def _least_access_energy(net: layers.Network) -> dict[str, float]:
    """Seed 000 table 7.10 'model' rows: per layer the least-access tile at 128 KB."""
    p = platforms.load_platform("idsp")
    total = dict.fromkeys(perf.ENERGY_PARTS, 0.0)
    for layer in net.tiled_layers():
        tile, schedule = min(((explore.best_tiles(layer, s, 128 * 1024, 2, True), s)
                              for s in tiling.SCHEDULES), key=lambda r: r[0][1:])
        e = perf.estimate(layer, tile[0], schedule, p)
        for part, value in e.energy_pj.items():
            total[part] += value / 1e6  # µJ
    return total


def test_seed000_table_7_10_lenet5() -> None:
    energy = _least_access_energy(LENET8)
    assert energy["compute"] == pytest.approx(184, abs=0.5)        # printed 184 µJ
    assert energy["local"] == pytest.approx(7, abs=0.5)            # printed 7 µJ
    assert energy["external"] == pytest.approx(1413, rel=0.01)     # printed 1413 µJ


def test_seed000_table_7_10_alexnet() -> None:
    energy = _least_access_energy(layers.load_network("alexnet_oxford102", batch=8))
    assert energy["compute"] == pytest.approx(10869, rel=0.01)     # printed 10869 µJ
    assert energy["external"] == pytest.approx(52792, rel=0.02)    # printed 52792 µJ


@pytest.mark.parametrize(("name", "gops", "batch_ms", "utilization"), [
    ("lenet5", 0.025, 8.44, 0.81), ("alexnet_oxford102", 1.441, 478.35, 0.84)])
def test_seed000_table_7_11(name: str, gops: float, batch_ms: float,
                            utilization: float) -> None:
    """Table 7.11 (IDSP test bench, manual mappings, batch 8): the workload per image; the
    compute-only time of the idsp preset equals the printed run time x utilization (so the
    preset's 32 MACs/cycle at 450 MHz are the bench's); the model's best mapping per layer is
    at least as fast as the manual one."""
    p = platforms.load_platform("idsp")
    net = layers.load_network(name, batch=8)
    assert round(2 * net.macs / 8 / 1e9, 3) == gops
    compute_ms = net.macs / (p.macs_per_cycle * p.clock_mhz * 1e3)
    assert compute_ms == pytest.approx(batch_ms * utilization, rel=0.01)
    model_ms = explore.network_totals(explore.explore_network(net, p), p)["time_ms"]
    assert compute_ms <= model_ms <= batch_ms


def test_local_traffic_is_a_register_file_search() -> None:
    conv2 = LENET8["conv2"]
    n_local = perf.local_accesses(conv2, 4096, 2)
    brute = min(tiling.counts(conv2, tiling.Tile(*t), s).ext_accesses
                for s in tiling.SCHEDULES
                for t in ((x, y, c, n, k) for x in range(1, 15) for y in (1, 2, 7, 14)
                          for c in (1, 2, 4, 8, 16, 32, 64) for n in (1, 2, 4, 8)
                          for k in (1, 2, 4, 8, 16, 32))
                if tiling.counts(conv2, tiling.Tile(*t), "intra").footprint_elems * 2 <= 4096)
    assert n_local <= brute  # the exact search finds at least as good as this sample
    assert n_local >= conv2.macs // 64  # cannot beat full register reuse of a 4 KB file


count_st = st.tuples(st.integers(1, 10**7), st.integers(1, 10**9), st.integers(1, 10**6),
                     st.integers(1, 10**6), st.integers(1, 10**6))
plat_st = st.builds(
    lambda **f: platforms.load_platform("idsp", **f), bus_elems_per_cycle=st.floats(0.01, 64),
    macs_per_cycle=st.floats(0.1, 512), dma_setup_cycles=st.floats(0, 1000),
    double_buffer=st.booleans(), elem_bytes=st.integers(1, 4),
    core_pj_per_cycle=st.floats(0, 100), ext_access_pj=st.floats(0, 5000))


@settings(max_examples=examples(300))
@given(counts=count_st, plat=plat_st, local=st.floats(0, 1e9), which=st.integers(0, 4),
       bump=st.integers(1, 1000))
def test_price_is_the_design_formula_and_monotone_in_every_count(counts, plat, local, which,
                                                                  bump) -> None:
    fp, ext, dma, n, macs = counts
    v = perf.CountVector.of(*(np.array([x], dtype=np.int64) for x in counts))
    r = perf.price(plat, v, local)
    # DESIGN.md as written: prolog + (Ntiles-1)·max(CC_dsp, CC_bus) + epilog (fp = prolog+epilog)
    cc_tile = macs / plat.macs_per_cycle
    cc_dsp = cc_tile + dma / n * plat.dma_setup_cycles
    cc_bus = (ext + local) / n / plat.bus_elems_per_cycle
    steady = max(cc_dsp, cc_bus) if plat.double_buffer else cc_dsp + cc_bus
    design = (fp / plat.bus_elems_per_cycle + 3 * plat.dma_setup_cycles + cc_tile
              + (n - 1) * steady)
    assert r["cycles"][0] == pytest.approx(design, rel=1e-9)
    parts = sum(r[f"energy_{p}_pj"][0] for p in perf.ENERGY_PARTS)
    assert r["energy_pj"][0] == parts  # the compiled total is the sum of the parts, exactly
    assert r["cycles_compute"][0] == pytest.approx(n * cc_tile, rel=1e-12)
    # one count larger: no cost smaller, in floating point (what candidate sets rely on)
    more = list(counts)
    more[which] += bump
    r2 = perf.price(plat, perf.CountVector.of(*(np.array([x], dtype=np.int64) for x in more)),
                    local)
    assert r2["cycles"][0] >= r["cycles"][0] and r2["energy_pj"][0] >= r["energy_pj"][0]
