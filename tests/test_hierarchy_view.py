"""The memory-hierarchy app, driven without a browser: editing a level or moving the budget
changes the plot sources, and they equal the engine's numbers computed here independently
(search + evaluate per layer, the co-design grid enumerated by hand)."""

from __future__ import annotations

import html
import itertools
import re

import pytest

from workbench import layers
from workbench.hierarchy import ElementBytes, Hierarchy, Level, SplitCapacity, evaluate
from workbench.hierarchy.codesign import table3_energy_pj
from workbench.hierarchy.search import search
from workbench.ui.hierarchy_view import area_steps, hierarchy_view
from workbench.viz.hierarchy_plots import level_text

KB = 1024
PREC = ElementBytes(2, 2, 2, 4)
GRID_KB = (1, 4, 16)
CONVS = [lay for lay in layers.load_network("lenet5").tiled_layers() if lay.kind == "conv"]
MACS = sum(lay.macs for lay in CONVS)


def _hier(*caps, width: int = 64) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 16, 320.0),
                      *(Level(f"L{i + 1}", c, width) for i, c in enumerate(caps))),
                     mac_energy_pj=1.0)


def _level_pj_per_mac(hier: Hierarchy) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {f"level{i}": [] for i in range(len(hier.levels))}
    out["mac"] = []
    for layer in CONVS:
        found = search(layer, hier, PREC, table3_energy_pj)
        priced = evaluate(layer, found.blocking, hier, PREC, table3_energy_pj)
        for i, level in enumerate(hier.levels):
            out[f"level{i}"].append(priced.energy_pj[level.name] / layer.macs)
        out["mac"].append(priced.energy_pj["mac"] / layer.macs)
    return out


def _grid_energy(levels: int) -> dict[tuple[int, ...], float]:
    """pJ of every grid hierarchy of that depth (sizes non-increasing inwards)."""
    out = {}
    for sizes in itertools.product(GRID_KB, repeat=levels):
        if list(sizes) != sorted(sizes, reverse=True):
            continue
        hier = _hier(*(s * KB for s in sizes))
        out[sizes] = sum(search(lay, hier, PREC, table3_energy_pj).energy_pj for lay in CONVS)
    return out


@pytest.fixture(scope="module")
def app():
    return hierarchy_view(network="lenet5", memory_kb=(16, 1), budget_kb=16, grid_kb=GRID_KB)


def _assert_sources_equal(app, hier: Hierarchy) -> None:
    want = _level_pj_per_mac(hier)
    data = app.energy_source.data
    assert data["layer"] == [lay.name for lay in CONVS]
    # bars are drawn only at the x range's factors (built before the source was filled)
    assert list(app.energy_figure.x_range.factors) == data["layer"]
    for key, values in want.items():
        assert data[key] == pytest.approx(values, rel=1e-12)
    for i in range(len(hier.levels), 5):
        assert data[f"level{i}"] == [0.0] * len(CONVS)


def test_energy_bars_follow_a_level_size_edit(app) -> None:
    _assert_sources_equal(app, _hier(16 * KB, 1 * KB))
    before = dict(app.energy_source.data)
    app.sizes[0].value = 15  # 32 KB
    assert app.energy_source.data != before
    _assert_sources_equal(app, _hier(32 * KB, 1 * KB))
    rows = app.designer.traffic_rows(app.design)
    assert "<table" in app.traffic.value and str(rows[0]["I"]) in app.traffic.value.replace(",", "")
    ratio = (app.design.energy_pj - MACS) / MACS
    assert f"memory:compute {ratio:.2f}×" in app.summary.value


def test_budget_slider_picks_the_brute_force_best_and_front(app) -> None:
    grid = _grid_energy(2)
    for budget_kb in (2, 8, 32):
        app.budget.value = 10 + budget_kb.bit_length() - 1  # log2 of the bytes
        fits = {s: e for s, e in grid.items() if sum(s) <= budget_kb}
        best = min(fits.values())
        assert app.best_source.data["pj_per_mac"] == pytest.approx([best / MACS], rel=1e-12)
        assert app.best_source.data["capacity_kb"][0] <= budget_kb
    # the front: the grid points no other point beats on both capacity and energy
    points = {(float(sum(s)), e / MACS) for s, e in grid.items()}
    front = {p for p in points if not any(q[0] <= p[0] and q[1] <= p[1] and q != p
                                          for q in points)}
    shown = set(zip(app.front_source.data["capacity_kb"], app.front_source.data["pj_per_mac"],
                    strict=True))
    assert {(c, round(e, 9)) for c, e in shown} == {(c, round(e, 9)) for c, e in front}
    assert len(app.every_source.data["capacity_kb"]) == len(grid)


def test_levels_split_and_errors(app) -> None:
    app.sizes[0].value, app.sizes[1].value = 14, 10  # 16 KB, 1 KB
    app.levels.value = 1
    _assert_sources_equal(app, _hier(16 * KB))
    assert app.sizes[1].layout.display == "none"
    app.split.value = True  # 1:16:1 of 16 KB: 910.2, 14563.6, 910.2 B, the byte left to W
    cap = app.hierarchy().levels[1].capacity_bytes
    assert isinstance(cap, SplitCapacity) and (cap.I, cap.W, cap.O) == (910, 14564, 910)
    _assert_sources_equal(app, _hier(cap))
    assert "(L1 910/14,564/910 B of 16 KB)" in app.summary.value  # exact, not 0.8887 KB
    # the grid's 16 KB level is divided as the edited one is (1:16:1, not 910:14564:910)
    grid = {d.hierarchy.levels[1].total_bytes: d.hierarchy.levels[1].capacity_bytes
            for d in app._grids[(1, True, 64, "1 MAC")]}
    assert (grid[16 * KB].I, grid[16 * KB].W, grid[16 * KB].O) == (910, 14564, 910)
    assert "910/14,564/910 B" in app.every_source.data["name"][
        app.every_source.data["capacity_kb"].index(16)]  # the hover's name, in bytes
    good = dict(app.energy_source.data)
    app.split.value = False
    app.levels.value = 2
    app.sizes[1].value = 16  # 64 KB inside 16 KB: refused, the plot keeps its last numbers
    shown = html.unescape(app.status.value)
    assert re.sub("<[^>]+>", "", shown).startswith(  # the slider's name, not the schema's path
        "L2 size: 64 KB is larger than L1's 16 KB; sizes must not increase inwards")
    assert "still show the last hierarchy that worked" in shown
    app.sizes[1].value = 10
    assert app.status.value == ""
    assert good != app.energy_source.data


def test_area_budget_picks_the_brute_force_best_on_the_area_front(app) -> None:
    """Area = Σ on-chip KB × the density (seed 001: 45 mm² per 8 MB), computed here."""
    density = 45 / (8 * 1024)
    app.split.value, app.levels.value = False, 2
    grid = _grid_energy(2)
    app.axis.value = "area"
    assert app.budget.layout.display == "none" and app.area_budget.layout.display is None
    assert app.front_figure.xaxis[0].axis_label == "on-chip memory area (mm²)"
    for budget_mm2 in (0.02, 0.1, 0.2):
        app.area_budget.value = budget_mm2
        fits = {s: e for s, e in grid.items() if sum(s) * density <= budget_mm2 + 1e-15}
        want = min(fits.values())
        assert app.best_source.data["pj_per_mac"] == pytest.approx([want / MACS], rel=1e-12)
        assert app.best_source.data["cost"][0] <= budget_mm2
        assert f"{budget_mm2:.3g} mm²" in app.summary.value
    areas = sorted(app.every_source.data["cost"])
    assert areas == pytest.approx(sorted(sum(s) * density for s in grid))
    app.area_budget.value = 0.001  # below the smallest grid hierarchy: the summary says so
    least = min(sum(s) * density for s in grid)
    assert f"fits every layer: the smallest takes {least:.3g} mm²" in app.summary.value
    app.axis.value = "capacity"
    assert app.front_figure.xaxis[0].axis_label == "on-chip memory (KB)"
    assert app.front_source.data["cost"] == app.front_source.data["capacity_kb"]


def test_bad_arguments_are_one_line_errors() -> None:
    from workbench.errors import WorkbenchError

    for kwargs, rule in (({"axis": "volume"}, "axis must be"),
                         ({"area_budget_mm2": 0}, "area_budget_mm2 must be > 0 mm²"),
                         ({"datapath": "32 MACs"}, "datapath must be one of"),
                         ({"mm2_per_kb": 0}, "mm2_per_kb must be > 0"),
                         ({"memory_kb": (0,)}, r"memory_kb: each size must be a power of two "
                                              r"from 0\.25 to 16384 KB .*got 0"),
                         ({"memory_kb": (32, 3)}, "memory_kb: .*got 3"),
                         ({"budget_kb": -3}, r"budget_kb: .* from 1 to 16384 KB .*got -3"),
                         ({"budget_kb": 32768}, "budget_kb: .*got 32768")):
        with pytest.raises(WorkbenchError, match=rule):
            hierarchy_view(network="lenet5", **kwargs)


def test_three_levels_price_the_edited_hierarchy_but_no_grid(tmp_path) -> None:
    """Past two on-chip levels the app prices the edited hierarchy only: a grid of 3-level
    hierarchies takes minutes (lenet5: more than 5 minutes in a browser, before), so the
    front is emptied and the summary says so; back at two levels the grid returns."""
    net = tmp_path / "tiny.yaml"
    net.write_text("name: tiny\nlayers:\n"
                   "  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3}\n")
    app = hierarchy_view(network=str(net), memory_kb=(16, 4), budget_kb=16, grid_kb=GRID_KB)
    assert len(app.every_source.data["capacity_kb"]) > 0 and app.best is not None
    app.levels.value = 3  # L3: the last size given, 4 KB
    layer = layers.load_network(str(net)).tiled_layers()[0]
    hier = _hier(16 * KB, 4 * KB, 4 * KB)
    want = search(layer, hier, PREC, table3_energy_pj).energy_pj
    assert app.design.energy_pj == pytest.approx(want, rel=1e-12)
    assert app.every_source.data["capacity_kb"] == [] and app.best is None
    shown = html.unescape(app.summary.value)
    assert "prices its grid for 1 to 2 on-chip levels; the 10 3-level hierarchies" in shown
    assert app.status.value == ""
    assert not app.front_figure.visible  # no empty plot with axes of nothing
    budget_controls = (app.axis_row, app.budget, app.area_budget)
    assert all(c.layout.display == "none" for c in budget_controls)  # nothing to budget
    app.levels.value = 2
    assert len(app.every_source.data["capacity_kb"]) > 0 and app.best is not None
    assert app.front_figure.visible
    assert [c.layout.display for c in budget_controls] == [None, None, "none"]


def test_a_new_shape_says_its_grid_is_priced_until_the_summary_follows(tmp_path,
                                                                         monkeypatch) -> None:
    """A control that makes a new shape (split) prices that shape's co-design grid after the
    bars: the status line says so while the summary and the front are stale, and clears when
    they are done; a size edit within a priced shape shows nothing. The table shows counts
    with separators and energies without exponents."""
    net = tmp_path / "tiny.yaml"
    net.write_text("name: tiny\nlayers:\n"
                   "  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3}\n")
    app = hierarchy_view(network=str(net), memory_kb=(16, 4), budget_kb=16, grid_kb=GRID_KB)
    seen = []
    real = type(app).update_budget
    monkeypatch.setattr(type(app), "update_budget",
                        lambda self: seen.append(html.unescape(self.status.value)) or real(self))
    app.split.value = True
    assert len(seen) == 1 and "pricing this shape's co-design grid" in seen[0]
    assert app.status.value == ""
    seen.clear()
    app.sizes[1].value = 11  # 2 KB: the split shape's grid is priced already
    assert seen == [""] and app.status.value == ""
    rows = app.designer.traffic_rows(app.design)
    assert "e+" not in app.traffic.value
    scale = {"pJ": 1, "nJ": 1e3, "µJ": 1e6, "mJ": 1e9, "J": 1e12}
    shown = [float(v) * scale[u] for v, u in
             re.findall(r"<td>([\d.]+) (pJ|nJ|µJ|mJ|J)</td>", app.traffic.value)]
    assert len(shown) == len(rows)  # one energy per row, in a unit that reads well
    for row, pj in zip(rows, shown, strict=True):
        assert pj == pytest.approx(row["energy_pj"], rel=6e-3)  # three digits


def test_an_edited_hierarchy_off_the_grid_that_beats_its_best_is_said() -> None:
    """The summary names the grid, and when the edited hierarchy (32 KB | 1 KB: off the 1, 4,
    16 KB grid) fits the budget and beats the grid's best, says by how much (each priced by
    searching every layer)."""
    app = hierarchy_view(network="lenet5", memory_kb=(32, 1), budget_kb=64, grid_kb=GRID_KB)
    edited = sum(search(lay, _hier(32 * KB, 1 * KB), PREC, table3_energy_pj).energy_pj
                 for lay in CONVS)
    best = min(e for s, e in {**_grid_energy(1), **_grid_energy(2)}.items() if sum(s) <= 64)
    shown = html.unescape(app.summary.value)
    assert "best of the grid: level sizes 1, 4, 16 KB" in shown
    assert edited < best
    assert f"the edited hierarchy is within 64 KB too and {1 - edited / best:.1%} lower" in shown
    app.sizes[0].value = 14  # 16 KB | 1 KB: on the grid, nothing to say
    assert "the edited hierarchy is within" not in app.summary.value
    app.budget.value = 20  # the budget reads as its slider does: 1 MB, not 1024 KB
    assert app.budget.label == "1 MB" and "co-designed within 1 MB (" in app.summary.value


def test_split_sizes_read_in_whole_kb_or_exact_bytes() -> None:
    """DianNao's 2/32/2 KB buffers read so; parts that are not whole KB are given in bytes."""
    assert level_text(Level("L1", SplitCapacity(2 * KB, 32 * KB, 2 * KB), 64)) == "2/32/2 KB"
    assert level_text(Level("L1", SplitCapacity(1821, 29127, 1820), 64)) == \
        "1,821/29,127/1,820 B of 32 KB"
    assert level_text(Level("L1", 512, 64)) == "512 B"  # as the size slider reads
    assert level_text(Level("L1", 16 * KB, 64)) == "16 KB"


def test_area_slider_steps_one_two_five_and_keeps_its_start() -> None:
    """The area budget moves 1, 2, 5 per decade (0.001 to 100 mm²) from its exact start."""
    assert area_steps(0.5) == [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
                               10, 20, 50, 100]
    assert 0.37 in area_steps(0.37) and len(area_steps(0.37)) == 17
    app = hierarchy_view(network="lenet5", memory_kb=(16, 1), budget_kb=16, grid_kb=GRID_KB,
                         axis="area", area_budget_mm2=0.37)
    assert app.area_budget.value == 0.37 and app.area_budget.label == "0.37 mm²"
    assert "within 0.37 mm²" in app.summary.value

