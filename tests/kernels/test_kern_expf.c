/* kern_expf.h: the array exp gives libm's expf bit for bit -- on 2^22
 * inputs spread over every float exponent in the fast range and around
 * it, on the edges of the range and the special values, called in place
 * and with lengths that leave a tail; and the comparison itself notices a
 * one-ulp change (the negative control). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../check_runner.h"
#include "kern_expf.h"

enum { N = 1 << 16, BLOCKS = 64 };

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

/* Block k of the spread: float bit patterns from the negative range's top
 * (-105) down to 0 and from 0 up to 89, a stride that visits every
 * exponent, offset by k so blocks differ in their low bits. */
static void spread(float *x, int k) {
  const uint32_t neg0 = 0x80000000u, neg1 = 0xc2d20000u, pos1 = 0x42b20000u;
  const uint32_t sn = (neg1 - neg0) / (N / 2), sp = pos1 / (N / 2);
  for (int i = 0; i < N / 2; i++) x[i] = from_bits(neg0 + (uint32_t)i * sn + (uint32_t)k * 7919u % sn);
  for (int i = 0; i < N / 2; i++) x[N / 2 + i] = from_bits((uint32_t)i * sp + (uint32_t)k * 7919u % sp);
}

static float X[N], Y[N];

START_TEST(test_spread_matches_libm) {
  int64_t bad = 0;
  for (int k = 0; k < BLOCKS; k++) {
    spread(X, k);
    kern_expf_array(Y, X, N);
    for (int i = 0; i < N; i++) bad += !same(Y[i], expf(X[i]));
  }
  ck_assert_msg(bad == 0, "%lld of %d inputs differ from expf", (long long)bad, N * BLOCKS);
}
END_TEST

START_TEST(test_edges_in_place) {
  const float e[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f,
                     0x1.62e42ep6f, nextafterf(0x1.62e42ep6f, INFINITY), -0x1.9d1d9ep6f,
                     nextafterf(-0x1.9d1d9ep6f, -INFINITY), -0x1.9fe368p6f, nextafterf(-0x1.9fe368p6f, 0),
                     nextafterf(-0x1.9fe368p6f, -INFINITY), -104.0f, -103.5f, -88.0f, 88.0f, 1.0f, -1.0f, 0.5f};
  const int n = (int)(sizeof e / sizeof e[0]);
  /* every length 0 .. n (the 4-lane loop and its tail), in place */
  for (int len = 0; len <= n; len++) {
    float y[64];
    memcpy(y, e, sizeof e);
    kern_expf_array(y, y, len);
    for (int i = 0; i < len; i++) ck_assert_msg(same(y[i], expf(e[i])), "expf(%a): %a, libm %a", e[i], y[i], expf(e[i]));
    for (int i = len; i < n; i++) ck_assert(same(y[i], e[i])); /* past n untouched */
  }
}
END_TEST

/* The negative control: the comparison above finds a one-ulp change. */
START_TEST(test_control_one_ulp) {
  spread(X, 0);
  kern_expf_array(Y, X, N);
  int64_t bad = 0, finite = 0;
  for (int i = 0; i < N; i++) {
    const float r = expf(X[i]);
    if (!(r > 0 && isfinite(r))) continue;
    finite++;
    bad += !same(Y[i], nextafterf(r, INFINITY));
  }
  ck_assert_msg(finite > N / 2 && bad == finite, "%lld of %lld", (long long)bad, (long long)finite);
}
END_TEST

int main(void) {
  Suite *su = suite_create("kernels");
  TCase *tc = tcase_create("kern_expf");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_spread_matches_libm);
  tcase_add_test(tc, test_edges_in_place);
  tcase_add_test(tc, test_control_one_ulp);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
