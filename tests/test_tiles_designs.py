"""The tile explorer's session and export, driven from Python: the solutions shown after a
load, and the CSV read back, equal the engine's candidates priced here apart
(`explore.fitting_candidates` with empty caches) on the platform built here."""

from __future__ import annotations

import io

import pandas as pd
import pytest
import yaml

from workbench import explore, layers, platforms, tiling, ui
from workbench.errors import WorkbenchError
from workbench.memo import Caches
from workbench.ui import tile_session
from workbench.ui.tile_explorer import MAX_POINTS

NUMBERS = ["schedule", *tiling.TILE_DIMS, "footprint_bytes", "cycles", "energy_pj",
           "ext_accesses", "dma_transfers"]


def _app() -> ui.TileExplorer:
    return ui.tile_explorer(network="lenet5", layer="conv2", platform="idsp", batch=8,
                            sweep_memory_kb=(1, 16))


def _fresh(layer: str, plat: platforms.Platform, schedules, objective: str,
           batch: int = 8) -> pd.DataFrame:
    lay = layers.load_network("lenet5", batch=batch)[layer]
    df = explore.fitting_candidates(lay, plat, schedules, max_rows=MAX_POINTS, caches=Caches())
    return df.sort_values(list(explore.ranking(objective)), kind="stable")


def _key(df: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, df[NUMBERS].astype(str).to_numpy()))


def test_a_session_saved_and_loaded_gives_the_same_state_and_solutions(tmp_path) -> None:
    app = _app()
    app.layer.value = "conv1"
    app.schedules.value = ("intra", "inter_oc")
    app.objective.value = "energy"
    app.memory_log2.value = 13  # 8 KB
    app.panel.fields["dma_setup_cycles"].value = 300
    app.buffer_range.value = (11, 15)
    app.points.selected.indices = [3]
    chosen = app.solutions.iloc[3]
    plat = platforms.load_platform("idsp", local_mem_bytes=8192, dma_setup_cycles=300)
    first = tmp_path / "one.yaml"
    app.bar.path.value = str(first)
    app.bar.save_button.click()
    assert "saved" in app.bar.message.value
    app.layer.value = "fc4"
    app.schedules.value = tiling.SCHEDULES
    app.objective.value = "cycles"
    app.memory_log2.value = 15
    app.panel.preset.value = "nve"
    app.buffer_range.value = (10, 12)
    app.load(str(first))
    assert (app.layer.value, app.schedules.value, app.objective.value) == (
        "conv1", ("intra", "inter_oc"), "energy")
    assert app.memory_log2.value == 13 and app.buffer_range.value == (11, 15)
    assert app.panel.platform() == plat
    assert _key(app.solutions) == _key(_fresh("conv1", plat, ("intra", "inter_oc"), "energy"))
    assert app.selected_index is not None
    got = app.solutions.iloc[app.selected_index]
    assert [got[d] for d in ("schedule", *tiling.TILE_DIMS)] == \
        [chosen[d] for d in ("schedule", *tiling.TILE_DIMS)]
    assert str(chosen["schedule"]) in app.breakdown.value  # the selection is shown again
    second = tmp_path / "two.yaml"
    app.bar.path.value = str(second)
    app.bar.save_button.click()
    assert second.read_bytes() == first.read_bytes()


def test_export_writes_the_solutions_best_first_and_the_chosen_tile(tmp_path) -> None:
    app = _app()
    plat = platforms.load_platform("idsp")
    want = _fresh("conv2", plat, tiling.SCHEDULES, "cycles")
    app.bar.stem.value = str(tmp_path / "conv2")
    app.bar.export_button.click()
    assert "wrote" in app.bar.message.value
    rows = pd.read_csv(io.StringIO((tmp_path / "conv2.csv").read_text()))
    assert _key(rows) == _key(want)
    assert list(rows["cycles"]) == list(want["cycles"].astype(float))  # best first
    doc = yaml.safe_load((tmp_path / "conv2.yaml").read_text())
    best = want.iloc[0]
    assert doc["layer"] == "conv2" and doc["objective"] == "cycles"
    assert doc["mapping"]["cycles"] == float(best["cycles"])
    assert [doc["mapping"][d] for d in tiling.TILE_DIMS] == [int(best[d])
                                                            for d in tiling.TILE_DIMS]
    assert platforms.files.build(doc["platform"], "export") == plat
    app.points.selected.indices = [5]  # a selected point is the chosen tile
    pick = app.solutions.iloc[5]
    app.bar.export_button.click()
    doc = yaml.safe_load((tmp_path / "conv2.yaml").read_text())
    assert doc["mapping"]["schedule"] == pick["schedule"]
    assert doc["mapping"]["ext_accesses"] == int(pick["ext_accesses"])


def _saved(tmp_path, **selections) -> str:
    path = tmp_path / "good.yaml"
    tile_session.save(_app(), path)
    doc = yaml.safe_load(path.read_text())
    doc["selections"].update(selections)
    return yaml.safe_dump(doc, sort_keys=False)


BAD = [
    (lambda t: ui.plan_view(network="lenet5", platform="idsp").save(t / "plan.yaml")
     and (t / "plan.yaml").read_text(), "app: this session is of the plan app"),
    (lambda t: _saved(t, layer="conv9"), "selections.layer: must be one of conv1"),
    (lambda t: _saved(t, schedules=["diagonal"]), "selections.schedules: must be one of intra"),
    (lambda t: _saved(t, sweep_memory_kb=[3, 16]), "sweep_memory_kb: each size must be a "
                                                   "power of two"),
    (lambda t: _saved(t, selected={"schedule": "intra", "tile": [1, 2]}),
     "selections.selected: must be"),
    (lambda t: _saved(t, colour=1), "selections.colour: unknown"),
]


@pytest.mark.parametrize(("text", "rule"), BAD, ids=[r for _, r in BAD])
def test_a_bad_file_is_one_line_and_changes_nothing(tmp_path, text, rule) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text(tmp_path))
    app = _app()
    before = app.solutions
    with pytest.raises(WorkbenchError) as info:
        app.load(str(path))
    line = str(info.value)
    assert "\n" not in line and f"session file {str(path)!r}" in line and rule in line, line
    assert app.solutions is before and app.layer.value == "conv2"


def test_svg_figures_for_the_save_tool() -> None:
    app = _app()
    app.bar.figure_format.value = "svg"
    assert app.roofline.output_backend == "svg" and app.sweep_figure.output_backend == "svg"
    app.buffer_range.value = (10, 13)  # a new sweep figure keeps the format
    assert app.sweep_figure.output_backend == "svg"
