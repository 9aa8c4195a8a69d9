"""Output files the user names: checked before any work starts, written so that a failure
never leaves a partial file (a temporary file beside the target, renamed onto it)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from workbench.errors import WorkbenchError


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _probe_directory(folder: Path, what: str) -> None:
    """Create and remove a file in `folder` (a probe, so it also holds for root and for
    read-only file systems)."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".workbench-probe-")
    except OSError as exc:
        raise WorkbenchError(f"{what}: cannot create files in {str(folder)!r} "
                             f"({_reason(exc)})") from None
    os.close(fd)
    os.unlink(name)


def _probe_special(path: Path, what: str) -> None:
    """An existing device or pipe (/dev/null, /dev/full): open it and write nothing, which
    fails where a real write would (a full device, no reader)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise WorkbenchError(f"{what}: cannot write {str(path)!r} ({_reason(exc)})") from None
    try:
        os.write(fd, b"")
    except OSError as exc:
        raise WorkbenchError(f"{what}: cannot write {str(path)!r} ({_reason(exc)})") from None
    finally:
        os.close(fd)


def check_output_file(text: str | os.PathLike, what: str = "output file") -> Path:
    """The path of a file to be written, checked now: not empty, not a directory, in an
    existing directory where this process can create files, not a full device."""
    if not str(text).strip():
        raise WorkbenchError(f"{what}: needs a file name, got {str(text)!r}")
    path = Path(text)
    if path.is_dir():
        raise WorkbenchError(f"{what}: {str(path)!r} is a directory; give a file name")
    folder = path.parent
    if not folder.exists():
        raise WorkbenchError(f"{what}: directory {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise WorkbenchError(f"{what}: {str(folder)!r} is a file, not a directory")
    if path.exists() and not path.is_file():
        _probe_special(path, what)
        return path
    if path.exists() and not os.access(path, os.W_OK):
        raise WorkbenchError(f"{what}: {str(path)!r} is read-only")
    _probe_directory(folder, what)
    return path


def check_output_dir(text: str | os.PathLike, what: str = "output directory") -> Path:
    """A directory to be created or added to: not a file; when missing, its parent exists
    and takes new files. An existing directory is left to its user (a finished sweep on
    read-only storage is still readable)."""
    if not str(text).strip():
        raise WorkbenchError(f"{what}: needs a directory name, got {str(text)!r}")
    path = Path(text)
    if path.exists():
        if not path.is_dir():
            raise WorkbenchError(f"{what}: {str(path)!r} is a file, not a directory")
        return path
    parent = path.parent
    if not parent.is_dir():
        raise WorkbenchError(f"{what}: directory {str(parent)!r} does not exist"
                             if not parent.exists() else
                             f"{what}: {str(parent)!r} is a file, not a directory")
    _probe_directory(parent, what)
    return path


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open `path` for writing through a temporary file in its directory, renamed onto it
    when the block ends without error (else removed): a full disk or an interrupted run
    never leaves a partial file. Devices and pipes (/dev/null, /dev/stdout) are written
    directly; a symbolic link's target is replaced, the link kept."""
    path = Path(path)
    binary = "b" in mode
    kwargs = {} if binary else {"encoding": "utf-8"}
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        with open(path, mode, **kwargs) as handle:
            yield handle
        return
    if path.is_symlink():  # replace the file the link names, not the link
        path = path.resolve()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """`text` to `path` atomically (see `atomic_output`); returns the path."""
    with atomic_output(path) as handle:
        handle.write(text)
    return Path(path)


def write_with(path: str | os.PathLike, writer: Callable[[IO], object]) -> Path:
    """`writer(handle)` into `path` atomically, e.g. a DataFrame's `to_csv`."""
    with atomic_output(path) as handle:
        writer(handle)
    return Path(path)
