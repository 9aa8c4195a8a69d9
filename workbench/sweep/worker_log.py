"""A Dask worker preload for the embedded cluster: the worker process's standard error goes
to a file (`ENV` names it) instead of the command's terminal.

The embedded cluster's worker processes share the command's stderr. What they print there is
Dask's own text (a worker the nanny restarts while the cluster closes after a stopped sweep
may print a traceback); a task's errors reach the command through its future, and the command
prints one line. `DaskExecutor(worker_log=...)` sets this preload and the file.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "WORKBENCH_WORKER_LOG"


def dask_setup(worker: Any) -> None:
    """Point file descriptor 2 of this worker process at the file `ENV` names (appended, its
    folder made); a file that cannot be opened leaves stderr as it is (the worker runs)."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return
    try:
        os.dup2(fd, 2)
    finally:
        os.close(fd)
