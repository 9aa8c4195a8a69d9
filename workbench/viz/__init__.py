"""Bokeh figure factories (a new figure per call; BokehJS inline via OFFLINE). No model numbers
are computed here: the factories draw what workbench.explore / quant return."""

from workbench.viz import units
from workbench.viz.common import OFFLINE, SCHEDULE_COLORS, source, standalone_html
from workbench.viz.core_plots import (
    SPLIT_COLORS,
    chosen_data,
    chosen_split,
    comparison_cycles,
    comparison_data,
    comparison_factors,
    comparison_plots,
    comparison_traffic,
    cores_overview,
    ideal_data,
    speedup_data,
    speedup_figure,
    speedup_plot,
)
from workbench.viz.design_plots import (
    breakdown_data,
    layer_breakdown,
    layer_roofline,
    memory_label,
    memory_points_data,
    memory_tradeoff,
    selected_memory_data,
)
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
    network_roofline,
    quant_space,
    quant_spaces,
)
from workbench.viz.simd_plots import plan_overview, transfer_breakdown
from workbench.viz.static_plots import bokeh_resources_html, embed_html, interactive_roofline
from workbench.viz.traffic_plots import sweep_traffic_data, traffic_curve_data, traffic_curves

__all__ = ["OFFLINE", "SCHEDULE_COLORS", "SPLIT_COLORS", "accuracy_vs_width",
           "bokeh_resources_html", "breakdown_data", "buffer_sweep", "chosen_data", "chosen_split",
           "comparison_cycles", "comparison_data", "comparison_factors", "comparison_plots",
           "comparison_traffic", "cores_overview", "cycle_breakdown", "embed_html", "ideal_data",
           "interactive_roofline", "layer_breakdown", "layer_roofline", "memory_footprint",
           "memory_label", "memory_points_data", "memory_tradeoff", "network_breakdown",
           "network_roofline",
           "plan_overview", "quant_space", "quant_spaces", "roofline", "roofline_data", "roofs",
           "selected_memory_data", "source", "speedup_data", "speedup_figure", "speedup_plot",
           "standalone_html", "sweep_grid", "sweep_scatter", "sweep_traffic_data",
           "traffic_curve_data", "traffic_curves", "transfer_breakdown", "units"]
