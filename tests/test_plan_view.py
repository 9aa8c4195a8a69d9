"""The plan app (`ui.plan_view`), driven from Python: what it shows is the one engine's plan
(`explore.network_plan`) computed apart, on the platform as edited in the shared panel."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench import explore, layers, platforms, ui
from workbench.memo import Caches
from workbench.viz import plan_plots


def _same(app: ui.PlanView, plat: platforms.Platform, objective: str) -> None:
    want = explore.network_plan(layers.load_network(app.network.value), plat, objective,
                                app.fusion.value, caches=Caches())
    got = app.plan
    cols = ["layer", "cores", "split", "schedule", "cycles", "energy_pj", "ext_accesses"]
    pd.testing.assert_frame_equal(got[cols].reset_index(drop=True),
                                  want[cols].reset_index(drop=True))


def test_the_app_shows_the_engines_plan_and_follows_the_controls() -> None:
    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    plat = platforms.load_platform("seed001_3level")
    _same(app, plat, "cycles")
    assert "planning lenet5 on seed001_3level" in app.status.value
    assert "cycles" in app.totals.value and "<table" in app.table.value
    levels = ["DRAM", "SRAM", "RF"]
    data = app.source.data
    conv = app.plan[app.plan["schedule"] == "levels"]
    assert data["layer"] == list(conv["layer"])
    for name in levels:  # millions of elements
        assert data[name] == pytest.approx(list(conv[f"accesses_{name}"] / 1e6))
    app.objective.value = "energy"
    _same(app, plat, "energy")
    app.quantity.value = "energy"
    assert app.source.data["DRAM"] == pytest.approx(
        list(app.plan.loc[app.plan["schedule"] == "levels", "energy_pj_DRAM"] / 1e6))


def test_editing_the_platform_plans_again_and_a_bad_value_keeps_the_plan() -> None:
    app = ui.plan_view(network="lenet5", platform="shave_cmx")
    app.panel.fields["cores"].value = 2
    plat = app.panel.platform()
    assert plat.cores == 2
    _same(app, plat, "cycles")
    assert app.plan["cores"].max() <= 2
    kept = app.plan
    app.panel.fields["clock_mhz"].value = 0
    assert "clock_mhz" in app.status.value and app.plan is kept
    assert "Traceback" not in app.status.value


def test_the_figure_data_of_a_plan_without_levels_is_empty() -> None:
    plan = explore.network_plan(layers.load_network("lenet5"), platforms.load_platform("idsp"))
    data = plan_plots.level_data(plan, ["DRAM", "local"])
    assert data["layer"] == [] and data["DRAM"] == []


def test_the_layout_fits_1280_px() -> None:
    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    view = app.view()
    assert view.layout.max_width == "1260px"
    assert "max-width:1240px" in app.table.value
    fig = app.figure_box.children[0]
    assert fig is not None


def test_single_level_apps_say_when_the_platform_has_levels() -> None:
    """The tile explorer (and the design space and cores view, built alike) shows one line on
    a platform with levels, and none once the panel switches to a single-level preset."""
    app = ui.tile_explorer(network="lenet5", platform="seed001_3level")
    note = app.levels_note.widget.value
    assert "seed001_3level has memory levels (DRAM | SRAM | RF)" in note
    assert "single-level model of its SRAM (256 KB)" in note and "notebook 11" in note
    app.panel.preset.value = "idsp"
    assert app.levels_note.widget.value == ""
    assert app.levels_note.widget in app.view.children[0].children[1].children
