"""The widget apps, driven from pytest without a browser: controls update the bokeh sources."""

from __future__ import annotations

import re

import ipywidgets as widgets
import pytest
import yaml

from workbench import explore, platforms, ui, viz
from workbench.errors import WorkbenchError
from workbench.ui.controls import READOUT_CHARS


def _app() -> ui.TileExplorer:
    return ui.tile_explorer(network="lenet5", layer="conv2", platform="idsp", batch=8,
                            sweep_memory_kb=(1, 16))


def test_memory_slider_updates_the_roofline_source() -> None:
    app = _app()
    before = list(app.points.data["footprint_kb"])
    assert app.memory_log2.label == "128 KB" and app.memory_log2.description == "memory"
    app.memory_log2.value = 13  # 8 KB
    after = app.points.data["footprint_kb"]
    assert after != before and max(after) <= 8
    assert app.panel.fields["local_mem_bytes"].value == 8192
    assert app.memory_log2.label == "8 KB"  # the slider reads in bytes, not 2^13
    assert [label for label, _ in app.memory_log2.options][:4] == ["128 B", "256 B", "512 B",
                                                                    "1 KB"]
    assert app.memory_log2.options[-1] == ("16 MB", 24)


def test_platform_panel_updates_sources_and_roofs() -> None:
    app = _app()
    cycles = list(app.points.data["cycles"])
    roofs = app.roofline.select_one({"name": "roofs"}).data_source
    peak = max(roofs.data["y"])
    app.panel.fields["dma_setup_cycles"].value = 2000
    assert app.points.data["cycles"] != cycles
    app.panel.fields["macs_per_cycle"].value = 64
    assert max(roofs.data["y"]) == pytest.approx(2 * peak)
    app.panel.preset.value = "nve"
    assert app.panel.platform().simd_lanes == 16 and app.panel.fields["acc_bits"].value == 32


def test_roof_in_view_when_it_at_most_doubles_the_span() -> None:
    assert viz.roof_in_view([25.2, 28.1], 28.8, "log")  # 1.02× above the top, span 1.12×
    assert viz.roof_in_view([25.2, 28.1], 28.8, "linear")  # 0.7 above, span 2.9
    assert not viz.roof_in_view([0.5, 1.0], 28.8, "log")  # 28.8× above, span 2×
    assert viz.roof_in_view([1.0, 20.0], 28.8, "log")
    assert not viz.roof_in_view([10.0, 12.0], 28.8, "linear")  # 16.8 above, span 2
    assert viz.roof_in_view([27.0], 28.8, "linear")  # one point: a span of 10% of it
    assert not viz.roof_in_view([20.0], 28.8, "log") and viz.roof_in_view([], 28.8)


def test_the_roofline_spans_the_roof_just_above_the_points() -> None:
    """conv2 at 32 KB on idsp runs at 25-28.1 GOps/s under a 28.8 GOps/s roof, which the view
    zoomed to the points left out (it read as far below); on a bus of 0.25 elements per cycle
    they run at 6-9 GOps/s, over 3× below the roof, and the view keeps their spread."""
    app = _app()
    app.memory_log2.value = 15
    peak = app.roofline.select_one({"name": "peak"})
    y_range = app.roofline.y_range
    assert y_range.only_visible and peak in y_range.renderers
    gops = app.points.data["throughput_gops"]
    assert max(gops) < 28.8 < 1.1 * max(gops) and peak.visible
    assert peak.glyph.fill_alpha == peak.glyph.line_alpha == 0  # spans the view, not drawn
    app.panel.fields["bus_elems_per_cycle"].value = 0.25
    gops = app.points.data["throughput_gops"]
    assert 3 * max(gops) < 28.8 and max(gops) < 2 * min(gops) and not peak.visible


def test_buffer_range_updates_the_sweep_figure() -> None:
    app = _app()
    xs = app.sweep_figure.renderers[0].data_source.data["x"]
    assert list(xs) == [1, 2, 4, 8, 16]  # KB
    assert app.buffer_range.label == ("1K", "16K")
    labels = [label for label, _ in app.buffer_range.options]  # the readout shows 9 characters
    assert labels[0] == "128B" and labels[-1] == "16M" and "512K" in labels
    assert max(len(a) + 1 + len(b) for a in labels for b in labels) <= READOUT_CHARS
    app.buffer_range.value = (12, 18)
    xs = app.sweep_figure.renderers[0].data_source.data["x"]
    assert min(xs) == 4 and max(xs) == 256


def test_selecting_a_point_shows_its_loop_nest_and_breakdown() -> None:
    app = _app()
    index = len(app.points.data["cycles"]) - 1
    app.points.selected.indices = [index]
    schedule = app.points.data["schedule"][index]
    assert f"schedule {schedule}" in app.listing.value and "DMA get" in app.listing.value
    assert "white-space: pre;" in app.listing.value  # lines never wrap mid-word
    assert "dma_setup" in app.breakdown.value and "external" in app.breakdown.value


def test_invalid_platform_value_shows_a_message_not_a_traceback() -> None:
    app = _app()
    app.panel.fields["bus_elems_per_cycle"].value = 0
    assert "memory.levels[0].bandwidth: must be a number" in app.status.value
    assert platforms.load_platform("idsp").bus_elems_per_cycle == 32


def test_network_picker_loads_zoo_names_and_files(tmp_path) -> None:
    from model_files import LENET5, LENET5_NAMES, write_onnx

    app = _app()
    app.network.value = "cifar10_quick"
    assert list(app.layer.options) == ["conv1", "conv2", "conv3", "ip1", "ip2"]
    assert set(app.points.data["layer"]) == {"conv1"}
    path = write_onnx(tmp_path / "mine.onnx", LENET5, LENET5_NAMES, (1, 28, 28))
    app.network.value = str(path)
    assert "fc3" in app.layer.options
    app.network.value = "no_such_net"
    import html

    assert "unknown network 'no_such_net'" in html.unescape(app.status.value)
    assert "fc3" in app.layer.options  # the previous network stays loaded


def test_traffic_explorer_switches_models_layers_and_widths() -> None:
    app = ui.traffic_explorer(network="lenet5", memory_kb=(1, 16, 256))
    data = app.source.data
    assert data["memory_kb"] == [1, 16, 256]
    for model in ("seed000", "peemen", "cache"):  # the general model is never worse
        assert all(d <= m for d, m in zip(data["dataflow"], data[model], strict=True))
    whole = list(data["dataflow"])
    app.models.value = ("dataflow", "cache")
    assert not app.figure.select_one({"name": "peemen"}).visible
    assert app.figure.select_one({"name": "cache"}).visible
    assert list(app.frame.columns) == ["dataflow", "cache", "compulsory", "cache / dataflow"]
    assert "choose a layer" in app.listing.value
    app.layer.value = "conv2"
    assert all(c < w for c, w in zip(app.source.data["dataflow"], whole, strict=True))
    app.memory.value = 16  # the best schedule's loop nest, and the traffic it states
    stated = float(re.search(r"traffic (\d+) B", app.listing.value).group(1))
    assert stated == app.table.set_index(["layer", "model", "memory_bytes"]).loc[
        ("conv2", "dataflow", 16 * 1024), "traffic_bytes"]
    # one vocabulary with notebook 03 (tiling.listing): tile TOx..TKc, loops o_n/o_c/k_c
    listing = app.listing.value
    assert "for o_n in" in listing and "for k_c in" in listing and "fill B_w" in listing
    assert re.search(r"tile TOx=\d+, TOy=\d+, TKc=\d+, TOc=\d+, TOn=\d+", listing)
    assert not re.search(r"\b(jss|iss|css|mss|nss|TOF|TIF|TSY|TSX|TN|B_W|B_I|B_O)\b", listing)
    assert "O[n][oc][y][x] += I[n][kc]" in listing
    assert "partial sums if stored before" in listing  # prose untouched
    narrow = list(app.source.data["dataflow"])
    app.psum_bytes.value = 1  # cheaper partial sums: never more traffic
    assert all(a <= b for a, b in zip(app.source.data["dataflow"], narrow, strict=True))
    app.network.value = "no_such_net"
    assert "unknown network 'no_such_net'" in app.status.value.replace("&#x27;", "'")
    with pytest.raises(WorkbenchError, match="unknown traffic model 'oracle'"):
        ui.traffic_explorer(models=("dataflow", "oracle"))


def test_objective_control_ranks_the_explorer_and_its_sweep() -> None:
    app = ui.tile_explorer(network="lenet5", layer="conv2", batch=8)
    app.memory_log2.value = 13
    assert "best by cycles" in app.status.value
    app.objective.value = "accesses"
    assert "best by accesses" in app.status.value
    plat = app.panel.platform().replace(local_mem_bytes=1 << 13)
    want = explore.explore_layer(app.net["conv2"], plat, keep="best", objective="accesses")
    best = want.sort_values(list(explore.ranking("accesses"))).iloc[0]
    assert f"{best['ext_accesses']:,} accesses" in app.status.value
    tile = "×".join(str(int(best[d])) for d in ("TOx", "TOy", "TOc", "TOn", "TKc"))
    assert f"tile TOx×TOy×TOc×TOn×TKc {tile}" in app.status.value
    # every drawn point is a candidate that fits the memory
    assert max(app.points.data["footprint_kb"]) <= 8


def test_network_box_switches_lenet5_vgg16_and_an_onnx_path(tmp_path) -> None:
    """Layer names differ at every step: the options follow and each network is explored."""
    from model_files import ALEXNET, ALEXNET_NAMES, write_onnx

    path = write_onnx(tmp_path / "alex.onnx", ALEXNET, ALEXNET_NAMES, (3, 227, 227), batch=1)
    app = ui.tile_explorer(network="lenet5", batch=8)
    for network, first, count in (("vgg16", "conv1_1", 16), (str(path), "conv1", 8),
                                  ("lenet5", "conv1", 4)):
        app.network.value = network
        assert app.layer.value == first and len(app.layer.options) == count, network
        assert "candidate mappings fit" in app.status.value, app.status.value
        assert set(app.points.data["layer"]) == {first}


def test_traffic_explorer_shows_progress_and_whole_labels() -> None:
    app = ui.traffic_explorer(network="lenet5", memory_kb=(1, 16))
    assert app.progress.max == 2 and app.progress.value == 2  # lenet5's 2 conv layers done
    assert app.progress.layout.display == "none"  # hidden once done
    for control in (app.elem_bytes, app.psum_bytes, app.memory, app.layer):
        assert control.style.description_width == "110px"
    assert app.memory.label == "1 KB" and app.psum_bytes.label == "4 B"
    assert "<th>1 KB</th>" in app.summary.value and "e+" not in app.summary.value


def test_network_switch_shows_a_status_line_while_it_works() -> None:
    """The status line says what runs before a switch's long work, then the result."""
    app = _app()
    seen: list[str] = []
    app.status.observe(lambda change: seen.append(change["new"]), names="value")
    app.network.value = "cifar10_quick"
    assert any("loading cifar10_quick" in s for s in seen)
    assert any("pricing the candidate tiles of conv1" in s for s in seen)
    assert "candidate mappings fit" in seen[-1]


def test_platform_panel_opens_a_preset_with_levels() -> None:
    """A preset's whole memory is rows of widgets, DRAM first; the single-level names the apps
    set are those rows' widgets (the platform's rule: levels[1] is the local memory)."""
    panel = ui.PlatformPanel("seed001_3level")
    assert [row.name.value for row in panel.rows] == ["DRAM", "SRAM", "RF"]
    plat = panel.platform()
    assert plat.has_levels and plat.local_mem_bytes == 256 * 1024
    assert panel.fields["local_mem_bytes"] is panel.rows[1].capacity
    panel.fields["local_mem_bytes"].value = 128 * 1024
    edited = panel.platform()
    assert edited.hierarchy_doc["levels"][1]["capacity"] == 128 * 1024
    panel.rows[2].capacity.value = 512
    assert panel.platform().memory.levels[2].capacity == 512
    panel.preset.value = "idsp"
    assert not panel.platform().has_levels and len(panel.rows) == 2


def test_platform_panel_gives_back_every_preset_unchanged() -> None:
    for name in platforms.list_platforms():
        assert ui.PlatformPanel(name).platform() == platforms.load_platform(name), name


def test_platform_panel_takes_a_file_or_a_platform_and_size_sliders(tmp_path) -> None:
    """A platform file or object is listed beside the presets as given and read back as it
    is (a level's area, not shown, kept); chosen again after a preset, it is back. With
    `capacity_steps` the on-chip capacities are sliders over powers of two plus the level's
    own size, their values bytes."""
    doc = platforms.load_platform("seed001_3level").model_dump()
    doc["name"], doc["memory"]["levels"][1]["capacity"] = "mine", 96 * 1024  # not 2^k
    doc["memory"]["levels"][2]["area_mm2_per_kb"] = 0.02
    mine = platforms.Platform.model_validate(doc)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({  # as a file writes banks and the unroll: mappings
        **doc, "memory": {**doc["memory"], "levels": [lvl.doc() for lvl in mine.memory.levels]},
        "datapath": {**doc["datapath"], "unroll": dict(mine.datapath.unroll)}},
        allow_unicode=True))
    for given in (mine, str(path)):
        panel = ui.PlatformPanel(given, capacity_steps=(8, 24))
        assert panel.preset.value == "mine (given)" and panel.platform() == mine
        sizes = panel.rows[1].capacity
        assert isinstance(sizes, widgets.SelectionSlider) and sizes.value == 96 * 1024
        assert sizes.label == "96 KB"
        assert [v for _, v in sizes.options] == sorted({1 << k for k in range(8, 25)}
                                                       | {96 * 1024})
        sizes.value = 1 << 15
        assert panel.platform().memory.levels[1].capacity == 1 << 15
        panel.preset.value = "idsp"
        panel.preset.value = "mine (given)"
        assert panel.platform() == mine


def test_platform_panel_adds_and_removes_levels_and_edits_every_part() -> None:
    """idsp with a 512 B register file added inside its 128 KB: a three-level platform the
    hierarchy plan reads; DMA, cluster and datapath edits reach their parts; an inner level
    larger than the one outside it is one line naming the field, the last platform kept."""
    panel = ui.PlatformPanel("idsp")
    seen = []
    panel.on_change(lambda: seen.append(1))
    panel.add_level.click()
    panel.rows[2].capacity.value = 512
    panel.rows[2].name.value = "RF"
    panel.fields["cores"].value = 4
    panel.parts["dma"]["channels"].value = 2
    panel.parts["cluster"]["static_pj_per_cycle"].value = 5.0
    plat = panel.platform()
    assert [(lv.name, lv.capacity) for lv in plat.memory.levels] == [
        ("DRAM", None), ("local", 131072), ("RF", 512)]
    assert (plat.cores, plat.dma_channels, plat.static_pj_per_cycle) == (4, 2, 5.0)
    assert plat.has_levels and len(seen) >= 5
    panel.rows[2].capacity.value = 1 << 20
    with pytest.raises(WorkbenchError) as info:
        panel.platform()
    assert "memory.levels[2].capacity: capacities must not increase inwards" in str(info.value)
    assert "\n" not in panel.message.value
    panel.remove_level.click()
    panel.remove_level.click()  # DRAM and the local memory stay
    assert len(panel.platform().memory.levels) == 2
