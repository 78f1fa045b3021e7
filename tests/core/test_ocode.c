/* gdn_ocode: a float32 tensor held as codes against binary64 base values.
 *
 *   - every float32 bit pattern comes back bit for bit against every kind of
 *     base (near, far, zero, subnormal, beyond float32, inf, NaN);
 *   - the codes are the float32 step counts from the truncated base, so
 *     values within 127 steps take no exception and 128 steps do;
 *   - the pivot does not depend on the x86 MXCSR (the kernels' ftz mode
 *     sets FTZ and DAZ while they write);
 *   - writers on several threads in any order leave the same held form,
 *     below the exception list's limit and past it (the side array);
 *   - past the limit the list stops growing (n / 8 entries);
 *   - finish refuses an element written twice as an exception, and reports
 *     a failed append.
 * Each has a negative control: a wrong base or a changed code is seen. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "gdn_bf16.h"
#include "gdn_ocode.h"
#include "../check_runner.h"

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 16;
}

/* A base of every kind, and y near it or anywhere. */
static double some_base(uint64_t *s, int k) {
  static const double special[] = {0.0, -0.0, 1e-300, -1e-300, 1e-40, -3e-39, 1e39, -1e300, INFINITY,
                                   -INFINITY, NAN, 1.0, -1.0, FLT_MAX, FLT_MIN, 0x1p-149};
  if (k % 4 == 0) return special[lcg(s) % (sizeof special / sizeof special[0])];
  double m = (double)(lcg(s) % 1000000) / 1000000.0 + 0.5;
  int ex = (int)(lcg(s) % 80) - 40;
  return (lcg(s) & 1 ? -1 : 1) * ldexp(m, ex);
}

/* y: an arbitrary bit pattern (NaNs, infs, subnormals) with probability
 * far_pct %, else within 100 float32 steps of the base's pivot. */
static float near_or_any(uint64_t *s, double base, int far_pct) {
  if ((int)(lcg(s) % 100) < far_pct) return gdn_f32_from_bits((uint32_t)lcg(s));
  int steps = (int)(lcg(s) % 201) - 100;
  uint32_t o = gdn_ocode_pivot(base) + (uint32_t)steps;
  return gdn_f32_from_bits(gdn_ocode_unord(o));
}

#define N 200000

static void fill(gdn_ocode *oc, double *base, float *y, uint64_t seed, int far_pct) {
  uint64_t s = seed;
  for (size_t i = 0; i < N; i++) {
    base[i] = some_base(&s, (int)i);
    y[i] = near_or_any(&s, base[i], far_pct);
  }
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_ocode_alloc(oc, N, base, &e), GDN_OK);
}

static size_t mismatches(const gdn_ocode *oc, const float *y) {
  size_t bad = 0;
  for (size_t i = 0; i < N; i++) bad += gdn_f32_bits(gdn_ocode_value(oc, i)) != gdn_f32_bits(y[i]);
  return bad;
}

/* far_pct 5: about 5 % exceptions plus the special bases' misses, under
 * the n / 8 limit (the list); 40: past it (the side array). */
/* Every y[i] put from one thread, flushed and finished. */
static void encode_all(gdn_ocode *oc, const float *y) {
  gdn_ocode_local loc = {0};
  for (size_t i = 0; i < N; i++) gdn_ocode_put(oc, i, y[i], &loc);
  gdn_ocode_flush(oc, &loc);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(gdn_ocode_finish(oc, &e) == GDN_OK, "%s", e.msg);
}

static void round_trip(int far_pct, int want_side) {
  static double base[N];
  static float y[N];
  gdn_ocode oc;
  gdn_ocode_init(&oc);
  fill(&oc, base, y, 1, far_pct);
  encode_all(&oc, y);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_uint_eq(mismatches(&oc, y), 0);
  ck_assert_int_eq(oc.side != NULL, want_side);
  if (want_side) ck_assert_msg(oc.n_exc == 0 && oc.n_far > N / 8, "%zu far, %zu listed", oc.n_far, oc.n_exc);
  else ck_assert_msg(oc.n_far == oc.n_exc && oc.n_exc > N / 40 && oc.n_exc <= N / 8, "%zu exceptions", oc.n_exc);
  /* negative controls: another base, or one code changed, is seen */
  static double other[N]; /* each element's neighbour's base */
  for (size_t k = 0; k < N; k++) other[k] = base[(k + 1) % N];
  oc.base = other; /* every coded element moves (exceptions do not depend on the base) */
  ck_assert_uint_gt(mismatches(&oc, y), (N - oc.n_far) * 9 / 10);
  oc.base = base;
  size_t i = 5;
  while (oc.c[i] == GDN_OCODE_EXC || oc.c[i] == GDN_OCODE_SIDE) i++;
  oc.c[i] = (int8_t)(oc.c[i] == 0 ? 1 : 0);
  ck_assert_uint_eq(mismatches(&oc, y), 1);
  gdn_ocode_clear(&oc);
}

START_TEST(every_pattern_comes_back) {
  round_trip(5, 0);
  round_trip(40, 1);
}
END_TEST

/* Within 127 float32 steps of the truncated base: a code; 128: an
 * exception.  The pivot of a base that is a float32 is that float32. */
START_TEST(codes_are_step_counts) {
  double base[4] = {1.0, -2.5, 0x1p-140, 3.0000001};
  gdn_ocode oc;
  gdn_ocode_init(&oc);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_ocode_alloc(&oc, 4, base, &e), GDN_OK);
  ck_assert_uint_eq(gdn_ocode_unord(gdn_ocode_pivot(1.0)), gdn_f32_bits(1.0f));
  ck_assert_uint_eq(gdn_ocode_unord(gdn_ocode_pivot(-2.5)), gdn_f32_bits(-2.5f));
  ck_assert_uint_eq(gdn_ocode_unord(gdn_ocode_pivot(0x1p-140)), 0u); /* below normal: +0 */
  ck_assert_uint_eq(gdn_ocode_unord(gdn_ocode_pivot(1e39)), gdn_f32_bits(INFINITY));
  gdn_ocode_local loc = {0};
  gdn_ocode_put(&oc, 0, gdn_f32_from_bits(gdn_f32_bits(1.0f) + 127), &loc);
  gdn_ocode_put(&oc, 1, gdn_f32_from_bits(gdn_f32_bits(-2.5f) + 128), &loc); /* more negative */
  gdn_ocode_put(&oc, 2, -0.0f, &loc);                                         /* one step below +0 */
  gdn_ocode_put(&oc, 3, 3.0f, &loc);
  ck_assert_int_eq(oc.c[0], 127);
  ck_assert_int_eq(oc.c[1], GDN_OCODE_EXC);
  ck_assert_int_eq(oc.c[2], -1);
  ck_assert_int_eq(loc.n, 1);
  gdn_ocode_flush(&oc, &loc);
  ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_OK);
  ck_assert_uint_eq(gdn_f32_bits(gdn_ocode_value(&oc, 2)), gdn_f32_bits(-0.0f));
  ck_assert_uint_eq(gdn_f32_bits(gdn_ocode_value(&oc, 1)), gdn_f32_bits(-2.5f) + 128);
  gdn_ocode_clear(&oc);
}
END_TEST

/* The pivot and the decode are integer operations on the bits: the same
 * with the MXCSR's FTZ and DAZ set, where a float conversion of a base in
 * float32's subnormal range would flush to zero. */
START_TEST(mxcsr_changes_nothing) {
#if defined(__SSE__)
  static const double b[] = {3e-39, -1e-40, 0x1p-126, 0x1.fffffep-127, 1.5, -7e30};
  uint32_t plain[6];
  for (int i = 0; i < 6; i++) plain[i] = gdn_ocode_pivot(b[i]);
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
  volatile double sub = 3e-39;
  volatile float flushed = (float)sub; /* the control: the conversion does flush */
  int differ = 0;
  for (int i = 0; i < 6; i++) differ |= gdn_ocode_pivot(b[i]) != plain[i];
  _mm_setcsr(csr);
  ck_assert_int_eq(differ, 0);
  ck_assert_msg(flushed == 0.0f, "FTZ did not flush %g (the control)", (double)flushed);
  ck_assert_msg((float)sub != 0.0f, "without FTZ 3e-39 is a float32 subnormal");
#endif
}
END_TEST

/* Writers on 1, 2 and 4 threads, in forward and reverse order, leave the
 * same codes and the same exception list (memcmp). */
/* Writers on 1, 2 and 4 threads, in forward and reverse order, leave the
 * same codes and the same exception list (memcmp), under the limit and
 * past it (then the side array holds the same values where the codes say
 * SIDE), and the list never grows past its limit. */
static void same_held_form(int far_pct) {
  static double base[N];
  static float y[N];
  gdn_ocode ref, oc;
  gdn_ocode_init(&ref);
  gdn_ocode_init(&oc);
  fill(&ref, base, y, 7, far_pct);
  encode_all(&ref, y);
  gdn_error e;
  gdn_error_init(&e);
  for (int nt = 1; nt <= 4; nt *= 2)
    for (int rev = 0; rev < 2; rev++) {
      ck_assert_int_eq(gdn_ocode_alloc(&oc, N, base, &e), GDN_OK);
#pragma omp parallel num_threads(nt)
      {
        gdn_ocode_local l = {0};
#pragma omp for schedule(dynamic, 97)
        for (size_t j = 0; j < N; j++) {
          size_t i = rev ? N - 1 - j : j;
          gdn_ocode_put(&oc, i, y[i], &l);
        }
        gdn_ocode_flush(&oc, &l);
      }
      ck_assert_uint_le(oc.n_exc, N / 8 + GDN_OCODE_LOCAL); /* bounded while writing */
      ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_OK);
      ck_assert_uint_eq(oc.n_exc, ref.n_exc);
      ck_assert_uint_eq(oc.n_far, ref.n_far);
      ck_assert(!memcmp(oc.c, ref.c, N));
      if (ref.n_exc) ck_assert(!memcmp(oc.exc, ref.exc, ref.n_exc * sizeof *ref.exc));
      for (size_t i = 0; i < N; i++)
        if (ref.c[i] == GDN_OCODE_SIDE) ck_assert(gdn_f32_bits(oc.side[i]) == gdn_f32_bits(ref.side[i]));
    }
  gdn_ocode_clear(&oc);
  gdn_ocode_clear(&ref);
}

START_TEST(held_form_is_thread_independent) {
  same_held_form(5);
  same_held_form(40);
}
END_TEST

START_TEST(finish_refuses_what_it_cannot_vouch_for) {
  double base[3] = {1, 1, 1};
  gdn_ocode oc;
  gdn_ocode_init(&oc);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_ocode_alloc(&oc, 3, base, &e), GDN_OK);
  gdn_ocode_local loc = {0};
  gdn_ocode_put(&oc, 1, 1e20f, &loc);
  gdn_ocode_put(&oc, 1, -1e20f, &loc); /* element 1 twice, both exceptions */
  gdn_ocode_flush(&oc, &loc);
  ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "output element 1 written twice"));
  /* control: once is fine */
  gdn_ocode_restart(&oc, base);
  gdn_ocode_put(&oc, 1, 1e20f, &loc);
  gdn_ocode_flush(&oc, &loc);
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_OK);
  ck_assert(gdn_ocode_value(&oc, 1) == 1e20f);
  /* a failed append (the flag the writers set) is reported, not hidden */
  oc.nomem = 1;
  ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_ERR_NOMEM);
  ck_assert_ptr_nonnull(strstr(e.msg, "out of memory"));
  gdn_ocode_clear(&oc);
  /* not coded: nothing to finish */
  ck_assert_int_eq(gdn_ocode_finish(&oc, &e), GDN_OK);
}
END_TEST

CKR_MAIN("ocode", "ocode", 60, every_pattern_comes_back, codes_are_step_counts, mxcsr_changes_nothing,
    held_form_is_thread_independent, finish_refuses_what_it_cannot_vouch_for)
