/* kern_mm: the matmul precision modes (kern_mm.h).
 *
 *   - the split: HIGHEST's p0 + p1 + p2 reproduces every float32 x with
 *     |x| >= 2^-110 exactly (and below that exactly when x has no bits under
 *     bfloat16's smallest subnormal 2^-133), each part is a bfloat16 value;
 *     HIGH's p0 + p1 is within 2^-15 |x|; DEFAULT's p0 is gdn_bf16_round(x)
 *     (the branch-free rounding is bit-identical to it on a sweep of all
 *     binary32 encodings, NaN and ties included);
 *   - the pass set and summation order: kern_mm equals, bit for bit, an
 *     independent naive evaluation of XLA's formula (every pass a dot with p
 *     ascending fma from the first product, then XLA's sums in order, NaN to
 *     zero before hh), for k inside one KC block and beyond it;
 *   - skipped zero parts: for bfloat16-valued operands every mode returns the
 *     single bf16 pass, i.e. the IEEE product (no zero-signed outputs here);
 *   - an infinite operand gives +-inf, not NaN (ReplaceNaNWithZeros);
 *   - error bands on random matrices against a float64 reference, each mode
 *     in its band and the three ordered. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_bf16.h"
#include "kern_gemm.h"
#include "kern_mm.h"
#include "../check_runner.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static double unif(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

static int is_bf16(float x) { return (gdn_f32_bits(x) & 0xffffu) == 0; }

/* HIGHEST: exact for |x| >= 2^-110; below, exact iff no bits under 2^-133. */
START_TEST(split_highest_exact) {
  long tried = 0, inexact_big = 0, wrong_small = 0, not_bf16 = 0;
  for (int ex = -149; ex <= 127; ex++)
    for (int r = 0; r < 400; r++) {
      float m = (float)(1.0 + unif()); /* [1, 2) */
      float x = ldexpf(m, ex);         /* rounds to the subnormal grid below 2^-126 */
      if (r & 1) x = -x;
      if (!isfinite(x)) continue;
      float p[3];
      kern_split_value_f32(KERN_MATMUL_HIGHEST, x, p);
      for (int i = 0; i < 3; i++) not_bf16 += !is_bf16(p[i]);
      /* p0 + p1 + p2 in the order of magnitude: exact sums of disjoint bits */
      float back = (p[0] + p[1]) + p[2];
      int exact = back == x && (x != 0 || signbit(back) == signbit(x));
      if (fabsf(x) >= 0x1p-110f) {
        inexact_big += !exact;
      } else {
        /* the bits of x below 2^-133 */
        int has_low = fmodf(fabsf(x), 0x1p-133f) != 0;
        wrong_small += exact == has_low;
      }
      tried++;
    }
  ck_assert_int_eq(not_bf16, 0);
  ck_assert_msg(inexact_big == 0, "%ld of %ld float32 values >= 2^-110 not reproduced", inexact_big,
                tried);
  ck_assert_int_eq(wrong_small, 0);
  /* the documented exception exists: a float32 just above 2^-126 with its
   * last bit set has 23 bits below 2^-126 + 7, some under 2^-133 */
  float x = 0x1.000002p-126f, p[3];
  kern_split_value_f32(KERN_MATMUL_HIGHEST, x, p);
  ck_assert(p[0] + p[1] + p[2] != x);
}
END_TEST

/* HIGH: |x - p0 - p1| <= 2^-8 |r| < 2^-15 |x| (normal x); DEFAULT: p0 =
 * gdn_bf16_round(x); p0 of HIGH/HIGHEST is the truncation (never rounds
 * away from zero: |p0| <= |x|, and FLT_MAX does not overflow). */
START_TEST(split_high_default) {
  double worst = 0;
  for (int ex = -100; ex <= 100; ex++)
    for (int r = 0; r < 200; r++) {
      float x = ldexpf((float)(1.0 + unif()), ex) * (r & 1 ? -1.0f : 1.0f), p[3];
      kern_split_value_f32(KERN_MATMUL_HIGH, x, p);
      ck_assert(is_bf16(p[0]) && is_bf16(p[1]) && p[2] == 0);
      ck_assert(fabsf(p[0]) <= fabsf(x));
      double err = fabs((double)x - (double)p[0] - (double)p[1]) / fabs((double)x);
      worst = fmax(worst, err);
      kern_split_value_f32(KERN_MATMUL_DEFAULT, x, p);
      ck_assert(p[0] == gdn_bf16_round(x) && p[1] == 0 && p[2] == 0);
    }
  ck_assert_msg(worst < 0x1p-15, "HIGH split error %.3g", worst);
  ck_assert_msg(worst > 0x1p-17, "HIGH split error %.3g suspiciously small", worst);
  float p[3];
  kern_split_value_f32(KERN_MATMUL_HIGHEST, FLT_MAX, p);
  ck_assert(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]));
  ck_assert((p[0] + p[1]) + p[2] == FLT_MAX);
}
END_TEST

/* The branch-free bfloat16 rounding used by the splits equals gdn_bf16_round
 * on every 65521st binary32 encoding (all exponents, signs, NaN payloads)
 * and on the special values. */
START_TEST(rounding_matches_gdn_bf16) {
  long bad = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) {
    float x = gdn_f32_from_bits((uint32_t)u), p[3];
    kern_split_value_f32(KERN_MATMUL_DEFAULT, x, p);
    bad += gdn_f32_bits(p[0]) != gdn_f32_bits(gdn_bf16_round(x));
  }
  static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                     0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7f7fffffu,
                                     0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x00000001u,
                                     0x00008000u, 0x00018000u, 0x807fffffu};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
    float x = gdn_f32_from_bits(special[i]), p[3];
    kern_split_value_f32(KERN_MATMUL_DEFAULT, x, p);
    bad += gdn_f32_bits(p[0]) != gdn_f32_bits(gdn_bf16_round(x));
  }
  ck_assert_int_eq(bad, 0);
}
END_TEST

/* ---- the pass set and order, against a naive evaluation ---- */

typedef struct mats {
  int64_t m, n, k;
  float *a, *b, *c, *ws, *pa, *pb;
  kern_split_f32 sa, sb;
} mats;

/* The six buffers as one table, allocated and freed in one loop: A, B, C,
 * the gemm workspace and the two operands' splits (room for the widest
 * mode's parts). */
enum { MATS_BUFS = 6 };

static void mats_init(mats *t, int64_t m, int64_t n, int64_t k) {
  gdn_error e;
  gdn_error_init(&e);
  t->m = m;
  t->n = n;
  t->k = k;
  float **bufs[MATS_BUFS] = {&t->a, &t->b, &t->c, &t->ws, &t->pa, &t->pb};
  const char *names[MATS_BUFS] = {"a", "b", "c", "ws", "pa", "pb"};
  const size_t elems[MATS_BUFS] = {(size_t)(m * k), (size_t)(k * n), (size_t)(m * n), kern_gemm_ws_elems_f32(),
                                   kern_split_elems_f32(KERN_MATMUL_HIGHEST, (size_t)(m * k)),
                                   kern_split_elems_f32(KERN_MATMUL_HIGHEST, (size_t)(k * n))};
  for (int i = 0; i < MATS_BUFS; i++) {
    *bufs[i] = gdn_malloc(elems[i] * sizeof(float), names[i], &e);
    ck_assert_msg(*bufs[i] != NULL, "%s", e.msg);
  }
}
static void mats_clear(mats *t) {
  float *bufs[MATS_BUFS] = {t->a, t->b, t->c, t->ws, t->pa, t->pb};
  for (int i = 0; i < MATS_BUFS; i++) gdn_free(bufs[i]);
}
/* A row-major m x k; B used transposed: stored n x k (b_rs = 1, b_cs = k),
 * as K^T is in the kernels. */
static void mats_run(mats *t, kern_matmul mode) {
  kern_split_bind_f32(&t->sa, mode, t->pa, (size_t)(t->m * t->k));
  kern_split_bind_f32(&t->sb, mode, t->pb, (size_t)(t->k * t->n));
  kern_split_fill_f32(&t->sa, mode, t->a, (size_t)(t->m * t->k));
  kern_split_fill_f32(&t->sb, mode, t->b, (size_t)(t->k * t->n));
  kern_mm_f32(mode, t->m, t->n, t->k, &t->sa, t->k, 1, &t->sb, 1, t->k, t->c, t->n, t->ws);
}

/* one pass: sum_p A_part(i, p) B_part(p, j), p ascending, fma, from p = 0 */
static float naive_dot(const mats *t, int64_t i, int64_t j, int pa, int pb, kern_matmul mode) {
  float s = 0;
  for (int64_t p = 0; p < t->k; p++) {
    float x[3], y[3];
    kern_split_value_f32(mode, t->a[i * t->k + p], x);
    kern_split_value_f32(mode, t->b[j * t->k + p], y);
    s = p == 0 ? x[pa] * y[pb] : fmaf(x[pa], y[pb], s);
  }
  return s;
}
static float nan0(float x) { return isnan(x) ? 0.0f : x; }

/* XLA's formulas (kern_mm.h), written out directly. */
static float naive_mm(const mats *t, int64_t i, int64_t j, kern_matmul mode) {
  switch (mode) {
  case KERN_MATMUL_DEFAULT: return naive_dot(t, i, j, 0, 0, mode);
  case KERN_MATMUL_HIGH: {
    float lh = naive_dot(t, i, j, 1, 0, mode), hl = naive_dot(t, i, j, 0, 1, mode);
    return nan0(lh + hl) + naive_dot(t, i, j, 0, 0, mode);
  }
  case KERN_MATMUL_HIGHEST: {
    float r = naive_dot(t, i, j, 1, 1, mode) + naive_dot(t, i, j, 0, 2, mode); /* mm + hl */
    r = r + naive_dot(t, i, j, 2, 0, mode);                                    /* + lh */
    r = r + naive_dot(t, i, j, 0, 1, mode);                                    /* + hm */
    r = r + naive_dot(t, i, j, 1, 0, mode);                                    /* + mh */
    return nan0(r) + naive_dot(t, i, j, 0, 0, mode);                           /* + hh */
  }
  default: {
    float s = 0;
    for (int64_t p = 0; p < t->k; p++)
      s = p == 0 ? t->a[i * t->k] * t->b[j * t->k] : fmaf(t->a[i * t->k + p], t->b[j * t->k + p], s);
    return s;
  }
  }
}

static void fill_random(mats *t) {
  for (int64_t x = 0; x < t->m * t->k; x++) t->a[x] = (float)(2 * unif() - 1);
  for (int64_t x = 0; x < t->k * t->n; x++) t->b[x] = (float)(2 * unif() - 1);
}

/* k = 37 and 100 (one K block), 300 (PLUS through the workspace block) */
START_TEST(pass_order_bitwise) {
  static const int64_t ks[] = {37, 100, 300};
  for (int ki = 0; ki < 3; ki++) {
    mats t;
    mats_init(&t, 13, 21, ks[ki]);
    fill_random(&t);
    for (int mode = 0; mode < 4; mode++) {
      mats_run(&t, (kern_matmul)mode);
      long bad = 0;
      for (int64_t i = 0; i < t.m; i++)
        for (int64_t j = 0; j < t.n; j++)
          bad += gdn_f32_bits(t.c[i * t.n + j]) !=
                 gdn_f32_bits(naive_mm(&t, i, j, (kern_matmul)mode));
      ck_assert_msg(bad == 0, "%s k=%ld: %ld elements differ from XLA's formula",
                    kern_matmul_name((kern_matmul)mode), (long)ks[ki], bad);
    }
    mats_clear(&t);
  }
}
END_TEST

/* The order matters: summing HIGHEST's passes in another order (hh first,
 * as one accumulation would) gives different bits on some elements, so the
 * test above does pin the order down. */
START_TEST(order_is_observable) {
  mats t;
  mats_init(&t, 16, 16, 64);
  fill_random(&t);
  mats_run(&t, KERN_MATMUL_HIGHEST);
  long differ = 0;
  for (int64_t i = 0; i < t.m; i++)
    for (int64_t j = 0; j < t.n; j++) {
      float r = naive_dot(&t, i, j, 0, 0, KERN_MATMUL_HIGHEST);
      r = r + naive_dot(&t, i, j, 0, 1, KERN_MATMUL_HIGHEST);
      r = r + naive_dot(&t, i, j, 1, 0, KERN_MATMUL_HIGHEST);
      r = r + naive_dot(&t, i, j, 0, 2, KERN_MATMUL_HIGHEST);
      r = r + naive_dot(&t, i, j, 1, 1, KERN_MATMUL_HIGHEST);
      r = r + naive_dot(&t, i, j, 2, 0, KERN_MATMUL_HIGHEST);
      differ += r != t.c[i * t.n + j];
    }
  ck_assert_msg(differ > 0, "the pass order left no trace on 256 outputs");
  mats_clear(&t);
}
END_TEST

/* bfloat16-valued A and B: parts beyond p0 are zero, their passes skipped,
 * and every mode returns exactly the IEEE product (exact bf16 x bf16
 * products accumulated by fma), as XLA's bf16 x bf16 dot is one pass. */
START_TEST(bf16_operands_single_pass) {
  mats t;
  mats_init(&t, 9, 19, 70);
  for (int64_t x = 0; x < t.m * t.k; x++) t.a[x] = gdn_bf16_round((float)(2 * unif() - 1));
  for (int64_t x = 0; x < t.k * t.n; x++) t.b[x] = gdn_bf16_round((float)(2 * unif() - 1));
  mats_run(&t, KERN_MATMUL_IEEE);
  float *ref = malloc((size_t)(t.m * t.n) * sizeof(float));
  memcpy(ref, t.c, (size_t)(t.m * t.n) * sizeof(float));
  for (int mode = 1; mode < 4; mode++) {
    mats_run(&t, (kern_matmul)mode);
    ck_assert_uint_eq(t.sa.nz, 1u);
    ck_assert_uint_eq(t.sb.nz, 1u);
    ck_assert(memcmp(ref, t.c, (size_t)(t.m * t.n) * sizeof(float)) == 0);
  }
  /* one float32 operand: HIGHEST keeps hh, hm, hl (3 of 6 passes) and still
   * equals the full formula */
  for (int64_t x = 0; x < t.m * t.k; x++) t.a[x] = (float)(2 * unif() - 1);
  mats_run(&t, KERN_MATMUL_HIGHEST);
  ck_assert_uint_eq(t.sb.nz, 1u);
  ck_assert_uint_eq(t.sa.nz, 7u);
  long bad = 0;
  for (int64_t i = 0; i < t.m; i++)
    for (int64_t j = 0; j < t.n; j++) bad += t.c[i * t.n + j] != naive_mm(&t, i, j, KERN_MATMUL_HIGHEST);
  ck_assert_int_eq(bad, 0);
  free(ref);
  mats_clear(&t);
}
END_TEST

/* An infinite element: its low parts are NaN (inf - inf); nan0 drops the low
 * sum and the result is the hh pass's infinity, as in IEEE. */
START_TEST(infinity_survives) {
  mats t;
  mats_init(&t, 2, 2, 3);
  for (int x = 0; x < 6; x++) t.a[x] = t.b[x] = 0.5f + (float)x;
  t.a[1] = INFINITY;
  for (int mode = 0; mode < 4; mode++) {
    mats_run(&t, (kern_matmul)mode);
    ck_assert_msg(isinf(t.c[0]) && t.c[0] > 0 && isinf(t.c[1]) && isfinite(t.c[2]),
                  "%s: %g %g %g", kern_matmul_name((kern_matmul)mode), (double)t.c[0],
                  (double)t.c[1], (double)t.c[2]);
  }
  mats_clear(&t);
}
END_TEST

/* ---- error bands ----
 * 64 x 64 outputs, k = 128 and 300, entries U(-1, 1), against the float64
 * product of the same float32 inputs.  Two measures:
 *   normwise ||C - R||_F / ||R||_F, and
 *   elementwise max |c - r| / sum_p |a_ip b_pj|.
 * Rigorous elementwise bounds (u = 2^-24, gamma_k ~ k u for the float32
 * accumulation of each pass, k = 300: 2^-15.8):
 *   DEFAULT   |rn(a) rn(b) - ab| <= (2 2^-8 + 2^-16) |ab|, plus gamma_k:
 *             <= 2^-6.9
 *   HIGH      the dropped lo*lo (< 2^-14 |ab|), the rounding of the lo parts
 *             (< 2 2^-15 |ab|), plus gamma_k: <= 2^-12.5
 *   HIGHEST   dropped mid*lo, lo*mid, lo*lo (< 2^-20 |ab|) plus gamma_k:
 *             <= 2^-15.5
 * Normwise bands, measured (this generator) 2^-8.9, 2^-16.5, 2^-23.5 at
 * k = 128, with margins of 4x or more: a typical product error of
 * sqrt(2/3) 2^-8 (two uniform roundings) for DEFAULT and ~2^-16 for HIGH,
 * averaging over random signs; for HIGHEST the accumulation dominates and
 * the output's own float32 rounding (~2^-25 RMS) is a floor, hence the
 * lower limit 2^-27.  Ordered: each mode at least 2^5 better than the
 * previous one. */
START_TEST(error_bands) {
  static const double lo[4] = {0, 0x1p-11, 0x1p-19, 0x1p-27};
  static const double hi[4] = {0x1p-20, 0x1p-7, 0x1p-14, 0x1p-21};
  const double elem[4] = {exp2(-15), exp2(-6.9), exp2(-12.5), exp2(-15.5)};
  static const int64_t ks[] = {128, 300};
  for (int ki = 0; ki < 2; ki++) {
    mats t;
    mats_init(&t, 64, 64, ks[ki]);
    fill_random(&t);
    double norm[4];
    for (int mode = 0; mode < 4; mode++) {
      mats_run(&t, (kern_matmul)mode);
      double num = 0, den = 0, mx = 0;
      for (int64_t i = 0; i < t.m; i++)
        for (int64_t j = 0; j < t.n; j++) {
          double r = 0, s = 0;
          for (int64_t p = 0; p < t.k; p++) {
            double ab = (double)t.a[i * t.k + p] * (double)t.b[j * t.k + p];
            r += ab;
            s += fabs(ab);
          }
          double d = (double)t.c[i * t.n + j] - r;
          num += d * d;
          den += r * r;
          mx = fmax(mx, fabs(d) / s);
        }
      norm[mode] = sqrt(num / den);
      fprintf(stderr, "mm %-8s k=%ld: normwise 2^%.2f, elementwise max 2^%.2f\n",
              kern_matmul_name((kern_matmul)mode), (long)t.k, log2(norm[mode]), log2(mx));
      ck_assert_msg(norm[mode] >= lo[mode] && norm[mode] <= hi[mode], "%s: normwise %.3g",
                    kern_matmul_name((kern_matmul)mode), norm[mode]);
      ck_assert_msg(mx <= elem[mode], "%s: elementwise %.3g", kern_matmul_name((kern_matmul)mode),
                    mx);
    }
    ck_assert(norm[KERN_MATMUL_DEFAULT] > 32 * norm[KERN_MATMUL_HIGH]);
    ck_assert(norm[KERN_MATMUL_HIGH] > 32 * norm[KERN_MATMUL_HIGHEST]);
    mats_clear(&t);
  }
}
END_TEST

/* float64 ignores the mode: kern_mm_f64 is kern_gemm_f64. */
START_TEST(float64_is_ieee) {
  gdn_error e;
  gdn_error_init(&e);
  double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5, -1, 2, 0.25, 3, -2}, c1[4], c2[4];
  double *ws = gdn_malloc(kern_gemm_ws_elems_f64() * sizeof(double), "ws", &e);
  ck_assert_uint_eq(kern_split_elems_f64(KERN_MATMUL_HIGHEST, 6), 0);
  kern_split_f64 sa, sb;
  kern_split_bind_f64(&sa, KERN_MATMUL_HIGHEST, NULL, 6);
  kern_split_bind_f64(&sb, KERN_MATMUL_HIGHEST, NULL, 6);
  kern_split_fill_f64(&sa, KERN_MATMUL_HIGHEST, a, 6);
  kern_split_fill_f64(&sb, KERN_MATMUL_HIGHEST, b, 6);
  kern_mm_f64(KERN_MATMUL_HIGHEST, 2, 2, 3, &sa, 3, 1, &sb, 2, 1, c1, 2, ws);
  kern_gemm_f64(KERN_GEMM_SET, 2, 2, 3, a, 3, 1, b, 2, 1, c2, 2, ws);
  ck_assert(memcmp(c1, c2, sizeof c1) == 0);
  ck_assert_int_eq(kern_mm_parts(KERN_MATMUL_HIGHEST), 3);
  ck_assert_int_eq(kern_mm_passes(KERN_MATMUL_HIGHEST), 6);
  ck_assert_int_eq(kern_mm_passes(KERN_MATMUL_HIGH), 3);
  ck_assert_int_eq(kern_mm_passes(KERN_MATMUL_DEFAULT), 1);
  gdn_free(ws);
}
END_TEST

CKR_MAIN("mm", "mm", 120, split_highest_exact, split_high_default, rounding_matches_gdn_bf16, pass_order_bitwise,
    order_is_observable, bf16_operands_single_pass, infinity_survives, error_bands, float64_is_ieee)
