"""Sweeps over memory hierarchies: the `hierarchy` grid axis and platforms with levels. A
sweep's hierarchy columns equal direct calls of `explore.hierarchy_plan` on hierarchies
written out by hand (the buffer size sizing the outermost on-chip level), and a bad axis
value is one line naming the key."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from workbench import layers, sweep
from workbench.errors import FileFormatError, WorkbenchError
from workbench.explore import hierarchy_plan as hp
from workbench.hierarchy import ElementBytes, Hierarchy, Level, SplitCapacity
from workbench.hierarchy.datapath import Datapath

SPLIT_YAML = """name: split
mac_energy_pj: 0.75
levels:
  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 300}
  - {name: buffers, capacity: {I: 4096, W: 8192, O: 4096}, access_bits: 128, energy_pj: null}
"""


def _by_hand(name: str, kb: int) -> Hierarchy:
    """The case's hierarchy: the file's levels, the on-chip level outermost sized `kb` KB,
    DRAM's bandwidth idsp's bus (32 elements/cycle); the files describe no MAC array, so it is
    idsp's: 32 MACs per cycle at 450 MHz, mapping not modelled."""
    idsp_array = Datapath(clock_mhz=450, ideal_macs_per_cycle=32)
    if name == "seed001_two_level":   # data/hierarchies/seed001_two_level.yaml
        return Hierarchy((Level("DRAM", None, 16, 320.0, 32.0), Level("SRAM", kb * 1024, 64),
                          Level("RF", 1024, 64)), "seed001_two_level", 1.0, idsp_array)
    quarter = kb * 1024 // 4
    return Hierarchy((Level("DRAM", None, 16, 300.0, 32.0),
                      Level("buffers", SplitCapacity(quarter, 2 * quarter, quarter), 128)),
                     "split", 0.75, idsp_array)


def test_sweep_rows_equal_direct_hierarchy_plans(tmp_path: Path) -> None:
    split = tmp_path / "split.yaml"
    split.write_text(SPLIT_YAML)
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[16, 64],
                      schedules=["inter_kc"], hierarchy=["seed001_two_level", str(split)])
    assert "hierarchy" in grid.axes()
    frame = sweep.run(grid, engine="local")
    assert not frame.attrs["failures"] and len(frame) == 4
    # the expected values are computed again (no caches passed: nothing is recalled)
    net = layers.load_network("lenet5")
    widths = ElementBytes(2, 2, 2, 2)   # idsp: 16-bit data, the grid's 16-bit accumulators
    for row in frame.to_dict("records"):
        name = "seed001_two_level" if row["hierarchy"] == "seed001_two_level" else "split"
        hier = _by_hand(name, int(row["memory_kb"]))
        plan = hp.hierarchy_plan(net, hier, widths)
        assert row["hierarchy_energy_uj"] == pytest.approx(plan["energy_pj"].sum() / 1e6)
        for level in hier.levels:
            assert row[f"hierarchy_{level.name}_uj"] == pytest.approx(
                plan[f"energy_pj_{level.name}"].sum() / 1e6)
        mac = plan["mac_energy_pj"].sum()   # iterations of whole blocks: ≥ MACs (padding)
        assert mac >= sum(layer.macs for layer in net.tiled_layers()) * hier.mac_energy_pj
        assert row["hierarchy_mac_uj"] == pytest.approx(mac / 1e6)
        memory = plan["memory_energy_pj"].sum()
        assert row["memory_to_compute"] == pytest.approx(memory / mac)
        assert row["hierarchy_cycles"] == pytest.approx(plan["cycles"].sum())
        # at least the MACs over idsp's 32 per cycle (before: one MAC per cycle)
        assert row["hierarchy_cycles"] < sum(layer.macs for layer in net.tiled_layers()) / 8
        assert row["energy_uj"] > 0 and row["cycles"] > 0   # the single-level columns stay
    assert {r["hierarchy"] for r in frame.to_dict("records")} == {"seed001_two_level",
                                                                  str(split)}


def test_a_platform_with_levels_adds_hierarchy_columns_single_level_ones_do_not() -> None:
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp", "seed001_3level"],
                      memory_kb=[64], schedules=["inter_kc"])
    frame = sweep.run(grid, engine="local").set_index("platform")
    assert frame.loc["seed001_3level", "hierarchy"] == "seed001_3level"
    assert frame.loc["seed001_3level", "hierarchy_SRAM_uj"] > 0
    assert frame.loc["idsp"].filter(like="hierarchy").isna().all()


def test_bad_hierarchy_values_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("networks: [lenet5]\nplatforms: [idsp]\n"
                    "hierarchy: [seed001_two_level, nope]\n")
    with pytest.raises(FileFormatError) as info:
        sweep.Grid.from_yaml(path)
    text = str(info.value)
    assert text.startswith(f"grid file {str(path)!r}: hierarchy[1]: unknown hierarchy 'nope';"
                           " shipped: ") and "seed001_two_level" in text and "\n" not in text
    with pytest.raises(WorkbenchError, match=r"^grid: hierarchy\[0\]: hierarchy file "
                                             r"'missing\.yaml' does not exist"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], hierarchy=["missing.yaml"])
    with pytest.raises(WorkbenchError, match=r"hierarchy: lists a value twice"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"],
                   hierarchy=["seed001_two_level", "seed001_two_level"])


def test_a_bad_hierarchy_file_fails_its_cases_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPLIT_YAML.replace("access_bits: 16, energy_pj: 300",
                                      "access_bits: 12, energy_pj: 300"))
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[16],
                      schedules=["inter_kc"], hierarchy=[str(bad)])
    frame = sweep.run(grid, engine="local")
    assert len(frame) == 0
    [failure] = frame.attrs["failures"]
    assert "levels[0].access_bits: must be a whole number of bytes" in failure
    assert "\n" not in failure


def test_a_broken_hierarchy_file_fails_the_grid_before_any_case(tmp_path: Path) -> None:
    """Keys a hierarchy file cannot have (a typo, or a platform file's fields, which would
    override the swept platform's) and broken levels: one line at grid load, naming the file
    and the field; nothing runs."""
    platform_file = tmp_path / "plat.yaml"
    platform_file.write_text(SPLIT_YAML + "macs_per_cycle: 256\nclock_mhz: 500\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text(SPLIT_YAML + "extra_key: 1\n")
    level_key = tmp_path / "level_key.yaml"
    level_key.write_text(SPLIT_YAML.replace("energy_pj: 300", "energy_pj: 300, speed: 3", 1))
    for path, rule in ((platform_file, "unknown field(s) ['clock_mhz', 'macs_per_cycle']; a "
                                       "hierarchy file has only: name, levels, datapath, "
                                       "mac_energy_pj"),
                       (extra, "unknown field(s) ['extra_key']"),
                       (level_key, "levels[0].speed")):
        with pytest.raises(WorkbenchError) as info:
            sweep.Grid(networks=["lenet5"], platforms=["idsp"], hierarchy=[str(path)])
        text = str(info.value)
        assert text.startswith(f"hierarchy file {str(path)!r}: ") and rule in text, text
        assert "\n" not in text


def test_case_ids_without_a_hierarchy_stay_put() -> None:
    """The id is the hash of the case's settings as written before hierarchies existed."""
    [case] = sweep.cases(sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[16],
                                    schedules=["intra"], fusion=["off"]))
    before = ("Case(network='lenet5', platform='idsp', batch=None, memory_bytes=16384, "
              "acc_bits=16, overrides=(), schedules=('intra',), fusion='off')")
    assert case.case_id == hashlib.sha1(before.encode()).hexdigest()[:16]
    [with_h] = sweep.cases(sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[16],
                                      schedules=["intra"], fusion=["off"],
                                      hierarchy=["seed001_two_level"]))
    assert with_h.case_id != case.case_id and "seed001_two_level" in with_h.describe()


def test_the_sweep_page_offers_the_hierarchy_axis_and_metrics(tmp_path: Path) -> None:
    """A sweep over two hierarchies: its page filters on `hierarchy`, plots and colours by
    the hierarchy metrics (total, per level, MAC, memory:compute, cycles) and lists them in
    the table; x = memory_to_compute is accepted. Before, none of them was offered."""
    from bokeh.models import CheckboxGroup, Select

    from workbench.report import sweep_page
    from workbench.viz import sweep_plots as sp

    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[64],
                      schedules=["inter_kc"], hierarchy=["seed001_two_level", "seed001_diannao"])
    frame = sweep.run(grid, engine="local")
    assert not frame.attrs["failures"] and len(frame) == 2
    printed = sweep.grid_summary(frame)  # `workbench sweep`'s table tells the cases apart
    assert {"hierarchy", "hierarchy_energy_uj", "memory_to_compute"} <= set(printed.columns)
    axes = sp.sweep_axes(frame)
    assert "hierarchy" in axes
    metrics = sp.metrics_of(frame)
    for name in ("hierarchy_energy_uj", "hierarchy_mac_uj", "memory_to_compute",
                 "hierarchy_cycles", "hierarchy_DRAM_uj", "hierarchy_SRAM_uj",
                 "hierarchy_RF_uj"):
        assert name in metrics and sp.direction(name) == "min"
    layout = sweep_page.sweep_view(frame, axes, x="memory_to_compute",
                                   y="hierarchy_energy_uj", color="hierarchy")
    boxes = {b.name: b.labels for b in layout.select({"type": CheckboxGroup})}
    assert sorted(boxes["filter_hierarchy"]) == ["seed001_diannao", "seed001_two_level"]
    options = {tuple(s.options) for s in layout.select({"type": Select})}
    assert any("hierarchy_SRAM_uj" in o and "memory_to_compute" in o for o in options)
    assert {"hierarchy_energy_uj", "memory_to_compute"} <= set(
        sp.table_columns(frame, axes))
    out = sweep_page.sweep_page(frame, [], tmp_path / "s.html", x="memory_to_compute")
    assert "seed001_diannao" in out.read_text()


def test_the_printed_summary_tells_traffic_model_cases_apart() -> None:
    """Cases differing only in their traffic model (a seed000 case with the engine's figures,
    a dataflow one with traffic only) print as different rows, each with its model and
    traffic; before, the dataflow row read as a copy with NaNs."""
    import pandas as pd

    frame = pd.DataFrame([
        {"network": "lenet5", "platform": "idsp", "memory_kb": 64.0, "acc_bits": 16,
         "objective": "cycles", "traffic_model": "seed000", "throughput_gops": 14.26,
         "energy_uj": 975.8, "traffic_mb": 1.25, "case_id": "a"},
        {"network": "lenet5", "platform": "idsp", "memory_kb": 64.0, "acc_bits": 16,
         "objective": None, "traffic_model": "dataflow", "throughput_gops": None,
         "energy_uj": None, "traffic_mb": 0.91, "case_id": "b"}])
    printed = sweep.grid_summary(frame)
    assert {"traffic_model", "traffic_mb"} <= set(printed.columns)
    assert "case_id" not in printed.columns
    assert not printed.astype(str).duplicated().any()
    assert list(printed["traffic_model"]) == ["seed000", "dataflow"]
