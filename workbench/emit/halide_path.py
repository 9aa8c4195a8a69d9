"""A layer mapping as a Halide pipeline and schedule (seed 000 §6.1), run from Python.

The pipeline is the convolution of §6.1: the accumulator starts from the bias and adds the
products over a reduction domain (kernel column innermost, then kernel row, then input map,
the reference's order), in the layer's fixed-point arithmetic, then is requantized. The
schedule expresses the mapping:

- `split` cuts x, y, the output maps, the images and the reduction's input maps into tiles
  of the mapping's sizes, and `reorder` puts the tile loops in the schedule's order
  (listings 2 to 6 of seed 000, outermost first: intra and inter_kc n, m, y, x, kc; inter_oc
  n, y, x, kc, m; inter_oxoyon(_dirx) m, kc, n, y, x);
- the local buffers are copy stages: `B_in` (the padded input) and `B_w` (the weights) are
  computed at the tile loop that refills them, `B_out` (the accumulators) is the output
  tile held across the input-map steps (inter_kc, `compute_at` the output's tile loop) or
  the accumulator at root (the other schedules, whose partial sums go to external memory);
- direction-x reuse (inter_oxoyon_dirx) is `B_in.store_at` the row loop: Halide keeps the
  window as a sliding buffer and computes only the new columns.

What Halide cannot say of a mapping here is refused in one line (`HalideRefusal`): a split
over cores and grouped layers (emitted in C only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.emit.mapping import LayerMapping, check_mapping
from workbench.errors import WorkbenchError

ORDERS = {  # tile loops, innermost first, as Halide's reorder takes them
    "intra": ("kco", "xo", "yo", "co", "no"),
    "inter_kc": ("kco", "xo", "yo", "co", "no"),
    "inter_oc": ("co", "kco", "xo", "yo", "no"),
    "inter_oxoyon": ("xo", "yo", "no", "kco", "co"),
    "inter_oxoyon_dirx": ("xo", "yo", "no", "kco", "co"),
}
AT = {  # where B_in and B_w are computed (the tile loop that refills them)
    "intra": ("kco", "kco"), "inter_kc": ("kco", "kco"), "inter_oc": ("kco", "co"),
    "inter_oxoyon": ("xo", "kco"), "inter_oxoyon_dirx": ("xo", "kco")}


class HalideRefusal(WorkbenchError):
    """A mapping the Halide path does not express (one line saying why)."""


def check_halide(m: LayerMapping) -> None:
    check_mapping(m)
    if m.cores != 1:
        raise HalideRefusal(f"layer {m.layer.name!r}: a split over {m.cores} cores is "
                            "emitted in C only (the Halide path runs one core)")
    if m.layer.groups != 1:
        raise HalideRefusal(f"layer {m.layer.name!r}: grouped layers are emitted in C only")


@dataclass
class HalideLayer:
    """The compiled pipeline's output Func, its extents and the schedule as text."""

    output: object
    extents: tuple[int, int, int, int]   # x, y, output maps, images
    schedule: list[str]
    funcs: tuple = ()  # B_in, B_w, B_out, out
    rounded: tuple[int, int, int, int] = (0, 0, 0, 0)  # extents in whole tiles
    arrays: tuple = ()  # the operand arrays Halide's buffers view


def _requantize(hl, v, shift: int, bits: int):
    """Round half away from zero on right shifts, then saturate (`quant.fixed.requantize`)."""
    if shift > 0:
        v = (v + (1 << (shift - 1)) - hl.select(v < 0, 1, 0)) >> shift
    elif shift < 0:
        v = v * (1 << -shift)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return hl.cast(hl.Int(32), hl.clamp(v, lo, hi))


def build(m: LayerMapping, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray) -> HalideLayer:
    """The pipeline over the operand codes (input NCHW int32, weights (Oc, Kc, Ky, Kx), bias
    int64 in the accumulator format) with the mapping's schedule."""
    import halide as hl

    check_halide(m)
    layer, f = m.layer, m.fmt
    t = m.shares[0].tile
    # Halide's buffers view these arrays: the HalideLayer keeps them alive
    arrays = (np.ascontiguousarray(q_in.reshape(layer.On, layer.Kc, layer.Iy, layer.Ix),
                                   dtype=np.int32),
              np.ascontiguousarray(q_w.reshape(layer.Oc, layer.Kc, layer.Ky, layer.Kx),
                                   dtype=np.int32),
              np.ascontiguousarray(q_b, dtype=np.int64))
    inp, wts, bias = (hl.Buffer(a, name) for a, name in zip(
        arrays, ("input", "weights", "bias"), strict=True))
    x, y, c, n = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("n")
    kx, ky, kc = hl.Var("kx"), hl.Var("ky"), hl.Var("kc")
    padded = hl.BoundaryConditions.constant_exterior(inp, 0)
    b_in, b_w = hl.Func("B_in"), hl.Func("B_w")
    b_in[x, y, c, n] = padded[x, y, c, n]
    # an edge tile's weight box reaches past the last map: zeros, as in the model's count
    b_w[kx, ky, kc, c] = hl.BoundaryConditions.constant_exterior(wts, 0)[kx, ky, kc, c]
    # input maps rounded up to whole TKc steps: the maps past Kc read zero inputs and zero
    # weights, adding nothing (wrap or saturate), so every step fetches a whole tile
    kc_round = -(-layer.Kc // t.C) * t.C
    r = hl.RDom([(0, layer.Kx), (0, layer.Ky), (0, kc_round)], "r")
    acc = hl.Func("B_out")
    wrap = f.overflow == "wrap"
    kind = hl.UInt(64) if wrap else hl.Int(64)
    acc[x, y, c, n] = hl.cast(kind, hl.BoundaryConditions.constant_exterior(bias, 0)[c])
    product = hl.cast(hl.Int(64), b_in[x * layer.Sx - layer.Px + r.x * layer.Dx,
                                       y * layer.Sy - layer.Py + r.y * layer.Dy, r.z, n]) \
        * hl.cast(hl.Int(64), b_w[r.x, r.y, r.z, c])
    bits = f.acc_bits
    if wrap:
        acc[x, y, c, n] = acc[x, y, c, n] + hl.cast(kind, product)
        half = 1 << (bits - 1)
        value = hl.cast(hl.Int(64), (acc[x, y, c, n] + half) & ((1 << bits) - 1)) - half
    else:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        acc[x, y, c, n] = hl.clamp(acc[x, y, c, n] + product, lo, hi)
        value = acc[x, y, c, n]
    out = hl.Func("out")
    out[x, y, c, n] = _requantize(hl, value, f.acc_fmt.fl - f.out_fmt.fl, f.out_fmt.bw)
    text = _schedule(hl, m, (out, acc, b_in, b_w), (x, y, c, n), r)
    rounded = tuple(-(-e // s) * s for e, s in zip(
        (layer.Ox, layer.Oy, layer.Oc, layer.On), (t.X, t.Y, min(t.M, layer.Oc), t.N),
        strict=True))
    return HalideLayer(out, (layer.Ox, layer.Oy, layer.Oc, layer.On), text,
                       (b_in, b_w, acc, out), rounded, arrays)


def _schedule(hl, m: LayerMapping, funcs: tuple, pure: tuple, r) -> list[str]:
    """Apply the mapping's schedule; the calls as text, one per line."""
    out, acc, b_in, b_w = funcs
    x, y, c, n = pure
    t, sched = m.shares[0].tile, m.shares[0].schedule
    toc = min(t.M, m.layer.Oc)
    names = ("xo", "xi", "yo", "yi", "co", "ci", "no", "ni")
    xo, xi, yo, yi, co, ci, no, ni = (hl.Var(s) for s in names)
    kco, kci = hl.RVar("kco"), hl.RVar("kci")
    loops = {"xo": xo, "yo": yo, "co": co, "no": no, "kco": kco}
    text = []
    inner = (r.x, r.y, kci, xi, yi, ci, ni)
    if sched == "inter_kc":  # B_out: the output tile, held over every kc step
        up = hl.TailStrategy.RoundUp
        out.split(x, xo, xi, t.X, up).split(y, yo, yi, t.Y, up).split(c, co, ci, toc, up) \
            .split(n, no, ni, t.N, up).reorder(xi, yi, ci, ni, xo, yo, co, no)
        acc.compute_at(out, xo)
        acc.update().split(r.z, kco, kci, t.C).reorder(r.x, r.y, kci, x, y, c, n, kco)
        text += [f"out.split(x, xo, xi, {t.X}).split(y, yo, yi, {t.Y})"
                 f".split(c, co, ci, {toc}).split(n, no, ni, {t.N})"
                 ".reorder(xi, yi, ci, ni, xo, yo, co, no)",
                 "B_out.compute_at(out, xo)",
                 f"B_out.update().split(r.z, kco, kci, {t.C})"
                 ".reorder(r.x, r.y, kci, x, y, c, n, kco)"]
        at_in, at_w = kco, kco
    else:  # the accumulators at root: partial sums in external memory between kc steps
        acc.compute_root()
        up = hl.TailStrategy.RoundUp
        acc.update().split(x, xo, xi, t.X, up).split(y, yo, yi, t.Y, up) \
            .split(c, co, ci, toc, up).split(n, no, ni, t.N, up).split(r.z, kco, kci, t.C) \
            .reorder(*inner, *(loops[v] for v in ORDERS[sched]))
        text += ["B_out.compute_root()",
                 f"B_out.update().split(x, xo, xi, {t.X}).split(y, yo, yi, {t.Y})"
                 f".split(c, co, ci, {toc}).split(n, no, ni, {t.N})"
                 f".split(r.z, kco, kci, {t.C})"
                 f".reorder(r.x, r.y, kci, xi, yi, ci, ni, {', '.join(ORDERS[sched])})"]
        at_in, at_w = (loops[v] for v in AT[sched])
    b_in.compute_at(acc, at_in)
    b_w.compute_at(acc, at_w)
    text += [f"B_in.compute_at(B_out, {AT[sched][0]})",
             f"B_w.compute_at(B_out, {AT[sched][1]})"]
    if sched == "inter_oxoyon_dirx" and m.layer.Kx_span > m.layer.Sx:  # columns overlap
        b_in.store_at(acc, yo)
        text.append("B_in.store_at(B_out, yo)  # sliding window along x")
    if t.C < m.layer.Kc:
        text.append(f"# TKc={t.C} < Kc={m.layer.Kc} splits the reduction: Halide IDSP (seed 000 "
                    "§6.2) cannot run such a tiled reduction on the host")
    return text


def run_halide(m: LayerMapping, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray,
               traced: bool = False) -> tuple[np.ndarray, list[str], dict[str, int]]:
    """Output codes in the emitted program's layout (n, 1, map, row, column), the schedule's
    lines, and with `traced` the elements Halide's tracing saw stored into B_in and B_w
    (the input and weight elements fetched into the local buffers)."""
    h = build(m, q_in, q_w, q_b)
    ox, oy, oc, on = h.extents
    counts: dict[str, int] = {}
    if traced:
        for func in h.funcs[:2]:
            func.trace_stores()
        text = _captured(lambda: h.output.realize(list(h.rounded)))
        result = text[0]
        for line in text[1].splitlines():
            if line.startswith("Store "):
                name = line.split()[1].split(".")[0].split("$")[0]
                counts[name] = counts.get(name, 0) + 1
    else:
        result = h.output.realize(list(h.rounded))
    codes = np.asarray(result).astype(np.int64)[:on, :oc, :oy, :ox]  # numpy: (n, c, y, x)
    return codes.reshape(on, 1, oc, oy, ox), h.schedule, counts


def _captured(work) -> tuple[object, str]:
    """(work(), what it printed): Halide's trace goes through its print handler, which the
    Python binding sends to sys.stdout (or, without it, to the process's stdout)."""
    import contextlib
    import io
    import os
    import sys
    import tempfile

    sys.stdout.flush()
    text = io.StringIO()
    with tempfile.TemporaryFile(mode="w+") as sink:
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            with contextlib.redirect_stdout(text):
                result = work()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        sink.seek(0)
        return result, text.getvalue() + sink.read()
