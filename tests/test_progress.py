"""Notebook progress: the stepwise tables equal the engine's one-call tables, the app's
progress bar counts the layers, and the status line shows while work runs."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import pytest

from workbench import explore, layers, quant
from workbench.quant import mnist
from workbench.tiling.dataflow import Precision
from workbench.ui import progress


def test_traffic_table_stepwise_equals_one_call_and_counts_layers() -> None:
    net = layers.load_network("lenet5")
    convs = [lay for lay in net.tiled_layers() if lay.kind == "conv"]
    sizes, models, precision = [1024, 16384], ["seed000", "dataflow"], Precision(1, 1, 1, 4)
    bar = widgets.IntProgress()
    seen: list[int] = []
    bar.observe(lambda change: seen.append(change["new"]), names="value")
    got = progress.traffic_table(convs, sizes, models, precision, progress=bar)
    want = explore.traffic_table(convs, sizes, models, precision)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    assert bar.max == 2 and seen == [1, 2]
    quiet = progress.traffic_table(convs, sizes, models, precision, enabled=False)
    pd.testing.assert_frame_equal(quiet, got)


def test_accuracy_table_stepwise_equals_one_call(capsys) -> None:
    net = layers.load_network("lenet5")
    params = quant.load_weights("lenet5_mnist.npz", net)
    x, y = mnist.load("calib")
    tx, ty = mnist.load("test")
    args = (net, params, x[:40], y[:40], tx[:60], ty[:60], [16])
    got = progress.accuracy_table(*args, bounds=("worst", "data"), overflows=("wrap",))
    want = quant.accuracy_table(*args, bounds=("worst", "data"), overflows=("wrap",))
    pd.testing.assert_frame_equal(got, want)
    assert "accuracy per accumulator width" in capsys.readouterr().err  # the bar, on stderr
    assert list(got["bound"]) == ["worst", "data"]


def test_busy_shows_the_work_then_times_it() -> None:
    status = widgets.HTML()
    seen: list[str] = []
    status.observe(lambda change: seen.append(change["new"]), names="value")
    with progress.busy(status, "computing vgg16") as timing:
        assert "computing vgg16…" in status.value
    assert timing["seconds"] >= 0 and seen == [status.value]
    assert progress.took(0.2) == "" and progress.took(3.2) == " (3.20 s)"


def test_busy_says_when_it_was_interrupted() -> None:
    """A kernel interrupt inside the block leaves a line saying so (not the busy line), and
    the interrupt goes on."""
    status = widgets.HTML()
    with pytest.raises(KeyboardInterrupt), progress.busy(status, "pricing the hierarchy"):
        raise KeyboardInterrupt
    assert "pricing the hierarchy: interrupted" in status.value
    assert not status.value.endswith("hierarchy…</i>")  # not the busy line


def test_traffic_table_shows_its_searches(capsys) -> None:
    """`workbench traffic` (and the API with progress=True) counts (layer, model) searches
    on stderr with elapsed time and ETA; without progress nothing is written."""
    from workbench import explore, layers

    convs = layers.load_network("lenet5").tiled_layers()[:2]
    explore.traffic_table(convs, [16384], ["seed000", "dataflow"], progress=True)
    err = capsys.readouterr().err
    assert "traffic: 100%" in err and "4/4 [" in err
    explore.traffic_table(convs, [16384], ["seed000"])
    assert capsys.readouterr().err == ""


def test_designs_stepwise_equal_the_codesigners(capsys) -> None:
    """The seed-comparison cell's bar: each space's designs, in order, as
    `Codesigner.designs` gives them (a fresh designer each, so nothing is recalled), one bar
    step per hierarchy."""
    from workbench.hierarchy import ElementBytes, Level
    from workbench.hierarchy.codesign import (
        Codesigner,
        DesignSpace,
        LevelSlot,
        table3_energy_pj,
    )

    convs = tuple(lay for lay in layers.load_network("lenet5").tiled_layers()
                  if lay.kind == "conv")
    dram = Level("DRAM", None, 16, 320.0)
    one = DesignSpace(dram, (LevelSlot("SRAM", 64, (1024, 16384)),), 1.0)
    two = DesignSpace(dram, (LevelSlot("SRAM", 64, (16384,)), LevelSlot("RF", 64, (512,))), 1.0)
    prec = ElementBytes(2, 2, 2, 4)
    got = progress.designs(Codesigner(convs, prec, table3_energy_pj), [one, two])
    want_designer = Codesigner(convs, prec, table3_energy_pj)
    want = want_designer.designs(one) + want_designer.designs(two)
    assert [(d.hierarchy, d.energy_pj) for d in got] == [(d.hierarchy, d.energy_pj)
                                                          for d in want]
    assert len(got) == 3 and "hierarchies priced" in capsys.readouterr().err


def test_the_status_line_keeps_time_between_a_searchs_reports() -> None:
    """A search reports at every slice, which may take seconds: meanwhile the status line is
    rewritten with the last fraction and the time going on (it looked hung, frozen at '17%
    done; 2.47 s' for 6 s); nothing is written once the block has ended."""
    import re
    import time

    from workbench.hierarchy import interrupt
    from workbench.ui.progress import searching

    status, seen = widgets.HTML(), []
    status.observe(lambda change: seen.append(change["new"]), names="value")
    with searching(status, "pricing", lambda: "0 of 2 layers done", every_s=0.05):
        interrupt.progress(0.4)  # one report, then a long slice
        time.sleep(0.5)
    ended = len(seen)
    time.sleep(0.2)
    assert len(seen) == ended  # the timer has stopped
    times = [float(m[1]) for m in (re.search(r"40% done; (\d+) ms…", s) for s in seen) if m]
    assert len(times) >= 4 and times == sorted(times) and times[-1] - times[0] >= 200
    assert all(s.startswith("<i>pricing: 0 of 2 layers done; the search under way 40% done")
               for s in seen)


def test_the_cli_bar_keeps_time_between_a_searchs_reports(monkeypatch) -> None:
    """`workbench hierarchy`'s bar is redrawn every SHOW_EVERY_S s while a search runs (its
    elapsed time goes on between reports), and not after."""
    import io
    import time

    from tqdm import tqdm

    from workbench.cli import hierarchy as hierarchy_cli

    monkeypatch.setattr(hierarchy_cli, "SHOW_EVERY_S", 0.05)
    out = io.StringIO()
    with tqdm(total=2, file=out, mininterval=0) as bar, hierarchy_cli._under_way(bar):
        drawn = out.getvalue().count("\r")
        time.sleep(0.5)  # a long slice: no report
        redrawn = out.getvalue().count("\r")
    time.sleep(0.2)
    assert redrawn - drawn >= 4
    assert out.getvalue().count("\r") <= redrawn + 1  # the closing draw only
