"""environment.yml lists the same dependencies as pyproject.toml; the README starts right."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"])
    for name, extra in project["optional-dependencies"].items():
        if name not in ("train", "peers"):  # torch retrains the shipped weights, zigzag-dse
            wanted |= set(extra)            # runs bench_peers: neither is in the environment
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert set(pip) - {"-e ."} == wanted


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in text.split("```")[1].splitlines() if line.strip()]
    assert commands[-2:] == ["make demo", "make test"] or commands == ["make demo", "make test"]


def test_every_package_and_data_folder_is_in_the_wheel_configuration() -> None:
    """pyproject.toml lists the packages (discovery cannot map data/ into the package): a new
    subpackage or data folder must be added there, or the wheel would miss it."""
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, mapped = set(config["packages"]), config["package-dir"]
    assert set(find_packages(str(ROOT), include=["workbench*"])) <= listed
    folders = {p.name for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {f"workbench.data.{f}": f"data/{f}" for f in folders} | {
        "workbench.notebooks": "notebooks"} == mapped
    # besides the data folders, one code package ships a non-Python file: emit's C runtime
    assert set(mapped) <= listed and set(mapped) | {"workbench.emit"} == set(
        config["package-data"])
    assert config["package-data"]["workbench.emit"] == ["*.h"]


def test_workbench_data_adds_data_folders_but_never_notebooks(tmp_path: Path,
                                                              monkeypatch) -> None:
    from workbench import paths
    from workbench.report import notebook as notebook_report

    shipped = paths.shipped_data_dir()
    assert (shipped / "networks" / "lenet5.yaml").is_file()
    assert (paths.notebooks_dir() / "report.ipynb").is_file()
    monkeypatch.setenv("WORKBENCH_DATA", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert paths.data_dirs() == [tmp_path / "a", tmp_path / "b", shipped]
    assert paths.data_dir() == tmp_path / "a"
    assert paths.notebooks_dir() == notebook_report.REPORT_NOTEBOOK.parent
    assert not paths.notebooks_dir().is_relative_to(tmp_path)


def test_workbench_data_adds_networks_and_presets_beside_the_shipped_ones(tmp_path: Path,
                                                                         monkeypatch) -> None:
    """A user folder with one network and one preset: both load by name, the shipped zoo and
    presets stay listed and loadable, and a same-named user preset hides the shipped one."""
    from workbench import layers, paths, platforms

    shipped = paths.shipped_data_dir()
    (tmp_path / "networks").mkdir()
    (tmp_path / "platforms").mkdir()
    net_doc = (shipped / "networks" / "lenet5.yaml").read_text()
    (tmp_path / "networks" / "my_lenet.yaml").write_text(net_doc.replace("lenet5", "my_lenet"))
    idsp = (shipped / "platforms" / "idsp.yaml").read_text()
    (tmp_path / "platforms" / "my_dsp.yaml").write_text(idsp)
    (tmp_path / "platforms" / "shave.yaml").write_text(idsp)  # hides the shipped shave
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    assert {"my_lenet", "lenet5", "resnet20"} <= set(layers.list_networks())
    assert {"my_dsp", "idsp", "shave"} <= set(platforms.list_platforms())
    assert len(layers.load_network("my_lenet").layers) == len(layers.load_network("lenet5").layers)
    assert platforms.load_platform("my_dsp").cores == platforms.load_platform("idsp").cores
    assert platforms.load_platform("shave").cores == platforms.load_platform("idsp").cores
    monkeypatch.delenv("WORKBENCH_DATA")
    assert platforms.load_platform("shave").cores == 12


def test_one_bad_file_in_a_data_folder_is_skipped_with_a_warning(tmp_path: Path, monkeypatch,
                                                                  capsys) -> None:
    """`workbench networks` and `platforms` listed nothing when one user file was broken;
    now that file is skipped with one warning line naming it, and the rest are listed."""
    import json

    from workbench import paths
    from workbench.cli import main

    shipped = paths.shipped_data_dir()
    for kind, good, bad in (("networks", "lenet5", "name: [broken"),
                            ("platforms", "idsp", "clock_mhz: -1")):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / f"mine_{good}.yaml").write_text(
            (shipped / kind / f"{good}.yaml").read_text().replace(good, f"mine_{good}"))
        (tmp_path / kind / "broken.yaml").write_text(bad)
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    monkeypatch.setattr("signal.signal", lambda *a: None)  # main's SIGTERM handler
    for command, column, good, shipped_one in (("networks", "network", "mine_lenet5", "lenet5"),
                                               ("platforms", "platform", "mine_idsp", "idsp")):
        assert main([command, "--json"]) == 0
        out, err = capsys.readouterr()
        names = [row[column] for row in json.loads(out)["rows"]]
        assert good in names and shipped_one in names and "broken" not in names
        assert len(names) == len(set(names)) >= 5
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"workbench {command}: warning: {column} 'broken' skipped: "), err
        assert str(tmp_path / command / "broken.yaml") in lines[0]
