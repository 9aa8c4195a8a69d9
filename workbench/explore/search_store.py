"""Exact blocking searches kept on disk, so a new session (a command run again, a notebook
reopened) finds a layer's blocking instead of searching it again.

A search's answer is a pure function of the layer's shape, the hierarchy's figures, the
element widths, the size-aware energy table, the bypass choice and the search code. Files
live in `paths.cache_dir()`, one folder per hash of the search's source (`code_hash`: a code
change starts a new folder, and older folders are deleted): one small JSON file per search,
named by the SHA-256 of the key's text, holding that text, so a file is used only for the
very key it was written for. Writes go to a temporary file renamed into place (concurrent
sessions never read half a file); a file that cannot be read is searched again, never
trusted. A folder holds at most FILES_KEPT files (about 1 KB each): past that, the oldest
go first, checked once per session (`SearchStore`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from workbench.hierarchy.blocking import Blocking
from workbench.hierarchy.search import SearchResult
from workbench.memo import Caches
from workbench.paths import cache_dir

FILES_KEPT = 50_000  # searches a folder keeps (about 50 MB)
_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache  # the code does not change while it runs
def code_hash() -> str:
    """SHA-256 of the source a search runs: the hierarchy package, the search included,
    and the layer description (hex, 12 digits)."""
    digest = hashlib.sha256()
    for path in sorted([*(_PACKAGE / "hierarchy").rglob("*.py"), _PACKAGE / "layers" / "spec.py"]):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class SearchStore:
    """A session's view of the stored searches (one per `memo.Caches`): whether its folder
    was tidied (old code's folders removed, the oldest files over FILES_KEPT deleted)."""

    def __init__(self) -> None:
        self.folder = cache_dir() / f"searches-{code_hash()}"
        self._tidied = False
        self._lock = threading.Lock()

    @classmethod
    def of(cls, caches: Caches) -> SearchStore:
        return caches.store("stored searches", cls)

    def load(self, key: str) -> SearchResult | None:
        """The search stored for `key`, or None."""
        try:
            doc = json.loads(self._path(key).read_text())
            if doc["key"] != key:
                return None
            b = doc["blocking"]
            return SearchResult(Blocking(tuple(map(tuple, b["orders"])),
                                         tuple(map(tuple, b["tiles"])),
                                         tuple(map(tuple, b["buffers"]))),
                                float(doc["energy_pj"]),
                                {str(k): int(v) for k, v in doc["chains_per_dim"].items()},
                                int(doc["combinations"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # absent, half-written by a crash, or foreign: searched again

    def save(self, key: str, found: SearchResult) -> None:
        """Store a finished search's answer (best effort: a full disk only loses the copy).
        A search that finds nothing fitting is not stored: its message names the layer and
        hierarchy, and it ends at the first bound."""
        b = found.blocking
        doc = {"key": key, "blocking": {"orders": b.orders, "tiles": b.tiles,
                                        "buffers": b.buffers},
               "energy_pj": found.energy_pj, "chains_per_dim": found.chains_per_dim,
               "combinations": found.combinations}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._tidy()
            handle, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w") as out:
                json.dump(doc, out)
            os.replace(tmp, self._path(key))
        except OSError:
            return

    def _path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def _tidy(self) -> None:
        """Once per session: remove older code's folders and the oldest files past
        FILES_KEPT (another session reading a removed file only searches again)."""
        with self._lock:
            if self._tidied:
                return
            self._tidied = True
        for folder in self.folder.parent.glob("searches-*"):
            if folder != self.folder and folder.is_dir():
                _remove(list(folder.iterdir()))
                try:
                    folder.rmdir()
                except OSError:
                    pass
        try:
            files = [(p.stat().st_mtime, p) for p in self.folder.iterdir()]
        except OSError:
            return
        if len(files) > FILES_KEPT:
            _remove([p for _, p in sorted(files)[:len(files) - FILES_KEPT]])


def _remove(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except OSError:
            pass


def search_key(layer: Any, hierarchy: Any, precision: Any, size_energy: Any,
               bypass: bool) -> str | None:
    """The text a search's answer depends on: the layer's shape (not its name), the
    hierarchy's figures (not its name), the element widths, the size-aware energy table
    (by the module and name it is found at) and bypass. None (not stored) for a table that
    cannot be found by its name (a lambda, a partial, a local function)."""
    energy = None
    if size_energy is not None:
        module = importlib.import_module(getattr(size_energy, "__module__", None) or "builtins")
        name = getattr(size_energy, "__qualname__", "")
        if getattr(module, name, None) is not size_energy:
            return None
        energy = f"{module.__name__}.{name}"
    return repr((dataclasses.replace(layer, name="layer"), dataclasses.replace(hierarchy, name=""),
                 precision, energy, bypass))
