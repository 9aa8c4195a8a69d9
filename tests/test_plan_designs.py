"""The plan app's sessions, compare and export, driven from Python. Every figure shown is
checked against the one engine's plan (`explore.network_plan`) computed here apart, with
empty caches, on a platform built here from its preset."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
import yaml

from workbench import explore, layers, platforms, ui
from workbench.designs import compare
from workbench.designs.session import platform_doc
from workbench.errors import WorkbenchError
from workbench.memo import Caches


def _fresh(network: str, plat: platforms.Platform, objective: str, fusion: str = "auto",
           batch: int = 1) -> pd.DataFrame:
    return explore.network_plan(layers.load_network(network, batch=batch), plat, objective,
                                fusion, caches=Caches())


def _same_plan(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Every column, tiles and shares too (test_one_answer)."""
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_a_session_saved_and_loaded_gives_the_same_state_and_plan(tmp_path) -> None:
    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    app.objective.value = "energy"
    app.fusion.value = "off"
    app.quantity.value = "energy"
    app.panel.fields["cores"].value = 2
    app.panel.rows[2].capacity.value = 512  # the RF
    doc = platform_doc(platforms.load_platform("seed001_3level").replace(cores=2))
    doc["memory"]["levels"][2]["capacity"] = 512
    saved_platform = platforms.files.build(doc, "here")
    first = tmp_path / "one.yaml"
    app.bar.path.value = str(first)
    app.bar.save_button.click()
    assert "saved" in app.bar.message.value and first.exists()
    # change everything, then load
    app.network.value = "cifar10_quick"
    app.objective.value = "cycles"
    app.fusion.value = "auto"
    app.quantity.value = "accesses"
    app.panel.preset.value = "idsp"
    app.bar.load_button.click()
    assert "loaded" in app.bar.message.value
    assert (app.network.value, app.batch.value, app.objective.value, app.fusion.value,
            app.quantity.value) == ("lenet5", 1, "energy", "off", "energy")
    assert app.panel.preset.value == "seed001_3level"
    assert app.panel.platform() == saved_platform
    _same_plan(app.plan, _fresh("lenet5", saved_platform, "energy", "off"))
    second = tmp_path / "two.yaml"
    app.save(second)
    assert second.read_bytes() == first.read_bytes()  # a round trip is byte-stable
    app.panel.undo()  # loading is one undo step
    assert app.panel.platform() == platforms.load_platform("idsp")


def test_every_preset_round_trips_through_a_session_file(tmp_path) -> None:
    for name in platforms.list_platforms():
        app_platform = platforms.load_platform(name)
        text = yaml.safe_dump(platform_doc(app_platform), sort_keys=False, allow_unicode=True)
        assert platforms.platform_from_dict(yaml.safe_load(text), name) == app_platform, name


def _session(tmp_path, **changes) -> str:
    """A good plan session's text with `changes` applied at top level."""
    app = ui.plan_view(network="lenet5", platform="idsp")
    path = tmp_path / "good.yaml"
    app.save(path)
    doc = yaml.safe_load(path.read_text())
    doc.update(changes)
    return yaml.safe_dump(doc, sort_keys=False)


BAD = [  # what the file holds, what the line says after the file's name
    (lambda t: (platforms.files.data_file("platforms", "idsp.yaml")).read_text(),
     "not a workbench session"),
    (lambda t: "workbench: session\nversion: 1\napp: [unclosed\n", "session file"),
    (lambda t: _session(t, app="tiles"), "app: this session is of the tile explorer"),
    (lambda t: _session(t, version=2), "version: must be 1, got 2"),
    (lambda t: _session(t, objective="speed"), "objective: must be one of cycles"),
    (lambda t: _session(t, batch=0), "batch: must be a whole number in 1..65,536, got 0"),
    (lambda t: _session(t, network="no_such_net"), "network: not in the zoo"),
    (lambda t: _session(t, batch=4096), "batch: the plan app takes 1..1,024, got 4,096"),
    (lambda t: _session(t, colour="red"), "colour: unknown key; known: workbench"),
    (lambda t: _session(t, selections={"fusion": "always"}),
     "selections.fusion: must be one of auto, off, force, got 'always'"),
    (lambda t: _session(t, selections={"zoom": 2}), "selections.zoom: unknown"),
    (lambda t: re.sub(r"clock_mhz: .*", "clock_mhz: 0", _session(t)),
     "platform.clock_mhz: "),
    (lambda t: _session(t, platform="idsp"), "platform: must be the platform's parts"),
]


@pytest.mark.parametrize(("text", "rule"), BAD, ids=[r for _, r in BAD])
def test_a_bad_or_foreign_file_is_one_line_and_changes_nothing(tmp_path, text, rule) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text(tmp_path))
    app = ui.plan_view(network="lenet5", platform="shave_cmx")
    before = app.plan
    with pytest.raises(WorkbenchError) as info:
        app.load(path)
    line = str(info.value)
    assert "\n" not in line and f"session file {str(path)!r}" in line and rule in line, line
    assert app.plan is before and app.panel.platform() == platforms.load_platform("shave_cmx")
    app.bar.path.value = str(path)
    app.bar.load_button.click()  # the button shows the same line
    assert rule.split(":")[0] in app.bar.message.value and "Traceback" not in \
        app.bar.message.value


def test_pin_then_edit_shows_both_designs_layer_by_layer() -> None:
    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    assert app.compare_box.value == ""
    app.pin()
    app.panel.fields["cores"].value = 2
    app.objective.value = "energy"
    first = platforms.load_platform("seed001_3level")
    second = first.replace(cores=2)
    a, b = _fresh("lenet5", first, "cycles"), _fresh("lenet5", second, "energy")
    got = app.compared
    body = got[got["layer"] != "total"]
    assert list(body["layer"]) == list(b["layer"])
    assert list(body["cycles_pinned"]) == list(a["cycles"])
    assert list(body["cycles_current"]) == list(b["cycles"])
    assert list(body["energy_pj_pinned"]) == pytest.approx(list(a["energy_pj"]), rel=1e-12)
    assert list(body["energy_pj_current"]) == pytest.approx(list(b["energy_pj"]), rel=1e-12)
    assert list(body["traffic_bytes_pinned"]) == list(a["ext_accesses"] * first.elem_bytes)
    assert list(body["traffic_bytes_current"]) == list(b["ext_accesses"] * second.elem_bytes)
    assert list(body["cycles_change"]) == list(b["cycles"] - a["cycles"])
    total = got[got["layer"] == "total"].iloc[0]
    assert total["cycles_pinned"] == a["cycles"].sum()
    assert total["energy_pj_change"] == pytest.approx(b["energy_pj"].sum() - a["energy_pj"].sum())
    shown = app.compare_box.value
    assert "pinned: lenet5 on seed001_3level, best by cycles" in shown
    assert "now: lenet5 on seed001_3level, best by energy" in shown
    assert "DRAM traffic change" in shown and not re.search(r"\d[eE][+-]?\d", shown)
    table = compare.compare_table(got)
    cycles = [c for col in ("cycles pinned", "cycles now", "cycles change")
              for c in table[col]]
    assert not any("." in c for c in cycles)  # whole cycles
    assert table["cycles now"].iloc[0] == f"{int(b['cycles'].iloc[0]):,}"
    app.unpin()
    assert app.compare_box.value == "" and app.compared is None


def test_the_comparison_matches_layers_by_name() -> None:
    """A layer only one plan has shows n/a on the other side; totals sum what is there."""
    plat = platforms.load_platform("idsp")
    a = _fresh("lenet5", plat, "cycles")
    b = a[a["layer"] != "fc3"]
    got = compare.compare_plans(a, plat, b, plat)
    fc3 = got[got["layer"] == "fc3"].iloc[0]
    assert fc3["cycles_pinned"] == a.loc[a["layer"] == "fc3", "cycles"].iloc[0]
    assert pd.isna(fc3["cycles_current"]) and pd.isna(fc3["cycles_change"])
    table = compare.compare_table(got)
    assert table.loc[table["layer"] == "fc3", "cycles now"].iloc[0] == "n/a"
    assert table.loc[table["layer"] == "conv1", "cycles change"].iloc[0] == "0"


def _check_csv(text: str, plan: pd.DataFrame, plat: platforms.Platform) -> pd.DataFrame:
    rows = pd.read_csv(io.StringIO(text))
    assert list(rows["layer"]) == list(plan["layer"])
    assert list(rows["cores"]) == list(plan["cores"])
    assert list(rows["split"]) == list(plan["split"])
    for column in ("cycles", "energy_pj"):
        assert list(rows[column]) == list(plan[column].astype(float)), column
    for column in ("ext_accesses", "dma_transfers", "footprint_bytes"):
        assert list(rows[column]) == list(plan[column]), column
    assert list(rows["traffic_bytes"]) == list(plan["ext_accesses"] * plat.elem_bytes)
    return rows


def test_export_writes_the_plan_as_csv_and_yaml(tmp_path) -> None:
    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    plat = platforms.load_platform("seed001_3level")
    want = _fresh("lenet5", plat, "cycles")
    app.bar.stem.value = str(tmp_path / "lenet5")
    app.bar.export_button.click()
    assert "wrote" in app.bar.message.value
    rows = _check_csv((tmp_path / "lenet5.csv").read_text(), want, plat)
    for level in ("DRAM", "SRAM", "RF"):
        assert list(rows[f"accesses_{level}"].fillna(-1)) == \
            list(want[f"accesses_{level}"].fillna(-1))
    convs = want["tiles"].notna()
    blocks = [f"{rf} | {sram}" for rf, sram in zip(rows.loc[convs, "blocks_RF"],
                                                   rows.loc[convs, "blocks_SRAM"], strict=True)]
    assert blocks == list(want.loc[convs, "tiles"])  # innermost first, as the plan writes them
    doc = yaml.safe_load((tmp_path / "lenet5.yaml").read_text())
    assert doc["network"] == "lenet5" and doc["objective"] == "cycles"
    assert platforms.files.build(doc["platform"], "export") == plat
    assert [r["cycles"] for r in doc["layers"]] == list(want["cycles"])
    assert [r["layer"] for r in doc["layers"]] == list(want["layer"])


def test_export_of_a_single_level_plan_names_the_tile(tmp_path) -> None:
    app = ui.plan_view(network="lenet5", platform="idsp")
    plat = platforms.load_platform("idsp")
    want = _fresh("lenet5", plat, "cycles")
    csv, _ = app.export(str(tmp_path / "idsp"))
    rows = _check_csv(csv.read_text(), want, plat)
    conv1 = want[want["layer"] == "conv1"].iloc[0]
    tile = "×".join(str(int(conv1[d])) for d in ("TOx", "TOy", "TOc", "TOn", "TKc"))
    assert rows.loc[rows["layer"] == "conv1", "tile"].iloc[0] == tile


def test_the_figure_format_sets_what_the_save_tool_writes() -> None:
    from bokeh.models import SaveTool

    app = ui.plan_view(network="lenet5", platform="seed001_3level")
    assert app.figure.output_backend == "canvas"
    assert any(isinstance(t, SaveTool) for t in app.figure.toolbar.tools)
    app.bar.figure_format.value = "svg"
    assert app.figure.output_backend == "svg"
    app.quantity.value = "energy"  # a new figure: drawn as SVG too
    assert app.figure.output_backend == "svg"
