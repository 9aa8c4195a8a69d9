"""The platform panel: a preset picker and the whole composed platform, part by part: the
memory levels DRAM first (a row each, levels added or removed below the local memory), the
datapath, DMA, cluster and energy. One widget per part field; `fields` also names them by the
single-level names the apps use (`local_mem_bytes` is the local level's capacity widget).

It starts from a preset name, a platform file or a `Platform` (the last two listed beside the
presets as "NAME (given)"). With `capacity_steps` the on-chip capacities are sliders over
powers of two (still in bytes): an app whose sliders set level sizes uses these, so a size is
edited in one place. `memory_view` (preset and levels) and `parts_view` (the rest) may be laid
out apart; `view` holds both.

Undo and redo (buttons beside the preset, and `undo()`/`redo()`) step through the platforms
the panel has held: every field edit, level added or removed, preset chosen and quiet change
an app makes (`set_quietly`, `show`) is a step. Only platforms that build are steps: after an
invalid value, undo goes back to the last valid platform. Each step restores the widgets and
notifies the apps as an edit does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from workbench import platforms
from workbench.errors import WorkbenchError
from workbench.ui.controls import bytes_slider
from workbench.ui.errors import error_html
from workbench.ui.history import History

_CHOICES = {"overflow": platforms.OVERFLOW_MODES, "simd_style": platforms.SIMD_STYLES}
_SCALAR_PARTS = ("datapath", "dma", "cluster", "energy")
_HIDDEN = {("datapath", "unroll"), ("energy", "mac_pj")}  # kept from the preset as declared
# the single-level names of the level fields (level index, field) the apps edit
_LEVEL_NAMES = {(0, "bandwidth"): "bus_elems_per_cycle", (0, "energy_pj"): "ext_access_pj",
                (1, "capacity"): "local_mem_bytes", (1, "energy_pj"): "local_access_pj",
                (1, "from_size"): "size_aware_energy"}
_LEVEL_FIELDS = ("name", "capacity", "access_bits", "energy_pj", "bandwidth")
_ROW = widgets.Layout(width="118px")
GIVEN = "(given)"  # the preset list's entry of a platform given as a file or an object
_STEP = widgets.Layout(width="80px")
State = tuple[str, platforms.Platform]  # an undo step: the preset entry and the platform


def _widget(name: str, value: Any, kind: type, width: str = "150px") -> widgets.Widget:
    """One field's widget: a checkbox, a dropdown of its choices, or a number box."""
    if kind is bool:
        w = widgets.Checkbox(value=bool(value), description=name)
    elif name in _CHOICES:
        w = widgets.Dropdown(options=list(_CHOICES[name]), value=value, description=name)
    elif kind is int:
        w = widgets.IntText(value=int(value), description=name)
    else:
        w = widgets.FloatText(value=float(value), description=name)
    w.style.description_width = width
    return w


class LevelRow:
    """One memory level's widgets: name, capacity (bytes, all banks), access bits, energy (pJ
    per access; 'from size' derives it from table 3) and bandwidth (elements per cycle, 0:
    unlimited). DRAM's capacity is unbounded and shown so. `steps` (log2 of the smallest and
    largest bytes): an on-chip capacity is a slider over powers of two, its value bytes."""

    def __init__(self, level: dict[str, Any], index: int,
                 steps: tuple[int, int] | None = None) -> None:
        self.index, self.banks = index, level["capacity"]
        self.area_mm2_per_kb = level.get("area_mm2_per_kb")  # not shown: kept as declared
        total = 0 if level["capacity"] is None else int(platforms.parts.capacity_total(
            level["capacity"]))
        self.name = widgets.Text(value=level["name"], layout=_ROW)
        self.capacity = bytes_slider(total, *steps) if steps and index else \
            widgets.IntText(value=total, layout=_ROW, disabled=index == 0)
        if steps and not index:  # DRAM: as wide as the sliders below it
            self.capacity.layout = widgets.Layout(width="250px")
        self.access_bits = widgets.IntText(value=level["access_bits"], layout=_ROW)
        self.energy_pj = widgets.FloatText(value=level["energy_pj"] or 0.0, layout=_ROW)
        self.from_size = widgets.Checkbox(value=level["energy_pj"] is None and index > 0,
                                          description="from size", indent=False,
                                          layout=widgets.Layout(width="90px"),
                                          disabled=index == 0)
        self.bandwidth = widgets.FloatText(value=level["bandwidth"] or 0.0, layout=_ROW)
        self.view = widgets.HBox([self.name, self.capacity, self.access_bits, self.energy_pj,
                                  self.from_size, self.bandwidth])

    @property
    def widgets(self) -> list[widgets.Widget]:
        return [self.name, self.capacity, self.access_bits, self.energy_pj, self.from_size,
                self.bandwidth]

    def doc(self) -> dict[str, Any]:
        """The level as the platform's schema reads it (banks resized in proportion)."""
        capacity: Any = None
        if self.index:
            capacity = self.capacity.value
            if isinstance(self.banks, tuple | dict):
                banks = dict(self.banks)
                capacity = dict(zip(banks, platforms.parts.scaled_parts(
                    list(banks.values()), capacity), strict=True)) if capacity > 0 else capacity
        return {"name": self.name.value, "capacity": capacity,
                "access_bits": self.access_bits.value,
                "energy_pj": None if self.from_size.value else self.energy_pj.value,
                "bandwidth": self.bandwidth.value if not self.index  # DRAM: the bus, required
                else self.bandwidth.value or None, "area_mm2_per_kb": self.area_mm2_per_kb}


class PlatformPanel:
    """Widgets for the whole platform; `platform()` returns the edited Platform. `preset`: a
    preset name, a platform file or a Platform; `capacity_steps`: see the module."""

    def __init__(self, preset: str | Path | platforms.Platform = "idsp",
                 capacity_steps: tuple[int, int] | None = None) -> None:
        names = platforms.list_platforms()
        if isinstance(preset, platforms.Platform) or str(preset) not in names:
            self.given: platforms.Platform | None = preset if isinstance(
                preset, platforms.Platform) else platforms.load_platform(preset)
            first = f"{self.given.name} {GIVEN}"
            options = [first, *names]
        else:
            self.given, first, options = None, str(preset), names
        self.steps = capacity_steps
        self.preset = widgets.Dropdown(options=options, value=first, description="preset")
        self.message = widgets.HTML()
        self.levels_box = widgets.VBox()
        wide = widgets.Layout(width="170px")  # the default 148 px clips "− innermost level"
        self.add_level = widgets.Button(description="+ level inside", icon="plus", layout=wide)
        self.remove_level = widgets.Button(description="− innermost level", icon="minus",
                                           layout=wide)
        self.add_level.on_click(lambda _: self._add_level())
        self.remove_level.on_click(lambda _: self._remove_level())
        self.parts: dict[str, dict[str, widgets.Widget]] = {}
        self.rows: list[LevelRow] = []
        self.fields: dict[str, widgets.Widget] = {}
        self._listeners: list[Callable[[], None]] = []
        self._loading = False
        self.memory_view, self.parts_view = widgets.VBox(), widgets.VBox()
        self.view = widgets.VBox([self.memory_view, self.parts_view])
        self.undo_button = widgets.Button(description="undo", icon="undo", layout=_STEP,
                                          tooltip="back to the platform before the last edit")
        self.redo_button = widgets.Button(description="redo", icon="repeat", layout=_STEP,
                                          tooltip="the edit undone last, again")
        self.undo_button.on_click(lambda _: self.undo())
        self.redo_button.on_click(lambda _: self.redo())
        self.preset.observe(self._load_preset, names="value")
        self._build(self._source(first))
        start = self._state()
        assert start is not None  # a preset, file or Platform that loaded builds again
        self.history: History[State] = History(start)
        self._pending = False  # the widgets hold an invalid platform (not a step)
        self._buttons()

    def _source(self, choice: str) -> platforms.Platform:
        """The platform of a preset-list entry: the given one, or a shipped preset."""
        if self.given is not None and choice == self.preset.options[0]:
            return self.given
        return platforms.load_platform(choice)

    # -- building -------------------------------------------------------------------------
    def _build(self, base: platforms.Platform) -> None:
        """Widgets for `base`'s parts (a new preset: all of them anew)."""
        self.base = base
        self.parts = {}
        sections: list[widgets.Widget] = []
        for part in _SCALAR_PARTS:
            model = getattr(base, part)
            boxes = {}
            for field, info in type(model).model_fields.items():
                if (part, field) in _HIDDEN:
                    continue
                kind = info.annotation if info.annotation in (int, float, bool, str) else float
                value = getattr(base, field) if part == "energy" else getattr(model, field)
                boxes[field] = _widget(field, value, kind)
            self.parts[part] = boxes
        if base.datapath.unroll:  # a declared MAC array sets the MACs per cycle
            self.parts["datapath"]["macs_per_cycle"].disabled = True
        self.parts["memory"] = {name: _widget(name, getattr(base.memory, name),
                                              platforms.flat_type(name))
                                for name in ("elem_bytes", "double_buffer")}
        self.parts["platform"] = {"clock_mhz": _widget("clock_mhz", base.clock_mhz, float)}
        self.rows = [LevelRow(level.doc(), i, self.steps)
                     for i, level in enumerate(base.memory.levels)]
        self._index_fields()
        head = widgets.HTML("<b>memory levels</b>, DRAM first: name, capacity (B), access "
                            "(bits), energy (pJ/access), bandwidth (elements/cycle, 0: "
                            "unlimited)")
        self.levels_box.children = [row.view for row in self.rows]
        memory = widgets.VBox([head, self.levels_box,
                               widgets.HBox([self.add_level, self.remove_level]),
                               *self.parts["memory"].values()])
        for part in ("platform", *_SCALAR_PARTS):
            sections.append(widgets.VBox([widgets.HTML(f"<b>{part}</b>"),
                                          *self.parts[part].values()]))
        self.memory_view.children = [
            widgets.HBox([self.preset, self.undo_button, self.redo_button]), memory,
            self.message]
        self.parts_view.children = sections
        for w in self._all_widgets():
            w.observe(lambda change: self._changed(), names="value")

    def _index_fields(self) -> None:
        """`fields`: the part fields by their single-level names (what the apps set)."""
        flat = {name: self.parts[part][field] for name, (part, field)
                in platforms.platform.FLAT.items() if field in self.parts.get(part, {})}
        flat["clock_mhz"] = self.parts["platform"]["clock_mhz"]
        flat["core_pj_per_cycle"] = self.parts["energy"]["core_pj_per_cycle"]
        for (i, field), name in _LEVEL_NAMES.items():
            flat[name] = getattr(self.rows[i], field)
        self.fields = flat

    def _all_widgets(self) -> list[widgets.Widget]:
        scalars = [w for part in self.parts.values() for w in part.values()]
        return scalars + [w for row in self.rows for w in row.widgets]

    def _add_level(self) -> None:
        """A level inside the innermost one: half its capacity, its width and energy."""
        inner = self.rows[-1].doc()
        size = max(1, int(self.rows[-1].capacity.value) // 2)
        row = LevelRow({**inner, "name": f"L{len(self.rows)}", "capacity": size}, len(self.rows),
                       self.steps)
        for w in row.widgets:
            w.observe(lambda change: self._changed(), names="value")
        self.rows.append(row)
        self.levels_box.children = [r.view for r in self.rows]
        self._changed()

    def _remove_level(self) -> None:
        """Drop the innermost level (DRAM and the local memory stay)."""
        if len(self.rows) > 2:
            self.rows.pop()
            self.levels_box.children = [r.view for r in self.rows]
            self._changed()

    def _load_preset(self, change) -> None:
        was, self._loading = self._loading, True  # quiet while an undo restores a step
        try:
            self._build(self._source(change["new"]))
        finally:
            self._loading = was
        self._changed()

    def show(self, plat: platforms.Platform) -> None:
        """Set every widget to `plat` (the preset entry stays) without notifying the
        listeners: an app going back to the platform it shows."""
        self._loading = True
        try:
            self._build(plat)
        finally:
            self._loading = False
        self._record()

    def load(self, plat: platforms.Platform) -> None:
        """Put `plat` in the panel as an edit (a session read from a file): an undo step, the
        apps notified; the preset entry is its name when that is a preset."""
        self._loading = True
        try:
            if plat.name in self.preset.options:
                self.preset.value = plat.name
            self._build(plat)
        finally:
            self._loading = False
        self._changed()

    # -- the apps' interface --------------------------------------------------------------
    def set_quietly(self, name: str, value) -> None:
        """Change one field (by its single-level name) without notifying the listeners."""
        self._loading = True
        try:
            self.fields[name].value = value
        finally:
            self._loading = False
        self._record()

    def _changed(self) -> None:
        if not self._loading:
            self._record()
            self._notify()

    def _notify(self) -> None:
        for listener in self._listeners:
            listener()

    # -- undo and redo --------------------------------------------------------------------
    def _state(self) -> State | None:
        """The preset entry and the edited platform, or None when it does not build."""
        try:
            return self.preset.value, platforms.files.build(self.doc(), "the panel")
        except WorkbenchError:
            return None

    def _record(self) -> None:
        state = self._state()
        self._pending = state is None
        if state is not None:
            self.history.record(state)
        self._buttons()

    def _buttons(self) -> None:
        self.undo_button.disabled = not (self.history.can_back() or self._pending)
        self.redo_button.disabled = not self.history.can_forward()

    def undo(self) -> None:
        """Back to the platform before the last edit (after an invalid value: to the last
        valid platform); the apps are notified. Nothing to undo: nothing happens."""
        if self._pending:
            self._restore(self.history.current)
        elif self.history.can_back():
            self._restore(self.history.back())

    def redo(self) -> None:
        """The edit undone last, again (nothing after a new edit)."""
        if self.history.can_forward():
            self._restore(self.history.forward())

    def forget_history(self) -> None:
        """The platform shown becomes the only step (an app's own start-up settings)."""
        state = self._state()
        if state is not None:
            self.history.restart(state)
        self._buttons()

    def _restore(self, state: State) -> None:
        choice, plat = state
        self._loading = True
        try:
            self.preset.value = choice  # the entry the step was made under
            self._build(plat)
        finally:
            self._loading = False
        self.message.value = ""
        self._pending = False
        self._buttons()
        self._notify()

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback()` whenever the preset or a field changes."""
        self._listeners.append(callback)

    def doc(self) -> dict[str, Any]:
        """The edited platform as a document in part form."""
        doc = self.base.model_dump()
        for part in _SCALAR_PARTS:
            doc[part] = {**doc[part], **{f: w.value for f, w in self.parts[part].items()}}
        doc["memory"] = {**doc["memory"], "levels": [row.doc() for row in self.rows],
                         **{f: w.value for f, w in self.parts["memory"].items()}}
        doc["clock_mhz"] = self.parts["platform"]["clock_mhz"].value
        if doc["energy"]["core_pj_per_cycle"] == self.base.core_pj_per_cycle:
            doc["energy"] = self.base.energy.model_dump()  # as declared (a MAC energy stays)
        else:
            doc["energy"]["mac_pj"] = None  # the core's energy, edited, wins
        if doc["datapath"]["unroll"]:  # a declared MAC array sets the MACs
            doc["datapath"].pop("macs_per_cycle")
        return doc

    def platform(self) -> platforms.Platform:
        """The edited platform; invalid values raise a one-line WorkbenchError (also shown)."""
        try:
            return platforms.files.build(self.doc(), f"platform {self.base.name!r} as edited")
        except WorkbenchError as exc:
            self.message.value = error_html(exc)
            raise
