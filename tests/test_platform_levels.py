"""Platforms with a memory hierarchy (`levels:`): the presets load unchanged with an implied
DRAM + local hierarchy, a declared hierarchy is parsed and checked at load, the single-level
fields are views of the two outer levels (derived, equal, or refused), and overrides move the
levels with them. Expected values are written out by hand from the YAML files."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import pytest
import yaml

from workbench import layers, platforms
from workbench.errors import FileFormatError, WorkbenchError
from workbench.explore import network_plan
from workbench.explore.hierarchy_plan import platform_hierarchy
from workbench.hierarchy import BankedCapacity, Hierarchy, Level, SplitCapacity
from workbench.hierarchy.datapath import Datapath

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("idsp", "shave", "nve", "hwc", "yang_256mac")

LEVELS_3 = """name: mine
clock_mhz: 500
macs_per_cycle: 256
elem_bytes: 2
dma_setup_cycles: 0
register_file_bytes: 1024
mac_energy_pj: 1.0
datapath: {unroll: {C: 16, M: 16}}
levels:
  - {name: DRAM, capacity: null, access_bits: 16, energy_pj: 320, bandwidth: 16}
  - {name: SRAM, capacity: 65536, access_bits: 64, energy_pj: null}
  - {name: RF, capacity: 1024, access_bits: 64, energy_pj: 0.5}
"""


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", [*PRESETS, "seed001_3level"])
def test_presets_load_unchanged(name: str) -> None:
    """Every value a preset file gives, part by part and level by level, is the loaded one;
    only seed001_3level says more than DRAM + one local memory."""
    doc = yaml.safe_load((ROOT / "data" / "platforms" / f"{name}.yaml").read_text())
    plat = platforms.load_platform(name)
    assert plat.has_levels == (name == "seed001_3level")
    for key, value in doc.items():
        if not isinstance(value, dict):
            assert getattr(plat, key) == value, key
            continue
        part = getattr(plat, key)
        for field, given in value.items():
            if field == "levels":
                for level, fields in zip(part.levels, given, strict=True):
                    assert level.model_dump() | fields == level.model_dump(), (key, fields)
            elif field == "unroll":
                assert dict(part.unroll) == given
            else:
                assert getattr(part, field) == given, (key, field)


def test_flat_presets_of_old_read_to_the_same_platforms(tmp_path: Path) -> None:
    """Every preset written the old way (its single-level names, flat) loads to the same
    platform, with one notice naming the file and the new spelling."""
    for name in PRESETS:
        plat = platforms.load_platform(name)
        flat = {key: getattr(plat, key) for key in platforms.field_names()}
        if plat.size_aware_energy:
            del flat["local_access_pj"]
        path = _write(tmp_path, yaml.safe_dump(flat), f"{name}.yaml")
        with pytest.warns(platforms.FlatFieldsNotice) as notices:
            again = platforms.load_platform(path)
        assert len(notices) == 1 and str(path) in str(notices[0].message)
        assert "\n" not in str(notices[0].message)
        for part in ("datapath", "dma", "cluster"):
            assert getattr(again, part) == getattr(plat, part), (name, part)
        for key in platforms.field_names():
            assert getattr(again, key) == getattr(plat, key), (name, key)


def test_implied_hierarchies_of_the_presets() -> None:
    """DRAM from the ext_access_* fields and the bus, the local memory from local_mem_bytes
    and local_access_* (energy from size when size_aware_energy), MAC core pJ / MACs, the
    MAC array macs_per_cycle at clock_mhz, its mapping not modelled."""
    idsp = platform_hierarchy(platforms.load_platform("idsp"))
    assert idsp == Hierarchy((Level("DRAM", None, 64, 2600.0, 32.0),
                              Level("local", 131072, 512, 66.6)), "idsp", 60 / 32,
                             Datapath(clock_mhz=450, ideal_macs_per_cycle=32))
    yang = platform_hierarchy(platforms.load_platform("yang_256mac"))
    assert yang == Hierarchy((Level("DRAM", None, 16, 320.0, 16.0),
                              Level("local", 36864, 256, None)), "yang_256mac", 1.0,
                             Datapath(clock_mhz=500, ideal_macs_per_cycle=256))
    # the size-derived local energy is the one perf prices (table 3's 64 KB row, 256 bits)
    plat = platforms.load_platform("yang_256mac")
    from workbench.hierarchy.codesign import table3_energy_pj

    assert yang.levels[1].access_pj("I", table3_energy_pj) == pytest.approx(
        plat.effective_local_access_pj) == pytest.approx(5.79 * 256 / 16)
    shave = platform_hierarchy(platforms.load_platform("shave"))
    assert [lvl.capacity_bytes for lvl in shave.levels] == [None, 131072]
    assert shave.mac_energy_pj == 0.0
    assert shave.datapath == Datapath(clock_mhz=600, ideal_macs_per_cycle=8)


def test_shipped_preset_with_levels() -> None:
    plat = platforms.load_platform("seed001_3level")
    assert plat.has_levels
    # the fields the levels define, derived (the file leaves them out)
    assert (plat.local_mem_bytes, plat.local_access_bytes, plat.size_aware_energy) == (
        262144, 8, True)
    assert (plat.ext_access_bytes, plat.ext_access_pj, plat.bus_elems_per_cycle,
            plat.clock_mhz) == (2, 320, 16, 500)
    hier = platform_hierarchy(plat)
    assert hier == Hierarchy((Level("DRAM", None, 16, 320.0, 16.0),
                              Level("SRAM", 262144, 64, None, 64.0),
                              Level("RF", 1024, 64, None, 288.0)), "seed001_3level", 1.0,
                             Datapath({"C": 16, "M": 16}, 500.0))


def test_a_platform_declaring_the_implied_levels_is_the_same_platform(tmp_path: Path) -> None:
    """idsp written with `levels:` (its memory fields left out) loads to the same fields and
    the single-level engine plans it identically."""
    idsp = platforms.load_platform("idsp")
    doc = {key: getattr(idsp, key) for key in platforms.field_names()}
    for key in ("local_mem_bytes", "local_access_pj", "local_access_bytes", "ext_access_pj",
                "ext_access_bytes", "bus_elems_per_cycle", "size_aware_energy"):
        del doc[key]
    doc["levels"] = [{"name": "DRAM", "capacity": None, "access_bits": 64, "energy_pj": 2600,
                      "bandwidth": 32},
                     {"name": "local", "capacity": 131072, "access_bits": 512,
                      "energy_pj": 66.6}]
    mine = platforms.load_platform(_write(tmp_path, yaml.safe_dump(doc)))
    for field in platforms.field_names():
        assert getattr(mine, field) == getattr(idsp, field), field
    assert platform_hierarchy(mine).levels == platform_hierarchy(idsp).levels
    net = layers.load_network("lenet5")
    pd.testing.assert_frame_equal(network_plan(net, mine), network_plan(net, idsp))


@pytest.mark.parametrize("field, value, rule", [
    ("local_mem_bytes", 1000, "local_mem_bytes: must equal levels[1].capacity (65536) or be "
                              "left out, got 1000"),
    ("ext_access_pj", 100, "ext_access_pj: must equal levels[0].energy_pj (320)"),
    ("bus_elems_per_cycle", 8, "bus_elems_per_cycle: must equal levels[0].bandwidth (16)"),
    ("size_aware_energy", False, "size_aware_energy: must equal levels[1].energy_pj (True)"),
    ("local_access_bytes", 4, "local_access_bytes: must equal levels[1].access_bits / 8 (8)"),
])
def test_fields_contradicting_the_levels_are_refused(tmp_path: Path, field, value,
                                                     rule) -> None:
    with pytest.raises(FileFormatError) as info:
        platforms.load_platform(_write(tmp_path, LEVELS_3 + f"{field}: {value}\n"))
    assert rule in str(info.value) and "\n" not in str(info.value)


def test_core_energy_follows_the_declared_mac_energy(tmp_path: Path) -> None:
    """mac_energy_pj × macs_per_cycle is the engine's core_pj_per_cycle: derived when left
    out, a contradicting value refused in one line."""
    text = LEVELS_3.replace("mac_energy_pj: 1.0", "mac_energy_pj: 0.5")
    plat = platforms.load_platform(_write(tmp_path, text))
    assert plat.core_pj_per_cycle == 0.5 * plat.macs_per_cycle and plat.mac_pj == 0.5
    with pytest.raises(FileFormatError) as info:
        platforms.load_platform(_write(tmp_path, text + "core_pj_per_cycle: 60\n"))
    assert "core_pj_per_cycle: must equal the MAC energy × macs_per_cycle" in str(info.value)
    assert "\n" not in str(info.value)


def test_fields_equal_to_the_levels_are_accepted(tmp_path: Path) -> None:
    text = LEVELS_3 + ("local_mem_bytes: 65536\next_access_pj: 320\next_access_bytes: 2\n"
                       "bus_elems_per_cycle: 16\nsize_aware_energy: true\n")
    plat = platforms.load_platform(_write(tmp_path, text))
    assert plat.local_mem_bytes == 65536 and plat.mac_pj == 1.0


def test_datapath_clock_and_platform_clock_must_agree(tmp_path: Path) -> None:
    text = LEVELS_3.replace("{unroll: {C: 16, M: 16}}", "{unroll: {C: 16, M: 16}, "
                                                        "clock_mhz: 400}")
    with pytest.raises(FileFormatError, match=r"clock_mhz: must equal datapath\.clock_mhz "
                                              r"\(400\) or be left out, got 500"):
        platforms.load_platform(_write(tmp_path, text))


@pytest.mark.parametrize("old, new, rule", [
    ("capacity: 1024, access_bits: 64", "capacity: 131072, access_bits: 64",
     "levels[2].capacity: capacities must not increase inwards"),
    ("access_bits: 16, energy_pj: 320", "access_bits: 2.5, energy_pj: 320",
     "levels[0].access_bits: must be a whole number"),
    ("access_bits: 16, energy_pj: 320", "access_bits: 12, energy_pj: 320",
     "levels[0].access_bits: must be a whole number of bytes on a platform"),
    ("energy_pj: 320", "energy_pj: null", "levels[0].energy_pj: the external memory needs "
                                          "a number"),
    ("capacity: 65536", "capacity: {I: 1024, W: 2048}", "levels[1].capacity: array(s) O in "
     "no key: each of I, W, O goes in exactly one"),
    ("capacity: 65536", "capacity: {I+O: 1024, O+W: 2048}", "levels[1].capacity: array O is "
     "in two keys ('I+O', 'O+W')"),
    ("capacity: 65536", "capacity: {I+O: 1024.5, W: 2048}", "levels[1].capacity: bank 'I+O' "
     "must be a whole number of bytes"),
    ("capacity: 65536", "capacity: -4", "levels[1].capacity: must be bytes"),
    ("name: RF", "name: SRAM", "levels[2].name: level names must be unique"),
    ("energy_pj: 0.5}", "energy_pj: 0.5, speed: 3}", "levels[2].speed: unknown key"),
    ("{unroll: {C: 16, M: 16}}", "{unroll: {Q: 16}}", "datapath.unroll: must map dimensions "
     "of X, Y, C, M, N to lanes (whole numbers 1..65,536), got {'Q': 16}"),
    ("{unroll: {C: 16, M: 16}}", "{unroll: {C: 64, M: 64}}", "macs_per_cycle: must equal the "
     "product of datapath.unroll (4096) or be left out, got 256"),
    ("capacity: 1024,", "capacity: null,", "levels[2].capacity: only the outermost level"),
    ("{name: DRAM, capacity: null,", "{name: DRAM, capacity: 1048576,",
     "levels[0].capacity: the outermost level (the backing store, e.g. DRAM) holds every "
     "array whole, so it must be unbounded (null), got 1048576 B"),
])
def test_bad_levels_are_one_line_errors_naming_the_field(tmp_path: Path, old, new,
                                                         rule) -> None:
    assert old in LEVELS_3
    path = _write(tmp_path, LEVELS_3.replace(old, new, 1))
    with pytest.raises(FileFormatError) as info:
        platforms.load_platform(path)
    text = str(info.value)
    assert text.startswith(f"platform file {str(path)!r}: ") and rule in text, text
    assert "\n" not in text


def test_parts_and_flat_fields_do_not_mix(tmp_path: Path) -> None:
    doc = (ROOT / "data" / "platforms" / "idsp.yaml").read_text() + "mac_energy_pj: 2\n"
    with pytest.raises(FileFormatError, match=r"mixes parts \(cluster, dma, energy, memory\) "
                                              r"with the old flat fields \(mac_energy_pj\)"):
        platforms.load_platform(_write(tmp_path, doc))


def test_overrides_resize_the_local_level(tmp_path: Path) -> None:
    plat = platforms.load_platform(_write(tmp_path, LEVELS_3), local_mem_bytes=4096,
                                   ext_access_pj=100.0, clock_mhz=250)
    hier = platform_hierarchy(plat)
    assert [lvl.capacity_bytes for lvl in hier.levels] == [None, 4096, 1024]
    assert hier.levels[0].energy_pj == 100.0 and hier.datapath.clock_mhz == 250
    with pytest.raises(WorkbenchError, match=r"levels\[2\]\.capacity: capacities must not "
                                             r"increase inwards"):
        plat.replace(local_mem_bytes=512)
    split = LEVELS_3.replace("capacity: 65536", "capacity: {I: 2048, W: 32768, O: 2048}")
    plat = platforms.load_platform(_write(tmp_path, split), local_mem_bytes=18432)
    assert platform_hierarchy(plat).levels[1].capacity_bytes == SplitCapacity(1024, 16384,
                                                                              1024)
    assert platform_hierarchy(plat.replace(local_mem_bytes=36864)).levels[1].capacity_bytes \
        == SplitCapacity(2048, 32768, 2048)
    # banks keep their proportions too, and any total is theirs to the byte
    banked = LEVELS_3.replace("capacity: 65536", "capacity: {I+O: 16384, W: 49152}")
    plat = platforms.load_platform(_write(tmp_path, banked), local_mem_bytes=20001)
    assert plat.local_mem_bytes == 20001
    assert platform_hierarchy(plat).levels[1].capacity_bytes == BankedCapacity(
        (("IO", 5000), ("W", 15001)))  # 5000.25 and 15000.75: the byte left to W
    assert platform_hierarchy(plat.replace(local_mem_bytes=1027)).levels[1].capacity_bytes \
        == BankedCapacity((("IO", 257), ("W", 770)))  # 256.75 and 770.25


def test_with_levels_takes_the_memory_fields_from_the_hierarchy() -> None:
    idsp = platforms.load_platform("idsp")
    doc, path = platforms.read_hierarchy("seed001_two_level")
    plat = platforms.with_levels(idsp, doc, path)
    assert (plat.local_mem_bytes, plat.local_access_bytes, plat.size_aware_energy,
            plat.ext_access_pj, plat.ext_access_bytes) == (262144, 8, True, 320, 2)
    assert (plat.clock_mhz, plat.macs_per_cycle, plat.bus_elems_per_cycle) == (450, 32, 32)
    hier = platform_hierarchy(plat)  # no datapath in the file: idsp's array, not modelled
    assert hier == Hierarchy((Level("DRAM", None, 16, 320.0, 32.0),
                              Level("SRAM", 262144, 64, None), Level("RF", 1024, 64, None)),
                             "seed001_two_level", 1.0,
                             Datapath(clock_mhz=450, ideal_macs_per_cycle=32))
    # its 1 pJ per MAC is the engine's too: 32 MACs per cycle cost 32 pJ (idsp's own: 60)
    assert (plat.mac_pj, plat.core_pj_per_cycle) == (1.0, 32.0)
    diannao = platforms.with_levels(idsp, *platforms.read_hierarchy("seed001_diannao"))
    assert (diannao.macs_per_cycle, diannao.clock_mhz) == (256, 500)
    assert (diannao.mac_pj, diannao.core_pj_per_cycle) == (1.0, 256.0)
    with pytest.raises(FileFormatError, match=r"^h\.yaml: levels\[1\]\.access_bits: must be a "
                                              r"whole number"):
        platforms.with_levels(idsp, {"levels": [doc["levels"][0], {**doc["levels"][1],
                                                                   "access_bits": 0}]},
                              "h.yaml")


def test_platforms_with_levels_are_plain_hashable_picklable_data() -> None:
    plat = platforms.load_platform("seed001_3level")
    again = pickle.loads(pickle.dumps(plat))
    assert again == plat and hash(again) == hash(plat) and again.has_levels
    assert plat.replace(local_mem_bytes=65536) != plat
    assert platforms.load_platform("seed001_3level", local_mem_bytes=262144) == plat


def test_an_override_that_breaks_the_levels_is_named() -> None:
    """--memory-kb 0.5 on a platform whose register file is 1 KB: the error names the override
    (the user typed --memory-kb, not a level's capacity) and the rule it broke, in one line."""
    with pytest.raises(WorkbenchError) as info:
        platforms.load_platform("seed001_3level", local_mem_bytes=512)
    text = str(info.value)
    assert text.startswith("platform 'seed001_3level' with local_mem_bytes=512 (an override, "
                           "e.g. --memory-kb"), text
    assert "levels[2].capacity: capacities must not increase inwards" in text
    assert "\n" not in text
