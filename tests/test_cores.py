"""Multi-core mapping: one core is today's model, the search equals brute force, seed 004's
scaling shapes, and the contention formula on a hand-computed example."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, perf, platforms, tiling
from workbench.errors import SpecError, UnknownNameError, WorkbenchError
from workbench.explore import cores
from workbench.layers import ConvLayer
from workbench.tiling import partition

SHAVE = platforms.load_platform("shave")


def test_one_core_is_todays_model_exactly():
    for net_name, plat in (("lenet5", "idsp"), ("alexnet_oxford102", "shave")):
        plat = platforms.load_platform(plat, cores=1)
        net = layers.load_network(net_name)
        mine = cores.network_cores(net.tiled_layers(), plat)
        ref = explore.explore_network(net, plat)
        assert np.array_equal(mine["cycles"].to_numpy(), ref["cycles"].to_numpy())
        assert np.array_equal(mine["energy_pj"].to_numpy(), ref["energy_pj"].to_numpy())
        assert np.array_equal(mine["ext_accesses"].to_numpy(), ref["ext_accesses"].to_numpy())


def test_shares_cover_the_extent_unevenly():
    layer = ConvLayer("c", Ox=13, Oy=11, Oc=10, Kx=3, Ky=3, Kc=4, Px=1, Py=1)
    parts = partition.shares(layer, "oc", 3)
    assert [(s.layer.Oc, s.cores, s.starts) for s in parts] == [(4, 1, (0,)), (3, 2, (4, 7))]
    parts = partition.shares(layer, "xy", 4)  # 11 rows: 3, 3, 3, 2
    assert [(s.layer.Oy, s.cores) for s in parts] == [(3, 3), (2, 1)]
    with pytest.raises(SpecError, match="1..11 cores"):
        partition.shares(layer, "xy", 12)
    with pytest.raises(UnknownNameError, match="unknown split 'k'"):
        partition.shares(layer, "k", 2)


def test_contention_by_hand():
    """A 1-tile-per-core share: 2 cores, bus 4 elem/cycle, setup 10, 1 DMA channel."""
    plat = platforms.from_fields(name="toy", clock_mhz=100, bus_elems_per_cycle=4,
                              macs_per_cycle=2, elem_bytes=1, dma_setup_cycles=10,
                              local_mem_bytes=1 << 20, register_file_bytes=1, cores=2,
                              dma_channels=1)
    # one tile per core: 2 tiles would need n > 1; take n = 2 tiles of a 1x1 conv, per core
    layer = ConvLayer("c", Ox=2, Oy=1, Oc=2, Kc=3)
    share = partition.shares(layer, "oc", 2)[0].layer          # Oc = 1 per core
    tile = tiling.Tile(1, 1, 1, 1, 3)                           # 2 tiles (Ox = 2)
    c = tiling.counts(share, tile, "inter_kc")
    # by hand: Bin = 3, Bw = 3, Bout = 1; per tile in 3, w 3, out 1 -> ext 14, 4 transfers...
    assert (c.in_accesses, c.w_accesses, c.out_accesses, c.n_tiles) == (6, 6, 2, 2)
    assert c.dma_transfers == 6
    v = perf.CountVector.of(np.array([7]), np.array([14]), np.array([6]), np.array([2]),
                            np.array([3]), shared_accesses=np.array([6]))
    got = perf.price(plat, v, 0.0, contention=perf.Contention(2, 2, 1))["cycles"][0]
    # setup per transfer 10 * max(1, 2/1) = 20; CC_tile = 3/2 = 1.5
    # prolog+epilog: 2 cores x 7 elements / 4 = 3.5, plus 3 setups = 60, plus one tile 1.5
    # steady (1 more tile): dsp = 1.5 + (1/2)*6*20 = 61.5; bus = (1/2)*(2*14)/4 = 3.5
    assert got == pytest.approx(3.5 + 60 + 1.5 + 61.5)
    broadcast = perf.price(plat, v, 0.0, contention=perf.Contention(2, 1, 2))["cycles"][0]
    # 2 channels: no queueing (setup 10); shared input crosses once: bus (8*2 + 6)/2/4
    assert broadcast == pytest.approx(3.5 + 30 + 1.5 + max(1.5 + 30, (16 + 6) / 2 / 4))


def _brute(layer, plat, objective):
    """Every split, core count, schedule and tile per share (no candidate sets), priced with
    the per-core model; the layer's value of the objective (max cycles, summed energy)."""
    scale = plat.elem_bytes * (2 if plat.double_buffer else 1)
    best = None
    for split in partition.SPLITS:
        for k in range(1, partition.max_cores(layer, split, plat.cores) + 1):
            parts = partition.shares(layer, split, k)
            per_share = []
            for sh in parts:
                rows = []
                for schedule in tiling.SCHEDULES:
                    for tiles in tiling.gen_tiles(sh.layer, plat.local_mem_bytes / scale,
                                                  reduced=False):
                        c = tiling.counts_array(sh.layer, tiles, schedule)
                        acc = np.column_stack([c["in_accesses"], c["w_accesses"],
                                               c["out_accesses"]])
                        shared = acc[:, ("in", "w", "out").index(partition.SHARED[split])] \
                            if partition.SHARED[split] else 0 * acc[:, 0]  # g: none shared
                        v = perf.CountVector.of(c["bin"] + c["bw"] + c["bout"], acc.sum(1),
                                                c["dma_transfers"], c["n_tiles"],
                                                tiles.prod(1) * sh.layer.Kx * sh.layer.Ky,
                                                shared_accesses=shared)
                        copies = len(parts) if plat.dma_broadcast else k
                        p = perf.price(plat, v, perf.layer_local_accesses(sh.layer, plat, True),
                                       contention=perf.Contention(k, copies, plat.dma_channels))
                        bus = sh.cores * acc.sum(1)
                        if plat.dma_broadcast:
                            bus = bus - (sh.cores - 1) * shared
                        ext_pj = np.ceil(bus * plat.elem_bytes / plat.ext_access_bytes) \
                            * plat.ext_access_pj
                        static = p["cycles"] * plat.static_pj_per_cycle  # each core, its own
                        energy = sh.cores * (p["energy_compute_pj"] + p["energy_dma_setup_pj"]
                                             + p["energy_local_pj"] + static) + ext_pj
                        rows += list(zip(p["cycles"], energy, bus, strict=True))
                per_share.append(rows)
            for combo in itertools.product(*per_share):
                cyc = max(r[0] for r in combo)
                en = sum(r[1] for r in combo)
                acc = sum(r[2] for r in combo)
                value = {"cycles": cyc, "energy": en, "accesses": acc, "edp": cyc * en}[objective]
                best = value if best is None else min(best, value)
    return best


@settings(max_examples=examples(25), deadline=None)
@given(ox=st.integers(1, 4), oy=st.integers(1, 4), oc=st.integers(1, 4), on=st.integers(1, 3),
       kc=st.integers(1, 3), k=st.integers(1, 3), n_cores=st.integers(2, 4),
       broadcast=st.booleans(), channels=st.integers(1, 3),
       objective=st.sampled_from(["cycles", "energy", "accesses", "edp"]),
       groups=st.sampled_from([1, 1, 2, 3]), static=st.sampled_from([0.0, 0.0, 7.5, 400.0]))
def test_search_equals_brute_force(ox, oy, oc, on, kc, k, n_cores, broadcast, channels,
                                   objective, groups, static):
    layer = ConvLayer("c", Ox=ox, Oy=oy, Oc=oc * groups, On=on, Kx=k, Ky=k, Kc=kc,
                      groups=groups)
    plat = platforms.load_platform("idsp", cores=n_cores, dma_broadcast=broadcast,
                                   dma_channels=channels, local_mem_bytes=256,
                                   register_file_bytes=16, static_pj_per_cycle=static)
    try:
        got = cores.best_split(layer, plat, objective)
    except WorkbenchError:
        assert _brute(layer, plat, objective) is None
        return
    col = {"cycles": "cycles", "energy": "energy_pj", "accesses": "ext_accesses",
           "edp": "edp"}[objective]
    assert got[col] == pytest.approx(_brute(layer, plat, objective), rel=1e-12)


def test_seed004_conv_scales_near_linearly_and_fc_saturates_the_bus():
    """Seed 004 §6.2.2: the 5x5 conv of a 32x64x64 input to 128 maps is compute-bound and
    scales close to linearly over 12 SHAVEs; the 10240 -> 1000 fc is I/O-bound."""
    conv = ConvLayer("conv", Ox=64, Oy=64, Oc=128, Kx=5, Ky=5, Kc=32, Px=2, Py=2)
    fc = ConvLayer.fc("fc", 10240, 1000)
    c = cores.split_options(conv, SHAVE).groupby("cores")["speedup"].max()
    f = cores.split_options(fc, SHAVE).groupby("cores")["speedup"].max()
    print("conv speed-up", c.round(2).to_dict(), "\nfc speed-up", f.round(2).to_dict())
    assert all(c[k] >= 0.9 * k for k in range(1, 13))
    assert c[12] >= 11
    assert f[12] < 2.5
    assert f[12] <= f[6] * 1.1           # flat: the bus, not the cores, sets the time
    assert cores.best_split(conv, SHAVE)["bound"] == "compute"
    assert cores.best_split(fc, SHAVE)["bound"] == "I/O"


def test_static_power_makes_more_cores_cost_energy_on_an_io_bound_layer():
    """Seed 004 §6.2.2: more SHAVEs raise the average power; on an I/O-bound layer, where they
    do not shorten the time, they then cost energy. With only static power priced (SHAVE has
    no dynamic energy figures), every core pays s pJ for each cycle it runs: k equal shares
    of 1000 outputs cost s·k·cycles, and the energy-best split uses fewer cores."""
    fc = ConvLayer.fc("fc", 10240, 1000)
    s = 50.0
    plat = SHAVE.replace(static_pj_per_cycle=s)
    rows = cores.split_options(fc, plat, splits=("oc",), cores=[1, 2, 4, 5, 8, 10])
    for row in rows.itertuples():
        assert row.energy_static_pj == pytest.approx(s * row.cores * row.cycles, rel=1e-12)
        assert row.energy_pj == pytest.approx(row.energy_static_pj, rel=1e-12)
    by_cores = rows.set_index("cores")
    assert by_cores.loc[10, "energy_pj"] > 2 * by_cores.loc[2, "energy_pj"]
    assert cores.best_split(fc, plat, "energy")["cores"] <= 2
    assert cores.best_split(fc, SHAVE, "energy")["energy_pj"] == 0.0


def test_static_energy_is_s_per_cycle_of_each_core_in_every_row() -> None:
    """`perf.price`: the static part is s × the row's cycles, the total its parts' sum, and
    the other parts are those of the same rows at s = 0."""
    layer = ConvLayer("c", Ox=6, Oy=5, Oc=8, Kx=3, Ky=3, Kc=4)
    tiles = np.array([[3, 5, 4, 1, 2], [6, 1, 8, 1, 4], [1, 1, 1, 1, 1]])
    zero = platforms.load_platform("idsp")
    hot = zero.replace(static_pj_per_cycle=12.5)
    for schedule in tiling.SCHEDULES:
        a = perf.estimate_array(layer, tiles, schedule, zero)
        b = perf.estimate_array(layer, tiles, schedule, hot)
        assert np.array_equal(a["cycles"], b["cycles"])
        assert np.allclose(b["energy_static_pj"], 12.5 * b["cycles"], rtol=1e-12, atol=0)
        assert np.allclose(b["energy_pj"], a["energy_pj"] + 12.5 * a["cycles"], rtol=1e-12)
        parts = sum(b[f"energy_{part}_pj"] for part in perf.ENERGY_PARTS)
        assert np.allclose(parts, b["energy_pj"], rtol=1e-12, atol=0)
        assert not a["energy_static_pj"].any()


def test_fewer_cores_can_win_on_energy():
    fc = ConvLayer.fc("fc", 10240, 1000)
    best = cores.best_split(fc, SHAVE, "energy")
    assert best["cores"] < SHAVE.cores


def test_core_counts_no_split_can_use_are_named() -> None:
    """A depthwise layer splits by output maps on one core only, and no split goes past the
    platform's cores: one line naming both, not a memory complaint."""
    layer = ConvLayer("dw", Ox=7, Oy=7, Oc=16, Kx=3, Ky=3, Kc=1, Px=1, Py=1, groups=16)
    plat = platforms.load_platform("shave")
    with pytest.raises(SpecError, match="no split of oc can use 4 cores; at most 1 by oc "
                                        "\\(the platform has 12\\)"):
        cores.split_options(layer, plat, splits=("oc",), cores=[4])
    with pytest.raises(SpecError, match="no split of g, xy can use 13 cores; at most 12 by g, "
                                        "7 by xy"):
        cores.split_options(layer, plat, splits=("g", "xy"), cores=[13])
    assert list(cores.split_options(layer, plat, splits=("g",), cores=[12])["cores"]) == [12]
