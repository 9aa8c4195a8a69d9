"""The multi-core app driven from pytest without a browser (every control updates the bokeh
sources as `explore.cores` computes), and the seed 004 / seed 001 statements of notebook 10,
each checked against numbers computed here from the layers' sizes and the bus formula."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest
from bokeh.models import ColumnDataSource, Range1d

from workbench import layers, platforms, tiling, ui, viz
from workbench.errors import WorkbenchError
from workbench.explore import cores
from workbench.layers import ConvLayer
from workbench.tiling import partition


def _app(**kwargs) -> ui.CoresExplorer:
    args = {"network": "lenet5", "platform": "shave", "cores": 4, "layer": "conv2"} | kwargs
    return ui.cores_explorer(**args)


def _line(options: pd.DataFrame, split: str) -> tuple[list[int], list[float]]:
    """The speed-up line of a split computed from a split_options table: its rows plus the
    one-core row."""
    rows = options[(options["split"] == split) | (options["cores"] == 1)]
    rows = rows.sort_values("cores")
    return rows["cores"].tolist(), rows["speedup"].tolist()


def _assert_shows(app: ui.CoresExplorer, plat: platforms.Platform, layer: str,
                  objective: str) -> None:
    """Every source equals a direct engine computation on `plat`."""
    net = app.net
    lay = next(x for x in net.tiled_layers() if x.name == layer)
    options = cores.split_options(lay, plat, objective)
    assert app.platform == plat
    for split in partition.SPLITS:
        ks, speedups = _line(options, split)
        if len(ks) > 1:
            assert app.lines[split].data["cores"] == ks
            assert app.lines[split].data["speedup"] == pytest.approx(speedups, rel=1e-12)
        else:  # the split cannot use two cores: no line
            assert app.lines[split].data["cores"] == []
    assert app.ideal.data["cores"] == list(range(1, plat.cores + 1))
    chosen = cores.network_cores(net.tiled_layers(), plat, objective)
    assert app.chosen_source.data["layer"] == chosen["layer"].tolist()
    assert app.chosen_source.data["cores"] == chosen["cores"].tolist()
    assert app.chosen_source.data["split"] == chosen["split"].tolist()
    assert app.chosen_source.data["bound"] == chosen["bound"].tolist()
    assert app.chosen_source.data["cycles"] == pytest.approx(chosen["cycles"].tolist())
    data = app.comparison_source.data
    for lay_ in net.tiled_layers():
        for broadcast in (False, True):
            on = plat.replace(dma_broadcast=broadcast)
            splits = [s for s in ("oc", "xy")
                      if partition.max_cores(lay_, s, plat.cores) == plat.cores]
            got = cores.split_options(lay_, on, objective, splits=splits, cores=[plat.cores]) \
                if splits and plat.cores > 1 else pd.DataFrame(columns=["split"])
            for split in ("oc", "xy"):
                i = data["x"].index((lay_.name, viz.core_plots.variant_label(split, broadcast)))
                row = got[got["split"] == split]
                if row.empty:
                    assert np.isnan(data["traffic_m"][i])
                else:
                    assert data["traffic_m"][i] == pytest.approx(row["ext_accesses"].iloc[0]
                                                                 / 1e6)
                    assert data["cycles"][i] == pytest.approx(row["cycles"].iloc[0])
    text = html.unescape(app.summary.value)
    r = chosen[chosen["layer"] == layer].iloc[0]
    assert f"<b>{layer}</b>" in text and f"over <b>{int(r['cores'])}</b> of {plat.cores}" in text
    assert f"best by <b>{objective}</b>" in text


def test_initial_view_equals_the_engine() -> None:
    app = _app()
    _assert_shows(app, platforms.load_platform("shave", cores=4), "conv2", "cycles")
    assert app.chosen_figure.x_range.factors == ["conv1", "conv2", "fc3", "fc4"]
    assert "lenet5, batch 1 on shave: 4 cores" in app.status.value
    assert app.view is app.view  # built once: one bokeh document


def test_cores_broadcast_layer_and_objective_controls() -> None:
    app = _app()
    before = list(app.lines["oc"].data["speedup"])
    app.cores.value = 6
    assert app.lines["oc"].data["speedup"] != before and app.lines["oc"].data["cores"][-1] == 6
    # a fixed range: BokehJS recomputes a DataRange1d's end from the one it was first drawn
    # with, whatever Python sets later (4 cores to 12 kept the axis at 13.5)
    assert isinstance(app.chosen_figure.y_range, Range1d)
    assert app.chosen_figure.y_range.end == 7.5
    _assert_shows(app, platforms.load_platform("shave", cores=6), "conv2", "cycles")
    traffic = list(app.chosen_source.data["traffic_m"])
    app.dma_broadcast.value = True
    assert app.chosen_source.data["traffic_m"] != traffic
    plat = platforms.load_platform("shave", cores=6, dma_broadcast=True)
    _assert_shows(app, plat, "conv2", "cycles")
    app.layer.value = "fc3"  # one output row: only K (and N on a batch) can split it
    assert app.lines["xy"].data["cores"] == []
    _assert_shows(app, plat, "fc3", "cycles")
    app.objective.value = "accesses"
    _assert_shows(app, plat, "fc3", "accesses")
    app.dma_channels.value = 1
    app.bus.value = 8.0
    _assert_shows(app, plat.replace(dma_channels=1, bus_elems_per_cycle=8.0), "fc3", "accesses")


def test_going_back_to_a_setting_does_not_call_the_engine(monkeypatch) -> None:
    app = _app()
    app.cores.value = 3
    chosen = app.chosen_source.data["cores"]

    def no_engine(*args, **kwargs):
        raise AssertionError("a memoized setting must not call the engine")

    monkeypatch.setattr(cores, "network_cores", no_engine)
    monkeypatch.setattr(cores, "split_options", no_engine)
    app.cores.value = 4
    app.cores.value = 3
    monkeypatch.undo()
    assert app.chosen_source.data["cores"] == chosen


def test_network_change_redraws_its_layers() -> None:
    app = _app()
    app.network.value = "cifar10_quick"
    names = ["conv1", "conv2", "conv3", "ip1", "ip2"]
    assert list(app.layer.options) == names and app.chosen_source.data["layer"] == names
    assert app.traffic_figure.x_range.factors == viz.comparison_factors(names)
    _assert_shows(app, platforms.load_platform("shave", cores=4), "conv2", "cycles")


def test_comparison_stays_readable_for_many_layers() -> None:
    """MobileNetV2's 53 conv/fc layers: 212 bars of at least BAR_PX (the rotated variant labels
    LABEL_PITCH_PX apart or more), the layer names vertical and the figure taller by them; a
    few short names keep the default size, horizontal."""
    from workbench.viz import core_plots as cp
    from workbench.viz.common import LABEL_PITCH_PX

    names = [layer.name for layer in layers.load_network("mobilenet_v2").tiled_layers()]
    assert len(names) == 53
    wide = cp.comparison_traffic(ColumnDataSource(cp.comparison_data(pd.DataFrame(), names)))
    assert (wide.width - cp.COMPARISON_MARGIN_PX) / (4 * 53) >= LABEL_PITCH_PX
    assert wide.xaxis[0].group_label_orientation == pytest.approx(np.pi / 2)
    assert wide.height > cp.COMPARISON_HEIGHT
    app = _app()
    app.network.value = "cifar10_quick"
    for fig in (app.traffic_figure, app.cycles_figure):
        assert (fig.width, fig.height) == (cp.COMPARISON_WIDTH, cp.COMPARISON_HEIGHT)
        assert fig.xaxis[0].group_label_orientation == 0.0
    cp.fit_comparison(app.cycles_figure, names)  # what a network change to MobileNetV2 sets
    assert (app.cycles_figure.width, app.cycles_figure.height) == (wide.width, wide.height)


def test_bad_input_is_one_line() -> None:
    app = _app()
    shown = dict(app.chosen_source.data)
    app.cores.value = 0
    assert "cores: must be a whole number in 1..65,536" in app.status.value
    assert "\n" not in app.status.value
    assert app.chosen_source.data == shown  # the last valid platform stays on screen
    app.network.value = "no_such_net"
    assert "unknown" in app.status.value.lower() and "\n" not in app.status.value
    with pytest.raises(WorkbenchError, match="no conv/fc layer 'pool1'"):
        _app(layer="pool1")


def test_plot_data_shapes() -> None:
    options = cores.split_options(layers.load_network("lenet5").tiled_layers()[1],
                                  platforms.load_platform("shave", cores=3))
    for split in ("oc", "xy"):  # every line starts at the one-core row
        data = viz.speedup_data(options, split)
        assert data["cores"] == [1, 2, 3] and data["speedup"][0] == 1.0
    assert viz.speedup_data(options, "on")["cores"] == []  # batch 1: no N line
    assert viz.ideal_data(3) == {"cores": [1, 2, 3], "speedup": [1.0, 2.0, 3.0]}
    empty = viz.comparison_data(pd.DataFrame(), ["a"])
    assert empty["missing"] == ["n/a"] * 4  # an empty slot says so, in both figures
    for fig in viz.comparison_plots(pd.DataFrame(), ["a"]).children:
        assert fig.select_one({"name": "missing"}).glyph.text == "missing"
    data = _app().comparison_source.data
    assert [m == "n/a" for m in data["missing"]] == [bool(np.isnan(t))
                                                    for t in data["traffic_m"]]
    assert "n/a" in data["missing"] and "" in data["missing"]
    assert empty["x"] == [("a", "K · bcast off"), ("a", "K · bcast on"),
                          ("a", "XY · bcast off"), ("a", "XY · bcast on")]
    assert all(np.isnan(v) for v in empty["traffic_m"])
    table = ui.split_comparison(layers.load_network("lenet5").tiled_layers()[:2],
                                platforms.load_platform("shave", cores=2), "accesses")
    data = viz.comparison_data(table, ["conv1", "conv2"])
    for layer in ("conv1", "conv2"):  # each layer scaled by its largest bar, parts stacked
        i = [j for j, x in enumerate(data["layer"]) if x == layer]
        assert max(data["traffic_rel"][j] for j in i) == pytest.approx(1.0)
        assert max(data["cycles_rel"][j] for j in i) == pytest.approx(1.0)
        for j in i:
            assert data["in_rel"][j] + data["w_rel"][j] + data["out_rel"][j] == \
                pytest.approx(data["traffic_rel"][j])


# seed 004 §6.2.2 on 12 SHAVEs (notebook 10, first part) --------------------------------------
SHAVE = platforms.load_platform("shave")


def test_tables_read_as_the_plots() -> None:
    """Notebook 10's tables name splits and broadcast as its plots do ('K (output maps)',
    'XY · bcast on'), give shares in words and the numbers the engine's rows hold."""
    app = _app(cores=4)
    table = viz.chosen_table(app.chosen)
    assert table["layer"].tolist() == app.chosen["layer"].tolist()
    assert set(table["split"]) <= {"K (output maps)", "XY (image rows)", "N (batch)",
                                   "G (groups)"}
    for shown, r in zip(table.itertuples(), app.chosen.itertuples(), strict=True):
        parts = [f"{k} × {sched} {'×'.join(map(str, tile))}" for k, sched, tile in r.shares]
        assert shown.shares == "; ".join(parts)
        assert int(shown.cycles.replace(",", "")) == round(r.cycles)
    assert viz.shares_text(((8, "inter_kc", (9, 27, 11, 1, 8)),
                            (4, "inter_kc", (9, 27, 10, 1, 8)))) == \
        "8 × inter_kc 9×27×11×1×8; 4 × inter_kc 9×27×10×1×8"
    net = layers.load_network("lenet5")
    comparison = ui.split_comparison(net.tiled_layers(), app.platform, "accesses")
    wide = viz.comparison_table(comparison)
    assert wide.index.tolist() == [lay.name for lay in net.tiled_layers()]
    assert list(wide.columns)[:2] == ["bus traffic, K · bcast off", "bus traffic, XY · bcast off"]
    assert not any("True" in c or "False" in c or "oc" in c for c in wide.columns)
    for r in comparison.itertuples():
        label = viz.core_plots.variant_label(r.split, bool(r.broadcast))
        assert wide.loc[r.layer, f"cycles, {label}"].replace(",", "") == f"{r.cycles:.0f}"


def test_the_speedup_legend_lists_only_the_splits_drawn() -> None:
    """At batch 1 no layer has an N line: its legend entry is hidden (it stood with nothing
    drawn), and shown again for a batch of 4."""
    app = _app()
    items = {item.label.value: item for item in app.speedup_figure.legend[0].items}
    assert not items["N (batch)"].visible and items["K (output maps)"].visible
    app.batch.value = 4
    assert app.lines["on"].data["cores"] and items["N (batch)"].visible


def test_seed004_conv_is_compute_bound_and_scales_near_linearly() -> None:
    conv = ConvLayer("seed004_conv", Ox=64, Oy=64, Oc=128, Kx=5, Ky=5, Kc=32, Px=2, Py=2)
    options = cores.split_options(conv, SHAVE)
    best = options.groupby("cores")["speedup"].max()
    assert (options["bound"] == "compute").all()
    assert best[12] >= 11 and all(best[k] >= 0.9 * k for k in range(1, 13))


def test_seed004_fc_is_io_bound_and_flattens_at_the_bus_floor() -> None:
    fc = ConvLayer.fc("seed004_fc", 10240, 1000)
    options = cores.split_options(fc, SHAVE)
    assert set(options["split"]) == {"oc"} and (options["bound"] == "I/O").all()
    floor = 10240 * 1000 / SHAVE.bus_elems_per_cycle  # every weight crosses the bus once
    at12 = options.set_index("cores").loc[12]
    assert floor <= at12["cycles"] <= 1.15 * floor
    assert options["speedup"].max() < 2.0
    assert at12["speedup"] <= 1.1 * options.set_index("cores").loc[6, "speedup"]


# seed 001 §3.3 / §5.3: K vs XY on 8 SHAVEs (notebook 10, second part) ------------------------
K8 = 8
MULTI = platforms.load_platform("shave", cores=K8)


@pytest.fixture(scope="module")
def yang() -> tuple[dict[str, ConvLayer], pd.DataFrame]:
    picked = layers.load_network("yang_benchmarks").tiled_layers()
    table = ui.split_comparison(picked, MULTI, "accesses")
    return {lay.name: lay for lay in picked}, table


def _sizes(lay: ConvLayer) -> dict[str, int]:
    """Input, weight, output elements and the input the K8 XY bands read (halos counted),
    from the layer's dimensions (table 4: stride 1, no padding)."""
    assert (lay.Sx, lay.Sy, lay.Px, lay.Py, lay.On, lay.groups) == (1, 1, 0, 0, 1, 1)
    ix, iy = lay.Ox + lay.Kx - 1, lay.Oy + lay.Ky - 1
    return {"I": lay.Kc * ix * iy, "W": lay.Oc * lay.Kc * lay.Kx * lay.Ky,
            "O": lay.Oc * lay.Ox * lay.Oy,
            "I_bands": lay.Kc * ix * (lay.Oy + K8 * (lay.Ky - 1))}


def _n_shapes(extent: int) -> int:
    """Share shapes of an extent over K8 cores: one when it divides evenly, else two."""
    return 1 if extent % K8 == 0 else 2


def _floors(lay: ConvLayer, broadcast: bool) -> dict[str, int]:
    """Least possible bus traffic of each split: every core reads the shared array whole
    (once per share shape when the DMA broadcasts), the private arrays once."""
    s = _sizes(lay)
    k_in = _n_shapes(lay.Oc) if broadcast else K8
    xy_w = _n_shapes(lay.Oy) if broadcast else K8
    return {"oc": k_in * s["I"] + s["W"] + s["O"], "xy": xy_w * s["W"] + s["I_bands"] + s["O"]}


def _traffic(table: pd.DataFrame, name: str, broadcast: bool) -> dict[str, int]:
    rows = table[(table["layer"] == name) & (table["broadcast"] == broadcast)]
    return dict(zip(rows["split"], rows["ext_accesses"].astype(int), strict=True))


CONVS = ["conv1", "conv2", "conv3", "conv4", "conv5"]


def test_seed001_platform_choice() -> None:
    """8 SHAVEs: no energy figures (compare bus traffic); 8 divides every conv's output maps
    and the rows of conv1, conv3 and conv4 (not conv2's 375 nor conv5's 28)."""
    assert MULTI.core_pj_per_cycle == MULTI.ext_access_pj == MULTI.local_access_pj == 0
    net = {x.name: x for x in layers.load_network("yang_benchmarks").tiled_layers()}
    assert all(net[n].Oc % K8 == 0 for n in CONVS)
    assert [n for n in CONVS if net[n].Oy % K8] == ["conv2", "conv5"]


def test_seed001_the_bus_traffic_is_the_formula_on_the_chosen_tiles(yang) -> None:
    net, table = yang
    for r in table.itertuples():
        parts = partition.shares(net[r.layer], r.split, K8)
        per_share = []
        for share, (n, schedule, tile) in zip(parts, r.shares, strict=True):
            c = tiling.counts(share.layer, tiling.Tile(*tile), schedule)
            assert n == share.cores
            per_share.append((n, c.in_accesses, c.w_accesses, c.out_accesses))
        bus = partition.bus_accesses(r.split, per_share, bool(r.broadcast))
        assert (bus["in"], bus["w"], bus["out"]) == (r.in_accesses, r.w_accesses,
                                                     r.out_accesses)
        assert r.ext_accesses >= _floors(net[r.layer], bool(r.broadcast))[r.split]


def test_seed001_without_broadcast_the_split_sharing_the_smaller_array_wins(yang) -> None:
    net, table = yang
    for name in ("conv2", "conv3", "conv4", "conv5"):
        s = _sizes(net[name])
        expected = "xy" if s["I"] > s["W"] else "oc"  # share (copy k times) the smaller one
        traffic = _traffic(table, name, False)
        winner = min(traffic, key=traffic.get)
        assert winner == expected, name
        loser = "oc" if winner == "xy" else "xy"
        if name != "conv4":  # decided by the floors: no tiling of the loser could beat it
            assert traffic[winner] < _floors(net[name], False)[loser], name
    assert [n for n in CONVS[1:] if _sizes(net[n])["I"] > _sizes(net[n])["W"]] == \
        ["conv2", "conv4"]
    s4 = _sizes(net["conv4"])
    assert round(s4["I"] / s4["W"], 2) == 1.46
    s1 = _sizes(net["conv1"])  # each array over 180 times a SHAVE's local memory
    assert min(s1["I"], s1["W"]) * MULTI.elem_bytes > 180 * MULTI.local_mem_bytes
    traffic = _traffic(table, "conv1", False)  # refetching dominates: a tie
    assert traffic["oc"] == pytest.approx(traffic["xy"], rel=0.01)
    assert min(traffic.values()) >= 6 * max(_floors(net["conv1"], False).values())


def test_seed001_with_broadcast_k_wins_every_conv_layer(yang) -> None:
    net, table = yang
    for name in CONVS:
        traffic = _traffic(table, name, True)
        floors = _floors(net[name], True)
        assert traffic["oc"] < traffic["xy"], name
        if name in ("conv2", "conv3", "conv5"):  # below XY's floor
            assert traffic["oc"] < floors["xy"], name
        else:  # conv1, conv4: both splits refetch well above their floors
            assert traffic["oc"] > 1.2 * floors["oc"] and traffic["xy"] > 1.2 * floors["xy"]
        off = _traffic(table, name, False)
        assert traffic["oc"] < off["oc"] and traffic["xy"] < off["xy"]  # both drop


def test_seed001_cycles_follow_the_largest_share(yang) -> None:
    net, table = yang
    conv = table[table["layer"].isin(CONVS)]
    assert (conv["bound"] == "compute").all()
    for name in CONVS:
        lay = net[name]
        share = {"oc": -(-lay.Oc // K8) / lay.Oc, "xy": -(-lay.Oy // K8) / lay.Oy}
        for broadcast in (False, True):
            rows = conv[(conv["layer"] == name) & (conv["broadcast"] == broadcast)]
            cyc = dict(zip(rows["split"], rows["cycles"], strict=True))
            assert cyc["xy"] / cyc["oc"] == pytest.approx(share["xy"] / share["oc"], abs=0.03)
    rows = conv[conv["layer"] == "conv5"]
    assert (rows[rows["split"] == "xy"]["cycles"].to_numpy()
            >= 1.1 * rows[rows["split"] == "oc"]["cycles"].to_numpy()).all()


def test_seed001_fc_layers_split_only_by_output_maps(yang) -> None:
    net, table = yang
    for name in ("fc1", "fc2"):
        rows = table[table["layer"] == name]
        assert set(rows["split"]) == {"oc"} and (rows["bound"] == "I/O").all()
        off, on = _traffic(table, name, False)["oc"], _traffic(table, name, True)["oc"]
        saved = (K8 - _n_shapes(net[name].Oc)) * net[name].Kc  # the extra input copies
        assert off - on == saved and saved < 0.06 * off
