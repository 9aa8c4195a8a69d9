"""The whole-network plan by memory level: per conv/fc layer, the accesses (elements) or the
energy (µJ) of every level, stacked, on a platform with levels (`explore.composed`).

`level_data` reshapes a plan (`explore.network_plan` rows) into a ColumnDataSource dict; the
figure factory draws a given source, so an app updates it in place. Nothing here computes a
model number.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange
from bokeh.plotting import figure

from workbench.viz.common import TOOLS
from workbench.viz.units import human_axes

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
QUANTITIES = {"accesses": ("accesses_", 1e-6, "accesses (M elements)"),
              "energy": ("energy_pj_", 1e-6, "energy (µJ)")}


def level_data(per_layer: pd.DataFrame, levels: Sequence[str],
               quantity: str = "accesses") -> dict[str, list]:
    """Per conv/fc row priced on levels: `layer` and one column per level (millions of
    elements, or µJ), plus `cores` and `split`; empty lists when the plan has no such row."""
    prefix, scale, _ = QUANTITIES[quantity]
    rows = per_layer[per_layer["schedule"] == "levels"] if "schedule" in per_layer \
        else per_layer.iloc[:0]
    out: dict[str, list] = {"layer": [str(v) for v in rows.get("layer", [])],
                            "cores": [int(v) for v in rows.get("cores", [])],
                            "split": [str(v) for v in rows.get("split", [])]}
    for name in levels:
        column = f"{prefix}{name}"
        out[name] = [float(v) * scale for v in rows[column]] if column in rows else \
            [0.0] * len(out["layer"])
    return out


def level_figure(source: ColumnDataSource, levels: Sequence[str],
                 quantity: str = "accesses", width: int = 760) -> figure:
    """Stacked bars of each level's accesses or energy per layer (`level_data` source)."""
    _, _, label = QUANTITIES[quantity]
    fig = figure(x_range=FactorRange(*source.data["layer"]), height=300, width=width,
                 tools=TOOLS, title=f"{label} by memory level, per conv/fc layer",
                 toolbar_location="right")
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(levels))]
    fig.vbar_stack(list(levels), x="layer", width=0.8, source=source, color=colors,
                   legend_label=list(levels))
    fig.yaxis.axis_label = label
    fig.legend.location = "top_left"
    fig.xaxis.major_label_orientation = 0.8
    human_axes(fig)
    return fig
