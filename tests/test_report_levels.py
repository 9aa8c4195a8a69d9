"""The report on a platform with memory levels shows one plan: the composed model's table and
its traffic and energy by level, and no single-level tile studies beside it."""

from __future__ import annotations

import pytest

from workbench import report
from workbench.report import sections


@pytest.fixture(scope="module")
def levels() -> report.ReportData:
    return report.build("lenet5", "seed001_3level", report.ReportSettings(batch=1))


def test_a_platform_with_levels_gets_its_levels_and_no_seed000_studies(levels) -> None:
    assert levels.solutions.empty and levels.sweep.empty
    assert (levels.per_layer.loc[levels.per_layer["kind"].isin(["conv", "fc"]), "schedule"]
            == "levels").all()
    html = sections.levels_html(levels)
    assert "accesses (M elements)" in html and "energy (" in html
    assert "single-level" in sections.sweep_html(levels)
    assert "does not apply" not in sections.solutions_html(levels)  # says why, in words
    assert "seed001_3level has memory levels" in sections.solutions_html(levels)
    assert "levels DRAM | SRAM | RF each" in report.headline(levels)


def test_a_single_level_platform_keeps_its_tile_studies() -> None:
    data = report.build("lenet5", "idsp", report.ReportSettings(batch=1,
                                                                sweep_memory_kb=(4, 64)))
    assert not data.solutions.empty and not data.sweep.empty
    assert "one local memory" in sections.levels_html(data)
    assert "<div" in sections.solutions_html(data) and "<div" in sections.sweep_html(data)
