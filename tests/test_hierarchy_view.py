"""The memory-hierarchy app, driven without a browser. Its hardware is the platform panel's:
editing a level in the panel (its size slider, its width, the DRAM energy, a level more or
fewer, another preset) or moving the budget changes the plot sources, and they equal the
engine's numbers computed here independently: `hierarchy_plan` of the edited platform built
from its own document, and the co-design grid enumerated by hand. The old hardware keywords
are read onto the platform with one notice each; the layout fits 1280 px."""

from __future__ import annotations

import html
import itertools
import re
import warnings

import ipywidgets as widgets
import pytest
from app_platforms import levels_doc, levels_platform

from workbench import layers, platforms
from workbench.explore.hierarchy_plan import hierarchy_plan, hierarchy_totals
from workbench.hierarchy import Level, SplitCapacity
from workbench.spelling import RenamedNotice
from workbench.ui.hierarchy_view import HierarchySetup, area_steps, hierarchy_view
from workbench.viz.hierarchy_plots import level_text

KB = 1024
GRID_KB = (1, 4, 16)
CONVS = [lay for lay in layers.load_network("lenet5").tiled_layers() if lay.kind == "conv"]
MACS = sum(lay.macs for lay in CONVS)
TINY_NET = ("name: tiny\nlayers:\n"
            "  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3}\n")
SCREEN_PX = 1280


def _energy(plat: platforms.Platform, net=CONVS) -> float:
    """The network's energy (pJ) on the platform: `hierarchy_plan`'s total."""
    return hierarchy_totals(hierarchy_plan(net, plat))["energy_pj"]


def _grid_energy(levels: int) -> dict[tuple[int, ...], float]:
    """pJ of every grid hierarchy of that depth (sizes non-increasing inwards)."""
    return {sizes: _energy(levels_platform(*sizes))
            for sizes in itertools.product(GRID_KB, repeat=levels)
            if list(sizes) == sorted(sizes, reverse=True)}


@pytest.fixture(scope="module")
def app():
    return hierarchy_view(network="lenet5", platform=levels_platform(16, 1), budget_kb=16,
                          grid_kb=GRID_KB)


def _assert_sources_equal(app, plat: platforms.Platform) -> None:
    """The bars (pJ per MAC by level and the MAC) equal `hierarchy_plan` on `plat`."""
    plan = hierarchy_plan(CONVS, plat)
    data = app.energy_source.data
    assert data["layer"] == list(plan["layer"])
    # bars are drawn only at the x range's factors (built before the source was filled)
    assert list(app.energy_figure.x_range.factors) == data["layer"]
    for i, level in enumerate(plan.attrs["levels"]):
        assert data[f"level{i}"] == pytest.approx(
            list(plan[f"energy_pj_{level}"] / plan["macs"]), rel=1e-12)
    assert data["mac"] == pytest.approx(list(plan["mac_energy_pj"] / plan["macs"]), rel=1e-12)
    for i in range(len(plan.attrs["levels"]), 5):
        assert data[f"level{i}"] == [0.0] * len(CONVS)
    assert app.design.energy_pj == pytest.approx(float(plan["energy_pj"].sum()), rel=1e-12)


def _show(app, plat: platforms.Platform) -> None:
    """Set the panel to `plat` and price it (as a preset choice would)."""
    app.panel.show(plat)
    app.update()


def test_energy_bars_follow_a_level_size_edit(app) -> None:
    _show(app, levels_platform(16, 1))
    _assert_sources_equal(app, levels_platform(16, 1))
    before = dict(app.energy_source.data)
    app.sizes[0].value = 32 * KB  # the panel's L1 slider
    assert app.panel.rows[1].capacity is app.sizes[0]  # one widget, the panel's
    assert app.energy_source.data != before
    _assert_sources_equal(app, levels_platform(32, 1))
    rows = app.designer.traffic_rows(app.design)
    assert app.traffic.rows.to_dict("records") == rows  # the live table follows the edit
    assert app.traffic.text["I"].iloc[0].replace(",", "") == str(rows[0]["I"])
    ratio = hierarchy_totals(hierarchy_plan(CONVS, levels_platform(32, 1)))["memory_to_compute"]
    assert f"memory:compute {ratio:.2f}×" in app.summary.value


def test_every_panel_field_reprices(app) -> None:
    """A level's width, the DRAM energy, the input width and another preset: each edit in
    the panel reprices, and the app shows what `hierarchy_plan` gives on the platform so
    edited."""
    _show(app, levels_platform(16, 1))
    app.panel.rows[1].access_bits.value = 128
    doc = levels_doc(16, 1)
    doc["memory"]["levels"][1]["access_bits"] = 128
    _assert_sources_equal(app, platforms.platform_from_dict(doc, "edited"))
    app.panel.rows[0].energy_pj.value = 640.0
    doc["memory"]["levels"][0]["energy_pj"] = 640.0
    _assert_sources_equal(app, platforms.platform_from_dict(doc, "edited"))
    app.panel.parts["datapath"]["in_bits"].value = 8  # 8-bit inputs and outputs: 1 B each
    doc["datapath"]["in_bits"] = 8
    _assert_sources_equal(app, platforms.platform_from_dict(doc, "edited"))
    widths = app.designer.precision  # bytes
    assert (widths.inputs, widths.weights, widths.outputs, widths.partial_sums) == (1, 2, 1, 4)
    app.panel.preset.value = "yang_256mac"
    _assert_sources_equal(app, platforms.load_platform("yang_256mac"))
    assert app.status.value == "" and "local 36 KB" in app.summary.value


def test_budget_slider_picks_the_brute_force_best_and_front(app) -> None:
    _show(app, levels_platform(16, 1))
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


def test_a_level_removed_and_a_size_that_grows_inwards(app) -> None:
    _show(app, levels_platform(16, 1))
    app.panel.remove_level.click()  # the panel's button: L2 gone
    _assert_sources_equal(app, levels_platform(16))
    assert len(app.sizes) == 1
    app.panel.add_level.click()  # back: L2 at half of L1, 8 KB
    _assert_sources_equal(app, levels_platform(16, 8))
    good = dict(app.energy_source.data)
    app.sizes[1].value = 64 * KB  # 64 KB inside 16 KB: refused, the plot keeps its numbers
    shown = re.sub("<[^>]+>", "", html.unescape(app.status.value))
    assert "memory.levels[2].capacity: capacities must not increase inwards (65536 B > " \
           "16384 B of 'L1')" in shown and "\n" not in shown
    assert "still show the last hierarchy that worked" in shown
    assert app.energy_source.data == good
    app.sizes[1].value = KB
    assert app.status.value == ""
    _assert_sources_equal(app, levels_platform(16, 1))


def test_a_split_level_keeps_its_parts_in_proportion() -> None:
    """DianNao-like 1:16:1 of 16 KB (910, 14,564, 910 B) on one level: priced as split, the
    grid's 16 KB level divided as it is, and its slider doubles every part."""
    app = hierarchy_view(network="lenet5", platform=levels_platform(16, split=(910, 14564, 910)),
                         budget_kb=16, grid_kb=GRID_KB)
    cap = app.hierarchy().levels[1].capacity_bytes
    assert isinstance(cap, SplitCapacity) and (cap.I, cap.W, cap.O) == (910, 14564, 910)
    _assert_sources_equal(app, levels_platform(16, split=(910, 14564, 910)))
    assert "(L1 910/14,564/910 B of 16 KB)" in app.summary.value  # exact, not 0.8887 KB
    grid = {d.hierarchy.levels[1].total_bytes: d.hierarchy.levels[1].capacity_bytes
            for d in app._grid()}
    assert (grid[16 * KB].I, grid[16 * KB].W, grid[16 * KB].O) == (910, 14564, 910)
    assert "910/14,564/910 B" in app.every_source.data["name"][
        app.every_source.data["capacity_kb"].index(16)]  # the hover's name, in bytes
    app.sizes[0].value = 32 * KB
    _assert_sources_equal(app, levels_platform(32, split=(1820, 29128, 1820)))


def test_area_budget_picks_the_brute_force_best_on_the_area_front(app) -> None:
    """Area = Σ on-chip KB × the density (seed 001: 45 mm² per 8 MB), computed here."""
    density = 45 / (8 * 1024)
    _show(app, levels_platform(16, 1))
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
                         ({"mm2_per_kb": 0}, "mm2_per_kb must be > 0"),
                         ({"budget_kb": -3}, r"budget_kb: .* from 1 to 16384 KB .*got -3"),
                         ({"budget_kb": 32768}, "budget_kb: .*got 32768"),
                         ({"platform": "no_such_platform"}, "no_such_platform"),
                         # old hardware keywords whose value cannot be put on the platform
                         ({"datapath": "32 MACs"}, "datapath must be one of"),
                         ({"memory_kb": (0,)}, r"memory_kb: each size must be a whole number "
                                              r"of bytes .*got 0"),
                         ({"memory_kb": (1, 1, 1, 1, 1)}, "memory_kb: 1 to 4 on-chip levels"),
                         ({"width_bits": 100}, r"width_bits must be one of \(64, 128"),
                         ({"ratio": (1, 2, 1)}, "ratio splits the on-chip levels only with "
                                                "split=True"),
                         ({"memory_kb": (4,), "sizes_kb": (4,)}, "sizes_kb and memory_kb are "
                                                                 "two old spellings")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RenamedNotice)
            with pytest.raises(WorkbenchError, match=rule) as err:
                hierarchy_view(network="lenet5", **kwargs)
        assert "\n" not in str(err.value)


def _doc(edit) -> platforms.Platform:
    doc = levels_doc(16, 1)
    edit(doc)
    return platforms.platform_from_dict(doc, "edited")


def _set(doc, path, value) -> None:
    *head, last = path
    for key in head:
        doc = doc[key]
    doc[last] = value


OLD_KEYWORDS = [  # keyword, value, the platform it gives (from levels_platform(16, 1))
    ("memory_kb", (32, 4), levels_platform(32, 4)),
    ("sizes_kb", (32, 4), levels_platform(32, 4)),
    ("memory_kb", (32, 4, 0.5), levels_platform(32, 4, 0.5)),
    ("width_bits", 128, levels_platform(16, 1, access_bits=128)),
    ("dram_pj_per_16b", 640.0,
     _doc(lambda d: _set(d, ("memory", "levels", 0, "energy_pj"), 640.0))),
    ("mac_pj", 2.0, _doc(lambda d: _set(d, ("energy", "mac_pj"), 2.0))),
    ("psum_bytes", 2, _doc(lambda d: _set(d, ("datapath", "acc_bits"), 16))),
    ("datapath", "8×8 C×M (64 MACs)", _doc(lambda d: d["datapath"].update(
        unroll={"C": 8, "M": 8}, macs_per_cycle=64))),
]


@pytest.mark.parametrize(("keyword", "value", "want"), OLD_KEYWORDS,
                         ids=[f"{k}={v}" for k, v, _ in OLD_KEYWORDS])
def test_old_hardware_keywords_set_the_platform_with_one_notice(keyword, value, want) -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        setup = HierarchySetup(platform=levels_platform(16, 1), **{keyword: value})
    notices = [str(w.message) for w in record if issubclass(w.category, RenamedNotice)]
    assert len(notices) == 1 and "\n" not in notices[0]
    assert notices[0].startswith(f"hierarchy_view: {keyword} is the old way to set the "
                                 "platform's")
    assert setup.platform.model_dump(exclude={"name"}) == want.model_dump(exclude={"name"})


def test_old_split_and_element_keywords() -> None:
    """split (1:16:1 of 16 KB: 910.2, 14,563.6, 910.2 B, the byte left to W; or in `ratio`)
    and elem_bytes (inputs and weights at 8 bits per byte)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedNotice)
        split = HierarchySetup(platform=levels_platform(16), split=True).platform
        ratio = HierarchySetup(platform=levels_platform(16), split=True, ratio=(1, 2, 1))
        elems = HierarchySetup(platform=levels_platform(16), elem_bytes=1).platform
    assert split.memory.levels[1].capacity == (("I", 910), ("W", 14564), ("O", 910))
    assert ratio.platform.memory.levels[1].capacity == (("I", 4096), ("W", 8192), ("O", 4096))
    assert (elems.in_bits, elems.w_bits, elems.memory.elem_bytes) == (8, 8, 1)


def test_the_platform_is_a_preset_a_file_or_a_platform(tmp_path) -> None:
    """The default is seed001_3level; a file is listed beside the presets as given, and
    chosen again after another preset, it is the file's platform again."""
    import yaml

    assert HierarchySetup().platform == "seed001_3level"
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    tiny = layers.load_network(str(net)).tiled_layers()
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(levels_doc(8, 1)))
    app = hierarchy_view(network=str(net), platform=str(path), budget_kb=16, grid_kb=(1, 4))
    assert app.panel.preset.value == "levels (given)"
    assert app.design.energy_pj == pytest.approx(_energy(levels_platform(8, 1), tiny),
                                                 rel=1e-12)
    app.panel.preset.value = "hwc"  # 8-bit memories: table 3 has no energy for the grid
    assert app.design.energy_pj == pytest.approx(
        _energy(platforms.load_platform("hwc"), tiny), rel=1e-12)
    assert "co-design: no grid for this shape: " in app.summary.value
    assert "memory width 8 bits not tabulated" in app.summary.value
    assert not app.front_figure.visible and app.status.value == ""
    app.panel.preset.value = "levels (given)"
    assert app.design.energy_pj == pytest.approx(_energy(levels_platform(8, 1), tiny),
                                                 rel=1e-12)
    named = hierarchy_view(network=str(net), platform="yang_256mac", budget_kb=16,
                           grid_kb=(1, 4))
    assert named.panel.preset.value == "yang_256mac"
    assert named.panel.platform() == platforms.load_platform("yang_256mac")


def test_three_levels_price_the_edited_hierarchy_but_no_grid(tmp_path) -> None:
    """Past two on-chip levels the app prices the edited hierarchy only: a grid of 3-level
    hierarchies takes minutes (lenet5: more than 5 minutes in a browser, before), so the
    front is emptied and the summary says so; back at two levels the grid returns. Past
    four it says it shows four at most."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    tiny = layers.load_network(str(net)).tiled_layers()
    app = hierarchy_view(network=str(net), platform=levels_platform(16, 4), budget_kb=16,
                         grid_kb=GRID_KB)
    assert len(app.every_source.data["capacity_kb"]) > 0 and app.best is not None
    app.panel.add_level.click()  # L3: half of L2, 2 KB
    assert app.design.energy_pj == pytest.approx(_energy(levels_platform(16, 4, 2), tiny),
                                                 rel=1e-12)
    assert app.every_source.data["capacity_kb"] == [] and app.best is None
    shown = html.unescape(app.summary.value)
    assert "prices its grid for 1 to 2 on-chip levels; the 10 3-level hierarchies" in shown
    assert app.status.value == ""
    assert not app.front_figure.visible  # no empty plot with axes of nothing
    budget_controls = (app.axis_row, app.budget, app.area_budget)
    assert all(c.layout.display == "none" for c in budget_controls)  # nothing to budget
    app.panel.add_level.click()  # L4 1 KB
    app.panel.add_level.click()  # L5: more than the app shows
    assert "the app shows 1 to 4 on-chip levels, got 5; remove one" in app.status.value
    app.panel.remove_level.click()
    app.panel.remove_level.click()
    app.panel.remove_level.click()
    assert len(app.every_source.data["capacity_kb"]) > 0 and app.best is not None
    assert app.front_figure.visible and app.status.value == ""
    assert [c.layout.display for c in budget_controls] == [None, None, "none"]


def test_a_new_shape_says_its_grid_is_priced_until_the_summary_follows(tmp_path,
                                                                         monkeypatch) -> None:
    """A panel edit that makes a new shape (a level's width) prices that shape's co-design
    grid after the bars: the status line says so while the summary and the front are stale,
    and clears when they are done; a size edit within a priced shape shows nothing. The table
    shows counts with separators and energies without exponents."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(16, 4), budget_kb=16,
                         grid_kb=GRID_KB)
    seen = []
    real = type(app).update_budget
    monkeypatch.setattr(type(app), "update_budget",
                        lambda self: seen.append(html.unescape(self.status.value)) or real(self))
    app.panel.rows[2].access_bits.value = 128
    assert len(seen) == 1 and "pricing this shape's co-design grid" in seen[0]
    assert app.status.value == ""
    seen.clear()
    app.sizes[1].value = 2 * KB  # the 128-bit shape's grid is priced already
    assert seen == [""] and app.status.value == ""
    rows = app.designer.traffic_rows(app.design)
    cells = app.traffic.text.to_string()
    assert "e+" not in cells
    scale = {"pJ": 1, "nJ": 1e3, "µJ": 1e6, "mJ": 1e9, "J": 1e12}
    shown = [float(v) * scale[u] for v, u in
             (re.fullmatch(r"([\d.]+) (pJ|nJ|µJ|mJ|J)", c).groups()
              for c in app.traffic.text["energy"])]
    assert len(shown) == len(rows)  # one energy per row, in a unit that reads well
    for row, pj in zip(rows, shown, strict=True):
        assert pj == pytest.approx(row["energy_pj"], rel=6e-3)  # three digits


def test_an_edited_hierarchy_off_the_grid_that_beats_its_best_is_said() -> None:
    """The summary names the grid, and when the edited hierarchy (32 KB | 1 KB: off the 1, 4,
    16 KB grid) fits the budget and beats the grid's best, says by how much."""
    app = hierarchy_view(network="lenet5", platform=levels_platform(32, 1), budget_kb=64,
                         grid_kb=GRID_KB)
    edited = _energy(levels_platform(32, 1))
    best = min(e for s, e in {**_grid_energy(1), **_grid_energy(2)}.items() if sum(s) <= 64)
    shown = html.unescape(app.summary.value)
    assert "best of the grid: level sizes 1, 4, 16 KB" in shown
    assert edited < best
    assert f"the edited hierarchy is within 64 KB too and {1 - edited / best:.1%} lower" in shown
    app.sizes[0].value = 16 * KB  # 16 KB | 1 KB: on the grid, nothing to say
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
    app = hierarchy_view(network="lenet5", platform=levels_platform(16, 1), budget_kb=16,
                         grid_kb=GRID_KB, axis="area", area_budget_mm2=0.37)
    assert app.area_budget.value == 0.37 and app.area_budget.label == "0.37 mm²"
    assert "within 0.37 mm²" in app.summary.value


# --- layout ----------------------------------------------------------------------------------
# ipywidgets' own CSS: an inline control (slider, text, dropdown, checkbox) is 300 px wide
# with an 80 px label (a wider description adds the difference), a button 148 px
INLINE_PX, LABEL_PX, BUTTON_PX = 300, 80, 148


def _px(width: str | None) -> float | None:
    return float(width[:-2]) if width and width.endswith("px") else None


def _width(w: widgets.Widget) -> float:
    """The width a widget takes on the page (px): its layout's when given; a row the sum of
    its children, a column the widest; a bokeh plot its figure's; HTML wraps (0)."""
    if getattr(w.layout, "display", None) == "none":
        return 0.0
    model = getattr(w, "_model", None)
    if model is not None and hasattr(model, "width"):
        return float(model.width)
    given = _px(w.layout.width)
    if given is not None:
        return given
    if isinstance(w, widgets.HBox):
        return sum(_width(c) for c in w.children)
    if isinstance(w, widgets.Box):  # VBox, Accordion: the widest child
        return max((_width(c) for c in w.children), default=0.0)
    if isinstance(w, widgets.ToggleButtons):
        return len(w.options) * (_px(w.style.button_width) or BUTTON_PX)
    if isinstance(w, widgets.Button):
        return BUTTON_PX
    if isinstance(w, widgets.HTML):
        return 0.0
    label = _px(getattr(w.style, "description_width", "")) or LABEL_PX
    return INLINE_PX + max(0.0, label - LABEL_PX)


def test_the_layout_fits_1280_px(app) -> None:
    """Every row of the app (the panel's level rows, the budget controls beside the bars, the
    front) fits a 1280 px window."""
    _show(app, levels_platform(16, 1))
    for view in (app.view, app.panel.view):
        assert 600 < _width(view) <= SCREEN_PX, _width(view)
    row = app.panel.rows[1].view
    assert _width(row) == 118 * 4 + 250 + 90  # name, size slider, bits, energy, from size, bw
