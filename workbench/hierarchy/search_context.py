"""What the hierarchy search's functions share, passed as frozen context objects instead of
long argument lists (docs/search.md names the roles): `Space`, the space one role order
searches; `RoleSearch`, that space with what its search keeps while it runs; `RoleJob`, a
role order's search as the driver asks for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from workbench.hierarchy.levels import Hierarchy, SizeEnergy
    from workbench.layers.spec import ConvLayer


@dataclass(frozen=True, eq=False)
class Space:
    """The space one role order searches: the layer, the hierarchy as the order sees it, the
    tile chains per dimension (`per_dim`) and the extents, each chain's class per role
    (`classes`: role → class index per chain), pJ per bit into each level per array
    (`pj_bit`, levels × I/W/O) and the precision (bytes per element)."""

    layer: ConvLayer
    hierarchy: Hierarchy
    per_dim: dict
    extent: dict
    classes: dict
    pj_bit: np.ndarray
    precision: Any

    def unpacked(self) -> tuple:
        """(layer, hierarchy, per_dim, extent, classes, pj_bit, precision)."""
        return (self.layer, self.hierarchy, self.per_dim, self.extent, self.classes,
                self.pj_bit, self.precision)


@dataclass(frozen=True, eq=False)
class RoleSearch:
    """A role order's search in progress: its `Space`; `tables`, outer levels' best placements
    per class (`search_levels._level_table`, filled in place); `alone`, the alone floors per
    class of chains (`search_alone.AloneTables`); `memory`, the innermost level's bounds kept
    across searches (`search_memory.InnerMemory`, or None); `mirror`, whether lemma 5 applies;
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
    bypass levels, and the tile chains per dimension with the extents."""

    layer: ConvLayer
    hierarchy: Hierarchy
    roles: tuple[int, ...]
    precision: Any
    size_energy: SizeEnergy | None
    bypass: bool
    per_dim: dict
    extent: dict


__all__ = ["RoleJob", "RoleSearch", "Space"]
