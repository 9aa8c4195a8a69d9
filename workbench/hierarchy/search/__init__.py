"""The exact minimum-energy blocking search of one layer on a memory hierarchy (space S; the
proofs are in docs/search.md). `search` is the entry point; `search_r` the baseline over the
smaller space R; `sliced` says whether a layer's search is shared out in slices."""

from workbench.hierarchy.search.chains import gen_chains, nondominated_chains
from workbench.hierarchy.search.context import NoFitError, SearchResult
from workbench.hierarchy.search.driver import search, sliced
from workbench.hierarchy.search.r import search_r

__all__ = ["NoFitError", "SearchResult", "gen_chains", "nondominated_chains", "search",
           "search_r", "sliced"]
