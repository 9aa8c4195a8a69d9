"""A search's safe points: where it may be cancelled, and where it reports its progress.

Cancelling a search under way, at safe points: a worker's speculative search, dropped when
the user's edit needs the worker (`prefetch`), and an app's pricing, superseded by a newer
edit (`ui.hierarchy_view`, `background`).

Requests name a thread: the search stopped is the one running in that thread, and a search in
another thread of the process (a notebook cell beside an app's pricing) goes on. `request`
(safe in a signal handler: it only adds to a set) asks once; the search calls `check` between
its passes (before each slice and each batch of the innermost level's points), which then
raises `Cancelled`. `abandon` asks for good: every `check` in that thread raises until it
calls `resume`, so that a caller retrying a cancelled search (`prefetch`'s race) gives up
too. Nothing is half-stored there: a search stores in shared memos only whole entries (an
alone table, a level's kept bounds at the end of a role order) and the designer memoizes a
result only once the search returns, so what a cancelled search leaves behind is what a
finished one would have, or less.

Progress: a thread may `watch` its searches; each reports the fraction of its passes done
(`progress`, at every slice) to the calling thread's watcher (an app's status line); a search
that is one `part` of several (a share of a layer) reports its share of the whole."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Cancelled(Exception):
    """The search was asked to stop (`request`, `abandon`)."""


_requested: set[int] = set()  # threads whose next `check` raises
_abandoned: set[int] = set()  # threads whose every `check` raises until `resume`
_watchers: dict[int, Callable[[float], None]] = {}  # thread -> its searches' progress


def request(thread: int | None = None) -> None:
    """Ask the search under way in `thread` (an ident; default: the calling thread, which in
    a signal handler is the main thread) to stop at its next safe point."""
    _requested.add(threading.get_ident() if thread is None else thread)


def clear() -> None:
    """Forget a request for the calling thread (before its next search starts)."""
    _requested.discard(threading.get_ident())


def abandon(thread: int) -> None:
    """Stop everything `thread` searches from now until it calls `resume`."""
    _abandoned.add(thread)


def abandoned() -> bool:
    """Whether the calling thread's work was abandoned (`abandon`, not yet `resume`d)."""
    return threading.get_ident() in _abandoned


def resume() -> None:
    """The calling thread searches again: forget `abandon` and `request` for it."""
    me = threading.get_ident()
    _abandoned.discard(me)
    _requested.discard(me)


def check() -> None:
    """Raise `Cancelled` when a stop was requested for the calling thread (once) or its work
    abandoned (every time)."""
    me = threading.get_ident()
    if me in _abandoned:
        raise Cancelled("search abandoned")
    if me in _requested:
        _requested.discard(me)
        raise Cancelled("search cancelled")


def watch(watcher: Callable[[float], None] | None) -> None:
    """Send the calling thread's search progress (a fraction of 1) to `watcher` (None: stop)."""
    if watcher is None:
        _watchers.pop(threading.get_ident(), None)
    else:
        _watchers[threading.get_ident()] = watcher


def progress(fraction: float) -> None:
    """Report the search's progress (0 … 1) to the calling thread's watcher, if any."""
    watcher = _watchers.get(threading.get_ident())
    if watcher is not None:
        watcher(fraction)


@contextmanager
def part(done: float, of: float) -> Iterator[None]:
    """Within: the calling thread's search reports its progress as part `done` … `done` + 1 of
    `of` equal parts of a larger whole (a layer searched in shares), so its watcher sees the
    whole's fraction (one share's 0 … 1 would start again at each share)."""
    me = threading.get_ident()
    outer = _watchers.get(me)
    if outer is None:
        yield
        return
    _watchers[me] = lambda fraction: outer((done + min(max(fraction, 0.0), 1.0)) / of)
    try:
        yield
    finally:
        if me in _watchers:  # not stopped meanwhile
            _watchers[me] = outer


__all__ = ["Cancelled", "abandon", "abandoned", "check", "clear", "part", "progress",
           "request", "resume", "watch"]
