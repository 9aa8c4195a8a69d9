"""The `workbench` command line, one module per command group: `main` (parser, dispatch,
one-line errors), `args` (argument types checked before any work), `explore` (explore,
traffic), `quant` (quantize), `simd`, `batch` (sweep, report).

`main` here is the console entry point: it imports the command line (numpy, pandas: a second
or two) under SIGTERM and Ctrl-C handling, so an interrupt at any moment ends in one line."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

INTERRUPTED = 130


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _command_line() -> Any:
    """The module workbench.cli.main."""
    return importlib.import_module("workbench.cli.main")


def _entry(argv: Sequence[str] | None = None) -> int:
    """Run the command line (`workbench.cli.main.main`); exit code."""
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _stop)  # until main() installs its own
        code = _command_line().main(argv)  # it handles interrupts once its work starts
    except (KeyboardInterrupt, ImportError) as exc:  # importing or parsing: nothing done yet
        if not _interrupted(exc):
            raise
        print("workbench: interrupted while starting; nothing was done", file=sys.stderr)
        code = INTERRUPTED
    _settled(code)
    return code


def _settled(code: int) -> None:
    """The command has said its last line: an interrupt from now on (while the interpreter
    closes what the command opened: a Dask cluster, worker processes) ends the process at
    once with the same exit code, instead of a second line or a traceback."""
    def leave(signum: int, frame: object) -> None:
        os._exit(code)

    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, leave)


def _interrupted(exc: BaseException | None) -> bool:
    """An interrupt, or an import error an interrupt caused (numpy wraps it so)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def build_parser() -> Any:
    """The argparse parser of the command line (`workbench.cli.main.build_parser`)."""
    return _command_line().build_parser()


class _Package(types.ModuleType):
    """This package, whose `main` stays the entry point: importing the submodule
    workbench.cli.main (which sets the package attribute of that name) must not replace it."""

    @property
    def main(self) -> Any:
        return _entry

    @main.setter
    def main(self, value: Any) -> None:
        pass


sys.modules[__name__].__class__ = _Package
main = _entry

__all__ = ["build_parser", "main"]
