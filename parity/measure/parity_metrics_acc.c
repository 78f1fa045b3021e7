/* parity_metrics: the normwise metrics accumulated slab by slab (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

/* parity_metrics_acc (parity_metrics.h): pass 1 over one slab.  Slab
 * element i is whole element full(i); full is increasing in i, so a block's
 * first maximum in slab order is its least whole index among the maxima. */
int64_t pm_slab_full(const parity_slab *sl, size_t i) {
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
  pm_pass1(x, r, n, f, p, hist, sums, nt);
  for (int j = 0; j < nt; j++) {
    parity_xsum_merge(&a->d2, &sums[2 * j]);
    parity_xsum_merge(&a->r2, &sums[2 * j + 1]);
    for (int i = 0; i < RADIX; i++) a->top[i] += hist[(size_t)j * RADIX + i];
  }
  for (size_t bi = 0; bi < nb; bi++) {
    const partial *q = &p[bi];
    if (q->arg >= 0) acc_take(a, q->max_abs, pm_slab_full(sl, (size_t)q->arg), AT(x, q->arg), AT(r, q->arg));
    if (q->max_ulp > a->max_ulp) a->max_ulp = q->max_ulp;
    if (q->max_r > a->max_r) a->max_r = q->max_r;
    a->zero_ref += q->zero_ref;
    if (q->nonfinite) {
      const int64_t at = pm_slab_full(sl, (size_t)q->nf_at);
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
  if (a->nf_at >= 0) pm_unflatten(a->nf_at, dims, m->nonfinite_at);
  pm_finish_sums(m, parity_xsum_value(&a->d2), parity_xsum_value(&a->r2));
  m->rel_floor = gdn_dtype_unit_roundoff(t) * m->ref_max_abs;
  if (a->arg >= 0) {
    pm_unflatten(a->arg, dims, m->worst);
    m->worst_x = a->arg_x;
    m->worst_ref = a->arg_r;
  }
}
