/* parity_metrics_pass: what the metrics' passes share (parity_metrics.h
 * says what they compute and how they round), for the files that hold them
 * and for nobody else:
 *   parity_metrics_whole.c   pass 1 (maxima, sums, the ULP histogram and
 *                            the median's first radix round) and pass 2
 *                            (max_rel_floor, the median's selection) over
 *                            a whole tensor;
 *   parity_metrics_rows.c    per-row statistics: row_rel, the error
 *                            profile along the sequence, allclose, the
 *                            per-row maxima and the relative accumulator;
 *   parity_metrics_acc.c     the normwise metrics accumulated slab by slab;
 *   parity_metrics_blocks.c  the localized block and element statistics
 *                            and the block map;
 *   parity_metrics_stream.c  all of them over a tensor read a head group
 *                            at a time (pass A, the floors, pass B);
 *   parity_metrics.c         the binary64 entry points.
 * One way: stream uses the others, acc, rows and blocks use whole; none
 * uses stream.  pm_* are the passes' shared steps (not public). */
#ifndef PARITY_METRICS_PASS_H
#define PARITY_METRICS_PASS_H

#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "parity_metrics.h"
#include "parity_xsum.h"

/* Every read of a compared value: exact whether it is held as binary64 or
 * float32 (parity_vals.h), so the metrics do not depend on the form. */
#define AT(v, i) parity_vals_at((v), (size_t)(i))

static const parity_vals NONE = {NULL, NULL, NULL, 0};

#define BLOCK 65536

/* The hot loops read x and r through raw pointers, one of (d, f) NULL per
 * tensor: FORMS calls `fn` once per form pair with the NULL pointers as
 * constants, so each always-inlined loop body is compiled per pair without
 * the per-element branch of parity_vals_at (and can vectorise).  A tensor
 * held as codes (c, from element off: gdn_ocode.h) is decoded per element:
 * instances for codes against a binary64 reference (a kernel's o against
 * the oracle's) and codes against codes (affine-prefix against the scan),
 * and a generic one for the rest.  Reads are exact in every form
 * (parity_vals.h). */
#define LD(d, f, c, o, i) ((f) ? (double)(f)[i] : (d) ? (d)[i] : (double)gdn_ocode_value((c), (o) + (size_t)(i)))

#define HOT static inline __attribute__((always_inline))

#define VARGS                                                                                      \
  const double *xd, const float *xf, const gdn_ocode *xc, size_t xo, const double *rd, const float *rf, \
      const gdn_ocode *rc, size_t ro

#define XV(i) LD(xd, xf, xc, xo, (i))

#define RV(i) LD(rd, rf, rc, ro, (i))

#define FORMS(fn, x, r, ...)                                                                       \
  do {                                                                                             \
    if ((x).c && (r).d) fn(NULL, NULL, (x).c, (x).off, (r).d, NULL, NULL, 0, __VA_ARGS__);           \
    else if ((x).c && (r).c) fn(NULL, NULL, (x).c, (x).off, NULL, NULL, (r).c, (r).off, __VA_ARGS__); \
    else if ((x).c || (r).c) fn((x).d, (x).f, (x).c, (x).off, (r).d, (r).f, (r).c, (r).off, __VA_ARGS__); \
    else if ((x).f && (r).f) fn(NULL, (x).f, NULL, 0, NULL, (r).f, NULL, 0, __VA_ARGS__);           \
    else if ((x).f) fn(NULL, (x).f, NULL, 0, (r).d, NULL, NULL, 0, __VA_ARGS__);                    \
    else if ((r).f) fn((x).d, NULL, NULL, 0, NULL, (r).f, NULL, 0, __VA_ARGS__);                    \
    else fn((x).d, NULL, NULL, 0, (r).d, NULL, NULL, 0, __VA_ARGS__);                               \
  } while (0)

#define RADIX 65536 /* the median's radix: 16 bits of a binary64 per round */

/* Threads for `items` independent items holding `elems` values in all: one
 * per BLOCK values at most, so a small tensor starts no thread (a thread
 * costs its start-up, and with --threads 64 on a tiny case none may be
 * creatable: test_limits). */
static inline int pm_threads_for(int64_t items, int64_t elems) {
  int64_t blocks = (elems + BLOCK - 1) / BLOCK;
  return gdn_threads_for(items < blocks ? items : blocks);
}


/* One block's maxima and counts (pass 1), and max_rel_floor's block
 * maximum with its first index (pass 2).  The sums of squares go to the
 * thread's exact accumulators (parity_xsum.h): their value does not depend
 * on which thread adds what, nor on the order of the elements, so a run
 * streamed by head group (parity_stream.h) can give the same bits. */
typedef struct {
  double max_abs, max_ulp, max_r;
  int64_t arg, zero_ref, nonfinite, nf_at; /* nf_at: the block's first non-finite x (-1: none) */
  int64_t hist[PARITY_ULP_BINS];
  double rel_max;
  size_t rel_at;
} partial;

/* The median's search after round 0: the k-th smallest ULP value is the
 * k-th (0-based) of the `count` values whose top 16 bits are `top`; `next`
 * is the next non-empty top-16 bucket (-1: none). */
typedef struct {
  size_t k, count, n;
  int top, next;
} msel;

/* Pass 2, per thread: the selected bucket's least and greatest value, the
 * next bucket's least, and either the bucket's values (cand, when it is small
 * enough to hold) or the histogram of their next 16 bits (h). */
typedef struct {
  double bmin, bmax, nmin;
  int64_t *h;
  double buf[512];
  size_t nbuf;
} tstate;

typedef struct {
  double *cand; /* NULL: histogram instead */
  size_t pos;   /* filled so far (atomic reservations) */
} sink;

/* Where the ULP values are read from after pass 2: the whole tensors, or
 * (src set) the groups of parity_metrics_stream, one at a time. */
typedef struct {
  parity_vals x, r;
  size_t n;
  const parity_group_src *src;
  size_t per_head; /* streamed: elements per head along src->head_axis */
} usrc;

/* row_rel (parity_metrics.h) in groups of ROWS rows: each group's row norms
 * in parallel, one row per thread, each in memory order as before; then the
 * group's rows in row order, so the RMS sum and the first maximum are those
 * of one pass from row 0, for any thread count. */
#define ROWS 8192

/* elem_rel's view of one group: its first element that differs (i0; -1:
 * none) with its q0, and its greatest non-NaN q with the first index
 * attaining it (best < 0: none). */
typedef struct {
  double q0, best;
  int64_t i0, arg;
} erel;

void pm_pass1(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, partial *p, int64_t *top, parity_xsum *sums,
                  int nt);
void pm_pass2(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, double floor, partial *p,
                  const msel *ms, tstate *ts, sink *s, int nt);
void pm_tstate_combine(tstate *ts, int nt);
int pm_median_finish(const usrc *u, gdn_ulp_fmt f, const msel *ms, const tstate *ts, const sink *s,
                         int64_t *hist, int nt, double *med, gdn_error *e);
void pm_finish_sums(parity_metrics *m, double sd2, double sr2);
void pm_median_prepare(int64_t *hist, int nt, size_t n, msel *ms, tstate *ts, sink *s);
void pm_unflatten(int64_t flat, const int64_t dims[4], int64_t out[4]);
void pm_rows_eval(parity_vals x, parity_vals r, int64_t q0, int64_t cnt, int64_t len, double fl, double *v);
int64_t pm_slab_full(const parity_slab *sl, size_t i);
void pm_erel_pick(const erel *o, int64_t n, double *best_out, int64_t *arg_out);
int64_t pm_blocks_layout(const int64_t dims[4], const int64_t block_len[4], int64_t bl[4], int64_t nbk[4]);
void pm_group_elem(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4],
                   int64_t g, const double *rms, double floor, erel *o);

#endif
