/* gdn_normal: the vectorised log and cos within the bounds gdn_normal.h's
 * proof takes (against glibc's, on every binade of the uniforms and over
 * the circle), and gdn_normal_fill bit for bit gdn_rng_normal_k's values
 * (float32 with sd 1 and 0.1, bfloat16) with its fallback taken, and the
 * certainty test that decides the fallback.  Negative controls: a log or
 * cos off by 2^-46 fails the same checks, a certainty test without its room
 * calls a near-boundary value certain, and a fill compared with the next
 * seed's draws differs. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../check_runner.h"
#include "gdn_bf16.h"
#include "gdn_normal.h"
#include "gdn_rng.h"

/* The bounds against glibc: the proof's own (2^-50 relative for log, 2^-49
 * absolute for cos) plus glibc's 1 ULP. */
#define LOG_BOUND (0x1p-50 + 0x1p-52)
#define COS_BOUND (0x1p-49 + 0x1p-53)

/* The largest |f(u) - log(u)| / |log(u)| over u = m 2^-e for every binade
 * e = 1..54, m drawn in [1, 2) (4096 a binade), and the edges: each side of
 * sqrt(2) and of 1, the smallest and largest uniforms. */
static double log_error(double (*f)(double)) {
  double worst = 0;
  const double edge[] = {0x1p-54, 0x1.fffffffffffffp-1, 0x1.ffffffffffffep-1, 0.7071067811865475,
                         0.7071067811865476, 1.4142135623730951 / 2, 0.5, 0x1.0000000000001p-1};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    const double g = log(edge[i]);
    worst = fmax(worst, fabs(f(edge[i]) - g) / fabs(g));
  }
  for (int e = 1; e <= 54; e++)
    for (uint64_t i = 0; i < 4096; i++) {
      const double u = ldexp(1.0 + gdn_rng_uniform(5, (uint64_t)e, i), -e);
      if (u >= 1) continue;
      const double g = log(u);
      worst = fmax(worst, fabs(f(u) - g) / fabs(g));
    }
  return worst;
}

/* The largest |f(x) - cos(x)| over x = 2 pi u for 2^18 uniforms u and for u
 * near every multiple of 1/8 (the quadrants' and the reduction's edges). */
static double cos_error(double (*f)(double)) {
  double worst = 0;
  for (uint64_t i = 0; i < (1u << 18); i++) {
    const double x = 6.283185307179586476925 * gdn_rng_uniform(6, 1, i);
    worst = fmax(worst, fabs(f(x) - cos(x)));
  }
  for (int q = 0; q <= 8; q++)
    for (int d = -64; d <= 64; d++) {
      const double u = q / 8.0 + d * 0x1p-53;
      if (u <= 0 || u >= 1) continue;
      const double x = 6.283185307179586476925 * u;
      worst = fmax(worst, fabs(f(x) - cos(x)));
    }
  return worst;
}

static double log_fast(double u) { return gdn_normal_log(u); }
static double cos_fast(double x) { return gdn_normal_cos(x); }
static double log_off(double u) { return gdn_normal_log(u) * (1 + 0x1p-46); }
static double cos_off(double x) { return gdn_normal_cos(x) + 0x1p-46; }

START_TEST(log_within_bound) {
  const double err = log_error(log_fast);
  ck_assert_msg(err <= LOG_BOUND, "log: relative error %a against glibc's", err);
  ck_assert(log_error(log_off) > LOG_BOUND);
}
END_TEST

START_TEST(cos_within_bound) {
  const double err = cos_error(cos_fast);
  ck_assert_msg(err <= COS_BOUND, "cos: absolute error %a against glibc's", err);
  ck_assert(cos_error(cos_off) > COS_BOUND);
}
END_TEST

/* n elements from `first` of (seed, stream) filled in batches against
 * gdn_rng_normal_k's, rounded as the synthetic inputs round them; returns
 * the first index that differs, or n.  *redrawn: the fallbacks taken. */
static size_t fill_compare(uint64_t seed, uint64_t ref_seed, uint64_t first, size_t n, double sd, int bf16,
                           size_t *redrawn) {
  const uint64_t key = gdn_rng_key(seed, 3), ref = gdn_rng_key(ref_seed, 3);
  float x[GDN_NORMAL_BATCH];
  for (size_t b = 0; b < n; b += GDN_NORMAL_BATCH) {
    const size_t m = n - b < GDN_NORMAL_BATCH ? n - b : GDN_NORMAL_BATCH;
    *redrawn += gdn_normal_fill(x, m, key, first + b, sd, bf16);
    for (size_t i = 0; i < m; i++) {
      float y = (float)(sd * gdn_rng_normal_k(ref, first + b + i));
      if (bf16) y = gdn_bf16_round(y);
      if (memcmp(&x[i], &y, sizeof y)) return b + i;
    }
  }
  return n;
}

START_TEST(fill_bit_identical) {
  const size_t n = (size_t)1 << 18;
  size_t redrawn = 0;
  /* odd starts and a short last batch; sd 0.1 as h0 draws; bfloat16 */
  ck_assert_uint_eq(fill_compare(11, 11, 0, n, 1.0, 0, &redrawn), n);
  ck_assert_uint_eq(fill_compare(12, 12, ((uint64_t)1 << 40) + 7, n + 5, 1.0, 0, &redrawn), n + 5);
  ck_assert_uint_eq(fill_compare(13, 13, 3, n, 0.1, 0, &redrawn), n);
  ck_assert_uint_eq(fill_compare(14, 14, 1, n, 1.0, 1, &redrawn), n);
  /* the fallback ran (about 2^-15 of the draws) and stayed rare */
  ck_assert_uint_gt(redrawn, 0);
  ck_assert_uint_lt(redrawn, 4 * n / 1000);
  size_t r2 = 0; /* negative control: another seed's draws are not these */
  ck_assert_uint_lt(fill_compare(11, 12, 0, 1024, 1.0, 0, &r2), 1024);
}
END_TEST

/* The certainty test: false within the room of a float32 rounding boundary
 * (a midpoint between neighbours, at 1, 2^-10 and -3) and for |x| so small
 * that float32's spacing is below the room, true elsewhere.  Negative
 * control: the same test without its room calls a value 2^-45 from a
 * midpoint certain, though a value within the proof's bound of it rounds
 * to the other neighbour. */
static int sure_without_room(double x) { return (float)x == (float)x; }

START_TEST(certainty_test) {
  const double mid[] = {1.0 + 0x1p-24, 0x1p-10 * (1.0 + 0x1p-24), -(3.0 + 0x1p-23)};
  for (int i = 0; i < 3; i++) {
    const double m = mid[i];
    ck_assert(!gdn_normal_sure(m));
    ck_assert(!gdn_normal_sure(m + 0x1p-45 * fabs(m)));
    ck_assert(!gdn_normal_sure(m - 0x1p-45 * fabs(m)));
    ck_assert(gdn_normal_sure(m + 0x1p-26 * fabs(m)));
    ck_assert(gdn_normal_sure(m - 0x1p-26 * fabs(m)));
  }
  ck_assert(gdn_normal_sure(1.0) && gdn_normal_sure(-2.5) && gdn_normal_sure(0.1));
  ck_assert(!gdn_normal_sure(0x1p-20) && !gdn_normal_sure(0x1p-30) && !gdn_normal_sure(0.0));
  const double near = 1.0 + 0x1p-24 + 0x1p-45; /* rounds up; 1 + 2^-24 - 2^-45, within the bound, rounds down */
  ck_assert(sure_without_room(near) && (float)near != (float)(1.0 + 0x1p-24 - 0x1p-45));
}
END_TEST

CKR_MAIN("normal", "normal", 0, log_within_bound, cos_within_bound, certainty_test, fill_bit_identical)
