"""Bokeh figure factories (a new figure per call; BokehJS inline via OFFLINE). No model numbers
are computed here: the factories draw what workbench.explore / quant return."""

import importlib

# Names and the submodule each comes from, imported on first use: `workbench.viz.units` (the
# number formatting the CLI and reports print with) then costs no import of bokeh's plotting.
_EXPORTS = {
    "codegen_plots": ("issue_gantt",),
    "common": ("OFFLINE", "SCHEDULE_COLORS", "source", "standalone_html"),
    "core_plots": ("SPLIT_COLORS", "chosen_data", "chosen_split", "chosen_table",
                   "comparison_cycles", "comparison_data", "comparison_factors",
                   "comparison_plots", "comparison_table", "comparison_traffic",
                   "cores_overview", "ideal_data", "shares_text", "show_splits",
                   "speedup_data", "speedup_figure", "speedup_plot"),
    "design_plots": ("breakdown_data", "layer_breakdown", "layer_roofline", "memory_label",
                     "memory_points_data", "memory_tradeoff", "selected_memory_data"),
    "explore_plots": ("buffer_sweep", "cycle_breakdown", "roof_in_view", "roofline",
                      "roofline_data", "roofs", "sweep_grid", "sweep_scatter"),
    "network_plots": ("accuracy_vs_width", "memory_footprint", "network_breakdown",
                      "network_roofline", "quant_space", "quant_spaces"),
    "simd_plots": ("plan_overview", "transfer_breakdown"),
    "static_plots": ("bokeh_resources_html", "embed_html", "interactive_roofline"),
    "traffic_plots": ("sweep_traffic_data", "traffic_curve_data", "traffic_curves"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = [*_WHERE, "units"]


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"workbench.viz.{_WHERE[name]}"), name)
    else:
        try:
            value = importlib.import_module(f"workbench.viz.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"workbench.viz.{name}":
                raise
            raise AttributeError(f"module 'workbench.viz' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
