"""Role orders of the search's space S (workbench.hierarchy.search.roles): the holder patterns
searched under each order are exactly those whose holders of every array play roles in memory
order (and, under an order other than the identity, whose innermost role holds some array),
written here from the definition; blockings move between memory and role listings unchanged;
a blocking whose holders the order would reverse has no role listing."""

from __future__ import annotations

import itertools

from workbench.hierarchy import ARRAYS, DIMS, GROUP0, Blocking, Hierarchy, Level, SplitCapacity
from workbench.hierarchy.search.roles import (
    in_roles,
    role_orders,
    role_patterns,
    to_memory,
    to_roles,
)


def _three_levels() -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 64, 100.0), Level("L2", 4096, 64, 8.0),
                      Level("L1", SplitCapacity(512, 0, 256), 32, 2.0),
                      Level("RF", 64, 16, 0.5)), mac_energy_pj=1.0)


def test_role_patterns_are_the_definition() -> None:
    """Per role order of three on-chip levels (one of them never holding weights): the
    patterns searched are the holder choices (per array, any levels able to hold it) whose
    holders of each array, listed by role, come in memory order, with the innermost role
    holding some array unless the order is the identity; the identity's include R's first."""
    hier = _three_levels()
    orders = role_orders(hier)
    assert orders[0] == (1, 2, 3) and sorted(orders) == sorted(itertools.permutations((1, 2, 3)))
    assert role_orders(hier, bypass=False) == [(1, 2, 3)]
    for roles in orders:
        seen = in_roles(hier, roles)
        able = {a: [r for r, k in enumerate(roles, start=1) if hier.levels[k].bytes_for(a) > 0]
                for a in ARRAYS}
        expected = set()
        for chains in itertools.product(*([c for n in range(len(able[a]) + 1)
                                            for c in itertools.combinations(able[a], n)]
                                           for a in ARRAYS)):
            in_memory_order = all([roles[r - 1] for r in c] == sorted(roles[r - 1] for r in c)
                                  for c in chains)
            inner = any(3 in c for c in chains)
            if in_memory_order and (roles == (1, 2, 3) or inner):
                expected.add(tuple(chains))
        got = role_patterns(seen, roles)
        assert len(got) == len(set(got)) and set(got) == expected
        if roles == (1, 2, 3):
            assert got[0] == tuple(tuple(able[a]) for a in ARRAYS)
        assert [lvl.name for lvl in seen.levels[1:]] == [hier.levels[k].name for k in roles]


def test_role_listings_round_trip() -> None:
    """A blocking listed per role and back per memory level is unchanged; one whose holders an
    order would reverse, or (not the identity) whose innermost role would hold nothing, has
    no listing under that order."""
    tile = {"X": 2, "Y": 1, "C": 1, "M": 1, "N": 1}
    orders = [GROUP0, DIMS, DIMS, DIMS]
    # I in L2 and RF, W in L1 only, O in RF only
    blocking = Blocking.of(orders, [tile] * 3, {"I": [20, None, 3], "W": [None, 9, None],
                                                "O": [None, None, 1]})
    for roles in itertools.permutations((1, 2, 3)):
        listed = to_roles(blocking, roles)
        reversed_i = roles.index(1) > roles.index(3)  # I's holders L2, RF out of order
        assert (listed is None) == reversed_i
        if listed is not None:
            assert to_memory(listed, roles) == blocking
    only_l2 = Blocking.of(orders, [tile] * 3, {"I": [20, None, None], "W": [19, None, None],
                                               "O": [18, None, None]})
    assert to_roles(only_l2, (1, 2, 3)) == only_l2
    assert all(to_roles(only_l2, r) is None for r in itertools.permutations((1, 2, 3))
               if r[-1] != 1 and r != (1, 2, 3))
