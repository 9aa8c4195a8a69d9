"""Undo and redo of platform edits in the one platform panel, driven from Python: after each
step the panel's platform and the app's plan equal those computed fresh (a preset with the
edits of that step applied, planned with empty caches), and every app that embeds the panel
shows the buttons."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import pytest

from workbench import explore, layers, platforms, ui
from workbench.errors import WorkbenchError
from workbench.memo import Caches
from workbench.ui.hierarchy_view import hierarchy_view
from workbench.ui.history import History


def _fresh_plan(app: ui.PlanView, plat: platforms.Platform) -> pd.DataFrame:
    net = layers.load_network(app.network.value, batch=app.batch.value)
    return explore.network_plan(net, plat, app.objective.value, app.fusion.value,
                                caches=Caches())


def _assert_state(app: ui.PlanView, plat: platforms.Platform) -> None:
    """Every column, tiles and shares too: of equal optima the same one (test_one_answer)."""
    assert app.panel.platform() == plat
    pd.testing.assert_frame_equal(app.plan.reset_index(drop=True),
                                  _fresh_plan(app, plat).reset_index(drop=True))


def test_edit_edit_undo_undo_redo_in_the_plan_app() -> None:
    app = ui.plan_view(network="lenet5", platform="shave_cmx")
    start = platforms.load_platform("shave_cmx")
    one = start.replace(cores=2)
    two = one.replace(dma_setup_cycles=start.dma_setup_cycles * 8 + 100)
    assert app.panel.undo_button.disabled and app.panel.redo_button.disabled
    app.panel.fields["cores"].value = 2
    app.panel.fields["dma_setup_cycles"].value = two.dma_setup_cycles
    _assert_state(app, two)
    app.panel.undo()
    _assert_state(app, one)
    assert app.panel.fields["dma_setup_cycles"].value == start.dma_setup_cycles
    app.panel.undo_button.click()  # the button is the method
    _assert_state(app, start)
    assert app.panel.undo_button.disabled and not app.panel.redo_button.disabled
    app.panel.redo()
    _assert_state(app, one)
    assert app.panel.fields["cores"].value == 2 and not app.panel.redo_button.disabled
    app.panel.fields["clock_mhz"].value = 300.0  # a new edit drops the redo branch
    assert app.panel.redo_button.disabled
    _assert_state(app, one.replace(clock_mhz=300.0))


def test_preset_changes_levels_and_every_part_are_steps() -> None:
    """A preset chosen, a level added and a level's capacity, a DMA and an energy field: undo
    walks back through each, the preset entry with them, and redo forward again."""
    panel = ui.PlatformPanel("idsp")
    seen = []
    panel.on_change(lambda: seen.append(panel.platform()))
    states = [panel.platform()]
    panel.preset.value = "seed001_3level"
    states.append(platforms.load_platform("seed001_3level"))
    panel.add_level.click()  # L3 inside the RF: half its capacity, its width and energy
    panel.rows[3].capacity.value = 64
    for size in (None, 64):
        doc = states[1].model_dump()
        rf = doc["memory"]["levels"][2]
        doc["memory"]["levels"] = [*doc["memory"]["levels"],
                                   {**rf, "name": "L3", "capacity": size or rf["capacity"] // 2}]
        states.append(platforms.files.build(doc, "added"))
    panel.parts["dma"]["channels"].value = 3
    states.append(states[-1].replace(dma_channels=3))
    panel.fields["core_pj_per_cycle"].value = 7.5
    states.append(states[-1].replace(core_pj_per_cycle=7.5))
    assert panel.platform() == states[-1]
    for want in reversed(states[:-1]):
        panel.undo()
        assert panel.platform() == want and seen[-1] == want  # the apps are told
    assert panel.preset.value == "idsp" and len(panel.rows) == 2
    panel.undo()  # nothing before the start
    assert panel.platform() == states[0]
    for want in states[1:]:
        panel.redo()
        assert panel.platform() == want
    assert panel.preset.value == "seed001_3level" and len(panel.rows) == 4


def test_undo_after_an_invalid_value_goes_back_to_the_last_valid_platform() -> None:
    panel = ui.PlatformPanel("shave_cmx")
    panel.fields["cores"].value = 3
    good = panel.platform()
    panel.fields["clock_mhz"].value = 0
    with pytest.raises(WorkbenchError):
        panel.platform()
    assert not panel.undo_button.disabled
    panel.undo()
    assert panel.platform() == good and panel.message.value == ""
    panel.undo()
    assert panel.platform() == platforms.load_platform("shave_cmx")


def test_the_tile_explorers_memory_slider_is_a_step_and_follows_an_undo() -> None:
    app = ui.tile_explorer(network="lenet5", layer="conv2", platform="idsp", batch=8,
                           sweep_memory_kb=(1, 16))
    assert app.memory_log2.value == 17  # idsp: 128 KB
    app.memory_log2.value = 13
    assert max(app.points.data["footprint_kb"]) <= 8
    app.panel.undo()
    assert app.memory_log2.value == 17
    assert app.panel.platform() == platforms.load_platform("idsp")
    assert max(app.points.data["footprint_kb"]) > 8  # priced at 128 KB again
    app.panel.redo()
    assert app.memory_log2.value == 13 and max(app.points.data["footprint_kb"]) <= 8


def test_the_cores_view_keeps_its_quick_fields_on_the_panel_after_an_undo() -> None:
    app = ui.cores_explorer(network="lenet5", platform="shave", cores=4)
    assert app.panel.undo_button.disabled  # the cores asked for are the start
    app.cores.value = 2
    assert app.platform.cores == 2
    app.panel.undo()
    assert app.platform.cores == 4 and app.cores is app.panel.fields["cores"]
    app.cores.value = 3  # the widget shown is the panel's new one
    assert app.platform.cores == 3


def _descendants(w: widgets.Widget) -> list[widgets.Widget]:
    found = [w]
    for child in getattr(w, "children", ()):
        found += _descendants(child)
    return found


@pytest.mark.parametrize("build", [
    lambda: ui.plan_view(network="lenet5", platform="idsp").view(),
    lambda: ui.tile_explorer(network="lenet5", platform="idsp", sweep_memory_kb=(1, 4)).view,
    lambda: ui.cores_explorer(network="lenet5", platform="shave").view,
    lambda: ui.design_space(network="lenet5", platform="idsp", compute=False).view,
    lambda: hierarchy_view(network="lenet5", budget_kb=16, grid_kb=(1, 4)).view,
], ids=["plan", "tiles", "cores", "design", "hierarchy"])
def test_every_app_with_the_panel_shows_undo_and_redo(build) -> None:
    shown = _descendants(build())
    assert any(isinstance(w, widgets.Button) and w.description == "undo" for w in shown)
    assert any(isinstance(w, widgets.Button) and w.description == "redo" for w in shown)


def test_the_history_drops_the_redo_branch_and_keeps_its_ends() -> None:
    h = History(0)
    assert not h.record(0) and h.record(1) and h.record(2)
    assert h.back() == 1 and h.back() == 0 and h.back() == 0
    assert h.forward() == 1 and h.record(5) and not h.can_forward()
    assert h.states == [0, 1, 5]
    h.restart(9)
    assert h.states == [9] and not h.can_back()
