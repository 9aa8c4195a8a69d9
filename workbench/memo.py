"""Memos passed in, never held by a module: `Caches`, the stores of one session (an app, a
command, a sweep task), and `ByteLRU`, a least-recently-used memo bounded by the bytes of its
values (numpy-heavy results)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class ByteLRU:
    """Values by key, the least recently used dropped once their bytes pass `limit_bytes`
    (the newest value always stays, whatever its size). Thread-safe."""

    def __init__(self, limit_bytes: int, size: Callable[[Any], int]) -> None:
        self.limit_bytes = limit_bytes
        self._size = size
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: Hashable, value: Any) -> Any:
        """Store and return the value (the stored one if another thread was first)."""
        nbytes = self._size(value)
        with self._lock:
            if key not in self._items:
                self._items[key] = (value, nbytes)
                self._bytes += nbytes
            self._items.move_to_end(key)
            while self._bytes > self.limit_bytes and len(self._items) > 1:
                self._bytes -= self._items.popitem(last=False)[1][1]
            return self._items[key][0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


class Caches:
    """The memos of one session: each consumer names its store and makes it on first use
    (`store`); whoever starts the work (an app, a CLI command, a sweep task) makes one
    `Caches` and passes it down, so nothing is shared between sessions unless handed over.
    A function given none makes its own for the call. Thread-safe."""

    def __init__(self) -> None:
        self._stores: dict[str, Any] = {}
        self._lock = threading.Lock()

    def store(self, name: str, make: Callable[[], T]) -> T:
        """The store called `name`, made by `make()` the first time it is asked for."""
        with self._lock:
            if name not in self._stores:
                self._stores[name] = make()
            return self._stores[name]

    def clear(self) -> None:
        """Forget every store (each is made again when next asked for)."""
        with self._lock:
            self._stores.clear()

    @property
    def nbytes(self) -> int:
        """Bytes held by the stores that count theirs (`nbytes`)."""
        with self._lock:
            stores = list(self._stores.values())
        return sum(int(getattr(s, "nbytes", 0)) for s in stores)

    def __contains__(self, name: str) -> bool:
        return name in self._stores


def caches_or_new(caches: Caches | None) -> Caches:
    """`caches`, or a new `Caches` for one call (nothing kept after it)."""
    return Caches() if caches is None else caches
