"""Memory-hierarchy plots (seed 001 figs. 5–8): energy per layer stacked by memory level and
MAC, and the energy–capacity front of co-designed hierarchies. Data shaping (`*_data`) is
separate from drawing; the numbers come from `workbench.hierarchy.codesign`."""

from __future__ import annotations

from collections.abc import Sequence

from bokeh.models import ColumnDataSource
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from workbench.viz.common import TOOLS, hover

MAX_LEVELS = 5                  # DRAM + up to 4 on-chip levels
STACK = tuple(f"level{i}" for i in range(MAX_LEVELS)) + ("mac",)
COLORS = dict(zip(STACK, Category10_10, strict=False))


def level_energy_data(rows: Sequence[dict], level_names: Sequence[str]) -> dict[str, list]:
    """Columns layer, level0 … level{MAX_LEVELS−1} (the hierarchy's levels DRAM first, 0 past
    its depth) and mac, in pJ per MAC, from `Codesigner.traffic_rows`."""
    if len(level_names) > MAX_LEVELS:
        raise ValueError(f"at most {MAX_LEVELS} levels are drawn, got {len(level_names)}")
    layer_names = list(dict.fromkeys(r["layer"] for r in rows))
    data: dict[str, list] = {"layer": layer_names}
    column = {name: f"level{i}" for i, name in enumerate(level_names)} | {"MAC": "mac"}
    for key in STACK:
        data[key] = [0.0] * len(layer_names)
    for r in rows:
        data[column[r["level"]]][layer_names.index(r["layer"])] = float(r["pj_per_mac"])
    return data


def energy_bars(source: ColumnDataSource, level_names: Sequence[str],
                title: str = "energy per MAC by memory level") -> figure:
    """Stacked bars per layer (pJ/MAC): one segment per level (DRAM first) and the MAC."""
    fig = figure(x_range=list(source.data["layer"]), title=title, width=620, height=360,
                 tools=TOOLS, y_axis_label="pJ per MAC")
    bars = fig.vbar_stack(list(STACK), x="layer", width=0.7, source=source,
                          color=[COLORS[k] for k in STACK], legend_label=list(STACK))
    for bar, key in zip(bars, STACK, strict=True):
        bar.name = key  # the hover's @$name reads this column
    fig.add_tools(hover(bars, [("layer", "@layer"), ("pJ/MAC", "@$name{0,0.00}")]))
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    relabel_levels(fig, level_names)
    return fig


def relabel_levels(fig: figure, level_names: Sequence[str]) -> None:
    """Legend labels and visibility of `energy_bars` for a hierarchy's level names."""
    labels = list(level_names) + [""] * (MAX_LEVELS - len(level_names)) + ["MAC"]
    for item, label in zip(fig.legend[0].items, labels, strict=True):
        item.label = {"value": label or "-"}
        item.visible = bool(label)
        for renderer in item.renderers:
            renderer.visible = bool(label)


def front_data(designs: Sequence, front: Sequence, best, macs: int) -> tuple[dict, dict, dict]:
    """Three column sets (capacity_kb, pj_per_mac, name): every design, the Pareto front and
    the best design within the budget (empty when none)."""
    def cols(items) -> dict[str, list]:
        return {"capacity_kb": [d.capacity_bytes / 1024 for d in items],
                "pj_per_mac": [d.energy_pj / macs for d in items],
                "name": [d.hierarchy.name for d in items]}
    return cols(designs), cols(front), cols([best] if best is not None else [])


def front_plot(every: ColumnDataSource, front: ColumnDataSource, best: ColumnDataSource,
               title: str = "co-designed hierarchies: energy vs on-chip capacity") -> figure:
    """Every design (grey), the Pareto front (line) and the best within the budget (red)."""
    fig = figure(title=title, x_axis_type="log", width=620, height=360, tools=TOOLS,
                 x_axis_label="on-chip memory (KB)", y_axis_label="pJ per MAC")
    dots = fig.scatter("capacity_kb", "pj_per_mac", source=every, color="#999999", size=6,
                       legend_label="grid")
    fig.line("capacity_kb", "pj_per_mac", source=front, color="#1f77b4", line_width=2,
             legend_label="Pareto front")
    star = fig.scatter("capacity_kb", "pj_per_mac", source=best, color="#d62728", size=14,
                       marker="star", legend_label="best within budget")
    fig.add_tools(hover([dots, star], [("hierarchy", "@name"),
                                       ("on chip", "@capacity_kb{0,0.[0]} KB"),
                                       ("pJ/MAC", "@pj_per_mac{0,0.00}")]))
    fig.legend.location = "top_right"
    return fig
