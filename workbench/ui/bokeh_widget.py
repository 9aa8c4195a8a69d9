"""Bokeh layouts as ipywidgets (jupyter_bokeh), shared by the apps."""

from __future__ import annotations

import ipywidgets as widgets


def bokeh_widget(layout) -> widgets.Widget:
    """A widget showing a bokeh layout; its sources stay live (updates reach the page)."""
    from jupyter_bokeh.widgets import BokehModel

    return BokehModel(layout)
