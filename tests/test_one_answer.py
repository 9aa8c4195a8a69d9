"""One answer among equal optima: which of several blockings of equal energy the search
returns does not depend on what earlier searches kept (`search.memory`) or on the incumbents
it is given, and so a plan is the same, tile for tile, whatever an app or a command planned
before it with the same caches (docs/search.md, "One answer among equal optima").

The case is lenet5's conv2 on shave_cmx (2 cores) as a cycles plan blocks it, its output kept
on chip ("links" weights): an outer M tile of 8 or 16 costs the same. Before the search chose
among equal optima by what they are, a plan at 300 MHz first made it return the other."""

from __future__ import annotations

import pandas as pd
import pytest
from test_hierarchy_search import _s_blockings

from workbench import explore, layers, platforms
from workbench.explore.hierarchy_plan import (
    SIZE_ENERGY,
    platform_hierarchy,
    platform_precision,
)
from workbench.explore.level_search import buffer_hierarchy, weighted
from workbench.hierarchy import ElementBytes, Hierarchy, Level
from workbench.hierarchy.search import search
from workbench.hierarchy.search.bounds import incumbent
from workbench.layers import ConvLayer
from workbench.memo import Caches

CONV2 = ConvLayer(name="share", Ox=14, Oy=14, Oc=64, Kx=5, Ky=5, Kc=32, Px=2, Py=2)


def _links(plat: platforms.Platform) -> Hierarchy:
    """The hierarchy a cycles plan's least-link-time search blocks conv2 on, its output map
    kept on chip (for the layer after it)."""
    kept = CONV2.Ox * CONV2.Oy * CONV2.Oc * platform_precision(plat).outputs
    return weighted(buffer_hierarchy(platform_hierarchy(plat), kept, plat.double_buffer),
                    "links")


def test_kept_bounds_do_not_choose_among_equal_optima() -> None:
    shave = platforms.load_platform("shave_cmx").replace(cores=2)
    prec = platform_precision(shave)
    target = _links(shave)
    cold = search(CONV2, target, prec, SIZE_ENERGY)
    caches = Caches()
    search(CONV2, _links(shave.replace(clock_mhz=300.0)), prec, SIZE_ENERGY, caches=caches)
    warm = search(CONV2, target, prec, SIZE_ENERGY, caches=caches)
    assert warm.energy_pj == cold.energy_pj
    assert warm.blocking == cold.blocking


TINY = ConvLayer(name="o", Ox=3, Oy=2, Oc=2, Kx=2, Ky=1, Kc=1, Sx=2)


def test_an_equal_optimum_given_as_start_is_not_the_answer() -> None:
    """Every other blocking of S (listed by brute force) that the search takes as a start at
    the optimum's energy: given it, the search still returns its own first optimum."""
    hier = Hierarchy((Level("DRAM", None, 32, 100.0), Level("L1", 12, 16, 2.0)),
                     mac_energy_pj=0.5)
    prec = ElementBytes(1, 2, 1, 4)
    cold = search(TINY, hier, prec)
    ties = [b for b in _s_blockings(TINY, hier) if b != cold.blocking
            and (start := incumbent(TINY, hier, prec, None, True, [b])) is not None
            and start[0] == pytest.approx(cold.energy_pj, rel=1e-12)]
    assert len(ties) >= 5  # a case with ties, else this shows nothing
    for other in ties:
        assert search(TINY, hier, prec, incumbents=[other]).blocking == cold.blocking


@pytest.mark.parametrize("before", [{"clock_mhz": 300.0}, {"cores": 3}])
def test_a_plan_after_other_plans_is_the_fresh_plan_tile_for_tile(before, tmp_path,
                                                                  monkeypatch) -> None:
    """Every column, tiles and shares included."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "warm"))
    shave = platforms.load_platform("shave_cmx")
    net = layers.load_network("lenet5")
    caches = Caches()
    explore.network_plan(net, shave.replace(**before), "cycles", caches=caches)
    warm = explore.network_plan(net, shave.replace(cores=2), "cycles", caches=caches)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cold"))
    cold = explore.network_plan(net, shave.replace(cores=2), "cycles", caches=Caches())
    pd.testing.assert_frame_equal(warm, cold)
