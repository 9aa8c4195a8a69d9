"""The design-space app driven from pytest without a browser: every control updates the totals
and the bokeh sources, and the numbers shown equal an independent engine computation."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest

from workbench import explore, layers, platforms, ui, viz
from workbench.errors import WorkbenchError
from workbench.viz import units


def _app(**kwargs) -> ui.DesignSpaceApp:
    args = {"network": "lenet5", "batch": 8, "platform": "idsp", "objective": "cycles",
            "memory_kb": 128} | kwargs
    return ui.design_space(**args)


def _expected(network: str, batch: int, plat: platforms.Platform, memory: int,
              objective: str) -> tuple[dict, pd.DataFrame]:
    """Network totals and per-layer rows computed directly, one memory size at a time."""
    net = layers.load_network(network, batch=batch)
    sized = plat.replace(local_mem_bytes=memory)
    per_layer = explore.explore_network(net, sized, objective=objective)
    return explore.network_totals(per_layer, sized), per_layer


def _assert_shows(app: ui.DesignSpaceApp, network: str, batch: int, plat: platforms.Platform,
                  objective: str) -> None:
    memory = 1 << app.memory_log2.value
    totals, per_layer = _expected(network, batch, plat, memory, objective)
    for key in ("cycles", "energy_pj", "time_ms", "throughput_gops", "ext_accesses"):
        assert app.current[key] == pytest.approx(totals[key], rel=1e-12), key
    assert app.current["traffic_mb"] == pytest.approx(
        totals["ext_accesses"] * plat.elem_bytes / 1e6)
    assert list(app.per_layer["layer"]) == list(per_layer["layer"])
    assert list(app.per_layer["schedule"]) == list(per_layer["schedule"])
    assert app.points.data["cycles"] == pytest.approx(list(per_layer["cycles"]))
    compute = per_layer["cycles_compute"].tolist()
    assert app.cycles_source.data["compute"] == pytest.approx(compute)
    energy = (per_layer["energy_external_pj"] / 1e6).tolist()
    assert app.energy_source.data["external"] == pytest.approx(energy)
    text = html.unescape(app.totals.value)
    assert f"<b>{units.fmt_ms(totals['time_ms'])}</b>" in text
    assert f"chosen by <b>{objective}</b>" in text
    priced = plat.core_pj_per_cycle or plat.local_access_pj or plat.ext_access_pj
    energy_text = units.fmt_energy(totals["energy_pj"]) if priced else "n/a"
    assert f"<b>{energy_text}</b>" in text
    assert "e+" not in text and "e-0" not in text


def test_initial_view_equals_an_independent_computation() -> None:
    app = _app()
    assert app.memory_log2.value == 17 and app.panel.fields["local_mem_bytes"].value == 131072
    _assert_shows(app, "lenet5", 8, platforms.load_platform("idsp"), "cycles")
    assert app.cycles_figure.x_range.factors == ["conv1", "conv2", "fc3", "fc4"]
    assert "lenet5, batch 8" in app.status.value
    assert app.view is app.view  # built once: one bokeh document


def test_memory_slider_only_selects_kept_rows(monkeypatch) -> None:
    app = _app()
    before = (app.totals.value, list(app.points.data["footprint_kb"]),
              dict(app.selected.data))

    def no_engine(*args, **kwargs):
        raise AssertionError("a slider move must not call the engine")

    for name in ("best_mappings", "price_rows", "explore_network", "network_totals"):
        monkeypatch.setattr(explore, name, no_engine)
    monkeypatch.setattr(explore.query, "price_rows", no_engine)
    app.memory_log2.value = 13  # 8 KB
    monkeypatch.undo()
    assert app.totals.value != before[0] and "8 KB local memory" in app.totals.value
    assert app.points.data["footprint_kb"] != before[1]
    assert max(app.points.data["footprint_kb"]) <= 8
    assert app.selected.data["memory_bytes"] == [8192] != before[2]["memory_bytes"]
    assert app.panel.fields["local_mem_bytes"].value == 8192
    _assert_shows(app, "lenet5", 8, platforms.load_platform("idsp"), "cycles")


def test_objective_changes_the_mappings() -> None:
    app = _app()
    by_cycles = app.current["energy_pj"]
    app.objective.value = "accesses"
    by_accesses = app.current["energy_pj"]
    assert by_accesses < by_cycles  # lenet5, batch 8, idsp, 128 KB
    assert "chosen by <b>accesses</b>" in app.totals.value
    _assert_shows(app, "lenet5", 8, platforms.load_platform("idsp"), "accesses")
    app.objective.value = "energy"
    assert app.current["energy_pj"] <= by_accesses
    _assert_shows(app, "lenet5", 8, platforms.load_platform("idsp"), "energy")


def test_platform_fields_change_the_totals() -> None:
    app = _app()
    cycles = app.current["cycles"]
    roof = max(app.roofs.data["y"])
    app.panel.fields["dma_setup_cycles"].value = 1000
    assert app.current["cycles"] > cycles
    _assert_shows(app, "lenet5", 8, platforms.load_platform("idsp", dma_setup_cycles=1000),
                  "cycles")
    app.panel.fields["macs_per_cycle"].value = 64
    assert max(app.roofs.data["y"]) == pytest.approx(2 * roof)
    app.panel.fields["local_mem_bytes"].value = 4096  # the panel's memory moves the slider
    assert app.memory_log2.value == 12 and "4 KB local memory" in app.totals.value
    app.panel.fields["local_mem_bytes"].value = 5000  # snapped to the nearest power of two
    assert app.memory_log2.value == 12 and app.panel.fields["local_mem_bytes"].value == 4096
    _assert_shows(app, "lenet5", 8, platforms.load_platform(
        "idsp", dma_setup_cycles=1000, macs_per_cycle=64), "cycles")
    app.panel.preset.value = "nve"
    nve = platforms.load_platform("nve")
    assert app.memory_log2.value == nve.local_mem_bytes.bit_length() - 1
    _assert_shows(app, "lenet5", 8, nve, "cycles")


def test_network_picker_switches_to_other_layer_names(tmp_path) -> None:
    from model_files import LENET5, LENET5_NAMES, write_onnx

    app = _app()
    app.network.value = "cifar10_quick"
    names = ["conv1", "conv2", "conv3", "ip1", "ip2"]
    for fig, src in ((app.cycles_figure, app.cycles_source),
                     (app.energy_figure, app.energy_source)):
        assert list(fig.x_range.factors) == names and src.data["layer"] == names
    assert app.points.data["layer"] == names and "<b>cifar10_quick</b>" in app.totals.value
    _assert_shows(app, "cifar10_quick", 8, platforms.load_platform("idsp"), "cycles")
    app.batch.value = 2
    _assert_shows(app, "cifar10_quick", 2, platforms.load_platform("idsp"), "cycles")
    path = write_onnx(tmp_path / "mine.onnx", LENET5, LENET5_NAMES, (1, 28, 28))
    app.network.value = str(path)
    assert "fc3" in app.cycles_figure.x_range.factors
    app.network.value = "no_such_net"
    assert "unknown network 'no_such_net'" in html.unescape(app.status.value)
    assert "fc3" in app.cycles_figure.x_range.factors  # the previous network stays
    app.batch.value = 0
    assert "batch must be a positive integer" in html.unescape(app.status.value)


def test_infeasible_memory_size_is_a_message_not_a_traceback() -> None:
    app = _app()
    app.memory_log2.value = 7  # 128 B: conv1 and conv2 have no tile that fits
    status = html.unescape(app.status.value)
    assert "infeasible at 128 B: no tile of conv1, conv2 fits" in status
    assert "every layer fits from 256 B" in status and "\n" not in status
    assert app.current is None and "does not fit in 128 B" in app.totals.value
    assert app.cycles_source.data["layer"] == ["conv1", "conv2", "fc3", "fc4"]
    assert app.cycles_source.data["compute"][:2] == [0.0, 0.0]
    assert set(app.points.data["layer"]) == {"fc3", "fc4"}
    assert app.selected.data["memory_bytes"] == []
    assert 128 not in app.memory_points.data["memory_bytes"]
    app.memory_log2.value = 8
    assert app.current is not None and "infeasible" not in app.status.value


def test_invalid_platform_value_shows_one_line() -> None:
    app = _app()
    shown = app.totals.value
    app.panel.fields["bus_elems_per_cycle"].value = 0
    status = html.unescape(app.status.value)
    assert "memory.levels[0].bandwidth: must be a number" in status and "\n" not in status
    assert app.totals.value == shown  # the last valid platform's results stay
    app.panel.fields["bus_elems_per_cycle"].value = 32
    assert app.totals.value == shown and "must be positive" not in app.status.value


def test_tradeoff_plot_has_one_point_per_feasible_size_and_the_pareto_front() -> None:
    app = _app()
    plat = platforms.load_platform("idsp")
    sizes = [1 << k for k in range(8, 25)]  # lenet5 fits from 256 B
    assert app.memory_points.data["memory_bytes"] == sizes
    rows = [_expected("lenet5", 8, plat, m, "cycles")[0] for m in sizes]
    energy = [r["energy_pj"] / 1e6 for r in rows]
    assert app.memory_points.data["energy_uj"] == pytest.approx(energy)
    values = np.array([[m, r["energy_pj"], r["time_ms"]] for m, r in zip(sizes, rows,
                                                                            strict=True)])
    front = [m for m, keep in zip(sizes, explore.pareto_mask(values, [False] * 3), strict=True)
             if keep]
    assert app.front.data["memory_bytes"] == front and 1 << 24 not in front
    assert app.selected.data["memory_bytes"] == [131072]
    app.memory_points.selected.indices = [2]  # tapping a point selects its size
    assert app.memory_log2.value == 10 and app.selected.data["memory"] == ["1 KB"]


def test_data_functions_reshape_only() -> None:
    frame = pd.DataFrame({"layer": ["b"], **{f"cycles_{p}": [float(i + 1)] for i, p in
                                               enumerate(viz.design_plots.CYCLE_PARTS)}})
    data = viz.breakdown_data(frame, "cycles", ["a", "b"])
    assert data == {"layer": ["a", "b"], "compute": [0.0, 1.0], "dma_setup": [0.0, 2.0],
                    "bus_stall": [0.0, 3.0], "prolog_epilog": [0.0, 4.0]}
    assert [viz.memory_label(b) for b in (128, 8192, 1 << 21)] == ["128 B", "8 KB", "2 MB"]
    with pytest.raises(WorkbenchError, match="unknown objective 'speed'"):
        ui.design_space(network="lenet5", objective="speed")


def test_multi_core_platforms_are_said_to_be_per_core() -> None:
    app = ui.design_space(network="lenet5", batch=1, platform="shave")
    assert "one of the 12 cores" in app.totals.value
    assert "cores" not in ui.design_space(network="lenet5", batch=1).totals.value
