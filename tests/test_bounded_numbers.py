"""Numbers checked for meaning (issue 58): the extreme finite values of its reproducers in a
platform file and in a sweep grid end in one line naming the field, the rule and the value;
at the edges of the physical ranges every number a command prints is finite and follows the
model's equations (compute = MACs / macs_per_cycle, energy = cycles × pJ per cycle)."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from bounded import workbench
from hypothesis import given
from hypothesis import strategies as st

from workbench import platforms, sweep
from workbench.errors import WorkbenchError

ROOT = Path(__file__).resolve().parents[1]
IDSP = yaml.safe_load((ROOT / "data" / "platforms" / "idsp.yaml").read_text())


def _platform(path: Path, **changes: Any) -> Path:
    """idsp.yaml with `changes` ('part.key' or 'memory.levels.N.key' → value) applied."""
    doc = copy.deepcopy(IDSP)
    for where, value in changes.items():
        *parents, key = where.split(".")
        node = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[key] = value
    path.write_text(yaml.safe_dump(doc))
    return path


REFUSED = [  # the reproducers, and the range edges just crossed
    ({"datapath.macs_per_cycle": 5e-324}, "datapath.macs_per_cycle: must be a number >= 0.001 "
     "and <= 1e+09 (MACs per cycle), got 5e-324"),
    ({"memory.levels.0.bandwidth": 5e-324}, "memory.levels[0].bandwidth: must be a number "
     ">= 1e-06 and <= 1e+09 (elements per cycle), got 5e-324"),
    ({"dma.setup_cycles": 1e308}, "dma.setup_cycles: must be a number >= 0 and <= 1e+09 "
     "(cycles), got 1e+308"),
    ({"energy.core_pj_per_cycle": 1e308}, "energy.core_pj_per_cycle: must be a number >= 0 and "
     "<= 1e+06 (pJ per cycle), got 1e+308"),
    ({"memory.levels.0.energy_pj": 1e308}, "memory.levels[0].energy_pj: must be a number >= 0 "
     "and <= 1e+06 (pJ per access), got 1e+308"),
    ({"memory.levels.1.capacity": 10**100}, "memory.levels[1].capacity: must be bytes (a whole "
     "number in 1..2^48)"),
    ({"memory.levels.1.capacity": 2**48 + 1}, "got 281474976710657"),
    ({"clock_mhz": 1e5 * 1.01}, "clock_mhz: must be a number >= 0.001 and <= 100000 (MHz: 1 kHz "
     "to 100 GHz), got 101000.0"),
    ({"clock_mhz": 0.0009}, "clock_mhz: must be a number >= 0.001"),
]


def test_extreme_platform_numbers_are_one_line(tmp_path: Path) -> None:
    for i, (changes, rule) in enumerate(REFUSED):
        path = _platform(tmp_path / f"p{i}.yaml", **changes)
        run = workbench("explore", "lenet5", "--platform", str(path), timeout_s=60)
        line = run.one_line_refusal()
        assert line.startswith(f"workbench explore: error: platform file {str(path)!r}: ") \
            and rule in line, line
        assert len(line.split(", got ", 1)[1]) <= 80 and run.seconds < 30, (line, run.figures())


def test_platform_at_its_range_edges_computes_finite_numbers(tmp_path: Path) -> None:
    """The slowest clock, MAC array, bus and the dearest DMA and energies the ranges allow:
    rc 0, every printed number finite, and each row priced by the model's own equations."""
    path = _platform(tmp_path / "edge.yaml", **{
        "clock_mhz": 1e-3, "datapath.macs_per_cycle": 1e-3, "memory.levels.0.bandwidth": 1e-6,
        "memory.levels.0.energy_pj": 1e6, "memory.levels.1.energy_pj": 1e6,
        "memory.levels.1.capacity": 2**48, "dma.setup_cycles": 1e9,
        "energy.core_pj_per_cycle": 1e6})
    run = workbench("explore", "lenet5", "--platform", str(path), "--json", timeout_s=120)
    assert run.rc == 0, run.err[-2000:]
    doc = json.loads(run.out)

    def numbers(value: Any) -> list[float]:
        if isinstance(value, dict):
            return [n for v in value.values() for n in numbers(v)]
        if isinstance(value, list):
            return [n for v in value for n in numbers(v)]
        return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []

    values = numbers(doc)
    assert len(values) > 100 and all(math.isfinite(v) for v in values)
    rows = doc["rows"]
    for row in rows:
        if row["kind"] in ("conv", "fc"):
            assert row["compute_cycles"] == pytest.approx(row["macs"] / 1e-3, rel=1e-12)
        setups = row["cycles_dma_setup"] / 1e9  # seed 000: 3 setups of the prolog + the rest
        assert setups == round(setups) and (setups >= 3) == (row["dma_transfers"] > 0), row
        assert row["energy_dma_setup_pj"] == pytest.approx(row["cycles_dma_setup"] * 1e6,
                                                          rel=1e-12)
        assert row["energy_compute_pj"] == pytest.approx(row["compute_cycles"] * 1e6, rel=1e-12)
    totals = doc["totals"]
    assert totals["cycles"] == pytest.approx(sum(r["cycles"] for r in rows), rel=1e-9)
    assert totals["time_ms"] == pytest.approx(totals["cycles"], rel=1e-12)  # 1 kHz: 1 ms/cycle
    text = workbench("explore", "lenet5", "--platform", str(path), timeout_s=120)
    assert text.rc == 0 and not re.search(r"\b(nan|inf|infinity)\b|n/a", text.out.lower()), \
        text.out


def test_grid_overrides_have_physical_ranges(tmp_path: Path) -> None:
    """Out-of-range overrides ran every case into the same failure and ended with rc 0 and an
    empty table; now the grid is refused before any case, naming the value."""
    for overrides, rule in [
            ({"dma_setup_cycles": [150, 1e308]}, "overrides.dma_setup_cycles[1]: must be a "
             "number >= 0 and <= 1e+09 (cycles), got 1e+308"),
            ({"bus_elems_per_cycle": [5e-324]}, "overrides.bus_elems_per_cycle[0]: must be a "
             "number >= 1e-06"),
            ({"clock_mhz": [10**100]}, "overrides.clock_mhz[0]: must be a number >= 0.001 and "
             "<= 100000 (MHz: 1 kHz to 100 GHz), got 1000000000000000000000000"),
            ({"core_pj_per_cycle": [-1]}, "overrides.core_pj_per_cycle[0]: must be a number "
             ">= 0"),
            ({"cores": [0]}, "overrides.cores[0]: must be a whole number in 1..65,536"),
            ({"local_access_bytes": [10**6]}, "overrides.local_access_bytes[0]: must be a "
             "whole number of bytes in 1..8,192, got 1000000"),
            ({"nosuch": [1]}, "overrides.nosuch: unknown platform field; fields: name, ")]:
        grid = tmp_path / "grid.yaml"
        grid.write_text(yaml.safe_dump({"networks": ["lenet5"], "platforms": ["idsp"],
                                        "overrides": overrides}))
        run = workbench("sweep", str(grid), "--out", str(tmp_path / "out"), timeout_s=60)
        line = run.one_line_refusal()
        assert f"grid file {str(grid)!r}: {rule}" in line, line
        assert not (tmp_path / "out" / "rows").exists()
        with pytest.raises(WorkbenchError, match=r"^grid: overrides\."):
            sweep.Grid(networks=["lenet5"], platforms=["idsp"], overrides=overrides)
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"],  # the edges are cases
                      overrides={"clock_mhz": [1e-3, 1e5], "dma_setup_cycles": [0, 1e9]})
    assert sweep.case_count(grid) == 4


RANGED = ["clock_mhz", "bus_elems_per_cycle", "dma_setup_cycles", "core_pj_per_cycle",
          "ext_access_pj", "local_access_pj", "static_pj_per_cycle", "cores", "dma_channels",
          "elem_bytes", "register_file_bytes", "loop_overhead_cycles"]
EXTREME = st.sampled_from([0, 0.0, 5e-324, -5e-324, 1e-3, 1e-6, 1e308, -1e308, 10**100, 2**48,
                           2**63, -1, -0.5, 1, 2, 16, 1e5, 1e6, 1e9, 1e9 + 1, 65536, 65537])


@given(st.sampled_from(RANGED), st.one_of(EXTREME, st.floats(allow_nan=False),
                                           st.integers(-(2**70), 2**70)))
def test_a_grid_override_is_refused_exactly_when_the_platform_refuses_it(name: str,
                                                                          value: Any) -> None:
    """The grid's one-field check (`platforms.field_rule`) against the whole platform's
    validation of the same value: they agree on every field whose only rule is its range."""
    base = platforms.load_platform("idsp")
    try:
        base.replace(**{name: value})
        whole = None
    except WorkbenchError as exc:
        whole = str(exc)
    rule = platforms.field_rule(name, value)
    assert (rule is None) == (whole is None), (rule, whole)
    if rule is not None:
        assert rule in whole, (rule, whole)


@pytest.mark.parametrize("platform", ["seed001_3level", "shave_cmx"])
def test_every_row_on_a_platform_with_levels_has_its_level_columns(platform: str) -> None:
    """`make fuzz` found NaN in the plan of an untouched platform with levels: a streamed or
    folded layer had no energy_pj_<level> or accesses_<level> (only convs priced by levels
    did). Each row now has them, and for every row they add up as the model's parts do."""
    from workbench import explore, layers

    plat = platforms.load_platform(platform)
    names = [level.name for level in plat.memory.levels]
    for net in ("lenet5", "cifar10_quick"):
        plan = explore.network_plan(layers.load_network(net), plat)
        energy = plan[[f"energy_pj_{n}" for n in names]]
        counts = plan[[f"accesses_{n}" for n in names]]
        assert energy.notna().all().all() and counts.notna().all().all(), plan["schedule"]
        assert set(plan["schedule"]) >= {"levels", "stream"}
        parts = plan[["energy_compute_pj", "energy_dma_setup_pj", "energy_static_pj"]].sum(1)
        assert (energy.sum(1) + parts - plan["energy_pj"]).abs().max() <= \
            1e-9 * plan["energy_pj"].abs().max()
        assert (counts[f"accesses_{names[0]}"] == plan["ext_accesses"]).all()
        streamed = plan["schedule"] != "levels"
        assert (energy.loc[streamed, [f"energy_pj_{n}" for n in names[2:]]] == 0).all().all()
        assert (plan.loc[streamed, "energy_local_pj"]
                == energy.loc[streamed, f"energy_pj_{names[1]}"]).all()
