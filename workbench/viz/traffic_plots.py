"""Traffic-model plots: off-accelerator traffic versus local memory per model (seed 002
figs. 4/5 axes), from the tidy table of `explore.traffic_table`."""

from __future__ import annotations

import pandas as pd
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from workbench.viz.common import TOOLS, hover, stacked_styles
from workbench.viz.units import human_axes

MODEL_STYLE = {"seed000": ("#1f77b4", "solid"), "dataflow": ("#2ca02c", "solid"),
               "peemen": ("#ff7f0e", "solid"), "cache": ("#d62728", "solid"),
               "compulsory": ("#7f7f7f", "dashed")}


def traffic_curve_data(table: pd.DataFrame, layer: str | None = None) -> dict[str, list]:
    """Columns memory_kb and one per model plus 'compulsory' (MB), summed over the layers
    (or one layer). Sizes where a model fits no schedule are NaN."""
    rows = table if layer is None else table[table["layer"] == layer]
    wide = rows.pivot_table(index="memory_bytes", columns="model", values="traffic_bytes",
                            aggfunc=lambda s: s.sum(min_count=len(s)), dropna=False)
    compulsory = rows.groupby("memory_bytes")["compulsory_bytes"].sum() / \
        rows["model"].nunique()
    data = {"memory_kb": [b / 1024 for b in wide.index]}
    for model in MODEL_STYLE:
        if model == "compulsory":
            data[model] = list(compulsory.reindex(wide.index) / 1e6)
        else:
            values = wide[model] / 1e6 if model in wide else [float("nan")] * len(wide)
            data[model] = list(values)
    return data


def sweep_traffic_data(results: pd.DataFrame) -> dict[str, list]:
    """traffic_curves columns from sweep rows of one network, platform and width: traffic_mb
    per traffic_model and memory_kb, and compulsory_mb."""
    rows = results[results["traffic_model"].notna()] if "traffic_model" in results else \
        results.iloc[:0]
    wide = rows.pivot_table(index="memory_kb", columns="traffic_model", values="traffic_mb",
                            aggfunc="first", dropna=False)
    data = {"memory_kb": list(wide.index)}
    for model in MODEL_STYLE:
        if model == "compulsory":
            data[model] = list(rows.groupby("memory_kb")["compulsory_mb"].first()
                               .reindex(wide.index))
        else:
            data[model] = list(wide[model]) if model in wide else [float("nan")] * len(wide)
    return data


def traffic_curves(source: ColumnDataSource, title: str = "traffic vs local memory",
                   width: int = 720, height: int = 380) -> figure:
    """Log-log lines, one per model column of `source` (renderers named after the models),
    each with its points: a legend click hides both; a model drawn earlier is wider
    (`stacked_styles`), so one equal to a later model still shows."""
    fig = figure(title=title, x_axis_type="log", y_axis_type="log", width=width, height=height,
                 tools=TOOLS, x_axis_label="local memory (KB)",
                 y_axis_label="off-accelerator traffic (MB)")
    dots = []
    models = [m for m in MODEL_STYLE if m != "compulsory"]
    for model, (width, size, marker) in zip(models, stacked_styles(len(models)), strict=True):
        color, dash = MODEL_STYLE[model]
        fig.line("memory_kb", model, source=source, color=color, line_dash=dash,
                 line_width=width, legend_label=model, name=model)
        dots.append(fig.scatter("memory_kb", model, source=source, color=color, size=size,
                                marker=marker, legend_label=model, name=f"{model}_points"))
    color, dash = MODEL_STYLE["compulsory"]
    fig.line("memory_kb", "compulsory", source=source, color=color, line_dash=dash,
             line_width=2, legend_label="compulsory", name="compulsory")
    # one tooltip (the nearest point) lists every model at that memory size
    fig.add_tools(hover(dots, [("memory", "@memory_kb{0,0.[00]} KB")] + [
        (m, f"@{m}{{0,0.000}} MB") for m in MODEL_STYLE]))
    fig.legend.click_policy = "hide"
    fig.add_layout(fig.legend[0], "right")  # beside: a model's right end ran under it
    return human_axes(fig)
