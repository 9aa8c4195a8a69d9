"""The sweep results browser: Pareto front and thinning against brute-force definitions, and
the widget app and static page on a real small sweep (LeNet5 on idsp)."""

from __future__ import annotations

import html
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_viz import offline_problems

from workbench import sweep, ui
from workbench.errors import WorkbenchError
from workbench.report import sweep_page
from workbench.viz import sweep_plots as sp

# few distinct values: many ties and copies; NaN: cases without that metric
VALUES = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 2.5, 3.0, 10.0, -1.0]),
                   st.floats(-5, 5, allow_nan=False), st.just(math.nan))
POINTS = st.lists(st.tuples(VALUES, VALUES), max_size=60)
DIRECTIONS = st.sampled_from(["min", "max"])


def brute_front(points: list[tuple[float, float]], x_dir: str, y_dir: str) -> set[int]:
    """Pairwise definition: i is on the front unless some j is at least as good in both
    metrics and strictly better in one (cases with a missing metric are never on it)."""
    def better_or_equal(a: float, b: float, direction: str) -> bool:
        return a <= b if direction == "min" else a >= b

    keep = set()
    for i, (xi, yi) in enumerate(points):
        if math.isnan(xi) or math.isnan(yi):
            continue
        dominated = any(
            better_or_equal(xj, xi, x_dir) and better_or_equal(yj, yi, y_dir)
            and (xj != xi or yj != yi)
            for j, (xj, yj) in enumerate(points) if j != i and not (math.isnan(xj)
                                                                    or math.isnan(yj)))
        if not dominated:
            keep.add(i)
    return keep


@given(POINTS, DIRECTIONS, DIRECTIONS)
def test_pareto_front_is_the_pairwise_definition(points, x_dir, y_dir) -> None:
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    mask = sp.pareto_front(x, y, x_dir, y_dir)
    assert set(np.flatnonzero(mask)) == brute_front(points, x_dir, y_dir)


@given(POINTS, DIRECTIONS, DIRECTIONS, st.integers(1, 6), st.integers(1, 6))
def test_thinning_keeps_the_front_and_bounds_the_count(points, x_dir, y_dir, nx, ny) -> None:
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    drawn, front = sp.reduce_points(x, y, x_dir, y_dir, bins=(nx, ny))
    want = brute_front(points, x_dir, y_dir)
    assert set(drawn[front]) == want  # every front case, flagged as such
    assert len(set(drawn)) == len(drawn)  # no case twice
    assert len(drawn) <= len(want) + nx * ny
    rest = [i for i in range(len(points)) if i not in want and not any(map(math.isnan,
                                                                             points[i]))]
    # one drawn case per occupied cell of the rest's bounding box: the first in frame order
    if rest:
        xs, ys = [points[i][0] for i in rest], [points[i][1] for i in rest]

        def cell(v: float, lo: float, hi: float, k: int) -> int:
            return 0 if hi == lo else min(k - 1, int((v - lo) / (hi - lo) * k))

        first: dict[tuple[int, int], int] = {}
        for i in rest:
            key = (cell(points[i][0], min(xs), max(xs), nx), cell(points[i][1], min(ys),
                                                                    max(ys), ny))
            first.setdefault(key, i)
        assert sorted(drawn[~front]) == sorted(first.values())
    again = sp.reduce_points(x, y, x_dir, y_dir, bins=(nx, ny))[0]
    assert list(again) == list(drawn)  # deterministic


def test_thinning_bound_on_a_large_cloud() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.lognormal(size=100_000), rng.lognormal(size=100_000)
    drawn, front = sp.reduce_points(x, y, "min", "max", bins=(40, 30))
    assert front.sum() == sp.pareto_front(x, y, "min", "max").sum() > 0
    assert front.sum() < len(drawn) <= front.sum() + 40 * 30


@given(st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from([8.0, 16.0])),
                min_size=1, max_size=30),
       st.sets(st.sampled_from(["a", "b", None])), st.sets(st.sampled_from([8.0, 16.0])))
def test_filter_mask_keeps_exactly_the_selected_values(rows, names, sizes) -> None:
    frame = pd.DataFrame(rows, columns=["network", "memory_kb"])
    mask = sp.filter_mask(frame, {"network": names, "memory_kb": sizes})
    assert list(mask) == [n in names and m in sizes for n, m in rows]


def test_colours_span_the_palette_and_categories_differ() -> None:
    numeric = sp.colors(pd.Series([8.0, 16.0, 128.0, 512.0]))  # spans 64x: log scale
    assert numeric[0] == sp.Viridis256[0] and numeric[-1] == sp.Viridis256[-1]
    assert numeric[1] == sp.Viridis256[int(256 * math.log(2) / math.log(64))]
    words = sp.colors(pd.Series(["cycles", "energy", "cycles"]))
    assert words[0] == words[2] != words[1]


# --- the app and the page on a real sweep --------------------------------------------------

@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=2, memory_kb=[8, 32, 128],
                      acc_bits=[16], objectives=["cycles", "energy"],
                      overrides={"cores": [1, 4]})
    sweep.run(grid, out)
    return out


def test_filters_change_the_plotted_source_and_the_table(sweep_dir: Path) -> None:
    app = ui.sweep_browser(sweep_dir)
    frame = sweep.collect(sweep_dir)
    assert len(app.frame) == len(frame) == 12
    assert app.axes == ["network", "platform", "memory_kb", "acc_bits", "objective",
                        "fusion", "cores"]
    assert app.table.source is app.points  # the table lists the drawn cases, linked selection
    points = list(zip(frame["time_ms"], frame["energy_uj"], strict=True))
    front_ids = {frame["case_id"][i] for i in brute_front(points, "min", "min")}
    data = app.points.data
    assert {c for c, f in zip(data["case_id"], data["front"], strict=True) if f} == front_ids
    app.set_filter("objective", ["energy"])
    assert set(app.points.data["objective"]) == {"energy"}
    energy_ids = set(frame["case_id"][frame["objective"] == "energy"])
    assert set(app.points.data["case_id"]) <= energy_ids
    assert f"{len(energy_ids)} of 12 cases match" in app.status.value
    app.set_filter("memory_kb", [8, 128])
    assert set(app.points.data["memory_kb"]) <= {8.0, 128.0}
    app.set_filter("cores", [4])
    kept = frame[(frame["objective"] == "energy") & frame["memory_kb"].isin([8, 128])
                 & (frame["cores"] == 4)]
    assert sorted(app.points.data["case_id"]) == sorted(kept["case_id"])  # 2 cases, no thinning
    app.set_filter("cores", [])
    assert app.drawn == 0 and "0 of 12 cases match" in app.status.value


def test_metric_menus_replot_and_relabel(sweep_dir: Path) -> None:
    app = ui.sweep_browser(sweep_dir)
    app.set_metrics(x="memory_kb", y="throughput_gops", color="objective")
    by_id = sweep.collect(sweep_dir).set_index("case_id")
    data = app.points.data
    assert list(data["x"]) == [by_id.loc[c, "memory_kb"] for c in data["case_id"]]
    assert list(data["y"]) == [by_id.loc[c, "throughput_gops"] for c in data["case_id"]]
    assert app.figure.yaxis[0].axis_label == "throughput_gops (higher is better)"
    assert "objective" in app.legend.value and "energy" in app.legend.value
    assert len(set(data["color"])) == len(set(data["objective"]))
    # the front: for every memory size drawn on it, no smaller size is as fast
    front = [(x, y) for x, y, f in zip(data["x"], data["y"], data["front"], strict=True) if f]
    for x, y in front:
        assert not any(x2 <= x and y2 >= y and (x2, y2) != (x, y)
                       for x2, y2 in zip(by_id["memory_kb"], by_id["throughput_gops"],
                                         strict=True))
    with pytest.raises(WorkbenchError, match="no metric 'speed'"):
        app.set_metrics(x="speed")


def test_selecting_a_case_shows_its_breakdown(sweep_dir: Path) -> None:
    app = ui.sweep_browser(sweep_dir)
    by_id = sweep.collect(sweep_dir).set_index("case_id")
    index = app.drawn - 1
    case = app.points.data["case_id"][index]
    app.points.selected.indices = [index]  # a tap in the browser, or a click in the table
    assert app.selected_case == case and case in app.info.value
    cycles = app.cycles_source.data
    parts = [k for k in cycles if k != "layer"]
    assert set(parts) == {"compute", "dma_setup", "bus_stall", "prolog_epilog"}
    total = sum(sum(cycles[k]) for k in parts)
    assert total == pytest.approx(by_id.loc[case, "cycles"], rel=1e-9)
    energy = app.energy_source.data
    assert sum(sum(energy[k]) for k in energy if k != "layer") == \
        pytest.approx(by_id.loc[case, "energy_uj"], rel=1e-9)
    assert list(app.cycles_figure.x_range.factors) == list(cycles["layer"]) \
        == app.per_layer["layer"].tolist()
    other = next(c for c in by_id.index if c != case)
    app.select(other)  # from Python: the point and table row follow
    chosen = app.points.selected.indices
    assert (not chosen and other not in list(app.points.data["case_id"])) or \
        app.points.data["case_id"][chosen[0]] == other
    assert sum(sum(app.cycles_source.data[k]) for k in parts) == \
        pytest.approx(by_id.loc[other, "cycles"], rel=1e-9)
    app.select("no-such-case")
    assert "no case &#x27;no-such-case&#x27;" in app.status.value
    assert app.selected_case == other


def test_bad_input_is_one_line(sweep_dir: Path, tmp_path: Path) -> None:
    app = ui.sweep_browser(sweep_dir)
    with pytest.raises(WorkbenchError, match="axis 'objective' has no value"):
        app.set_filter("objective", ["fastest"])
    with pytest.raises(WorkbenchError, match="no axis 'lanes'"):
        app.set_filter("lanes", [16])
    with pytest.raises(WorkbenchError, match="no completed case"):
        ui.sweep_browser(frame=pd.DataFrame())
    # a frame without its directory: rows and plot, but no per-layer plans
    bare = ui.sweep_browser(frame=sweep.collect(sweep_dir))
    bare.select(bare.points.data["case_id"][0])
    assert "per-layer plans are not available" in html.unescape(bare.info.value)


def test_page_is_offline_and_holds_the_same_view(sweep_dir: Path, tmp_path: Path) -> None:
    frame = sweep.collect(sweep_dir)
    out = sweep_page.sweep_page(frame, list(sweep.load_grid(sweep_dir).overrides),
                                tmp_path / "sweep.html",
                                case_layers=lambda case: sweep.case_layers(sweep_dir, case))
    text = out.read_text()
    assert offline_problems(text) == []
    assert "Bokeh" in text and len(text) > 1_000_000  # BokehJS inline
    for case in frame["case_id"]:
        assert case in text
    layout = sweep_page.sweep_view(frame, sp.sweep_axes(frame, ["cores"]),
                                   breakdowns={frame["case_id"][0]:
                                               sweep.case_layers(sweep_dir,
                                                                 frame["case_id"][0])})
    shown = layout.select_one({"name": "sweep_points"})
    app = ui.sweep_browser(sweep_dir)
    assert list(shown.data["case_id"]) == list(app.points.data["case_id"])
    from bokeh.models import CheckboxGroup

    boxes = {b.name: b.labels for b in layout.select({"type": CheckboxGroup})}
    assert boxes["filter_memory_kb"] == ["8", "32", "128"]
    assert boxes["filter_objective"] == ["cycles", "energy"]


def test_the_demo_sweep_is_kept_while_its_process_runs_and_removed_when_it_exits(
        tmp_path: Path) -> None:
    """Notebook 09 runs `ui.demo_sweep()` without a directory: its temporary folder holds the
    20 cases while the kernel runs (the browser reads plans from it) and is gone after."""
    code = ("from pathlib import Path; from workbench import sweep, ui; out = ui.demo_sweep(); "
            "print(out, len(sweep.collect(out)), len(sweep.case_layers(out, "
            "sweep.collect(out)['case_id'].iloc[0])) > 0)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-2000:]
    out, cases, plan = run.stdout.split()
    assert Path(out).parent == tmp_path and cases == "20" and plan == "True"
    assert not Path(out).exists() and not list(tmp_path.glob("sweep-demo-*"))


def test_widget_state_is_the_document_as_it_is_now(sweep_dir: Path) -> None:
    """What a reloaded page asks the kernel for (get_state) draws the filtered cases and the
    picked breakdown, not the document as the widget was made; asking sends nothing."""
    app = ui.sweep_browser(sweep_dir)
    widget = app.view.children[-1]

    def drawn(state: dict) -> dict:
        bundle = state["render_bundle"]
        doc = next(iter(json.loads(bundle)["docs_json"].values()))
        return {r["attributes"]["name"]: {k: list(v["array"] if isinstance(v, dict) else v)
                                          for k, v in r["attributes"]["data"]["entries"]}
                for r in _models(doc) if r.get("attributes", {}).get("name") in
                ("sweep_points", "sweep_cycles")}  # string columns: lists or object ndarrays

    made = drawn(widget.get_state())
    app.set_filter("objective", ["cycles"])
    app.select(app.points.data["case_id"][0])
    sent: list = []
    widget.comm.send = lambda *args, **kwargs: sent.append(args)
    now = drawn(widget.get_state())
    assert sent == []
    assert "energy" in made["sweep_points"]["objective"] and made["sweep_cycles"]["layer"] == []
    assert now["sweep_points"]["objective"] and set(now["sweep_points"]["objective"]) == {"cycles"}
    assert now["sweep_cycles"]["layer"] == list(app.cycles_source.data["layer"]) != []


def _models(node):
    """Every serialized bokeh object (a dict with a type and attributes) in a document's JSON."""
    if isinstance(node, dict):
        if "attributes" in node:
            yield node
        for value in node.values():
            yield from _models(value)
    elif isinstance(node, list):
        for value in node:
            yield from _models(value)
