/* parity_metrics_model: a pair's statistics against the error model's
 * per-element scale (parity_metrics.h, parity_model_stats). */
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_metrics.h"
#include "parity_xsum.h"

static double lam_point(double n) { return sqrt(2 * log(2 * (n > 1 ? n : 1) / PARITY_MODEL_ALPHA)); }
static double lam_norm(double n) { return 1 + sqrt(2 * log((n > 1 ? n : 1) / PARITY_MODEL_ALPHA)); }

/* p dominates or equals-with-a-lesser-index q. */
static int covers(double a1, double q1, int64_t at1, double a2, double q2, int64_t at2) {
  return a1 >= a2 && q1 >= q2 && (a1 > a2 || q1 > q2 || at1 <= at2);
}

static void front_del(parity_model_front *f, int j) {
  memmove(&f->a[j], &f->a[j + 1], (size_t)(f->n - j - 1) * sizeof f->a[0]);
  memmove(&f->q[j], &f->q[j + 1], (size_t)(f->n - j - 1) * sizeof f->q[0]);
  memmove(&f->at[j], &f->at[j + 1], (size_t)(f->n - j - 1) * sizeof f->at[0]);
  f->n--;
}

/* Adds the point (a, q) of item `at` to the frontier (a set: the result
 * does not depend on the order points come in while it holds fewer than
 * PARITY_MODEL_FRONT). */
static void front_add(parity_model_front *f, double a, double q, int64_t at) {
  if (isnan(a)) a = INFINITY;
  if (isnan(q)) q = INFINITY;
  for (int j = 0; j < f->n; j++)
    if (covers(f->a[j], f->q[j], f->at[j], a, q, at)) return;
  for (int j = f->n - 1; j >= 0; j--)
    if (covers(a, q, at, f->a[j], f->q[j], f->at[j])) front_del(f, j);
  int k = 0;
  while (k < f->n && (f->a[k] < a || (f->a[k] == a && f->q[k] > q))) k++;
  memmove(&f->a[k + 1], &f->a[k], (size_t)(f->n - k) * sizeof f->a[0]);
  memmove(&f->q[k + 1], &f->q[k], (size_t)(f->n - k) * sizeof f->q[0]);
  memmove(&f->at[k + 1], &f->at[k], (size_t)(f->n - k) * sizeof f->at[0]);
  f->a[k] = a, f->q[k] = q, f->at[k] = at;
  f->n++;
  if (f->n < PARITY_MODEL_FRONT) return;
  /* full: merge the neighbours j, j + 1 whose merge raises a figure least, into (a_{j+1}, q_j) */
  int best = 0;
  double cost = INFINITY;
  for (int j = 0; j + 1 < f->n; j++) {
    const double c = fmax(f->a[j + 1] / (f->a[j] > 0 ? f->a[j] : 1e-300), f->q[j] / (f->q[j + 1] > 0 ? f->q[j + 1] : 1e-300));
    if (c < cost) cost = c, best = j;
  }
  f->a[best] = f->a[best + 1];
  f->at[best] = f->at[best + 1];
  front_del(f, best + 1);
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

struct parity_model_acc {
  int64_t dims[4], bl[4], nbk[4], nb;
  int axis;
  double *d2, *r2, *s2;
  unsigned char *bad;
  parity_xsum ss, rr;
  double row_floor, max_r, rel_floor, u;
  parity_model_stats st;
  /* Pass B's frontiers per group, by the group's first head (2 per head
   * along axis: elements, rows), folded in head order at finish: so the
   * result does not depend on the order the groups come in, nor on which
   * process measured which (a frontier that fills up merges neighbours, and
   * that depends on the order its points came in). */
  parity_model_front *gf;
  unsigned char *gused; /* per head: a group starts there */
};

static int64_t block_of(const parity_model_acc *b, const int64_t i[4]) {
  return ((i[0] / b->bl[0] * b->nbk[1] + i[1] / b->bl[1]) * b->nbk[2] + i[2] / b->bl[2]) * b->nbk[3] + i[3] / b->bl[3];
}

static int64_t block_count(const parity_model_acc *b, int64_t k) {
  int64_t rem = k, cnt = 1;
  for (int a = 3; a >= 0; a--) {
    int64_t j = rem % b->nbk[a], lo = j * b->bl[a], hi = lo + b->bl[a] < b->dims[a] ? lo + b->bl[a] : b->dims[a];
    cnt *= hi - lo;
    rem /= b->nbk[a];
  }
  return cnt;
}

size_t parity_model_acc_bytes(const int64_t dims[4], const int64_t block_len[4]) {
  size_t nb = 1;
  for (int a = 0; a < 4; a++) {
    const int64_t l = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    nb *= (size_t)((dims[a] + (l < 1 ? 1 : l) - 1) / (l < 1 ? 1 : l));
  }
  return sizeof(parity_model_acc) + nb * (3 * sizeof(double) + 1) + 3 * 64;
}

int parity_model_acc_new(parity_model_acc **A, const int64_t dims[4], const int64_t block_len[4], int head_axis,
                         gdn_dtype ulp_dtype, gdn_error *e) {
  parity_model_acc *b = gdn_calloc(1, sizeof *b, "model statistics", e);
  if (!b) return e ? e->code : GDN_ERR_NOMEM;
  b->u = gdn_dtype_unit_roundoff(ulp_dtype);
  b->nb = 1;
  b->axis = head_axis;
  for (int a = 0; a < 4; a++) {
    b->dims[a] = dims[a];
    b->bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (b->bl[a] < 1) b->bl[a] = 1;
    b->nbk[a] = (dims[a] + b->bl[a] - 1) / b->bl[a];
    b->nb *= b->nbk[a];
  }
  parity_xsum_init(&b->ss);
  parity_xsum_init(&b->rr);
  const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
  parity_model_stats *ms = &b->st;
  ms->has = 1;
  memcpy(ms->dims, dims, sizeof ms->dims);
  memcpy(ms->bl, b->bl, sizeof ms->bl);
  ms->lam_elem = lam_point((double)n);
  ms->lam_block = lam_norm((double)b->nb);
  ms->lam_row = lam_norm(dims[3] > 0 ? (double)(n / dims[3]) : 1);
  ms->lam_fro = lam_norm(1);
  if (b->nb > 0 && (!(b->d2 = gdn_calloc((size_t)b->nb * 3, sizeof(double), "model block sums", e)) ||
                    !(b->bad = gdn_calloc((size_t)b->nb, 1, "model block flags", e)))) {
    parity_model_acc_free(b);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  if (b->d2) b->r2 = b->d2 + b->nb, b->s2 = b->r2 + b->nb;
  const size_t heads = (size_t)(dims[head_axis] > 0 ? dims[head_axis] : 1);
  if (!(b->gf = gdn_calloc(2 * heads, sizeof *b->gf, "model group frontiers", e)) ||
      !(b->gused = gdn_calloc(heads, 1, "model group flags", e))) {
    parity_model_acc_free(b);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  *A = b;
  return GDN_OK;
}

void parity_model_acc_free(parity_model_acc *A) {
  if (!A) return;
  gdn_free(A->d2);
  gdn_free(A->bad);
  gdn_free(A->gf);
  gdn_free(A->gused);
  gdn_free(A);
}

/* The group's shape (heads [h0, h1) on A's head axis) and its rows' loop:
 * w[] the whole index of each row's start, row the whole row index. */
#define FOR_GROUP_ROWS(A, h0, h1, g, w)                                                                            \
  int64_t g[4] = {(A)->dims[0], (A)->dims[1], (A)->dims[2], (A)->dims[3]};                                        \
  g[(A)->axis] = (h1) - (h0);                                                                                      \
  int64_t w[4] = {0, 0, 0, 0};                                                                                     \
  for (int64_t i0 = 0; i0 < g[0]; i0++)                                                                            \
    for (int64_t i1 = 0; i1 < g[1]; i1++)                                                                          \
      for (int64_t i2 = 0; i2 < g[2]; i2++)                                                                        \
        if ((w[0] = i0, w[1] = i1, w[2] = i2, w[3] = 0, w[(A)->axis] += (h0), 1))

void parity_model_acc_add_a(parity_model_acc *A, parity_vals x, parity_vals r, const double *s, int64_t h0, int64_t h1) {
  size_t i = 0;
  FOR_GROUP_ROWS(A, h0, h1, g, w) {
    double rn = 0;
    for (int64_t i3 = 0; i3 < g[3]; i3++, i++) {
      w[3] = i3;
      const int64_t k = block_of(A, w);
      const double xi = parity_vals_at(x, i), ri = parity_vals_at(r, i), df = xi - ri;
      if (!isfinite(xi)) A->bad[k] = 1;
      A->d2[k] += df * df, A->r2[k] += ri * ri, A->s2[k] += s[i] * s[i];
      rn += ri * ri;
      if (fabs(ri) > A->max_r) A->max_r = fabs(ri);
      parity_xsum_add(&A->ss, s[i] * s[i]);
    }
    parity_xsum_add(&A->rr, rn);
  }
}

void parity_model_acc_between(parity_model_acc *A) {
  const int64_t rows = A->dims[3] > 0 ? A->dims[0] * A->dims[1] * A->dims[2] : 0;
  A->row_floor = rows > 0 ? sqrt(parity_xsum_value(&A->rr) / (double)rows) : 0;
  A->rel_floor = A->u * A->max_r;
}

void parity_model_acc_add_b(parity_model_acc *A, parity_vals x, parity_vals r, const double *s, int64_t h0,
                            int64_t h1) {
  const double rel_floor = A->rel_floor;
  const parity_model_stats *ms = &A->st;
  parity_model_front *fe = &A->gf[2 * h0], *fr = fe + 1; /* this group's */
  fe->n = fr->n = 0;
  A->gused[h0] = 1;
  size_t i = 0;
  FOR_GROUP_ROWS(A, h0, h1, g, w) {
    const int64_t row = (w[0] * A->dims[1] + w[1]) * A->dims[2] + w[2];
    double dn = 0, rn = 0, sn = 0;
    for (int64_t i3 = 0; i3 < g[3]; i3++, i++) {
      w[3] = i3;
      const int64_t k = block_of(A, w);
      const double rms = sqrt(A->r2[k] / (double)block_count(A, k));
      const double xi = parity_vals_at(x, i), ri = parity_vals_at(r, i);
      const double df = isfinite(xi) ? fabs(xi - ri) : INFINITY;
      const double den = fmax(fabs(ri), fmax(rms, rel_floor));
      item(fe, df, den > 0 ? df / den : INFINITY, s[i], ms->lam_elem, row * A->dims[3] + i3);
      dn += df * df, rn += ri * ri, sn += s[i] * s[i];
    }
    const double den = fmax(sqrt(rn), A->row_floor), d = sqrt(dn);
    item(fr, d, den > 0 ? d / den : INFINITY, sqrt(sn), ms->lam_row, row);
  }
}

/* b's points into f (re-adding a frontier's own points into an empty one
 * gives it back: they do not cover each other, and fewer than
 * PARITY_MODEL_FRONT merge nothing). */
static void front_merge(parity_model_front *f, const parity_model_front *b) {
  for (int j = 0; j < b->n && j < PARITY_MODEL_FRONT; j++) front_add(f, b->a[j], b->q[j], b->at[j]);
}

void parity_model_acc_finish(parity_model_acc *A, parity_metrics *m) {
  parity_model_stats *ms = &A->st;
  ms->elem.n = ms->row.n = 0;
  for (int64_t h = 0; h < A->dims[A->axis]; h++) /* the groups' frontiers in head order */
    if (A->gused[h]) front_merge(&ms->elem, &A->gf[2 * h]), front_merge(&ms->row, &A->gf[2 * h + 1]);
  for (int64_t k = 0; k < A->nb; k++) {
    const double fl = sqrt((double)block_count(A, k)) * A->rel_floor, nr = sqrt(A->r2[k]);
    const double den = nr > fl ? nr : fl, d = A->bad[k] ? INFINITY : sqrt(A->d2[k]);
    item(&ms->block, d, A->bad[k] ? INFINITY : den > 0 ? d / den : INFINITY, sqrt(A->s2[k]), ms->lam_block, k);
  }
  ms->fro = m->ref_fro > 0 ? sqrt(parity_xsum_value(&A->ss)) / m->ref_fro : 0;
  /* The norm's tail: a block's error taken as one draw (its elements share
   * their sources: a head's G_L, a chunk's G), blocks independent, so
   * ||x - r||^2 = sum_k v_k Z_k^2 with v_k the block's s^2 sum; Laurent and
   * Massart's bound at probability alpha, x = ln(1 / alpha): sum v + 2
   * sqrt(x sum v^2) + 2 x max v.  With many blocks it is the norm itself;
   * with a few heads of ht it is not (two heads: 3.4). */
  double sv = 0, sv2 = 0, mv = 0;
  for (int64_t k = 0; k < A->nb; k++) sv += A->s2[k], sv2 += A->s2[k] * A->s2[k], mv = fmax(mv, A->s2[k]);
  const double x = log(1 / PARITY_MODEL_ALPHA);
  ms->fro_tail = sv > 0 ? sqrt(1 + 2 * sqrt(x * sv2) / sv + 2 * x * mv / sv) : 1;
  m->model = *ms;
}

static size_t put(unsigned char *buf, size_t at, const void *p, size_t n) {
  if (buf && n) memcpy(buf + at, p, n);
  return at + n;
}

size_t parity_model_acc_pack(const parity_model_acc *A, int pass_b, void *buf) {
  if (pass_b) { /* each group's frontiers, by its first head */
    size_t at = 0;
    for (int64_t h = 0; h < A->dims[A->axis]; h++)
      if (A->gused[h]) at = put(buf, put(buf, at, &h, sizeof h), &A->gf[2 * h], 2 * sizeof *A->gf);
    return at;
  }
  size_t at = put(buf, 0, A->d2, (size_t)(3 * A->nb) * sizeof *A->d2);
  at = put(buf, at, A->bad, (size_t)A->nb);
  at = put(buf, at, &A->ss, sizeof A->ss);
  at = put(buf, at, &A->rr, sizeof A->rr);
  return put(buf, at, &A->max_r, sizeof A->max_r);
}

int parity_model_acc_merge(parity_model_acc *A, int pass_b, const void *buf, size_t n, gdn_error *e) {
  const unsigned char *p = buf;
  if (pass_b) { /* disjoint groups: each slot from the one part that has it */
    const size_t one = sizeof(int64_t) + 2 * sizeof *A->gf;
    for (size_t at = 0; at < n; at += one) {
      int64_t h;
      if (n - at < one || (memcpy(&h, p + at, sizeof h), h < 0 || h >= A->dims[A->axis]) || A->gused[h])
        return gdn_error_set(e, GDN_ERR_INTERNAL, "merging the model's frontiers: a bad part (%zu bytes)", n);
      memcpy(&A->gf[2 * h], p + at + sizeof h, 2 * sizeof *A->gf);
      A->gused[h] = 1;
    }
    return GDN_OK;
  }
  if (n != parity_model_acc_pack(A, pass_b, NULL))
    return gdn_error_set(e, GDN_ERR_INTERNAL, "merging the model's statistics: a part of %zu bytes, not %zu", n,
                         parity_model_acc_pack(A, pass_b, NULL));
  parity_xsum *x = gdn_malloc(sizeof *x, "model sums", e);
  if (!x) return e ? e->code : GDN_ERR_NOMEM;
  /* each block lies in one group: one part holds its sums, the others +0 */
  for (int64_t k = 0; k < 3 * A->nb; k++) {
    double v;
    memcpy(&v, p + (size_t)k * sizeof v, sizeof v);
    A->d2[k] += v;
  }
  p += (size_t)(3 * A->nb) * sizeof(double);
  for (int64_t k = 0; k < A->nb; k++) A->bad[k] |= p[k];
  p += A->nb;
  memcpy(x, p, sizeof *x);
  parity_xsum_merge(&A->ss, x);
  memcpy(x, p + sizeof *x, sizeof *x);
  parity_xsum_merge(&A->rr, x);
  double mr;
  memcpy(&mr, p + 2 * sizeof *x, sizeof mr);
  if (mr > A->max_r) A->max_r = mr;
  gdn_free(x);
  return GDN_OK;
}

int parity_metrics_model_v(parity_vals x, parity_vals r, const double *s, const int64_t dims[4],
                           const int64_t block_len[4], gdn_dtype ulp_dtype, parity_metrics *m, gdn_error *e) {
  parity_model_acc *A;
  int rc = parity_model_acc_new(&A, dims, block_len, 2, ulp_dtype, e);
  if (rc) return rc;
  parity_model_acc_add_a(A, x, r, s, 0, dims[2]);
  parity_model_acc_between(A);
  parity_model_acc_add_b(A, x, r, s, 0, dims[2]);
  parity_model_acc_finish(A, m);
  parity_model_acc_free(A);
  return GDN_OK;
}
