#include "parity_metrics.h"

#include "gdn_threads.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
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
static int threads_for(int64_t items, int64_t elems) {
  int64_t blocks = (elems + BLOCK - 1) / BLOCK;
  return gdn_threads_for(items < blocks ? items : blocks);
}

double parity_ulp_bin_edge(int i) { return i == 0 ? 0.0 : ldexp(1.0, i - 2); }


/* A ULP value's bits: monotone in the value for non-negative doubles (+inf
 * included; a ULP distance is never NaN or -0, gdn_ulp.h). */
static inline uint64_t bits_of(double u) {
  uint64_t b;
  memcpy(&b, &u, sizeof b);
  return b;
}

/* The histogram bin of a ULP value: bin 0 below 0.5, bin b >= 1 for
 * [2^(b-2), 2^(b-1)), the last one open.  u >= 0.5 is a normal double, so
 * frexp's exponent (u in [2^(ex-1), 2^ex)) is the biased exponent - 1022,
 * read from the bits; bin = ex + 1. */
static inline int ulp_bin(double u) {
  if (!(u >= 0.5)) return 0; /* includes u < 0.5 */
  if (!isfinite(u)) return PARITY_ULP_BINS - 1;
  int b = (int)(bits_of(u) >> 52) - 1021; /* [0.5, 1): biased 1022 -> bin 1 */
  return b >= PARITY_ULP_BINS ? PARITY_ULP_BINS - 1 : b;
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

/* Pass 1 over one block: its partial (sums in memory order, as one thread
 * from lo), and the top 16 bits of each ULP value counted in `top` (the
 * median's first radix round; integer counts, so any split sums the same). */
HOT void pass1_block(VARGS, size_t lo, size_t hi, gdn_ulp_fmt f, partial *out, int64_t *top, parity_xsum *sums) {
  partial q = *out; /* a local copy: the stores to top cannot alias it */
  q.arg = -1;
  q.nf_at = -1;
  for (size_t i = lo; i < hi; i++) {
    double xi = XV(i), ri = RV(i);
    if (!isfinite(xi) && !q.nonfinite++) q.nf_at = (int64_t)i;
    if (ri == 0.0) q.zero_ref++;
    double ar = fabs(ri);
    if (ar > q.max_r) q.max_r = ar;
    double d = isfinite(xi) ? fabs(xi - ri) : INFINITY;
    if (q.arg < 0 || d > q.max_abs) {
      q.max_abs = d;
      q.arg = (int64_t)i;
    }
    parity_xsum_add(&sums[0], d * d);
    parity_xsum_add(&sums[1], ri * ri);
    double u = gdn_ulp_distance(f, xi, ri);
    if (u > q.max_ulp) q.max_ulp = u;
    q.hist[ulp_bin(u)]++;
    top[bits_of(u) >> 48]++;
  }
  *out = q;
}

/* sums: two accumulators (d^2, r^2) per thread. */
static void pass1(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, partial *p, int64_t *top, parity_xsum *sums,
                  int nt) {
  size_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(dynamic) num_threads(nt)
  for (size_t bi = 0; bi < nb; bi++) {
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    const int th = omp_get_thread_num();
    FORMS(pass1_block, x, r, lo, hi, f, &p[bi], top + (size_t)th * RADIX, sums + 2 * th);
  }
}

/* Sums the per-thread histograms (nt x RADIX) into the first. */
static void hist_sum(int64_t *h, int nt) {
  for (int j = 1; j < nt; j++)
    for (int i = 0; i < RADIX; i++) h[i] += h[(size_t)j * RADIX + i];
}

/* The bucket of a summed histogram holding the k-th smallest (0-based);
 * *k becomes the rank within that bucket. */
static int radix_pick(const int64_t *h, size_t *k) {
  size_t acc = 0;
  int j = 0;
  for (; j < RADIX - 1 && acc + (size_t)h[j] <= *k; j++) acc += (size_t)h[j];
  *k -= acc;
  return j;
}

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

/* Moves a thread's buffered candidates into the sink: one atomic
 * reservation per 512 values.  The fill order depends on the threads, but
 * the selection is of the multiset, so its result does not. */
static void sink_flush(sink *s, tstate *ts) {
  size_t at;
#pragma omp atomic capture
  {
    at = s->pos;
    s->pos += ts->nbuf;
  }
  memcpy(s->cand + at, ts->buf, ts->nbuf * sizeof *ts->buf);
  ts->nbuf = 0;
}

HOT void pass2_ulp(tstate *ts, sink *s, const msel *ms, double u) {
  uint64_t b = bits_of(u);
  int top = (int)(b >> 48);
  if (top == ms->top) {
    if (u < ts->bmin) ts->bmin = u;
    if (u > ts->bmax) ts->bmax = u;
    if (!s->cand) ts->h[(b >> 32) & 0xffff]++;
    else {
      ts->buf[ts->nbuf++] = u;
      if (ts->nbuf == 512) sink_flush(s, ts);
    }
  } else if (top == ms->next && u < ts->nmin)
    ts->nmin = u;
}

/* Pass 2 over one block: max_i |x_i - r_i| / max(|r_i|, floor) over the
 * elements that differ (non-finite x: infinite) with its first index, and
 * the median's bucket work (pass2_ulp). */
HOT void pass2_block(VARGS, size_t lo, size_t hi, gdn_ulp_fmt f, double floor, partial *q, const msel *ms,
                     tstate *ts, sink *s) {
  double m = 0;
  size_t a = 0;
  for (size_t i = lo; i < hi; i++) {
    double xi = XV(i), ri = RV(i);
    double d = isfinite(xi) ? fabs(xi - ri) : INFINITY;
    if (d != 0) {
      double den = fabs(ri) > floor ? fabs(ri) : floor;
      double qv = den > 0 ? d / den : INFINITY;
      if (qv > m) m = qv, a = i; /* NaN qv (NaN reference) skipped, as before */
    }
    pass2_ulp(ts, s, ms, gdn_ulp_distance(f, xi, ri));
  }
  q->rel_max = m;
  q->rel_at = a;
}

static void pass2(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, double floor, partial *p,
                  const msel *ms, tstate *ts, sink *s, int nt) {
  size_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel num_threads(nt)
  {
    tstate *t = &ts[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (size_t bi = 0; bi < nb; bi++) {
      size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
      FORMS(pass2_block, x, r, lo, hi, f, floor, &p[bi], ms, t, s);
    }
    if (s->cand && t->nbuf) sink_flush(s, t);
  }
}

/* The k-th smallest (0-based) of a[0..n) by 4 rounds of 16-bit radix
 * selection on the bits, and in *ties the values equal to it after it. */
static double select_array(const double *a, size_t n, size_t k, int64_t *h, size_t *ties) {
  uint64_t prefix = 0;
  for (int round = 0; round < 4; round++) {
    int shift = 48 - 16 * round;
    uint64_t mask_hi = round == 0 ? 0 : ~0ull << (shift + 16);
    memset(h, 0, RADIX * sizeof *h);
    for (size_t i = 0; i < n; i++) {
      uint64_t b = bits_of(a[i]);
      if ((b & mask_hi) == prefix) h[(b >> shift) & 0xffff]++;
    }
    prefix |= (uint64_t)radix_pick(h, &k) << shift;
    *ties = (size_t)h[(prefix >> shift) & 0xffff] - k - 1;
  }
  double v;
  memcpy(&v, &prefix, sizeof v);
  return v;
}

/* The rounds of the radix selection from `round` on (prefix: the bits
 * chosen before it), each a full pass over the ULP values counting, in
 * parallel with one histogram per thread (`hist`: nt x RADIX), those that
 * agree with the prefix.  The fallback when the selected bucket is too
 * large to hold and not all one value. */
HOT void round_block(VARGS, size_t lo, size_t hi, gdn_ulp_fmt f, uint64_t mask_hi, uint64_t prefix, int shift,
                     int64_t *h) {
  for (size_t i = lo; i < hi; i++) {
    uint64_t b = bits_of(gdn_ulp_distance(f, XV(i), RV(i)));
    if ((b & mask_hi) == prefix) h[(b >> shift) & 0xffff]++;
  }
}

/* Where the ULP values are read from after pass 2: the whole tensors, or
 * (src set) the groups of parity_metrics_stream, one at a time. */
typedef struct {
  parity_vals x, r;
  size_t n;
  const parity_group_src *src;
  size_t per_head; /* streamed: elements per head along src->head_axis */
} usrc;

/* Calls fn(x, r, n, arg) for the whole pair or for each group's. */
static int usrc_each(const usrc *u, void (*fn)(parity_vals, parity_vals, size_t, void *), void *arg, gdn_error *e) {
  if (!u->src) {
    fn(u->x, u->r, u->n, arg);
    return GDN_OK;
  }
  for (int64_t g = 0; g < u->src->n_groups; g++) {
    parity_vals x, r;
    int64_t h0, h1;
    int rc = u->src->get(u->src->ctx, g, &x, &r, &h0, &h1, e);
    if (rc) return rc;
    fn(x, r, (size_t)(h1 - h0) * u->per_head, arg);
  }
  return GDN_OK;
}

typedef struct {
  gdn_ulp_fmt f;
  uint64_t mask_hi, prefix;
  int shift, nt;
  int64_t *hist;
} round_arg;

static void round_count(parity_vals x, parity_vals r, size_t n, void *arg) {
  const round_arg *a = arg;
  size_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(dynamic) num_threads(a->nt)
  for (size_t bi = 0; bi < nb; bi++) {
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    FORMS(round_block, x, r, lo, hi, a->f, a->mask_hi, a->prefix, a->shift, a->hist + (size_t)omp_get_thread_num() * RADIX);
  }
}

static int select_rounds(const usrc *u, gdn_ulp_fmt f, int round, uint64_t prefix, size_t k, int64_t *hist, int nt,
                         size_t *ties, double *v, gdn_error *e) {
  for (; round < 4; round++) {
    round_arg a = {f, 0, prefix, 48 - 16 * round, nt, hist};
    a.mask_hi = ~0ull << (a.shift + 16);
    memset(hist, 0, (size_t)nt * RADIX * sizeof *hist);
    int rc = usrc_each(u, round_count, &a, e);
    if (rc) return rc;
    hist_sum(hist, nt);
    prefix |= (uint64_t)radix_pick(hist, &k) << a.shift;
    *ties = (size_t)hist[(prefix >> a.shift) & 0xffff] - k - 1; /* last round: equal values after the k-th */
  }
  memcpy(v, &prefix, sizeof *v);
  return GDN_OK;
}

/* The smallest ULP value above v; a minimum is exact, so any order gives it. */
HOT void above_block(VARGS, size_t lo, size_t hi, gdn_ulp_fmt f, double v, double *best) {
  double b = *best;
  for (size_t i = lo; i < hi; i++) {
    double u = gdn_ulp_distance(f, XV(i), RV(i));
    if (u > v && u < b) b = u;
  }
  *best = b;
}

typedef struct {
  gdn_ulp_fmt f;
  double v, best;
  int nt;
} above_arg;

static void above_count(parity_vals x, parity_vals r, size_t n, void *arg) {
  above_arg *a = arg;
  size_t nb = (n + BLOCK - 1) / BLOCK;
  double best = a->best, v = a->v;
#pragma omp parallel for schedule(dynamic) num_threads(a->nt) reduction(min : best)
  for (size_t bi = 0; bi < nb; bi++) {
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    double b = INFINITY;
    FORMS(above_block, x, r, lo, hi, a->f, v, &b);
    if (b < best) best = b;
  }
  a->best = best;
}

static int next_ulp_above(const usrc *u, gdn_ulp_fmt f, double v, int nt, double *out, gdn_error *e) {
  above_arg a = {f, v, INFINITY, nt};
  int rc = usrc_each(u, above_count, &a, e);
  *out = a.best;
  return rc;
}

/* The values of the bucket a thread-state set found (combined: minima and
 * maxima are exact in any order; histograms are integer sums). */
static void tstate_combine(tstate *ts, int nt) {
  for (int j = 1; j < nt; j++) {
    if (ts[j].bmin < ts[0].bmin) ts[0].bmin = ts[j].bmin;
    if (ts[j].bmax > ts[0].bmax) ts[0].bmax = ts[j].bmax;
    if (ts[j].nmin < ts[0].nmin) ts[0].nmin = ts[j].nmin;
  }
}

/* The median of the n ULP values from the state after pass 2 (mean of the
 * two middle values for even n, 0.5 * (lo + hi) as ever).  The lower middle
 * value lo: the bucket's only value when its least and greatest agree, else
 * selected among the held candidates, else by the remaining radix rounds
 * over all values.  The upper one hi: lo again when a tie follows it, else
 * the least value above lo: among the candidates when lo is not the bucket's
 * greatest, else the next bucket's least (or, in the fallback, one pass). */
static int median_finish(const usrc *u, gdn_ulp_fmt f, const msel *ms, const tstate *ts, const sink *s,
                         int64_t *hist, int nt, double *med, gdn_error *e) {
  size_t ties, k = ms->k, n = ms->n;
  double lo, hi;
  int fallback = 0, rc = GDN_OK;
  if (ts[0].bmin == ts[0].bmax) {
    lo = ts[0].bmin;
    ties = ms->count - k - 1;
  } else if (s->cand) {
    lo = select_array(s->cand, ms->count, k, hist, &ties);
  } else {
    hist_sum(hist, nt);
    uint64_t prefix = (uint64_t)ms->top << 48 | (uint64_t)radix_pick(hist, &k) << 32;
    if ((rc = select_rounds(u, f, 2, prefix, k, hist, nt, &ties, &lo, e))) return rc;
    fallback = 1;
  }
  if (n % 2) hi = lo;
  else if (ties) hi = lo;
  else if (fallback) rc = next_ulp_above(u, f, lo, nt, &hi, e);
  else if (s->cand && k + 1 < ms->count) {
    hi = INFINITY;
    for (size_t i = 0; i < ms->count; i++)
      if (s->cand[i] > lo && s->cand[i] < hi) hi = s->cand[i];
  } else
    hi = ts[0].nmin;
  *med = n % 2 ? lo : 0.5 * (lo + hi);
  return rc;
}

/* row_rel (parity_metrics.h) in groups of ROWS rows: each group's row norms
 * in parallel, one row per thread, each in memory order as before; then the
 * group's rows in row order, so the RMS sum and the first maximum are those
 * of one pass from row 0, for any thread count. */
#define ROWS 8192

/* A row's ||x - r||_2 (a non-finite x: infinite difference) and ||r||_2 in
 * one walk (each sum in element order); no x (xd = xf = xc = NULL): *nd = 0. */
HOT void row_norms(VARGS, int64_t len, double *nd, double *nr) {
  double sd = 0, sr = 0;
  const int has_x = xd || xf || xc;
  for (int64_t i = 0; i < len; i++) {
    const double ri = RV(i);
    if (has_x) {
      const double xi = XV(i), d = isfinite(xi) ? xi - ri : INFINITY;
      sd += d * d;
    }
    sr += ri * ri;
  }
  *nd = sqrt(sd), *nr = sqrt(sr);
}

/* The rows q0 .. q0 + cnt - 1: without x, each row's ||r_row|| in v; with
 * x, each row's ||x_row - r_row|| / max(||r_row||, fl) (-1: x_row == r_row,
 * skipped). */
static void rows_eval(parity_vals x, parity_vals r, int64_t q0, int64_t cnt, int64_t len, double fl, double *v) {
#pragma omp parallel for schedule(dynamic, 512) num_threads(threads_for(cnt, cnt * len))
  for (int64_t j = 0; j < cnt; j++) {
    const size_t at = (size_t)((q0 + j) * len);
    const parity_vals xo = parity_vals_off(x, at), ro = parity_vals_off(r, at);
    double d, nr;
    FORMS(row_norms, xo, ro, len, &d, &nr);
    const double den = nr > fl ? nr : fl;
    v[j] = !parity_vals_has(x) ? nr : d == 0 ? -1 : den > 0 ? d / den : INFINITY;
  }
}

double parity_row_rel_v(parity_vals x, parity_vals r, int64_t n_rows, int64_t len, int64_t *worst) {
  double w = 0, v[ROWS];
  int64_t arg = -1;
  static __thread parity_xsum ss; /* 32 KiB: not on the stack; exact, so rows may come in any order */
  parity_xsum_init(&ss);
  for (int64_t q = 0; q < n_rows; q += ROWS) {
    int64_t cnt = n_rows - q < ROWS ? n_rows - q : ROWS;
    rows_eval(NONE, r, q, cnt, len, 0, v);
    for (int64_t j = 0; j < cnt; j++) parity_xsum_add(&ss, v[j] * v[j]);
  }
  const double fl = n_rows > 0 ? sqrt(parity_xsum_value(&ss) / (double)n_rows) : 0; /* the RMS row norm */
  for (int64_t q = 0; q < n_rows; q += ROWS) {
    int64_t cnt = n_rows - q < ROWS ? n_rows - q : ROWS;
    rows_eval(x, r, q, cnt, len, fl, v);
    for (int64_t j = 0; j < cnt; j++)
      if (v[j] != -1 && (v[j] > w || arg < 0)) w = v[j], arg = q + j;
  }
  if (worst) *worst = arg;
  return w;
}

/* rel_fro and ref_fro from the exact sums; a non-finite x makes max_abs,
 * rel_fro and max_ulp +inf (parity_metrics.h). */
static void finish_sums(parity_metrics *m, double sd2, double sr2) {
  m->ref_fro = sqrt(sr2);
  if (sd2 == 0) m->rel_fro = 0;
  else m->rel_fro = sr2 > 0 ? sqrt(sd2) / sqrt(sr2) : INFINITY;
  if (m->nonfinite) m->rel_fro = m->max_abs = m->max_ulp = INFINITY;
}

/* Pass 1's partials combined in block order, the sums exactly;
 * returns the flat index of max_abs (-1: none), and in *nf_at the first
 * non-finite x's (-1: none). */
static int64_t pass1_combine(const partial *p, size_t nb, parity_xsum *sums, int nt, parity_metrics *m,
                             int64_t *nf_at) {
  *nf_at = -1;
  for (int j = 1; j < nt; j++) {
    parity_xsum_merge(&sums[0], &sums[2 * j]);
    parity_xsum_merge(&sums[1], &sums[2 * j + 1]);
  }
  const double sd2 = parity_xsum_value(&sums[0]), sr2 = parity_xsum_value(&sums[1]);
  int64_t arg = -1;
  for (size_t bi = 0; bi < nb; bi++) {
    const partial *q = &p[bi];
    if (arg < 0 || q->max_abs > m->max_abs) m->max_abs = q->max_abs, arg = q->arg;
    if (q->max_ulp > m->max_ulp) m->max_ulp = q->max_ulp;
    if (q->max_r > m->ref_max_abs) m->ref_max_abs = q->max_r;
    m->zero_ref += q->zero_ref;
    if (*nf_at < 0 && q->nonfinite) *nf_at = q->nf_at; /* blocks in order: the lowest index */
    m->nonfinite += q->nonfinite;
    for (int j = 0; j < PARITY_ULP_BINS; j++) m->ulp_hist[j] += q->hist[j];
  }
  finish_sums(m, sd2, sr2);
  return arg;
}

/* After pass 1 (per-thread top-16 histograms in hist): the bucket of the
 * k-th smallest ULP value, k = (n - 1) / 2, and the next non-empty one; the
 * thread states for pass 2, and the room for the bucket's values when they
 * are at most RADIX: hist's last slot (hist holds nt + 1 slots of RADIX).
 * A fixed size, so a run's memory beyond its inputs and outputs does not
 * grow with them (test_cli); a larger bucket is either all one value (the
 * common case: min = max, median_finish) or takes the radix rounds. */
static void median_prepare(int64_t *hist, int nt, size_t n, msel *ms, tstate *ts, sink *s) {
  hist_sum(hist, nt);
  ms->n = n;
  ms->k = (n - 1) / 2;
  ms->top = radix_pick(hist, &ms->k);
  ms->count = (size_t)hist[ms->top];
  ms->next = -1;
  for (int j = ms->top + 1; j < RADIX && ms->next < 0; j++)
    if (hist[j]) ms->next = j;
  memset(hist, 0, (size_t)nt * RADIX * sizeof *hist);
  for (int j = 0; j < nt; j++)
    ts[j] = (tstate){INFINITY, -INFINITY, INFINITY, hist + (size_t)j * RADIX, {0}, 0};
  s->pos = 0;
  s->cand = ms->count > 1 && ms->count <= RADIX ? (double *)(void *)(hist + (size_t)nt * RADIX) : NULL;
}

/* Flat index -> multi-index over dims. */
static void unflatten(int64_t flat, const int64_t dims[4], int64_t out[4]) {
  for (int d = 3; d >= 0; d--) {
    out[d] = flat % dims[d];
    flat /= dims[d];
  }
}

/* Pass 2 and what follows it: max_rel (per-block maxima combined in block
 * order with the same strict comparison: the value and first index of one
 * pass from 0) and the median. */
static void metrics_pass2(parity_vals x, parity_vals r, const int64_t dims[4], gdn_ulp_fmt f, partial *p,
                          int64_t *hist, tstate *ts, int nt, parity_metrics *m) {
  size_t n = (size_t)m->n, nb = (n + BLOCK - 1) / BLOCK, at = 0;
  msel ms;
  sink s;
  median_prepare(hist, nt, n, &ms, ts, &s);
  pass2(x, r, n, f, m->rel_floor, p, &ms, ts, &s, nt);
  for (size_t bi = 0; bi < nb; bi++)
    if (p[bi].rel_max > m->max_rel) m->max_rel = p[bi].rel_max, at = p[bi].rel_at;
  unflatten((int64_t)at, dims, m->rel_at);
  tstate_combine(ts, nt);
  const usrc u = {x, r, n, NULL, 0};
  (void)median_finish(&u, f, &ms, ts, &s, hist, nt, &m->median_ulp, NULL); /* whole tensors: cannot fail */
}

size_t parity_metrics_scratch_bytes(size_t n) {
  const size_t nb = (n + BLOCK - 1) / BLOCK, nt = (size_t)gdn_threads_for((int64_t)nb);
  return (nb ? nb : 1) * sizeof(partial) + (nt + 1) * RADIX * sizeof(int64_t) + nt * sizeof(tstate) +
         2 * nt * sizeof(parity_xsum);
}

int parity_metrics_compute_v(parity_vals x, parity_vals r, const int64_t dims[4], gdn_dtype t, parity_metrics *m,
                             gdn_error *e) {
  memset(m, 0, sizeof *m);
  size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]), nb = (n + BLOCK - 1) / BLOCK;
  m->n = (int64_t)n;
  const int nt = gdn_threads_for((int64_t)nb);
  const gdn_ulp_fmt f = gdn_dtype_ulp_fmt(t);
  partial *p = gdn_calloc(nb ? nb : 1, sizeof *p, "metric partial sums", e);
  int64_t *hist = p ? gdn_calloc((size_t)(nt + 1) * RADIX, sizeof *hist, "median histograms", e) : NULL;
  tstate *ts = hist ? gdn_calloc((size_t)nt, sizeof *ts, "median thread state", e) : NULL;
  parity_xsum *sums = ts ? gdn_calloc((size_t)(2 * nt), sizeof *sums, "metric exact sums", e) : NULL;
  int rc = sums ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
  if (!rc) {
    pass1(x, r, n, f, p, hist, sums, nt);
    int64_t nf_at;
    int64_t arg = pass1_combine(p, nb, sums, nt, m, &nf_at);
    if (nf_at >= 0) unflatten(nf_at, dims, m->nonfinite_at);
    /* Componentwise relative error with the floor (needs max |r| first). */
    m->rel_floor = gdn_dtype_unit_roundoff(t) * m->ref_max_abs;
    if (n) metrics_pass2(x, r, dims, f, p, hist, ts, nt, m);
    if (dims[3] > 0) m->row_rel = parity_row_rel_v(x, r, (int64_t)n / dims[3], dims[3], &m->row_worst);
    if (arg >= 0) {
      unflatten(arg, dims, m->worst);
      m->worst_x = AT(x, arg);
      m->worst_ref = AT(r, arg);
    }
  }
  gdn_free(sums);
  gdn_free(ts);
  gdn_free(hist);
  gdn_free(p);
  return rc;
}

/* parity_metrics_acc (parity_metrics.h): pass 1 over one slab.  Slab
 * element i is whole element full(i); full is increasing in i, so a block's
 * first maximum in slab order is its least whole index among the maxima. */
static int64_t slab_full(const parity_slab *sl, size_t i) {
  return (int64_t)(i / sl->len * sl->stride + sl->start + i % sl->len);
}

int parity_metrics_acc_init(parity_metrics_acc *a, gdn_error *e) {
  memset(a, 0, sizeof *a);
  a->arg = a->nf_at = -1;
  a->top = gdn_calloc(RADIX, sizeof *a->top, "median histogram", e);
  return a->top ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
}

void parity_metrics_acc_clear(parity_metrics_acc *a) {
  gdn_free(a->top);
  memset(a, 0, sizeof *a);
}

/* The least whole index wins a tie of equal maxima: the whole pass's first. */
static void acc_take(parity_metrics_acc *a, double v, int64_t at, double x, double r) {
  if (a->arg < 0 || v > a->max_abs || (v == a->max_abs && at < a->arg))
    a->max_abs = v, a->arg = at, a->arg_x = x, a->arg_r = r;
}

void parity_metrics_acc_merge(parity_metrics_acc *a, const parity_metrics_acc *b) {
  parity_xsum_merge(&a->d2, &b->d2);
  parity_xsum_merge(&a->r2, &b->r2);
  if (b->arg >= 0) acc_take(a, b->max_abs, b->arg, b->arg_x, b->arg_r);
  if (b->max_ulp > a->max_ulp) a->max_ulp = b->max_ulp;
  if (b->max_r > a->max_r) a->max_r = b->max_r;
  if (b->nf_at >= 0 && (a->nf_at < 0 || b->nf_at < a->nf_at)) a->nf_at = b->nf_at;
  a->n += b->n, a->zero_ref += b->zero_ref, a->nonfinite += b->nonfinite;
  for (int j = 0; j < PARITY_ULP_BINS; j++) a->hist[j] += b->hist[j];
  for (int j = 0; j < RADIX; j++) a->top[j] += b->top[j];
}

int parity_metrics_acc_add_v(parity_metrics_acc *a, parity_vals x, parity_vals r, const parity_slab *sl, gdn_dtype t,
                             gdn_error *e) {
  const size_t n = sl->runs * sl->len, nb = (n + BLOCK - 1) / BLOCK;
  const int nt = gdn_threads_for((int64_t)nb);
  const gdn_ulp_fmt f = gdn_dtype_ulp_fmt(t);
  partial *p = gdn_calloc(nb ? nb : 1, sizeof *p, "metric partials", e);
  int64_t *hist = p ? gdn_calloc((size_t)nt * RADIX, sizeof *hist, "median histograms", e) : NULL;
  parity_xsum *sums = hist ? gdn_calloc((size_t)(2 * nt), sizeof *sums, "metric exact sums", e) : NULL;
  if (!sums) {
    gdn_free(hist);
    gdn_free(p);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  /* per-thread histograms and exact sums: integer counts and exact sums,
   * so the split does not show in the result */
  pass1(x, r, n, f, p, hist, sums, nt);
  for (int j = 0; j < nt; j++) {
    parity_xsum_merge(&a->d2, &sums[2 * j]);
    parity_xsum_merge(&a->r2, &sums[2 * j + 1]);
    for (int i = 0; i < RADIX; i++) a->top[i] += hist[(size_t)j * RADIX + i];
  }
  for (size_t bi = 0; bi < nb; bi++) {
    const partial *q = &p[bi];
    if (q->arg >= 0) acc_take(a, q->max_abs, slab_full(sl, (size_t)q->arg), AT(x, q->arg), AT(r, q->arg));
    if (q->max_ulp > a->max_ulp) a->max_ulp = q->max_ulp;
    if (q->max_r > a->max_r) a->max_r = q->max_r;
    a->zero_ref += q->zero_ref;
    if (q->nonfinite) {
      const int64_t at = slab_full(sl, (size_t)q->nf_at);
      if (a->nf_at < 0 || at < a->nf_at) a->nf_at = at;
    }
    a->nonfinite += q->nonfinite;
    for (int j = 0; j < PARITY_ULP_BINS; j++) a->hist[j] += q->hist[j];
  }
  a->n += (int64_t)n;
  gdn_free(sums);
  gdn_free(hist);
  gdn_free(p);
  return GDN_OK;
}

void parity_metrics_acc_value(const parity_metrics_acc *a, const int64_t dims[4], gdn_dtype t, parity_metrics *m) {
  memset(m, 0, sizeof *m);
  m->n = a->n;
  m->max_abs = a->max_abs;
  m->max_ulp = a->max_ulp;
  m->ref_max_abs = a->max_r;
  m->zero_ref = a->zero_ref;
  m->nonfinite = a->nonfinite;
  memcpy(m->ulp_hist, a->hist, sizeof m->ulp_hist);
  if (a->nf_at >= 0) unflatten(a->nf_at, dims, m->nonfinite_at);
  finish_sums(m, parity_xsum_value(&a->d2), parity_xsum_value(&a->r2));
  m->rel_floor = gdn_dtype_unit_roundoff(t) * m->ref_max_abs;
  if (a->arg >= 0) {
    unflatten(a->arg, dims, m->worst);
    m->worst_x = a->arg_x;
    m->worst_ref = a->arg_r;
  }
}

/* max |x - r| (no r: max |x|) over the rows of positions t0 .. t1 - 1 of
 * batch entry b, each `row` long. */
HOT double rows_max(VARGS, int64_t T, int64_t row, int64_t b, int64_t t0, int64_t t1, double mx) {
  const int has_r = rd || rf || rc;
  const size_t lo = (size_t)((b * T + t0) * row), hi = (size_t)((b * T + t1) * row);
  /* Vectorised: a NaN d counts as 0, as `if (d > mx)` skipped it; the rest
   * are >= +0, so the maximum is the same in any order. */
#pragma omp simd reduction(max : mx)
  for (size_t i = lo; i < hi; i++) {
    double xi = XV(i);
    double d = has_r ? (isfinite(xi) ? fabs(xi - RV(i)) : INFINITY) : fabs(xi);
    d = d == d ? d : 0;
    mx = mx > d ? mx : d;
  }
  return mx;
}

void parity_profile_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block,
                        double *out) {
  int64_t B = dims[0], T = dims[1], row = dims[2] * dims[3];
  int64_t nblk = (T + block - 1) / block;
  for (int64_t k = 0; k < nblk; k++) out[k] = 0;
#pragma omp parallel for schedule(dynamic) num_threads(gdn_threads_for(nblk))
  for (int64_t k = 0; k < nblk; k++) {
    double mx = 0;
    int64_t t1 = (k + 1) * block < T ? (k + 1) * block : T;
    for (int64_t b = 0; b < B; b++) FORMS(mx = rows_max, x, r, T, row, b, k * block, t1, mx);
    out[k] = mx;
  }
}

/* max |x - r| / (atol + rtol |r|) over [lo, hi), vectorised: a NaN q (a NaN
 * reference) counts as 0, as the old `if (q > w)` skipped it; every other q
 * is >= +0, so the maximum is the same value in any order. */
HOT double allclose_block(VARGS, size_t lo, size_t hi, double rtol, double atol) {
  double w = 0;
#pragma omp simd reduction(max : w)
  for (size_t i = lo; i < hi; i++) {
    double xi = XV(i), ri = RV(i);
    double d = isfinite(xi) ? fabs(xi - ri) : INFINITY;
    double q = d / (atol + rtol * fabs(ri));
    q = q == q ? q : 0;
    w = w > q ? w : q;
  }
  return w;
}

double parity_allclose_ratio_v(parity_vals x, parity_vals r, size_t n, double rtol, double atol) {
  /* A maximum is exact: per-block maxima in any order give the same value. */
  size_t nb = (n + BLOCK - 1) / BLOCK;
  double worst = 0;
#pragma omp parallel for schedule(dynamic) num_threads(gdn_threads_for((int64_t)nb)) reduction(max : worst)
  for (size_t bi = 0; bi < nb; bi++) {
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    double w;
    FORMS(w = allclose_block, x, r, lo, hi, rtol, atol);
    if (w > worst) worst = w;
  }
  return worst;
}

double parity_max_abs_rows_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t t0, int64_t t1) {
  double m = 0;
  for (int64_t b = 0; b < dims[0]; b++)
    for (int64_t t = t0; t < t1; t++) {
      size_t base = (size_t)((b * dims[1] + t) * dims[2] * dims[3]);
      for (int64_t i = 0; i < dims[2] * dims[3]; i++) {
        double d = fabs(AT(x, base + i) - AT(r, base + i));
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
      }
    }
  return m;
}

void parity_rel_acc_init(parity_rel_acc *acc) {
  parity_xsum_init(&acc->dd);
  parity_xsum_init(&acc->nn);
}

void parity_rel_acc_add(parity_rel_acc *acc, const double *a, const double *b, size_t len) {
  for (size_t i = 0; i < len; i++) {
    double df = a[i] - b[i];
    parity_xsum_add(&acc->dd, df * df);
    parity_xsum_add(&acc->nn, b[i] * b[i]);
  }
}

void parity_rel_acc_merge(parity_rel_acc *acc, const parity_rel_acc *other) {
  parity_xsum_merge(&acc->dd, &other->dd);
  parity_xsum_merge(&acc->nn, &other->nn);
}

double parity_rel_acc_value(const parity_rel_acc *acc) {
  const double dd = parity_xsum_value(&acc->dd), nn = parity_xsum_value(&acc->nn);
  return nn > 0 ? sqrt(dd / nn) : (dd > 0 ? INFINITY : 0);
}

/* parity_metrics_blocks: the blocks' sums and elem_rel in parallel over
 * groups of rows -- the rows of one block index on the first three axes,
 * (a / bl[0], b / bl[1], c / bl[2]) = g, so the groups own disjoint blocks
 * k = g * nbk[3] + d / bl[3].  A group visits its rows in memory order, so
 * each block's sums accumulate in the same order as one pass from 0. */
typedef struct {
  int64_t lo[3], hi[3];
} rows3;

static rows3 group_rows(int64_t g, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4]) {
  rows3 w;
  int64_t j[3] = {g / (nbk[1] * nbk[2]), g / nbk[2] % nbk[1], g % nbk[2]};
  for (int a = 0; a < 3; a++) {
    w.lo[a] = j[a] * bl[a];
    w.hi[a] = w.lo[a] + bl[a] < dims[a] ? w.lo[a] + bl[a] : dims[a];
  }
  return w;
}

/* Iterates the rows of group w: i is the flat index of each row's start. */
#define FOR_ROWS(w, dims, i)                                                                       \
  for (int64_t a_ = (w).lo[0]; a_ < (w).hi[0]; a_++)                                               \
    for (int64_t b_ = (w).lo[1]; b_ < (w).hi[1]; b_++)                                             \
      for (int64_t c_ = (w).lo[2], i = ((a_ * (dims)[1] + b_) * (dims)[2] + c_) * (dims)[3]; c_ < (w).hi[2]; \
           c_++, i += (dims)[3])

/* Sums of (x - r)^2 and r^2 per block of group g; a non-finite x marks its
 * block.  Each row is walked in segments of bl[3], one block each, its sums
 * carried in registers (the same additions in the same order as adding to
 * d2[k] element by element). */
HOT void group_sums(VARGS, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t g, double *d2,
                    double *r2, unsigned char *bad) {
  const rows3 w = group_rows(g, dims, bl, nbk);
  const int64_t D = dims[3], B3 = bl[3];
  double *gd = d2 + g * nbk[3], *gr = r2 + g * nbk[3];
  unsigned char *gb = bad + g * nbk[3];
  FOR_ROWS(w, dims, i0) {
    for (int64_t j = 0, d0 = 0; d0 < D; j++, d0 += B3) {
      const size_t lo = (size_t)(i0 + d0), hi = (size_t)(i0 + (d0 + B3 < D ? d0 + B3 : D));
      double sd = gd[j], sr = gr[j];
      int nonfinite = 0;
      for (size_t i = lo; i < hi; i++) {
        const double xi = XV(i), ri = RV(i);
        nonfinite |= !isfinite(xi);
        double df = xi - ri;
        sd += df * df;
        sr += ri * ri;
      }
      gd[j] = sd, gr[j] = sr;
      if (nonfinite) gb[j] = 1;
    }
  }
}

/* elem_rel's view of one group: its first element that differs (i0; -1:
 * none) with its q0, and its greatest non-NaN q with the first index
 * attaining it (best < 0: none). */
typedef struct {
  double q0, best;
  int64_t i0, arg;
} erel;

/* Each element against max(|r|, the RMS of r over its block, rel_floor);
 * rms[k] holds the block RMS.  fk = max(rms, floor) is one value per
 * block, taken once per row segment; it is not NaN (floor is finite, fmax
 * drops a NaN RMS) and no term is -0 (sums of squares from +0, fabs), so
 * the per-element maximum needs no call to fmax. */
HOT void group_elem(VARGS, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t g,
                    const double *rms, double floor, erel *o) {
  const rows3 w = group_rows(g, dims, bl, nbk);
  const int64_t D = dims[3], B3 = bl[3];
  const double *gm = rms + g * nbk[3];
  erel v = {0, -1, -1, -1};
  FOR_ROWS(w, dims, i0) {
    for (int64_t j = 0, d0 = 0; d0 < D; j++, d0 += B3) {
      const size_t lo = (size_t)(i0 + d0), hi = (size_t)(i0 + (d0 + B3 < D ? d0 + B3 : D));
      const double fk = fmax(gm[j], floor);
      for (size_t i = lo; i < hi; i++) {
        const double xi = XV(i), ri = RV(i);
        double df = isfinite(xi) ? fabs(xi - ri) : INFINITY;
        if (df == 0) continue;
        const double ar = fabs(ri); /* fmax(ar, fk) inline: fk is never NaN, neither is -0 */
        double den = isnan(ar) || fk > ar ? fk : ar;
        double q = den > 0 ? df / den : INFINITY;
        if (v.i0 < 0) v.i0 = (int64_t)i, v.q0 = q;
        if (q > v.best) v.best = q, v.arg = (int64_t)i;
      }
    }
  }
  *o = v;
}

/* elem_rel as one pass from 0 would find it (best starts at the first
 * differing element's q and grows on strictly greater ones): a NaN there
 * sticks, else the greatest non-NaN q at its first index. */
/* One pass from 0 over items each summarised by an erel (whole indices):
 * a NaN at the first differing item sticks, else the greatest non-NaN
 * value at its least index; (0, -1) when none differs. */
static void erel_pick(const erel *o, int64_t n, double *best_out, int64_t *arg_out) {
  int64_t first = -1, arg = -1;
  double q0 = 0, best = 0;
  for (int64_t g = 0; g < n; g++)
    if (o[g].i0 >= 0 && (first < 0 || o[g].i0 < first)) first = o[g].i0, q0 = o[g].q0;
  if (first >= 0 && isnan(q0)) best = q0, arg = first;
  else if (first >= 0)
    for (int64_t g = 0; g < n; g++)
      if (o[g].best >= 0 && (arg < 0 || o[g].best > best || (o[g].best == best && o[g].arg < arg)))
        best = o[g].best, arg = o[g].arg;
  *best_out = best, *arg_out = arg;
}

static void elem_combine(const erel *o, int64_t ng, const int64_t dims[4], parity_metrics *m) {
  int64_t arg;
  erel_pick(o, ng, &m->elem_rel, &arg);
  if (arg >= 0) unflatten(arg, dims, m->elem_at);
}

static void blocks_sum(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                       const int64_t nbk[4], int64_t ng, double *d2, double *r2, unsigned char *bad) {
#pragma omp parallel for schedule(dynamic) num_threads(threads_for(ng, dims[0] * dims[1] * dims[2] * dims[3]))
  for (int64_t g = 0; g < ng; g++) FORMS(group_sums, x, r, dims, bl, nbk, g, d2, r2, bad);
}

static void blocks_elem(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                        const int64_t nbk[4], int64_t ng, const double *rms, erel *o, parity_metrics *m) {
#pragma omp parallel for schedule(dynamic) num_threads(threads_for(ng, dims[0] * dims[1] * dims[2] * dims[3]))
  for (int64_t g = 0; g < ng; g++) FORMS(group_elem, x, r, dims, bl, nbk, g, rms, m->rel_floor, &o[g]);
  elem_combine(o, ng, dims, m);
}

/* The worst block's normwise error against its floor, each block's r2
 * turned into its RMS for elem_rel; returns the worst block. */
static int64_t blocks_judge(const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t nb,
                            const double *d2, double *r2, const unsigned char *bad, parity_metrics *m) {
  int64_t worst = 0;
  for (int64_t k = 0; k < nb; k++) {
    /* the block's element count (the last block on an axis may be short) */
    int64_t rem = k, cnt = 1;
    for (int a = 3; a >= 0; a--) {
      int64_t j = rem % nbk[a], lo = j * bl[a], hi = lo + bl[a] < dims[a] ? lo + bl[a] : dims[a];
      cnt *= hi - lo;
      rem /= nbk[a];
    }
    double fl = sqrt((double)cnt) * m->rel_floor, nr = sqrt(r2[k]);
    double den = nr > fl ? nr : fl;
    double q = bad[k] ? INFINITY : d2[k] == 0 ? 0 : den > 0 ? sqrt(d2[k]) / den : INFINITY;
    if (q > m->block_rel) m->block_rel = q, worst = k;
    r2[k] = sqrt(r2[k] / (double)cnt); /* now the block's RMS, for elem_rel */
  }
  return worst;
}

int parity_metrics_blocks_v(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t block_len[4],
                            parity_metrics *m, gdn_error *e) {
  int64_t bl[4], nbk[4], nb = 1;
  for (int a = 0; a < 4; a++) {
    bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (bl[a] < 1) bl[a] = 1;
    nbk[a] = (dims[a] + bl[a] - 1) / bl[a];
    nb *= nbk[a];
  }
  m->block_rel = m->elem_rel = 0;
  memset(m->elem_at, 0, sizeof m->elem_at);
  m->n_blocks = nb;
  memcpy(m->block_len, bl, sizeof bl);
  if (nb == 0 || m->n == 0) return GDN_OK;
  const int64_t ng = nb / nbk[3];
  double *d2 = gdn_calloc((size_t)nb * 2, sizeof *d2, "block sums", e);
  unsigned char *bad = d2 ? gdn_calloc((size_t)nb, 1, "block flags", e) : NULL;
  erel *o = bad ? gdn_calloc((size_t)ng, sizeof *o, "element maxima", e) : NULL;
  if (o) {
    double *r2 = d2 + nb;
    blocks_sum(x, r, dims, bl, nbk, ng, d2, r2, bad);
    int64_t worst = blocks_judge(dims, bl, nbk, nb, d2, r2, bad, m);
    blocks_elem(x, r, dims, bl, nbk, ng, r2, o, m);
    for (int a = 3; a >= 0; a--) {
      int64_t j = worst % nbk[a];
      worst /= nbk[a];
      m->block_lo[a] = j * bl[a];
      m->block_hi[a] = m->block_lo[a] + bl[a] < dims[a] ? m->block_lo[a] + bl[a] : dims[a];
    }
  }
  gdn_free(o);
  gdn_free(d2);
  gdn_free(bad);
  return o ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
}

/* Block length per axis clamped to [1, dims], and the block counts. */
static int64_t blocks_layout(const int64_t dims[4], const int64_t block_len[4], int64_t bl[4], int64_t nbk[4]) {
  int64_t nb = 1;
  for (int a = 0; a < 4; a++) {
    bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (bl[a] < 1) bl[a] = 1;
    nbk[a] = (dims[a] + bl[a] - 1) / bl[a];
    nb *= nbk[a];
  }
  return nb;
}

int parity_blocks_acc_init(parity_blocks_acc *a, const int64_t dims[4], const int64_t block_len[4], int head_axis,
                           gdn_error *e) {
  memset(a, 0, sizeof *a);
  memcpy(a->dims, dims, sizeof a->dims);
  a->nb = blocks_layout(dims, block_len, a->bl, a->nbk);
  a->head_axis = head_axis;
  if (head_axis < 0 || head_axis > 3 || a->bl[head_axis] != 1)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "block sums by head group: blocks must lie inside one head");
  a->d2 = gdn_calloc((size_t)(a->nb ? 2 * a->nb : 1), sizeof *a->d2, "block sums", e);
  a->bad = a->d2 ? gdn_calloc((size_t)(a->nb ? a->nb : 1), 1, "block flags", e) : NULL;
  if (!a->bad) {
    gdn_free(a->d2);
    a->d2 = NULL;
    return e ? e->code : GDN_ERR_NOMEM;
  }
  return GDN_OK;
}

void parity_blocks_acc_clear(parity_blocks_acc *a) {
  gdn_free(a->d2);
  gdn_free(a->bad);
  memset(a, 0, sizeof *a);
}

/* The group's block sums (its own blocks: the same rows in the same order
 * as the whole pass sums them, every block being inside one head), then
 * each copied to its place among the whole tensor's blocks. */
int parity_blocks_acc_add_v(parity_blocks_acc *a, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int64_t gd[4], bl[4], nbk[4];
  memcpy(gd, a->dims, sizeof gd);
  gd[a->head_axis] = h1 - h0;
  const int64_t nb = blocks_layout(gd, a->bl, bl, nbk);
  if (nb == 0) return GDN_OK;
  double *d2 = gdn_calloc((size_t)nb * 2, sizeof *d2, "group block sums", e);
  unsigned char *bad = d2 ? gdn_calloc((size_t)nb, 1, "group block flags", e) : NULL;
  if (!bad) {
    gdn_free(d2);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  blocks_sum(x, r, gd, bl, nbk, nb / nbk[3], d2, d2 + nb, bad);
  for (int64_t k = 0; k < nb; k++) {
    int64_t rem = k, w = 0, j[4];
    for (int ax = 3; ax >= 0; ax--) j[ax] = rem % nbk[ax], rem /= nbk[ax];
    j[a->head_axis] += h0;
    for (int ax = 0; ax < 4; ax++) w = w * a->nbk[ax] + j[ax];
    a->d2[w] = d2[k], a->d2[a->nb + w] = d2[nb + k], a->bad[w] = bad[k];
  }
  gdn_free(d2);
  gdn_free(bad);
  return GDN_OK;
}

void parity_blocks_acc_value(parity_blocks_acc *a, parity_metrics *m) {
  m->block_rel = 0;
  m->n_blocks = a->nb;
  memcpy(m->block_len, a->bl, sizeof a->bl);
  if (a->nb == 0 || m->n == 0) return;
  int64_t worst = blocks_judge(a->dims, a->bl, a->nbk, a->nb, a->d2, a->d2 + a->nb, a->bad, m);
  for (int ax = 3; ax >= 0; ax--) {
    int64_t j = worst % a->nbk[ax];
    worst /= a->nbk[ax];
    m->block_lo[ax] = j * a->bl[ax];
    m->block_hi[ax] = m->block_lo[ax] + a->bl[ax] < a->dims[ax] ? m->block_lo[ax] + a->bl[ax] : a->dims[ax];
  }
}

int parity_block_map_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e) {
  const int64_t B = dims[0], T = dims[1], H = dims[2], D = dims[3];
  const int64_t nblk = (T + block - 1) / block, bins = (nblk + per_bin - 1) / per_bin;
  for (int64_t i = 0; i < H * bins; i++) out[i] = 0;
  double *acc = gdn_calloc((size_t)(2 * H), sizeof *acc, "block map sums", e);
  if (!acc) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < nblk; k++) {
      int64_t t0 = k * block, t1 = t0 + block < T ? t0 + block : T;
      memset(acc, 0, (size_t)(2 * H) * sizeof *acc);
      for (int64_t t = t0; t < t1; t++)
        for (int64_t h = 0; h < H; h++) {
          const size_t at = (size_t)(((b * T + t) * H + h) * D);
          for (int64_t d = 0; d < D; d++) {
            double xd = AT(x, at + (size_t)d), rd = AT(r, at + (size_t)d);
            double df = isfinite(xd) ? xd - rd : INFINITY;
            acc[2 * h] += df * df;
            acc[2 * h + 1] += rd * rd;
          }
        }
      double fl = sqrt((double)((t1 - t0) * D)) * rel_floor;
      for (int64_t h = 0; h < H; h++) {
        double nr = sqrt(acc[2 * h + 1]), den = nr > fl ? nr : fl;
        double q = acc[2 * h] == 0 ? 0 : den > 0 ? sqrt(acc[2 * h]) / den : INFINITY;
        if (isnan(q)) q = INFINITY;
        double *o = &out[h * bins + k / per_bin];
        if (q > *o) *o = q;
      }
    }
  gdn_free(acc);
  return GDN_OK;
}

/* parity_metrics_stream (parity_metrics.h). */
typedef struct {
  const parity_group_src *src;
  int64_t dims[4];
  size_t inner, per_head; /* elements after the head axis; per head */
  gdn_dtype t;
  gdn_ulp_fmt f;
  int nt;
  parity_metrics_acc acc;
  parity_blocks_acc blk;
  parity_xsum *rows2;  /* pass A: sum of ||r_row||^2 (exact) */
  double row_floor;
  /* pass B */
  int64_t *hist;       /* nt + 1 slots of RADIX */
  tstate *ts;
  msel ms;
  sink sk;
  double rel_best;
  int64_t rel_at;
  erel *elem;          /* one per whole row group of blocks */
  int64_t n_elem;
  erel rows;           /* row_rel's summary over whole row indices */
} mstream;

/* Group [h0, h1)'s slab map and its own dims. */
static parity_slab slab_of(const mstream *S, int64_t h0, int64_t h1, int64_t gd[4]) {
  const int ax = S->src->head_axis;
  size_t outer = 1;
  for (int i = 0; i < ax; i++) outer *= (size_t)S->dims[i];
  memcpy(gd, S->dims, 4 * sizeof *gd);
  gd[ax] = h1 - h0;
  return (parity_slab){outer, (size_t)(h1 - h0) * S->inner, (size_t)S->dims[ax] * S->inner, (size_t)h0 * S->inner};
}

/* Rows of the group in chunks of ROWS: pass A adds ||r_row||^2 exactly;
 * pass B summarises row_rel against the floor in whole row indices. */
static void rows_group(mstream *S, parity_vals x, parity_vals r, const parity_slab *sl, int pass_b) {
  const int64_t len = S->dims[3], n_rows = (int64_t)(sl->runs * sl->len) / len;
  double v[ROWS];
  for (int64_t q = 0; q < n_rows; q += ROWS) {
    const int64_t cnt = n_rows - q < ROWS ? n_rows - q : ROWS;
    rows_eval(pass_b ? x : NONE, r, q, cnt, len, pass_b ? S->row_floor : 0, v);
    for (int64_t j = 0; j < cnt; j++) {
      if (!pass_b) {
        parity_xsum_add(S->rows2, v[j] * v[j]);
        continue;
      }
      if (v[j] == -1) continue;
      const int64_t w = slab_full(sl, (size_t)((q + j) * len)) / len;
      erel *o = &S->rows;
      if (o->i0 < 0 || w < o->i0) o->i0 = w, o->q0 = v[j];
      if (!isnan(v[j]) && (o->arg < 0 || v[j] > o->best || (v[j] == o->best && w < o->arg))) o->best = v[j], o->arg = w;
    }
  }
}

static int pass_a_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int64_t gd[4];
  const parity_slab sl = slab_of(S, h0, h1, gd);
  int rc = parity_metrics_acc_add_v(&S->acc, x, r, &sl, S->t, e);
  if (!rc) rc = parity_blocks_acc_add_v(&S->blk, x, r, h0, h1, e);
  if (!rc && S->dims[3] > 0) rows_group(S, x, r, &sl, 0);
  return rc;
}

/* elem_rel over the group's blocks, its erels moved to whole indices. */
static int elem_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, const int64_t gd[4],
                      const parity_slab *sl, double floor, gdn_error *e) {
  const parity_blocks_acc *B = &S->blk;
  int64_t bl[4], nbk[4];
  const int64_t nb = blocks_layout(gd, B->bl, bl, nbk), ng = nb / nbk[3];
  double *rms = gdn_calloc((size_t)(nb ? nb : 1), sizeof *rms, "group block RMS", e);
  erel *o = rms ? gdn_calloc((size_t)(ng ? ng : 1), sizeof *o, "group element maxima", e) : NULL;
  if (!o) {
    gdn_free(rms);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  for (int64_t k = 0; k < nb; k++) { /* the group's block k among the whole's */
    int64_t rem = k, w = 0, j[4];
    for (int ax = 3; ax >= 0; ax--) j[ax] = rem % nbk[ax], rem /= nbk[ax];
    j[B->head_axis] += h0;
    for (int ax = 0; ax < 4; ax++) w = w * B->nbk[ax] + j[ax];
    rms[k] = B->d2[B->nb + w];
  }
#pragma omp parallel for schedule(dynamic) num_threads(threads_for(ng, (int64_t)(sl->runs * sl->len)))
  for (int64_t g = 0; g < ng; g++) FORMS(group_elem, x, r, gd, bl, nbk, g, rms, floor, &o[g]);
  for (int64_t g = 0; g < ng; g++) {
    if (o[g].i0 >= 0) o[g].i0 = slab_full(sl, (size_t)o[g].i0);
    if (o[g].arg >= 0) o[g].arg = slab_full(sl, (size_t)o[g].arg);
    S->elem[S->n_elem++] = o[g];
  }
  gdn_free(o);
  gdn_free(rms);
  return GDN_OK;
}

static int pass_b_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, int64_t h1, double rel_floor,
                        gdn_error *e) {
  int64_t gd[4];
  const parity_slab sl = slab_of(S, h0, h1, gd);
  const size_t n = sl.runs * sl.len, nb = (n + BLOCK - 1) / BLOCK;
  partial *p = gdn_calloc(nb ? nb : 1, sizeof *p, "metric partials", e);
  if (!p) return e ? e->code : GDN_ERR_NOMEM;
  pass2(x, r, n, S->f, rel_floor, p, &S->ms, S->ts, &S->sk, S->nt);
  double m = 0;
  size_t a = 0;
  for (size_t bi = 0; bi < nb; bi++)
    if (p[bi].rel_max > m) m = p[bi].rel_max, a = p[bi].rel_at;
  gdn_free(p);
  if (m > 0) {
    const int64_t w = slab_full(&sl, a);
    if (m > S->rel_best || (m == S->rel_best && w < S->rel_at)) S->rel_best = m, S->rel_at = w;
  }
  if (S->dims[3] > 0) rows_group(S, x, r, &sl, 1);
  return S->blk.nb > 0 ? elem_group(S, x, r, h0, gd, &sl, rel_floor, e) : GDN_OK;
}

static void mstream_clear(mstream *S) {
  parity_metrics_acc_clear(&S->acc);
  parity_blocks_acc_clear(&S->blk);
  gdn_free(S->rows2);
  gdn_free(S->hist);
  gdn_free(S->ts);
  gdn_free(S->elem);
}

static int mstream_init(mstream *S, const parity_group_src *src, const int64_t dims[4], const int64_t block_len[4],
                        gdn_dtype t, gdn_error *e) {
  memset(S, 0, sizeof *S);
  S->src = src;
  memcpy(S->dims, dims, sizeof S->dims);
  S->t = t;
  S->f = gdn_dtype_ulp_fmt(t);
  S->inner = 1;
  for (int i = src->head_axis + 1; i < 4; i++) S->inner *= (size_t)dims[i];
  S->per_head = S->inner;
  for (int i = 0; i < src->head_axis; i++) S->per_head *= (size_t)dims[i];
  const size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  S->nt = gdn_threads_for((int64_t)((n + BLOCK - 1) / BLOCK));
  S->rel_at = 0;
  S->rows = (erel){0, -1, -1, -1};
  if (src->head_axis < 0 || src->head_axis > 2)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "metrics by head group: the head axis must be 0, 1 or 2");
  int rc = parity_metrics_acc_init(&S->acc, e);
  if (!rc) rc = parity_blocks_acc_init(&S->blk, dims, block_len, src->head_axis, e);
  if (rc) return rc;
  S->rows2 = gdn_calloc(1, sizeof *S->rows2, "row norm sum", e);
  S->hist = S->rows2 ? gdn_calloc((size_t)(S->nt + 1) * RADIX, sizeof *S->hist, "median histograms", e) : NULL;
  S->ts = S->hist ? gdn_calloc((size_t)S->nt, sizeof *S->ts, "median thread state", e) : NULL;
  const int64_t ng = S->blk.nbk[3] ? S->blk.nb / S->blk.nbk[3] : 0;
  S->elem = S->ts ? gdn_calloc((size_t)(ng ? ng : 1), sizeof *S->elem, "element maxima", e) : NULL;
  return S->elem ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
}

/* After pass A: pass 1's fields, the blocks' statistic, the row floor and
 * the median's first round, as the whole pass has them before its pass 2. */
static void mstream_between(mstream *S, parity_metrics *m) {
  parity_metrics_acc_value(&S->acc, S->dims, S->t, m);
  const int64_t n_rows = S->dims[3] > 0 ? m->n / S->dims[3] : 0;
  S->row_floor = n_rows > 0 ? sqrt(parity_xsum_value(S->rows2) / (double)n_rows) : 0;
  parity_blocks_acc_value(&S->blk, m);
  memcpy(S->hist, S->acc.top, RADIX * sizeof *S->hist);
  if (m->n) median_prepare(S->hist, S->nt, (size_t)m->n, &S->ms, S->ts, &S->sk);
}

/* The incremental form (parity_metrics.h). */
struct parity_mstream {
  mstream S;
  parity_metrics m;
};

int parity_mstream_new(parity_mstream **out, const parity_group_src *src, const int64_t dims[4],
                       const int64_t block_len[4], gdn_dtype t, gdn_error *e) {
  parity_mstream *M = gdn_calloc(1, sizeof *M, "metrics by head group", e);
  *out = M;
  if (!M) return e ? e->code : GDN_ERR_NOMEM;
  return mstream_init(&M->S, src, dims, block_len, t, e);
}

void parity_mstream_free(parity_mstream *M) {
  if (!M) return;
  mstream_clear(&M->S);
  gdn_free(M);
}

static int check_heads(const mstream *S, int64_t h0, int64_t h1, gdn_error *e) {
  if (h0 >= 0 && h1 > h0 && h1 <= S->dims[S->src->head_axis]) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "head group: heads [%lld, %lld) outside [0, %lld)", (long long)h0,
                       (long long)h1, (long long)S->dims[S->src->head_axis]);
}

int parity_mstream_add_a(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int rc = check_heads(&M->S, h0, h1, e);
  return rc ? rc : pass_a_group(&M->S, x, r, h0, h1, e);
}

void parity_mstream_between(parity_mstream *M) {
  memset(&M->m, 0, sizeof M->m);
  mstream_between(&M->S, &M->m);
}

int parity_mstream_add_b(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  if (!M->m.n) return GDN_OK;
  int rc = check_heads(&M->S, h0, h1, e);
  return rc ? rc : pass_b_group(&M->S, x, r, h0, h1, M->m.rel_floor, e);
}

int parity_mstream_finish(parity_mstream *M, parity_metrics *m, gdn_error *e) {
  mstream *S = &M->S;
  *m = M->m;
  int rc = GDN_OK;
  if (m->n) {
    m->max_rel = S->rel_best;
    unflatten(S->rel_at, S->dims, m->rel_at);
    tstate_combine(S->ts, S->nt);
    const usrc u = {NONE, NONE, (size_t)m->n, S->src, S->per_head};
    rc = median_finish(&u, S->f, &S->ms, S->ts, &S->sk, S->hist, S->nt, &m->median_ulp, e);
  }
  if (!rc && S->dims[3] > 0) {
    int64_t arg;
    erel_pick(&S->rows, 1, &m->row_rel, &arg);
    m->row_worst = arg;
  }
  if (!rc && S->blk.nb > 0 && m->n > 0) {
    int64_t arg;
    erel_pick(S->elem, S->n_elem, &m->elem_rel, &arg);
    if (arg >= 0) unflatten(arg, S->dims, m->elem_at);
  }
  return rc;
}

/* Reads every group through the source and hands it to pass A or B. */
static int stream_pass_m(parity_mstream *M, int pass_b, gdn_error *e) {
  const parity_group_src *src = M->S.src;
  for (int64_t g = 0; g < src->n_groups; g++) {
    parity_vals x, r;
    int64_t h0, h1;
    int rc = src->get(src->ctx, g, &x, &r, &h0, &h1, e);
    if (!rc && check_heads(&M->S, h0, h1, NULL))
      rc = gdn_error_set(e, GDN_ERR_INTERNAL, "head group %lld: heads [%lld, %lld) outside [0, %lld)", (long long)g,
                         (long long)h0, (long long)h1, (long long)M->S.dims[src->head_axis]);
    if (!rc) rc = pass_b ? parity_mstream_add_b(M, x, r, h0, h1, e) : parity_mstream_add_a(M, x, r, h0, h1, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

int parity_metrics_stream(const parity_group_src *src, const int64_t dims[4], const int64_t block_len[4], gdn_dtype t,
                          parity_metrics *m, gdn_error *e) {
  parity_mstream *M;
  memset(m, 0, sizeof *m);
  int rc = parity_mstream_new(&M, src, dims, block_len, t, e);
  if (!rc) rc = stream_pass_m(M, 0, e);
  if (!rc) {
    parity_mstream_between(M);
    rc = stream_pass_m(M, 1, e);
  }
  if (!rc) rc = parity_mstream_finish(M, m, e);
  if (rc) memset(m, 0, sizeof *m);
  parity_mstream_free(M);
  return rc;
}

/* The same metrics of values held as binary64 (tests, fixtures' outputs). */
#define V64(p) parity_vals_f64(p)
double parity_row_rel(const double *x, const double *r, int64_t n_rows, int64_t len, int64_t *worst) {
  return parity_row_rel_v(V64(x), V64(r), n_rows, len, worst);
}
int parity_metrics_compute(const double *x, const double *r, const int64_t dims[4], gdn_dtype t,
                           parity_metrics *m, gdn_error *e) {
  return parity_metrics_compute_v(V64(x), V64(r), dims, t, m, e);
}
int parity_metrics_blocks(const double *x, const double *r, const int64_t dims[4], const int64_t block_len[4],
                          parity_metrics *m, gdn_error *e) {
  return parity_metrics_blocks_v(V64(x), V64(r), dims, block_len, m, e);
}
int parity_block_map_o(const double *x, const double *r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e) {
  return parity_block_map_o_v(V64(x), V64(r), dims, block, rel_floor, per_bin, out, e);
}
void parity_profile_o(const double *x, const double *r, const int64_t dims[4], int64_t block, double *out) {
  parity_profile_o_v(V64(x), V64(r), dims, block, out);
}
double parity_max_abs_rows(const double *x, const double *r, const int64_t dims[4], int64_t t0, int64_t t1) {
  return parity_max_abs_rows_v(V64(x), V64(r), dims, t0, t1);
}
double parity_allclose_ratio(const double *x, const double *r, size_t n, double rtol, double atol) {
  return parity_allclose_ratio_v(V64(x), V64(r), n, rtol, atol);
}
