#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_threads.h"
#include "parity_metrics.h"

/* Hand-computed case: r = (1, 2, 0, -4), x = (1, 2.5, 1e-9, -4). */
START_TEST(hand_case) {
  double r[4] = {1, 2, 0, -4}, x[4] = {1, 2.5, 1e-9, -4};
  int64_t dims[4] = {1, 1, 2, 2};
  parity_metrics m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert(m.max_abs == 0.5);
  /* ||d|| = sqrt(0.25 + 1e-18), ||r|| = sqrt(21) */
  ck_assert(fabs(m.rel_fro - sqrt(0.25 + 1e-18) / sqrt(21.0)) < 1e-15);
  ck_assert_int_eq(m.zero_ref, 1);
  ck_assert_int_eq(m.worst[2], 0);
  ck_assert_int_eq(m.worst[3], 1);
  ck_assert(m.worst_x == 2.5 && m.worst_ref == 2);
  /* ulp(2) in float32 = 2^-22: 0.5 / 2^-22 = 2^21 ULP; ulp(0) = 2^-149. */
  ck_assert(m.max_ulp == 1e-9 / ldexp(1, -149));
  /* Floor: u * max|r| = 2^-24 * 4; the element at r = 0 is measured against it. */
  ck_assert(m.rel_floor == ldexp(1, -22));
  ck_assert(fabs(m.max_rel - 0.25) < 1e-15); /* 0.5 / 2 beats 1e-9 / 2^-22 = 0.0042 */
  /* ULPs: 0, 2^21, 1e-9/2^-149, 0 -> median = (0 + 2^21)/2 */
  ck_assert(m.median_ulp == ldexp(1, 20));
  ck_assert_int_eq(m.ulp_hist[0], 2);
  ck_assert_int_eq(m.nonfinite, 0);
}
END_TEST

START_TEST(nonfinite_and_zero_reference) {
  double r[3] = {0, 0, 0}, x[3] = {0, NAN, 0};
  int64_t dims[4] = {1, 1, 1, 3};
  parity_metrics m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(m.nonfinite, 1);
  ck_assert(isinf(m.max_abs) && isinf(m.rel_fro) && isinf(m.max_ulp));
  double x2[3] = {0, 0, 0};
  ck_assert_int_eq(parity_metrics_compute(x2, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert(m.rel_fro == 0 && m.max_abs == 0 && m.max_rel == 0 && m.zero_ref == 3);
}
END_TEST

/* The exact median by radix selection equals the sorted middle, and every
 * number is the same for 1 and 2 threads (block sums in fixed order). */
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Even n with ties at the middle: the upper middle value is the lower one
 * again when a tie follows it, else the least value above (the two paths of
 * the median's second order statistic), at 1 and 2 threads. */
START_TEST(median_even_ties) {
  /* ULP distances (float32, r = 1): zeros, then 1, 2, 3 ... ulps. */
  double r[8], x[8];
  int64_t dims[4] = {1, 1, 1, 8};
  gdn_error e;
  gdn_error_init(&e);
  for (int zeros = 3; zeros <= 5; zeros++)
    for (int th = 1; th <= 2; th++) {
      for (int i = 0; i < 8; i++) {
        r[i] = 1.0;
        x[i] = i < zeros ? 1.0 : 1.0 + (double)(i - zeros + 1) * 0x1p-23;
      }
      gdn_threads_set(th);
      parity_metrics m;
      ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
      /* sorted: zeros, 1, 2, ...; middle pair is positions 3 and 4 */
      double lo = zeros > 3 ? 0 : 1, hi = zeros > 4 ? 0 : zeros == 4 ? 1 : 2;
      ck_assert_msg(m.median_ulp == 0.5 * (lo + hi), "zeros %d threads %d: %g", zeros, th, m.median_ulp);
    }
}
END_TEST

START_TEST(median_exact_and_thread_independent) {
  size_t n = 200001;
  double *r = malloc(n * sizeof *r), *x = malloc(n * sizeof *x), *u = malloc(n * sizeof *u);
  uint64_t s = 12345;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    r[i] = ((double)(s >> 11) * 0x1p-53 - 0.5) * 8;
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = r[i] + ((double)(s >> 11) * 0x1p-53 - 0.5) * 1e-6;
    u[i] = gdn_dtype_ulp_distance(GDN_DTYPE_F32, x[i], r[i]);
  }
  qsort(u, n, sizeof *u, cmp);
  int64_t dims[4] = {1, 1, 1, (int64_t)n};
  parity_metrics a, b;
  gdn_error e;
  gdn_error_init(&e);
  gdn_threads_set(1);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &a, &e), GDN_OK);
  gdn_threads_set(2);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &b, &e), GDN_OK);
  ck_assert(a.median_ulp == u[n / 2]);
  ck_assert(a.max_ulp == u[n - 1]);
  ck_assert(memcmp(&a, &b, sizeof a) == 0);
  /* Even n: mean of the two middle values. */
  dims[3] = (int64_t)n - 1;
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &a, &e), GDN_OK);
  for (size_t i = 0; i < n - 1; i++) u[i] = gdn_dtype_ulp_distance(GDN_DTYPE_F32, x[i], r[i]);
  qsort(u, n - 1, sizeof *u, cmp);
  ck_assert(a.median_ulp == 0.5 * (u[(n - 2) / 2] + u[(n - 1) / 2]));
  free(r);
  free(x);
  free(u);
}
END_TEST

START_TEST(profile_and_allclose) {
  /* o-shaped (B=1, T=5, H=1, D=2): errors 0,1,0,0,3 at t = 0..4 in column 1. */
  double r[10] = {0}, x[10] = {0};
  x[3] = 1;
  x[9] = -3;
  int64_t dims[4] = {1, 5, 1, 2};
  double prof[3];
  parity_profile_o(x, r, dims, 2, prof);
  ck_assert(prof[0] == 1 && prof[1] == 0 && prof[2] == 3);
  double rr[2] = {1, 100}, xx[2] = {1 + 2e-6, 100.0001};
  /* |d| / (1e-6 + 1e-6 |r|): 2e-6 / 2e-6 = 1; 1e-4 / 1.01e-4 < 1 */
  ck_assert(fabs(parity_allclose_ratio(xx, rr, 2, 1e-6, 1e-6) - 1.0) < 1e-9);
}
END_TEST

/* Blocks by hand: dims (1, 4, 1, 2), blocks of 2 positions x 2 -> 2 blocks.
 * r = 1,1,1,1 | 3,4,0,0 and x = r except x[4] = 3.3: block 0 exact, block 1
 * ||d|| = 0.3, ||r|| = 5 -> 0.06; elem_rel: 0.3 / max(3, rms 2.5) = 0.1.
 * Negative controls: x == r gives 0; a NaN gives +inf in its block. */
START_TEST(blocks_by_hand) {
  double r[8] = {1, 1, 1, 1, 3, 4, 0, 0}, x[8] = {1, 1, 1, 1, 3.3, 4, 0, 0};
  int64_t dims[4] = {1, 4, 1, 2}, bl[4] = {1, 2, 1, 2};
  parity_metrics m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(x, r, dims, bl, &m, &e), GDN_OK);
  ck_assert_int_eq(m.n_blocks, 2);
  ck_assert(fabs(m.block_rel - 0.06) < 1e-15);
  ck_assert_int_eq(m.block_lo[1], 2);
  ck_assert_int_eq(m.block_hi[1], 4);
  ck_assert(fabs(m.elem_rel - 0.1) < 1e-15);
  ck_assert_int_eq(m.elem_at[1], 2);
  ck_assert_int_eq(m.elem_at[3], 0);
  /* near zero: x[6] = 1e-3 against the block RMS 2.5, not against 0 */
  x[4] = 3, x[6] = 1e-3;
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(x, r, dims, bl, &m, &e), GDN_OK);
  ck_assert(fabs(m.elem_rel - 1e-3 / 2.5) < 1e-15);
  x[6] = 0;
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(x, r, dims, bl, &m, &e), GDN_OK);
  ck_assert(m.block_rel == 0 && m.elem_rel == 0);
  x[1] = NAN;
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(x, r, dims, bl, &m, &e), GDN_OK);
  ck_assert(isinf(m.block_rel) && isinf(m.elem_rel));
  ck_assert_int_eq(m.block_lo[1], 0);
}
END_TEST

/* row_rel by hand: rows of 2, norms 3-4-5 style.  r rows: (3,4) norm 5,
 * (0,0) norm 0, (6,8) norm 10; RMS row norm sqrt((25 + 0 + 100) / 3) =
 * 6.455.  x = r + (0, 1e-3) in row 0: 1e-3 / max(5, 6.455); + 2e-3 in row
 * 1 (reference 0: the floor); row 2 exact.  The worst is row 1, 2e-3 /
 * 6.455.  A 1e-4 relative error on row 2 alone (above the RMS) reads as
 * exactly 1e-4 whatever the number of rows; in compute it is the same
 * value for every tensor the metric is computed on (dims[3] = row). */
START_TEST(row_rel_by_hand) {
  double r[6] = {3, 4, 0, 0, 6, 8}, x[6] = {3, 4.001, 0, 0.002, 6, 8};
  const double rms = sqrt(125.0 / 3);
  int64_t w;
  double v = parity_row_rel(x, r, 3, 2, &w);
  ck_assert_int_eq(w, 1);
  ck_assert(fabs(v - 2e-3 / rms) < 1e-15);
  x[1] = 4, x[3] = 0;
  ck_assert(parity_row_rel(x, r, 3, 2, &w) == 0 && w == -1);
  enum { N = 4096 };
  double *a = malloc(2 * N * sizeof *a), *b = malloc(2 * N * sizeof *b);
  for (int i = 0; i < 2 * N; i++) a[i] = b[i] = (i % 2) ? 1.0 : 0.5;
  b[2 * 17] *= 1 + 1e-4, b[2 * 17 + 1] *= 1 + 1e-4;
  v = parity_row_rel(b, a, N, 2, &w);
  ck_assert_int_eq(w, 17);
  ck_assert(fabs(v - 1e-4) < 1e-12);
  int64_t dims[4] = {1, N, 1, 2};
  parity_metrics m;
  ck_assert_int_eq(parity_metrics_compute(b, a, dims, GDN_DTYPE_F32, &m, NULL), GDN_OK);
  ck_assert(m.row_rel == v && m.row_worst == 17);
  ck_assert(m.rel_fro < 2e-6); /* the normwise error is diluted by sqrt(N) */
  free(a);
  free(b);
}
END_TEST

int main(void) {
  Suite *su = suite_create("metrics");
  TCase *tc = tcase_create("metrics");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, hand_case);
  tcase_add_test(tc, nonfinite_and_zero_reference);
  tcase_add_test(tc, median_exact_and_thread_independent);
  tcase_add_test(tc, median_even_ties);
  tcase_add_test(tc, profile_and_allclose);
  tcase_add_test(tc, blocks_by_hand);
  tcase_add_test(tc, row_rel_by_hand);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
