/* parity_xsum: exact, order-independent sums (a streamed metric's sums). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

#include "../check_runner.h"
#include "gdn_rng.h"
#include "parity_xsum.h"

/* The exact sum rounded to nearest by MPFR (a 2300-bit sum holds any sum
 * of these terms exactly), an independent reference. */
static double mpfr_sum_d(const double *x, size_t n) {
  mpfr_t s, t;
  mpfr_init2(s, 2300);
  mpfr_init2(t, 64);
  mpfr_set_zero(s, 1);
  for (size_t i = 0; i < n; i++) {
    mpfr_set_d(t, x[i], MPFR_RNDN);
    mpfr_add(s, s, t, MPFR_RNDN); /* exact at 2300 bits */
  }
  double v = mpfr_get_d(s, MPFR_RNDN);
  mpfr_clear(s);
  mpfr_clear(t);
  return v;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Terms over the whole exponent range (subnormals, squares of small and
 * large differences, exact ties) in many shuffles and splits: every split
 * into partial accumulators, merged in any order, gives MPFR's correctly
 * rounded sum, bit for bit. */
START_TEST(exact_any_order_any_split) {
  enum { N = 20000 };
  static double x[N];
  static parity_xsum part[7], whole;
  for (int trial = 0; trial < 12; trial++) {
    for (size_t i = 0; i < N; i++) {
      const uint64_t b = gdn_rng_bits(99, (uint64_t)trial, i);
      const int ex = trial < 4 ? (int)(b % 2098) - 1074 : (int)(b % 120) - 60; /* wide, then metric-like */
      x[i] = ldexp(gdn_rng_uniform(99, 1000 + (uint64_t)trial, i), ex);
      if (b % 97 == 0) x[i] = 0;
      if (b % 89 == 0) x[i] = ldexp(1.0, ex - 60); /* many far-apart powers of two */
    }
    const double want = mpfr_sum_d(x, N);
    parity_xsum_init(&whole);
    for (size_t i = 0; i < N; i++) parity_xsum_add(&whole, x[i]);
    ck_assert_msg(same_bits(parity_xsum_value(&whole), want), "trial %d: %a vs %a", trial, parity_xsum_value(&whole),
                  want);
    /* a split by a hash of the index (as groups interleave), merged backwards */
    for (int k = 0; k < 7; k++) parity_xsum_init(&part[k]);
    for (size_t i = N; i-- > 0;) parity_xsum_add(&part[gdn_rng_bits(5, (uint64_t)trial, i) % 7], x[i]);
    for (int k = 5; k >= 0; k--) parity_xsum_merge(&part[6], &part[k]);
    ck_assert(same_bits(parity_xsum_value(&part[6]), want));
  }
}
END_TEST

/* Rounding at the edges: ties to even, a carry into the next binade,
 * subnormal sums, overflow, the special values. */
START_TEST(rounding_and_specials) {
  parity_xsum a;
  parity_xsum_init(&a);
  ck_assert(same_bits(parity_xsum_value(&a), 0.0));
  parity_xsum_add(&a, 1.0);
  parity_xsum_add(&a, 0x1p-53); /* 1 + 2^-53: a tie, to even (1) */
  ck_assert(same_bits(parity_xsum_value(&a), 1.0));
  parity_xsum_add(&a, 0x1p-80); /* above the tie: up */
  ck_assert(same_bits(parity_xsum_value(&a), 1.0 + 0x1p-52));
  parity_xsum_init(&a);
  parity_xsum_add(&a, 1.0 + 0x1p-52);
  parity_xsum_add(&a, 0x1p-53); /* tie with an odd last bit: up */
  ck_assert(same_bits(parity_xsum_value(&a), 1.0 + 0x1p-51));
  parity_xsum_init(&a);
  parity_xsum_add(&a, 0x1.fffffffffffffp0);
  parity_xsum_add(&a, 0x1p-52); /* carries into 2 */
  ck_assert(same_bits(parity_xsum_value(&a), 2.0));
  parity_xsum_init(&a);
  for (int i = 0; i < 3; i++) parity_xsum_add(&a, 0x1p-1074);
  ck_assert(same_bits(parity_xsum_value(&a), 3 * 0x1p-1074));
  parity_xsum_add(&a, DBL_MAX);
  parity_xsum_add(&a, DBL_MAX);
  ck_assert(isinf(parity_xsum_value(&a)));
  parity_xsum_init(&a);
  parity_xsum_add(&a, 2.0);
  parity_xsum_add(&a, INFINITY);
  ck_assert(isinf(parity_xsum_value(&a)));
  parity_xsum_add(&a, NAN);
  ck_assert(isnan(parity_xsum_value(&a)));
}
END_TEST

/* Negative control: what the accumulator is for.  A binary64 running sum
 * of the same terms depends on their order (1 + 2^-53 + 2^-53 is 1 from the
 * left and 1 + 2^-52 from the right); the exact sum is 1 + 2^-52 either way. */
START_TEST(running_sum_depends_on_order) {
  const double t[3] = {1.0, 0x1p-53, 0x1p-53};
  volatile double l = 0, r = 0;
  for (int i = 0; i < 3; i++) l += t[i];
  for (int i = 2; i >= 0; i--) r += t[i];
  ck_assert(l != r);
  parity_xsum a, b;
  parity_xsum_init(&a);
  parity_xsum_init(&b);
  for (int i = 0; i < 3; i++) parity_xsum_add(&a, t[i]);
  for (int i = 2; i >= 0; i--) parity_xsum_add(&b, t[i]);
  ck_assert(same_bits(parity_xsum_value(&a), 1.0 + 0x1p-52));
  ck_assert(same_bits(parity_xsum_value(&a), parity_xsum_value(&b)));
}
END_TEST

CKR_MAIN("xsum", "xsum", 0, exact_any_order_any_split, rounding_and_specials, running_sum_depends_on_order)
