"""The apps' live tables (notebook 03's best solutions, 07's layer table, 08's traffic table),
driven from Python: moving each app's main control changes the table, and its numbers equal
the engine's computed here apart; cells read as the workbench writes numbers but sort by
value; the filter keeps the rows holding its text; the CSV holds the rows shown."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from app_platforms import levels_platform

from workbench import explore, layers, platforms, ui
from workbench.explore.hierarchy_plan import hierarchy_plan
from workbench.memo import Caches
from workbench.numbers import fmt_count
from workbench.ui.hierarchy_view import hierarchy_view
from workbench.ui.tile_explorer import MAX_POINTS, TOP_ROWS

KB = 1024


def _column(table, header: str) -> int:
    return list(table.text.columns).index(header)


def test_the_tile_explorers_table_follows_the_memory_slider_and_objective(tmp_path) -> None:
    app = ui.tile_explorer(network="lenet5", layer="conv2", platform="idsp", batch=8,
                           sweep_memory_kb=(1, 16))
    conv2 = layers.load_network("lenet5", batch=8)["conv2"]
    before = app.top_table.rows.copy()
    app.memory_log2.value = 13  # 8 KB
    for objective in ("cycles", "energy"):
        app.objective.value = objective
        plat = platforms.load_platform("idsp", local_mem_bytes=8 * KB)
        want = explore.fitting_candidates(conv2, plat, max_rows=MAX_POINTS, caches=Caches())
        want = want.sort_values(list(explore.ranking(objective))).head(TOP_ROWS)
        rows = app.top_table.rows
        for col in ("cycles", "energy_pj", "ext_accesses", "footprint_bytes"):
            assert list(rows[col]) == list(want[col]), col
        assert (rows["footprint_bytes"] <= 8 * KB).all()
    assert not before.equals(app.top_table.rows)
    # sorted by value, read as text: the cycles column's numbers and its cells
    i = _column(app.top_table, "cycles")
    data = app.top_table.source.data
    assert data[f"c{i}"] == [float(v) for v in app.top_table.rows["cycles"]]
    assert data[f"c{i}_text"] == [fmt_count(v) for v in app.top_table.rows["cycles"]]
    tile = _column(app.top_table, app.top_table.text.columns[1])
    assert all("×" in cell for cell in data[f"c{tile}"])  # the tile sorts as its text
    # the filter keeps the rows holding its text, and the CSV the rows shown
    shown = app.top_table.rows
    app.top_table.filter.value = "inter_oc"
    assert set(app.top_table.rows["schedule"]) == {"inter_oc"}
    assert len(app.top_table.rows) == int((shown["schedule"] == "inter_oc").sum())
    app.top_table.stem.value = str(tmp_path / "top")
    app.top_table.csv_button.click()
    back = pd.read_csv(io.StringIO((tmp_path / "top.csv").read_text()))
    assert list(back["cycles"]) == list(app.top_table.rows["cycles"].astype(float))
    assert list(back["schedule"]) == list(app.top_table.rows["schedule"])
    app.memory_log2.value = 15  # the filter stays over new rows
    assert set(app.top_table.rows["schedule"]) == {"inter_oc"}


def test_the_design_spaces_layer_table_follows_the_memory_slider() -> None:
    app = ui.design_space(network="lenet5", batch=8, platform="idsp", objective="cycles",
                          memory_kb=128)
    net = layers.load_network("lenet5", batch=8)
    before = app.layer_live.rows.copy()
    for kb in (8, 32):
        app.memory_log2.value = (kb * KB).bit_length() - 1
        plat = platforms.load_platform("idsp", local_mem_bytes=kb * KB)
        want = explore.explore_network(net, plat, objective="cycles")
        rows = app.layer_live.rows
        assert list(rows["layer"]) == list(want["layer"])
        assert list(rows["schedule"]) == list(want["schedule"])
        assert list(rows["cycles"]) == pytest.approx(list(want["cycles"]), rel=1e-12)
    assert not before.equals(app.layer_live.rows)
    assert list(app.layer_live.text.columns) == list(app.layer_table().columns)


def test_the_hierarchy_apps_traffic_table_follows_a_level_size() -> None:
    app = hierarchy_view(network="lenet5", platform=levels_platform(16, 1), budget_kb=16,
                         grid_kb=(1, 4, 16))
    convs = [lay for lay in layers.load_network("lenet5").tiled_layers() if lay.kind == "conv"]
    before = app.traffic.rows.copy()
    app.sizes[0].value = 32 * KB
    plan = hierarchy_plan(convs, levels_platform(32, 1))
    rows = app.traffic.rows
    assert not before.equals(rows)
    for level in plan.attrs["levels"]:
        got = rows[rows["level"] == level].set_index("layer")["energy_pj"]
        want = plan.set_index("layer")[f"energy_pj_{level}"]
        assert list(got) == pytest.approx(list(want.loc[got.index]), rel=1e-12), level
    app.traffic.filter.value = "conv2"
    assert set(app.traffic.rows["layer"]) == {"conv2"}
