#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_threads.h"
#include "parity_metrics.h"
#include "../check_runner.h"

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

/* The first non-finite x (the results name it): the lowest flat
 * index, whichever block and thread meets a non-finite value first --
 * infinities of both signs and NaNs, in three of twenty 65536-element blocks,
 * the first one not the largest |x - r|'s block, at 1, 2 and 4 threads.
 * Control: without a non-finite value the count is 0 (and nothing named). */
START_TEST(first_nonfinite_is_the_lowest_index) {
  const int64_t dims[4] = {2, 5, 3, 65536 / 3 * 2 + 1}; /* 1310730 elements: 20 blocks */
  const size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
  for (size_t i = 0; i < n; i++) r[i] = sin(0.001 * (double)i), x[i] = r[i] * (1 + 1e-7);
  const size_t first = 3 * 65536 + 17; /* flat index -> (b, t, h, d) */
  x[5 * 65536 + 3] = NAN;
  x[first] = INFINITY;
  x[first + 40000] = -INFINITY;
  x[9 * 65536 + 1] = NAN;
  x[65536 + 5] = r[65536 + 5] + 1.0; /* the largest finite error, in an earlier block */
  int64_t want[4], f = (int64_t)first;
  for (int a = 3; a >= 0; a--) want[a] = f % dims[a], f /= dims[a];
  gdn_error e;
  gdn_error_init(&e);
  for (int th = 1; th <= 4; th *= 2) {
    gdn_threads_set(th);
    parity_metrics m;
    ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
    ck_assert_int_eq(m.nonfinite, 4);
    for (int a = 0; a < 4; a++)
      ck_assert_msg(m.nonfinite_at[a] == want[a], "threads %d axis %d: %lld, want %lld", th, a,
                    (long long)m.nonfinite_at[a], (long long)want[a]);
  }
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) x[i] = r[i];
  parity_metrics m;
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert_int_eq(m.nonfinite, 0);
  ck_assert(isfinite(m.rel_fro));
  free(x);
  free(r);
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

/* Adversarial medians (the speed work: the first radix round counted in the
 * main pass, then the selected bucket's values held, or its min = max
 * shortcut, or the remaining rounds over all values): each against the median
 * of the sorted ULP values, at 1 and 2 threads, bit for bit.  Every value is
 * float32 ULPs against r = 1 (ulp 2^-23) unless a case says otherwise. */
typedef struct {
  size_t n;
  double *x, *r, *u;
} mcase;

static void mcase_init(mcase *c, size_t n) {
  c->n = n;
  c->x = malloc(n * sizeof *c->x);
  c->r = malloc(n * sizeof *c->r);
  c->u = malloc(n * sizeof *c->u);
  for (size_t i = 0; i < n; i++) c->r[i] = 1.0, c->x[i] = 1.0;
}

static void mcase_clear(mcase *c) {
  free(c->x);
  free(c->r);
  free(c->u);
}

/* Element i at v ULPs of r = 1 (v exact: v 2^-23 fits 1 + 52 bits here). */
static void set_ulps(mcase *c, size_t i, double v) { c->x[i] = 1.0 + v * 0x1p-23; }

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

/* The order must not matter: a fixed shuffle of the elements. */
static void shuffle(mcase *c, uint64_t seed) {
  for (size_t i = c->n; i > 1; i--) {
    size_t j = (size_t)(lcg(&seed) % i);
    double t = c->x[i - 1];
    c->x[i - 1] = c->x[j], c->x[j] = t;
    t = c->r[i - 1];
    c->r[i - 1] = c->r[j], c->r[j] = t;
  }
}

/* The median by sorting (mean of the two middle values for even n); wrong:
 * the upper middle value alone, the negative control. */
static double sorted_median(mcase *c, int wrong) {
  for (size_t i = 0; i < c->n; i++) c->u[i] = gdn_dtype_ulp_distance(GDN_DTYPE_F32, c->x[i], c->r[i]);
  qsort(c->u, c->n, sizeof *c->u, cmp);
  size_t n = c->n;
  return n % 2 || wrong ? c->u[n / 2] : 0.5 * (c->u[n / 2 - 1] + c->u[n / 2]);
}

/* 1 when the metrics' median equals the sorted one bit for bit at 1 and 2
 * threads. */
static int median_agrees(mcase *c, int wrong) {
  double want = sorted_median(c, wrong);
  int64_t dims[4] = {1, 1, 1, (int64_t)c->n};
  gdn_error e;
  gdn_error_init(&e);
  int ok = 1;
  for (int th = 1; th <= 2; th++) {
    parity_metrics m;
    gdn_threads_set(th);
    ck_assert_int_eq(parity_metrics_compute(c->x, c->r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
    ok &= memcmp(&m.median_ulp, &want, sizeof want) == 0;
  }
  return ok;
}

/* Checks a case, and (neg) that the wrong median fails it: the two middle
 * values differ there. */
static void check_case(mcase *c, const char *what, int neg) {
  ck_assert_msg(median_agrees(c, 0), "%s (n = %zu): median differs from the sorted one", what, c->n);
  if (neg) ck_assert_msg(!median_agrees(c, 1), "%s: the negative control passed", what);
  mcase_clear(c);
}

START_TEST(median_ties_and_small_n) {
  static const size_t ns[5] = {1, 2, 3, 1000, 300000};
  mcase c;
  for (int i = 0; i < 5; i++) {
    /* all ties at 0 (x = r), and at 3 ULPs: above 65536 values the bucket is
     * not held, min = max gives the value */
    mcase_init(&c, ns[i]);
    check_case(&c, "all zero", 0);
    mcase_init(&c, ns[i]);
    for (size_t j = 0; j < c.n; j++) set_ulps(&c, j, 3);
    check_case(&c, "all three", 0);
  }
  mcase_init(&c, 1);
  set_ulps(&c, 0, 5);
  check_case(&c, "n = 1", 0);
  mcase_init(&c, 2); /* (2 + 7) / 2: the next value is in another bucket */
  set_ulps(&c, 0, 7), set_ulps(&c, 1, 2);
  check_case(&c, "n = 2", 1);
  /* even n, ties across the middle (positions 499, 500 both 1), and a pair
   * straddling two tied runs (1 and 2) */
  mcase_init(&c, 1000);
  for (size_t j = 0; j < 1000; j++) set_ulps(&c, j, j < 400 ? 0 : j < 600 ? 1 : 2);
  shuffle(&c, 7);
  check_case(&c, "ties across the middle", 0);
  mcase_init(&c, 1000);
  for (size_t j = 0; j < 1000; j++) set_ulps(&c, j, j < 500 ? 1 : 2);
  shuffle(&c, 8);
  check_case(&c, "two tied runs", 1);
  /* the same with each run larger than the held bucket's limit (65536) */
  mcase_init(&c, 200000);
  for (size_t j = 0; j < c.n; j++) set_ulps(&c, j, j < 100000 ? 1 : 2);
  shuffle(&c, 9);
  check_case(&c, "two large tied runs", 1);
}
END_TEST

START_TEST(median_infinities) {
  /* +inf ULPs from x = inf, x = NaN, and r = inf with x finite; x = r = inf
   * is 0.  n = 10, sorted 0, finite..., inf...: 6 infinite -> inf; 5 ->
   * (8 + inf) / 2 = inf; 4 or 3: finite middle values (the negative control
   * applies). */
  for (int inf = 3; inf <= 6; inf++) {
    mcase c;
    mcase_init(&c, 10);
    for (int j = 0; j < 10; j++) set_ulps(&c, (size_t)j, j);
    for (int j = 0; j < inf; j++) {
      if (j % 3 == 0) c.x[j] = INFINITY;
      else if (j % 3 == 1) c.x[j] = NAN;
      else c.r[j] = -INFINITY;
    }
    c.x[9] = c.r[9] = INFINITY; /* equal infinities: 0 ULPs */
    shuffle(&c, (uint64_t)inf);
    check_case(&c, "infinities", inf <= 4);
  }
}
END_TEST

START_TEST(median_one_bucket) {
  /* Distinct values that share their top 16 bits (1 + j 2^-24 ULPs, all in
   * [1, 1.0625)): held (n <= 65536) or, above, the remaining radix rounds
   * over all values; odd and even n. */
  static const size_t ns[4] = {5001, 60000, 200000, 200001};
  for (int i = 0; i < 4; i++) {
    mcase c;
    mcase_init(&c, ns[i]);
    for (size_t j = 0; j < c.n; j++) set_ulps(&c, j, 1 + (double)j * 0x1p-24);
    shuffle(&c, 11 + (uint64_t)i);
    check_case(&c, "one bucket", c.n % 2 == 0);
  }
  /* Even n with the lower middle value the bucket's greatest: the upper one
   * is the next bucket's least (held: n = 10; not held: n = 200000). */
  static const size_t ms[2] = {10, 200000};
  for (int i = 0; i < 2; i++) {
    mcase c;
    mcase_init(&c, ms[i]);
    for (size_t j = 0; j < c.n; j++) set_ulps(&c, j, j < c.n / 2 ? 1 + (double)j * 0x1p-24 : 5);
    shuffle(&c, 21 + (uint64_t)i);
    check_case(&c, "bucket's greatest", 1);
  }
}
END_TEST

START_TEST(median_many_buckets) {
  /* ULPs log-uniform over 2^-30 .. 2^28 and references of both signs across
   * binades (ulp(r) varies): the values spread over many top-16 buckets. */
  for (size_t n = 100000; n <= 100001; n++) {
    mcase c;
    mcase_init(&c, n);
    uint64_t s = 99 + n;
    for (size_t j = 0; j < n; j++) {
      double r = ldexp(1.0 + (double)(lcg(&s) % 1024) / 1024, (int)(lcg(&s) % 40) - 20);
      c.r[j] = lcg(&s) % 2 ? r : -r;
      double v = ldexp(1.0 + (double)(lcg(&s) % 4096) / 4096, (int)(lcg(&s) % 58) - 30);
      c.x[j] = c.r[j] + v * gdn_dtype_ulp(GDN_DTYPE_F32, c.r[j]);
    }
    check_case(&c, "many buckets", n % 2 == 0);
  }
}
END_TEST

/* The ULP histogram's bins at their edges (the bin is read from the
 * exponent bits): bin 0 below 0.5, [2^(b-2), 2^(b-1)) for bin b, the last
 * (19) open; float32 ULPs against r = 1. */
START_TEST(ulp_hist_edges) {
  static const double v[10] = {0, 0.25, 0.5, 0.75, 1, 1.999, 0x1p16, 0x1p17, 0x1p18, INFINITY};
  static const int bin[10] = {0, 0, 1, 1, 2, 2, 18, 19, 19, 19};
  double x[10], r[10];
  int64_t want[PARITY_ULP_BINS] = {0}, dims[4] = {1, 1, 1, 10};
  for (int i = 0; i < 10; i++) r[i] = 1, x[i] = isinf(v[i]) ? INFINITY : 1 + v[i] * 0x1p-23, want[bin[i]]++;
  parity_metrics m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
  ck_assert(memcmp(m.ulp_hist, want, sizeof want) == 0);
  want[1]--, want[2]++; /* negative control: 0.75 counted from 1 up */
  ck_assert(memcmp(m.ulp_hist, want, sizeof want) != 0);
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
  /* Maxima taken in vector lanes: a NaN reference is skipped (its q and d
   * are NaN), wherever it falls among 37 elements (every lane and the
   * tail); x = inf counts as inf. */
  double r3[37], x3[37];
  for (int at = 0; at < 37; at++) {
    for (int i = 0; i < 37; i++) r3[i] = 1, x3[i] = 1 + (i == 20 ? 4e-6 : 1e-6);
    r3[at] = NAN;
    double want = at == 20 ? 1e-6 / 2e-6 : 4e-6 / 2e-6, got = parity_allclose_ratio(x3, r3, 37, 1e-6, 1e-6);
    ck_assert_msg(fabs(got - want) < 1e-9, "NaN at %d: %g", at, got);
    ck_assert(!(fabs(got - 1e-6 / 2e-6) < 1e-9) || at == 20); /* negative control: the lower value */
    int64_t d3[4] = {1, 37, 1, 1};
    double pr[1];
    parity_profile_o(x3, r3, d3, 37, pr);
    ck_assert(fabs(pr[0] - (at == 20 ? 1e-6 : 4e-6)) < 1e-15);
  }
  x3[5] = INFINITY;
  ck_assert(isinf(parity_allclose_ratio(x3, r3, 37, 1e-6, 1e-6)));
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

/* elem_rel as one pass in memory order (the definition the grouped,
 * parallel computation must reproduce): best starts at the first element
 * that differs and grows on strictly greater q, so a NaN q there sticks and
 * ties keep the first index.  last_tie: the negative control, the last. */
static double elem_rel_serial(const double *x, const double *r, const int64_t dims[4], const int64_t bl[4],
                              double floor, int last_tie, int64_t *at) {
  int64_t nbk[4], n = 1;
  for (int a = 0; a < 4; a++) nbk[a] = (dims[a] + bl[a] - 1) / bl[a], n *= dims[a];
  int64_t nb = nbk[0] * nbk[1] * nbk[2] * nbk[3];
  double *s = calloc((size_t)nb, sizeof *s);
  int64_t *c = calloc((size_t)nb, sizeof *c), i, blk[4];
  for (int pass = 0; pass < 2; pass++) {
    double best = 0;
    *at = -1;
    for (i = 0; i < n; i++) {
      int64_t rem = i, k = 0;
      for (int a = 3; a >= 0; a--) blk[a] = rem % dims[a] / bl[a], rem /= dims[a];
      for (int a = 0; a < 4; a++) k = k * nbk[a] + blk[a];
      if (pass == 0) {
        s[k] += r[i] * r[i], c[k]++;
        continue;
      }
      double df = isfinite(x[i]) ? fabs(x[i] - r[i]) : INFINITY;
      if (df == 0) continue;
      double den = fmax(fabs(r[i]), fmax(sqrt(s[k] / (double)c[k]), floor));
      double q = den > 0 ? df / den : INFINITY;
      if (q > best || *at < 0 || (last_tie && q == best)) best = q, *at = i;
    }
    if (pass == 1) {
      free(s);
      free(c);
      return best;
    }
  }
  return 0;
}

START_TEST(elem_rel_grouped_as_serial) {
  /* (2, 8, 3, 4) in blocks (1, 4, 1, 2): 12 groups of rows.  Equal errors in
   * several groups (ties: the first index), then a NaN reference at the first
   * differing element (it sticks) and elsewhere (skipped); 1 and 2 threads. */
  enum { N = 2 * 8 * 3 * 4 };
  int64_t dims[4] = {2, 8, 3, 4}, bl[4] = {1, 4, 1, 2};
  double x[N], r[N];
  uint64_t sd = 5;
  for (int i = 0; i < N; i++) r[i] = (double)(lcg(&sd) % 7) - 3, x[i] = r[i];
  /* q = 0.5 / max(|r|, rms, floor) = 0.5 / 3 at each (r = 3 >= any RMS).
   * 8 (c = 2, b = 0: group 2) precedes 40 (c = 1, b = 3: group 1): the
   * first index is not the first group's. */
  int ties[4] = {77, 40, 150, 8};
  for (int j = 0; j < 4; j++) r[ties[j]] = 3, x[ties[j]] = 3.5;
  for (int variant = 0; variant < 3; variant++) {
    if (variant == 1) r[0] = NAN, x[0] = 1; /* the first differing element: NaN q */
    if (variant == 2) r[0] = x[0] = 2, r[60] = NAN; /* NaN elsewhere: skipped */
    for (int th = 1; th <= 2; th++) {
      parity_metrics m;
      gdn_error e;
      gdn_error_init(&e);
      gdn_threads_set(th);
      ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &m, &e), GDN_OK);
      ck_assert_int_eq(parity_metrics_blocks(x, r, dims, bl, &m, &e), GDN_OK);
      int64_t at, bad_at, flat = ((m.elem_at[0] * 8 + m.elem_at[1]) * 3 + m.elem_at[2]) * 4 + m.elem_at[3];
      double want = elem_rel_serial(x, r, dims, bl, m.rel_floor, 0, &at);
      ck_assert_msg(memcmp(&m.elem_rel, &want, sizeof want) == 0 && flat == at,
                    "variant %d threads %d: %a at %lld, serial %a at %lld", variant, th, m.elem_rel,
                    (long long)flat, want, (long long)at);
      ck_assert(variant == 1 ? isnan(want) && at == 0 : want == 0.5 / 3 && at == 8);
      elem_rel_serial(x, r, dims, bl, m.rel_floor, 1, &bad_at);
      if (variant != 1) ck_assert_int_ne(bad_at, at); /* negative control: the last tie */
    }
  }
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

/* The whole-tensor sums are exact: a tensor pair permuted (heads
 * regrouped as a run streamed by head group meets them: here the head axis
 * reversed, and a 3-block tensor of 2^17+ elements so the old per-block
 * binary64 sums were combined across blocks) gives the same rel_fro,
 * ref_fro and row_rel bits, and rel_fro is sqrt of the correctly rounded
 * sums.  Negative control: binary64 running sums of the same terms in the
 * two orders differ, so the test can see an inexact sum. */
START_TEST(sums_exact_in_any_order) {
  enum { T = 1100, H = 3, D = 64, N = T * H * D };
  double *x = malloc(N * sizeof *x), *r = malloc(N * sizeof *r), *xp = malloc(N * sizeof *x),
         *rp = malloc(N * sizeof *r);
  for (int t = 0; t < T; t++)
    for (int h = 0; h < H; h++)
      for (int d = 0; d < D; d++) {
        const int i = (t * H + h) * D + d, j = (t * H + (H - 1 - h)) * D + d;
        r[i] = ldexp(1.0 + 1e-3 * ((i * 7919) % 1013), (h * 17 + d) % 40 - 20) * ((i & 1) ? -1 : 1);
        x[i] = r[i] * (1 + ldexp(1.0, -20 - (i % 30)));
        xp[j] = x[i], rp[j] = r[i];
      }
  const int64_t dims[4] = {1, T, H, D};
  parity_metrics a, b;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &a, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_compute(xp, rp, dims, GDN_DTYPE_F32, &b, &e), GDN_OK);
  ck_assert(!memcmp(&a.rel_fro, &b.rel_fro, sizeof a.rel_fro));
  ck_assert(!memcmp(&a.ref_fro, &b.ref_fro, sizeof a.ref_fro));
  ck_assert(a.row_rel == b.row_rel);
  double sd = 0, sr = 0, sd_rev = 0, sr_rev = 0;
  for (int i = 0; i < N; i++) sd += (x[i] - r[i]) * (x[i] - r[i]), sr += r[i] * r[i];
  for (int i = 0; i < N; i++) sd_rev += (xp[i] - rp[i]) * (xp[i] - rp[i]), sr_rev += rp[i] * rp[i];
  ck_assert_msg(sd != sd_rev || sr != sr_rev, "the orders give the same running sums: no control");
  /* within a few units of the running sum (the exact one differs from it by rounding only) */
  ck_assert(fabs(a.ref_fro - sqrt(sr)) <= 1e-12 * a.ref_fro);
  free(x), free(r), free(xp), free(rp);
}
END_TEST

/* The seams' state_rel accumulator is exact: vectors added in (b, h) order,
 * reversed, or into two accumulators merged (a run streamed by head group)
 * give the same bits; the hand cases keep their values.  Negative control:
 * binary64 running sums of the same vectors in the two orders differ. */
START_TEST(rel_acc_any_order) {
  enum { V = 40, L = 257 };
  static double a[V][L], b[V][L];
  for (int v = 0; v < V; v++)
    for (int i = 0; i < L; i++) {
      b[v][i] = ldexp(1.0 + 1e-3 * ((v * 31 + i * 7) % 997), (v * 5 + i) % 50 - 25);
      a[v][i] = b[v][i] * (1 + ldexp(1.0, -12 - (v + i) % 35));
    }
  static parity_rel_acc f, r, p, q;
  parity_rel_acc_init(&f);
  parity_rel_acc_init(&r);
  parity_rel_acc_init(&p);
  parity_rel_acc_init(&q);
  double dd_f = 0, dd_r = 0;
  for (int v = 0; v < V; v++) {
    parity_rel_acc_add(&f, a[v], b[v], L);
    parity_rel_acc_add(&r, a[V - 1 - v], b[V - 1 - v], L);
    parity_rel_acc_add(v % 3 ? &p : &q, a[v], b[v], L);
    for (int i = 0; i < L; i++) {
      dd_f += (a[v][i] - b[v][i]) * (a[v][i] - b[v][i]);
      dd_r += (a[V - 1 - v][i] - b[V - 1 - v][i]) * (a[V - 1 - v][i] - b[V - 1 - v][i]);
    }
  }
  parity_rel_acc_merge(&q, &p);
  const double vf = parity_rel_acc_value(&f), vr = parity_rel_acc_value(&r), vq = parity_rel_acc_value(&q);
  ck_assert(!memcmp(&vf, &vr, sizeof vf) && !memcmp(&vf, &vq, sizeof vf));
  ck_assert_msg(dd_f != dd_r, "the running sums agree: no control");
  const double one[2] = {1, 1}, e1[2] = {1, 0}, zero[2] = {0, 0}, big[2] = {3, 4};
  parity_rel_acc_init(&f);
  parity_rel_acc_add(&f, one, e1, 2);
  ck_assert(parity_rel_acc_value(&f) == 1.0);
  parity_rel_acc_init(&f);
  parity_rel_acc_add(&f, one, one, 2);
  ck_assert(parity_rel_acc_value(&f) == 0.0);
  parity_rel_acc_init(&f);
  parity_rel_acc_add(&f, big, zero, 2);
  ck_assert(isinf(parity_rel_acc_value(&f)));
  parity_rel_acc_init(&f);
  parity_rel_acc_add(&f, zero, zero, 2);
  ck_assert(parity_rel_acc_value(&f) == 0.0);
}
END_TEST

/* Heads [h0, h1) of a (B, T, H, D) tensor copied out as a group holds
 * them, and their slab map. */
static parity_slab slab_copy(const double *w, double *g, int64_t BT, int64_t H, int64_t D, int64_t h0, int64_t h1) {
  const parity_slab sl = {(size_t)BT, (size_t)((h1 - h0) * D), (size_t)(H * D), (size_t)(h0 * D)};
  for (size_t j = 0; j < sl.runs; j++) memcpy(g + j * sl.len, w + j * sl.stride + sl.start, sl.len * sizeof *g);
  return sl;
}

static int same_pass1(const parity_metrics *a, const parity_metrics *b) {
  return a->n == b->n && !memcmp(&a->max_abs, &b->max_abs, 8) && !memcmp(a->worst, b->worst, sizeof a->worst) &&
         !memcmp(&a->worst_x, &b->worst_x, 8) && !memcmp(&a->worst_ref, &b->worst_ref, 8) &&
         !memcmp(&a->rel_fro, &b->rel_fro, 8) && !memcmp(&a->ref_fro, &b->ref_fro, 8) &&
         !memcmp(&a->max_ulp, &b->max_ulp, 8) && !memcmp(&a->ref_max_abs, &b->ref_max_abs, 8) &&
         a->zero_ref == b->zero_ref && a->nonfinite == b->nonfinite &&
         !memcmp(a->nonfinite_at, b->nonfinite_at, sizeof a->nonfinite_at) &&
         !memcmp(a->ulp_hist, b->ulp_hist, sizeof a->ulp_hist) && !memcmp(&a->rel_floor, &b->rel_floor, 8);
}

/* Pass 1's fields merged over head groups (a run streamed by head group)
 * are the whole tensor's bit for bit: group sizes 1..4 of 6 heads (a short
 * last group), added last group first, half of them into a second
 * accumulator merged at the end; B = 2 and 2^17+ elements (several blocks
 * of 65536); max_abs tied across two heads (the least whole index wins),
 * zero references, with and without non-finite x (the first one in a later
 * head but an earlier token).  Negative control: a slab mapped one head
 * off names another worst element. */
START_TEST(pass1_over_head_groups) {
  enum { B = 2, T = 700, H = 6, D = 16, N = B * T * H * D };
  double *x = malloc(N * sizeof *x), *r = malloc(N * sizeof *r), *gx = malloc(N * sizeof *x),
         *gr = malloc(N * sizeof *r);
  for (int i = 0; i < N; i++) {
    r[i] = (i % 23 == 0) ? 0 : ldexp(1.0 + 1e-3 * ((i * 7919) % 1013), i % 30 - 15) * ((i & 1) ? -1 : 1);
    x[i] = (float)(r[i] * (1 + ldexp(1.0, -22 + i % 9)));
  }
  const int64_t dims[4] = {B, T, H, D};
  const int tie1 = ((1 * T + 300) * H + 4) * D + 3, tie2 = ((1 * T + 300) * H + 1) * D + 5; /* tie2 < tie1 */
  r[tie1] = r[tie2] = 1.0, x[tie1] = x[tie2] = 1e6;
  gdn_error e;
  gdn_error_init(&e);
  for (int nf = 0; nf < 2; nf++) {
    if (nf) x[((0 * T + 600) * H + 5) * D + 1] = NAN, x[((1 * T + 10) * H + 0) * D + 2] = INFINITY;
    parity_metrics want, got;
    ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &want, &e), GDN_OK);
    const int64_t ch = want.worst[2]; /* the worst element's head: 1 by the tie, 5 (the NaN) with nf */
    ck_assert_int_eq(ch, nf ? 5 : 1); /* the tie went to the lower index */
    for (int64_t gs = 1; gs <= 4; gs++) {
      parity_metrics_acc acc, half, bad;
      ck_assert_int_eq(parity_metrics_acc_init(&acc, &e), GDN_OK);
      ck_assert_int_eq(parity_metrics_acc_init(&half, &e), GDN_OK);
      ck_assert_int_eq(parity_metrics_acc_init(&bad, &e), GDN_OK);
      int k = 0;
      for (int64_t h1 = H; h1 > 0; h1 -= gs, k++) {
        const int64_t h0 = h1 - gs > 0 ? h1 - gs : 0;
        parity_slab sl = slab_copy(x, gx, B * T, H, D, h0, h1);
        slab_copy(r, gr, B * T, H, D, h0, h1);
        ck_assert_int_eq(parity_metrics_acc_add_v(k % 2 ? &half : &acc, parity_vals_f64(gx), parity_vals_f64(gr), &sl,
                                                  GDN_DTYPE_F32, &e), GDN_OK);
        if (h0 <= ch && ch < h1) /* negative control: the worst element's group mapped one head off */
          sl.start = h1 < H ? sl.start + D : sl.start - D;
        ck_assert_int_eq(parity_metrics_acc_add_v(&bad, parity_vals_f64(gx), parity_vals_f64(gr), &sl,
                                                  GDN_DTYPE_F32, &e), GDN_OK);
      }
      parity_metrics_acc_merge(&acc, &half);
      parity_metrics_acc_value(&acc, dims, GDN_DTYPE_F32, &got);
      ck_assert_msg(same_pass1(&got, &want), "nf %d groups of %lld: rel_fro %a vs %a, worst h %lld vs %lld", nf,
                    (long long)gs, got.rel_fro, want.rel_fro, (long long)got.worst[2], (long long)want.worst[2]);
      int64_t top = 0;
      for (int j = 0; j < 65536; j++) top += acc.top[j];
      ck_assert_int_eq(top, N);
      parity_metrics_acc_value(&bad, dims, GDN_DTYPE_F32, &got);
      ck_assert_msg(!same_pass1(&got, &want), "nf %d groups of %lld: a mis-mapped slab went unnoticed", nf,
                    (long long)gs);
      parity_metrics_acc_clear(&acc);
      parity_metrics_acc_clear(&half);
      parity_metrics_acc_clear(&bad);
    }
  }
  /* x held as float32 (a kernel's o), groups of 2: the same */
  float *xf = malloc(N * sizeof *xf), *gxf = malloc(N * sizeof *gxf);
  for (int i = 0; i < N; i++) xf[i] = (float)x[i];
  parity_metrics want, got;
  ck_assert_int_eq(parity_metrics_compute_v(parity_vals_f32(xf), parity_vals_f64(r), dims, GDN_DTYPE_F32, &want, &e),
                   GDN_OK);
  parity_metrics_acc acc;
  ck_assert_int_eq(parity_metrics_acc_init(&acc, &e), GDN_OK);
  for (int64_t h0 = 0; h0 < H; h0 += 2) {
    const parity_slab sl = slab_copy(r, gr, B * T, H, D, h0, h0 + 2);
    for (size_t j = 0; j < sl.runs; j++) memcpy(gxf + j * sl.len, xf + j * sl.stride + sl.start, sl.len * sizeof *gxf);
    ck_assert_int_eq(parity_metrics_acc_add_v(&acc, parity_vals_f32(gxf), parity_vals_f64(gr), &sl, GDN_DTYPE_F32, &e),
                     GDN_OK);
  }
  parity_metrics_acc_value(&acc, dims, GDN_DTYPE_F32, &got);
  ck_assert(same_pass1(&got, &want));
  parity_metrics_acc_clear(&acc);
  free(xf), free(gxf);
  free(x), free(r), free(gx), free(gr);
}
END_TEST

/* A head group's copy of heads [h0, h1) along axis `ax` of a whole tensor. */
static void heads_copy(const double *w, double *g, const int64_t dims[4], int ax, int64_t h0, int64_t h1) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < ax; i++) outer *= dims[i];
  for (int i = ax + 1; i < 4; i++) inner *= dims[i];
  const size_t len = (size_t)((h1 - h0) * inner);
  for (int64_t j = 0; j < outer; j++)
    memcpy(g + (size_t)j * len, w + (size_t)((j * dims[ax] + h0) * inner), len * sizeof *g);
}

/* The localized statistic over head groups: block sums collected group by
 * group (any order) and judged with pass 1's floor give block_rel,
 * block_lo/hi, block_len and n_blocks of the whole tensor bit for bit, for
 * an o-shaped tensor (blocks of 64 tokens x D per head, a short last
 * chunk) and a state-shaped one (a block per (b, head)), groups of 1..4 of
 * 6 heads.  A planted error makes head 1's block the worst.  Negative
 * control: head 1's group placed one head off names another block. */
START_TEST(blocks_over_head_groups) {
  enum { N = 2 * 700 * 6 * 16 };
  static const struct { int64_t dims[4], bl[4]; int ax; } shape[] = {
      {{2, 700, 6, 16}, {1, 64, 1, 16}, 2}, {{2, 6, 40, 28}, {1, 1, 40, 28}, 1}};
  double *x = malloc(N * sizeof *x), *r = malloc(N * sizeof *r), *gx = malloc(N * sizeof *x),
         *gr = malloc(N * sizeof *r);
  gdn_error e;
  gdn_error_init(&e);
  for (int sh = 0; sh < 2; sh++) {
    const int64_t *dims = shape[sh].dims;
    const int ax = shape[sh].ax;
    const int64_t n = dims[0] * dims[1] * dims[2] * dims[3], H = dims[ax];
    for (int64_t i = 0; i < n; i++) {
      r[i] = (i % 29 == 0) ? 0 : ldexp(1.0 + 1e-3 * ((i * 7919) % 1013), (int)(i % 20) - 10);
      x[i] = (float)(r[i] * (1 + ldexp(1.0, -22 + (int)(i % 7))));
    }
    int64_t at[4] = {1, 3, 5, 7};
    at[ax] = 1; /* in head 1 */
    x[((at[0] * dims[1] + at[1]) * dims[2] + at[2]) * dims[3] + at[3]] += 1e3;
    parity_metrics want, got;
    ck_assert_int_eq(parity_metrics_compute(x, r, dims, GDN_DTYPE_F32, &want, &e), GDN_OK);
    ck_assert_int_eq(parity_metrics_blocks(x, r, dims, shape[sh].bl, &want, &e), GDN_OK);
    ck_assert_int_eq(want.block_lo[ax], 1);
    for (int64_t gs = 1; gs <= 4; gs++)
      for (int ctl = 0; ctl < 2; ctl++) {
        parity_metrics_acc acc;
        parity_blocks_acc blk;
        ck_assert_int_eq(parity_metrics_acc_init(&acc, &e), GDN_OK);
        ck_assert_int_eq(parity_blocks_acc_init(&blk, dims, shape[sh].bl, ax, &e), GDN_OK);
        for (int64_t h1 = H; h1 > 0; h1 -= gs) {
          const int64_t h0 = h1 - gs > 0 ? h1 - gs : 0;
          heads_copy(x, gx, dims, ax, h0, h1);
          heads_copy(r, gr, dims, ax, h0, h1);
          int64_t outer = 1, inner = 1;
          for (int i = 0; i < ax; i++) outer *= dims[i];
          for (int i = ax + 1; i < 4; i++) inner *= dims[i];
          const parity_slab sl = {(size_t)outer, (size_t)((h1 - h0) * inner), (size_t)(H * inner), (size_t)(h0 * inner)};
          ck_assert_int_eq(parity_metrics_acc_add_v(&acc, parity_vals_f64(gx), parity_vals_f64(gr), &sl, GDN_DTYPE_F32,
                                                    &e), GDN_OK);
          const int64_t off = ctl && h0 <= 1 && 1 < h1 ? (h1 < H ? 1 : -1) : 0;
          ck_assert_int_eq(parity_blocks_acc_add_v(&blk, parity_vals_f64(gx), parity_vals_f64(gr), h0 + off, h1 + off,
                                                   &e), GDN_OK);
        }
        parity_metrics_acc_value(&acc, dims, GDN_DTYPE_F32, &got);
        parity_blocks_acc_value(&blk, &got);
        const int same = !memcmp(&got.block_rel, &want.block_rel, 8) &&
                         !memcmp(got.block_lo, want.block_lo, sizeof got.block_lo) &&
                         !memcmp(got.block_hi, want.block_hi, sizeof got.block_hi) &&
                         !memcmp(got.block_len, want.block_len, sizeof got.block_len) && got.n_blocks == want.n_blocks;
        ck_assert_msg(same == !ctl, "shape %d groups of %lld control %d: block_rel %a vs %a, lo %lld vs %lld", sh,
                      (long long)gs, ctl, got.block_rel, want.block_rel, (long long)got.block_lo[ax],
                      (long long)want.block_lo[ax]);
        parity_metrics_acc_clear(&acc);
        parity_blocks_acc_clear(&blk);
      }
  }
  free(x), free(r), free(gx), free(gr);
}
END_TEST

CKR_MAIN("metrics", "metrics", 60, hand_case, sums_exact_in_any_order, rel_acc_any_order, pass1_over_head_groups,
    blocks_over_head_groups, nonfinite_and_zero_reference, first_nonfinite_is_the_lowest_index,
    median_exact_and_thread_independent, median_even_ties, median_ties_and_small_n, median_infinities,
    median_one_bucket, median_many_buckets, ulp_hist_edges, profile_and_allclose, blocks_by_hand,
    elem_rel_grouped_as_serial, row_rel_by_hand)
