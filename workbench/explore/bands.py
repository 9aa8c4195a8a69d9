"""Fusion across cores (`explore.composed`): a layer split over every core keeps each core's
band of its output in that core's outermost on-chip level, and the next layer, split over
every core too, reads its input there; what a core reads beyond what it holds lives in the
other cores' memories and crosses the shared bus once, one DMA transfer per core it comes
from (the exchange).

A band is a core's part of a map under a split kind: by image rows (`BANDS`, "xy": every
map, the core's rows) or by output maps (`CHANNEL_BANDS`, "oc": the core's maps, every row),
as `tiling.partition` cuts them over k cores (the first `extent % k` cores one row or map
more). What a core of the next layer reads is a band too: under "xy" every map of the rows
its output rows read (its own rows and the kernel's halo), under "oc" the whole map. Both
are products of a set of maps and a set of rows, so what core j gathers from core i is
|maps read ∩ maps held by i| × |rows read ∩ rows held by i| × columns × images.

A boundary's state names the producer's kind and the consumer's: "xy" and "oc" when both
split alike, "oc>xy" (maps kept, rows read: each core gathers every map of its rows) and
"xy>oc" (rows kept, whole maps read) when they differ (`state_of`, `kinds_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.layers.spec import ConvLayer

BANDS = "xy"  # the kept-map state of a boundary fused across cores by rows
CHANNEL_BANDS = "oc"  # ... by output maps
BAND_KINDS = (BANDS, CHANNEL_BANDS)


def state_of(producer: str, consumer: str) -> str:
    """The boundary state of a map kept in `producer` bands and read in `consumer` ones."""
    return producer if producer == consumer else f"{producer}>{consumer}"


def kinds_of(state: str) -> tuple[str, str]:
    """(producer kind, consumer kind) of a boundary state."""
    producer, _, consumer = state.partition(">")
    return producer, consumer or producer


def band_of(*kept: object) -> str:
    """The first band state among kept-map states (False, True, or a band state), or ""."""
    return next((state for state in kept if isinstance(state, str) and state), "")


def row_bands(rows: int, k: int) -> list[tuple[int, int]]:
    """[start, end) of each core's rows when `rows` rows are split over k cores."""
    small, extra = divmod(rows, k)
    starts = [i * small + min(i, extra) for i in range(k)]
    return [(s, s + small + (i < extra)) for i, s in enumerate(starts)]


def read_rows(layer: ConvLayer, first: int, count: int) -> set[int]:
    """The input rows (padding excluded) that output rows first … first + count − 1 read
    (with a stride above the kernel's span, not every row between them)."""
    rows = {y * layer.Sy - layer.Py + r * layer.Dy
            for y in range(first, first + count) for r in range(layer.Ky)}
    return {row for row in rows if 0 <= row < layer.Iy}


def _held(layer: ConvLayer, kind: str, core: int, k: int) -> tuple[set[int], set[int]]:
    """(maps, rows) of `layer`'s input that core `core` holds in `kind` bands."""
    if kind == BANDS:
        low, high = row_bands(layer.Iy, k)[core]
        return set(range(layer.in_maps)), set(range(low, high))
    low, high = row_bands(layer.in_maps, k)[core]
    return set(range(low, high)), set(range(layer.Iy))


def exchange(layer: ConvLayer, state: str, starts: Sequence[int], count: int, k: int
             ) -> tuple[tuple[int, int, int], ...]:
    """Per core of a share of `layer` (its part begins at `starts` along the consumer's
    split, `count` rows or maps each; k cores in all) when its input is kept in bands of
    `state`: the input elements it gathers from the other cores, in how many transfers (one
    per core it reads from), and the elements of its own band it holds without reading them
    (the others read them from it)."""
    producer, consumer = kinds_of(state)
    extent = layer.Oy if consumer == BANDS else layer.Oc
    firsts = [band[0] for band in row_bands(extent, k)]
    per = layer.Ix * layer.On
    out = []
    for start in starts:
        core = firsts.index(start)
        rows = read_rows(layer, start, count) if consumer == BANDS else set(range(layer.Iy))
        elements, transfers = 0, 0
        for other in range(k):
            maps, held_rows = _held(layer, producer, other, k)
            part = len(maps) * len(held_rows & rows) * per
            if other == core:
                beyond = len(maps) * len(held_rows) * per - part
            elif part:
                elements, transfers = elements + part, transfers + 1
        out.append((elements, transfers, beyond))
    return tuple(out)
