"""Today's answers, stored: the JSON the commands print for a set of cases, across the three
data-movement models (seed 000 tiling via `explore`, seed 002 dataflow via `traffic`, seed 001
blocking via `hierarchy`), on every preset platform and hierarchy file.

They are regression fixtures for the engine unification (docs/architecture.md, "Migration"):
tests/test_stored_cases.py runs every case again and requires the same document, number for
number. A change meant to move a number re-records (`python tests/stored_cases.py [NAME ...]`)
and says in its commit which numbers moved and why.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from workbench.cli.main import main

HERE = Path(__file__).resolve().parent / "cases"
PRESETS = ("hwc", "idsp", "nve", "seed001_3level", "shave", "yang_256mac")
OBJECTIVES = ("cycles", "energy", "accesses", "edp")


def cases() -> dict[str, list[str]]:
    """{case name: the command's arguments}."""
    out = {}
    for platform in PRESETS:
        for objective in OBJECTIVES:
            out[f"explore-lenet5-{platform}-{objective}"] = [
                "explore", "lenet5", "--platform", platform, "--objective", objective,
                "--batch", "2", "--json"]
    for model in ("seed000", "dataflow", "peemen"):
        out[f"traffic-lenet5-{model}"] = ["traffic", "lenet5", "--model", model,
                                          "--memory-kb", "4", "32", "--include-fc", "--json"]
    out["hierarchy-lenet5-seed001_3level"] = ["hierarchy", "lenet5", "--platform",
                                              "seed001_3level", "--json"]
    for levels in ("seed001_two_level", "seed001_diannao", "seed001_banked"):
        out[f"hierarchy-lenet5-{levels}"] = ["hierarchy", "lenet5", "--levels", levels,
                                             "--json"]
    return out


def run(argv: list[str]) -> dict:
    """The command's JSON document (it must succeed and print one)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    if code != 0:
        raise RuntimeError(f"workbench {' '.join(argv)}: exit {code}: {err.getvalue()}")
    return json.loads(out.getvalue())


def record(names: list[str] | None = None) -> None:
    """Write tests/cases/<name>.json for every case (or the named ones)."""
    for name, argv in cases().items():
        if names and name not in names:
            continue
        (HERE / f"{name}.json").write_text(json.dumps(run(argv), indent=1, sort_keys=True)
                                           + "\n")
        print(name)


if __name__ == "__main__":
    record(sys.argv[1:] or None)
