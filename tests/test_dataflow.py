"""The seed 002 dataflow model: model == literal executor, baselines, seed 000 special cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer
from workbench.tiling import dataflow as df
from workbench.tiling import dataflow_exec, dataflow_search

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
    tiles = {"jss": draw(st.integers(1, e["Ex"])), "iss": draw(st.integers(1, e["Ey"])),
             "css": draw(st.integers(1, e["C"])), "mss": draw(st.integers(1, e["M"])),
             "nss": draw(st.integers(1, e["N"]))}
    levels = {a: draw(st.integers(-1, 11)) for a in df.ARRAYS}
    return layer, df.DataflowSchedule(element + control, tiles, levels)


@settings(max_examples=400)
@given(case=schedule())
def test_model_equals_executor(case) -> None:
    layer, sched = case
    ran = dataflow_exec.execute(layer, sched)
    for array in df.ARRAYS:
        buf, traffic = df.array_options(layer, sched.order, sched.tiles, array)
        level = sched.levels[array] + 1
        assert int(traffic[level]) == ran[f"moved_{array}"], array
        assert int(buf[level]) >= ran[f"live_{array}"], array  # eq. 2 buffers suffice
        if array != "I":  # no sliding windows: eq. 2 is exactly the live data
            assert int(buf[level]) == ran[f"live_{array}"], array
    result = df.evaluate(layer, sched, ONE)
    partial = ran["moved_O"] - ran["distinct_O"]
    assert result["T_O_final"] == ran["distinct_O"] and result["T_O_acc"] == 2 * partial


def _seed000_as_dataflow(schedule_name: str, tile: tiling.Tile) -> df.DataflowSchedule:
    """Seed 000's schedules as loop orders and buffering levels (P = 1 byte everywhere)."""
    tiles = {"jss": tile.TOx, "iss": tile.TOy, "css": tile.TKc, "mss": tile.TOc,
             "nss": tile.TOn}
    control, levels = {
        "intra": (("TIF", "TSX", "TSY", "TOF", "TN"), {"I": 6, "W": 6, "O": 6}),
        "inter_kc": (("TIF", "TSX", "TSY", "TOF", "TN"), {"I": 6, "W": 6, "O": 7}),
        "inter_oc": (("TOF", "TIF", "TSX", "TSY", "TN"), {"I": 7, "W": 6, "O": 6}),
        "inter_oxoyon": (("TSX", "TSY", "TN", "TIF", "TOF"), {"I": 6, "W": 9, "O": 6}),
        "inter_oxoyon_dirx": (("TSX", "TSY", "TN", "TIF", "TOF"), {"I": 7, "W": 9, "O": 6}),
    }[schedule_name]
    return df.DataflowSchedule(df.CANONICAL + control, tiles, levels)


@settings(max_examples=300)
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


@settings(max_examples=25, deadline=None)
@given(layer=small_layer(), memory=st.sampled_from([64, 256, 1024, 8192]))
def test_general_le_peemen_le_cache(layer: ConvLayer, memory: int) -> None:
    prec = df.Precision(1, 1, 1, 2)
    results = {m: dataflow_search.search(layer, [memory], m, prec)["traffic_bytes"].iloc[0]
               for m in dataflow_search.MODELS}
    if np.isnan(results["cache"]):
        return
    assert results["dataflow"] <= results["peemen"] <= results["cache"]
    assert results["dataflow"] >= dataflow_search.compulsory_bytes(layer, prec) - 1e-9


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


@settings(max_examples=15, deadline=None)
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
                          "dataflow", "--model", "seed000", "--memory", "512", "4KB", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["rows"]
    assert {r["model"] for r in rows} == {"dataflow", "seed000"} and len(rows) == 2 * 2 * 2
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
