"""The explore-layer API on memory hierarchies (workbench.explore.hierarchy_plan) and the
commands built on it (`workbench hierarchy --platform`, `workbench explore` on a platform
with levels): every number equals a direct `search` + `evaluate` on a hierarchy built by
hand, at widths worked out by hand from the platform."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import layers, platforms
from workbench.explore import hierarchy_plan as hp
from workbench.hierarchy import ElementBytes, Hierarchy, Level, evaluate
from workbench.hierarchy.blocking import padding
from workbench.hierarchy.codesign import table3_energy_pj
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import search
from workbench.memo import Caches

NET_YAML = """name: tiny
layers:
  - {name: c1, type: conv, input: [2, 6, 6], maps: 4, kernel: 3, stride: 1, pad: 0}
  - {name: f1, type: fc, input: [16, 1, 1], outputs: 6}
"""
PLATFORM_YAML = """name: three
clock_mhz: 200
macs_per_cycle: 4
elem_bytes: 1
dma_setup_cycles: 10
register_file_bytes: 64
in_bits: 8
w_bits: 8
acc_bits: 16
mac_energy_pj: 0.5
datapath: {unroll: {M: 2, C: 2}}
levels:
  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 200, bandwidth: 4}
  - {name: SRAM, capacity: 4096, access_bits: 64, energy_pj: null, bandwidth: 8}
  - {name: RF, capacity: 256, access_bits: 64, energy_pj: 0.25, bandwidth: 16}
"""
# the same hierarchy written out by hand; widths: 8-bit data, 16-bit partial sums
BY_HAND = Hierarchy((Level("DRAM", None, 16, 200.0, 4.0), Level("SRAM", 4096, 64, None, 8.0),
                     Level("RF", 256, 64, 0.25, 16.0)), "three", 0.5,
                    Datapath({"M": 2, "C": 2}, 200.0))
WIDTHS = ElementBytes(1, 1, 1, 2)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "net.yaml").write_text(NET_YAML)
    (tmp_path / "three.yaml").write_text(PLATFORM_YAML)
    return tmp_path / "net.yaml", tmp_path / "three.yaml"


def _direct(layer, hierarchy, widths):
    found = search(layer, hierarchy, widths, table3_energy_pj)
    return found, evaluate(layer, found.blocking, hierarchy, widths, table3_energy_pj)


def test_plan_rows_equal_search_and_evaluate(files) -> None:
    net_file, plat_file = files
    plat = platforms.load_platform(plat_file)
    assert hp.platform_hierarchy(plat) == BY_HAND
    net = layers.load_network(net_file)
    frame = hp.hierarchy_plan(net, plat)
    assert list(frame["layer"]) == ["c1", "f1"]
    assert frame.attrs["levels"] == ["DRAM", "SRAM", "RF"]
    for row, layer in zip(frame.to_dict("records"), net.tiled_layers(), strict=True):
        found, priced = _direct(layer, BY_HAND, WIDTHS)
        assert row["blocking"] == found.blocking.describe()
        assert row["mac_energy_pj"] == pytest.approx(layer.macs * 0.5)
        memory = 0.0
        for level, acc in zip(BY_HAND.levels, priced.accesses, strict=True):
            assert row[f"energy_pj_{level.name}"] == pytest.approx(priced.energy_pj[level.name])
            assert row[f"accesses_{level.name}"] == acc.total()
            memory += priced.energy_pj[level.name]
        assert row["memory_energy_pj"] == pytest.approx(memory)
        assert row["energy_pj"] == pytest.approx(memory + layer.macs * 0.5)
        assert row["memory_to_compute"] == pytest.approx(memory / (layer.macs * 0.5))
        assert row["fits"] is True
        cycles = getattr(priced, "cycles", None)
        assert ("cycles" in row) == (cycles is not None)
        if cycles is not None:
            assert row["cycles"] == pytest.approx(cycles)
    totals = hp.hierarchy_totals(frame)
    assert totals["energy_pj"] == pytest.approx(frame["energy_pj"].sum())
    assert totals["energy_pj_RF"] == pytest.approx(frame["energy_pj_RF"].sum())
    if "cycles" in frame:
        assert totals["time_ms"] == pytest.approx(frame["cycles"].sum() / 200e3)
    rows = hp.hierarchy_traffic(net, plat)
    assert sum(r["energy_pj"] for r in rows) == pytest.approx(totals["energy_pj"])
    assert [r["level"] for r in rows[:4]] == ["DRAM", "SRAM", "RF", "MAC"]


def test_a_hierarchy_without_platform_uses_16_bit_data_and_32_bit_sums() -> None:
    layer = layers.load_network("lenet5")["conv1"]
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("SRAM", 8192, 64)), "h", 1.0)
    frame = hp.hierarchy_plan([layer], hier)
    found, priced = _direct(layer, hier, ElementBytes(2, 2, 2, 4))
    assert frame["energy_pj"].iloc[0] == pytest.approx(priced.total_energy_pj)
    assert priced.total_energy_pj == pytest.approx(found.energy_pj)  # scalar MAC: the same


def test_implied_hierarchy_of_a_single_level_platform() -> None:
    """idsp: DRAM 8-byte accesses at 2600 pJ, 128 KB local at 64 B / 66.6 pJ, 60/32 pJ per
    MAC, 16-bit data and (acc_bits 16) 16-bit partial sums."""
    idsp = platforms.load_platform("idsp")
    hier = Hierarchy((Level("DRAM", None, 64, 2600.0, 32.0), Level("local", 131072, 512, 66.6)),
                     "idsp", 60 / 32)
    layer = layers.load_network("lenet5")["conv1"]
    frame = hp.hierarchy_plan([layer], idsp)
    _, priced = _direct(layer, hier, ElementBytes(2, 2, 2, 2))
    assert frame["energy_pj"].iloc[0] == pytest.approx(priced.total_energy_pj)
    assert frame["mac_energy_pj"].iloc[0] == pytest.approx(layer.macs * 60 / 32)


def test_implied_hierarchy_runs_the_platforms_macs_per_cycle() -> None:
    """A platform without levels feeds an array of its macs_per_cycle (idsp: 32 at 450 MHz)
    whose mapping is not modelled: energies and accesses stay those of a scalar MAC (one
    operand fetch per MAC, the seed 000 model's local accesses), compute takes MACs / 32
    cycles (the performance model's compute time), the DRAM link its elements over the bus's
    32 per cycle; time at 450 MHz. (Before, compute was one cycle per MAC: 32× too slow.)"""
    idsp = platforms.load_platform("idsp")
    assert (idsp.macs_per_cycle, idsp.bus_elems_per_cycle, idsp.clock_mhz) == (32, 32, 450)
    scalar = Hierarchy((Level("DRAM", None, 64, 2600.0, 32.0),
                        Level("local", 131072, 512, 66.6)), "idsp", 60 / 32)
    net = layers.load_network("lenet5")
    frame = hp.hierarchy_plan(net, idsp)
    unpadded = 0
    for layer, row in zip(net.tiled_layers(), frame.itertuples(), strict=True):
        found, priced = _direct(layer, scalar, ElementBytes(2, 2, 2, 2))
        assert row.energy_pj == pytest.approx(priced.total_energy_pj, rel=1e-12)
        assert row.accesses_local == priced.accesses[1].total()
        if padding(layer, found.blocking):
            continue
        unpadded += 1
        dram = priced.timing.link_elements["DRAM"] / 32
        assert row.cycles == pytest.approx(max(layer.macs / 32, dram), rel=1e-12)
        assert row.bound == ("compute" if layer.macs / 32 >= dram else "DRAM")
        assert row.array_use == 1.0  # an ideal array, its blocks not padded
    assert unpadded >= 2
    totals = hp.hierarchy_totals(frame)
    assert totals["time_ms"] == pytest.approx(frame["cycles"].sum() / 450e3, rel=1e-12)
    assert frame.loc[frame["layer"] == "conv1", "cycles"].iloc[0] == 627_200 / 32


def test_each_layer_is_searched_once(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def counting(layer, hierarchy, precision, size_energy, bypass=True, caches=None):
        calls.append(layer.name)
        return search(layer, hierarchy, precision, size_energy, bypass=bypass, caches=caches)

    monkeypatch.setattr(hp, "search", counting)
    net = layers.load_network("lenet5")
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("SRAM", 16384, 64)), "memo", 1.0)
    session = Caches()
    first = hp.hierarchy_plan(net, hier, caches=session)
    again = hp.hierarchy_plan(net, hier, caches=session)
    hp.hierarchy_traffic(net, hier, caches=session)
    assert sorted(calls) == sorted(layer.name for layer in net.tiled_layers())
    assert first.equals(again)
    calls.clear()
    again = hp.hierarchy_plan(net, hier)  # a new session: every search found on the disk
    assert calls == [] and first.equals(again)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "empty"))
    hp.hierarchy_plan(net, hier)  # a new session, nothing on the disk: all searched again
    assert sorted(calls) == sorted(layer.name for layer in net.tiled_layers())


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_hierarchy_command_with_a_platform(files) -> None:
    net_file, plat_file = files
    out = _cli("hierarchy", str(net_file), "--platform", str(plat_file), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    net = layers.load_network(net_file)
    total = 0.0
    for layer in net.tiled_layers():
        _, priced = _direct(layer, BY_HAND, WIDTHS)
        rows = {r["level"]: r for r in doc["rows"] if r["layer"] == layer.name}
        for level, acc in zip(BY_HAND.levels, priced.accesses, strict=True):
            assert rows[level.name]["W"] == acc.total("W")
            assert rows[level.name]["energy_pj"] == pytest.approx(priced.energy_pj[level.name])
        total += priced.total_energy_pj
        cycles, bound, use = doc["given"]["layer_cycles"][layer.name]  # it has a clock
        assert cycles == pytest.approx(priced.cycles) and bound == priced.bound
        # the 2×2 array's use: MACs over 4 slots per compute cycle (the datapath's steps)
        assert use == pytest.approx(layer.macs / (4 * priced.timing.compute_cycles))
        assert 0 < use <= 1
    assert doc["given"]["energy_pj"] == pytest.approx(total)
    assert doc["given"]["time_ms"] == pytest.approx(  # at the platform's 200 MHz
        sum(c for c, *_ in doc["given"]["layer_cycles"].values()) / 200e3, rel=1e-12)
    assert doc["given"]["hierarchy"] == "three" and doc["given"]["on_chip_kb"] == 4.25
    text = _cli("hierarchy", str(net_file), "--platform", str(plat_file), "--elem-bytes", "2")
    assert text.returncode == 0 and "on the given hierarchy: three" in text.stdout
    assert "cycles per layer (bound, MAC array use): " in text.stdout
    head = " ".join(line.strip() for line in text.stdout.split("\nlayer ")[0].splitlines())
    assert re.search(r"[\d,]+ cycles \([\d.]+ [µm]?s\)$", head)  # the title, wrapped at 100
    bad = _cli("hierarchy", str(net_file), "--platform", "gpu")
    assert bad.returncode != 0 and "unknown platform 'gpu'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_explore_prices_conv_layers_on_the_levels_of_platforms_with_levels(files) -> None:
    """One plan: on a platform with levels explore's conv/fc rows carry the energy and
    accesses of every level (least energy, no fusion, no DMA setup cost: the hierarchy
    plan's energies); on a single-level platform none."""
    net_file, plat_file = files
    free = plat_file.with_name("free.yaml")  # the same platform with DMA setups for free
    free.write_text(PLATFORM_YAML.replace("dma_setup_cycles: 10", "dma_setup_cycles: 0"))
    out = _cli("explore", str(net_file), "--platform", str(free), "--json",
               "--objective", "energy", "--fusion", "off")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert "hierarchy" not in doc
    frame = hp.hierarchy_plan(layers.load_network(net_file), platforms.load_platform(plat_file))
    rows = [r for r in doc["rows"] if r["schedule"] == "levels"]
    assert [r["layer"] for r in rows] == ["c1", "f1"]
    for got, want in zip(rows, frame.to_dict("records"), strict=True):
        assert got["energy_pj"] == pytest.approx(want["energy_pj"])
        assert got["energy_pj_SRAM"] == pytest.approx(want["energy_pj_SRAM"])
    text = _cli("explore", str(net_file), "--platform", str(plat_file))
    assert "levels DRAM | SRAM" in text.stdout and "memory hierarchy" not in text.stdout
    assert "conv/fc layers by level: energy DRAM" in text.stdout
    plain = _cli("explore", str(net_file), "--platform", "idsp", "--json")
    assert all("energy_pj_DRAM" not in r for r in json.loads(plain.stdout)["rows"])
    plain = _cli("explore", str(net_file), "--platform", "idsp")
    assert plain.returncode == 0 and "by level" not in plain.stdout


def test_a_level_smaller_than_one_element_is_bypassed(files) -> None:
    """A 1-byte register file holds no 16-bit element: every layer streams from DRAM. By hand,
    per MAC the datapath reads an input and a weight (one 16-bit access each) and, per
    output, writes the final value once (16 bits) and every other partial sum twice (read back
    and written, 32 bits = 2 accesses each): DRAM energy = 320 pJ × (2·MACs + outputs +
    4·(MACs − outputs)), the register file's 0."""
    net_file, _ = files
    hier = Hierarchy((Level("DRAM", None, 16, 320.0), Level("RF", 1, 16, 0.1)), "tiny-rf")
    net = layers.load_network(net_file)
    frame = hp.hierarchy_plan(net, hier)
    for layer, (_, row) in zip(net.tiled_layers(), frame.iterrows(), strict=True):
        outputs = layer.Ox * layer.Oy * layer.Oc * layer.On
        assert row["macs"] == layer.macs
        assert row["energy_pj_RF"] == 0
        assert row["energy_pj_DRAM"] == pytest.approx(
            320.0 * (2 * layer.macs + outputs + 4 * (layer.macs - outputs)))
    assert math.isinf(hp.hierarchy_totals(hp.hierarchy_plan(
        layers.load_network(net_file), Hierarchy(BY_HAND.levels, "free")))["memory_to_compute"])
