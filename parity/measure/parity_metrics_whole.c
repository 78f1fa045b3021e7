/* parity_metrics: pass 1 and pass 2 over a whole tensor, and the ULP median (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

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
void pm_pass1(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, partial *p, int64_t *top, parity_xsum *sums,
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

void pm_pass2(parity_vals x, parity_vals r, size_t n, gdn_ulp_fmt f, double floor, partial *p,
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

/* Calls fn(x, r, n, arg) for the whole pair or for each group's. */
static int usrc_each(const usrc *u, void (*fn)(parity_vals, parity_vals, size_t, void *), void *arg, gdn_error *e) {
  if (!u->src) {
    fn(u->x, u->r, u->n, arg);
    return GDN_OK;
  }
  for (int64_t g = 0; g < u->src->n_groups; g++) {
    parity_vals x, r;
    int64_t h0, h1;
    if (u->src->holds && !u->src->holds(u->src->ctx, g)) continue; /* another process counts it */
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
    if (u->src && u->src->sum_i64 && (rc = u->src->sum_i64(u->src->ctx, hist, RADIX, e))) return rc;
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
  if (!rc && u->src && u->src->min_f64) rc = u->src->min_f64(u->src->ctx, &a.best, e);
  *out = a.best;
  return rc;
}

/* The values of the bucket a thread-state set found (combined: minima and
 * maxima are exact in any order; histograms are integer sums). */
void pm_tstate_combine(tstate *ts, int nt) {
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
int pm_median_finish(const usrc *u, gdn_ulp_fmt f, const msel *ms, const tstate *ts, const sink *s,
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

/* rel_fro and ref_fro from the exact sums; a non-finite x makes max_abs,
 * rel_fro and max_ulp +inf (parity_metrics.h). */
void pm_finish_sums(parity_metrics *m, double sd2, double sr2) {
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
  pm_finish_sums(m, sd2, sr2);
  return arg;
}

/* After pass 1 (per-thread top-16 histograms in hist): the bucket of the
 * k-th smallest ULP value, k = (n - 1) / 2, and the next non-empty one; the
 * thread states for pass 2, and the room for the bucket's values when they
 * are at most RADIX: hist's last slot (hist holds nt + 1 slots of RADIX).
 * A fixed size, so a run's memory beyond its inputs and outputs does not
 * grow with them (test_cli); a larger bucket is either all one value (the
 * common case: min = max, pm_median_finish) or takes the radix rounds. */
void pm_median_prepare(int64_t *hist, int nt, size_t n, msel *ms, tstate *ts, sink *s) {
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
void pm_unflatten(int64_t flat, const int64_t dims[4], int64_t out[4]) {
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
  pm_median_prepare(hist, nt, n, &ms, ts, &s);
  pm_pass2(x, r, n, f, m->rel_floor, p, &ms, ts, &s, nt);
  for (size_t bi = 0; bi < nb; bi++)
    if (p[bi].rel_max > m->max_rel) m->max_rel = p[bi].rel_max, at = p[bi].rel_at;
  pm_unflatten((int64_t)at, dims, m->rel_at);
  pm_tstate_combine(ts, nt);
  const usrc u = {x, r, n, NULL, 0};
  (void)pm_median_finish(&u, f, &ms, ts, &s, hist, nt, &m->median_ulp, NULL); /* whole tensors: cannot fail */
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
    pm_pass1(x, r, n, f, p, hist, sums, nt);
    int64_t nf_at;
    int64_t arg = pass1_combine(p, nb, sums, nt, m, &nf_at);
    if (nf_at >= 0) pm_unflatten(nf_at, dims, m->nonfinite_at);
    /* Componentwise relative error with the floor (needs max |r| first). */
    m->rel_floor = gdn_dtype_unit_roundoff(t) * m->ref_max_abs;
    if (n) metrics_pass2(x, r, dims, f, p, hist, ts, nt, m);
    if (dims[3] > 0) m->row_rel = parity_row_rel_v(x, r, (int64_t)n / dims[3], dims[3], &m->row_worst);
    if (arg >= 0) {
      pm_unflatten(arg, dims, m->worst);
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
