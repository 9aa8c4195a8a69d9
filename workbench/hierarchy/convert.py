"""Today's one-level schedules as one-level blockings (DESIGN: "a one-level platform is today's
model exactly"): a seed 002 dataflow schedule, and the five seed 000 schedules with a tile.

With these, `blocking.transfers` on a DRAM + one-level hierarchy gives tiling.dataflow's
traffic and buffers, and tiling.counts' external accesses where seed 000's dense input boxes
are the touched rows and columns (kernel ≥ stride); tests/test_hierarchy_model.py checks both.
The arguments are read by attribute (a tiling.dataflow.DataflowSchedule, a tiling.Tile): this
package does not import workbench.tiling, which would tie it to workbench.platforms. Both
speak `layers.dims.Dim`: a seed 002 loop (dim, level) is the blocking's loop of that dim in
group `level`, its tile sizes are group 0's tiles.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import UnknownNameError
from workbench.hierarchy.blocking import ARRAYS, DIMS, GROUP0, Blocking

# seed 000 §5.2 listings: tile-loop order (innermost first) and buffering positions, the
# element loops being FX FY X Y C M N (positions 0-6) and the tile loops 7-11
_SEED000 = {
    "intra": ("CXYMN", {"I": 6, "W": 6, "O": 6}),
    "inter_kc": ("CXYMN", {"I": 6, "W": 6, "O": 7}),
    "inter_oc": ("MCXYN", {"I": 7, "W": 6, "O": 6}),
    "inter_oxoyon": ("XYNCM", {"I": 6, "W": 9, "O": 6}),
    "inter_oxoyon_dirx": ("XYNCM", {"I": 7, "W": 9, "O": 6}),
}


def from_dataflow(schedule: Any) -> Blocking:
    """A seed 002 schedule (.order, .tiles, .levels of a tiling.dataflow.DataflowSchedule) as
    a two-group blocking with one on-chip level."""
    tiles = {d: schedule.tiles[d] for d in DIMS}
    orders = [[loop.dim for loop in schedule.order if loop.level == group] for group in (0, 1)]
    return Blocking.of(orders, [tiles], {a: [schedule.levels[a]] for a in ARRAYS})


def from_seed000(schedule: str, tile: Any) -> Blocking:
    """One of tiling.SCHEDULES with a tiling.Tile (its size per dimension `tile[dim]`), as a
    two-group blocking with one on-chip level."""
    if schedule not in _SEED000:
        raise UnknownNameError(f"unknown seed 000 schedule {schedule!r}; schedules: "
                               + ", ".join(_SEED000))
    control, where = _SEED000[schedule]
    tiles = {d: tile[d] for d in DIMS}
    return Blocking.of([GROUP0, tuple(control)], [tiles], {a: [where[a]] for a in ARRAYS})
