"""The memory-hierarchy app's control ranges (level sizes, budget), the values its old
hardware keywords took (access widths, MAC arrays, split I:W:O), and what lies ahead of the
controls' position: the hierarchies a user may ask for next, most likely first, for
`prefetch` to search in worker processes (`ahead`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from workbench.hierarchy import Hierarchy, SplitCapacity
from workbench.hierarchy.codesign import scaled_capacity
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.prefetch import nearest_first
from workbench.viz.hierarchy_plots import MAX_LEVELS

GRID_LEVELS = 2  # on-chip levels up to which the app prices its co-design grid (3: minutes)
WIDTHS_BITS = (64, 128, 256, 512)   # table 3's widths
SIZE_LOG2 = (8, 24)     # level-size sliders: 256 B … 16 MB (exponents of bytes)
BUDGET_LOG2 = (10, 24)  # capacity-budget slider: 1 KB … 16 MB
PREFETCH_LIMIT = 256    # slider positions searched ahead after an edit (2 levels: all 153)
# SRAM area: seed 001 §5.2 gives 45 mm² for its 8 MB hierarchy (45 nm), the one published
# density; every level is charged at it, so area is proportional to capacity (small register
# files are denser per access but larger per KB; their areas are not published)
SEED001_MM2_PER_KB = 45 / (8 * 1024)
# MAC arrays to choose from: one scalar MAC, or seed 001 §4.2's 256 MACs (16 inputs × 16 kernels
# per cycle, adder trees over C) and a 64-MAC one
DATAPATHS = {"1 MAC": None, "16×16 C×M (256 MACs)": Datapath({"C": 16, "M": 16}),
             "8×8 C×M (64 MACs)": Datapath({"C": 8, "M": 8})}


def split_parts(total_bytes: int, ratio: tuple[int, int, int]) -> SplitCapacity:
    """`total_bytes` split I:W:O in `ratio`, the parts summing to it (`scaled_capacity`)."""
    return scaled_capacity(SplitCapacity(*ratio), total_bytes)


def ahead(at: tuple[int, ...], hierarchy_at: Callable[[tuple[int, ...]], Hierarchy],
          grid_of: Callable[[Hierarchy], Iterable[Hierarchy]]) -> list[Hierarchy]:
    """What to search ahead of the on-chip level sizes `at` (log2 of bytes, outermost first),
    most likely next first: the level sliders' positions one step away; one level fewer (the
    innermost removed) and one more inside at half the innermost size (the platform panel's
    buttons), each with its co-design grid (`grid_of`) up to GRID_LEVELS on-chip levels; the
    other positions, nearest first (PREFETCH_LIMIT in all). `hierarchy_at(exponents)` builds
    the edited hierarchy with those sizes (bytes = 2**e)."""
    low, high = SIZE_LOG2
    positions = [tuple(reversed(p)) for p in itertools.combinations_with_replacement(
        range(low, high + 1), len(at))]
    ranked = nearest_first(positions, at, lambda p: p, PREFETCH_LIMIT)
    steps = [sum(abs(a - b) for a, b in zip(p, at, strict=True)) for p in ranked]
    changed = []
    if len(at) > 1:
        changed.append(at[:-1])
    if len(at) < MAX_LEVELS - 1 and at[-1] > low:
        changed.append((*at, at[-1] - 1))
    toggles = []
    for exponents in changed:
        hierarchy = hierarchy_at(exponents)
        toggles.append(hierarchy)
        if len(exponents) <= GRID_LEVELS:
            toggles += grid_of(hierarchy)
    return ([hierarchy_at(p) for p, n in zip(ranked, steps, strict=True) if n == 1]
            + toggles
            + [hierarchy_at(p) for p, n in zip(ranked, steps, strict=True) if n > 1])
