"""The tile explorer's session and export: what it shows as a `designs.session.Session`
(selections: layer, schedules, the memory sweep's range in KB and the point selected on the
roofline, as its schedule and tile), a session file checked whole before the app changes, and
the layer's solutions as CSV (best first) with the chosen tile (the selected point, or the best)
as YAML."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench import explore, layers, tiling
from workbench.designs import export
from workbench.designs.session import (
    Session,
    check_choice,
    check_sizes_kb,
    load_session,
    save_session,
)
from workbench.errors import FileFormatError, WorkbenchError
from workbench.ui.controls import size_exponent

if TYPE_CHECKING:
    from workbench.ui.tile_explorer import TileExplorer

KB = 1024
SELECTIONS = ("layer", "schedules", "sweep_memory_kb", "selected")


def session(app: TileExplorer) -> Session:
    """The app's state (the panel's platform holds the memory slider's size)."""
    lo, hi = app.buffer_range.value
    chosen = app.chosen_row() if app.selected_index is not None else None
    selected = None if chosen is None else {
        "schedule": str(chosen["schedule"]),
        "tile": [int(chosen[d]) for d in tiling.TILE_DIMS]}
    return Session("tiles", app.network.value, int(app.net.batch), app.objective.value,
                   app.panel.platform(), {
                       "layer": app.layer.value, "schedules": list(app.schedules.value),
                       "sweep_memory_kb": [(1 << lo) / KB, (1 << hi) / KB],
                       "selected": selected})


def save(app: TileExplorer, path: str | Path) -> Path:
    return save_session(session(app), path)


def _selected(origin: str, value: Any) -> tuple[str, tuple[int, ...]] | None:
    if value is None:
        return None
    tile = value.get("tile") if isinstance(value, dict) else None
    if not (isinstance(tile, list) and len(tile) == len(tiling.TILE_DIMS)
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in tile)):
        raise FileFormatError(f"{origin}: selections.selected: must be {{schedule, tile: "
                              f"[TOx, TOy, TOc, TOn, TKc]}} or null, got {value!r}")
    schedule = check_choice(origin, "selected.schedule", value.get("schedule"),
                            tiling.SCHEDULES)
    return schedule, tuple(tile)


def read(path: str | Path, sweep_log2: tuple[int, int]
         ) -> tuple[Session, layers.Network, dict[str, Any]]:
    """The session of a file, its network and its checked selections (nothing shown yet);
    `sweep_log2`: the sweep slider's range (log2 of bytes)."""
    s = load_session(path, "tiles")
    origin = f"session file {str(path)!r}"
    unknown = sorted(set(s.selections) - set(SELECTIONS))
    if unknown:
        raise FileFormatError(f"{origin}: selections.{unknown[0]}: unknown; known: "
                              + ", ".join(SELECTIONS))
    try:
        net = layers.load_network(s.network, batch=s.batch)
    except WorkbenchError as exc:
        raise FileFormatError(f"{origin}: network: {exc}") from None
    names = [lay.name for lay in net.tiled_layers()]
    sel = s.selections
    schedules = sel.get("schedules", list(tiling.SCHEDULES))
    if not isinstance(schedules, list) or not schedules:
        raise FileFormatError(f"{origin}: selections.schedules: must be a list of schedules, "
                              f"got {schedules!r}")
    for name in schedules:
        check_choice(origin, "schedules", name, tiling.SCHEDULES)
    kb = check_sizes_kb(origin, "sweep_memory_kb", sel.get("sweep_memory_kb", [1, 512]))
    try:
        sweep = tuple(size_exponent(v, sweep_log2, "selections.sweep_memory_kb") for v in kb)
    except WorkbenchError as exc:
        raise FileFormatError(f"{origin}: {exc}") from None
    return s, net, {"layer": check_choice(origin, "layer", sel.get("layer", names[0]), names),
                    "schedules": tuple(schedules), "sweep": sweep,
                    "selected": _selected(origin, sel.get("selected"))}


def select_tile(app: TileExplorer, chosen: tuple[str, tuple[int, ...]] | None) -> None:
    """Select the solution with that schedule and tile, when it is drawn."""
    if chosen is None:
        return
    rows = app.solutions
    hit = rows["schedule"] == chosen[0]
    for dim, value in zip(tiling.TILE_DIMS, chosen[1], strict=True):
        hit &= rows[dim] == value
    if hit.any():
        app.points.selected.indices = [int(hit.to_numpy().nonzero()[0][0])]


def ranked(app: TileExplorer) -> pd.DataFrame:
    """The layer's solutions, best first under the objective."""
    return app.solutions.sort_values(list(explore.ranking(app.objective.value)), kind="stable")


def write(app: TileExplorer, stem: str) -> list[Path]:
    """<stem>.csv: every solution shown, best first; <stem>.yaml: the chosen tile."""
    if app.solutions.empty:
        raise WorkbenchError("export: no solutions to export (nothing fits)")
    csv, yml = Path(f"{stem}.csv"), Path(f"{stem}.yaml")
    plat = app.panel.platform()
    try:
        csv.write_text(export.tiles_csv(ranked(app)), encoding="utf-8")
        yml.write_text(export.tile_yaml(app.chosen_row(), app.layer.value, app.network.value,
                                        plat, app.objective.value), encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"export {stem!r}: cannot write ({exc.strerror or exc})") from None
    return [csv, yml]
