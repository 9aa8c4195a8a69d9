"""Size-aware energy: seed 001 table 3 and its extension past 1 MB, the `size_aware_energy`
platform flag, the seed 001 preset, and buffer-size sweeps priced by memory size.

Expected values are typed from seed 001 table 3 (pJ per 16-bit access), never read from
data/energy/yang_memory_energy.yaml or computed by the code under test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, perf, platforms, tiling
from workbench.errors import WorkbenchError
from workbench.sweep.evaluate import case_platform
from workbench.sweep.grid import Case
from workbench.viz import units

KB, MB = 1024, 1024 * 1024
WIDTHS = (64, 128, 256, 512)
TABLE3 = {  # size in KB: pJ/16b at 64, 128, 256, 512 bits (seed 001 table 3, as printed)
    1: (1.20, 0.93, 0.69, 0.57),
    2: (1.54, 1.37, 0.91, 0.68),
    4: (2.11, 1.68, 1.34, 0.90),
    8: (3.19, 2.71, 2.21, 1.33),
    16: (4.36, 3.57, 2.66, 2.19),
    32: (5.82, 4.80, 3.52, 2.64),
    64: (8.10, 7.51, 5.79, 4.67),
    128: (11.66, 11.50, 8.46, 6.15),
    256: (15.60, 15.51, 13.09, 8.99),
    512: (23.37, 23.24, 17.93, 15.76),
    1024: (36.32, 32.81, 28.88, 25.22),
}
DRAM = 320.0  # "> 16384 KB", every width
# The stated extension rule, from the typed values: one growth per doubling above 1 MB, the
# geometric mean of E(1 MB)/E(128 KB) over the four widths, per octave (three octaves).
GROWTH = math.prod(a / b for a, b in zip(TABLE3[1024], TABLE3[128], strict=True)) ** (1 / 12)
energy = platforms.memory_energy_pj_per_16b


def _extended(size_mb: int, width: int) -> float:
    return TABLE3[1024][WIDTHS.index(width)] * GROWTH ** math.log2(size_mb)


@pytest.mark.parametrize("kb", sorted(TABLE3))
@pytest.mark.parametrize("width", WIDTHS)
def test_table3_exact_at_every_printed_entry(kb: int, width: int) -> None:
    value = TABLE3[kb][WIDTHS.index(width)]
    assert energy(kb * KB, width) == value
    assert energy(kb * KB - 1, width) == value          # the smallest row holding the size
    if kb > 1:
        assert energy(kb * KB // 2 + 1, width) == value
    assert energy(kb * KB + 1, width) > value           # the next row up


@pytest.mark.parametrize("width", WIDTHS)
def test_dram_above_16_mb_and_below_1_kb(width: int) -> None:
    assert energy(16 * MB + 1, width) == DRAM
    assert energy(2**40, width) == DRAM
    assert energy(16 * MB, width) < DRAM                # 16 MB is still SRAM
    assert energy(1, width) == energy(0.5 * KB, width) == TABLE3[1][WIDTHS.index(width)]


def test_extension_rule_past_1_mb() -> None:
    assert GROWTH == pytest.approx(1.4948, abs=1e-4)    # ~ size^0.58, about sqrt(size)
    per_width = [(a / b) ** (1 / 3) for a, b in zip(TABLE3[1024], TABLE3[128], strict=True)]
    assert min(per_width) < GROWTH < max(per_width)     # within the table's own octave trend
    for width in WIDTHS:
        for size_mb in (2, 4, 8, 16):
            expected = _extended(size_mb, width)
            assert energy(size_mb * MB, width) == pytest.approx(expected, rel=1e-12)
            # between derived rows: the row of the smallest size holding it, as in the table
            assert energy(size_mb * MB * 3 // 4, width) == pytest.approx(expected, rel=1e-12)
    for size_mb in (2, 4, 8, 16):  # wider words stay cheaper per 16 bits, as in every row
        row = [energy(size_mb * MB, w) for w in WIDTHS]
        assert row == sorted(row, reverse=True)
    assert max(energy(16 * MB, w) for w in WIDTHS) < DRAM


@pytest.mark.parametrize("width", WIDTHS)
def test_non_decreasing_in_size_on_a_dense_grid(width: int) -> None:
    sizes = sorted({int(s) for s in np.geomspace(1, 2**26, 4000)}
                   | {b + d for k in range(31) for b in [2**k] for d in (-1, 0, 1) if b + d > 0})
    values = [energy(s, width) for s in sizes]
    assert all(b >= a for a, b in zip(values, values[1:], strict=False))
    assert values[0] == TABLE3[1][WIDTHS.index(width)] and values[-1] == DRAM


@settings(max_examples=examples(200), deadline=None)
@given(a=st.floats(1e-3, 2**36), b=st.floats(1e-3, 2**36), width=st.sampled_from(WIDTHS))
def test_monotone_for_any_two_sizes(a: float, b: float, width: int) -> None:
    small, large = sorted((a, b))
    assert energy(small, width) <= energy(large, width)


@pytest.mark.parametrize("size,width,rule", [
    (0, 64, "memory size must be a positive number of bytes, got 0"),
    (-1024, 64, "must be a positive number"), (float("nan"), 64, "must be a positive number"),
    (float("inf"), 64, "must be a positive number"), (True, 64, "must be a positive number"),
    ("1024", 64, "must be a positive number"),
    (1024, 32, r"memory width 32 bits not tabulated; widths: \[64, 128, 256, 512\]"),
    (1024, 100, "not tabulated"), (2**30, 1024, "not tabulated")])
def test_bad_sizes_and_widths_are_refused_in_one_line(size, width, rule) -> None:
    with pytest.raises(WorkbenchError, match=rule) as err:
        energy(size, width)
    assert "\n" not in str(err.value)


# --- the platform flag -------------------------------------------------------------------

def test_seed001_preset_loads_with_the_seed_numbers() -> None:
    p = platforms.load_platform("yang_256mac")
    assert "yang_256mac" in platforms.list_platforms()
    assert (p.clock_mhz, p.macs_per_cycle, p.elem_bytes, p.in_bits, p.w_bits) == (
        500, 256, 2, 16, 16)                                # §4.2
    assert p.local_mem_bytes == (2 + 32 + 2) * KB           # §5.2 DianNao IB + KB + OB
    assert (p.core_pj_per_cycle, p.ext_access_pj, p.ext_access_bytes) == (256, 320, 2)
    assert p.size_aware_energy and p.local_access_bytes * 8 in WIDTHS
    # 36 KB -> the 64 KB row, 256-bit words: 5.79 pJ/16b x 16
    assert p.effective_local_access_pj == pytest.approx(5.79 * 16, rel=1e-12)
    assert units.has_energy(p)


def test_flag_off_keeps_the_fixed_energy_and_on_derives_it_from_size() -> None:
    idsp = platforms.load_platform("idsp")
    assert not idsp.size_aware_energy
    assert idsp.effective_local_access_pj == 66.6 == idsp.local_access_pj
    sized = idsp.replace(size_aware_energy=True)           # 128 KB, 64 B = 512-bit accesses
    assert sized.effective_local_access_pj == pytest.approx(6.15 * 32, rel=1e-12)
    for kb, row in TABLE3.items():                          # 8-byte accesses: 64-bit column
        p = idsp.replace(size_aware_energy=True, local_mem_bytes=kb * KB, local_access_bytes=8)
        assert p.effective_local_access_pj == pytest.approx(row[0] * 4, rel=1e-12)


@pytest.mark.parametrize("overrides,rule", [
    ({"size_aware_energy": 1}, "size_aware_energy:? must be true or false"),
    ({"size_aware_energy": "yes"}, "size_aware_energy:? must be true or false"),
    ({"local_access_bytes": 4},
     r"local_access_bytes: an energy from size .*\[8, 16, 32, 64\].*got 4 bytes"),
    ({"local_access_bytes": 128}, "local_access_bytes: an energy from size"),
    ({"size_aware_energy": False}, "size_aware_energy=False needs local_access_pj")])
def test_bad_flag_values_are_refused_in_one_line(overrides, rule) -> None:
    with pytest.raises(WorkbenchError, match=rule) as err:
        platforms.load_platform("yang_256mac", **overrides)
    assert "\n" not in str(err.value)
    platforms.load_platform("yang_256mac", size_aware_energy=False, local_access_bytes=4,
                            local_access_pj=1.0)


def test_preset_file_with_a_bad_flag_is_refused(tmp_path) -> None:
    yang = platforms.load_platform("yang_256mac")
    doc = {key: getattr(yang, key) for key in platforms.field_names()} | {
        "size_aware_energy": 2}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(WorkbenchError, match="size_aware_energy:? must be true or false"):
        platforms.load_platform(path)


def test_estimate_prices_local_accesses_by_memory_size() -> None:
    """Only the local-memory energy moves with the flag; it is the table's per access."""
    conv2 = layers.load_network("lenet5")["conv2"]
    tile = tiling.Tile(5, 5, 16, 1, 6)
    base = platforms.load_platform("yang_256mac")
    for kb, pj16 in [(16, 2.66), (64, 5.79), (256, 13.09), (1024, 28.88)]:  # 256-bit column
        on = perf.estimate(conv2, tile, "inter_kc", base.replace(local_mem_bytes=kb * KB))
        off = perf.estimate(conv2, tile, "inter_kc", base.replace(
            local_mem_bytes=kb * KB, size_aware_energy=False, local_access_pj=50.0))
        accesses = math.ceil(on.local_accesses * 2 / 32)
        assert on.local_accesses > 0
        assert on.energy_pj["local"] == pytest.approx(accesses * pj16 * 16, rel=1e-12)
        assert off.energy_pj["local"] == pytest.approx(accesses * 50.0, rel=1e-12)
        assert on.cycles == off.cycles and on.breakdown == off.breakdown
        for part in ("compute", "dma_setup", "external"):
            assert on.energy_pj[part] == off.energy_pj[part]


# --- sweep correctness -------------------------------------------------------------------

SWEEP_KB = (16, 64, 256, 1024, 4096)
EXPECTED_PJ_PER_ACCESS = [2.66 * 16, 5.79 * 16, 13.09 * 16, 28.88 * 16,   # 256-bit column
                          28.88 * GROWTH**2 * 16]                        # 4 MB: derived row


def _pj_per_access(df: pd.DataFrame, plat: platforms.Platform) -> np.ndarray:
    """Local energy per access of every conv/fc row (one core each): its energy_local_pj over
    its local accesses (N_local of the layer, elements, in local_access_bytes words)."""
    net = layers.load_network("lenet5")
    rows = df[df["layer"].isin([lay.name for lay in net.tiled_layers()])]
    assert len(rows) and ("cores" not in rows or (rows["cores"] == 1).all())
    n_local = np.array([perf.layer_local_accesses(net[name], plat, True)
                        for name in rows["layer"]])
    if "local_accesses" in rows:
        assert (rows["local_accesses"].to_numpy() == n_local).all()
    assert (n_local > 0).all()
    return (rows["energy_local_pj"].to_numpy()
            / np.ceil(n_local * plat.elem_bytes / plat.local_access_bytes))


def _sweep_case(kb: int, flag: bool, objective: str = "energy"
                ) -> tuple[platforms.Platform, pd.DataFrame]:
    """One case of a `workbench sweep` over memory size: its platform and network plan."""
    case = Case("lenet5", "yang_256mac", None, kb * KB, 32,
                (("local_access_pj", 50.0), ("size_aware_energy", flag)), tiling.SCHEDULES,
                objective=objective)
    plat = case_platform(case)
    net = layers.load_network("lenet5")
    return plat, explore.network_plan(net, plat, case.objective, case.fusion, case.schedules)


def test_sweep_local_energy_per_access_rises_with_memory_size_as_table3() -> None:
    per_size = []
    for kb, expected in zip(SWEEP_KB, EXPECTED_PJ_PER_ACCESS, strict=True):
        plat, plan = _sweep_case(kb, True)
        values = _pj_per_access(plan, plat)
        assert values == pytest.approx(np.full(len(values), expected), rel=1e-12)
        per_size.append(values[0])
    assert all(b > a for a, b in zip(per_size, per_size[1:], strict=False))


def test_sweep_with_the_flag_off_prices_as_before() -> None:
    """Flag off: the fixed 50 pJ per access at every size, every energy the seed 000 §7.6.3
    sum of its parts; the flag changes nothing but the local part (same plan by cycles)."""
    for kb in SWEEP_KB:
        plat, off = _sweep_case(kb, False, "cycles")
        assert _pj_per_access(off, plat) == pytest.approx(50.0, rel=1e-12)
        parts = off[[f"energy_{p}_pj" for p in perf.ENERGY_PARTS]].sum(axis=1)
        assert off["energy_pj"].to_numpy() == pytest.approx(parts.to_numpy(), rel=1e-12)
        _, on = _sweep_case(kb, True, "cycles")
        same = [c for c in off.columns if c not in ("energy_pj", "energy_local_pj", "edp")]
        assert on[same].equals(off[same])
        assert (on["energy_pj"] - on["energy_local_pj"]).to_numpy() == pytest.approx(
            (off["energy_pj"] - off["energy_local_pj"]).to_numpy(), rel=1e-12)
        assert (on["energy_local_pj"] != off["energy_local_pj"]).any()


@pytest.mark.parametrize("keep", ["best", "pareto"])
def test_explore_buffer_size_sweep_prices_each_size(keep: str) -> None:
    conv2 = layers.load_network("lenet5")["conv2"]
    plat = platforms.load_platform("yang_256mac")
    df = explore.explore_layer(conv2, plat, ["inter_kc"], [kb * KB for kb in SWEEP_KB],
                               keep=keep, objective="energy")
    for kb, expected in zip(SWEEP_KB, EXPECTED_PJ_PER_ACCESS, strict=True):
        values = _pj_per_access(df[df["buffer_bytes"] == kb * KB], plat)
        assert values == pytest.approx(np.full(len(values), expected), rel=1e-12)


def test_sized_platforms() -> None:
    off = platforms.load_platform("idsp")
    assert perf.sized_platforms(off, [2 * KB, 8 * KB]) == [(off, [2 * KB, 8 * KB])]
    on = platforms.load_platform("yang_256mac")
    groups = perf.sized_platforms(on, [2 * KB, 8 * KB + 0.5])
    assert [(p.local_mem_bytes, sizes) for p, sizes in groups] == [
        (2 * KB, [2 * KB]), (8 * KB + 1, [8 * KB + 0.5])]
    assert [p.effective_local_access_pj for p, _ in groups] == pytest.approx(
        [0.91 * 16, 2.66 * 16], rel=1e-12)                 # 2 KB row; 8 KB + 1 B: 16 KB row
