"""The command line fits a 100-column terminal: every line the main commands print on small
networks is at most WIDTH characters by default, the columns left out are named under their
table, and --wide prints every column."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.cli.tables import WIDTH, fit, print_text

COMMANDS = {
    "show": ["show", "lenet5", "--batch", "8"],
    "networks": ["networks"],
    "platforms": ["platforms"],
    "explore": ["explore", "lenet5", "--platform", "idsp", "--batch", "8"],
    "explore_cores": ["explore", "lenet5", "--platform", "shave", "--batch", "8"],
    "explore_levels": ["explore", "lenet5", "--platform", "seed001_3level"],
    "traffic": ["traffic", "lenet5", "--memory-kb", "4", "64"],
    "simd": ["simd", "lenet5", "--batch", "8"],
    "hierarchy": ["hierarchy", "lenet5", "--levels", "seed001_two_level", "--budget-kb", "64"],
}
NOTE = re.compile(r"\((\d+)\s+more\s+columns?:\s+(.*?);\s+--wide\s+shows\s+every\s+column\)", re.S)


def _run(*argv: str) -> str:
    run = subprocess.run([sys.executable, "-m", "workbench.cli", *argv], capture_output=True,
                         text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, (argv, run.stderr[-2000:])
    return run.stdout


@pytest.fixture(scope="module")
def printed() -> dict[str, tuple[str, str]]:
    """(default, --wide) stdout of each command."""
    return {name: (_run(*argv), _run(*argv, "--wide")) for name, argv in COMMANDS.items()}


def test_every_line_fits_100_columns_by_default(printed) -> None:
    for name, (default, _) in printed.items():
        widest = max(default.splitlines(), key=len)
        assert len(widest) <= WIDTH, (name, len(widest), widest)


def test_wide_shows_the_columns_the_default_names(printed) -> None:
    """The note under a fitted table names exactly the columns that --wide adds; explore's
    fitted table names the tile dimensions under it."""
    for name in ("explore", "explore_cores", "platforms", "show", "simd"):
        default, wide = printed[name]
        note = NOTE.search(default)
        assert note, (name, "no column left out: the table was wider than 100 before")
        hidden = [h.strip() for h in re.sub(r"\s+", " ", note.group(2)).split(",")]
        assert int(note.group(1)) == len(hidden)
        default_head = next(line for line in default.splitlines() if line.lstrip().startswith(
            ("layer", "platform", "network")))
        wide_head = next(line for line in wide.splitlines() if line.lstrip().startswith(
            ("layer", "platform", "network")))
        for column in hidden:
            assert column in wide_head and column not in default_head, (name, column)
        assert "--wide" not in wide
        assert len(max(wide.splitlines(), key=len)) > WIDTH  # the full table is wider
    default, wide = printed["explore"]
    assert "tile TOx×TOy×TOc×TOn×TKc / chunk" in wide
    assert "(tile / chunk: tile TOx×TOy×TOc×TOn×TKc, or a chunk of rows × maps)" in default
    for column in ("layer", "schedule", "bound", "cycles", "energy"):  # what stays
        assert column in default.splitlines()[2], column


def test_wide_is_accepted_before_the_command_too() -> None:
    assert _run("--wide", "platforms") == _run("platforms", "--wide")


@given(st.lists(st.tuples(st.text("abcxyz ", min_size=1, max_size=12),
                          st.integers(min_value=1, max_value=30)),
                min_size=1, max_size=12, unique_by=lambda c: c[0]),
       st.integers(min_value=20, max_value=120), st.data())
def test_fit_keeps_the_first_column_and_the_order_and_fits(columns, width: int, data) -> None:
    table = pd.DataFrame({name: ["x" * size, "y"] for name, size in columns})
    drop_first = data.draw(st.lists(st.sampled_from([n for n, _ in columns]), unique=True))
    shown, hidden = fit(table, drop_first, width=width)
    assert list(shown.columns)[0] == columns[0][0]
    assert [c for c in table.columns if c in shown.columns] == list(shown.columns)
    assert sorted(hidden) == sorted(set(table.columns) - set(shown.columns))
    widest = max(len(line) for line in shown.to_string(index=False).splitlines())
    assert widest <= width or shown.shape[1] == 1
    if hidden:  # nothing was left out that was not needed: one more column would not fit
        back = table[[c for c in table.columns if c in shown.columns or c == hidden[-1]]]
        assert max(len(line) for line in back.to_string(index=False).splitlines()) > width
        wanted = [c for c in drop_first if c != columns[0][0]]
        assert hidden[:len(wanted)] == wanted[:len(hidden)]  # drop_first go first, in order


@given(st.lists(st.text("abcdefghij", min_size=1, max_size=15), min_size=1, max_size=60),
       st.integers(min_value=20, max_value=100))
def test_prose_wraps_at_the_width_and_keeps_every_word(words: list[str], width: int) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_text(" ".join(words), width)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= width for line in lines)
    assert " ".join(lines).split() == words


def test_a_number_stays_with_its_unit() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_text("x" * 90 + " 4.29 MB moved", 96)
    assert out.getvalue().splitlines()[1].strip() == "4.29 MB moved"
