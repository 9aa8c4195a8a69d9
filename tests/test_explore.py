"""Exploration: exact against brute force, Pareto sets, seed 000 table 5.3 and figures."""

from __future__ import annotations

import signal
import sys

import numpy as np
import pandas as pd
import pytest
from budget import examples
from conftest import within_print
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, perf, platforms, tiling
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer

LENET8 = layers.load_network("lenet5", batch=8)

# seed 000 table 5.3: layer, schedule, printed tile, "optimal" KB, "actual" KB (None: >512)
TABLE_5_3 = [
    ("conv1", "intra", (28, 28, 32, 8, 1), "410", 512),
    ("conv1", "inter_kc", (28, 28, 32, 8, 1), "410", 512),
    ("conv1", "inter_oc", (28, 28, 1, 8, 1), "30", 32),
    ("conv1", "inter_oxoyon", (28, 28, 32, 1, 1), "53", 64),
    ("conv1", "inter_oxoyon_dirx", (1, 28, 32, 1, 1), "4", 4),
    ("conv2", "intra", (14, 14, 64, 8, 32), "458", 512),
    ("conv2", "inter_kc", (14, 14, 64, 8, 1), "204", 256),
    ("conv2", "inter_oc", (14, 14, 1, 8, 32), "167", 256),
    ("conv2", "inter_oxoyon", (14, 14, 64, 1, 32), "145", 256),
    ("conv2", "inter_oxoyon_dirx", (1, 14, 64, 1, 32), "107", 128),
    ("fc3", "intra", (1, 1, 512, 8, 448), "3193", None),
    ("fc3", "inter_kc", (1, 1, 512, 8, 7), "9", 16),
    ("fc3", "inter_oc", (1, 1, 1, 8, 3136), "55", 64),
    ("fc3", "inter_oxoyon", (1, 1, 512, 1, 448), "3143", None),
    ("fc3", "inter_oxoyon_dirx", (1, 1, 512, 1, 448), "3143", None),
    ("fc4", "intra", (1, 1, 10, 8, 512), "18", 32),
    ("fc4", "inter_kc", (1, 1, 10, 8, 1), "0.2", 0.25),
    ("fc4", "inter_oc", (1, 1, 1, 8, 512), "9", 16),
    ("fc4", "inter_oxoyon", (1, 1, 10, 1, 512), "11", 16),
    ("fc4", "inter_oxoyon_dirx", (1, 1, 10, 1, 512), "11", 16),
]


@pytest.mark.parametrize("row", TABLE_5_3, ids=lambda r: f"{r[0]}-{r[1]}")
def test_seed000_table_5_3(row: tuple) -> None:
    name, schedule, printed_tile, optimal_kb, actual_kb = row
    layer = LENET8[name]
    tile, accesses, footprint = explore.best_tiles(layer, schedule, None, elem_bytes=2)
    actual = 2.0 ** np.ceil(np.log2(footprint / 1024))
    if actual_kb is None:  # does not fit the largest memory explored: printed tile at 512 KB
        assert actual > 512
        tile_512, _, _ = explore.best_tiles(layer, schedule, 512 * 1024, elem_bytes=2)
        assert tile_512.as_tuple() == printed_tile
    else:
        assert actual == actual_kb
    printed_counts = tiling.counts(layer, tiling.Tile(*printed_tile), schedule)
    if (name, schedule) == ("conv1", "inter_oc"):
        # the seed prints 30 KB, but its own tile (28,28,1,8,1) needs 28.3 KB: (8192+25+6272)·2 B
        assert tile.as_tuple() == printed_tile and footprint == 28978
    elif (name, schedule) == ("fc3", "inter_kc"):
        # printed TKc = 7 needs 15 KB; the printed 9 KB is TKc = 1, which ties in accesses
        assert within_print(footprint / 1024, optimal_kb) and tile.C == 1
        assert printed_counts.ext_accesses == accesses
    else:
        assert within_print(footprint / 1024, optimal_kb), footprint / 1024
        if actual_kb is not None:
            assert tile.as_tuple() == printed_tile
            assert printed_counts.ext_accesses == accesses


def _brute_force(layer: ConvLayer, platform, schedule: str, memory: int) -> pd.DataFrame:
    frames = []
    scale = platform.elem_bytes * (2 if platform.double_buffer else 1)
    for tiles in tiling.gen_tiles(layer, memory / scale, reduced=False):
        frames.append(pd.DataFrame(perf.estimate_array(layer, tiles, schedule, platform)
                                   | tiling.counts_array(layer, tiles, schedule)))
    return pd.concat(frames, ignore_index=True)


@settings(max_examples=examples(40))
@given(ox=st.integers(1, 12), oc=st.integers(1, 10), kc=st.integers(1, 9), k=st.integers(1, 4),
       on=st.integers(1, 4), memory=st.sampled_from([256, 1024, 4096, 32768]),
       schedule=st.sampled_from(tiling.SCHEDULES))
def test_exploration_equals_brute_force(ox, oc, kc, k, on, memory, schedule) -> None:
    layer = ConvLayer(name="r", Ox=ox, Oy=max(1, ox - 2), Oc=oc, On=on, Kx=k, Ky=k, Kc=kc,
                      Px=(k - 1) // 2, Py=(k - 1) // 2)
    plat = platforms.load_platform("idsp", macs_per_cycle=4, bus_elems_per_cycle=2,
                                   register_file_bytes=64)
    try:
        fast = explore.explore_layer(layer, plat, [schedule], [memory], keep="all")
    except WorkbenchError:
        assert explore.smallest_footprint_bytes(layer, 2, True) > memory
        return
    slow = _brute_force(layer, plat, schedule, memory)
    assert fast["cycles"].min() == pytest.approx(slow["cycles"].min(), rel=1e-12)
    slow_acc = slow["in_accesses"] + slow["w_accesses"] + slow["out_accesses"]
    assert fast["ext_accesses"].min() == slow_acc.min()
    assert fast["energy_pj"].min() == pytest.approx(slow["energy_pj"].min(), rel=1e-12)
    # the Pareto front (throughput, CTC) has the same objective values
    front_fast = explore.pareto(fast, explore.DEFAULT_OBJECTIVES)
    front_slow = explore.pareto(slow, explore.DEFAULT_OBJECTIVES)
    values = lambda df: sorted(zip(df.throughput_gops.round(9), df.ctc.round(9), strict=False))  # noqa: E731
    assert sorted(set(values(front_fast))) == sorted(set(values(front_slow)))
    tile, acc, _ = explore.best_tiles(layer, schedule, memory, 2, True)
    assert acc == slow_acc.min()


@settings(max_examples=examples(200))
@given(points=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
                       min_size=1, max_size=40), dims=st.sampled_from([2, 3]))
def test_pareto_is_non_dominated_and_complete(points, dims) -> None:
    values = np.array(points, dtype=float)[:, :dims]
    maximize = [True, False, True][:dims]
    mask = explore.pareto_mask(values, maximize)
    signed = np.where(maximize, -values, values)
    for i in range(len(values)):
        dominated = any(np.all(signed[j] <= signed[i]) and np.any(signed[j] < signed[i])
                        for j in range(len(values)))
        assert mask[i] == (not dominated)


def test_pareto_per_buffer_size_matches_generic() -> None:
    p = platforms.load_platform("idsp")
    df = explore.explore_layer(LENET8["conv1"], p, buffer_sizes=[8192, 65536], keep="pareto")
    everything = explore.explore_layer(LENET8["conv1"], p, buffer_sizes=[8192, 65536], keep="all")
    for (schedule, size), rows in everything.groupby(["schedule", "buffer_bytes"]):
        want = explore.pareto(rows)
        got = df[(df.schedule == schedule) & (df.buffer_bytes == size)]
        assert sorted(zip(got.TOx, got.TOy, got.TOc, got.TOn, got.TKc, strict=False)) == sorted(
            zip(want.TOx, want.TOy, want.TOc, want.TOn, want.TKc, strict=False))


def _best_per_size(layer: ConvLayer, sizes: list[int]) -> pd.DataFrame:
    p = platforms.load_platform("idsp", macs_per_cycle=1, bus_elems_per_cycle=1,
                                dma_setup_cycles=150, double_buffer=True)
    df = explore.explore_layer(layer, p, buffer_sizes=sizes, keep="best", local_traffic=False)
    return df.sort_values("cycles").groupby("buffer_bytes").head(1).sort_values("buffer_bytes")


def test_seed000_figures_5_8_to_5_10() -> None:
    """1 MAC/cycle, 1 element/cycle, 2 B, 150-cycle setup, double buffering, 128 B … 512 KB."""
    sizes = [2 ** k for k in range(7, 20)]
    worst_at_smallest = []
    for name in ("conv2", "fc3"):
        layer = LENET8[name]
        best = _best_per_size(layer, sizes)
        norm = best["cycles"] / layer.macs  # compute-only cycles = MACs at 1 MAC/cycle
        worst_at_smallest.append(norm.iloc[0])
        assert norm.iloc[0] >= 5
        assert (norm[best.buffer_bytes >= 128 * 1024] <= 1.01).all()
        assert np.all(np.diff(norm.to_numpy()) <= 1e-12)  # more memory never hurts
        small = best[best.buffer_bytes < 1024]
        overheads = small[["cycles_dma_setup", "cycles_bus_stall", "cycles_prolog_epilog"]]
        assert (overheads.idxmax(axis=1) == "cycles_dma_setup").all()
        assert small["cycles_dma_setup"].iloc[0] > 0.5 * small["cycles"].iloc[0]
        assert (best["cycles_prolog_epilog"] < 0.05 * best["cycles"]).all()
    assert max(worst_at_smallest) >= 10  # "up to 10x worse below 1 KB"


def test_seed000_figure_5_12_pareto() -> None:
    p = platforms.load_platform("idsp")
    df = explore.explore_layer(LENET8["conv2"], p, keep="all")
    front = explore.pareto(df)
    assert 2 <= len(front) <= 12
    assert (front["throughput_gops"] >= 0.95 * p.peak_gops).all()
    assert front["ctc"].max() / front["ctc"].min() >= 1.5


def test_memory_too_small_and_unknown_schedule() -> None:
    p = platforms.load_platform("idsp")
    with pytest.raises(WorkbenchError, match=r"too small for any tile; the smallest tile "
                                             r"\(1x1x1x1x1\) needs 204 bytes"):
        explore.explore_layer(LENET8["conv2"], p, buffer_sizes=[128])
    with pytest.raises(WorkbenchError, match="unknown schedule"):
        explore.explore_layer(LENET8["conv2"], p, schedules=["zigzag"])
    df = explore.explore_layer(LENET8["conv2"], p, buffer_sizes=[128, 4096], keep="best")
    assert df.attrs["infeasible_buffer_sizes"] == [128] and set(df.buffer_bytes) == {4096}


def test_network_exploration_parallel_equals_serial() -> None:
    p = platforms.load_platform("idsp")
    serial = explore.explore_layers(LENET8.tiled_layers(), p, jobs=1)
    parallel = explore.explore_layers(LENET8.tiled_layers(), p, jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)
    per_layer = explore.explore_network(LENET8, p)
    totals = explore.network_totals(per_layer, p)
    assert totals["cycles"] == pytest.approx(per_layer["cycles"].sum())
    assert 0 < totals["throughput_gops"] <= p.peak_gops


def test_three_objective_pareto_and_bad_objective() -> None:
    p = platforms.load_platform("idsp")
    objectives = {"throughput_gops": "max", "ctc": "max", "footprint_bytes": "min"}
    df = explore.explore_layer(LENET8["fc4"], p, ["inter_kc"], [4096], objectives=objectives)
    everything = explore.explore_layer(LENET8["fc4"], p, ["inter_kc"], [4096], keep="all")
    assert len(df) == len(explore.pareto(everything, objectives)) > 0
    with pytest.raises(WorkbenchError, match="unknown objective"):
        explore.explore_layer(LENET8["fc4"], p, ["inter_kc"], [4096], objectives={"speed": "max",
                                                                                   "ctc": "max"})


@pytest.mark.parametrize(("network", "printed_uj", "printed_parts_uj"), [
    ("lenet5", 1608, {"compute": 184, "dma_setup": 3, "local": 7, "external": 1413}),
    ("alexnet_oxford102", 64196, {"compute": 10869, "dma_setup": 180, "local": 355,
                                  "external": 52792}),
])
def test_seed000_table_7_10_model_energy_with_least_accesses(network, printed_uj,
                                                             printed_parts_uj) -> None:
    """Seed 000 table 7.10 ("model": the most efficient schedule per layer, appendix C's
    least external accesses) on the IDSP test bench: batch 8, 128 KB, double buffered."""
    net = layers.load_network(network, batch=8)
    plat = platforms.load_platform("idsp")
    assert plat.local_mem_bytes == 128 * 1024 and plat.double_buffer
    per_layer = explore.explore_network(net, plat, objective="accesses")
    total_uj = per_layer["energy_pj"].sum() / 1e6
    assert total_uj == pytest.approx(printed_uj, rel=0.02)
    # compute and external energy dominate and match part by part too
    for part in ("compute", "external"):
        got = per_layer[f"energy_{part}_pj"].sum() / 1e6
        assert got == pytest.approx(printed_parts_uj[part], rel=0.02), part
    # ranking by cycles instead lands further off the printed total (the issue's +7.7 / +9.7 %)
    by_cycles = explore.explore_network(net, plat)["energy_pj"].sum() / 1e6
    assert by_cycles > 1.05 * printed_uj


def test_objectives_rank_as_named() -> None:
    net = layers.load_network("alexnet_oxford102", batch=8)
    plat = platforms.load_platform("idsp", local_mem_bytes=64 * 1024)
    best = {o: explore.explore_network(net, plat, objective=o) for o in explore.OBJECTIVES}
    for objective, column in explore.query.OBJECTIVE_COLUMNS.items():
        values = {o: float(df[column].sum()) for o, df in best.items()}
        assert values[objective] == min(values.values()), (objective, values)
        assert (best[objective]["objective"] == objective).all()
    with pytest.raises(WorkbenchError, match="unknown objective 'speed'; valid: cycles"):
        explore.explore_network(net, plat, objective="speed")


def test_many_platforms_and_sizes_at_once_equal_one_by_one() -> None:
    net = layers.load_network("lenet5", batch=8)
    base = platforms.load_platform("idsp")
    variants = [base, base.replace(bus_elems_per_cycle=4, dma_setup_cycles=500),
                base.replace(elem_bytes=1, double_buffer=False, macs_per_cycle=64)]
    sizes = [4 * 1024, 32 * 1024, 256 * 1024]
    table = explore.best_mappings(net.tiled_layers(), variants, sizes, objective="energy")
    for pi, plat in enumerate(variants):
        for size in sizes:
            one = explore.explore_network(net, plat.replace(local_mem_bytes=size),
                                          objective="energy")
            rows = table[(table.platform == pi) & (table.buffer_bytes == size)]
            assert list(rows["layer"]) == list(one["layer"])
            for column in ("schedule", "TOx", "TOy", "TOc", "TOn", "TKc", "cycles", "energy_pj"):
                assert list(rows[column]) == list(one[column]), column


def _sigterm_action(args: tuple) -> pd.DataFrame:
    return pd.DataFrame({"action": [
        "default" if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else "python"]})


def test_explore_workers_die_on_sigterm_whatever_the_parent_handles(monkeypatch) -> None:
    """The CLI catches SIGTERM in Python; `explore_layers`' forked workers must not inherit
    that, or a broken pool's terminate can leave a worker (and the command) waiting."""
    solutions = sys.modules["workbench.explore.solutions"]
    monkeypatch.setattr(solutions, "_explore_one", _sigterm_action)  # inherited by the fork
    before = signal.signal(signal.SIGTERM, lambda *_: None)  # as `workbench.cli.main` does
    try:
        got = explore.explore_layers(LENET8.tiled_layers(), platforms.load_platform("idsp"),
                                     keep="all", jobs=2)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert list(got["action"]) == ["default"] * len(LENET8.tiled_layers())
