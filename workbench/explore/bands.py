"""Fusion across cores (`explore.composed`): a layer split over every core keeps each core's
band of its output in that core's outermost on-chip level, and the next layer, split the
same way, reads its input there; what a core reads beyond its own band lives in the other
cores' memories and crosses the shared bus once, one DMA transfer per core it comes from.

- By image rows (`BANDS`, "xy"): conv layers split by output rows. A core's input band
  reaches past its own rows by the kernel's halo (`halo`).
- By output maps (`CHANNEL_BANDS`, "oc"): conv or fc layers split by output maps. Each core
  keeps its maps of the output; the next layer's every core reads every input map, so it
  gathers the other cores' maps (`channel_halo`) and holds the whole input map.

Bands are those of `tiling.partition` over k cores: the first `extent % k` cores one row or
map more.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.layers.spec import ConvLayer

BANDS = "xy"  # the kept-map state of a boundary fused across cores by rows
CHANNEL_BANDS = "oc"  # ... by output maps
BAND_KINDS = (BANDS, CHANNEL_BANDS)


def band_of(*kept: object) -> str:
    """The band kind among kept-map states (False, True, or a kind of `BAND_KINDS`), or ""."""
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


def channel_halo(layer: ConvLayer, starts: Sequence[int], k: int
                 ) -> tuple[tuple[int, int], ...]:
    """Per core of an output-map share of a dense layer (its maps begin at `starts`; k cores
    in all): the input elements it gathers from the other cores' map bands (every input map
    but its own band, `row_bands` of the input maps), and in how many transfers (one per
    core whose band is not empty)."""
    own = row_bands(layer.in_maps, k)
    first_maps = [band[0] for band in row_bands(layer.Oc, k)]
    per_map = layer.Ix * layer.Iy * layer.On
    out = []
    for start in starts:
        core = first_maps.index(start)
        others = [hi - lo for other, (lo, hi) in enumerate(own) if other != core and hi > lo]
        out.append((sum(others) * per_map, len(others)))
    return tuple(out)


def fetched(layer: ConvLayer, kind: str, starts: Sequence[int], count: int, k: int
            ) -> tuple[tuple[int, int], ...]:
    """Per core: (elements, transfers) read from other cores' bands when the input is kept
    in bands of `kind` ("": none)."""
    if kind == BANDS:
        return halo(layer, starts, count, k)
    if kind == CHANNEL_BANDS:
        return channel_halo(layer, starts, k)
    return ()
