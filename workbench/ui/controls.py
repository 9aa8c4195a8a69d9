"""Shared controls: a local-memory slider that reads in bytes (128 B … 16 MB), not 2^k."""

from __future__ import annotations

import ipywidgets as widgets

from workbench.viz.units import fmt_bytes


def memory_slider(value_log2: int, lo_log2: int = 7, hi_log2: int = 24,
                  description: str = "memory") -> widgets.SelectionSlider:
    """A slider over the powers of two 2^lo..2^hi bytes; it shows '8 KB', '1 MB' and its
    `value` is the exponent (13 for 8 KB)."""
    value = min(max(int(value_log2), lo_log2), hi_log2)
    return widgets.SelectionSlider(
        options=[(fmt_bytes(1 << k), k) for k in range(lo_log2, hi_log2 + 1)], value=value,
        description=description)


def range_slider(value_log2: tuple[int, int], lo_log2: int = 7, hi_log2: int = 24,
                 description: str = "sweep") -> widgets.SelectionRangeSlider:
    """A range of powers of two shown in bytes; `value` is the pair of exponents."""
    return widgets.SelectionRangeSlider(
        options=[(fmt_bytes(1 << k), k) for k in range(lo_log2, hi_log2 + 1)],
        index=(value_log2[0] - lo_log2, value_log2[1] - lo_log2), description=description)
