"""The report's figure sections as HTML, each one line of the report notebook: on a platform
with memory levels (`explore.composed`) the plan's accesses and energy by level replace the
single-level tile studies (every schedule's Pareto tiles, the local-memory sweep), which are
seed 000 answers about one local memory and would be a second model beside the plan."""

from __future__ import annotations

import html

from workbench.explore import composed
from workbench.report.summary import ReportData

# bokeh and the figures are imported inside the functions: the text commands import
# `workbench.report` and must not load bokeh (tests/test_cli.py)


def _note(text: str) -> str:
    return f"<p><i>{html.escape(text)}</i></p>"


def solutions_html(data: ReportData) -> str:
    """Every schedule's Pareto tiles per layer (single-level platforms only)."""
    if composed.applies(data.platform):
        return _note(f"{data.platform.name} has memory levels: each conv/fc layer is blocked "
                     "over them (the table above); the single-level schedules do not apply.")
    from workbench import viz

    return viz.embed_html(viz.interactive_roofline(data.solutions, data.platform))


def sweep_html(data: ReportData) -> str:
    """Each layer's best solution per schedule against the local memory (single-level)."""
    if composed.applies(data.platform):
        return _note("The local-memory sweep is a single-level study; on a platform with "
                     "levels, edit the levels (notebook 11, workbench sweep) instead.")
    from workbench import viz

    return viz.embed_html(viz.sweep_grid(data.sweep))


def levels_html(data: ReportData) -> str:
    """Each level's accesses and (with energy figures) energy per conv/fc layer (platforms
    with levels)."""
    if not composed.applies(data.platform):
        return _note(f"{data.platform.name} has one local memory: the table above is the "
                     "whole story (no levels to break the traffic down by).")
    from bokeh.layouts import row
    from bokeh.models import ColumnDataSource

    from workbench import viz
    from workbench.viz import plan_plots

    names = [lvl.name for lvl in data.platform.memory.levels]
    quantities = ["accesses"] + (["energy"] if viz.units.has_energy(data.platform) else [])
    figures = [plan_plots.level_figure(
        ColumnDataSource(plan_plots.level_data(data.per_layer, names, quantity)), names,
        quantity, width=600) for quantity in quantities]
    return viz.embed_html(row(*figures))
