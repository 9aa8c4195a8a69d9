"""Shared controls: a local-memory slider that reads in bytes (128 B … 16 MB), not 2^k, its
steps from sizes in KB, a capacity slider whose value is bytes, an area slider's 1-2-5 steps,
and a loop nest's readout."""

from __future__ import annotations

import html

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.viz.units import fmt_bytes

KB = 1024


def memory_slider(value_log2: int, lo_log2: int = 7, hi_log2: int = 24,
                  description: str = "memory") -> widgets.SelectionSlider:
    """A slider over the powers of two 2^lo..2^hi bytes; it shows '8 KB', '1 MB' and its
    `value` is the exponent (13 for 8 KB)."""
    value = min(max(int(value_log2), lo_log2), hi_log2)
    return widgets.SelectionSlider(
        options=[(fmt_bytes(1 << k), k) for k in range(lo_log2, hi_log2 + 1)], value=value,
        description=description)


def bytes_slider(value_bytes: int, lo_log2: int = 8, hi_log2: int = 24,
                 width: str = "250px") -> widgets.SelectionSlider:
    """A slider over the powers of two 2^lo..2^hi bytes and `value_bytes` itself (a size that
    is not one of them keeps its place); it shows '16 KB' and its `value` is bytes."""
    steps = sorted({1 << k for k in range(lo_log2, hi_log2 + 1)} | {int(value_bytes)})
    return widgets.SelectionSlider(options=[(fmt_bytes(s), s) for s in steps],
                                   value=int(value_bytes), layout=widgets.Layout(width=width))


READOUT_CHARS = 9  # a slider's readout shows this many characters ("1 KB-512 K" was cut)


def short_bytes(size: int) -> str:
    """A power-of-two size in at most 4 characters: '128B', '64K', '16M'."""
    return fmt_bytes(size).replace(" KB", "K").replace(" MB", "M").replace(" B", "B")


def range_slider(value_log2: tuple[int, int], lo_log2: int = 7, hi_log2: int = 24,
                 description: str = "sweep") -> widgets.SelectionRangeSlider:
    """A range of powers of two shown in bytes, short ('1K-512K': a range readout longer than
    READOUT_CHARS is cut); `value` is the pair of exponents."""
    return widgets.SelectionRangeSlider(
        options=[(short_bytes(1 << k), k) for k in range(lo_log2, hi_log2 + 1)],
        index=(value_log2[0] - lo_log2, value_log2[1] - lo_log2), description=description)


def area_steps(start_mm2: float) -> list[float]:
    """The area slider's positions (mm²): 1, 2, 5 per decade from 0.001 to 100, and
    `start_mm2` itself when it is not one of them."""
    steps = {round(m * 10.0 ** e, 6) for e in range(-3, 3) for m in (1, 2, 5)}
    return sorted({s for s in steps if s <= 100} | {float(start_mm2)})


def size_exponent(kb: float, bounds: tuple[int, int], name: str) -> int:
    """The slider step of `kb` (log2 of its bytes): a power of two within the slider's range."""
    lo, hi = bounds
    size = float(kb) * KB if isinstance(kb, int | float) and not isinstance(kb, bool) else -1
    if not (size >= 1 and size.is_integer() and int(size) & (int(size) - 1) == 0
            and lo <= int(size).bit_length() - 1 <= hi):
        raise WorkbenchError(f"{name}: each size must be a power of two from "
                             f"{(1 << lo) / KB:g} to {(1 << hi) / KB:g} KB (the slider's "
                             f"steps), got {kb!r}")
    return int(size).bit_length() - 1


def kb_log2(kb: float) -> int:
    """log2 of `kb` KB in bytes, rounded down (0 below 1 B)."""
    return max(0, int(round(float(kb) * KB)).bit_length() - 1)


def listing_html(text: str) -> str:
    """A loop nest as preformatted HTML whose lines never wrap (a wrapped line broke words:
    '// 1024 el / ements'); a panel too narrow for it scrolls sideways."""
    return ('<pre style="white-space: pre; overflow-x: auto; max-width: 100%">'
            + html.escape(text) + "</pre>")
