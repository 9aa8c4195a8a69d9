"""Readable output: human units, no scientific notation, labelled tiles, C×H×W shapes, n/a
energy, one-point tooltips, layer axes that stay readable at 60 layers, zoomed rooflines and a
report that opens with a summary."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from bokeh.models import (
    CategoricalAxis,
    ColumnDataSource,
    CustomJSTickFormatter,
    DataRange1d,
    HoverTool,
    Legend,
    Line,
    LogAxis,
    Scatter,
)

from workbench import explore, layers, platforms, report, simd, viz
from workbench.viz import common, units

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


# units ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "text"), [
    (0, "0 B"), (512, "512 B"), (1536, "1.5 KB"), (65536, "64 KB"), (3 * 2**20 / 4, "768 KB"),
    (2.25 * 2**20, "2.25 MB"), (5 * 2**30, "5 GB")])
def test_bytes(value: float, text: str) -> None:
    assert units.fmt_bytes(value) == text


def test_traffic_is_in_decimal_mb_as_the_traffic_command_and_sweeps_say() -> None:
    """Traffic volumes: 10⁶ B per MB (memory sizes stay binary): explore's totals line gave
    1,663,914 16-bit accesses as '3.17 MB' (MiB) while `workbench traffic` and a sweep's
    traffic_mb give 10⁶-byte MB."""
    assert units.fmt_traffic(3_327_828) == "3.33 MB"
    assert units.fmt_traffic(float("nan")) == units.NA
    idsp = platforms.load_platform("idsp")
    totals = {"cycles": 441_273, "time_ms": 0.981, "throughput_gops": 25.0,
              "energy_pj": 1.11e9, "ext_accesses": 1_663_914, "dma_transfers": 279}
    assert "1,663,914 external accesses (3.33 MB)" in report.summary.totals_text(totals, idsp)


@pytest.mark.parametrize(("pj", "text"), [
    (0, "0 pJ"), (850, "850 pJ"), (4500, "4.50 nJ"), (1.2345e7, "12.3 µJ"),
    (1.586742774e9, "1.59 mJ"), (2.5e12, "2.50 J"), (1.145e15, "1,145 J")])
def test_energy(pj: float, text: str) -> None:
    assert units.fmt_energy(pj) == text
    assert units.fmt_energy(pj, known=False) == "n/a"


@pytest.mark.parametrize(("ms", "text"), [(6.94062, "6.94 ms"), (0.45, "450 µs"),
                                          (1234.5, "1.23 s"), (0.00008, "80.0 ns")])
def test_time(ms: float, text: str) -> None:
    assert units.fmt_ms(ms) == text


def test_numbers_never_use_an_exponent() -> None:
    assert units.fmt_number(1.145e12) == "1,145,000,000,000"
    assert units.fmt_count(8693) == "8,693" and units.fmt_count(2.5e6) == "2,500,000"
    assert units.fmt_number(0.00123) == "0.00123" and units.fmt_number(12.345) == "12.3"
    assert units.fmt_number(float("nan")) == "n/a" and units.fmt_gops(28.29) == "28.3 GOps/s"
    for x in np.geomspace(1e-7, 1e15, 60):
        assert not SCIENTIFIC.search(units.fmt_number(x)), x


def test_readable_table_converts_units_from_the_column_names() -> None:
    frame = pd.DataFrame({"layer": ["a", "b"], "footprint_bytes": [1536, 2**20],
                          "energy_pj": [1.2e7, 3e9], "time_ms": [0.5, 2000.0],
                          "memory_kb": [16, 1024], "cycles": [1_145_000_000_000, 8693],
                          "ratio": [2.5e-6, 123.456], "accuracy": [0.974, np.nan]})
    shown = units.readable(frame)
    assert list(shown.columns) == ["layer", "footprint", "energy", "time", "memory",
                                   "cycles", "ratio", "accuracy"]
    assert shown.iloc[0].tolist() == ["a", "1.5 KB", "12.0 µJ", "500 µs", "16 KB",
                                      "1,145,000,000,000", "0.00000250", "97.4%"]
    assert shown.iloc[1].tolist() == ["b", "1 MB", "3.00 mJ", "2.00 s", "1 MB", "8,693",
                                      "123", "n/a"]
    assert units.readable(frame, energy_known=False)["energy"].tolist() == ["n/a", "n/a"]
    # traffic volumes in decimal MB as every traffic summary ("0.0741 MB" for conv2's
    # 74,112 B read "72.4 KB" beside it); sizes stay binary
    moved = units.readable(pd.DataFrame({"traffic_bytes": [74_112, 1_690_000],
                                         "compulsory_bytes": [50_000, 1_000_000],
                                         "buffer_bytes": [74_112, 1_690_000]}))
    assert list(moved.columns) == ["traffic", "compulsory", "buffer"]
    assert moved["traffic"].tolist() == ["0.0741 MB", "1.69 MB"]
    assert moved["compulsory"].tolist() == ["0.0500 MB", "1.00 MB"]
    assert moved["buffer"].tolist() == ["72.4 KB", "1.61 MB"]
    pivot = pd.DataFrame({"cache_mb": [8.3, 4.89]},  # a pivot's index read as its column
                         index=pd.Index([16.0, 1024.0], name="memory_kb"))
    shown = units.readable(pivot)
    assert shown.index.name == "memory" and shown.index.tolist() == ["16 KB", "1 MB"]
    counts = units.readable(pd.DataFrame({"x": [1.0, 2.0]},
                                         index=pd.Index([1.0, 12000.0], name="cores")))
    assert counts.index.tolist() == ["1", "12,000"]


def test_platform_without_energy_figures() -> None:
    assert not units.has_energy(platforms.load_platform("nve"))
    assert units.has_energy(platforms.load_platform("idsp"))
    assert units.has_energy(platforms.load_platform("nve", ext_access_pj=1.0))


def test_network_table_prints_shapes_in_the_files_order() -> None:
    net = layers.load_network("lenet5")
    table = units.network_table(net)
    conv2 = table.set_index("layer").loc["conv2"]
    assert conv2["input C×H×W"] == "32×14×14" and conv2["output C×H×W"] == "64×14×14"
    assert table.set_index("layer").loc["fc3", "input C×H×W"] == "3136×1×1"
    assert conv2["weight"] == "100 KB" and conv2["macs"] == "10,035,200"  # 51,200 × 2 B


# per-layer table, CLI and report text -------------------------------------------------------
@pytest.fixture(scope="module")
def nve_plan() -> tuple[pd.DataFrame, dict, platforms.Platform]:
    net = layers.load_network("lenet5", batch=8)
    plat = platforms.load_platform("nve")
    per_layer = explore.network_plan(net, plat)
    return per_layer, explore.network_totals(per_layer, plat), plat


def test_per_layer_table_names_tiles_and_says_na_for_unknown_energy(nve_plan) -> None:
    per_layer, totals, plat = nve_plan
    table = report.per_layer_table(per_layer, plat)
    header = "tile TOx×TOy×TOc×TOn×TKc / chunk"
    assert header in table.columns
    conv2 = per_layer.set_index("layer").loc["conv2"]
    tile = "×".join(str(int(conv2[d])) for d in ("TOx", "TOy", "TOc", "TOn", "TKc"))
    assert table.set_index("layer").loc["conv2", header] == tile
    assert set(table["energy"]) == {"n/a"}
    text = table.to_string() + report.totals_text(totals, plat)
    assert "energy n/a" in text and "0.000000" not in text and not SCIENTIFIC.search(text)
    assert f"{int(totals['cycles']):,} cycles" in text


def test_cli_explore_prints_units_tiles_and_na(tmp_path) -> None:
    import subprocess
    import sys

    page = tmp_path / "nve.html"
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "explore", "lenet5",
                          "--platform", "nve", "--batch", "8", "--html", str(page)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "tile TOx×TOy×TOc×TOn×TKc" in text and "energy n/a" in text
    assert "0.000000" not in text and not SCIENTIFIC.search(text)
    assert "bottlenecks: conv2" in text and "I/O-bound:" in text
    assert "energy n/a" in page.read_text() and not SCIENTIFIC.search(page.read_text())


def test_key_findings_name_time_energy_bottlenecks_and_io_bound_layers(nve_plan) -> None:
    per_layer, totals, plat = nve_plan
    found = report.key_findings(per_layer, totals, plat)
    assert list(found) == ["time", "energy", "bottlenecks", "I/O-bound", "DMA setup"]
    share = per_layer.set_index("layer")["cycles"] / per_layer["cycles"].sum()
    top = share.sort_values(ascending=False)
    assert found["bottlenecks"].startswith(f"{top.index[0]} ({top.iloc[0]:.0%})")
    assert found["energy"].startswith("n/a")
    io = per_layer.loc[per_layer["bound"] == "I/O", "layer"].tolist()
    assert io and all(name in found["I/O-bound"] for name in io)
    idsp = platforms.load_platform("idsp")
    plan = explore.network_plan(layers.load_network("lenet5", batch=8), idsp)
    found = report.key_findings(plan, explore.network_totals(plan, idsp), idsp)
    assert found["I/O-bound"].startswith("none") and "mJ" in found["energy"]


def test_transfer_causes_add_up_and_leave_nothing_unexplained() -> None:
    net = layers.load_network("lenet5", batch=8)
    for name in ("idsp", "nve"):
        plat = platforms.load_platform(name)
        causes = explore.network_mapping(net, plat)
        parts = causes[list(simd.TRANSFER_CAUSES)].sum(axis=1)
        assert parts.tolist() == causes["total"].tolist()
        assert "other" not in causes.columns
        assert (causes[list(simd.TRANSFER_CAUSES)] >= 0).all().all()


# plots ---------------------------------------------------------------------------------------
def _all_figures():
    """One of every figure factory the report and notebooks use, on lenet5."""
    net = layers.load_network("lenet5", batch=8)
    plat = platforms.load_platform("idsp")
    data = report.build("lenet5", "idsp", report.ReportSettings(batch=8, sweep_memory_kb=(4, 64)))
    per_layer = data.per_layer
    sol = data.solutions
    sweep_fig = viz.sweep_grid(data.sweep)
    return [viz.roofline(ColumnDataSource(viz.roofline_data(sol)), plat),
            viz.network_roofline(per_layer, plat),
            viz.network_breakdown(per_layer, "cycles"), viz.network_breakdown(per_layer, "energy"),
            viz.memory_footprint(net), *[f for f, *_ in sweep_fig.children],
            viz.transfer_breakdown(explore.network_mapping(net, plat))]


def test_every_numeric_axis_avoids_scientific_notation_and_tooltips_show_one_point() -> None:
    for fig in _all_figures():
        for axis in [*fig.xaxis, *fig.yaxis]:
            if not isinstance(axis, CategoricalAxis):
                assert isinstance(axis.formatter, CustomJSTickFormatter), fig.title.text
                assert "toLocaleString" in axis.formatter.code
        hovers = [t for t in fig.tools if isinstance(t, HoverTool)]
        assert hovers, fig.title.text
        assert all(t.limit == 1 and t.renderers not in ("auto", None) for t in hovers)


def test_legends_of_scattered_points_sit_beside_the_plot() -> None:
    """A legend inside the frame covers whatever lies in its corner: figures whose points
    scatter anywhere (layers on a roofline, arrays per layer) put it above or beside. The
    buffer sweeps' lines fall from the upper left, so their legend may stay top right."""
    for fig in _all_figures():
        points = [r for r in fig.renderers if isinstance(r.glyph, Scatter)]
        inside = [m for m in fig.center if isinstance(m, Legend)]
        if not inside:
            continue
        lines = [r for r in fig.renderers if isinstance(r.glyph, Line)]
        assert points and lines and len(points) == len(lines), fig.title.text
        assert inside[0].location == "top_right", fig.title.text
        for line in lines:  # falling: the upper right stays clear above every line
            data = line.data_source.data
            ys = [y for _, y in sorted(zip(data["x"], data["y"], strict=True))]
            assert all(b <= a for a, b in zip(ys, ys[1:], strict=False)), fig.title.text
            assert ys[-1] < ys[0], fig.title.text


def _series_figures():
    """The figures drawing several series over the same x values, with a legend click that
    hides a series: traffic per model (lenet5 on idsp at four sizes), and the buffer sweeps."""
    net = layers.load_network("lenet5", batch=8)
    table = explore.traffic_table(net.tiled_layers(), [4096, 16384, 65536, 262144])
    data = report.build("lenet5", "idsp",
                        report.ReportSettings(batch=8, sweep_memory_kb=(1, 4, 64, 1024)))
    return [viz.traffic_curves(ColumnDataSource(viz.traffic_curve_data(table))),
            *[f for f, *_ in viz.sweep_grid(data.sweep).children]]


def _series_key(renderer) -> tuple[int, str]:
    return id(renderer.data_source), renderer.glyph.y


def test_a_legend_click_hides_a_series_whole_and_equal_series_stay_visible() -> None:
    """Every renderer drawing a legend entry's series (its line and its points) is in that
    entry, so a click hides them all (the points stayed). Series drawn earlier are wider and
    larger than every later one, so a later series equal to an earlier one leaves the earlier
    colour showing (seed000's traffic equals dataflow's on lenet5: its line was hidden)."""
    for fig in _series_figures():
        legend = fig.legend[0]
        assert legend.click_policy == "hide", fig.title.text
        drawn = [r for r in fig.renderers if isinstance(r.glyph, (Line, Scatter))]
        for item in legend.items:
            keys = {_series_key(r) for r in item.renderers}
            assert {id(r) for r in drawn if _series_key(r) in keys} == \
                {id(r) for r in item.renderers}, (fig.title.text, item.label)
        series = [item for item in legend.items
                  if any(isinstance(r.glyph, Scatter) for r in item.renderers)]
        assert len(series) >= 4, fig.title.text
        widths = [next(r.glyph.line_width for r in item.renderers if isinstance(r.glyph, Line))
                  for item in series]
        sizes = [next(r.glyph.size for r in item.renderers if isinstance(r.glyph, Scatter))
                 for item in series]
        assert all(a > b for a, b in zip(widths, widths[1:], strict=False)), fig.title.text
        assert all(a > b for a, b in zip(sizes, sizes[1:], strict=False)), fig.title.text
        assert min(widths) >= 1.5 and min(sizes) >= 5, fig.title.text


def test_simd_plots_show_the_best_plans_and_the_lanes_text() -> None:
    """conv1's plans take 17,920 to 1.45 M cycles: on a log axis from a power of ten below the
    fewest, every bar is at least a tenth of the axis high (linear, the best were slivers); the
    transfer breakdown leaves room above its highest bar for the lanes text (it was cut)."""
    from workbench import tiling

    net = layers.load_network("lenet5", batch=8)
    plat = platforms.load_platform("idsp")
    plans = simd.plan_table(net["conv1"], tiling.Tile(28, 28, 32, 1, 1), plat)
    fig = viz.plan_overview(plans)
    assert isinstance(fig.yaxis[0], LogAxis)
    bottom = fig.renderers[0].glyph.bottom
    assert bottom == fig.y_range.start and bottom <= plans["cycles"].min() < 10 * bottom
    top = math.log10(plans["cycles"].max() * 1.1)
    assert all(math.log10(c / bottom) >= 0.1 * (top - math.log10(bottom))
               for c in plans["cycles"])
    causes = explore.network_mapping(net, plat)
    breakdown = viz.transfer_breakdown(causes)
    assert breakdown.y_range.end >= 1.1 * causes["total"].max()


def test_tick_formatter_code_on_sample_ticks() -> None:
    """The JavaScript of the tick formatter, run by node when present (else skipped)."""
    import shutil
    import subprocess

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no node to run the formatter's JavaScript")
    cases = {(0, 250000, 500000, 750000): ["0", "250,000", "500,000", "750,000"],
             (0, 500000, 1000000, 2500000): ["0", "0.5 M", "1 M", "2.5 M"],
             (0, 1250000, 2500000): ["0", "1.25 M", "2.5 M"],
             (2.302, 2.304, 2.306): ["2.302", "2.304", "2.306"],  # close ticks stay distinct
             (0.001, 0.01, 0.1, 1, 10): ["0.001", "0.01", "0.1", "1", "10"],  # a log axis
             (1e11, 1e12, 1e13): ["0.1 T", "1 T", "10 T"],
             (2e7, 4e7, 6e7): ["20 M", "40 M", "60 M"], (1.2e9, 1.4e9): ["1.2 G", "1.4 G"],
             (20, 40, 60): ["20", "40", "60"], (2.5e-6, 5e-6): ["0.0000025", "0.000005"]}
    for ticks, want in cases.items():
        script = ("const f = (tick, index, ticks) => {" + units.NUMBER_TICKS_JS + "};"
                  f"const t = {list(ticks)};"
                  "console.log(JSON.stringify(t.map((x, i) => f(x, i, t))));")
        out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
        assert json.loads(out.stdout) == want, ticks


@pytest.mark.parametrize("n", [4, 16, 37, 60])
def test_layer_labels_never_overlap(n: int) -> None:
    names = [f"conv{i}_{j}" for i in range(1, 13) for j in range(1, 6)][:n]
    plan = common.plan_labels(names, 560)
    pitch = 560 / n
    if plan.orientation == 0:  # side by side: each label fits its slot
        assert pitch >= common.CHAR_PX * max(map(len, names))
    else:  # vertical: shown labels at least one text line apart
        assert plan.orientation == pytest.approx(math.pi / 2)
        assert pitch * plan.step >= common.LABEL_PITCH_PX
    assert (n <= 5) == (plan.orientation == 0)
    assert (plan.step > 1) == (pitch < common.LABEL_PITCH_PX)


def test_sixty_layer_breakdown_turns_horizontal_with_every_name_readable() -> None:
    names = [f"layer{i:02d}" for i in range(60)]
    cols = {"layer": names, **{f"cycles_{p}": np.arange(60.0) + 1 for p in
                               ("compute", "dma_setup", "bus_stall", "prolog_epilog")}}
    fig = viz.network_breakdown(pd.DataFrame(cols), "cycles")
    assert list(fig.y_range.factors) == names[::-1]  # first layer on top
    assert fig.height >= 60 * common.LABEL_PITCH_PX + 100
    few = viz.network_breakdown(pd.DataFrame({k: v[:16] for k, v in cols.items()}), "cycles")
    assert list(few.x_range.factors) == names[:16]
    assert few.xaxis[0].major_label_orientation == pytest.approx(math.pi / 2)


def test_a_long_network_s_footprint_runs_down_the_page() -> None:
    """mobilenet_v2's 99 layers: one row each, every name shown, a KB scale above and below
    (turned names under the plot left ~100 px of data); lenet5's 10 stay across."""
    net = layers.load_network("mobilenet_v2")
    fig = viz.memory_footprint(net)
    names = net.summary(2)["layer"].tolist()
    assert list(fig.y_range.factors) == names[::-1] and len(names) >= 99
    assert fig.height >= 99 * common.LABEL_PITCH_PX + 100
    assert len(fig.xaxis) == 2 and all(isinstance(a, LogAxis) for a in fig.xaxis)
    assert all(r.glyph.y == "layer" for r in fig.renderers)
    few = viz.memory_footprint(layers.load_network("lenet5"))
    assert len(few.x_range.factors) == 10 and all(r.glyph.x == "layer" for r in few.renderers)


def test_design_space_breakdown_thins_labels_for_vgg16() -> None:
    from workbench import ui

    app = ui.design_space(network="vgg16", batch=1, compute=False)
    axis = app.cycles_figure.xaxis[0]
    names = app.layer_names
    assert len(names) == 16 and axis.major_label_orientation == pytest.approx(math.pi / 2)
    step = axis.formatter.args["step"]
    assert (app.cycles_figure.width - 90) / len(names) * step >= common.LABEL_PITCH_PX


def test_roofline_zooms_to_the_points_and_picks_its_axes_from_the_data() -> None:
    net = layers.load_network("lenet5", batch=8)
    plat = platforms.load_platform("idsp")
    sol = explore.explore_layer(net["conv1"], plat, keep="pareto")
    fig = viz.roofline(ColumnDataSource(viz.roofline_data(sol)), plat)
    points = fig.select_one({"name": "points"})
    for rng in (fig.x_range, fig.y_range):
        assert isinstance(rng, DataRange1d) and points in rng.renderers
        assert fig.select_one({"name": "roofs"}) not in rng.renderers
    ctc, gops = sol["ctc"], sol["throughput_gops"]
    expect_x = "log" if ctc.max() >= 20 * ctc.min() else "linear"
    expect_y = "log" if gops.max() >= 20 * gops.min() else "linear"
    assert isinstance(fig.xaxis[0], LogAxis) == (expect_x == "log")
    assert isinstance(fig.yaxis[0], LogAxis) == (expect_y == "log")
    assert viz.explore_plots.axis_type([10.0, 11.0]) == "linear"  # a narrow cluster
    assert viz.explore_plots.axis_type([1.0, 100.0]) == "log"


def test_quant_spaces_fit_the_page() -> None:
    space = pd.DataFrame({"layer": ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 3,
                          "bw_in": [4, 5, 6] * 4, "bw_w": [6, 5, 4] * 4,
                          "accuracy": np.linspace(0.5, 0.99, 12)})
    grid = viz.quant_spaces(space, ["a", "b", "c", "d"], page_px=900)
    widths = [fig.width for fig, *_ in grid.children]
    assert len(widths) == 4 and max(widths) * 3 <= 900


def test_report_notebook_leads_with_the_summary() -> None:
    import nbformat

    from workbench.report.notebook import REPORT_NOTEBOOK

    book = nbformat.read(REPORT_NOTEBOOK, as_version=4)
    code = [c.source for c in book.cells if c.cell_type == "code"]
    first = next(s for s in code if "report.build" in s)
    assert first.index("findings_html") < first.index("bokeh_resources_html")
    assert "a.anchor-link{display:none}" in report.REPORT_STYLE
    data = report.build("lenet5", "nve", report.ReportSettings(batch=2, sweep_memory_kb=(16,)))
    page = report.findings_html(data)
    assert "Summary: lenet5 on nve" in page and "bottlenecks" in page and "I/O-bound" in page
    assert "n/a" in page and not SCIENTIFIC.search(page)


def test_energy_breakdown_says_na_without_energy_figures(nve_plan) -> None:
    per_layer, _, plat = nve_plan
    fig = viz.network_breakdown(per_layer, "energy", energy_known=units.has_energy(plat))
    assert "n/a" in fig.title.text
    assert "n/a" not in viz.network_breakdown(per_layer, "energy").title.text
