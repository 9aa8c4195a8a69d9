"""A least-recently-used memo bounded by the bytes of its values (numpy-heavy results)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


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
