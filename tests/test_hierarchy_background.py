"""The app's edits priced in a background thread (`ui.background`, `background=True`): edits
made while one is priced supersede it, so that only the newest is priced and shown, with the
same numbers as the app pricing on its own thread; stopping one thread's search leaves another
thread's search alone (`interrupt`); a search's progress reaches its own thread's watcher,
and the status line while an edit is priced."""

from __future__ import annotations

import re
import threading

import pandas as pd
import pytest
from app_platforms import levels_platform

from workbench import layers
from workbench.hierarchy import ElementBytes, Hierarchy, Level, interrupt
from workbench.hierarchy.codesign import table3_energy_pj
from workbench.hierarchy.prefetch import key_of
from workbench.hierarchy.search import search, sliced
from workbench.ui.background import Latest
from workbench.ui.hierarchy_view import HierarchyView, hierarchy_view

PREC = ElementBytes(2, 2, 2, 4)
TINY_NET = ("name: tiny\nlayers:\n"
            "  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3}\n"
            "  - {name: c2, type: conv, input: [4, 4, 4], maps: 4, kernel: 3}\n")


def _two_level() -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 16, 320.0), Level("L1", 4096, 64),
                      Level("L2", 512, 64)), mac_energy_pj=1.0)


def test_a_request_stops_only_the_thread_it_names() -> None:
    """`request(t)` stops t's next safe point once; `abandon(t)` every one until t resumes;
    the calling thread's own checks pass meanwhile."""
    seen, started, go = [], threading.Event(), threading.Event()

    def searching() -> None:
        started.set()
        go.wait(10)
        for _ in range(3):
            try:
                interrupt.check()
                seen.append("passed")
            except interrupt.Cancelled as exc:
                seen.append(str(exc))
        interrupt.resume()
        interrupt.check()
        seen.append("resumed")

    other = threading.Thread(target=searching)
    other.start()
    started.wait(10)
    interrupt.request(other.ident)
    interrupt.check()  # this thread is not asked
    go.set()
    other.join(10)
    assert seen == ["search cancelled", "passed", "passed", "resumed"]
    seen.clear()
    go.clear()
    started.clear()
    other = threading.Thread(target=searching)
    other.start()
    started.wait(10)
    interrupt.abandon(other.ident)
    assert not interrupt.abandoned()
    interrupt.check()
    go.set()
    other.join(10)
    assert seen == ["search abandoned"] * 3 + ["resumed"]


def test_latest_runs_the_newest_requests_once_and_supersedes_under_way() -> None:
    """Requests made while a run is under way are run together once it ends; a superseding one
    stops the run at its next safe point; an error is handed over and the thread goes on."""
    entered, release, runs, errors = threading.Event(), threading.Event(), [], []

    def work(kinds: frozenset[str]) -> None:
        runs.append(set(kinds))
        if len(runs) == 1:
            entered.set()
            release.wait(10)
            interrupt.check()  # the search's safe point
            runs.append("finished")
        if "boom" in kinds:
            raise ValueError("broken")

    latest = Latest(work, errors.append)
    latest.ask("edit")
    entered.wait(10)
    latest.ask("budget")  # waits for the run under way
    latest.ask("edit", supersede=True)
    latest.ask("edit", supersede=True)
    release.set()
    assert latest.wait(10)
    assert runs == [{"edit"}, {"budget", "edit"}]  # the first never finished
    assert (latest.runs, latest.superseded) == (2, 1) and not errors
    latest.ask("boom")
    assert latest.wait(10)
    latest.ask("edit")
    assert latest.wait(10)
    assert len(errors) == 1 and str(errors[0]) == "broken"
    assert runs[2:] == [{"boom"}, {"edit"}]
    latest.close()
    latest.ask("edit")  # closed: nothing more is run
    assert latest.wait(1) and len(runs) == 4


@pytest.mark.parametrize("prefetch", [False, True])
def test_quick_edits_are_priced_once_at_the_newest(tmp_path, monkeypatch, prefetch) -> None:
    """Edits made while one is being priced: the one under way is dropped, the ones between
    are never priced, and the newest is shown with the energy a cold search gives; an app
    pricing on its own thread shows the same numbers. With `prefetch` the worker process
    searches ahead; what this process prices is counted."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    tiny = layers.load_network(str(net)).tiled_layers()
    if prefetch:
        monkeypatch.setattr(HierarchyView, "_ahead", lambda self: [])  # nothing ahead
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         prefetch=prefetch, background=True)
    try:
        priced, entered, release = [], threading.Event(), threading.Event()
        real = app.designer.layer_result

        def gated(layer, hierarchy):
            if not app.designer.known_layer(layer, hierarchy):
                priced.append(key_of(hierarchy))
                if not entered.is_set():
                    entered.set()
                    release.wait(30)  # the first edit's search waits here
            return real(layer, hierarchy)

        app.designer.layer_result = gated
        app.sizes[0].value = 1 << 12   # 4 KB | 512 B: priced, then superseded
        assert entered.wait(30)
        app.sizes[1].value = 1 << 10   # 4 KB | 1 KB: never priced
        app.sizes[0].value = 1 << 13   # 8 KB | 1 KB: priced and shown
        assert app.background.wait(0.2) is False  # still on the first edit
        release.set()
        assert app.wait(120)
        first, between, newest = (app._hierarchy_at(e) for e in ((12, 9), (12, 10), (13, 10)))
        assert priced[0] == key_of(first) and key_of(between) not in priced
        if not prefetch:  # (the worker may search it)
            assert not app.designer.known(first)  # dropped at a safe point
        assert (app.background.runs, app.background.superseded) == (2, 1)
        assert key_of(app.design.hierarchy) == key_of(newest) and app.status.value == ""
        want = sum(search(lay, newest, app.designer.precision, table3_energy_pj).energy_pj
                   for lay in tiny)
        assert app.design.energy_pj == pytest.approx(want, rel=1e-12)
    finally:
        app.close()
    alone = hierarchy_view(network=str(net), platform=levels_platform(8, 1),
                           budget_kb=16, grid_kb=(1, 4))
    assert alone.design.energy_pj == app.design.energy_pj
    assert alone.summary.value == app.summary.value
    pd.testing.assert_frame_equal(alone.traffic.text, app.traffic.text)
    assert alone.energy_source.data == app.energy_source.data


def test_a_budget_move_waits_for_the_edit_under_way(tmp_path) -> None:
    """A budget move made while an edit is priced does not drop it: both are shown."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         background=True)
    try:
        entered, release = threading.Event(), threading.Event()
        real = app.designer.layer_result

        def gated(layer, hierarchy):
            entered.set()
            release.wait(30)
            return real(layer, hierarchy)

        app.designer.layer_result = gated
        app.sizes[0].value = 1 << 12
        assert entered.wait(30)
        app.budget.value = 11  # 2 KB
        release.set()
        assert app.wait(120)
        assert app.background.superseded == 0
        assert key_of(app.design.hierarchy) == key_of(app._hierarchy_at((12, 9)))
        assert "within 2 KB" in app.summary.value
    finally:
        app.close()


def test_an_unexpected_error_is_shown_and_the_app_goes_on(tmp_path) -> None:
    """An error the pricing did not expect is one line on the status, and the next edit is
    priced as usual."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         background=True)
    try:
        real, calls = app.designer.layer_result, []

        def broken_once(layer, hierarchy):
            calls.append(1)
            if len(calls) == 1:
                raise MemoryError("out of memory")
            return real(layer, hierarchy)

        app.designer.layer_result = broken_once
        shown = app.design
        app.sizes[0].value = 1 << 12
        assert app.wait(60)
        assert "MemoryError: out of memory" in app.status.value
        assert "still show the last hierarchy" in app.status.value and app.design is shown
        app.sizes[0].value = 1 << 13
        assert app.wait(60)
        assert app.status.value == ""
        assert key_of(app.design.hierarchy) == key_of(app._hierarchy_at((13, 9)))
    finally:
        app.close()


def test_a_search_reports_its_progress_to_its_own_thread_only(tmp_path) -> None:
    """A watched search reports fractions of its passes that never go back, from 0 to 1 (a
    layer of many slices: many of them); a search in another thread reports nothing here."""
    net = tmp_path / "one.yaml"
    net.write_text("name: one\nlayers:\n  - {name: c, type: conv, input: [12, 12, 12], "
                   "maps: 16, kernel: 3}\n")
    layer = layers.load_network(str(net)).tiled_layers()[0]
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("L1", 4096, 64),
                      Level("L2", 1024, 64), Level("L3", 256, 64)), mac_energy_pj=1.0)
    assert sliced(layer, hier)
    seen: list[float] = []
    interrupt.watch(seen.append)
    try:
        other = threading.Thread(target=search, args=(layer, _two_level(), PREC,
                                                      table3_energy_pj))
        other.start()
        other.join(120)
        assert seen == []  # the other thread's search
        found = search(layer, hier, PREC, table3_energy_pj)
    finally:
        interrupt.watch(None)
    assert found is not None and len(seen) > 10
    assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] == 1.0
    assert all(0.0 <= f <= 1.0 for f in seen)


def test_the_status_line_counts_layers_and_the_search_under_way(tmp_path,
                                                                monkeypatch) -> None:
    """While an edit is priced the status line says how many layers are done, how far the
    search under way is and for how long; it is cleared when the edit is shown."""
    from workbench.ui import hierarchy_view as view_module
    from workbench.ui.progress import searching

    monkeypatch.setattr(view_module, "searching",  # every report shown, not every 0.5 s
                        lambda status, text, counts: searching(status, text, counts, 0.0))
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         background=True)
    try:
        seen: list[str] = []
        app.status.observe(lambda change: seen.append(change["new"]), names="value")
        app.sizes[0].value = 1 << 12
        assert app.wait(60)
    finally:
        app.close()
    line = re.compile(r"<i>pricing the edited hierarchy: ([01]) of 2 layers done; the search "
                      r"under way (\d+)% done; [\d.]+ [mµ]?s…</i>")
    counts = [(int(m[1]), int(m[2])) for m in map(line.fullmatch, seen) if m]
    assert {c for c, _ in counts} == {0, 1}  # both layers searched, in order
    assert [c for c, _ in counts] == sorted(c for c, _ in counts)
    assert all(0 <= pct <= 100 for _, pct in counts)
    assert seen[-1] == ""


def test_the_cli_bar_says_how_far_the_search_under_way_is(tmp_path, monkeypatch,
                                                          capsys) -> None:
    """`workbench hierarchy`'s bar of layers (stderr) carries the search under way's
    fraction; without the bar nothing is written and no watcher is left behind."""
    from workbench.cli import hierarchy as hierarchy_cli
    from workbench.hierarchy.codesign import Codesigner

    net = tmp_path / "one.yaml"
    net.write_text("name: one\nlayers:\n  - {name: c, type: conv, input: [12, 12, 12], "
                   "maps: 16, kernel: 3}\n")
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("L1", 4096, 64),
                      Level("L2", 1024, 64), Level("L3", 256, 64)), mac_energy_pj=1.0)
    tiled = tuple(layers.load_network(str(net)).tiled_layers())
    monkeypatch.setattr(hierarchy_cli, "SHOW_EVERY_S", 0.0)
    hierarchy_cli.price_given(Codesigner(tiled, PREC, table3_energy_pj), hier, None, False)
    assert capsys.readouterr().err == "" and interrupt._watchers == {}
    hierarchy_cli.price_given(Codesigner(tiled, PREC, table3_energy_pj), hier, None, True)
    err = capsys.readouterr().err
    shown = [int(p) for p in re.findall(r"search under way (\d+)%", err)]
    assert "layers searched" in err and len(shown) > 5 and shown == sorted(shown)
    assert interrupt._watchers == {}


def _held_until_stopped(app, entered: threading.Event, which=lambda hierarchy: True):
    """Make the app's searches of `which` hierarchies wait, once entered, until the thread's
    pricing is abandoned (a search that only ends at a safe point)."""
    real = app.designer.layer_result

    def held(layer, hierarchy):
        if which(hierarchy) and not app.designer.known_layer(layer, hierarchy):
            entered.set()
            for _ in range(6000):
                interrupt.check()  # raises once the pricing is stopped
                threading.Event().wait(0.01)
            raise AssertionError("the stop never reached the search")
        return real(layer, hierarchy)

    app.designer.layer_result = held
    return real


def test_the_stop_button_ends_the_pricing_and_sets_the_controls_back(tmp_path) -> None:
    """A pricing under way is ended by the stop button (enabled only while one runs): the
    panel's sliders go back to the hierarchy the plots show, its design and bars stay, the status
    says so; nothing is counted as superseded, and the next edit is priced as usual (a cold
    search's energy). With nothing under way the button does nothing."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    tiny = layers.load_network(str(net)).tiled_layers()
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         background=True)
    try:
        assert app.stop.disabled and app.stop in app.view.children[2].children[0].children
        shown, bars = app.design, dict(app.energy_source.data)
        entered = threading.Event()
        real = _held_until_stopped(app, entered)
        app.sizes[0].value = 1 << 13  # 8 KB | 512 B: held
        assert entered.wait(30) and not app.stop.disabled
        app.stop.click()
        assert [s.value for s in app.sizes[:2]] == [1 << 11, 1 << 9]  # back at 2 KB | 512 B
        assert app.design is shown and dict(app.energy_source.data) == bars
        assert "stopped: the panel is back at the hierarchy shown (L1 2 KB | L2 512 B)" \
            in app.status.value
        assert (app.background.stopped, app.background.superseded) == (1, 0)
        assert app.stop.disabled and app.wait(1)  # the set-back sliders priced nothing
        assert not app.designer.known(app._hierarchy_at((13, 9)))
        app.stop.click()  # nothing under way: nothing happens
        assert app.background.stopped == 1 and "stopped" in app.status.value
        app.designer.layer_result = real
        app.sizes[1].value = 1 << 10  # 2 KB | 1 KB
        assert app.wait(120) and app.status.value == ""
        want = sum(search(lay, app._hierarchy_at((11, 10)), PREC, table3_energy_pj).energy_pj
                   for lay in tiny)
        assert app.design.energy_pj == pytest.approx(want, rel=1e-12)
    finally:
        app.close()


def test_a_stop_while_a_new_shapes_grid_is_priced_says_the_front_is_old(tmp_path) -> None:
    """Stopped after the edited hierarchy of a new shape (L1 read 128 bits at a time) was
    shown, while its grid was priced: the panel stays, the status says the front and summary
    are the previous shape's."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),
                         budget_kb=16, grid_kb=(1, 4),
                         background=True)
    try:
        front = dict(app.every_source.data)
        entered = threading.Event()
        edited = app.hierarchy().name
        _held_until_stopped(app, entered, lambda h: h.name != edited)  # grid ones only
        app.panel.rows[1].access_bits.value = 128
        assert entered.wait(60)
        app.stop.click()
        assert app.panel.rows[1].access_bits.value == 128
        assert app.design.hierarchy.levels[1].access_bits == 128  # the new shape is shown
        assert "grid is not priced; the front and the summary show the previous shape's" \
            in app.status.value
        assert dict(app.every_source.data) == front
    finally:
        app.close()
