"""A platform panel: a preset picker and one editable widget per Platform field."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from workbench import platforms
from workbench.errors import WorkbenchError
from workbench.ui.errors import error_html

_SKIP = ("name", "title", "source")
_CHOICES = {"overflow": platforms.OVERFLOW_MODES, "simd_style": platforms.SIMD_STYLES}


class PlatformPanel:
    """Widgets for every Platform field; `platform()` returns the edited Platform."""

    def __init__(self, preset: str = "idsp") -> None:
        self.preset = widgets.Dropdown(options=platforms.list_platforms(), value=preset,
                                       description="preset")
        self.fields: dict[str, widgets.Widget] = {}
        base = platforms.load_platform(preset)
        for name in platforms.field_names():  # the single-level names
            if name in _SKIP:
                continue
            value, kind = getattr(base, name), platforms.flat_type(name)
            if kind is bool:
                w = widgets.Checkbox(value=value, description=name)
            elif name in _CHOICES:
                w = widgets.Dropdown(options=list(_CHOICES[name]), value=value,
                                     description=name)
            elif kind is int:
                w = widgets.IntText(value=value, description=name)
            else:
                w = widgets.FloatText(value=float(value), description=name)
            w.style.description_width = "150px"
            self.fields[name] = w
        self.message = widgets.HTML()
        self.preset.observe(self._load_preset, names="value")
        self.view = widgets.VBox([self.preset, *self.fields.values(), self.message])
        self._listeners: list[Callable[[], None]] = []
        for w in self.fields.values():
            w.observe(lambda change: self._changed(), names="value")
        self._loading = False

    def _load_preset(self, change) -> None:
        base = platforms.load_platform(change["new"])
        self._loading = True
        try:
            for name, w in self.fields.items():
                w.value = getattr(base, name)
        finally:
            self._loading = False
        self._changed()

    def set_quietly(self, name: str, value) -> None:
        """Change one field without notifying the listeners (the caller updates itself)."""
        self._loading = True
        try:
            self.fields[name].value = value
        finally:
            self._loading = False

    def _changed(self) -> None:
        if not self._loading:
            for listener in self._listeners:
                listener()

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback()` whenever the preset or a field changes."""
        self._listeners.append(callback)

    def platform(self) -> platforms.Platform:
        """The preset with the edited fields; invalid values raise a one-line WorkbenchError."""
        overrides = {name: w.value for name, w in self.fields.items()}
        try:
            return platforms.load_platform(self.preset.value, **overrides)
        except WorkbenchError as exc:
            self.message.value = error_html(exc)
            raise
