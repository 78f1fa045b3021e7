/* parity_metrics: the binary64 entry points (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

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
