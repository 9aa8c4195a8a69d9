"""The `workbench` command line, one module per command group: `main` (parser, dispatch,
one-line errors), `args` (argument types checked before any work), `explore` (explore,
traffic), `quant` (quantize), `simd`, `batch` (sweep, report)."""

from workbench.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
