"""What the hierarchy search's functions share, passed as frozen context objects instead of
long argument lists (docs/search.md names the roles): `Space`, the space one role order
searches; `RoleSearch`, that space with what its search keeps while it runs; `RoleJob`, a
role order's search as the driver asks for it; `SearchMemo`, what searches keep for later
ones (from the caller's `memo.Caches`, never module globals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.hierarchy.blocking import Blocking
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.memory import KeptBounds
from workbench.memo import ByteLRU, Caches

if TYPE_CHECKING:
    from workbench.hierarchy.levels import Hierarchy, SizeEnergy
    from workbench.layers.spec import ConvLayer


def _arrays_nbytes(value: Any) -> int:
    """Bytes of an array or of a tuple of arrays."""
    if isinstance(value, tuple):
        return sum(np.asarray(v).nbytes for v in value)
    return np.asarray(value).nbytes


@dataclass(frozen=True, eq=False)
class SearchMemo:
    """What one search keeps for the next (an app's edit of one level, the next layer of a
    network, the next size of a co-design), each store bounded in bytes:
    - `alone`: unit alone floors of a one-slice search per (layer, levels, holder capacity,
      array, mirror, widths, lanes) (`search.driver._search_roles`), `tuning.ALONE_BYTES`;
    - `tables`: alone and inner-bound tables per class (`search.alone`,
      `search.class_floors`), `tuning.TABLE_BYTES`;
    - `levels`: outer levels' best placements per class (`search.levels.level_table`),
      `tuning.LEVEL_BYTES`;
    - `inner`: the innermost level's kept bounds (`search.memory.KeptBounds`)."""

    alone: ByteLRU
    tables: ByteLRU
    levels: ByteLRU
    inner: KeptBounds

    @classmethod
    def of(cls, caches: Caches) -> SearchMemo:
        """The hierarchy search's stores in `caches` (made on first use)."""
        return caches.store("hierarchy search", lambda: cls(
            ByteLRU(tuning.ALONE_BYTES, _arrays_nbytes),
            ByteLRU(tuning.TABLE_BYTES, _arrays_nbytes),
            ByteLRU(tuning.LEVEL_BYTES, _arrays_nbytes), KeptBounds()))

    @property
    def nbytes(self) -> int:
        return (self.alone.nbytes + self.tables.nbytes + self.levels.nbytes
                + self.inner.nbytes)


@dataclass(frozen=True, eq=False)
class Space:
    """The space one role order searches: the layer, the hierarchy as the order sees it, the
    tile chains per dimension (`per_dim`) and the extents, each chain's class per role
    (`classes`: role → class index per chain), pJ per bit into each level per array
    (`pj_bit`, levels × I/W/O), the precision (bytes per element) and what searches keep
    for later ones (`memo`)."""

    layer: ConvLayer
    hierarchy: Hierarchy
    per_dim: dict
    extent: dict
    classes: dict
    pj_bit: np.ndarray
    precision: Any
    memo: SearchMemo

    def unpacked(self) -> tuple:
        """(layer, hierarchy, per_dim, extent, classes, pj_bit, precision)."""
        return (self.layer, self.hierarchy, self.per_dim, self.extent, self.classes,
                self.pj_bit, self.precision)


@dataclass(frozen=True, eq=False)
class RoleSearch:
    """A role order's search in progress: its `Space`; `tables`, outer levels' best placements
    per class (`search.levels.level_table`, filled in place); `alone`, the alone floors per
    class of chains (`search.alone.AloneTables`); `memory`, the innermost level's bounds kept
    across searches (`search.memory.InnerMemory`, or None); `mirror`, whether lemma 5 applies;
    `pairs`, the (X, Y) chain index pairs searched instead of all (lemma 5, one slice)."""

    space: Space
    tables: dict
    alone: Any = None
    memory: Any = None
    mirror: bool = False
    pairs: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True, eq=False)
class RoleJob:
    """One role order's search as the driver asks for it: the layer and precision, the
    hierarchy seen under the order (`roles`), the size-to-energy rule, whether arrays may
    bypass levels, the tile chains per dimension with the extents, and what searches keep for
    later ones (`memo`)."""

    layer: ConvLayer
    hierarchy: Hierarchy
    roles: tuple[int, ...]
    precision: Any
    size_energy: SizeEnergy | None
    bypass: bool
    per_dim: dict
    extent: dict
    memo: SearchMemo


class NoFitError(WorkbenchError):
    """No blocking of the space fits the hierarchy's capacities."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The best blocking of the space searched, its energy (pJ, whole layer), the non-dominated
    tile chains per dimension and their combinations."""

    blocking: Blocking
    energy_pj: float
    chains_per_dim: dict[str, int]
    combinations: int


__all__ = ["NoFitError", "RoleJob", "RoleSearch", "SearchMemo", "SearchResult",
           "Space"]
