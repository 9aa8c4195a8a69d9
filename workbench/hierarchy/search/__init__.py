"""The exact minimum-energy blocking search of one layer on a memory hierarchy (space S; the
proofs are in docs/search.md). `search` is the entry point; `search_r` the baseline over the
smaller space R; `sliced` says whether a layer's search is shared out in slices.

One algorithm, its modules grouped by role (docs/search.md, "Where the code is"):
- the space, what a blocking may be: `placements`, `dominance`, `roles`, `merged`, `chains`,
  `grid`, and `r` (the smaller space R);
- the bounds, every floor: `bounds`, `alone`, `class_floors`, `memory` (kept bounds);
- one driver: `driver` (`search`), with `levels`, `points` and `classes`;
- the compiled kernel: `pricing`, `kernel` (numba), `calls`;
- the cache and context objects: `context` (`SearchMemo`, `Space`, `RoleSearch`, `RoleJob`);
- `tuning`: every tuning constant, each with what it trades.
Imports run one way, from the space up to the driver."""

from workbench.hierarchy.search.chains import gen_chains, nondominated_chains
from workbench.hierarchy.search.context import NoFitError, SearchResult
from workbench.hierarchy.search.driver import search, sliced
from workbench.hierarchy.search.r import search_r

__all__ = ["NoFitError", "SearchResult", "gen_chains", "nondominated_chains", "search",
           "search_r", "sliced"]
