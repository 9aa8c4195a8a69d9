"""Searches done ahead in worker processes (`prefetch`): what a worker hands over equals the
search run here, cold, hierarchy by hierarchy; the app searches nothing itself for a position
searched ahead, keeps its wanted list nearest first and in the edited shape, and still works
when its worker is gone."""

from __future__ import annotations

import json
import threading
import time

import pytest
from app_platforms import levels_platform

from workbench import layers
from workbench.cli import hierarchy as hierarchy_cli
from workbench.hierarchy import (
    ElementBytes,
    Hierarchy,
    Level,
    evaluate,
    interrupt,
    prefetch,
)
from workbench.hierarchy.codesign import (
    Codesigner,
    DesignSpace,
    LevelSlot,
    space_around,
    table3_energy_pj,
)
from workbench.hierarchy.prefetch import (
    PREEMPT,
    SHARES,
    Prefetcher,
    designs_together,
    key_of,
    nearest_first,
)
from workbench.hierarchy.search import search
from workbench.layers.spec import ConvLayer
from workbench.ui import progress
from workbench.ui.hierarchy_view import HierarchyView, hierarchy_view

PREC = ElementBytes(2, 2, 2, 4)
LAYERS = (ConvLayer(name="a", Ox=4, Oy=4, Oc=4, Kx=3, Ky=3, Kc=2),
          ConvLayer(name="b", Ox=2, Oy=2, Oc=8, Kx=1, Ky=1, Kc=4))
TINY_NET = ("name: tiny\nlayers:\n"
            "  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3}\n"
            "  - {name: c2, type: conv, input: [4, 4, 4], maps: 4, kernel: 3}\n")


def _hier(*caps: int) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 16, 320.0),
                      *(Level(f"L{i + 1}", c, 64) for i, c in enumerate(caps))),
                     mac_energy_pj=1.0)


HIERARCHIES = [_hier(64), _hier(256, 16), _hier(1024, 64), _hier(8), _hier(4, 2)]


def test_results_searched_ahead_equal_cold_searches_here() -> None:
    """Every hierarchy searched by the worker is taken into the designer, which then searches
    none itself; each layer's energy equals a cold `search` here, and its blocking fits and
    costs that energy by `evaluate`."""
    designer = Codesigner(LAYERS, PREC, table3_energy_pj)
    prefetcher = Prefetcher(designer, workers=1)
    try:
        prefetcher.want(HIERARCHIES)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert prefetcher.take() == len(HIERARCHIES) * len(LAYERS)
        assert all(designer.known(h) for h in HIERARCHIES)
        for hier in HIERARCHIES:
            design = designer.design(hier)
            for layer, energy, blocking in zip(LAYERS, design.layer_energy_pj,
                                               design.blockings, strict=True):
                cold = search(layer, hier, PREC, table3_energy_pj).energy_pj
                assert energy == pytest.approx(cold, rel=1e-12)
                priced = evaluate(layer, blocking, hier, PREC, table3_energy_pj)
                assert priced.fits and priced.total_energy_pj == pytest.approx(cold, rel=1e-12)
        assert designer.ran == 0  # nothing was searched here
        prefetcher.want(HIERARCHIES)  # all known: nothing is wanted again
        assert prefetcher.pending == []
    finally:
        prefetcher.close()


def test_claim_drops_a_wanted_hierarchy_and_a_dead_worker_is_survived() -> None:
    """A claimed hierarchy leaves the wanted list (and is taken when the worker had it); when
    the worker dies the prefetcher says so and stops waiting, and the designer searches
    itself."""
    designer = Codesigner(LAYERS, PREC, table3_energy_pj)
    prefetcher = Prefetcher(designer, workers=1)
    try:
        prefetcher.want(HIERARCHIES)
        claimed = HIERARCHIES[2]
        taken = prefetcher.claim(claimed, 1)
        assert (key_of(claimed), 1) not in {(key_of(h), i) for h, i in prefetcher.pending}
        assert taken == designer.known_layer(LAYERS[1], claimed)
        prefetcher.wait_idle(120)
        process, _ = prefetcher._workers[0]
        process.kill()
        process.wait(10)
        prefetcher.want([_hier(512), _hier(128, 8)])
        assert prefetcher.wait_idle(60) and prefetcher.alive == 0
        assert len(prefetcher.failed) == 1  # the item it was given when it died
        assert designer.design(_hier(512)) is not None and designer.ran == len(LAYERS)
    finally:
        prefetcher.close()


def _until(condition, seconds: float = 120) -> bool:
    for _ in range(int(seconds * 100)):
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_an_edit_preempts_the_search_ahead() -> None:
    """`want(..., preempt=True)` makes a worker drop a long search not in the new list (lenet5
    conv2 on three levels, about 10 s) and take the list: the dropped item is reported
    cancelled and known nowhere, the new one's result equals a cold search here, and a later
    `want` listing the dropped item wants it again."""
    conv2 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv2")
    designer = Codesigner((conv2,), PREC, table3_energy_pj)
    slow, quick = _hier(32768, 2048, 512), _hier(32768, 1024)
    prefetcher = Prefetcher(designer, workers=1)
    try:
        prefetcher.want([slow])
        assert _until(lambda: prefetcher.started)
        prefetcher.want([quick], preempt=True)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert prefetcher.cancelled == [(key_of(slow), 0)]
        assert prefetcher.take() == 1 and designer.ran == 0
        assert designer.known(quick) and not designer.known(slow)
        cold = search(conv2, quick, PREC, table3_energy_pj).energy_pj
        assert designer.design(quick).energy_pj == pytest.approx(cold, rel=1e-12)
        prefetcher.want([slow, quick])
        assert [(key_of(h), i) for h, i in prefetcher.pending] == [(key_of(slow), 0)]
    finally:
        prefetcher.close()


def test_a_sliced_layer_needed_now_is_searched_in_shares(tmp_path) -> None:
    """`want(..., shared=True)` then `design`: the sliced layer is searched in 2 × SHARES
    shares, share 0 here, share 1 by the worker, each of the others once by whichever process
    is free first; then the layer of one slice whole; the design's energies equal cold
    searches here. The progress this thread's watcher sees for the sliced layer is the
    layer's, not a share's: it never goes back from one share to the next and reaches 1."""
    net = tmp_path / "two.yaml"
    net.write_text("name: two\nlayers:\n"
                   "  - {name: big, type: conv, input: [12, 14, 12], maps: 16, kernel: 3}\n"
                   "  - {name: small, type: conv, input: [16, 12, 12], maps: 4, kernel: 3}\n")
    big, small = layers.load_network(str(net)).tiled_layers()
    designer = Codesigner((big, small), PREC, table3_energy_pj)
    hier = _hier(4096, 1024, 256)
    assert designer.shares(big, hier) and not designer.shares(small, hier)
    prefetcher = Prefetcher(designer, workers=1)
    try:
        prefetcher.want([_hier(64)])  # the worker is ready once this is done
        assert prefetcher.wait_idle(120) and prefetcher.take() == 2
        ran = designer.ran
        prefetcher.want([hier], last_layer_first=True, preempt=True, shared=True)
        n = SHARES * 2
        assert [(i, *share) for _, i, *share in prefetcher.pending] == [
            *((0, (k, n)) for k in range(1, n)), (1,)]
        seen = []  # (fraction, whether the sliced layer is known)
        interrupt.watch(lambda f: seen.append((f, designer.known_layer(big, hier))))
        try:
            design = prefetcher.design(hier)
        finally:
            interrupt.watch(None)
        assert prefetcher.started[2] == (key_of(hier), 0, (1, n))
        shared = [k for k in prefetcher.started[2:] if len(k) == 3]
        assert len(set(shared)) == len(shared) < n  # share 0 (at least) here
        whole = (key_of(hier), 1)  # here if it was first to it, or raced the worker's
        small_here = whole not in prefetcher.started or whole in prefetcher.raced
        assert designer.ran - ran == n - len(shared) + small_here  # each share searched once
        sliced = [f for f, known in seen if not known]
        assert sliced == sorted(sliced) and sliced[-1] == pytest.approx(1.0)
        assert any(0 < f < 1 / n for f in sliced)  # share 0's own steps, parts of the layer
        for layer, energy in zip((big, small), design.layer_energy_pj, strict=True):
            cold = search(layer, hier, PREC, table3_energy_pj).energy_pj
            assert energy == pytest.approx(cold, rel=1e-12)
        assert designer.known(hier) and not designer.shares(big, hier)
    finally:
        prefetcher.close()


def _one_sliced_layer(tmp_path) -> tuple[ConvLayer, Hierarchy]:
    """A layer of many slices on three levels (searched in shares), and those levels."""
    net = tmp_path / "one.yaml"
    net.write_text("name: one\nlayers:\n"
                   "  - {name: big, type: conv, input: [12, 14, 12], maps: 16, kernel: 3}\n")
    (big,) = layers.load_network(str(net)).tiled_layers()
    return big, _hier(4096, 1024, 256)


def test_shares_survive_their_worker_dying(tmp_path) -> None:
    """The worker killed while it searches a share: this process searches what is left, and
    the design's energies equal cold searches here."""
    big, hier = _one_sliced_layer(tmp_path)
    prefetcher = Prefetcher(Codesigner((big,), PREC, table3_energy_pj), workers=1)
    try:
        prefetcher.want([_hier(64)])  # the worker is ready once this is done
        assert prefetcher.wait_idle(120)
        process = prefetcher._workers[0][0]

        def kill_at_its_first_share() -> None:
            if _until(lambda: len(prefetcher.started) > 1):
                process.kill()

        killer = threading.Thread(target=kill_at_its_first_share)
        killer.start()
        prefetcher.want([hier], last_layer_first=True, shared=True)
        design = prefetcher.design(hier)
        killer.join()
        assert prefetcher.alive == 0 and len(prefetcher.failed) == 1
        cold = search(big, hier, PREC, table3_energy_pj).energy_pj
        assert design.energy_pj == pytest.approx(cold, rel=1e-12)
    finally:
        prefetcher.close()


def test_a_3_level_edit_shares_its_sliced_layer_with_the_worker(tmp_path,
                                                               monkeypatch) -> None:
    """The app edited to three levels: the worker searches shares of the sliced layer (none
    of them also here), and the app shows the cold searches' energies."""
    net = tmp_path / "two.yaml"
    net.write_text("name: two\nlayers:\n"
                   "  - {name: big, type: conv, input: [12, 14, 12], maps: 16, kernel: 3}\n"
                   "  - {name: small, type: conv, input: [16, 12, 12], maps: 4, kernel: 3}\n")
    monkeypatch.setattr(HierarchyView, "_ahead", lambda self: [])  # nothing searched ahead
    app = hierarchy_view(network=str(net), platform=levels_platform(4, 1), budget_kb=16,
                         grid_kb=(1, 4), prefetch=True)
    try:
        assert app.prefetcher.wait_idle(120)
        ran, before = app.designer.ran, len(app.prefetcher.started)
        app.panel.add_level.click()  # L3 512 B (half of L2)
        hier = app.hierarchy()
        assert len(hier.levels) == 4 and not app.status.value
        shared = [k for k in app.prefetcher.started[before:] if len(k) == 3]
        assert shared and all(k[0] == key_of(hier) and k[1] == 0 for k in shared)
        assert app.designer.ran - ran <= SHARES * 2 - len(shared) + 1  # the rest, and small
        tiny = layers.load_network(str(net)).tiled_layers()
        for layer, energy in zip(tiny, app.design.layer_energy_pj, strict=True):
            cold = search(layer, hier, PREC, table3_energy_pj).energy_pj
            assert energy == pytest.approx(cold, rel=1e-12)
    finally:
        app.close()


def test_a_stray_interrupt_does_not_lose_the_item() -> None:
    """A worker interrupted without being asked to drop its item (a stray SIGUSR1) searches it
    again: it is done, not cancelled, and equals a cold search."""
    signal = pytest.importorskip("signal")
    if not hasattr(signal, "SIGUSR1"):
        pytest.skip("no SIGUSR1 here: searches are never pre-empted")
    conv1 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv1")
    designer = Codesigner((conv1,), PREC, table3_energy_pj)
    hier = _hier(4096, 1024, 256)
    prefetcher = Prefetcher(designer, workers=1)
    try:
        prefetcher.want([hier])
        assert _until(lambda: prefetcher.started)
        prefetcher._workers[0][0].send_signal(signal.SIGUSR1)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert prefetcher.cancelled == [] and prefetcher.started == [(key_of(hier), 0)] * 2
        assert prefetcher.take() == 1 and designer.ran == 0
        cold = search(conv1, hier, PREC, table3_energy_pj).energy_pj
        assert designer.design(hier).energy_pj == pytest.approx(cold, rel=1e-12)
    finally:
        prefetcher.close()


def _blocked(pid: int) -> bool:
    """Whether the process sleeps in a system call (Linux; elsewhere: after 0.5 s)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "S"
    except OSError:
        time.sleep(0.5)
        return True


def test_a_drop_request_sent_before_the_worker_reads_its_item_is_kept() -> None:
    """A worker asked to drop an item it was given but has not read yet (stopped here until
    the request is sent) drops it once it reads it: the item is reported cancelled, not
    searched to its end (lenet5 conv2 on three levels, about 10 s), and known nowhere."""
    signal = pytest.importorskip("signal")
    if PREEMPT is None or not hasattr(signal, "SIGSTOP"):
        pytest.skip("no SIGUSR1 or SIGSTOP here")
    conv2 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv2")
    designer = Codesigner((conv2,), PREC, table3_energy_pj)
    first, slow = _hier(32768), _hier(32768, 2048, 512)
    prefetcher = Prefetcher(designer, workers=1)
    process = prefetcher._workers[0][0]
    try:
        prefetcher.want([first])  # answered: the worker reads items, its handler in place
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert _until(lambda: _blocked(process.pid))  # in its read of the next item
        process.send_signal(signal.SIGSTOP)
        try:
            prefetcher.want([slow])
            assert _until(lambda: len(prefetcher.started) == 2)
            prefetcher.want([], preempt=True)  # before the stopped worker has read `slow`
        finally:
            process.send_signal(signal.SIGCONT)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert prefetcher.cancelled == [(key_of(slow), 0)]
        assert prefetcher.take() == 1 and designer.known(first) and not designer.known(slow)
    finally:
        prefetcher.close()


def test_logs_keep_their_latest_entries_and_abandoned_shares_are_dropped(monkeypatch) -> None:
    """A long-lived app's prefetcher stays bounded: each log keeps its latest `LOG` entries
    (`started` here: the last three of ten items, in order), and wanting another hierarchy in
    shares drops the share answers held for an abandoned one, keeping the wanted one's."""
    monkeypatch.setattr(prefetch, "LOG", 3)
    prefetcher = Prefetcher(Codesigner(LAYERS, PREC, table3_energy_pj), workers=1)
    try:
        prefetcher.want(HIERARCHIES)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        order = [(key_of(h), i) for h in HIERARCHIES for i in range(len(LAYERS))]
        assert prefetcher.started == order[-3:]
        gone, kept = (key_of(HIERARCHIES[0]), 0, (1, 4)), (key_of(HIERARCHIES[1]), 0, (1, 4))
        with prefetcher._cond:  # as a kernel interrupt leaves them
            prefetcher._shares.update({gone: None, kept: None})
            prefetcher._shared.update({gone[:2]: 4, kept[:2]: 4})
        prefetcher.want([HIERARCHIES[1]], shared=True)
        assert set(prefetcher._shares) == {kept} and set(prefetcher._shared) == {kept[:2]}
    finally:
        prefetcher.close()


def test_nearest_first_ranks_by_slider_steps() -> None:
    """Positions by the sum of slider steps from the current one (itself left out), ties in
    lexicographic order, at most `limit`."""
    points = [(a, b) for a in range(8, 13) for b in range(8, a + 1)]
    got = nearest_first(points, (10, 9), lambda p: p, 6)
    assert got == [(9, 9), (10, 8), (10, 10), (11, 9), (9, 8), (11, 8)]
    assert len(nearest_first(points, (10, 9), lambda p: p, 100)) == len(points) - 1


def _sizes(levels) -> tuple:
    return tuple(lvl.capacity_bytes for lvl in levels[1:])


def test_app_jumps_and_toggles_to_what_was_searched_ahead_without_searching(tmp_path) -> None:
    """With `prefetch`, the app wants the level sliders' positions one step away first, then
    the edited sizes with a level fewer or more (the panel's buttons) with their grids, then
    every other position, nearest first. Once they are searched, jumps and a level removed
    search nothing here and show the cold search's energy; the removal re-aims the list at
    the new shape; `close` stops the worker."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5), budget_kb=16,
                         grid_kb=(1, 4), prefetch=True)
    tiny = layers.load_network(str(net)).tiled_layers()
    try:
        assert app.prefetcher.wait_idle(600) and not app.prefetcher.failed
        grid = {key_of(h) for h in space_around(app.hierarchy(), app.grid_bytes)
                .gen_hierarchies()}  # priced at the start, shared with the worker
        grid.add(key_of(app.hierarchy()))  # and the edited one
        started = [k for k in dict.fromkeys(k for k, _ in app.prefetcher.started)
                   if k not in grid]  # hierarchies, in the order the worker took them
        assert len(set(started)) == len(started)
        assert sorted(_sizes(k[0]) for k in started[:4]) == [
            (1024, 512), (2048, 256), (2048, 1024), (4096, 512)]
        shared = [k for k in started if k[0][1].access_bits == 64
                  and k[2] == app.hierarchy().datapath
                  and isinstance(k[0][1].capacity_bytes, int) and len(k[0]) == 3]
        assert len(shared) == 153 - 1 - 3  # every other position but the grid's 3 (known)
        toggles = started[4:started.index(shared[4])]
        fewer = app._hierarchy_at((11,))
        changed = [fewer, app._hierarchy_at((11, 9, 8))]
        grids = [g for h in changed if len(h.levels) <= 3
                 for g in app._space(h).gen_hierarchies()]
        assert set(toggles) == {key_of(h) for h in changed + grids}
        steps = [sum(abs(e - lvl.capacity_bytes.bit_length() + 1)
                     for e, lvl in zip((11, 9), k[0][1:], strict=True)) for k in shared]
        assert steps == sorted(steps)  # nearest first
        ran = app.designer.ran
        app.sizes[0].value = 1 << 16   # 64 KB | 512 B
        app.sizes[1].value = 1 << 12   # 64 KB | 4 KB
        assert app.designer.ran == ran and app.status.value == ""
        hier = app.hierarchy()
        want = sum(search(lay, hier, PREC, table3_energy_pj).energy_pj for lay in tiny)
        assert app.design.energy_pj == pytest.approx(want, rel=1e-12)
        app.sizes[0].value, app.sizes[1].value = 1 << 11, 1 << 9
        assert app.prefetcher.wait_idle(600)
        before = len(app.prefetcher.started)
        app.panel.remove_level.click()  # searched ahead with its grid
        assert key_of(app.hierarchy()) == key_of(fewer)
        grid = list(app._space(fewer).gen_hierarchies())
        assert app.designer.ran == ran and len(app.every_source.data["capacity_kb"]) == len(grid)
        want = sum(search(lay, fewer, PREC, table3_energy_pj).energy_pj for lay in tiny)
        assert app.design.energy_pj == pytest.approx(want, rel=1e-12)
        assert app.prefetcher.wait_idle(600)
        again = list(dict.fromkeys(k for k, _ in app.prefetcher.started[before:]))
        # one level now: 1 and 4 KB, a step away, are on its grid (known); then two steps
        assert set(again[:2]) == {key_of(app._hierarchy_at(p)) for p in ((9,), (13,))}
        assert all(len(k[0]) == 2 for k in again)
    finally:
        app.close()
    assert all(p.poll() is not None for p, _ in app.prefetcher._workers)


def test_a_new_shapes_grid_is_shared_with_the_worker(tmp_path, monkeypatch) -> None:
    """A shape change whose grid was not searched ahead prices the edited hierarchy and the
    grid from both ends, this process from the first layer and hierarchy, the worker from the
    last: every grid design's energy equals the cold searches here."""
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    monkeypatch.setattr(HierarchyView, "_ahead", lambda self: [])  # nothing searched ahead:
    app = hierarchy_view(network=str(net), platform=levels_platform(2, 0.5),  # the grid below
                         budget_kb=16, grid_kb=(0.5, 1, 2, 4, 8), prefetch=True)  # is new
    tiny = layers.load_network(str(net)).tiled_layers()
    try:
        assert app.prefetcher.wait_idle(60)
        ran, before = app.designer.ran, len(app.prefetcher.started)
        searched_here = app.designer.layer_result

        def after_the_workers_turn(layer, hierarchy):
            # this process, warm, is quicker than the worker (cold memo, its own pump thread):
            # the edited hierarchy waits for the worker's first start, the grid for its second
            # (on a slow machine this process could otherwise price the whole grid while the
            # worker is still on its first search)
            need = before + (1 if key_of(hierarchy) == key_of(app.hierarchy()) else 2)
            deadline = time.monotonic() + 120
            while len(app.prefetcher.started) < need and time.monotonic() < deadline:
                time.sleep(0.01)
            return searched_here(layer, hierarchy)

        app.designer.layer_result = after_the_workers_turn
        app.panel.rows[1].access_bits.value = 256  # a new shape
        grid = list(space_around(app.hierarchy(), app.grid_bytes).gen_hierarchies())
        energies = {h.name: sum(search(lay, h, PREC, table3_energy_pj).energy_pj
                                for lay in tiny) for h in grid}
        data = app.every_source.data
        assert sorted(data["name"]) == sorted(energies)
        for name, pj_per_mac in zip(data["name"], data["pj_per_mac"], strict=True):
            assert pj_per_mac * app.macs == pytest.approx(energies[name], rel=1e-12)
        by_worker = app.prefetcher.started[before:]
        assert by_worker[0] == (key_of(app.hierarchy()), 1)  # the edited one's last layer
        assert (key_of(grid[-1]), 1) in by_worker  # then the grid from its far end
        assert (key_of(grid[0]), 0) not in by_worker
        assert app.designer.ran - ran < len(tiny) * (len(grid) + 1)  # not all searched here
    finally:
        app.close()


def test_designs_together_equal_the_designs_here(tmp_path) -> None:
    """A list priced from both ends (this process and a worker) gives, hierarchy by
    hierarchy, the designs this process prices alone; so does the notebooks' bar, and the
    CLI's co-design prints the same document with `--workers 1`."""
    alone = Codesigner(LAYERS, PREC, table3_energy_pj)
    want = [alone.design(h) for h in HIERARCHIES]
    got = list(designs_together(Codesigner(LAYERS, PREC, table3_energy_pj), HIERARCHIES, 1))
    assert [d.hierarchy for d in got] == HIERARCHIES
    for a, b in zip(want, got, strict=True):
        assert b.layer_energy_pj == pytest.approx(a.layer_energy_pj, rel=1e-12)
    space = DesignSpace(Level("DRAM", None, 16, 320.0),
                        (LevelSlot("SRAM", 64, (256, 1024, 4096)),
                         LevelSlot("RF", 64, (None, 16, 64))), 1.0)
    serial = progress.designs(Codesigner(LAYERS, PREC, table3_energy_pj), [space],
                              enabled=False)
    shared = progress.designs(Codesigner(LAYERS, PREC, table3_energy_pj), [space],
                              enabled=False, workers=1)
    assert [d.hierarchy for d in shared] == [d.hierarchy for d in serial]
    assert [d.energy_pj for d in shared] == pytest.approx([d.energy_pj for d in serial],
                                                          rel=1e-12)
    net = tmp_path / "tiny.yaml"
    net.write_text(TINY_NET)
    one = hierarchy_cli.run(str(net), "seed001_two_level", budget_kb=8)
    two = hierarchy_cli.run(str(net), "seed001_two_level", budget_kb=8, workers=1)
    assert json.dumps(two) == json.dumps(one)


def test_the_cli_shares_the_given_hierarchy_with_its_workers(tmp_path, monkeypatch) -> None:
    """`workbench hierarchy --workers 1` on a given three-level hierarchy: its sliced layer is
    searched in shares by both processes, the plan searches nothing again, and each layer's
    energy (the rows' sum by layer) equals a cold search here and the run without workers."""
    from workbench.explore import hierarchy_plan as plan

    net = tmp_path / "two.yaml"
    net.write_text("name: two\nlayers:\n"
                   "  - {name: big, type: conv, input: [12, 14, 12], maps: 16, kernel: 3}\n"
                   "  - {name: small, type: conv, input: [16, 12, 12], maps: 4, kernel: 3}\n")
    levels = tmp_path / "three.yaml"
    levels.write_text("name: three\nmac_energy_pj: 1.0\nlevels:\n"
                      "  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 320}\n"
                      + "".join(f"  - {{name: L{i + 1}, capacity: {c}, access_bits: 64, "
                                "energy_pj: null}\n" for i, c in enumerate((4096, 1024, 256))))
    made, searched = [], []

    class Recording(Prefetcher):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(hierarchy_cli, "Prefetcher", Recording)
    monkeypatch.setattr(plan, "search", lambda *a, **k: searched.append(a[0].name) or
                        search(*a, **k))
    both = hierarchy_cli.run(str(net), str(levels), workers=1)
    assert not searched  # the plan took the designer's results (no second search)
    (prefetcher,) = made
    shared = [k for k in prefetcher.started if len(k) == 3]
    assert shared and all(k[1] == 0 for k in shared)  # the worker took shares of `big`
    alone = hierarchy_cli.run(str(net), str(levels))
    assert len(made) == 1 and not searched
    hier = hierarchy_cli.target_of(str(levels), None, None, None)[0]
    for doc in (both, alone):
        by_layer: dict[str, float] = {}
        for row in doc["rows"]:
            by_layer[row["layer"]] = by_layer.get(row["layer"], 0.0) + row["energy_pj"]
        for layer in layers.load_network(str(net)).tiled_layers():
            cold = search(layer, hier, PREC, table3_energy_pj).energy_pj
            assert by_layer[layer.name] == pytest.approx(cold, rel=1e-12)
        assert doc["given"]["energy_pj"] == pytest.approx(sum(by_layer.values()), rel=1e-12)


def test_a_layer_a_worker_has_is_searched_here_too_and_the_first_answer_wins() -> None:
    """`design` reaching a layer the worker is searching searches it here as well: when the
    worker answers first, the search here is interrupted and the worker's result taken; when
    this process answers first, the worker drops its search. Either way the design's energy
    equals a cold search here."""
    if PREEMPT is None:
        pytest.skip("no SIGUSR1 here: a worker's search is never dropped")
    conv1 = next(lay for lay in layers.load_network("lenet5").tiled_layers()
                 if lay.name == "conv1")
    hier = _hier(4096, 1024, 256)
    cold = search(conv1, hier, PREC, table3_energy_pj)
    interrupted = []

    def endless(*args, **kwargs):  # a search here that only ends when interrupted
        for _ in range(12000):
            try:
                interrupt.check()
            except interrupt.Cancelled:
                interrupted.append(True)
                raise
            time.sleep(0.01)
        raise AssertionError("the worker's answer did not interrupt the search here")

    for search_here, worker_wins in ((endless, True), (lambda *a, **k: cold, False)):
        interrupted.clear()
        designer = Codesigner((conv1,), PREC, table3_energy_pj, search_fn=search_here)
        prefetcher = Prefetcher(designer, workers=1)
        try:
            prefetcher.want([hier])
            assert _until(lambda: prefetcher.started)  # noqa: B023
            design = prefetcher.design(hier)
            assert prefetcher.raced == [(key_of(hier), 0)]
            assert design.energy_pj == pytest.approx(cold.energy_pj, rel=1e-12)
            assert prefetcher.wait_idle(120) and not prefetcher.failed
            assert interrupted == [True] * worker_wins
            assert prefetcher.cancelled == ([] if worker_wins else [(key_of(hier), 0)])
        finally:
            prefetcher.close()


def test_shares_answered_for_an_abandoned_design_are_not_searched_again(tmp_path) -> None:
    """A design abandoned after its shares were wanted (a kernel interrupt): the shares the
    worker answered meanwhile are not wanted again by the next `want`, the next `design` takes
    them (none is left over), and its energy equals a cold search."""
    big, hier = _one_sliced_layer(tmp_path)
    prefetcher = Prefetcher(Codesigner((big,), PREC, table3_energy_pj), workers=1)
    try:
        prefetcher.want([hier], last_layer_first=True, shared=True)  # then no `design`
        assert _until(lambda: prefetcher._shares, seconds=120)
        with prefetcher._cond:  # what the worker answered so far, and the new list
            answered = set(prefetcher._shares)
            prefetcher.want([hier], last_layer_first=True, shared=True)
        assert not answered & {(key_of(h), i, *share) for h, i, *share in prefetcher.pending}
        design = prefetcher.design(hier)
        assert prefetcher.wait_idle(120) and not prefetcher.failed
        assert all(prefetcher.started.count(k) == 1 for k in answered)
        assert prefetcher._shares == {}
        cold = search(big, hier, PREC, table3_energy_pj).energy_pj
        assert design.energy_pj == pytest.approx(cold, rel=1e-12)
    finally:
        prefetcher.close()


def test_progress_of_a_layer_in_shares_is_the_layers() -> None:
    """`_shares_of` with no worker free: this thread searches all n = 3 shares; each share's
    search reports 0, 1/2, 1 of itself, and the watcher sees the layer's fraction, 0 … 1
    once (it started again at each share before), and answers a worker gave count too."""
    class Shares:  # a designer whose share searches report half-way and done
        layers = [None]

        def layer_share(self, layer, hierarchy, share, found=None):
            for fraction in (0.0, 0.5, 1.0):
                interrupt.progress(fraction)
            return share

    def fractions(given: dict) -> list[float]:
        prefetcher = Prefetcher.__new__(Prefetcher)  # its share loop alone: no processes
        prefetcher.designer, prefetcher._cond = Shares(), threading.Condition()
        prefetcher._shares, prefetcher._wanted, prefetcher._running = dict(given), [], {}
        seen = []
        interrupt.watch(seen.append)
        try:
            assert sorted(prefetcher._shares_of(HIERARCHIES[0], 0, 3)) == [(0, 3), (1, 3),
                                                                            (2, 3)]
        finally:
            interrupt.watch(None)
        return seen

    assert fractions({}) == pytest.approx([0, 1 / 6, 1 / 3, 1 / 3, 1 / 2, 2 / 3, 2 / 3,
                                           5 / 6, 1])
    by_worker = {(key_of(HIERARCHIES[0]), 0, (2, 3)): (2, 3)}  # share 2 answered already
    assert fractions(by_worker) == pytest.approx([0, 1 / 6, 1 / 3, 2 / 3, 2 / 3, 5 / 6, 1])
    seen = []  # a part with no watcher reports nothing, and the watcher is back after it
    with interrupt.part(1, 3):
        interrupt.progress(0.5)
    interrupt.watch(seen.append)
    try:
        with interrupt.part(1, 4):
            interrupt.progress(2.0)  # clamped to the part
        interrupt.progress(0.25)
    finally:
        interrupt.watch(None)
    assert seen == [0.5, 0.25]
