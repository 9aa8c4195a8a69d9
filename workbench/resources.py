"""The resource model: a memory budget, and estimates checked against it before work starts.

The budget is WORKBENCH_MAX_MEMORY (bytes; the CLI's `--max-memory` sets it, so Dask workers
and report kernels started by the command inherit it), else BUDGET_FRACTION of the machine's
physical memory. Callers estimate what an input will take (decompressed arrays from their npy
headers, grid cases, tile candidates) and `check` refuses in one line what exceeds the budget,
naming the input and the estimate; nothing is allocated first. See docs/resources.md.
"""

from __future__ import annotations

import os
import re

from workbench.errors import WorkbenchError
from workbench.numbers import fmt_bytes

ENV = "WORKBENCH_MAX_MEMORY"
BUDGET_FRACTION = 0.25  # of physical memory, when no budget is set
FALLBACK_MACHINE_BYTES = 8 << 30  # when the OS does not say how much memory it has
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "G": 1 << 30, "GB": 1 << 30, "T": 1 << 40, "TB": 1 << 40}
SHOWN = 80  # characters of an offending value shown in a message


class ResourceError(WorkbenchError):
    """An input whose estimated memory (or size) exceeds the budget."""


def cut(value: object, width: int = SHOWN) -> str:
    """`repr(value)` on one line, at most `width` characters (longer ones end in '...')."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def parse_size(text: str) -> int:
    """'2GB', '512MB', '1.5G', '4096' → bytes (K = 1024); a whole number of bytes ≥ 1."""
    match = re.fullmatch(r"\s*([0-9]{1,15}(?:\.[0-9]{1,9})?)\s*([KMGT]?B?)\s*", str(text),
                         flags=re.IGNORECASE)
    if not match:
        raise WorkbenchError(f"memory size {cut(text)} not understood; use e.g. 512MB, 2GB")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1:
        raise WorkbenchError(f"memory size {cut(text)} must be at least 1 byte")
    return int(value)


def machine_bytes() -> int:
    """Physical memory of this machine in bytes."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return FALLBACK_MACHINE_BYTES


def budget_bytes() -> int:
    """The memory budget in bytes: WORKBENCH_MAX_MEMORY, else a fraction of the machine's."""
    text = os.environ.get(ENV, "").strip()
    if text:
        try:
            return parse_size(text)
        except WorkbenchError as exc:
            raise WorkbenchError(f"{ENV}: {exc}") from None
    return int(machine_bytes() * BUDGET_FRACTION)


def check(what: str, estimate: float) -> None:
    """Refuse (ResourceError, one line naming `what` and the estimate) an estimate of bytes
    above the budget."""
    budget = budget_bytes()
    if estimate > budget:
        raise ResourceError(f"{what}: needs an estimated {fmt_bytes(estimate)} of memory, "
                            f"beyond the budget of {fmt_bytes(budget)} (--max-memory or "
                            f"{ENV} sets it; default {BUDGET_FRACTION:.0%} of this machine's)")
