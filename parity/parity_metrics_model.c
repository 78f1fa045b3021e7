/* parity_metrics_model: a pair's statistics against the error model's
 * per-element scale (parity_metrics.h, parity_model_stats). */
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_metrics.h"
#include "parity_xsum.h"

static double lam_point(double n) { return sqrt(2 * log(2 * (n > 1 ? n : 1) / PARITY_MODEL_ALPHA)); }
static double lam_norm(double n) { return 1 + sqrt(2 * log((n > 1 ? n : 1) / PARITY_MODEL_ALPHA)); }

/* Adds the point (a, q) of item `at` to the frontier. */
static void front_add(parity_model_front *f, double a, double q, int64_t at) {
  if (isnan(a)) a = INFINITY;
  if (isnan(q)) q = INFINITY;
  int k = 0;
  while (k < f->n && f->a[k] < a) k++;
  /* dominated by a point with a' >= a and q' >= q: those are k.. (q falling, so f->q[k] is their largest) */
  if (k < f->n && f->q[k] >= q) return;
  /* remove the points it dominates: j < k (a' < a) with q' <= q, a run just below k */
  int lo = k;
  while (lo > 0 && f->q[lo - 1] <= q) lo--;
  int hi = k; /* and a' == a with q' < q */
  while (hi < f->n && f->a[hi] == a && f->q[hi] <= q) hi++;
  const int tail = f->n - hi;
  memmove(&f->a[lo + 1], &f->a[hi], (size_t)tail * sizeof f->a[0]);
  memmove(&f->q[lo + 1], &f->q[hi], (size_t)tail * sizeof f->q[0]);
  memmove(&f->at[lo + 1], &f->at[hi], (size_t)tail * sizeof f->at[0]);
  f->a[lo] = a, f->q[lo] = q, f->at[lo] = at;
  f->n = lo + 1 + tail;
  if (f->n < PARITY_MODEL_FRONT) return;
  /* full: merge the neighbours j, j + 1 whose merge raises a figure least, into (a_{j+1}, q_j) */
  int best = 0;
  double cost = INFINITY;
  for (int j = 0; j + 1 < f->n; j++) {
    const double c = fmax(f->a[j + 1] / (f->a[j] > 0 ? f->a[j] : 1e-300), f->q[j] / (f->q[j + 1] > 0 ? f->q[j + 1] : 1e-300));
    if (c < cost) cost = c, best = j;
  }
  f->a[best] = f->a[best + 1]; /* q[best] is the larger q: kept; at: the larger a's item */
  f->at[best] = f->at[best + 1];
  memmove(&f->a[best + 1], &f->a[best + 2], (size_t)(f->n - best - 2) * sizeof f->a[0]);
  memmove(&f->q[best + 1], &f->q[best + 2], (size_t)(f->n - best - 2) * sizeof f->q[0]);
  memmove(&f->at[best + 1], &f->at[best + 2], (size_t)(f->n - best - 2) * sizeof f->at[0]);
  f->n--;
}

double parity_model_front_rho(const parity_model_front *f, double L, double *a, int64_t *at) {
  double rho = 0;
  if (a) *a = 0;
  if (at) *at = -1;
  for (int k = 0; k < f->n; k++) {
    const double qk = L > 0 ? f->q[k] / L : INFINITY, v = f->a[k] < qk ? f->a[k] : qk;
    if (v > rho || (at && *at < 0)) {
      rho = v;
      if (a) *a = f->a[k];
      if (at) *at = f->at[k];
    }
  }
  return rho;
}

static void item(parity_model_front *f, double d, double q, double sc, double lam, int64_t at) {
  if (d == 0) return;
  front_add(f, sc > 0 ? d / (lam * sc) : INFINITY, q, at);
}

typedef struct {
  int64_t bl[4], nbk[4], nb;
  double *d2, *r2, *s2;
  unsigned char *bad;
} mblocks;

static int64_t block_of(const mblocks *b, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((i0 / b->bl[0] * b->nbk[1] + i1 / b->bl[1]) * b->nbk[2] + i2 / b->bl[2]) * b->nbk[3] + i3 / b->bl[3];
}

static int64_t block_count(const mblocks *b, const int64_t dims[4], int64_t k) {
  int64_t rem = k, cnt = 1;
  for (int a = 3; a >= 0; a--) {
    int64_t j = rem % b->nbk[a], lo = j * b->bl[a], hi = lo + b->bl[a] < dims[a] ? lo + b->bl[a] : dims[a];
    cnt *= hi - lo;
    rem /= b->nbk[a];
  }
  return cnt;
}

/* Pass 1: block sums, the rows' RMS norm of r, sum s^2 (exact). */
static double pass_sums(parity_vals x, parity_vals r, const double *s, const int64_t dims[4], mblocks *b,
                        parity_xsum *ss) {
  static __thread parity_xsum rr; /* 32 KiB: not on the stack */
  parity_xsum_init(&rr);
  const int64_t D = dims[3];
  int64_t i = 0;
  for (int64_t i0 = 0; i0 < dims[0]; i0++)
    for (int64_t i1 = 0; i1 < dims[1]; i1++)
      for (int64_t i2 = 0; i2 < dims[2]; i2++) {
        double rn = 0;
        for (int64_t i3 = 0; i3 < D; i3++, i++) {
          const int64_t k = block_of(b, i0, i1, i2, i3);
          const double xi = parity_vals_at(x, (size_t)i), ri = parity_vals_at(r, (size_t)i), df = xi - ri;
          if (!isfinite(xi)) b->bad[k] = 1;
          b->d2[k] += df * df, b->r2[k] += ri * ri, b->s2[k] += s[i] * s[i];
          rn += ri * ri;
          parity_xsum_add(ss, s[i] * s[i]);
        }
        parity_xsum_add(&rr, rn);
      }
  const int64_t rows = D > 0 ? i / D : 0;
  return rows > 0 ? sqrt(parity_xsum_value(&rr) / (double)rows) : 0;
}

/* Pass 2: elements and rows. */
static void pass_items(parity_vals x, parity_vals r, const double *s, const int64_t dims[4], const mblocks *b,
                       double rel_floor, double row_floor, parity_model_stats *ms) {
  const int64_t D = dims[3];
  int64_t i = 0, row = 0;
  for (int64_t i0 = 0; i0 < dims[0]; i0++)
    for (int64_t i1 = 0; i1 < dims[1]; i1++)
      for (int64_t i2 = 0; i2 < dims[2]; i2++, row++) {
        double dn = 0, rn = 0, sn = 0;
        for (int64_t i3 = 0; i3 < D; i3++, i++) {
          const int64_t k = block_of(b, i0, i1, i2, i3);
          const double rms = sqrt(b->r2[k] / (double)block_count(b, dims, k));
          const double xi = parity_vals_at(x, (size_t)i), ri = parity_vals_at(r, (size_t)i);
          const double df = isfinite(xi) ? fabs(xi - ri) : INFINITY;
          const double den = fmax(fabs(ri), fmax(rms, rel_floor));
          item(&ms->elem, df, den > 0 ? df / den : INFINITY, s[i], ms->lam_elem, i);
          dn += df * df, rn += ri * ri, sn += s[i] * s[i];
        }
        const double den = fmax(sqrt(rn), row_floor), d = sqrt(dn);
        item(&ms->row, d, den > 0 ? d / den : INFINITY, sqrt(sn), ms->lam_row, row);
      }
}

static void pass_blocks(const int64_t dims[4], const mblocks *b, double rel_floor, parity_model_stats *ms) {
  for (int64_t k = 0; k < b->nb; k++) {
    const double fl = sqrt((double)block_count(b, dims, k)) * rel_floor, nr = sqrt(b->r2[k]);
    const double den = nr > fl ? nr : fl, d = b->bad[k] ? INFINITY : sqrt(b->d2[k]);
    item(&ms->block, d, b->bad[k] ? INFINITY : den > 0 ? d / den : INFINITY, sqrt(b->s2[k]), ms->lam_block, k);
  }
}

int parity_metrics_model_v(parity_vals x, parity_vals r, const double *s, const int64_t dims[4],
                           const int64_t block_len[4], parity_metrics *m, gdn_error *e) {
  parity_model_stats *ms = &m->model;
  memset(ms, 0, sizeof *ms);
  mblocks b = {{0}, {0}, 1, NULL, NULL, NULL, NULL};
  for (int a = 0; a < 4; a++) {
    b.bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (b.bl[a] < 1) b.bl[a] = 1;
    b.nbk[a] = (dims[a] + b.bl[a] - 1) / b.bl[a];
    b.nb *= b.nbk[a];
  }
  memcpy(ms->dims, dims, sizeof ms->dims);
  memcpy(ms->bl, b.bl, sizeof ms->bl);
  const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
  ms->has = 1;
  ms->lam_elem = lam_point((double)n);
  ms->lam_block = lam_norm((double)b.nb);
  ms->lam_row = lam_norm(dims[3] > 0 ? (double)(n / dims[3]) : 1);
  ms->lam_fro = lam_norm(1);
  if (n == 0) return GDN_OK;
  if (!(b.d2 = gdn_calloc((size_t)b.nb * 3, sizeof(double), "model block sums", e)) ||
      !(b.bad = gdn_calloc((size_t)b.nb, 1, "model block flags", e))) {
    gdn_free(b.d2);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  b.r2 = b.d2 + b.nb, b.s2 = b.r2 + b.nb;
  static __thread parity_xsum ss;
  parity_xsum_init(&ss);
  const double row_floor = pass_sums(x, r, s, dims, &b, &ss);
  ms->fro = m->ref_fro > 0 ? sqrt(parity_xsum_value(&ss)) / m->ref_fro : 0;
  pass_items(x, r, s, dims, &b, m->rel_floor, row_floor, ms);
  pass_blocks(dims, &b, m->rel_floor, ms);
  gdn_free(b.d2);
  gdn_free(b.bad);
  return GDN_OK;
}
