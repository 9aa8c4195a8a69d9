"""Fusion across cores by image rows (`explore.composed`): a conv layer split by output rows
over every core keeps each core's band of its output in that core's outermost on-chip level,
and the next conv layer, split the same way, reads its input band there. A core's input band
reaches past its own rows by the kernel's halo; those rows live in the neighbours' memories
and cross the shared bus once, one DMA transfer per neighbour (the halo exchange).

Bands are those of `tiling.partition` over k cores: the first `rows % k` cores one row more.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.layers.spec import ConvLayer

BANDS = "xy"  # the kept-map state of a boundary fused across cores by rows


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


def halo(layer: ConvLayer, starts: Sequence[int], count: int, k: int
         ) -> tuple[tuple[int, int], ...]:
    """Per core of a share (its output rows begin at `starts`, `count` rows each; k cores in
    all, split as `row_bands`): the input elements it fetches from other cores' bands, and in
    how many transfers (one per core whose band it reads from)."""
    own = row_bands(layer.Iy, k)
    first_rows = [band[0] for band in row_bands(layer.Oy, k)]
    per_row = layer.Ix * layer.in_maps * layer.On
    out = []
    for start in starts:
        core = first_rows.index(start)
        read = read_rows(layer, start, count)
        elements, transfers = 0, 0
        for other, (band_low, band_high) in enumerate(own):
            rows = sum(band_low <= row < band_high for row in read)
            if other != core and rows:
                elements, transfers = elements + rows * per_row, transfers + 1
        out.append((elements, transfers))
    return tuple(out)
