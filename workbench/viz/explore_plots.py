"""Tiling-exploration figures: roofline/Pareto, buffer-size sweeps, cycle breakdowns."""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, DataRange1d
from bokeh.plotting import figure
from bokeh.transform import factor_cmap

from workbench.platforms import Platform
from workbench.tiling import SCHEDULES
from workbench.viz.common import (
    PART_COLORS,
    SCHEDULE_COLORS,
    TOOLS,
    apply_labels,
    hover,
    stacked_styles,
)
from workbench.viz.units import (
    TILE_COLUMNS,
    TILE_HEADER,
    fmt_bytes,
    fmt_tile,
    human_axes,
    number_tooltips,
)

LOG_SPAN = 20.0  # data spanning at least this ratio gets a log axis

ROOFLINE_COLUMNS = ("layer", "schedule", "tile", "footprint_kb", "cycles", "throughput_gops",
                    "ctc", "ext_accesses", "energy_uj")


def roofline_data(df: pd.DataFrame) -> dict[str, list]:
    """The columns the roofline draws, from an exploration DataFrame."""
    if df.empty:
        return {k: [] for k in ROOFLINE_COLUMNS}
    dims = zip(*(df[d].tolist() for d in TILE_COLUMNS), strict=True)
    return {"layer": df["layer"].tolist(), "schedule": df["schedule"].tolist(),
            "tile": [fmt_tile(t) for t in dims],
            "footprint_kb": (df["footprint_bytes"] / 1024).tolist(),
            "cycles": df["cycles"].tolist(),
            "throughput_gops": df["throughput_gops"].tolist(), "ctc": df["ctc"].tolist(),
            "ext_accesses": df["ext_accesses"].tolist(),
            "energy_uj": (df["energy_pj"] / 1e6).tolist()}


def roofs(platform: Platform, ctc: list[float] | None = None) -> dict[str, list]:
    """Compute roof (peak GOps/s) and bandwidth roof (bus bytes/s × CTC) over a CTC range
    covering the given CTC values and the ridge point, with a margin of 4× each side; `peak`
    repeats the roof's height (a y range may span it)."""
    ridge = platform.peak_gops * 1e9 / platform.bus_bytes_per_s
    values = [ridge, *(ctc or [])]
    x = np.geomspace(min(values) / 4, max(values) * 4, 64)
    return {"x": x.tolist(), "y": np.minimum(platform.peak_gops,
                                             platform.bus_bytes_per_s * x / 1e9).tolist(),
            "peak": [platform.peak_gops] * len(x)}


def axis_type(values) -> str:
    """'log' when the positive values span LOG_SPAN× or more (or there are none yet), else
    'linear': a narrow cluster keeps its spread on screen."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return "log" if len(v) == 0 or v.max() >= LOG_SPAN * v.min() else "linear"


def roof_in_view(throughputs, peak: float, axis: str = "linear") -> bool:
    """Whether a roofline zoomed to these points (GOps/s) also spans the roof at `peak`: when
    that at most doubles the span shown (on a log axis, in ratios), so points just under the
    roof show it (conv2 at 25-28.1 GOps/s under idsp's 28.8 read as far below it) and points
    far under it keep their spread. A span under 10% of the top (1.1× on a log axis) counts as
    that much."""
    v = np.asarray([x for x in throughputs if x is not None], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return True
    top, bottom = float(v.max()), float(v.min())
    if axis == "log":
        return peak / top <= max(top / bottom, 1.1)
    return peak - top <= max(top - bottom, 0.1 * top)


def data_ranges(renderers: list) -> tuple[DataRange1d, DataRange1d]:
    """x and y ranges that follow only the given renderers' data (not the roofs), padded 20%:
    the view is zoomed to the populated region and follows source updates."""
    return (DataRange1d(renderers=list(renderers), range_padding=0.2),
            DataRange1d(renderers=list(renderers), range_padding=0.2))


def roofline(points: ColumnDataSource, platform: Platform, front: ColumnDataSource | None = None,
             title: str = "Throughput vs computation-to-communication ratio",
             axes: tuple[str, str] | None = None) -> figure:
    """Seed 000 fig. 5.12/7.8: x = CTC (ops/byte), y = GOps/s, roofs, points by schedule,
    Pareto points outlined; hover shows one point's tile, schedule, footprint and cycles.
    Axes are log or linear from the data's span (`axes` forces them); the view is zoomed to
    the points, and spans the roof when `roof_in_view` (the renderer named "peak" is then
    visible; set it again on new points); the legend sits beside the plot, never over a
    point."""
    x_type, y_type = axes or (axis_type(points.data["ctc"]),
                              axis_type(points.data["throughput_gops"]))
    p = figure(title=title, x_axis_type=x_type, y_axis_type=y_type, tools=TOOLS + ",tap",
               x_axis_label="CTC (ops/byte)", y_axis_label="throughput (GOps/s)",
               width=640, height=400, name="roofline")
    roof_source = ColumnDataSource(roofs(platform, list(points.data["ctc"])))
    p.line("x", "y", source=roof_source, color="black", line_width=2,
           legend_label=f"{platform.name} roofs", name="roofs")
    cmap = factor_cmap("schedule", palette=[SCHEDULE_COLORS[s] for s in SCHEDULES],
                       factors=list(SCHEDULES))
    dots = p.scatter("ctc", "throughput_gops", source=points, color=cmap, size=7, alpha=0.6,
                     legend_field="schedule", name="points")
    zoomed = [dots]
    if front is not None:
        zoomed.append(p.scatter("ctc", "throughput_gops", source=front, size=12, fill_alpha=0,
                                line_color="black", line_width=2, legend_label="Pareto",
                                name="front"))
    peak = p.scatter("x", "peak", source=roof_source, alpha=0, size=1, name="peak")
    peak.visible = roof_in_view(points.data["throughput_gops"], platform.peak_gops, y_type)
    p.x_range, p.y_range = data_ranges(zoomed)
    p.y_range.renderers, p.y_range.only_visible = [*zoomed, peak], True  # `roof_in_view`
    (footprint,), formatters = number_tooltips(["footprint_kb"], ["footprint"])  # '123 KB'
    p.add_tools(hover([dots], [
        ("layer", "@layer"), ("schedule", "@schedule"), (TILE_HEADER, "@tile"), footprint,
        ("cycles", "@cycles{0,0}"), ("GOps/s", "@throughput_gops{0,0.00}"),
        ("CTC", "@ctc{0,0.0} ops/B")], formatters=formatters))
    p.legend.click_policy = "hide"
    p.legend.label_text_font_size = "8pt"
    p.add_layout(p.legend[0], "right")
    return human_axes(p)


def buffer_sweep(summary: pd.DataFrame, column: str = "accesses_rel",
                 title: str | None = None) -> figure:
    """Seed 000 fig. 5.5/5.6/5.8: a metric vs local-memory size, one line per schedule.
    column: "accesses_rel" (× compulsory minimum) or "cycles_rel" (× compute-only)."""
    label = {"accesses_rel": "external accesses / compulsory",
             "cycles_rel": "cycles / compute-only cycles"}.get(column, column)
    p = figure(title=title or label, x_axis_type="log", y_axis_type="log", tools=TOOLS,
               x_axis_label="local memory (KB)", y_axis_label=label, width=560, height=360)
    dots = []
    groups = list(summary.groupby("schedule", sort=False))
    for (schedule, rows), (width, size, marker) in zip(groups, stacked_styles(len(groups), 1.5,
                                                                               5.0, 1.0),
                                                        strict=True):
        color = SCHEDULE_COLORS.get(schedule, "black")  # earlier wider: equal ones show
        src = ColumnDataSource({"x": rows["buffer_bytes"] / 1024, "y": rows[column],
                                "schedule": [schedule] * len(rows)})
        p.line("x", "y", source=src, color=color, legend_label=schedule, line_width=width)
        dots.append(p.scatter("x", "y", source=src, color=color, size=size, marker=marker,
                              legend_label=schedule))
    p.add_tools(hover(dots, [("schedule", "@schedule"), ("memory", "@x{0,0.[00]} KB"),
                             (label, "@y{0,0.00}")]))
    p.legend.location = "top_right"
    p.legend.click_policy = "hide"
    return human_axes(p)


def cycle_breakdown(best: pd.DataFrame, relative: bool = True,
                    title: str | None = None) -> figure:
    """Seed 000 fig. 5.9/5.10: cycles by part (compute, DMA setup, bus stall, prolog/epilog)
    per buffer size for the given rows (one per buffer size), relative or absolute."""
    parts = ["compute", "dma_setup", "bus_stall", "prolog_epilog"]
    rows = best.sort_values("buffer_bytes")
    values = {part: rows[f"cycles_{part}"].to_numpy(dtype=float) for part in parts}
    if relative:
        total = rows["cycles"].to_numpy(dtype=float)
        values = {k: v / total for k, v in values.items()}
    sizes = [fmt_bytes(b) for b in rows["buffer_bytes"]]
    p = figure(x_range=sizes, title=title or ("relative" if relative else "absolute")
               + " cycle breakdown", tools=TOOLS, width=640, height=360,
               y_axis_label="share of cycles" if relative else "cycles",
               x_axis_label="local memory")
    p.vbar_stack(parts, x="size", width=0.8, source=ColumnDataSource({"size": sizes, **values}),
                 color=[PART_COLORS[k] for k in parts], legend_label=parts)
    apply_labels(p.xaxis[0], sizes, p.width - 120)
    p.legend.location = "top_right"
    return human_axes(p)


def sweep_grid(sweep: pd.DataFrame, column: str = "cycles_rel", per_row: int = 2):
    """One buffer-size sweep figure per layer (from reporting.build's sweep table)."""
    from bokeh.layouts import gridplot

    figures = [buffer_sweep(rows, column, title=f"{name}: "
                            + ("cycles / compute-only" if column == "cycles_rel"
                               else "accesses / compulsory"))
               for name, rows in sweep.groupby("layer", sort=False)]
    for fig in figures:
        fig.width, fig.height = 460, 300
    return gridplot(figures, ncols=per_row)


def sweep_scatter(results: pd.DataFrame, front: pd.DataFrame | None = None) -> figure:
    """Sweep results: energy vs throughput, size by local memory, Pareto cases outlined."""
    frame = results.assign(size=6 + 3 * np.log2(results["memory_kb"].clip(lower=1)))
    p = figure(title="sweep: energy vs throughput (marker size: local memory)", tools=TOOLS,
               width=640, height=400,
               x_axis_label="throughput (GOps/s)", y_axis_label="energy per batch (µJ)")
    src = ColumnDataSource(frame.to_dict("list"))  # a frame makes bokeh warn (pandas 3.1)
    dots = p.scatter("throughput_gops", "energy_uj", source=src, size="size", alpha=0.5)
    if front is not None and len(front):
        p.scatter("throughput_gops", "energy_uj", source=ColumnDataSource(front.to_dict("list")),
                  size=16, fill_alpha=0, line_color="black", line_width=2, legend_label="Pareto")
    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])}
    shown = [c for c in frame.columns if c not in ("case_id", "size")]
    number_tips, formatters = number_tooltips([c for c in shown if c in numeric])
    by_column = dict(zip([c for c in shown if c in numeric], number_tips, strict=True))
    p.add_tools(hover([dots], [by_column.get(c, (c, f"@{{{c}}}")) for c in shown],
                      formatters=formatters))  # human units, never an exponent
    return human_axes(p)
