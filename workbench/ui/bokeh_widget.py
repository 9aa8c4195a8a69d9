"""Bokeh layouts as ipywidgets (jupyter_bokeh), shared by the apps."""

from __future__ import annotations

import functools

import ipywidgets as widgets


@functools.cache  # one class (jupyter_bokeh imported on first use)
def _live_model_class() -> type:
    from jupyter_bokeh.widgets import BokehModel

    class LiveBokehModel(BokehModel):
        """A BokehModel whose state, when a page asks for it, is the document as it is now.

        jupyter_bokeh sends the document once, as `render_bundle` when the widget is made, and
        every later change as a patch. A page reloaded on the running kernel (or a notebook
        opened again) asks the kernel for each widget's state, so it would draw the document
        as it was made, and patch the plots' later changes onto that. Here the bundle is
        rebuilt when it is asked for after a change (both directions), once per request."""

        _stale = False

        def _document_patched(self, event) -> None:
            self._stale = True
            super()._document_patched(event)

        def get_state(self, key=None, drop_defaults: bool = False) -> dict:
            keys = None if key is None else [key] if isinstance(key, str) else list(key)
            if self._stale and (keys is None or "render_bundle" in keys):
                # set without the change notification: the page asking gets it in this state
                self._trait_values["render_bundle"] = self._model_to_traits(self._model)
                self._stale = False
            return super().get_state(key, drop_defaults)

    return LiveBokehModel


def bokeh_widget(layout) -> widgets.Widget:
    """A widget showing a bokeh layout; its sources stay live (updates reach the page, and a
    reloaded page draws the layout as it is, not as it was made)."""
    return _live_model_class()(layout)
