"""Argument types of the command line, checked by argparse before any work starts: a bad
value ends in one line naming the option and the rule (`argument --jobs: must be a positive
integer, got '0'`), exit code 2."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench import resources
from workbench.errors import WorkbenchError
from workbench.report.output import check_output_dir, check_output_file

_UNITS = {"": 1, "B": 1, "KB": 1024, "K": 1024, "MB": 1 << 20, "M": 1 << 20, "GB": 1 << 30,
          "G": 1 << 30}


def positive_int(text: str) -> int:
    """An integer ≥ 1 ('8'; not '0', '-3', '2.5' or '')."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer ≥ 0 ('0', '2'; not '-1', '1.5' or '')."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, got {text!r}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in low..high ('16'; not '64' when high is 62)."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in {low}..{high}, got "
                                             f"{resources.cut(text)}")
        return value
    parse.__name__ = f"integer in {low}..{high}"
    return parse


def positive_number(text: str) -> float:
    """A finite number > 0 ('64', '0.5'; not '0', '-5', 'inf', 'nan' or '')."""
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def parse_bytes(text: str) -> int:
    """'64KB', '1MB', '512', '0.5KB' → bytes (K = 1024); a whole number of bytes ≥ 1."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMG]?B?)\s*", text, flags=re.IGNORECASE)
    if not match:
        raise WorkbenchError(f"memory size {text!r} not understood; use e.g. 64KB, 1MB or 4096")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1 or value != int(value):
        raise WorkbenchError(f"memory size {text!r} must be a whole number of bytes, at least 1")
    return int(value)


def size(text: str) -> int:
    """A memory size for argparse (see `parse_bytes`)."""
    try:
        return parse_bytes(text)
    except WorkbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def memory_kb(text: str) -> float:
    """A local-memory size in KiB for --memory-kb ('64', '0.5'): a whole number of bytes ≥ 1."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value * 1024 >= 1 and value * 1024 == int(value * 1024)):
        raise argparse.ArgumentTypeError(f"must be a number of KB (e.g. 64 or 0.5) that is a "
                                         f"whole number of bytes, at least 1, got {text!r}")
    return value


class Renamed(argparse.Action):
    """An old option spelling, kept out of --help: its value (`convert`ed) goes to the new
    option's dest, and `main` names the old and the new spelling in one notice line."""

    def __init__(self, option_strings: list[str], dest: str, new: str,
                 convert: Callable[[Any], Any] = lambda value: value, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                         **kwargs)
        self.new, self.convert = new, convert

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, self.convert(values))
        namespace.renamed_options = [*getattr(namespace, "renamed_options", []),
                                     (option_string, self.new)]


def memory_budget(text: str) -> int:
    """A memory budget for --max-memory ('2GB', '512MB', '1.5G'; see `resources.parse_size`)."""
    try:
        return resources.parse_size(text)
    except WorkbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _checked(check: Callable[[str, str], Path]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            check(text, "path")
        except WorkbenchError as exc:  # "path: ..." reads "argument --csv: ..." in argparse
            raise argparse.ArgumentTypeError(str(exc).removeprefix("path: ")) from None
        return text
    return parse


output_file = _checked(check_output_file)
output_file.__doc__ = "A file this run will write: its folder exists and takes new files."
output_dir = _checked(check_output_dir)
output_dir.__doc__ = "A directory this run will create or add to (see check_output_dir)."


def add_network(p: argparse.ArgumentParser, optional: bool = False) -> None:
    """The network argument of a command, and --input-shape for it."""
    p.add_argument("network", nargs="?" if optional else None,
                   help="zoo name or a .yaml/.onnx/.prototxt file")
    p.add_argument("--input-shape", type=input_shape, metavar="C,H,W",
                   help="one image's channels, height and width: for an ONNX model with a "
                        "dynamic input size, or to change a YAML or ONNX network's input")


def input_shape(text: str) -> tuple[int, int, int]:
    """'C,H,W' (or CxHxW) → three positive integers."""
    parts = re.split(r"\s*[,x×]\s*", text.strip())
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be three positive integers C,H,W, got {text!r}")
    return values  # type: ignore[return-value]
