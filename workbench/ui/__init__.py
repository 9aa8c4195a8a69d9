"""ipywidgets apps built by factory functions; their callbacks run without a browser."""

from workbench.ui.codegen_view import codegen_view
from workbench.ui.cores_view import CoresExplorer, cores_explorer, split_comparison
from workbench.ui.design_space import DesignSpaceApp, design_space
from workbench.ui.errors import quiet_errors
from workbench.ui.plan_view import PlanView, plan_view
from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.sweep_browser import SweepBrowser, demo_sweep, sweep_browser
from workbench.ui.tile_explorer import TileExplorer, tile_explorer
from workbench.ui.traffic_explorer import TrafficExplorer, traffic_explorer

__all__ = ["CoresExplorer", "DesignSpaceApp", "PlanView", "PlatformPanel", "SweepBrowser",
           "TileExplorer", "TrafficExplorer", "codegen_view", "cores_explorer", "demo_sweep",
           "design_space", "plan_view", "quiet_errors", "split_comparison", "sweep_browser",
           "tile_explorer", "traffic_explorer"]

quiet_errors()  # importing the UI in a notebook turns bad-input tracebacks into one line
