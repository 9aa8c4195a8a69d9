"""The tiled loop nest of a schedule as text, in the style of seed 000 listings 2–6, with the
tile sizes, trip counts and the size of every DMA transfer filled in."""

from __future__ import annotations

import numpy as np

from workbench.layers.dims import (
    LAYER_DIMS,
    SEED000_LOOP,
    SEED000_ORDER,
    SEED002_LOOP,
    SEED002_TILE,
    Dim,
    Loop,
)
from workbench.layers.spec import ConvLayer
from workbench.tiling.model import Tile, buffers, check_schedule, check_tile, dims, oc_split

_X, _Y, _C, _M, _N = Dim.X, Dim.Y, Dim.C, Dim.M, Dim.N
_LOOPS = {  # the tile loops of each schedule, outermost first
    "intra": [_N, _M, _Y, _X, _C],
    "inter_kc": [_N, _M, _Y, _X, _C],
    "inter_oc": [_N, _Y, _X, _C, _M],
    "inter_oxoyon": [_M, _C, _N, _Y, _X],
    "inter_oxoyon_dirx": [_M, _C, _N, _Y, _X],
}
_WHAT = {_X: "map columns", _Y: "map rows", _M: "output maps", _N: "batch", _C: "input maps"}


def compulsory_accesses(layer: ConvLayer) -> int:
    """Each input, weight and output element moved once (elements): the traffic floor."""
    c, h, w = layer.in_shape
    return c * h * w * layer.On + layer.params + layer.Oc * layer.Oy * layer.Ox * layer.On


def listing(layer: ConvLayer, tile: Tile, schedule: str) -> str:
    """Pseudo-C loop nest of one layer under one schedule and tile (sizes in elements)."""
    check_schedule(schedule)
    check_tile(layer, tile)
    b_in, b_w, b_out = (int(v[0]) for v in buffers(layer, np.array([tile.as_tuple()])))
    extent = dict(zip(SEED000_ORDER, dims(layer), strict=True))
    if tile.M > extent[_M]:  # a tile of whole groups: the map loop runs over all Oc maps
        extent[_M] = layer.Oc
    size = dict(zip(SEED000_ORDER, tile.as_tuple(), strict=True))
    ti_x = (tile.X - 1) * layer.Sx + layer.Kx_span
    ti_y = (tile.Y - 1) * layer.Sy + layer.Ky_span
    span = int(oc_split(layer, [tile.M])[0][0])
    maps = f"[k_c:{tile.C}]" if span == 1 else f"[g:{span}][k_c:{tile.C}]"
    get_in = (f"DMA get in[o_n:{tile.N}]{maps}[i_y:{ti_y}][i_x:{ti_x}] to B_in;"
              f"  // {b_in} elements")
    get_w = (f"DMA get w[o_c:{tile.M}][k_c:{tile.C}][0:{layer.Ky}][0:{layer.Kx}] to B_w;"
             f"  // {b_w} elements")
    out_box = f"out[o_n:{tile.N}][o_c:{tile.M}][o_y:{tile.Y}][o_x:{tile.X}]"
    get_out = f"if (k_c != 0) DMA get {out_box} to B_out;  // {b_out} elements"
    put_out = f"DMA put B_out to {out_box};  // {b_out} elements"
    compute = (f"compute tile: {tile.X}x{tile.Y}x{tile.M}x{tile.N} outputs x "
               f"{layer.Kx}x{layer.Ky}x{tile.C} taps  // "
               f"{np.prod(tile.as_tuple()) * layer.Kx * layer.Ky} MACs")
    halo = max(layer.Kx_span - layer.Sx, 0)
    fresh = tile.X * layer.Sx * ti_y * tile.C * span * tile.N
    in_box = f"in[o_n:{tile.N}]{maps}[i_y:{ti_y}]"
    body = {
        "intra": {4: [get_in, get_w, get_out, compute, put_out]},
        "inter_kc": {3: ["B_out = bias;"], 4: [get_in, get_w, compute], -3: [put_out]},
        "inter_oc": {3: [get_in], 4: [get_w, get_out, compute, put_out]},
        "inter_oxoyon": {1: [get_w], 4: [get_in, get_out, compute, put_out]},
        "inter_oxoyon_dirx": {
            1: [get_w],
            3: [f"DMA get {in_box}[i_x:{halo}] to B_in;  // halo, {b_in - fresh} elements"]
            if halo else [],
            4: [f"DMA get {in_box}[i_x+{halo}:{tile.X * layer.Sx}] to B_in;  // {fresh} new "
                "elements", get_out, compute, put_out]},
    }[schedule]
    lines = [f"// {layer.name}, schedule {schedule}: Bin {b_in}, Bw {b_w}, Bout {b_out} elements"]
    for depth, dim in enumerate(_LOOPS[schedule]):
        var, what = SEED000_LOOP[Loop(dim, 1)], _WHAT[dim]
        trips = -(-extent[dim] // size[dim])
        lines.append("  " * depth + f"for ({var} = 0; {var} < {extent[dim]}; {var} += "
                     f"{size[dim]}) {{  // {what}, {trips} tiles")
        if depth in body and depth < 4:
            lines += ["  " * (depth + 1) + text for text in body[depth]]
    lines += ["  " * 5 + text for text in body.get(4, [])]
    for depth in range(4, -1, -1):
        lines.append("  " * depth + "}")
        if depth == 4 and -3 in body:  # after the input-map loop, inside the tile loops
            lines += ["  " * 4 + text for text in body[-3]]
    return "\n".join(lines)


_DATAFLOW_LOOPS = {  # loop → what it iterates
    Loop(Dim.FX, 0): "kernel columns", Loop(Dim.FY, 0): "kernel rows",
    Loop(Dim.X, 0): "output columns in a tile", Loop(Dim.Y, 0): "output rows in a tile",
    Loop(Dim.C, 0): "input maps in a tile", Loop(Dim.M, 0): "output maps in a tile",
    Loop(Dim.N, 0): "images in a tile", Loop(Dim.X, 1): "tiles along output columns",
    Loop(Dim.Y, 1): "tiles along rows", Loop(Dim.C, 1): "tiles of input maps",
    Loop(Dim.M, 1): "tiles of output maps", Loop(Dim.N, 1): "tiles of images"}


def dataflow_listing(layer: ConvLayer, schedule, precision=None) -> str:
    """A seed 002 dataflow schedule as a loop nest (outermost first): each array's buffer is
    filled just outside the loop at its buffering level and O is written back after it, with
    the elements moved per fill and the buffer sizes (eqs. 1–3); level −1 arrays are read
    from memory at every MAC."""
    from workbench.tiling.dataflow import ARRAYS, Precision, evaluate, footprint, trip_counts

    precision = precision or Precision()
    order, levels = schedule.order, schedule.levels
    n = {k: int(v) for k, v in trip_counts(layer, schedule.tiles).items()}
    result = evaluate(layer, schedule, precision)
    names = {"I": "inputs", "W": "weights", "O": "partial sums/outputs"}
    lines: list[str] = []

    def fill(array: str, depth: int) -> None:
        inside = set(order[:levels[array] + 1])
        elems = int(footprint(layer, n, inside, array))
        what = ("partial sums if stored before, else start from zero" if array == "O"
                else "from memory")
        lines.append("  " * depth + f"fill B_{array} with {elems} {names[array]} ({what}); "
                     f"B_{array} holds {result[f'B_{array}']} elements")

    def block(index: int, depth: int) -> None:
        if index < 0:
            streamed = [x for x in ARRAYS if levels[x] == -1]
            note = f"  // from memory every time: {', '.join(streamed)}" if streamed else ""
            lines.append("  " * depth + f"O[n][of][sy][sx] += I[n][if][sy*{layer.Sy}+fy]"
                         f"[sx*{layer.Sx}+fx] * W[of][if][fy][fx];{note}")
            return
        loop = order[index]
        for array in ARRAYS:
            if levels[array] == index:
                fill(array, depth)
        lines.append("  " * depth + f"for {SEED002_LOOP[loop]} in 0..{n[loop] - 1}:  "
                     f"// {_DATAFLOW_LOOPS[loop]}")
        block(index - 1, depth + 1)
        if levels["O"] == index:
            elems = int(footprint(layer, n, set(order[:index + 1]), "O"))
            lines.append("  " * depth + f"store {elems} outputs from B_O (final values at "
                         "output width, unfinished ones as partial sums)")

    lines.append(f"// {layer.name}: tiles " + ", ".join(f"{SEED002_TILE[d]}="
                                                        f"{schedule.tiles[d]}"
                                                        for d in LAYER_DIMS)
                 + f"; buffers {result['buffer_bytes']:.0f} B, traffic "
                 f"{result['traffic_bytes']:.0f} B")
    block(len(order) - 1, 0)
    return "\n".join(lines)
