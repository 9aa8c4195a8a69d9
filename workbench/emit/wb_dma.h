/* wb_dma.h: the workbench's scratchpad DMA runtime for emitted programs (portable C99).
 *
 * An array in external memory (DRAM) is a dense 5-D box of int32_t or int64_t elements.
 * wb_get copies a box of it into a scratchpad buffer, wb_put copies a buffer back. Each call
 * is one DMA transfer; the runtime counts, per array and per core, the transfers and the
 * elements moved, in one of two modes:
 *   model    (wb_physical = 0): a box is moved whole, positions outside the array (zero
 *            padding, edge tiles past the extent) included: they read as zero, and a put
 *            of them is dropped;
 *   physical (wb_physical = 1): only positions inside the array move; the buffer's others
 *            are zeroed on chip (not counted), and a transfer that moves nothing is no
 *            transfer.
 * A buffer is indexed by position modulo its extents (buf_lo, buf_dim): a box laid at its own
 * origin is a plain dense copy, and a buffer whose last origin is 0 holds a window of columns
 * as a ring (the direction-x reuse of seed 000 listing 6).
 *
 * Define WB_CORES (the cores counted) before including this header, and define
 * `int wb_physical;` in exactly one file of the program.
 */
#ifndef WB_DMA_H
#define WB_DMA_H

#include <stdint.h>
#include <stdio.h>

#ifndef WB_CORES
#define WB_CORES 1
#endif

typedef struct {
    const char *name;       /* "in", "w", "out" */
    void *data;             /* int32_t (in, w) or int64_t (out) elements */
    int wide;               /* 1: int64_t elements */
    long dim[5];            /* extents, outermost first */
    long long elements[WB_CORES];
    long long transfers[WB_CORES];
} wb_array;

extern int wb_physical; /* defined once, in the program's main file */

static inline long wb_mod(long a, long m)
{
    long r = a % m;
    return r < 0 ? r + m : r;
}

/* Copy box [lo, hi) between array `a` and `buf` (extents buf_dim, origin buf_lo);
 * put = 0: DRAM -> buffer, put = 1: buffer -> DRAM. Counts one transfer for `core`.
 * Row by row: the rows of the box along its last (column) dimension. */
static inline void wb_move(wb_array *a, int core, void *buf, const long buf_lo[5],
                           const long buf_dim[5], const long lo[5], const long hi[5], int put)
{
    long p[5], x, bx, bbase, sbase, x0, x1;
    long long moved = 0;
    int d, row_in;
    for (d = 0; d < 5; d++)
        if (hi[d] <= lo[d])
            goto done;
    for (d = 0; d < 4; d++)
        p[d] = lo[d];
    for (;;) {
        row_in = 1;
        bbase = 0;
        sbase = 0;
        for (d = 0; d < 4; d++) {
            if (p[d] < 0 || p[d] >= a->dim[d])
                row_in = 0;
            bbase = bbase * buf_dim[d] + wb_mod(p[d] - buf_lo[d], buf_dim[d]);
            sbase = sbase * a->dim[d] + p[d];
        }
        bbase *= buf_dim[4];
        sbase *= a->dim[4];
        x0 = row_in ? (lo[4] > 0 ? lo[4] : 0) : hi[4];
        x1 = row_in ? (hi[4] < a->dim[4] ? hi[4] : a->dim[4]) : hi[4];
        if (x1 < x0)
            x1 = x0;
        moved += wb_physical ? x1 - x0 : hi[4] - lo[4];
        bx = wb_mod(lo[4] - buf_lo[4], buf_dim[4]);
        for (x = lo[4]; x < hi[4]; x++) {
            int in = x >= x0 && x < x1;
            if (put) {
                if (in) {
                    if (a->wide)
                        ((int64_t *)a->data)[sbase + x] = ((int64_t *)buf)[bbase + bx];
                    else
                        ((int32_t *)a->data)[sbase + x] = (int32_t)((int64_t *)buf)[bbase + bx];
                }
            } else if (a->wide) {
                ((int64_t *)buf)[bbase + bx] = in ? ((int64_t *)a->data)[sbase + x] : 0;
            } else {
                ((int32_t *)buf)[bbase + bx] = in ? ((int32_t *)a->data)[sbase + x] : 0;
            }
            if (++bx == buf_dim[4])
                bx = 0;
        }
        for (d = 3; d >= 0; d--) {
            if (++p[d] < hi[d])
                break;
            p[d] = lo[d];
        }
        if (d < 0)
            break;
    }
done:
    a->elements[core] += moved;
    if (moved || !wb_physical)
        a->transfers[core] += 1;
}

static inline void wb_get(wb_array *a, int core, void *buf, const long buf_lo[5],
                   const long buf_dim[5], const long lo[5], const long hi[5])
{
    wb_move(a, core, buf, buf_lo, buf_dim, lo, hi, 0);
}

static inline void wb_put(wb_array *a, int core, void *buf, const long buf_lo[5],
                   const long buf_dim[5], const long lo[5], const long hi[5])
{
    wb_move(a, core, buf, buf_lo, buf_dim, lo, hi, 1);
}

/* One line per array and core: "count LAYER ARRAY CORE ELEMENTS TRANSFERS". */
static inline void wb_report(FILE *f, const char *layer, const wb_array *a, int cores)
{
    int c;
    for (c = 0; c < cores; c++)
        fprintf(f, "count %s %s %d %lld %lld\n", layer, a->name, c, a->elements[c],
                a->transfers[c]);
}

/* Fixed-point arithmetic: two's-complement registers of `bits` bits (2..62). */
static inline int64_t wb_wrap(int64_t v, int bits)
{
    uint64_t half = (uint64_t)1 << (bits - 1);
    uint64_t u = ((uint64_t)v + half) & (((uint64_t)1 << bits) - 1);
    return (int64_t)u - (int64_t)half;
}

/* A wrapping register accumulated in unsigned arithmetic (wrapping is exact modulo 2^64,
 * which 2^bits divides), read back as its `bits`-bit two's-complement value. */
static inline int64_t wb_wrap_u(uint64_t u, int bits)
{
    uint64_t half = (uint64_t)1 << (bits - 1);
    return (int64_t)((u + half) & (((uint64_t)1 << bits) - 1)) - (int64_t)half;
}

static inline int64_t wb_saturate(int64_t v, int bits)
{
    int64_t hi = (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    int64_t lo = -hi - 1;
    return v > hi ? hi : v < lo ? lo : v;
}

/* Codes of fractional length `fl` as codes of `fl - shift` in `bits` bits: right shifts
 * round to nearest, ties away from zero; then saturate. */
static inline int64_t wb_requantize(int64_t q, int shift, int bits)
{
    if (shift > 0) {
        int64_t v = q + ((int64_t)1 << (shift - 1)) - (q < 0);
        int64_t d = (int64_t)1 << shift;
        q = v >= 0 ? v / d : -((-v + d - 1) / d);
    } else if (shift < 0) {
        q = (int64_t)((uint64_t)q << -shift);
    }
    return wb_saturate(q, bits);
}

#endif
