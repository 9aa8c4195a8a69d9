"""Platform presets, overrides and the access-energy table."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import platforms
from workbench.errors import FileFormatError, UnknownNameError, WorkbenchError


def test_idsp_is_seed000_table_7_2() -> None:
    p = platforms.load_platform("idsp")
    assert (p.clock_mhz, p.bus_elems_per_cycle, p.macs_per_cycle, p.elem_bytes,
            p.dma_setup_cycles, p.local_mem_bytes, p.register_file_bytes) == (
        450, 32, 32, 2, 150, 128 * 1024, 4 * 1024)
    assert p.peak_gops == pytest.approx(28.8)  # table 7.1
    assert (p.core_pj_per_cycle, p.local_access_pj, p.ext_access_pj) == (60, 66.6, 2600)


def test_other_presets() -> None:
    nve = platforms.load_platform("nve")
    assert (nve.simd_lanes, nve.clock_mhz, nve.in_bits, nve.w_bits, nve.acc_bits) == (
        16, 100, 8, 16, 32)
    shave = platforms.load_platform("shave")
    assert (shave.cores, shave.clock_mhz, shave.simd_lanes, shave.local_mem_bytes) == (
        12, 600, 8, 128 * 1024)
    hwc = platforms.load_platform("hwc")
    assert (hwc.macs_per_cycle, hwc.local_mem_bytes) == (16, 1024)
    assert set(platforms.list_platforms()) >= {"idsp", "nve", "shave", "hwc"}


def test_overrides_and_errors(tmp_path: Path) -> None:
    p = platforms.load_platform("idsp", local_mem_bytes=64 * 1024, acc_bits=24)
    assert (p.local_mem_bytes, p.acc_bits, p.clock_mhz) == (65536, 24, 450)
    with pytest.raises(UnknownNameError, match="unknown platform 'tpu'; presets: hwc, idsp"):
        platforms.load_platform("tpu")
    with pytest.raises(WorkbenchError, match="unknown field"):
        platforms.load_platform("idsp", lanes=3)
    with pytest.raises(WorkbenchError, match="local_mem_bytes: must be bytes"):
        platforms.load_platform("idsp", local_mem_bytes=0)
    with pytest.raises(WorkbenchError, match="overflow: must be one of"):
        platforms.load_platform("idsp", overflow="clip")
    bad = tmp_path / "p.yaml"
    bad.write_text("name: x\nclock_mhz: [1,\n")
    with pytest.raises(FileFormatError, match="malformed YAML at line"):
        platforms.load_platform(bad)
    bad.write_text("name: x\nclock_mhz: 100\n")
    with pytest.raises(FileFormatError, match="memory: is required"):
        platforms.load_platform(bad)
    bad.write_text("name: x\nclock_mhz: 100\ncores: 2\n")  # the old flat spelling
    with pytest.raises(FileFormatError, match="missing platform field"):
        platforms.load_platform(bad)


def test_static_power_is_a_cluster_field_with_a_physical_range(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "data" / "platforms" / "shave.yaml").read_text()
    mine = tmp_path / "mine.yaml"
    mine.write_text(text.replace("  cores: 12\n", "  cores: 12\n  static_pj_per_cycle: 40\n"))
    assert platforms.load_platform(mine).static_pj_per_cycle == 40
    for bad in ("1e308", "-1", "true"):
        mine.write_text(text.replace("  cores: 12\n",
                                     f"  cores: 12\n  static_pj_per_cycle: {bad}\n"))
        with pytest.raises(FileFormatError) as info:
            platforms.load_platform(mine)
        assert "cluster.static_pj_per_cycle: must be a number >= 0 and <= 1e+06 (pJ per cycle " \
               "per core)" in str(info.value) and "\n" not in str(info.value)


def test_yang_memory_energy_table() -> None:
    # seed 001 table 3 entries
    assert platforms.memory_energy_pj_per_16b(1024, 64) == 1.20
    assert platforms.memory_energy_pj_per_16b(100 * 1024, 256) == 8.46  # 128 KB row
    assert platforms.memory_energy_pj_per_16b(2**30, 512) == 320
    with pytest.raises(WorkbenchError, match="not tabulated"):
        platforms.memory_energy_pj_per_16b(4 * 2**20, 32)


def test_non_finite_and_fractional_fields_are_refused() -> None:
    for field, value, rule in [("clock_mhz", float("nan"), "must be a number >= 0.001"),
                               ("macs_per_cycle", float("inf"), "must be a number"),
                               ("simd_lanes", 2.5, "must be a whole number"),
                               ("elem_bytes", 1.5, "must be a whole number")]:
        with pytest.raises(WorkbenchError, match=f"{field}: {rule}"):
            platforms.load_platform("idsp", **{field: value})
    assert platforms.load_platform("idsp", elem_bytes=2.0).elem_bytes == 2
    assert isinstance(platforms.load_platform("idsp", cores=4.0).cores, int)
