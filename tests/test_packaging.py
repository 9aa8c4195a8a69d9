"""environment.yml lists the same dependencies as pyproject.toml; the README starts right."""

from __future__ import annotations

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
