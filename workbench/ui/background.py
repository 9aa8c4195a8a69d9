"""An app's slow callbacks in a thread of the kernel, newest request first: while one runs, the
controls stay live; a newer request supersedes it, so that quick presses and a drag through
several slider positions are priced once, at the last.

The kernel handles a widget's messages one at a time on its main thread, so a callback that
searches for 10-30 s holds every later press until it returns, and then each is priced in
turn. Here a callback only records what is asked (`ask`) and returns; a thread runs the app's
work for everything asked since it last started. A request that supersedes (an edit) makes the
work under way stop at its search's next safe point (`interrupt.abandon`: about 0.4 s on three
levels), which keeps only whole results (a layer's blocking found before stays memoized). So
does `stop` (an app's stop button), which drops what is asked too."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from workbench.hierarchy import interrupt

_LOG = logging.getLogger(__name__)


class Latest:
    """Runs `work(kinds)` in a thread for the kinds of request asked since its last start
    (`ask`); an error other than a superseded search goes to `failed(exc)` (a status line)."""

    def __init__(self, work: Callable[[frozenset[str]], None],
                 failed: Callable[[Exception], None], name: str = "workbench-app",
                 busy: Callable[[bool], None] | None = None) -> None:
        self._work, self._failed, self._name = work, failed, name
        self._busy = busy  # told True as a run starts, False as it ends (a stop button)
        self._stopping = False
        self._cond = threading.Condition()
        self._asked: set[str] = set()
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.runs = 0        # runs started
        self.superseded = 0  # runs stopped under way by a newer request
        self.stopped = 0     # `stop`s made while a run was under way

    def ask(self, kind: str, supersede: bool = False) -> None:
        """Run the work for `kind` soon; `supersede`: stop the run under way first."""
        with self._cond:
            if self._closed:
                return
            self._asked.add(kind)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, daemon=True,
                                                name=self._name)
                self._thread.start()
            elif supersede and self._running:
                interrupt.abandon(self._thread.ident)
            self._cond.notify_all()

    def _serve(self) -> None:
        try:
            while self._serve_one():
                pass
        finally:  # a later thread given this ident must not find itself abandoned
            interrupt.resume()

    def _serve_one(self) -> bool:
        """Wait for requests and run the work once for them; False once closed."""
        with self._cond:
            while not self._asked and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            kinds, self._asked = frozenset(self._asked), set()
            interrupt.resume()  # an abandonment was for the run before
            self._running = True
            self.runs += 1
        try:
            if self._busy is not None:
                self._busy(True)
            self._work(kinds)
        except interrupt.Cancelled:  # a newer request is waiting, or `stop`
            if not self._stopping:
                self.superseded += 1
        except Exception as exc:  # noqa: BLE001 - shown on the app, the thread goes on
            _LOG.exception("%s failed", self._name)
            self._failed(exc)
        finally:
            if self._busy is not None:
                self._busy(False)
            with self._cond:
                self._running = self._stopping = False
                self._cond.notify_all()
        return True

    def stop(self) -> bool:
        """Stop the run under way at its search's next safe point and drop what is asked;
        True if a run was under way."""
        with self._cond:
            self._asked.clear()
            if not self._running or self._thread is None:
                return False
            self._stopping = True
            self.stopped += 1
            interrupt.abandon(self._thread.ident)
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until nothing is asked or running (at most `timeout` s); True if so."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._asked and not self._running,
                                       timeout)

    def close(self) -> None:
        """Stop: the run under way is abandoned, nothing more is run."""
        with self._cond:
            self._closed = True
            if self._thread is not None and self._running:
                interrupt.abandon(self._thread.ident)
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(10)


__all__ = ["Latest"]
