"""The seed 002 dataflow model: model == literal executor, baselines, seed 000 special cases."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.errors import WorkbenchError
from workbench.hierarchy import convert, executor
from workbench.layers import ConvLayer
from workbench.layers.dims import LAYER_DIMS, SEED002_LOOP, Dim, Loop, read_loop
from workbench.tiling import dataflow as df
from workbench.tiling import dataflow_search

ONE = df.Precision(1, 1, 1, 1)


@st.composite
def small_layer(draw: st.DrawFn) -> ConvLayer:
    k = draw(st.integers(1, 3))
    ox, oy, s = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 2))
    p = draw(st.integers(0, (k - 1) // 2))
    return ConvLayer(name="d", Ox=ox, Oy=oy, Oc=draw(st.integers(1, 3)),
                     On=draw(st.integers(1, 2)), Kx=k, Ky=draw(st.integers(1, 3)),
                     Kc=draw(st.integers(1, 3)), Sx=s, Sy=draw(st.integers(1, 2)), Px=p, Py=0)


@st.composite
def schedule(draw: st.DrawFn):
    layer = draw(small_layer())
    element = tuple(draw(st.permutations(df.ELEMENT_LOOPS)))
    control = tuple(draw(st.permutations(df.CONTROL_LOOPS)))
    e = df.extents(layer)
    tiles = {d: draw(st.integers(1, e[d])) for d in LAYER_DIMS}
    levels = {a: draw(st.integers(-1, 11)) for a in df.ARRAYS}
    return layer, df.DataflowSchedule(element + control, tiles, levels)


@settings(max_examples=examples(400))
@given(case=schedule())
def test_model_equals_executor(case) -> None:
    layer, sched = case
    ran = _executed(layer, sched)
    for array in df.ARRAYS:
        buf, traffic = df.array_options(layer, sched.order, sched.tiles, array)
        level = sched.levels[array] + 1
        assert int(traffic[level]) == ran[array]["moved"], array
        assert int(buf[level]) >= ran[array]["live"], array  # eq. 2 buffers suffice
        if array != "I":  # no sliding windows: eq. 2 is exactly the live data
            assert int(buf[level]) == ran[array]["live"], array
    result = df.evaluate(layer, sched, ONE)
    partial = ran["O"]["moved"] - ran["O"]["distinct"]
    assert result["T_O_final"] == ran["O"]["distinct"] and result["T_O_acc"] == 2 * partial


def _executed(layer: ConvLayer, sched: df.DataflowSchedule) -> dict[str, dict[str, int]]:
    """The one executor (hierarchy.executor) replaying the schedule as a one-level blocking:
    per array, what its on-chip buffer moves, its distinct elements and live data."""
    ran = executor.execute(layer, convert.from_dataflow(sched))
    return {array: ran[(array, 1)] for array in df.ARRAYS}


def _seed000_as_dataflow(schedule_name: str, tile: tiling.Tile) -> df.DataflowSchedule:
    """Seed 000's schedules as loop orders and buffering levels (P = 1 byte everywhere)."""
    tiles = {d: tile[d] for d in LAYER_DIMS}
    control, levels = {  # the tile loops innermost first, as dimension letters
        "intra": ("CXYMN", {"I": 6, "W": 6, "O": 6}),
        "inter_kc": ("CXYMN", {"I": 6, "W": 6, "O": 7}),
        "inter_oc": ("MCXYN", {"I": 7, "W": 6, "O": 6}),
        "inter_oxoyon": ("XYNCM", {"I": 6, "W": 9, "O": 6}),
        "inter_oxoyon_dirx": ("XYNCM", {"I": 7, "W": 9, "O": 6}),
    }[schedule_name]
    return df.DataflowSchedule(df.CANONICAL + tuple(Loop(Dim(d), 1) for d in control), tiles,
                               levels)


@settings(max_examples=examples(300))
@given(layer=small_layer(), data=st.data())
def test_seed000_schedules_are_special_cases(layer: ConvLayer, data) -> None:
    """All five seed 000 schedules, halo reuse of dirx included, have a dataflow schedule with
    exactly their traffic; so the general optimum is never worse."""
    # seed 000 moves dense input boxes; the dataflow footprint counts touched rows and columns,
    # which differ only when the stride skips rows or columns (S > K)
    assume(layer.Kx >= layer.Sx and layer.Ky >= layer.Sy)
    tile = tiling.Tile(*(data.draw(st.integers(1, d)) for d in tiling.dims(layer)))
    for name in tiling.SCHEDULES:
        seed000 = tiling.counts(layer, tile, name)
        general = df.evaluate(layer, _seed000_as_dataflow(name, tile), ONE)
        assert general["traffic_bytes"] == seed000.ext_accesses, name
        assert general["buffer_bytes"] <= seed000.footprint_elems, name


def test_strides_wider_than_kernels_are_where_seed000_is_not_contained() -> None:
    """With S > K seed 000 moves dense input boxes (the skipped rows and columns too); the
    dataflow footprint counts only touched ones, so the same loop nest moves less."""
    layer = ConvLayer(name="s", Ox=5, Oy=4, Oc=2, Kx=1, Ky=1, Kc=3, Sx=2, Sy=3)
    tile = tiling.Tile(X=5, Y=2, M=2, N=1, C=3)
    for name in tiling.SCHEDULES:
        seed000 = tiling.counts(layer, tile, name).ext_accesses
        general = df.evaluate(layer, _seed000_as_dataflow(name, tile), ONE)["traffic_bytes"]
        # inputs: seed 000 loads 3 maps x (2 tiles x 4 rows) x 9 columns = 216 elements per
        # pass; the touched ones are 3 x 4 rows x 5 columns = 60
        assert seed000 - general == 216 - 60, name


@settings(max_examples=examples(25), deadline=None)
@given(layer=small_layer(), memory=st.sampled_from([64, 256, 1024, 8192]))
def test_general_le_peemen_le_cache(layer: ConvLayer, memory: int) -> None:
    prec = df.Precision(1, 1, 1, 2)
    results = {m: dataflow_search.search(layer, [memory], m, prec)["traffic_bytes"].iloc[0]
               for m in dataflow_search.MODELS}
    if np.isnan(results["cache"]):
        return
    assert results["dataflow"] <= results["peemen"] <= results["cache"]
    assert results["dataflow"] >= dataflow_search.compulsory_bytes(layer, prec) - 1e-9
    # Peemen with O priced as eq. 4: still no better than the general model, and no worse
    # than Peemen's printed O terms when partial sums are at least as wide as outputs
    fair = dataflow_search.search(layer, [memory], "peemen", prec, peemen_o="eq4")
    assert results["dataflow"] <= fair["traffic_bytes"].iloc[0] <= results["peemen"]


def test_named_schedules_and_errors() -> None:
    layer = ConvLayer(name="a2", Ox=27, Oy=27, Oc=256, Kx=5, Ky=5, Kc=96, Sx=2, Sy=2, Px=1,
                      Py=1)
    hwc, _ = dataflow_search.best_named(layer, "hwc", 1024)
    hwce, _ = dataflow_search.best_named(layer, "hwce", 1024)
    assert hwc < hwce  # seed 002 fig. 10: the HWC schedule moves less at 1 KB
    with pytest.raises(WorkbenchError, match="unknown named schedule"):
        dataflow_search.named_schedule(layer, "eyeriss", {})
    with pytest.raises(WorkbenchError, match="a dataflow loop order lists"):
        df.DataflowSchedule(("FX",) * 12, {}, {"I": 0, "W": 0, "O": 0})
    with pytest.raises(WorkbenchError, match="unknown traffic model"):
        dataflow_search.search(layer, [1024], "oracle")


@settings(max_examples=examples(15), deadline=None)
@given(layer=small_layer())
def test_traffic_table_orders_the_models(layer: ConvLayer) -> None:
    from workbench import explore

    assume(layer.Kx >= layer.Sx and layer.Ky >= layer.Sy)
    table = explore.traffic_table([layer], [128, 1024, 16384], precision=df.Precision(1, 1, 1,
                                                                                     2))
    at = table.set_index(["memory_bytes", "model"])["traffic_bytes"]
    for size in (128, 1024, 16384):
        if np.isnan(at[(size, "seed000")]):
            continue
        assert at[(size, "dataflow")] <= at[(size, "seed000")] + 1e-9
        assert at[(size, "dataflow")] <= at[(size, "peemen")] <= at[(size, "cache")]
        assert at[(size, "dataflow")] >= table["compulsory_bytes"].iloc[0] - 1e-9


def test_traffic_command(tmp_path) -> None:
    import json
    import subprocess
    import sys

    net = tmp_path / "tiny.yaml"
    net.write_text("name: tiny\ninput: [8, 12, 12]\nlayers:\n"
                   "  - {name: c1, type: conv, maps: 8, kernel: 3, pad: 1}\n"
                   "  - {name: c2, type: conv, maps: 4, kernel: 3, stride: 2}\n")
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "traffic", str(net), "--model",
                          "dataflow", "--model", "seed000", "--memory-kb", "0.5", "4", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["rows"]
    assert {r["model"] for r in rows} == {"dataflow", "seed000"} and len(rows) == 2 * 2 * 2
    listing = subprocess.run([sys.executable, "-m", "workbench.cli", "traffic", str(net),
                              "--listing", "c1", "--memory-kb", "0.5"], capture_output=True,
                             text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr
    stated = float(listing.stdout.split("traffic ")[1].split(" B")[0])
    (row,) = [r for r in rows if r["layer"] == "c1" and r["model"] == "dataflow"
              and r["memory_kb"] == 0.5]
    assert stated == row["traffic_bytes"] and "for TN in" in listing.stdout
    totals = {}
    for orders in ("default", "paper"):  # the paper's 180 orders include the default two
        run = subprocess.run([sys.executable, "-m", "workbench.cli", "traffic", str(net),
                              "--model", "dataflow", "--memory-kb", "0.25", "--tiles", "pow2",
                              "--orders", orders, "--json"], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        totals[orders] = [r["traffic_bytes"] for r in json.loads(run.stdout)["rows"]]
    assert all(p <= d for p, d in zip(totals["paper"], totals["default"], strict=True))
    bad = subprocess.run([sys.executable, "-m", "workbench.cli", "traffic", str(net), "--model",
                          "oracle"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "invalid choice: 'oracle'" in bad.stderr


def test_grouped_layer_is_groups_times_one_group() -> None:
    """Every model prices a grouped convolution as `groups` independent convolutions."""
    grouped = ConvLayer(name="g", Ox=6, Oy=6, Oc=8, Kx=3, Ky=3, Kc=4, Px=1, Py=1, groups=2)
    one = ConvLayer(name="g1", Ox=6, Oy=6, Oc=4, Kx=3, Ky=3, Kc=4, Px=1, Py=1)
    for model in dataflow_search.MODELS:
        a = dataflow_search.search(grouped, [512, 4096], model)["traffic_bytes"].to_numpy()
        b = dataflow_search.search(one, [512, 4096], model)["traffic_bytes"].to_numpy()
        np.testing.assert_allclose(a, 2 * b, err_msg=model)


def test_paper_orders_are_the_180_symmetry_reduced_orders() -> None:
    orders = dataflow_search.PAPER_ORDERS
    assert len(orders) == len(set(orders)) == 180  # 6! / (2 · 2), seed 002 §IV-C
    assert orders[:2] == [df.CANONICAL, df.HWC]
    fx, fy, x, y = (Loop(d, 0) for d in (Dim.FX, Dim.FY, Dim.X, Dim.Y))
    mirror = {fx: fy, fy: fx, x: y, y: x}
    six = {o[:6] for o in orders}
    for order in orders:
        assert order[6] == Loop(Dim.N, 0) and sorted(order) == sorted(df.ELEMENT_LOOPS)
        # swapping the two kernel loops or the two image loops leaves the reduced set
        swapped = tuple(mirror.get(loop, loop) if loop in (fx, fy) else loop
                        for loop in order[:6])
        assert swapped not in six


def useful_levels(layer: ConvLayer, order: tuple[Loop, ...], array: str) -> list[int]:
    """Reference rule: −1, the levels just including a loop that carries the array's reuse,
    and the top (other levels only add a loop that changes neither buffer nor traffic)."""
    levels, inside = [-1], set()
    for index, loop in enumerate(order):
        if df.carries(layer, array, loop, inside):
            levels.append(index)
        inside.add(loop)
    if len(order) - 1 not in levels:
        levels.append(len(order) - 1)
    return levels


@settings(max_examples=examples(60), deadline=None)
@given(layer=small_layer(), element=st.permutations(df.ELEMENT_LOOPS),
       control=st.permutations(df.CONTROL_LOOPS))
def test_cached_level_options_equal_array_options(layer: ConvLayer, element, control) -> None:
    """LayerCosts (footprints cached by loop set) gives array_options at the useful levels."""
    order = tuple(element) + tuple(control)
    tiles = dataflow_search.candidate_tiles(layer)
    prec = df.Precision(1, 2, 1, 4)
    costs = dataflow_search.LayerCosts(layer, tiles, prec)
    final = df.final_outputs(df.trip_counts(layer, tiles))
    for array in df.ARRAYS:
        levels, buf, traffic = costs.options(order, array)
        assert levels == useful_levels(layer, order, array)
        ref_buf, ref_moved = df.array_options(layer, order, tiles, array)
        for row, level in enumerate(levels):
            cost, width = df.priced(array, ref_moved[level + 1], final, prec)
            np.testing.assert_array_equal(traffic[row], layer.groups * cost)
            np.testing.assert_array_equal(buf[row], width * ref_buf[level + 1])


@settings(max_examples=examples(12), deadline=None)
@given(layer=small_layer(), data=st.data())
def test_pruned_search_equals_brute_force_over_orders_and_levels(layer: ConvLayer,
                                                                 data) -> None:
    """The search (useful levels only, lower-bound skipping) finds the same least traffic as
    trying every order given, every one of the 13 levels per array and every tile."""
    orders = data.draw(st.lists(st.sampled_from(dataflow_search.PAPER_ORDERS), min_size=1,
                                max_size=3, unique=True))
    caps = [64, 256, 2048]
    prec = df.Precision(1, 1, 1, 2)
    tile_set = data.draw(st.sampled_from(dataflow_search.TILE_SETS))
    tiles = dataflow_search.candidate_tiles(layer, tile_set)
    final = df.final_outputs(df.trip_counts(layer, tiles))
    want = np.full(len(caps), np.inf)
    for element in orders:
        for control in df.control_orders():
            order = element + control
            per = []
            for array in df.ARRAYS:
                buf, moved = df.array_options(layer, order, tiles, array)
                cost, width = df.priced(array, moved, final, prec)
                per.append((width * buf, layer.groups * cost))
            (bi, ti), (bw, tw), (bo, to) = per
            total_b = bi[:, None, None] + bw[None, :, None] + bo[None, None, :]
            total_t = ti[:, None, None] + tw[None, :, None] + to[None, None, :]
            for c, cap in enumerate(caps):
                want[c] = min(want[c], np.where(total_b <= cap, total_t, np.inf).min())
    got = dataflow_search.search(layer, caps, "dataflow", prec, element_orders=orders,
                                 tile_set=tile_set)["traffic_bytes"].to_numpy()
    np.testing.assert_array_equal(np.nan_to_num(got, nan=np.inf), want)


@settings(max_examples=examples(150))
@given(case=schedule())
def test_dataflow_listing_moves_what_the_executor_moves(case) -> None:
    """Every fill and store line of the listing, times the trip counts of the loops around it,
    moves exactly what the literal executor moves; the loops appear outermost first."""
    import re

    layer, sched = case
    text = tiling.dataflow_listing(layer, sched, ONE)
    ran = _executed(layer, sched)
    n = {k: int(v) for k, v in df.trip_counts(layer, sched.tiles).items()}
    loops = re.findall(r"^ *for (\w+) in", text, flags=re.M)
    assert loops == [SEED002_LOOP[loop] for loop in reversed(sched.order)]
    enclosing: list[int] = []
    moved = {"I": 0, "W": 0, "O": 0}
    for line in text.splitlines()[1:]:
        depth = (len(line) - len(line.lstrip())) // 2
        del enclosing[depth:]
        if (m := re.match(r" *for (\w+) in", line)):
            enclosing.append(n[read_loop(m.group(1))])
        elif (m := re.match(r" *fill B_(\w) with (\d+)", line)) and m.group(1) != "O":
            moved[m.group(1)] += int(m.group(2)) * int(np.prod(enclosing))
        elif (m := re.match(r" *store (\d+) outputs", line)):
            moved["O"] += int(m.group(1)) * int(np.prod(enclosing))
    for array in ("I", "W"):
        expected = ran[array]["moved"] if sched.levels[array] >= 0 else None
        if expected is not None:
            assert moved[array] == expected, array
    if sched.levels["O"] >= 0:
        assert moved["O"] == ran["O"]["moved"]
