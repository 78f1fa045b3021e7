/* kern_gemm: the reduction order is the scalar one.
 *
 * Every output element must equal, bit for bit, the naive loop
 *   SET: c = a_i0 b_0j; c = fma(a_ip, b_pj, c) for p = 1 .. k-1
 *   ADD: c = C_ij;      c = fma(a_ip, b_pj, c) for p = 0 .. k-1
 *   PLUS: d = the SET sum; c = C_ij + d
 * in the compute type, for every size (tiles of the micro-kernel, partial
 * tiles, sizes beyond the MC/NC/KC blocks), every combination of transposed
 * operands and padded leading dimensions.  Exact equality is the claim:
 * the blocked code performs the same correctly rounded operations in the
 * same order, so no tolerance is allowed.  Inputs include signed zeros and
 * values over 2^-40 .. 2^40, so a reordering or a lost fma would show. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "kern_gemm.h"
#include "../check_runner.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double next_val(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t r = rng_state >> 11;
  int kind = (int)(r % 23);
  if (kind == 0) return 0.0;
  if (kind == 1) return -0.0;
  double u = (double)(r >> 8) / (double)(1ull << 45) - 0.5; /* (-0.5, 0.5) */
  int ex = (int)((r >> 3) % 81) - 40;
  return kind < 4 ? ldexp(u, ex) : u;
}

#define DEFINE_CHECK(T, S, FMA)                                                                  \
  static void naive_##S(kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, const T *a,        \
                        int64_t ars, int64_t acs, const T *b, int64_t brs, int64_t bcs, T *c,  \
                        int64_t ldc) {                                                         \
    for (int64_t i = 0; i < m; i++)                                                            \
      for (int64_t j = 0; j < n; j++) {                                                        \
        T s;                                                                                   \
        int64_t p0;                                                                            \
        if (acc != KERN_GEMM_ADD) {                                                            \
          if (k == 0) {                                                                        \
            if (acc == KERN_GEMM_SET) c[i * ldc + j] = 0;                                      \
            continue;                                                                          \
          }                                                                                    \
          s = a[i * ars] * b[j * bcs];                                                         \
          p0 = 1;                                                                              \
        } else {                                                                               \
          s = c[i * ldc + j];                                                                  \
          p0 = 0;                                                                              \
        }                                                                                      \
        for (int64_t p = p0; p < k; p++) s = FMA(a[i * ars + p * acs], b[p * brs + j * bcs], s); \
        c[i * ldc + j] = acc == KERN_GEMM_PLUS ? c[i * ldc + j] + s : s;                       \
      }                                                                                        \
  }                                                                                            \
  /* one case: returns 0 when bitwise equal */                                                 \
  static int check_##S(kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, int ta, int tb,     \
                       int pad, T *ws) {                                                       \
    int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;                 \
    int64_t na = (ta ? k : m) * lda + 1, nb = (tb ? n : k) * ldb + 1, nc = m * ldc + 1;        \
    T *a = malloc((size_t)na * sizeof(T)), *b = malloc((size_t)nb * sizeof(T));                \
    T *c1 = malloc((size_t)nc * sizeof(T)), *c2 = malloc((size_t)nc * sizeof(T));              \
    for (int64_t x = 0; x < na; x++) a[x] = (T)next_val();                                     \
    for (int64_t x = 0; x < nb; x++) b[x] = (T)next_val();                                     \
    for (int64_t x = 0; x < nc; x++) c1[x] = c2[x] = (T)next_val();                            \
    int64_t ars = ta ? 1 : lda, acs = ta ? lda : 1, brs = tb ? 1 : ldb, bcs = tb ? ldb : 1;    \
    kern_gemm_##S(acc, m, n, k, a, ars, acs, b, brs, bcs, c1, ldc, ws);      \
    naive_##S(acc, m, n, k, a, ars, acs, b, brs, bcs, c2, ldc);                                \
    /* the whole buffer, padding included: nothing outside C may change */                     \
    int bad = memcmp(c1, c2, (size_t)nc * sizeof(T)) != 0;                                     \
    free(a);                                                                                   \
    free(b);                                                                                   \
    free(c1);                                                                                  \
    free(c2);                                                                                  \
    return bad;                                                                                \
  }

DEFINE_CHECK(float, f32, fmaf)
DEFINE_CHECK(double, f64, fma)

static float *ws32;
static double *ws64;

static void setup(void) {
  gdn_error e;
  gdn_error_init(&e);
  ws32 = gdn_malloc(kern_gemm_ws_elems_f32() * sizeof(float), "ws32", &e);
  ws64 = gdn_malloc(kern_gemm_ws_elems_f64() * sizeof(double), "ws64", &e);
  ck_assert_ptr_nonnull(ws32);
  ck_assert_ptr_nonnull(ws64);
}
static void teardown(void) {
  gdn_free(ws32);
  gdn_free(ws64);
}

/* m, n over 1..37 (every partial micro-tile of 6 x 16 / 6 x 8), k over 1..70
 * (cycled with m, n so every k occurs), all four transposes, SET, ADD and PLUS. */
START_TEST(odd_sizes_bitwise) {
  int fails = 0, cases = 0;
  for (int64_t m = 1; m <= 37; m++)
    for (int64_t n = 1; n <= 37; n++) {
      int64_t k = 1 + (m * 37 + n * 11) % 70;
      for (int t = 0; t < 4; t++)
        for (int acc = 0; acc < 3; acc++) {
          int pad = (int)((m + n + t) % 3);
          int f = check_f32((kern_gemm_acc)acc, m, n, k, t & 1, t >> 1, pad, ws32);
          int d = check_f64((kern_gemm_acc)acc, m, n, k, t & 1, t >> 1, pad, ws64);
          if (f || d)
            fprintf(stderr, "mismatch m=%ld n=%ld k=%ld ta=%d tb=%d acc=%d f32=%d f64=%d\n",
                    (long)m, (long)n, (long)k, t & 1, t >> 1, acc, f, d);
          fails += f + d;
          cases += 2;
        }
    }
  ck_assert_msg(fails == 0, "%d of %d gemm cases differ from the scalar order", fails, cases);
}
END_TEST

/* Every k in 1..70 at a few (m, n) that hit full and partial tiles. */
START_TEST(every_k_bitwise) {
  static const int64_t sz[] = {1, 5, 6, 7, 16, 17, 37};
  int fails = 0;
  for (int a = 0; a < 7; a++)
    for (int b = 0; b < 7; b++)
      for (int64_t k = 1; k <= 70; k++) {
        int t = (int)((k + a + b) % 4);
        fails += check_f32(KERN_GEMM_SET, sz[a], sz[b], k, t & 1, t >> 1, 1, ws32);
        fails += check_f64(KERN_GEMM_ADD, sz[a], sz[b], k, t & 1, t >> 1, 0, ws64);
        fails += check_f32(KERN_GEMM_PLUS, sz[a], sz[b], k, t & 1, t >> 1, 0, ws32);
      }
  ck_assert_int_eq(fails, 0);
}
END_TEST

/* Beyond one block in every direction (MC = 72, NC = 128, KC = 128): the
 * running sums are stored and resumed across K blocks (for PLUS in the
 * workspace's C block, then added to C). */
START_TEST(beyond_blocks_bitwise) {
  for (int t = 0; t < 4; t++)
    for (int acc = 0; acc < 3; acc++) {
      ck_assert_int_eq(check_f32((kern_gemm_acc)acc, 150, 301, 389, t & 1, t >> 1, 3, ws32), 0);
      ck_assert_int_eq(check_f64((kern_gemm_acc)acc, 77, 260, 257, t & 1, t >> 1, 1, ws64), 0);
    }
}
END_TEST

/* k = 0: SET gives +0, ADD leaves C; m or n = 0 touches nothing. */
START_TEST(empty_inner_dimension) {
  float a[4] = {1, 2, 3, 4}, c[6] = {5, 5, 5, 5, 5, 5};
  kern_gemm_f32(KERN_GEMM_ADD, 2, 3, 0, a, 1, 1, a, 1, 1, c, 3, ws32);
  for (int i = 0; i < 6; i++) ck_assert(c[i] == 5.0f);
  kern_gemm_f32(KERN_GEMM_SET, 0, 3, 2, a, 1, 1, a, 1, 1, c, 3, ws32);
  for (int i = 0; i < 6; i++) ck_assert(c[i] == 5.0f);
  kern_gemm_f32(KERN_GEMM_SET, 2, 3, 0, a, 1, 1, a, 1, 1, c, 3, ws32);
  for (int i = 0; i < 6; i++) ck_assert(c[i] == 0.0f && !signbit(c[i]));
}
END_TEST

/* The first product starts the sum (not 0 + a*b): with a = -0 and b > 0 the
 * result of a 1-term SET is -0.  A sum started from +0 would give +0. */
START_TEST(first_product_starts_the_sum) {
  float a[1] = {-0.0f}, b[1] = {3.0f}, c[1] = {7.0f};
  kern_gemm_f32(KERN_GEMM_SET, 1, 1, 1, a, 1, 1, b, 1, 1, c, 1, ws32);
  ck_assert(c[0] == 0.0f && signbit(c[0]));
}
END_TEST

/* PLUS adds a finished product to C (two roundings), ADD continues C's
 * sum: with C = 1 and two products of 2^-24, ADD rounds 1 + 2^-24 to 1 (a
 * tie, to even) twice, PLUS forms 2^-23 first and gets 1 + 2^-23. */
START_TEST(plus_is_not_add) {
  float a[2] = {0x1p-24f, 0x1p-24f}, b[2] = {1.0f, 1.0f}, c[1] = {1.0f};
  kern_gemm_f32(KERN_GEMM_ADD, 1, 1, 2, a, 2, 1, b, 1, 1, c, 1, ws32);
  ck_assert(c[0] == 1.0f);
  c[0] = 1.0f;
  kern_gemm_f32(KERN_GEMM_PLUS, 1, 1, 2, a, 2, 1, b, 1, 1, c, 1, ws32);
  ck_assert(c[0] == 1.0f + 0x1p-23f);
  c[0] = 5.0f; /* k = 0: PLUS leaves C */
  kern_gemm_f32(KERN_GEMM_PLUS, 1, 1, 0, a, 2, 1, b, 1, 1, c, 1, ws32);
  ck_assert(c[0] == 5.0f);
}
END_TEST

int main(void) {
  Suite *su = suite_create("gemm");
  TCase *tc = CKR_TCASE(su, "gemm", 120, odd_sizes_bitwise, every_k_bitwise, beyond_blocks_bitwise,
      empty_inner_dimension, first_product_starts_the_sum, plus_is_not_add);
  tcase_add_checked_fixture(tc, setup, teardown);
  return ckr_run(su);
}
