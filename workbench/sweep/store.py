"""The results store of a sweep directory: one file per case, committed atomically.

Layout of DIR:
- `grid.json`: the grid of the latest run (rows of earlier grids stay and are reused);
- `rows/<case_id>.json`: one case's row, a JSON object;
- `failures/<case_id>.txt`: one case's one-line failure;
- `results.parquet`, `failures.json`: every row and failure of the grid, gathered at the end;
- `.lock`: the run that owns DIR (its token, host, pid and start time);
- `corrupt/`: row files that could not be read, moved aside (their cases run again).

Exactly once: a case is written to a temporary file and renamed onto its id (`os.replace`,
atomic on POSIX filesystems, NFS included), so a reader sees the whole row or none, and a case
computed twice (a task re-run after its worker died) lands on the same name with the same
content. Nothing appends, so no row can be duplicated; a killed writer leaves at most a
temporary file, which the next run ignores.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import spelling
from workbench.errors import FileFormatError, WorkbenchError
from workbench.sweep.grid import OLD_KEYS, Grid, iter_cases


def _write_atomic(path: Path, text: str) -> None:
    """Write whole or not at all; a failed write (a full disk) leaves no temporary file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WorkbenchError(f"cannot write {str(path)!r}: "
                             f"{exc.strerror or type(exc).__name__}") from None


def _plain(value: Any) -> Any:
    """A JSON-safe scalar (numpy scalars to Python; NaN/inf kept as JSON extensions)."""
    if hasattr(value, "item"):
        value = value.item()
    return value


def _today(grid_json: str) -> str:
    """A grid.json text as today's spelling writes it (an older sweep's `buffer_kb` read as
    `memory_kb`: resuming it is the same grid); the text itself when it is not a grid."""
    try:
        doc = json.loads(grid_json)
    except ValueError:
        return grid_json
    if not isinstance(doc, dict) or not set(OLD_KEYS) & set(doc):
        return grid_json
    return json.dumps({OLD_KEYS.get(k, k): v for k, v in doc.items()}, indent=1)


@dataclass(frozen=True)
class Status:
    """Counts of a sweep directory against its grid, with the failures' one-line reasons."""

    done: int
    failed: int
    pending: int
    failures: dict[str, str]
    running: str | None  # who holds the lock, if anyone

    def lines(self) -> list[str]:
        head = f"{self.done} done, {self.failed} failed, {self.pending} pending"
        body = [f"failed: {reason}" for reason in self.failures.values()]
        return [head + (f" (in use by {self.running})" if self.running else ""), *body]


class SweepStore:
    """A sweep directory (see the module docstring)."""

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir)
        self.rows = self.root / "rows"
        self.failures_dir = self.root / "failures"
        self.lock_path = self.root / ".lock"

    # -- the run that owns the directory ------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[str]:
        """Own DIR for one run: refuses (one line) while another live run owns it; takes over
        the lock of a run that died on this host. Yields the run's token."""
        self.prepare()
        token = uuid.uuid4().hex
        info = {"token": token, "host": socket.gethostname(), "pid": os.getpid(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        tmp = self.root / f".lock.{token}"
        tmp.write_text(json.dumps(info))
        try:
            for _attempt in range(2):
                try:
                    os.link(tmp, self.lock_path)  # atomic: fails if a lock exists
                    break
                except FileExistsError:
                    holder = self.holder()
                    if holder is None or not self._stale(holder):
                        who = self.describe(holder)
                        raise WorkbenchError(
                            f"sweep directory {str(self.root)!r} is in use by {who}; wait for "
                            f"it, or delete {str(self.lock_path)!r} if that run is gone"
                        ) from None
                    self.lock_path.unlink(missing_ok=True)
            else:
                raise WorkbenchError(f"sweep directory {str(self.root)!r}: cannot take its lock")
        finally:
            tmp.unlink(missing_ok=True)
        try:
            yield token
        finally:
            if (self.holder() or {}).get("token") == token:
                self.lock_path.unlink(missing_ok=True)

    def holder(self) -> dict | None:
        try:
            return json.loads(self.lock_path.read_text())
        except (OSError, ValueError):
            return None

    @staticmethod
    def describe(holder: dict | None) -> str:
        if holder is None:
            return "another run"
        return f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('started')}"

    @staticmethod
    def _stale(holder: dict) -> bool:
        """The holder ran on this host and its process is gone."""
        if holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, KeyError, ValueError, TypeError):
            return False
        return False

    def owned_by(self, token: str) -> bool:
        """True where this process sees DIR as the run with this token sees it (a worker on
        a shared filesystem); False elsewhere (then the client writes the rows)."""
        return (self.holder() or {}).get("token") == token

    # -- contents --------------------------------------------------------------------------
    def prepare(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise WorkbenchError(f"sweep output {str(self.root)!r} is a file, not a directory")
        try:
            self.rows.mkdir(parents=True, exist_ok=True)
            self.failures_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise WorkbenchError(f"sweep output {str(self.root)!r}: cannot create "
                                 f"({exc.strerror or type(exc).__name__})") from None

    def writable(self) -> bool:
        """Can this process create files in DIR (a probe file, so it also holds for root)?"""
        probe = self.root / f".probe.{uuid.uuid4().hex}"
        try:
            probe.write_text("")
            probe.unlink()
            return True
        except OSError:
            return False

    def write_grid(self, grid: Grid) -> str:
        """Record the grid of this run; returns a note when it differs from the last one."""
        path = self.root / "grid.json"
        text = json.dumps(grid.__dict__, indent=1)
        note = ""
        if path.exists():
            try:
                before = path.read_text()
            except OSError:
                before = None
            if before is not None and _today(before) == text:
                return ""
            note = ("this directory was last run with another grid; its rows stay in rows/ "
                    "and count wherever the grids share cases, the rest is left out of "
                    "results.parquet")
        _write_atomic(path, text)
        return note

    def clean(self) -> list[str]:
        """Before a run: remove temporary files left by killed writers, and move row files
        that cannot be read to corrupt/ (their cases are pending again). Returns a note per
        moved file."""
        for folder in (self.rows, self.failures_dir, self.root):
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
        moved = []
        for path in self.rows.glob("*.json"):
            try:
                row = json.loads(path.read_text())
                if not isinstance(row, dict) or row.get("case_id") != path.stem:
                    raise ValueError("not this case's row")
            except (OSError, ValueError) as exc:
                aside = self.root / "corrupt"
                aside.mkdir(exist_ok=True)
                os.replace(path, aside / path.name)
                moved.append(f"row file {path.name} could not be read ({type(exc).__name__}); "
                             f"moved to {aside.name}/, its case runs again")
        return moved

    def load_grid(self) -> Grid:
        path = self.root / "grid.json"
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise FileFormatError(f"sweep directory {str(self.root)!r}: no readable grid.json "
                                  f"({type(exc).__name__})") from None
        where = f"sweep directory {str(self.root)!r}: grid.json"
        try:
            return Grid.from_doc(doc, where)
        except FileFormatError:
            raise
        except (TypeError, WorkbenchError) as exc:
            raise FileFormatError(f"{where}: {str(exc).splitlines()[0]}") from None

    def commit_row(self, case_id: str, row: dict) -> None:
        _write_atomic(self.rows / f"{case_id}.json",
                      json.dumps({k: _plain(v) for k, v in row.items()}))
        (self.failures_dir / f"{case_id}.txt").unlink(missing_ok=True)

    def commit_failure(self, case_id: str, reason: str) -> None:
        _write_atomic(self.failures_dir / f"{case_id}.txt", reason.splitlines()[0])

    def done_ids(self) -> set[str]:
        return {p.stem for p in self.rows.glob("*.json") if not p.name.startswith(".")}

    def failed(self) -> dict[str, str]:
        out = {}
        for path in self.failures_dir.glob("*.txt"):
            if not path.name.startswith("."):
                try:
                    out[path.stem] = path.read_text().strip()
                except OSError:
                    continue
        return out

    def read_rows(self, ids: Iterable[str]) -> list[dict]:
        """The committed rows of these ids, in this order (unreadable files are skipped:
        their cases count as pending and are computed again)."""
        rows, old = [], False
        for case_id in ids:
            try:
                row = json.loads((self.rows / f"{case_id}.json").read_text())
            except (OSError, ValueError):
                continue
            old = old or spelling.OLD_MEMORY_COLUMN in row
            rows.append({spelling.MEMORY_KB if k == spelling.OLD_MEMORY_COLUMN else k: v
                         for k, v in row.items()})
        if old:  # rows of an older sweep: read as today's, named once
            spelling.notice(spelling.OLD_MEMORY_COLUMN, spelling.MEMORY_KB,
                            f"sweep directory {str(self.root)!r}")
        return rows

    def status(self, grid: Grid | None = None) -> Status:
        grid = grid or self.load_grid()
        ids = [c.case_id for c in iter_cases(grid)]
        done, failed = self.done_ids(), self.failed()
        n_done = sum(i in done for i in ids)
        failures = {i: failed[i] for i in ids if i in failed and i not in done}
        holder = self.holder()
        running = self.describe(holder) if holder and not self._stale(holder) else None
        return Status(n_done, len(failures), len(ids) - n_done - len(failures), failures,
                      running)

    def collect(self, grid: Grid | None = None, write: bool = True) -> pd.DataFrame:
        """Every committed row of the grid, in grid order; also written to results.parquet
        (and the grid's failures to failures.json) unless `write` is False."""
        grid = grid or self.load_grid()
        ids = [c.case_id for c in iter_cases(grid)]
        done = self.done_ids()
        frame = pd.DataFrame(self.read_rows([i for i in ids if i in done]))
        if not write:
            return frame
        failed = self.failed()
        _write_atomic(self.root / "failures.json",
                      json.dumps([failed[i] for i in ids if i in failed and i not in done],
                                 indent=1))
        tmp = self.root / f".results.{uuid.uuid4().hex}.parquet"
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, self.root / "results.parquet")
        return frame

