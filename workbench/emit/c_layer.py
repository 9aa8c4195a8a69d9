"""C99 source of one layer mapping: per share, the seed 000 loop nest of its schedule with a
`wb_get`/`wb_put` (runtime `wb_dma.h`) for every DMA operation into statically sized
scratchpad buffers, and the intra-tile MAC loops in the layer's fixed-point arithmetic.

Cores run one after another, an outer loop over each share's cores, every core counted
apart. The buffers hold Bin, Bw, Bout elements of the tile (`tiling.model.buffers`), twice
with double buffering (each get fills the buffer the previous one did not). An output tile
starts from the bias on chip and is requantized to the output format after its last input-map
step, before its final put. A grouped layer runs block by block (one group, or the whole
groups a tile spans), as `tiling.trace` does.
"""

from __future__ import annotations

import re

from workbench.emit.mapping import LayerMapping, check_mapping
from workbench.layers.spec import ConvLayer
from workbench.tiling.model import TILE_DIMS
from workbench.tiling.partition import Share, shares

C_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-O2")


def c_name(name: str) -> str:
    """A C identifier from a layer name."""
    ident = re.sub(r"\W", "_", name)
    return ident if re.match(r"[A-Za-z_]", ident) else "l_" + ident


def array_dims(layer: ConvLayer) -> dict[str, tuple[int, ...]]:
    """The 5-D extents of the layer's arrays in external memory (see `emit.mapping`)."""
    g = layer.groups
    ocg = layer.Oc // g
    return {"in": (layer.On, g, layer.Kc, layer.Iy, layer.Ix),
            "w": (1, g, ocg, layer.Kc, layer.Ky * layer.Kx),
            "out": (layer.On, g, ocg, layer.Oy, layer.Ox)}


def _accumulator(fmt, ring: str) -> dict[str, str]:
    """The register's C type, one MAC step and its final value: a wrapping register adds in
    unsigned arithmetic (exact modulo 2^64, which 2^bits divides) and wraps once; a
    saturating one clips after every product, in the order (input map, kernel row, kernel
    column) of the reference."""
    product = f"(int64_t)irow[{ring}] * wrow[kx]"
    if fmt.overflow == "saturate":
        return {"acc_type": "int64_t", "step": f"acc = wb_saturate(acc + {product}, "
                                                f"{fmt.acc_bits})", "read": "acc"}
    return {"acc_type": "uint64_t", "step": f"acc += (uint64_t)({product})",
            "read": f"wb_wrap_u(acc, {fmt.acc_bits})"}


def _share_code(m: LayerMapping, index: int, part: Share) -> str:
    """`static void P_share(core, dn, dc, dy, dg)` running one core of a share."""
    full, sh, share = m.layer, part.layer, m.shares[index]
    t, sched = share.tile, share.schedule
    p = f"{c_name(full.name)}_s{index}"
    ocg, kc, oy, ox, on, groups = sh.Oc // sh.groups, sh.Kc, sh.Oy, sh.Ox, sh.On, sh.groups
    toc = min(t.M, ocg)
    span = t.M // ocg if t.M > ocg else 1
    by, bx = (t.Y - 1) * full.Sy + full.Ky_span, (t.X - 1) * full.Sx + full.Kx_span
    kk = full.Kx * full.Ky
    nbuf = 2 if m.double_buffer else 1
    overlap = max(full.Kx_span - full.Sx, 0) if sched == "inter_oxoyon_dirx" else 0
    ring = "wb_mod(X, BX)" if overlap else "X - c->in_lo[4]"
    fmt = m.fmt
    shift = fmt.acc_fmt.fl - fmt.out_fmt.fl
    full_ocg = full.Oc // full.groups
    labels = " ".join(f"{k}={v}" for k, v in zip(TILE_DIMS, t.as_tuple(), strict=True))
    acc = _accumulator(fmt, ring)
    acc_type, step, read = acc["acc_type"], acc["step"], acc["read"]
    return f"""
/* share {index}: {share.cores} core(s) of {sh.name}, schedule {sched}, tile
 * {labels} */
#define BY {by}
#define BX {bx}
static int32_t {p}_in[{nbuf}][{t.N * span * t.C * by * bx}];
static int32_t {p}_w[{nbuf}][{span * toc * t.C * kk}];
static int64_t {p}_out[{nbuf}][{t.N * span * toc * t.Y * t.X}];

typedef struct {{
    wb_array *a_in, *a_w, *a_out;
    const int64_t *bias;
    int core, si, sw, so;
    long dn, dc, dy, dg, g0, gb, real_g;
    long in_lo[5], in_dim[5];
}} {p}_ctx;

static long {p}_ext(long start, long size, long limit)
{{
    return wb_physical && limit - start < size ? limit - start : size;
}}

static long {p}_min(long a, long b)
{{
    return a < b ? a : b;
}}

static void {p}_in_box(const {p}_ctx *c, long on, long kc, long oy, long ox, long lo[5],
                       long hi[5])
{{
    long tn = {p}_ext(on, {t.N}, {on}), tk = {p}_ext(kc, {t.C}, {kc});
    long ty = {p}_ext(oy, {t.Y}, {oy}), tx = {p}_ext(ox, {t.X}, {ox});
    lo[0] = on + c->dn; hi[0] = lo[0] + tn;
    lo[1] = c->dg + c->g0; hi[1] = lo[1] + c->gb;
    lo[2] = kc; hi[2] = kc + tk;
    lo[3] = (oy + c->dy) * {full.Sy} - {full.Py};
    hi[3] = lo[3] + (ty - 1) * {full.Sy} + {full.Ky_span};
    lo[4] = ox * {full.Sx} - {full.Px};
    hi[4] = lo[4] + (tx - 1) * {full.Sx} + {full.Kx_span};
}}

static void {p}_get_in({p}_ctx *c, const long lo[5], const long hi[5], int ring)
{{
    int d;
    if (!ring)
        c->si = (c->si + 1) % {nbuf};
    for (d = 0; d < 5; d++)
        c->in_lo[d] = lo[d];
    if (ring)
        c->in_lo[4] = 0;
    c->in_dim[0] = {t.N}; c->in_dim[1] = {span}; c->in_dim[2] = {t.C};
    c->in_dim[3] = BY; c->in_dim[4] = BX;
    wb_get(c->a_in, c->core, {p}_in[c->si], c->in_lo, c->in_dim, lo, hi);
}}

static void {p}_get_w({p}_ctx *c, long oc, long kc)
{{
    long lo[5], hi[5], dim[5] = {{1, {span}, {toc}, {t.C}, {kk}}};
    lo[0] = 0; hi[0] = 1;
    lo[1] = c->dg + c->g0; hi[1] = lo[1] + c->gb;
    lo[2] = oc + c->dc; hi[2] = lo[2] + {p}_ext(oc, {toc}, {ocg});
    lo[3] = kc; hi[3] = kc + {p}_ext(kc, {t.C}, {kc});
    lo[4] = 0; hi[4] = {kk};
    c->sw = (c->sw + 1) % {nbuf};
    wb_get(c->a_w, c->core, {p}_w[c->sw], lo, dim, lo, hi);
}}

static void {p}_out_box(const {p}_ctx *c, long on, long oc, long oy, long ox, long lo[5],
                        long hi[5])
{{
    lo[0] = on + c->dn; hi[0] = lo[0] + {p}_ext(on, {t.N}, {on});
    lo[1] = c->dg + c->g0; hi[1] = lo[1] + c->gb;
    lo[2] = oc + c->dc; hi[2] = lo[2] + {p}_ext(oc, {toc}, {ocg});
    lo[3] = oy + c->dy; hi[3] = lo[3] + {p}_ext(oy, {t.Y}, {oy});
    lo[4] = ox; hi[4] = ox + {p}_ext(ox, {t.X}, {ox});
}}

/* B_out from the bias (no transfer), or reloaded partial sums (a get) */
static void {p}_load_out({p}_ctx *c, long on, long oc, long oy, long ox, int get)
{{
    long lo[5], hi[5], dim[5] = {{{t.N}, {span}, {toc}, {t.Y}, {t.X}}};
    long n, g, mm, y, x;
    int64_t *b;
    c->so = (c->so + 1) % {nbuf};
    b = {p}_out[c->so];
    {p}_out_box(c, on, oc, oy, ox, lo, hi);
    if (get) {{
        wb_get(c->a_out, c->core, b, lo, dim, lo, hi);
        return;
    }}
    for (n = 0; n < {t.N * span * toc * t.Y * t.X}; n++)
        b[n] = 0;
    for (n = 0; n < {p}_min({t.N}, {on} - on); n++)
        for (g = 0; g < c->real_g; g++)
            for (mm = 0; mm < {p}_min({toc}, {ocg} - oc); mm++)
                for (y = 0; y < {p}_min({t.Y}, {oy} - oy); y++)
                    for (x = 0; x < {p}_min({t.X}, {ox} - ox); x++)
                        b[(((n * {span} + g) * {toc} + mm) * {t.Y} + y) * {t.X} + x] =
                            c->bias[(c->dg + c->g0 + g) * {full_ocg} + c->dc + oc + mm];
}}

static void {p}_put_out({p}_ctx *c, long on, long oc, long oy, long ox)
{{
    long lo[5], hi[5], dim[5] = {{{t.N}, {span}, {toc}, {t.Y}, {t.X}}};
    {p}_out_box(c, on, oc, oy, ox, lo, hi);
    wb_put(c->a_out, c->core, {p}_out[c->so], lo, dim, lo, hi);
}}

/* the MACs of one tile, on the buffers; after the last input-map step, requantize */
static void {p}_compute({p}_ctx *c, long on, long oc, long oy, long ox, long kc)
{{
    const int32_t *ib = {p}_in[c->si], *wbuf = {p}_w[c->sw];
    int64_t *ob = {p}_out[c->so];
    long n, g, mm, y, x, k, ky, kx;
    long nn = {p}_min({t.N}, {on} - on), nm = {p}_min({toc}, {ocg} - oc);
    long ny = {p}_min({t.Y}, {oy} - oy), nx = {p}_min({t.X}, {ox} - ox);
    long nk = {p}_min({t.C}, {kc} - kc);
    int last = kc + {t.C} >= {kc};
    for (n = 0; n < nn; n++)
        for (g = 0; g < c->real_g; g++)
            for (mm = 0; mm < nm; mm++)
                for (y = 0; y < ny; y++)
                    for (x = 0; x < nx; x++) {{
                        long oi = (((n * {span} + g) * {toc} + mm) * {t.Y} + y) * {t.X} + x;
                        long X0 = (ox + x) * {full.Sx} - {full.Px};
                        int64_t v;
                        {acc_type} acc = ({acc_type})ob[oi];
                        for (k = 0; k < nk; k++)
                            for (ky = 0; ky < {full.Ky}; ky++) {{
                                long Y = (oy + c->dy + y) * {full.Sy} - {full.Py}
                                         + ky * {full.Dy};
                                const int32_t *irow = ib + (((n * {span} + g) * {t.C} + k) * BY
                                                            + (Y - c->in_lo[3])) * BX;
                                const int32_t *wrow = wbuf + ((g * {toc} + mm) * {t.C} + k)
                                                      * {kk} + ky * {full.Kx};
                                for (kx = 0; kx < {full.Kx}; kx++) {{
                                    long X = X0 + kx * {full.Dx};
                                    {step};
                                }}
                            }}
                        v = {read};
                        ob[oi] = last ? wb_requantize(v, {shift}, {fmt.out_fmt.bw}) : v;
                    }}
}}

static void {p}_step({p}_ctx *c, long on, long oc, long oy, long ox, long kc, int load)
{{
    if (load)
        {p}_load_out(c, on, oc, oy, ox, kc != 0);
    {p}_compute(c, on, oc, oy, ox, kc);
}}

static inline void {p}_tile_in({p}_ctx *c, long on, long kc, long oy, long ox)
{{
    long lo[5], hi[5];
    {p}_in_box(c, on, kc, oy, ox, lo, hi);
    {p}_get_in(c, lo, hi, 0);
}}
{_nest(p, sched, overlap, (on, ocg, oy, ox, kc), (t, toc))}
static void {p}_core(wb_array *a_in, wb_array *a_w, wb_array *a_out, const int64_t *bias,
                     int core, long dn, long dc, long dy, long dg)
{{
    {p}_ctx c;
    c.a_in = a_in; c.a_w = a_w; c.a_out = a_out; c.bias = bias; c.core = core;
    c.si = c.sw = c.so = 0;
    c.dn = dn; c.dc = dc; c.dy = dy; c.dg = dg;
    for (c.g0 = 0; c.g0 < {groups}; c.g0 += {span}) {{
        c.real_g = {p}_min({span}, {groups} - c.g0);
        c.gb = wb_physical ? c.real_g : {span};
        {p}_nest(&c);
    }}
}}
#undef BY
#undef BX
"""


def _nest(p: str, sched: str, overlap: int, extents: tuple, tiles: tuple) -> str:
    """The schedule's loop nest (seed 000 listings 2-6) over one block of groups."""
    on, ocg, oy, ox, kc = extents
    t, toc = tiles
    loops = {"n": f"for (n = 0; n < {on}; n += {t.N})",
             "m": f"for (m = 0; m < {ocg}; m += {toc})",
             "y": f"for (y = 0; y < {oy}; y += {t.Y})",
             "x": f"for (x = 0; x < {ox}; x += {t.X})",
             "k": f"for (k = 0; k < {kc}; k += {t.C})"}

    def nest(order: str, body: list[str]) -> list[str]:
        lines = []
        for depth, loop in enumerate(order):
            lines.append("    " * (depth + 1) + loops[loop])
        pad = "    " * (len(order) + 1)
        return lines + [pad + line for line in body]

    if sched == "intra":
        lines = nest("nmyxk", ["{", f"    {p}_tile_in(c, n, k, y, x);",
                               f"    {p}_get_w(c, m, k);", f"    {p}_step(c, n, m, y, x, k, 1);",
                               f"    {p}_put_out(c, n, m, y, x);", "}"])
    elif sched == "inter_kc":
        lines = nest("nmyx", ["{", f"    {p}_load_out(c, n, m, y, x, 0);",
                              f"    {loops['k']} {{", f"        {p}_tile_in(c, n, k, y, x);",
                              f"        {p}_get_w(c, m, k);",
                              f"        {p}_step(c, n, m, y, x, k, 0);", "    }",
                              f"    {p}_put_out(c, n, m, y, x);", "}"])
    elif sched == "inter_oc":
        lines = nest("nyxk", ["{", f"    {p}_tile_in(c, n, k, y, x);", f"    {loops['m']} {{",
                              f"        {p}_get_w(c, m, k);",
                              f"        {p}_step(c, n, m, y, x, k, 1);",
                              f"        {p}_put_out(c, n, m, y, x);", "    }", "}"])
    else:
        body = ["{", f"    {p}_get_w(c, m, k);", f"    {loops['n']}",
                f"        {loops['y']} {{"]
        if overlap:
            body += ["            long lo[5], hi[5];",
                     f"            {p}_in_box(c, n, k, y, 0, lo, hi);",
                     f"            hi[4] = lo[4] + {overlap};",
                     f"            {p}_get_in(c, lo, hi, 1);"]
        body += [f"            {loops['x']} {{"]
        if overlap:
            body += ["                long lo[5], hi[5];",
                     f"                {p}_in_box(c, n, k, y, x, lo, hi);",
                     f"                lo[4] += {overlap};",
                     f"                {p}_get_in(c, lo, hi, 1);"]
        else:
            body += [f"                {p}_tile_in(c, n, k, y, x);"]
        body += [f"                {p}_step(c, n, m, y, x, k, 1);",
                 f"                {p}_put_out(c, n, m, y, x);", "            }", "        }",
                 "}"]
        lines = nest("mk", body)
    return "\nstatic void " + p + "_nest(" + p + "_ctx *c)\n{\n    long n, m, y, x, k;\n" \
        + "\n".join(lines) + "\n}\n"


_BASE = {"on": "start, 0, 0, 0", "oc": "0, start, 0, 0", "xy": "0, 0, start, 0",
         "g": "0, 0, 0, start"}


def layer_source(m: LayerMapping) -> str:
    """The C file of one layer: `void NAME_run(in, w, bias, out)` over every core."""
    check_mapping(m)
    name = c_name(m.layer.name)
    parts = shares(m.layer, m.split, m.cores)
    head = [f"/* {m.layer.name}: {m.layer.kind} layer emitted by workbench, split "
            f"{m.split!r} over {m.cores} core(s), {m.fmt.acc_bits}-bit accumulator "
            f"({m.fmt.overflow}), inputs {m.fmt.in_fmt}, weights {m.fmt.w_fmt}, outputs "
            f"{m.fmt.out_fmt} */",
            '#include "wb_config.h"', '#include "wb_dma.h"', f'#include "{name}.h"']
    body = [_share_code(m, i, part) for i, part in enumerate(parts)]
    calls, core = [], 0
    for i, part in enumerate(parts):
        for start in part.starts:
            calls.append(f"    {{ long start = {start}; {name}_s{i}_core(in, w, out, bias, "
                         f"{core}, {_BASE[m.split]}); }}")
            core += 1
    run = [f"void {name}_run(wb_array *in, wb_array *w, const int64_t *bias, wb_array *out)",
           "{", *calls, "}"]
    return "\n".join(head) + "\n" + "".join(body) + "\n" + "\n".join(run) + "\n"


def layer_header(m: LayerMapping) -> str:
    name = c_name(m.layer.name)
    guard = name.upper() + "_H"
    return (f"#ifndef {guard}\n#define {guard}\n#include \"wb_dma.h\"\n"
            f"void {name}_run(wb_array *in, wb_array *w, const int64_t *bias, wb_array *out);\n"
            f"#endif\n")
