"""Cancelling a search under way, at safe points (a worker's speculative search, dropped when
the user's edit needs the worker: `prefetch`).

`request` (safe in a signal handler: it only sets a flag) asks; the search calls `check`
between its passes (before each slice and each batch of the innermost level's points), which
then raises `Cancelled`. Nothing is half-stored there: a search stores in shared memos only
whole entries (an alone table, a level's kept bounds at the end of a role order) and the
designer memoizes a result only once the search returns, so what a cancelled search leaves
behind is what a finished one would have, or less."""

from __future__ import annotations


class Cancelled(Exception):
    """The search was asked to stop (`request`)."""


_requested = False


def request() -> None:
    """Ask the search under way in this process to stop at its next safe point."""
    global _requested
    _requested = True


def clear() -> None:
    """Forget a request (before the next search starts)."""
    global _requested
    _requested = False


def check() -> None:
    """Raise `Cancelled` (once) when a stop was requested."""
    global _requested
    if _requested:
        _requested = False
        raise Cancelled("search cancelled")


__all__ = ["Cancelled", "check", "clear", "request"]
