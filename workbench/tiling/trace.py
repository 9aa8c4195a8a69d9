"""Literal execution of the tiled loop nests of seed 000 listings 2–6, counting DMA traffic.

Every DMA get/put moves a box of array coordinates into or out of a local buffer. Before each
tile's compute the trace checks that B_in, B_w and B_out hold exactly what the tile reads (so a
schedule that claimed reuse it does not have would fail), and at the end that every output
element received all Kc contributions. `model` mode moves full tiles with padding (must equal
`counts`); `physical` mode clips edge tiles and padding to real data (never more than `counts`).
The output buffer starts from the bias on chip: the first Kc step of an output tile loads
nothing (listing 2), so listing 3's initial `get out` is not a transfer here.

Input boxes span (T − 1)·S + (K − 1)·D + 1 columns/rows from o·S − P (start padding); physical
mode clips them to the real Ix × Iy, which the end padding fixes. A grouped layer runs block by
block: one group at a time, or the g whole groups a tile with TOc = g·Oc/groups covers, the
boxes carrying the group range (see `_Machine`).
"""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.tiling.model import (
    Counts,
    Tile,
    buffers,
    check_schedule,
    check_tile,
    dims,
)

Box = tuple[tuple[int, int], ...]
Offset = tuple[int, int, int]  # added to image, output map (within a group), output row


class _Machine:
    """Local buffers and external-memory state of one traced block of groups.

    Arrays of a dense layer (groups = 1) are input (n, c, y, x), weights (oc, kc) and outputs
    (n, oc, y, x); a grouped layer's carry the group apart: input (n, group, kc, y, x), weights
    (group, oc, kc), outputs (n, group, oc, y, x), oc and kc counted within the group. A
    machine runs the groups [g0, g0 + span) of one block: one group, or the `span` groups a
    tile with TOc > Oc/groups covers (then the output-map loop has a single step)."""

    def __init__(self, layer: ConvLayer, tile: Tile, physical: bool, full: ConvLayer | None = None,
                 offset: Offset = (0, 0, 0), group: tuple[int, int] = (0, 1),
                 log: list | None = None, group_base: int = 0) -> None:
        """`layer` is the part that is tiled; boxes are placed at `offset` in the arrays of
        `full` (default: layer itself), whose padding and input size they use, its groups from
        `full`'s group `group_base` on. `group` is (first group, groups per tile) within
        `layer`. `log` collects every DMA operation as (array, "get"/"put", box, elements)."""
        self.layer, self.tile, self.physical = layer, tile, physical
        self.full, self.offset, self.log = full or layer, offset, log
        self.grouped = self.full.groups > 1
        self.g0, self.span = group
        self.dg = group_base
        self.real_groups = min(self.span, layer.groups - self.g0)
        self.macs = 0
        self.Ox, self.Oy, self.Oc, self.On, self.Kc = dims(layer)
        self.toc = min(tile.M, self.Oc)  # output maps of a tile within each group
        self.traffic = {"in": 0, "w": 0, "out": 0}
        self.transfers = 0
        self.b_in: Box | None = None
        self.b_w: Box | None = None
        self.b_out: tuple[Box, frozenset] | None = None
        self.stored: dict[Box, frozenset] = {}
        self.n_tiles = 0
        self.peak = (0, 0, 0)

    def extent(self, start: int, size: int, limit: int) -> int:
        return min(size, limit - start) if self.physical else size

    def groups(self) -> tuple[tuple[int, int], ...]:
        """The group range of every box of this block (none for a dense layer)."""
        if not self.grouped:
            return ()
        g0 = self.dg + self.g0
        return ((g0, g0 + (self.real_groups if self.physical else self.span)),)

    def part(self) -> Box:
        """The outputs this block computes, in output coordinates of `full`."""
        dn, dc, dy = self.offset
        g0 = self.dg + self.g0
        g = ((g0, g0 + self.real_groups),) if self.grouped else ()
        return ((dn, dn + self.On), *g, (dc, dc + self.Oc), (dy, dy + self.Oy), (0, self.Ox))

    def _move(self, array: str, box: Box, real: Box, scale: int = 1, way: str = "get") -> None:
        moved = _volume(tuple(_clip(b, r) for b, r in zip(box, real, strict=True))) \
            if self.physical else _volume(box)
        if moved or not self.physical:
            self.transfers += 1
        self.traffic[array] += moved * scale
        if self.log is not None:
            self.log.append((array, way, box, moved * scale))

    def in_box(self, on: int, kc: int, oy: int, ox: int, tx: int | None = None) -> Box:
        layer, t, (dn, _, dy) = self.full, self.tile, self.offset
        tn, tk = self.extent(on, t.N, self.On), self.extent(kc, t.C, self.Kc)
        ty = self.extent(oy, t.Y, self.Oy)
        tx = self.extent(ox, t.X, self.Ox) if tx is None else tx
        y0, x0 = (oy + dy) * layer.Sy - layer.Py, ox * layer.Sx - layer.Px
        on = on + dn
        return ((on, on + tn), *self.groups(), (kc, kc + tk),
                (y0, y0 + (ty - 1) * layer.Sy + layer.Ky_span),
                (x0, x0 + (tx - 1) * layer.Sx + layer.Kx_span))

    def in_real(self) -> Box:
        big = 1 << 60
        return ((0, big),) * (3 if self.grouped else 2) + ((0, self.full.Iy), (0, self.full.Ix))

    def w_box(self, oc: int, kc: int) -> Box:
        t, d = self.tile, self.offset[1]
        return (*self.groups(), (oc + d, oc + d + self.extent(oc, self.toc, self.Oc)),
                (kc, kc + self.extent(kc, t.C, self.Kc)))

    def out_box(self, on: int, oc: int, oy: int, ox: int) -> Box:
        t, (dn, dc, dy) = self.tile, self.offset
        return ((on + dn, on + dn + self.extent(on, t.N, self.On)), *self.groups(),
                (oc + dc, oc + dc + self.extent(oc, self.toc, self.Oc)),
                (oy + dy, oy + dy + self.extent(oy, t.Y, self.Oy)),
                (ox, ox + self.extent(ox, t.X, self.Ox)))

    # DMA operations
    def get_in(self, box: Box) -> None:
        self._move("in", box, self.in_real())
        self.b_in = box

    def get_in_columns(self, box: Box, keep_columns: int) -> None:
        """Append columns to B_in (direction-x reuse), keeping only the last keep_columns."""
        self._move("in", box, self.in_real())
        if self.b_in is None or self.b_in[:-1] != box[:-1] or self.b_in[-1][1] != box[-1][0]:
            self.b_in = box
        else:
            hi = box[-1][1]
            self.b_in = (*box[:-1], (max(self.b_in[-1][0], hi - keep_columns), hi))

    def get_w(self, oc: int, kc: int) -> None:
        box = self.w_box(oc, kc)
        self._move("w", box, box, scale=self.layer.Kx * self.layer.Ky)
        self.b_w = box

    def start_out(self, key: Box) -> None:
        self.b_out = (key, frozenset())

    def get_out(self, key: Box) -> None:
        self._move("out", key, key)
        self.b_out = (key, self.stored.get(key, frozenset()))

    def put_out(self) -> None:
        key, state = self.b_out
        self._move("out", key, key, way="put")
        self.stored[key] = state

    def compute(self, on: int, oc: int, oy: int, ox: int, kc: int) -> None:
        need_in, need_w = self.in_box(on, kc, oy, ox), self.w_box(oc, kc)
        key = self.out_box(on, oc, oy, ox)
        if self.b_in is None or not _inside(need_in, self.b_in):
            raise WorkbenchError(f"trace: input {need_in} not in B_in {self.b_in}")
        if self.b_w != need_w:
            raise WorkbenchError(f"trace: weights {need_w} not in B_w {self.b_w}")
        if self.b_out is None or self.b_out[0] != key or kc in self.b_out[1]:
            raise WorkbenchError(f"trace: B_out does not hold partial sums of {key}")
        self.b_out = (key, self.b_out[1] | {kc})
        self.n_tiles += 1
        self.macs += self.layer.Kx * self.layer.Ky * self.real_groups * _volume(tuple(
            (s, min(s + t, d)) for s, t, d in zip((on, oc, oy, ox, kc), (
                self.tile.N, self.toc, self.tile.Y, self.tile.X, self.tile.C),
                (self.On, self.Oc, self.Oy, self.Ox, self.Kc), strict=True)))
        live = (_volume(self.b_in), _volume(self.b_w) * self.layer.Kx * self.layer.Ky,
                _volume(key))
        self.peak = tuple(max(a, b) for a, b in zip(self.peak, live, strict=True))

    def finish(self) -> None:
        """Every output element must have received every Kc step."""
        all_kc = frozenset(range(0, self.Kc, self.tile.C))
        done = [key for key, state in self.stored.items() if state == all_kc]
        if self.physical and sum(_volume(key) for key in done) != _volume(self.part()):
            raise WorkbenchError("trace: some outputs were not completed")
        if len(done) != len(self.stored):
            raise WorkbenchError("trace: an output tile was stored without all Kc steps")


def _volume(box: Box) -> int:
    volume = 1
    for lo, hi in box:
        volume *= max(0, hi - lo)
    return volume


def _clip(box: tuple[int, int], real: tuple[int, int]) -> tuple[int, int]:
    return (max(box[0], real[0]), min(box[1], real[1]))


def _inside(inner: Box, outer: Box) -> bool:
    return all(o[0] <= i[0] and i[1] <= o[1] for i, o in zip(inner, outer, strict=True))


def _run(m: _Machine, schedule: str) -> None:
    t = m.tile
    xs, ys = range(0, m.Ox, t.X), range(0, m.Oy, t.Y)
    cs, ns, ks = range(0, m.Oc, m.toc), range(0, m.On, t.N), range(0, m.Kc, t.C)

    def step(on: int, oc: int, oy: int, ox: int, kc: int, load_out: bool = True) -> None:
        key = m.out_box(on, oc, oy, ox)
        if load_out and kc != 0:
            m.get_out(key)
        elif load_out:
            m.start_out(key)
        m.compute(on, oc, oy, ox, kc)

    if schedule == "intra":  # listing 2
        for on in ns:
            for oc in cs:
                for oy in ys:
                    for ox in xs:
                        for kc in ks:
                            m.get_in(m.in_box(on, kc, oy, ox))
                            m.get_w(oc, kc)
                            step(on, oc, oy, ox, kc)
                            m.put_out()
    elif schedule == "inter_kc":  # listing 3
        for on in ns:
            for oc in cs:
                for oy in ys:
                    for ox in xs:
                        m.start_out(m.out_box(on, oc, oy, ox))
                        for kc in ks:
                            m.get_in(m.in_box(on, kc, oy, ox))
                            m.get_w(oc, kc)
                            step(on, oc, oy, ox, kc, load_out=False)
                        m.put_out()
    elif schedule == "inter_oc":  # listing 4
        for on in ns:
            for oy in ys:
                for ox in xs:
                    for kc in ks:
                        m.get_in(m.in_box(on, kc, oy, ox))
                        for oc in cs:
                            m.get_w(oc, kc)
                            step(on, oc, oy, ox, kc)
                            m.put_out()
    else:  # listings 5 and 6
        _run_weight_stationary(m, schedule, xs, ys, cs, ns, ks, step)


def _run_weight_stationary(m: _Machine, schedule: str, xs, ys, cs, ns, ks, step) -> None:
    layer = m.layer
    overlap = max(layer.Kx_span - layer.Sx, 0)
    window = (m.tile.X - 1) * layer.Sx + layer.Kx_span
    for oc in cs:
        for kc in ks:
            m.get_w(oc, kc)
            for on in ns:
                for oy in ys:
                    if schedule == "inter_oxoyon_dirx" and overlap:
                        first = m.in_box(on, kc, oy, 0)
                        x0 = first[-1][0]
                        m.get_in_columns((*first[:-1], (x0, x0 + overlap)), window)
                    for ox in xs:
                        box = m.in_box(on, kc, oy, ox)
                        if schedule == "inter_oxoyon_dirx" and overlap:
                            lo, hi = box[-1]
                            m.get_in_columns((*box[:-1], (lo + overlap, hi)), window)
                        else:
                            m.get_in(box)
                        step(on, oc, oy, ox, kc)
                        m.put_out()


def _execute(layer: ConvLayer, tile: Tile, schedule: str, mode: str,
             full: ConvLayer | None = None, base: tuple[int, int, int] = (0, 0, 0),
             log: list | None = None, group_base: int = 0) -> tuple[Counts, list[_Machine]]:
    """Run every block of groups of `layer` (placed at images, output maps per group, rows
    `base` and group `group_base` of `full`); the Counts and the machines, one per block
    (`model.oc_split`)."""
    check_schedule(schedule)
    check_tile(layer, tile)
    if mode not in ("model", "physical"):
        raise WorkbenchError(f"trace mode must be 'model' or 'physical', got {mode!r}")
    full = full or layer
    totals = {"in": 0, "w": 0, "out": 0}
    transfers = n_tiles = 0
    peak = (0, 0, 0)
    machines = []
    ocg = layer.Oc // layer.groups
    span = tile.M // ocg if tile.M > ocg else 1   # whole groups one tile covers
    for g0 in range(0, layer.groups, span):
        machine = _Machine(layer, tile, physical=(mode == "physical"), full=full, offset=base,
                           group=(g0, span), log=log, group_base=group_base)
        _run(machine, schedule)
        machine.finish()
        for key in totals:
            totals[key] += machine.traffic[key]
        transfers += machine.transfers
        n_tiles += machine.n_tiles
        peak = machine.peak
        machines.append(machine)
    if mode == "model":
        import numpy as np

        expected = tuple(int(b[0]) for b in buffers(layer, np.array([tile.as_tuple()])))
        if peak != expected:
            raise WorkbenchError(f"trace: live buffers {peak} differ from Bin, Bw, Bout "
                                 f"{expected}")
    return Counts(in_accesses=totals["in"], w_accesses=totals["w"], out_accesses=totals["out"],
                  dma_transfers=transfers, n_tiles=n_tiles, bin=peak[0], bw=peak[1],
                  bout=peak[2]), machines


def trace(layer: ConvLayer, tile: Tile, schedule: str, mode: str = "model") -> Counts:
    """Execute the schedule's loop nest; Counts with the peak live buffer volumes as bin/bw/bout."""
    return _execute(layer, tile, schedule, mode)[0]
