"""A memory level's capacity split into banks (arrays sharing bytes), and resizing a split
level in proportion: shared by the platform's level schema and the hierarchy model, which
must not import the platform package."""

from __future__ import annotations

from typing import Any

ARRAYS = ("I", "W", "O")


def capacity_banks_of(value: dict) -> list[tuple[str, Any]]:
    """A per-array capacity's banks, (arrays, bytes as given) per key in order: each key
    names the arrays sharing its bytes ('I', 'I+O' or 'IO': letters I, W, O, '+' between
    them optional), every one of I, W, O in exactly one key (a bank of 0 B: its arrays never
    live at the level). ValueError stating the rule otherwise."""
    banks, seen = [], {}
    for key, size in value.items():
        arrays = key.replace("+", "") if isinstance(key, str) else ""
        if not arrays or not set(arrays) <= set(ARRAYS) or len(set(arrays)) != len(arrays):
            raise ValueError(f"a key must name arrays of I, W, O sharing its bytes ('I', "
                             f"'I+O', ...), got {key!r}")
        for array in arrays:
            if array in seen:
                raise ValueError(f"array {array} is in two keys ({seen[array]!r}, {key!r}); "
                                 "each of I, W, O goes in exactly one")
            seen[array] = key
        banks.append(("".join(a for a in ARRAYS if a in arrays), size))
    missing = [a for a in ARRAYS if a not in seen]
    if missing:
        raise ValueError(f"array(s) {', '.join(missing)} in no key: each of I, W, O goes in "
                         "exactly one (0 B: never held here)")
    return banks


def scaled_parts(parts: list[int], size: int) -> list[int]:
    """`size` bytes in the proportions of `parts` (a split level's or its banks'): rounded
    down, then the bytes left to the parts of largest remainder (ties: the earlier part), so
    that they sum to `size`; a part is 0 only when it was, and then at least 1 B (taken from
    the largest part, the earlier on ties)."""
    whole = sum(parts)
    shares = [divmod(p * size, whole) for p in parts]
    out = [q for q, _ in shares]
    for i in sorted(range(len(parts)), key=lambda i: -shares[i][1])[:size - sum(out)]:
        out[i] += 1
    for i, p in enumerate(parts):
        if p and not out[i]:
            out[max(range(len(out)), key=out.__getitem__)] -= 1
            out[i] = 1
    return out
