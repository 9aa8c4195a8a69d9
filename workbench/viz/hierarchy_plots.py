"""Memory-hierarchy plots (seed 001 figs. 5–8): energy per layer stacked by memory level and
MAC, and the energy–capacity (or energy–area) front of co-designed hierarchies. Data shaping
(`*_data`) is separate from drawing; the numbers come from `workbench.hierarchy.codesign`."""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from workbench.hierarchy import BankedCapacity, Level, SplitCapacity
from workbench.hierarchy.codesign import Design, capacity_text
from workbench.viz.common import TOOLS, hover
from workbench.viz.units import fmt_bytes, fmt_count, fmt_energy, fmt_number, fmt_value, human_axes

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
    """Stacked bars per layer (pJ/MAC): one segment per level (DRAM first) and the MAC. The x
    range holds the source's layers when built: a source filled later needs `show_layers`."""
    fig = figure(x_range=FactorRange(factors=list(source.data["layer"])), title=title,
                 width=620, height=360,
                 tools=TOOLS, y_axis_label="pJ per MAC")
    bars = fig.vbar_stack(list(STACK), x="layer", width=0.7, source=source,
                          color=[COLORS[k] for k in STACK], legend_label=list(STACK))
    for bar, key in zip(bars, STACK, strict=True):
        bar.name = key  # the hover's @$name reads this column
    fig.add_tools(hover(bars, [("layer", "@layer"), ("pJ/MAC", "@$name{0,0.00}")]))
    fig.legend.click_policy = "hide"
    fig.add_layout(fig.legend[0], "right")  # beside the bars, never over the tallest
    relabel_levels(fig, level_names)
    return fig


def show_layers(fig: figure, data: dict[str, list]) -> None:
    """Point `energy_bars`' x range at the layers of `level_energy_data` columns (a bar whose
    layer is not a factor is not drawn)."""
    fig.x_range.factors = list(data["layer"])


def relabel_levels(fig: figure, level_names: Sequence[str]) -> None:
    """Legend labels and visibility of `energy_bars` for a hierarchy's level names."""
    labels = list(level_names) + [""] * (MAX_LEVELS - len(level_names)) + ["MAC"]
    for item, label in zip(fig.legend[0].items, labels, strict=True):
        item.label = {"value": label or "-"}
        item.visible = bool(label)
        for renderer in item.renderers:
            renderer.visible = bool(label)


AXIS_LABELS = {"capacity": "on-chip memory (KB)", "area": "on-chip memory area (mm²)"}


def front_data(designs: Sequence, front: Sequence, best, macs: int,
               axis: str = "capacity") -> tuple[dict, dict, dict]:
    """Three column sets (capacity_kb, area_mm2 (nan without areas), cost: the axis's column,
    pj_per_mac, name): every design, the Pareto front and the best design within the budget
    (empty when none)."""
    if axis not in AXIS_LABELS:
        raise ValueError(f"axis must be one of {list(AXIS_LABELS)}, got {axis!r}")

    def cols(items) -> dict[str, list]:
        kb = [d.capacity_bytes / 1024 for d in items]
        area = [float("nan") if d.area_mm2 is None else d.area_mm2 for d in items]
        return {"capacity_kb": kb, "area_mm2": area,
                "cost": kb if axis == "capacity" else area,
                "pj_per_mac": [d.energy_pj / macs for d in items],
                "name": [d.hierarchy.name for d in items]}
    return cols(designs), cols(front), cols([best] if best is not None else [])


def relabel_front(fig: figure, axis: str) -> None:
    """The front plot's x-axis label and title for a cost axis ('capacity' or 'area')."""
    fig.xaxis.axis_label = AXIS_LABELS[axis]
    fig.title.text = f"co-designed hierarchies: energy vs {AXIS_LABELS[axis].split(' (')[0]}"


def front_plot(every: ColumnDataSource, front: ColumnDataSource, best: ColumnDataSource,
               title: str = "co-designed hierarchies: energy vs on-chip capacity") -> figure:
    """Every design (grey), the Pareto front (line) and the best within the budget (red)."""
    fig = figure(title=title, x_axis_type="log", width=760, height=360, tools=TOOLS,
                 x_axis_label="on-chip memory (KB)", y_axis_label="pJ per MAC")
    dots = fig.scatter("cost", "pj_per_mac", source=every, color="#999999", size=6,
                       legend_label="grid")
    fig.line("cost", "pj_per_mac", source=front, color="#1f77b4", line_width=2,
             legend_label="Pareto front")
    star = fig.scatter("cost", "pj_per_mac", source=best, color="#d62728", size=14,
                       marker="star", legend_label="best within budget")
    fig.add_tools(hover([dots, star], [("hierarchy", "@name"),
                                       ("on chip", "@capacity_kb{0,0.[0]} KB"),
                                       ("area", "@area_mm2{0,0.000} mm²"),
                                       ("pJ/MAC", "@pj_per_mac{0,0.00}")]))
    fig.add_layout(fig.legend[0], "right")  # beside the plot, never over a design
    return human_axes(fig)  # 1-2-5 ticks, separators, no exponents


TRAFFIC_NOTE = "accesses in elements (reads + writes) per layer and level"


def traffic_text(rows: list[dict]) -> pd.DataFrame:
    """The per-layer, per-level table as read: counts with separators, energies in the unit
    that reads best, pJ per MAC without exponents (the columns of `rows`, in their order)."""
    table = pd.DataFrame(rows).rename(columns={"pj_per_mac": "pJ/MAC"})
    table.insert(table.columns.get_loc("energy_pj"), "energy",
                 table.pop("energy_pj").map(fmt_energy))  # in nJ, µJ, mJ as it reads best
    for col in table.columns:
        if pd.api.types.is_integer_dtype(table[col]):
            table[col] = table[col].map(fmt_count)
        elif pd.api.types.is_float_dtype(table[col]):
            table[col] = table[col].map(lambda v: fmt_number(v, 4))
    return table


def traffic_frames(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`traffic_text` of the rows and the rows' numbers, column for column."""
    return traffic_text(rows), pd.DataFrame(rows)


def describe_design(design: Design) -> str:
    """'L1 16 KB | L2 1 KB': a design's on-chip levels, outermost first (`level_text`)."""
    return " | ".join(f"{lvl.name} {level_text(lvl)}" for lvl in design.hierarchy.on_chip)


def level_text(level: Level) -> str:
    """`capacity_text`, a split or banked level's total after it when its parts are not whole
    KB ('910/14,564/910 B of 16 KB')."""
    text = capacity_text(level.capacity_bytes)
    if isinstance(level.capacity_bytes, SplitCapacity | BankedCapacity) and \
            not text.split(" (")[0].endswith(" KB"):
        text += f" of {fmt_bytes(level.total_bytes)}"
    return text


def summary_html(network: str, n_layers: int, macs: int, given: Design, best: Design | None,
                 designs: Sequence[Design] | None, budget: float, axis: str,
                 grid_bytes: Sequence[int], grid_note: str | None = None) -> str:
    """The hierarchy app's summary: the edited hierarchy's pJ/MAC and memory:compute ratio,
    then the best grid design within the budget (bytes or mm² on `axis`), or why there is
    none (`grid_note` when no grid is priced), and whether the edited one beats it."""
    lines = [f"<b>{html.escape(network)}</b>, {n_layers} layers: edited hierarchy "
             f"({html.escape(describe_design(given))}): {given.energy_pj / macs:.2f} pJ/MAC, "
             f"memory:compute {given.memory_to_compute:.2f}×"]
    within = fmt_bytes(budget) if axis == "capacity" else f"{fmt_number(budget, strip=True)} mm²"
    if designs is None:
        lines.append(grid_note or "co-design: no grid priced")
    elif best is None:
        least = min((d.cost(axis) for d in designs), default=None)
        lines.append(f"no grid hierarchy within {within} fits every layer" + (
            "" if least is None or least <= budget else
            f": the smallest takes {fmt_bytes(least)}" if axis == "capacity"
            else f": the smallest takes {fmt_number(least, strip=True)} mm²"))
    else:
        sizes = ", ".join(fmt_value(n / 1024) for n in grid_bytes)
        lines.append(f"co-designed within {within} (best of the grid: level sizes {sizes} "
                     f"KB): {html.escape(describe_design(best))}: {best.energy_pj / macs:.2f} "
                     f"pJ/MAC, memory:compute {best.memory_to_compute:.2f}×, "
                     f"{best.capacity_bytes / 1024:g} KB, {best.area_mm2:.3g} mm²")
        if given.cost(axis) <= budget and given.energy_pj < best.energy_pj:
            lines.append(f"the edited hierarchy is within {within} too and "
                         f"{1 - given.energy_pj / best.energy_pj:.1%} lower: its sizes are "
                         f"off the grid (<code>grid_kb</code> sets it)")
    return "<br>".join(lines)
