"""One name for a local-memory size wherever a user meets it: `--memory-kb` on the command
line, `memory_kb` (KiB) in grids, JSON keys, result columns, app keywords and report
parameters. The names are written here by hand, not taken from workbench.spelling.

Then every old spelling (`--memory`, `--sizes-kb`, `buffer_kb`, `local_mem_kb`, `sizes_kb`,
`buffer_sizes_kb`) is still read, with exactly one notice line naming the old and the new
spelling, and gives what the new spelling gives."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from app_platforms import levels_platform

from workbench.cli.main import build_parser, main

NEW_OPTION = "--memory-kb"
NEW_KEY = "memory_kb"
# other spellings of a memory size that must not reach a user (any case)
OLD = re.compile(r"buffer_kb|buffer_sizes_kb|(?<![a-z])sizes_kb|local_mem_kb|local_kb|"
                 r"memory_bytes|local_mem_bytes|mem_kb|buffer_size", re.IGNORECASE)
OLD_OPTIONS = re.compile(r"--memory(?![-\w])|--sizes-kb|--buffer")
# names that end like a size (_kb, _kib, _bytes of a memory/buffer/size): the ones allowed
SIZE_LIKE = re.compile(r"^(?!\w*_per_kb)\w*_(kb|kib)$|^\w*(mem|buffer|size|capacity)\w*_bytes$",
                       re.IGNORECASE)  # not a rate (mm2_per_kb)
ALLOWED = {"memory_kb", "sweep_memory_kb",  # a local memory; the report's swept ones
           "budget_kb", "on_chip_kb", "grid_kb"}  # a co-design budget, a design's total, grid

NET_YAML = """name: tiny
layers:
  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3, stride: 1, pad: 0}
  - {name: f1, type: fc, input: [16, 1, 1], outputs: 6}
"""
LEVELS_YAML = """name: two-on-chip
mac_energy_pj: 1.0
levels:
  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 320}
  - {name: SRAM, capacity: 4096, access_bits: 64, energy_pj: null}
  - {name: RF, capacity: 256, access_bits: 64, energy_pj: null}
"""


def _run(*argv: str) -> tuple[str, list[str]]:
    """stdout and the stderr lines of one command (it must succeed)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code == 0, err.getvalue()
    return out.getvalue(), err.getvalue().splitlines()


def _keys(doc) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


def _check_names(names, where: str) -> None:
    for name in names:
        assert not OLD.search(str(name)), f"{where}: {name!r}"
        if SIZE_LIKE.match(str(name)):
            assert str(name).lower() in ALLOWED, f"{where}: {name!r} is another name for a size"


def _helps() -> dict[str, str]:
    """Every command's --help text."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"workbench": parser.format_help(),
            **{name: p.format_help() for name, p in sub.choices.items()}}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("names")
    (tmp / "net.yaml").write_text(NET_YAML)
    (tmp / "levels.yaml").write_text(LEVELS_YAML)
    return {"net": str(tmp / "net.yaml"), "levels": str(tmp / "levels.yaml"), "tmp": str(tmp)}


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A one-network, two-size sweep directory written by today's code."""
    from workbench import sweep

    out = tmp_path_factory.mktemp("sweep") / "s"
    sweep.run(sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1,
                         memory_kb=[16, 64]), out)
    return out


# --- one name everywhere --------------------------------------------------------------------

def test_help_texts_name_memory_kb_only() -> None:
    helps = _helps()
    for name, text in helps.items():
        assert not OLD_OPTIONS.search(text), (name, OLD_OPTIONS.search(text).group())
        _check_names(re.findall(r"[A-Za-z_]\w*", text), f"workbench {name} --help")
    for name in ("explore", "traffic", "hierarchy", "report"):
        assert NEW_OPTION in helps[name], name
    assert f"{NEW_KEY}=" in helps["report"]  # --params memory_kb=64 in its example


def test_grid_schema_and_sweep_columns_name_memory_kb(swept: Path) -> None:
    from workbench import sweep
    from workbench.schemas.grid import GridDoc

    _check_names(GridDoc.model_fields, "grid schema")
    assert NEW_KEY in GridDoc.model_fields
    assert [f.name for f in dataclasses.fields(sweep.Grid)] == list(GridDoc.model_fields)
    frame = pd.read_parquet(swept / "results.parquet")
    _check_names(frame.columns, "results.parquet")
    assert sorted(frame[NEW_KEY]) == [16.0, 64.0]
    grid_json = json.loads((swept / "grid.json").read_text())
    _check_names(grid_json, "grid.json")
    assert grid_json[NEW_KEY] == [16, 64]
    for row in (swept / "rows").glob("*.json"):
        _check_names(json.loads(row.read_text()), row.name)


@pytest.mark.parametrize("argv", [
    ("explore", "lenet5", "--platform", "seed001_3level", "--batch", "1", "--json"),
    ("explore", "lenet5", "--platform", "shave", "--memory-kb", "64", "--batch", "1", "--json"),
    ("traffic", "{net}", "--model", "seed000", "--memory-kb", "1", "4", "--json"),
    ("hierarchy", "{net}", "--levels", "{levels}", "--budget-kb", "4", "--memory-kb", "1", "4",
     "--json"),
    ("platforms", "--json"),
])
def test_json_documents_name_memory_kb(files, argv) -> None:
    out, _ = _run(*(a.format(**files) for a in argv))
    doc = json.loads(out)
    _check_names(_keys(doc), " ".join(argv[:1]))
    if argv[0] in ("traffic", "platforms"):
        rows = doc["rows"]
        assert all(NEW_KEY in row for row in rows)
    if argv[0] == "traffic":
        assert sorted({row[NEW_KEY] for row in rows}) == [1.0, 4.0]
    if argv[0] == "hierarchy":
        assert doc["codesign"][NEW_KEY] == [1, 4]


def _descriptions(root) -> list[str]:
    """The description of every widget under `root` (children walked)."""
    found, todo, seen = [], [root], set()
    while todo:
        w = todo.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        if getattr(w, "description", ""):
            found.append(w.description)
        todo.extend(getattr(w, "children", ()))
    return found


def test_widgets_keywords_and_report_parameters_name_memory_kb(files, swept: Path) -> None:
    from workbench import report, ui
    from workbench.report.notebook import report_parameters
    from workbench.ui.hierarchy_view import HierarchySetup, hierarchy_view

    apps = [ui.sweep_browser(swept),
            ui.traffic_explorer(network=files["net"], memory_kb=(1, 4), models=("seed000",)),
            ui.design_space(network="lenet5", batch=1, memory_kb=64, compute=False),
            ui.tile_explorer(network="lenet5", layer="conv2", batch=1, sweep_memory_kb=(1, 4)),
            hierarchy_view(network=files["net"], platform=levels_platform(2, 0.5),
                           budget_kb=16, grid_kb=(1, 4))]
    for app in apps:
        view = app.view() if callable(app.view) else app.view  # a method or a property
        found = _descriptions(view)
        assert found, type(app).__name__  # the walk saw the app's widgets
        _check_names(found, type(app).__name__)
    keywords = [name for f in (ui.traffic_explorer, ui.design_space, ui.tile_explorer,
                               ui.cores_explorer, ui.sweep_browser, ui.TrafficExplorer,
                               ui.DesignSpaceApp, ui.TileExplorer, ui.SweepBrowser)
                for name in inspect.signature(f).parameters]
    fields = [f.name for cls in (HierarchySetup, report.ReportSettings)
              for f in dataclasses.fields(cls)]
    _check_names([*keywords, *fields, *report_parameters()], "keywords")
    # the hierarchy app's sizes are its platform's levels (an old memory_kb is read there)
    assert "platform" in [f.name for f in dataclasses.fields(HierarchySetup)]
    assert {NEW_KEY, "sweep_memory_kb"} <= set(report_parameters())


# --- old spellings: read, named once, same answer ----------------------------------------------

def _one_notice(lines: list[str], old: str, new: str) -> None:
    assert len(lines) == 1, lines
    assert old in lines[0] and new in lines[0] and "warning" in lines[0], lines


@pytest.mark.parametrize("old, new", [
    (("explore", "lenet5", "--memory", "64KB", "--batch", "1", "--json"),
     ("explore", "lenet5", "--memory-kb", "64", "--batch", "1", "--json")),
    (("explore", "lenet5", "--memory", "512", "--batch", "1", "--json"),
     ("explore", "lenet5", "--memory-kb", "0.5", "--batch", "1", "--json")),
    (("traffic", "{net}", "--memory", "1KB", "4096", "--json"),
     ("traffic", "{net}", "--memory-kb", "1", "4", "--json")),
    (("hierarchy", "{net}", "--levels", "{levels}", "--budget-kb", "4", "--sizes-kb", "1", "4",
      "--json"),
     ("hierarchy", "{net}", "--levels", "{levels}", "--budget-kb", "4", "--memory-kb", "1", "4",
      "--json")),
])
def test_old_options_give_the_same_answer_with_one_notice(files, old, new) -> None:
    old_out, old_err = _run(*(a.format(**files) for a in old))
    new_out, new_err = _run(*(a.format(**files) for a in new))
    assert new_err == [] and old_out == new_out
    option = next(a for a in old if a in ("--memory", "--sizes-kb"))
    _one_notice(old_err, option, NEW_OPTION)
    assert "--help" not in old_err[0]


def _notices(record) -> list[str]:
    from workbench.spelling import RenamedNotice

    return [str(w.message) for w in record if issubclass(w.category, RenamedNotice)]


def test_old_grid_key_in_python_and_files(tmp_path: Path) -> None:
    from workbench import sweep

    new = sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[16, 0.5])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = sweep.Grid(networks=["lenet5"], platforms=["idsp"], buffer_kb=[16, 0.5])
    [text] = _notices(record)
    assert "buffer_kb" in text and "memory_kb" in text and "\n" not in text
    assert old == new and [c.case_id for c in sweep.cases(old)] == \
        [c.case_id for c in sweep.cases(new)]
    with pytest.raises(Exception, match="buffer_kb and memory_kb are two spellings"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[8], buffer_kb=[16])
    path = tmp_path / "grid.yaml"
    path.write_text("networks: [lenet5]\nplatforms: [idsp]\nbuffer_kb: [16, 0.5]\n")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert sweep.Grid.from_yaml(path) == new
    [text] = _notices(record)
    assert str(path) in text and "buffer_kb" in text and "memory_kb" in text


def test_old_grid_file_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "old.yaml").write_text("networks: [lenet5]\nplatforms: [idsp]\nbatch: 1\n"
                                       "buffer_kb: [32]\n")
    (tmp_path / "new.yaml").write_text("networks: [lenet5]\nplatforms: [idsp]\nbatch: 1\n"
                                       "memory_kb: [32]\n")
    _, old_err = _run("sweep", str(tmp_path / "old.yaml"), "--out", str(tmp_path / "o"), "--json")
    _, new_err = _run("sweep", str(tmp_path / "new.yaml"), "--out", str(tmp_path / "n"), "--json")
    assert [line for line in new_err if "warning" in line] == []
    _one_notice([line for line in old_err if "warning" in line], "buffer_kb", NEW_KEY)
    old, new = (pd.read_parquet(tmp_path / d / "results.parquet") for d in ("o", "n"))
    pd.testing.assert_frame_equal(old, new)


def test_an_older_sweep_directory_reads_as_today(swept: Path, tmp_path: Path) -> None:
    """A directory written before the rename (grid.json with buffer_kb, rows with
    local_mem_kb): collected to the same frame, resumed without recomputing, one notice per
    old spelling."""
    import shutil

    from workbench import sweep

    today = sweep.SweepStore(swept).collect(write=False)
    old = tmp_path / "old"
    shutil.copytree(swept, old)
    grid = json.loads((old / "grid.json").read_text())
    (old / "grid.json").write_text(json.dumps(
        {("buffer_kb" if k == "memory_kb" else k): v for k, v in grid.items()}, indent=1))
    for path in (old / "rows").glob("*.json"):
        row = json.loads(path.read_text())
        path.write_text(json.dumps({("local_mem_kb" if k == "memory_kb" else k): v
                                    for k, v in row.items()}))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        again = sweep.SweepStore(old).collect(write=False)
    pd.testing.assert_frame_equal(again, today)
    texts = _notices(record)
    assert len(texts) == 2 and "buffer_kb" in texts[0] and "local_mem_kb" in texts[1], texts
    # resumed with today's grid: the same grid, no case computed again, no "another grid"
    stamps = {p.name: p.stat().st_mtime_ns for p in (old / "rows").glob("*.json")}
    out, err = _run("sweep", _grid_file(tmp_path), "--out", str(old), "--json")
    assert not any("another grid" in note for note in json.loads(out)["notes"]), out
    assert {p.name: p.stat().st_mtime_ns for p in (old / "rows").glob("*.json")} == stamps
    _one_notice([line for line in err if "warning" in line], "local_mem_kb", NEW_KEY)


def _grid_file(tmp_path: Path) -> str:
    path = tmp_path / "today.yaml"
    path.write_text("networks: [lenet5]\nplatforms: [idsp]\nbatch: 1\nmemory_kb: [16, 64]\n")
    return str(path)


def _seed001_3level(sram: int, rf: int):
    """seed001_3level with these SRAM and RF sizes (bytes), from its document."""
    from workbench import platforms

    doc = platforms.load_platform("seed001_3level").model_dump()
    doc["memory"]["levels"][1]["capacity"], doc["memory"]["levels"][2]["capacity"] = sram, rf
    return platforms.Platform.model_validate(doc)


def test_old_report_and_app_keywords() -> None:
    from workbench import report
    from workbench.report.notebook import check_parameters
    from workbench.ui.hierarchy_view import HierarchySetup

    cases = [(lambda: report.ReportSettings(batch=2, buffer_sizes_kb=(4, 64)),
              lambda: report.ReportSettings(batch=2, sweep_memory_kb=(4, 64)),
              "buffer_sizes_kb", "sweep_memory_kb"),
             (lambda: check_parameters({"batch": 2, "buffer_sizes_kb": [4, 64]}),
              lambda: check_parameters({"batch": 2, "sweep_memory_kb": [4, 64]}),
              "buffer_sizes_kb", "sweep_memory_kb"),
             (lambda: HierarchySetup(sizes_kb=(16, 1)),
              lambda: HierarchySetup(platform=_seed001_3level(16 * 1024, 1024)),
              "sizes_kb", "the platform's on-chip level capacities")]
    for old, new, old_name, new_name in cases:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            want = new()
        assert _notices(record) == []
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = old()
        [text] = _notices(record)
        assert old_name in text and new_name in text and "\n" not in text
        assert got == want


def test_old_report_parameter_on_the_command_line_is_named_once(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """`--params buffer_sizes_kb=[16]` passes the checks (before any work) with one notice,
    and reaches the report as sweep_memory_kb."""
    import workbench.report.notebook as nb

    seen = {}

    def build(network, platform, out, timeout_s=600, progress=False, **params):
        seen.update(nb.check_parameters(params))
        Path(out).write_text("<html></html>")
        return Path(out)

    monkeypatch.setattr(nb, "build_report", build)
    _, err = _run("report", "lenet5", "--params", "buffer_sizes_kb=[16]", "--out",
                  str(tmp_path / "r.html"))
    assert seen == {"sweep_memory_kb": [16]}
    _one_notice(err, "buffer_sizes_kb", "sweep_memory_kb")
    seen.clear()  # --memory-kb is the parameter memory_kb, as --params gives it
    _, err = _run("report", "lenet5", "--memory-kb", "64", "--out", str(tmp_path / "r.html"))
    by_option = dict(seen)
    seen.clear()
    _run("report", "lenet5", "--params", "memory_kb=64", "--out", str(tmp_path / "r.html"))
    assert by_option == seen == {"memory_kb": 64} and err == []


def test_old_tile_explorer_range() -> None:
    """buffer_range_log2=(10, 14), log2 of bytes, is sweep_memory_kb=(1, 16): the same sweep."""
    from workbench import ui
    from workbench.errors import WorkbenchError

    new = ui.tile_explorer(network="lenet5", layer="conv2", batch=1, sweep_memory_kb=(1, 16))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = ui.tile_explorer(network="lenet5", layer="conv2", batch=1,
                               buffer_range_log2=(10, 14))
    [text] = _notices(record)
    assert "buffer_range_log2" in text and "sweep_memory_kb" in text
    assert old.buffer_range.value == new.buffer_range.value == (10, 14)
    data = [a.sweep_figure.renderers[0].data_source.data for a in (old, new)]
    assert list(data[0]["x"]) == list(data[1]["x"]) == [1, 2, 4, 8, 16]
    assert list(data[0]["y"]) == list(data[1]["y"])
    for bad in ((3, 16), (16, 1), (1,)):
        with pytest.raises(WorkbenchError, match="^sweep_memory_kb: "):
            ui.tile_explorer(network="lenet5", layer="conv2", batch=1, sweep_memory_kb=bad)


def test_old_column_names_in_the_sweep_browser(swept: Path) -> None:
    from workbench import sweep, ui

    frame = sweep.SweepStore(swept).collect(write=False)
    new = ui.sweep_browser(frame=frame, x="memory_kb", y="energy_uj", color="memory_kb")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = ui.sweep_browser(frame=frame.rename(columns={"memory_kb": "local_mem_kb"}),
                               x="local_mem_kb", y="energy_uj", color="local_mem_kb")
    [text] = _notices(record)
    assert "local_mem_kb" in text and "memory_kb" in text
    assert (old.x.value, old.color.value) == (new.x.value, new.color.value) == \
        ("memory_kb", "memory_kb")
    pd.testing.assert_frame_equal(old.frame, new.frame)
    assert old.axes == new.axes and old.columns == new.columns
