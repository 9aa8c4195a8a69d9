"""ipywidgets apps built by factory functions; their callbacks run without a browser."""

from workbench.ui.platform_panel import PlatformPanel
from workbench.ui.tile_explorer import TileExplorer, tile_explorer

__all__ = ["PlatformPanel", "TileExplorer", "tile_explorer"]
