/* parity_metrics: per-row statistics (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

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
void pm_rows_eval(parity_vals x, parity_vals r, int64_t q0, int64_t cnt, int64_t len, double fl, double *v) {
#pragma omp parallel for schedule(dynamic, 512) num_threads(pm_threads_for(cnt, cnt * len))
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
    pm_rows_eval(NONE, r, q, cnt, len, 0, v);
    for (int64_t j = 0; j < cnt; j++) parity_xsum_add(&ss, v[j] * v[j]);
  }
  const double fl = n_rows > 0 ? sqrt(parity_xsum_value(&ss) / (double)n_rows) : 0; /* the RMS row norm */
  for (int64_t q = 0; q < n_rows; q += ROWS) {
    int64_t cnt = n_rows - q < ROWS ? n_rows - q : ROWS;
    pm_rows_eval(x, r, q, cnt, len, fl, v);
    for (int64_t j = 0; j < cnt; j++)
      if (v[j] != -1 && (v[j] > w || arg < 0)) w = v[j], arg = q + j;
  }
  if (worst) *worst = arg;
  return w;
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
