"""Bokeh figure factories (a new figure per call; BokehJS always INLINE). No model numbers are
computed here: the factories draw what workbench.explore / quant return."""

from workbench.viz.common import SCHEDULE_COLORS, source, standalone_html
from workbench.viz.explore_plots import (
    buffer_sweep,
    cycle_breakdown,
    roofline,
    roofline_data,
    roofs,
    sweep_grid,
    sweep_scatter,
)
from workbench.viz.network_plots import (
    accuracy_vs_width,
    memory_footprint,
    network_breakdown,
    quant_space,
)
from workbench.viz.report import bokeh_resources_html, embed_html, interactive_roofline
from workbench.viz.simd_plots import plan_overview, transfer_breakdown
from workbench.viz.traffic_plots import sweep_traffic_data, traffic_curve_data, traffic_curves

__all__ = ["SCHEDULE_COLORS", "accuracy_vs_width", "bokeh_resources_html", "buffer_sweep",
           "cycle_breakdown", "embed_html", "interactive_roofline", "memory_footprint",
           "network_breakdown", "plan_overview", "quant_space", "roofline", "roofline_data",
           "roofs", "source", "standalone_html", "sweep_grid", "sweep_scatter",
           "sweep_traffic_data", "traffic_curve_data", "traffic_curves", "transfer_breakdown"]
