"""The SIMD model on tiles spanning whole groups (depthwise layers): such a tile runs as its
one-group tiles one after the other, and windows it cannot execute are refused in one line."""

from __future__ import annotations

import math

import pytest

from workbench import perf, platforms, simd
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer
from workbench.tiling import Tile

DW = ConvLayer("dw", Ox=14, Oy=14, Oc=96, Kx=3, Ky=3, Kc=1, Px=1, Py=1, groups=96)


@pytest.mark.parametrize("platform", ["idsp", "nve"])
@pytest.mark.parametrize("g", [2, 8, 96])
def test_spanning_tile_is_its_groups_one_after_the_other(platform: str, g: int) -> None:
    plat = platforms.load_platform(platform)
    one, span = Tile(14, 7, 1, 1, 1), Tile(14, 7, g, 1, 1)
    plan = simd.best_plan(DW, one, plat)
    c1, cg = simd.counts(DW, one, plat, plan), simd.counts(DW, span, plat, plan)
    assert cg.cycles == g * c1.cycles and cg.vector_transfers == g * c1.vector_transfers
    assert cg.mac_instructions == g * c1.mac_instructions
    # useful lane MACs are the tile's MACs, counted here from the tile itself
    assert cg.useful_lane_macs == 14 * 7 * g * 1 * 1 * 3 * 3
    assert simd.mapping_report(DW, span, plat).equals(simd.mapping_report(DW, one, plat))


def test_perf_with_simd_compute_on_a_spanning_tile() -> None:
    plat = platforms.load_platform("idsp")
    g = 8
    span, one = Tile(14, 14, g, 1, 1), Tile(14, 14, 1, 1, 1)
    est = perf.estimate(DW, span, "intra", plat, compute="simd")
    c1 = simd.counts(DW, one, plat, simd.best_plan(DW, one, plat))
    blocks = math.ceil(96 / g)  # tiles of g whole groups
    assert est.counts.n_tiles == blocks
    assert est.breakdown["compute"] == pytest.approx(blocks * g * c1.cycles)


def test_windows_the_simd_model_cannot_run_are_refused() -> None:
    plat = platforms.load_platform("idsp")
    dilated = ConvLayer("dil", Ox=8, Oy=8, Oc=4, Kx=3, Ky=3, Kc=4, Px=2, Py=2, Dx=2, Dy=2)
    with pytest.raises(WorkbenchError, match="no dilated windows") as err:
        simd.counts(dilated, Tile(8, 8, 4, 1, 4), plat, simd.Plan("ox"))
    assert "\n" not in str(err.value)
    uneven = ConvLayer("uneven", Ox=4, Oy=4, Oc=2, Kx=3, Ky=3, Kc=2, Sx=2, Sy=2, Px=1, Py=1,
                       Px_end=0, Py_end=0)
    with pytest.raises(WorkbenchError, match="equal start and end padding"):
        simd.simulate(uneven, Tile(4, 4, 2, 1, 2), plat)
    with pytest.raises(WorkbenchError, match="simulate one group's tile"):
        simd.simulate(DW, Tile(14, 14, 4, 1, 1), plat)
