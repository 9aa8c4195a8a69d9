"""Role orders of `search`'s space S (proofs in docs/search.md): which
on-chip level's loop group nests inside which. Role r (1 = outermost) owns group L−r+1; under
the identity the memory levels play their own roles (seed 001's nesting), under another order
a level whose arrays no other level shares may sit inside a smaller one's buffers (e.g. an
SRAM's inputs and weights inside the loops around a register file's partial sums)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.hierarchy.blocking import ARRAYS, Blocking
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.levels import Hierarchy, Level

Roles = tuple[int, ...]  # roles[r − 1]: the memory level (1 … L) playing role r
Pattern = tuple[tuple[int, ...], ...]  # per array (ARRAYS order): on-chip levels holding it


def holder_patterns(hierarchy: Hierarchy) -> list[Pattern]:
    """Every choice of the on-chip levels holding each array (a level whose split part for an
    array is 0 never holds it), R's (every level that can) first."""
    options = []
    for array in ARRAYS:
        able = [k for k in range(1, len(hierarchy.levels))
                if hierarchy.levels[k].bytes_for(array) > 0]
        options.append([c for r in range(len(able), -1, -1)
                        for c in itertools.combinations(able, r)])
    return list(itertools.product(*options))


def variant(pattern: Pattern, k: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """On-chip level k under a pattern: the arrays it holds and, per array, its source (the
    next level outwards holding it; 0 = DRAM)."""
    held, sources = [], []
    for array, chain in zip(ARRAYS, pattern, strict=True):
        if k in chain:
            held.append(array)
            sources.append(([0] + list(chain))[chain.index(k)])
    return tuple(held), tuple(sources)



@dataclass(frozen=True)
class RoleView:
    """A hierarchy's levels with the on-chip ones listed in role order (DRAM first): what the
    search prices under one role order; also a hierarchy with two levels taken as one
    (`search.merged`). Not a `Hierarchy`: capacities may grow inwards."""

    levels: tuple[Level, ...]
    name: str
    mac_energy_pj: float
    datapath: Datapath | None

    def __len__(self) -> int:
        return len(self.levels)


def role_orders(hierarchy: Hierarchy, bypass: bool = True) -> list[Roles]:
    """Every order of the on-chip levels, the identity first (only it when not `bypass`: R's
    holders, every level holding every array it can, nest as the memory levels)."""
    own = tuple(range(1, len(hierarchy.levels)))
    if not bypass:
        return [own]
    return [own] + [r for r in itertools.permutations(own) if r != own]


def in_roles(hierarchy: Hierarchy, roles: Roles) -> Hierarchy | RoleView:
    """The hierarchy seen under the role order (itself under the identity)."""
    if roles == tuple(range(1, len(hierarchy.levels))):
        return hierarchy
    return RoleView((hierarchy.levels[0],) + tuple(hierarchy.levels[k] for k in roles),
                    hierarchy.name, hierarchy.mac_energy_pj, hierarchy.datapath)


def keeps_order(pattern, roles: Roles) -> bool:
    """Do the holders of every array (roles, outermost first) come in memory order, so that
    each holder still fills from the next memory level outwards holding the array?"""
    return all(roles[a - 1] < roles[b - 1] for chain in pattern
               for a, b in zip(chain, chain[1:], strict=False))


def role_patterns(hierarchy: Hierarchy | RoleView, roles: Roles) -> list:
    """The holder patterns searched under the role order (`hierarchy`: seen under it), R's
    first when it is one: holders in memory order, and under an order other than the
    identity some array held by the innermost role (see docs/search.md)."""
    own = tuple(sorted(roles))
    inner = len(roles)
    return [p for p in holder_patterns(hierarchy) if keeps_order(p, roles)
            and (roles == own or any(inner in chain for chain in p))]


def to_memory(blocking: Blocking, roles: Roles) -> Blocking:
    """A blocking found under the role order, its positions listed per memory level."""
    buffers = {a: [None] * len(roles) for a in ARRAYS}
    for r, k in enumerate(roles):
        for array in ARRAYS:
            buffers[array][k - 1] = blocking.positions(array)[r]
    return Blocking(blocking.orders, blocking.tiles, tuple(tuple(buffers[a]) for a in ARRAYS))


def to_roles(blocking: Blocking, roles: Roles) -> Blocking | None:
    """The blocking's positions listed per role (None when some array's holders would not come
    in memory order, its positions would grow inwards, or, under an order other than the
    identity, the innermost role would hold nothing: not in S)."""
    if len(roles) != blocking.on_chip_levels:
        return None
    if roles != tuple(sorted(roles)) and \
            all(blocking.positions(a)[roles[-1] - 1] is None for a in ARRAYS):
        return None
    chains = [tuple(r for r, k in enumerate(roles, start=1)
                    if blocking.positions(a)[k - 1] is not None) for a in ARRAYS]
    if not keeps_order(chains, roles):
        return None
    try:
        return Blocking(blocking.orders, blocking.tiles,
                        tuple(tuple(blocking.positions(a)[k - 1] for k in roles)
                              for a in ARRAYS))
    except WorkbenchError:
        return None


__all__ = ["Pattern", "RoleView", "Roles", "holder_patterns", "in_roles", "keeps_order",
           "role_orders", "role_patterns", "to_memory", "to_roles", "variant"]
