"""The worker processes of `workbench.hierarchy.prefetch`: each a `python -m` process of this
module (no fork of a kernel's threads, no import of a script's main) that reads the designer's
(layers, precision, size energy), then (hierarchy, layer index[, share]) items from its stdin,
and writes each one's result to its stdout; SIGUSR1 (`PREEMPT`) makes it drop the search under
way at its next safe point (`interrupt`)."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

from workbench.hierarchy import interrupt
from workbench.hierarchy.codesign import Codesigner
from workbench.hierarchy.levels import Hierarchy

Key = tuple  # (levels, mac_energy_pj, datapath): what a layer's search depends on
# the signal asking a worker to drop its search (none where the platform has no SIGUSR1: a
# search under way then runs to its end)
PREEMPT = getattr(signal, "SIGUSR1", None)


def key_of(hierarchy: Hierarchy) -> Key:
    """The part of a hierarchy a search reads (its name is not)."""
    return hierarchy.levels, hierarchy.mac_energy_pj, hierarchy.datapath


def default_workers() -> int:
    """Cores left beside the app's own process, at most 2 (each worker keeps its own search
    memos, up to about 1 GB on three on-chip levels)."""
    return max(1, min(2, (os.cpu_count() or 2) - 1))


def serve(inbox, outbox) -> None:
    """A worker: read the designer's (layers, precision, size energy), say it is ready, then
    read (hierarchy, layer index[, share]) items; write back each one's result (None: no
    blocking fits; a share's: `Codesigner.layer_share`), or that it was cancelled
    (`interrupt.request`, on SIGUSR1)."""
    designer = Codesigner(*pickle.load(inbox))
    shared: tuple = ((), [])  # the layer searched in shares last, and its answers here
    pickle.dump("ready", outbox)  # the signal handlers are in place: it may be interrupted
    outbox.flush()
    while True:
        try:
            hierarchy, index, *share = pickle.load(inbox)
        except EOFError:  # the app closed the pipe or ended
            return
        layer = designer.layers[index]
        if share and shared[0] != (key_of(hierarchy), index):
            shared = ((key_of(hierarchy), index), [])
        try:
            if share:  # started from this layer's other shares here
                shared[1].append(designer.layer_share(layer, hierarchy, share[0], shared[1]))
                reply = ("ok", shared[1][-1])
            else:
                reply = ("ok", designer.layer_result(layer, hierarchy))
        except interrupt.Cancelled:
            reply = ("cancelled", None)
        except Exception as exc:  # noqa: BLE001  (the app searches it itself and says why)
            reply = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(reply, outbox)
        outbox.flush()
        # a request for this item come after its reply is void; one come after this, for the
        # next item (sent as soon as it is given, maybe before it is read here), is kept. (A
        # request for this item sent before the app read its reply may still stop the next
        # one: the app then wants that again, a stray.)
        interrupt.clear()


def start_worker(designer: Codesigner) -> subprocess.Popen:
    """A worker process (`python -m` this module: no fork of the app's threads, and no import
    of the app's main script), its stdin/stdout the pipes."""
    path = os.pathsep.join(p for p in (*sys.path, os.environ.get("PYTHONPATH", "")) if p)
    process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": path})
    pickle.dump((designer.layers, designer.precision, designer.size_energy), process.stdin)
    process.stdin.flush()
    return process


def stop_workers(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()


__all__ = ["PREEMPT", "Key", "default_workers", "key_of", "serve", "start_worker",
           "stop_workers"]


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a kernel interrupt is for the app's work
    if PREEMPT:
        signal.signal(PREEMPT, lambda *_: interrupt.request())
    sys.stdout = sys.stderr  # the pipe to the app carries results only
    serve(sys.stdin.buffer, sys.__stdout__.buffer)
