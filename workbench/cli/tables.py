"""Text the command line prints, fitted to a terminal: tables at most WIDTH columns wide by
default (the least needed columns left out, and named under the table), every column with
--wide; prose lines wrapped at WIDTH."""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Sequence

import pandas as pd

WIDTH = 100  # characters: an 80-100 column terminal, or a 1280 px window beside a file browser


def wide(args: argparse.Namespace) -> bool:
    """True when --wide asked for every column."""
    return bool(getattr(args, "wide", False))


def text_width(table: pd.DataFrame, index: bool = False) -> int:
    """The widest line of `table.to_string`."""
    return max((len(line) for line in table.to_string(index=index).splitlines()), default=0)


def fit(table: pd.DataFrame, drop_first: Sequence[str] = (), index: bool = False,
        width: int = WIDTH) -> tuple[pd.DataFrame, list[str]]:
    """(`table` narrowed to `width` characters, the columns left out): the columns of
    `drop_first` in that order, then from the right, never the first column."""
    shown, hidden = table, []
    order = [c for c in drop_first if c in table.columns[1:]]
    order += [c for c in reversed(table.columns[1:]) if c not in order]
    for column in order:
        if text_width(shown, index) <= width or shown.shape[1] <= 1:
            break
        shown = shown.drop(columns=[column])
        hidden.append(str(column))
    return shown, hidden


def print_table(table: pd.DataFrame, args: argparse.Namespace,
                drop_first: Sequence[str] = (), index: bool = False) -> None:
    """Print `table` fitted to WIDTH (all of it with --wide), then one line naming the
    columns left out."""
    shown, hidden = (table, []) if wide(args) else fit(table, drop_first, index)
    print(shown.to_string(index=index))
    if hidden:
        named = [str(c) for c in table.columns if str(c) in hidden]  # in the table's order
        print_text(f"({len(hidden)} more column{'s' if len(hidden) > 1 else ''}: "
                   f"{', '.join(named)}; --wide shows every column)")


NUMBER_UNIT = re.compile(r"(\d) (?=[A-Za-zµ%])")  # '4.29 MB' stays on one line


def print_text(text: str, width: int = WIDTH) -> None:
    """Print prose wrapped at `width` (a number and its unit kept together), continuation
    lines indented by two spaces."""
    for paragraph in text.split("\n"):
        kept = NUMBER_UNIT.sub("\\1\u00a0", paragraph)
        print(textwrap.fill(kept, width, subsequent_indent="  ", break_long_words=False,
                            break_on_hyphens=False).replace("\u00a0", " ") if paragraph else "")
