/* Our hillis-steele schedule against the later upstream context-parallel
 * code (MaxText src/maxtext/kernels/attention/gdn_cp.py, incoming_state,
 * read 2026), transcribed here device by device with the public compose and
 * apply (facts, not code):
 *   inclusive  step = 1, 2, 4, ... < D: every device sends its running pair
 *              to device + step (ppermute); devices with index >= step
 *              replace theirs by compose(received, own) = own o received,
 *              all from the values before the round;
 *   exclusive  one more shift by one: device r > 0 receives device r-1's
 *              inclusive pair (a_ex, b_ex) and starts from
 *              a_ex h_init @HIGHEST + b_ex; device 0 from h_init;
 *   final      a masked psum of the last device's pair (every other device
 *              contributes zeros), then a_tot h_init + b_tot.
 * Checked, for D = 1 .. 17 and the IEEE and HIGHEST modes, on random
 * float32 pairs: kern_prefix_inclusive(HILLIS_STEELE) leaves every device's
 * pair bit-identical to the transcription, and kern_affine_apply on it gives
 * the same incoming and final states (the masked psum adds exact zeros; the
 * values compare equal, signs of zero aside).  Negative controls: the
 * sequential and associative-scan schedules, and broken_compose, do not
 * match bit for bit (for some D >= 3). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_rng.h"
#include "kern_prefix.h"
#include "kern_test_util.h"
#include "../check_runner.h"

enum { DK = 8, DV = 5, NA = DK * DK, NB = DK * DV, MAXD = 17 };

static void random_pairs(int64_t D, float *A, float *B, float *h0, uint64_t seed) {
  for (int64_t i = 0; i < D * NA; i++)
    A[i] = (float)(0.35 * gdn_rng_normal(seed, 1, (uint64_t)i)) + ((i % NA) % (DK + 1) == 0 ? 0.5f : 0);
  for (int64_t i = 0; i < D * NB; i++) B[i] = (float)gdn_rng_normal(seed, 2, (uint64_t)i);
  for (int64_t i = 0; i < NB; i++) h0[i] = (float)gdn_rng_normal(seed, 3, (uint64_t)i);
}

/* gdn_cp.incoming_state, transcribed; A, B in place become the running
 * (inclusive) pairs; h_in[r], final as above. */
static void upstream(kern_matmul mm, int64_t D, float *A, float *B, const float *h0, float *h_in,
                     float *final, float *work) {
  static float ra[MAXD * NA], rb[MAXD * NB];
  for (int64_t step = 1; step < D; step *= 2) {
    memcpy(ra, A, sizeof(float) * (size_t)(D * NA)); /* what the ppermute delivers */
    memcpy(rb, B, sizeof(float) * (size_t)(D * NB));
    for (int64_t r = step; r < D; r++) {
      float ca[NA], cb[NB];
      /* compose((a_recv, b_recv), (a_run, b_run)) = (A_run A_recv, A_run B_recv + B_run) */
      kern_affine_compose_f32(mm, DK, DV, ra + r * NA, rb + r * NB, ra + (r - step) * NA,
                              rb + (r - step) * NB, ca, cb, work);
      memcpy(A + r * NA, ca, sizeof ca);
      memcpy(B + r * NB, cb, sizeof cb);
    }
  }
  for (int64_t r = 0; r < D; r++) {
    if (r == 0) memcpy(h_in, h0, sizeof(float) * NB);
    else kern_affine_apply_f32(mm, DK, DV, A + (r - 1) * NA, B + (r - 1) * NB, h0, h_in + r * NB, work);
  }
  float at[NA], bt[NB];
  for (int i = 0; i < NA; i++) at[i] = 0;
  for (int i = 0; i < NB; i++) bt[i] = 0;
  for (int64_t r = 0; r < D; r++) { /* psum of where(last, run, 0) */
    for (int i = 0; i < NA; i++) at[i] = at[i] + (r == D - 1 ? A[r * NA + i] : 0.0f);
    for (int i = 0; i < NB; i++) bt[i] = bt[i] + (r == D - 1 ? B[r * NB + i] : 0.0f);
  }
  kern_affine_apply_f32(mm, DK, DV, at, bt, h0, final, work);
}

static int same_values(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(a[i] == b[i])) return 0;
  return 1;
}

/* ours: 0 equal, else 1; sched and broken as kern_prefix_inclusive's. */
static int ours_differs(kern_prefix sched, int broken, kern_matmul mm, int64_t D, uint64_t seed) {
  static float A[MAXD * NA], B[MAXD * NB], UA[MAXD * NA], UB[MAXD * NB];
  float h0[NB], hin_u[MAXD * NB], fin_u[NB], h[NB];
  const size_t nw = kern_prefix_work_elems_f32(KERN_PREFIX_HILLIS_STEELE, D, DK, DV, mm);
  float *work = gdn_calloc(nw + kern_affine_work_elems_f32(mm, DK, DV), sizeof(float), "work", NULL);
  ck_assert_ptr_nonnull(work);
  random_pairs(D, A, B, h0, seed);
  memcpy(UA, A, sizeof(float) * (size_t)(D * NA));
  memcpy(UB, B, sizeof(float) * (size_t)(D * NB));
  upstream(mm, D, UA, UB, h0, hin_u, fin_u, work);
  kern_prefix_inclusive_f32(sched, broken, mm, D, DK, DV, A, B, work, NULL);
  int differ = memcmp(A, UA, sizeof(float) * (size_t)(D * NA)) ||
               memcmp(B, UB, sizeof(float) * (size_t)(D * NB));
  for (int64_t r = 1; r < D; r++) { /* the incoming states as kern_affine_prefix forms them */
    kern_affine_apply_f32(mm, DK, DV, A + (r - 1) * NA, B + (r - 1) * NB, h0, h, work);
    differ |= !same_values(h, hin_u + r * NB, NB);
  }
  kern_affine_apply_f32(mm, DK, DV, A + (D - 1) * NA, B + (D - 1) * NB, h0, h, work);
  differ |= !same_values(h, fin_u, NB);
  gdn_free(work);
  return differ;
}

START_TEST(hillis_steele_is_upstream_order) {
  static const kern_matmul mms[2] = {KERN_MATMUL_IEEE, KERN_MATMUL_HIGHEST};
  for (int mi = 0; mi < 2; mi++)
    for (int64_t D = 1; D <= MAXD; D++)
      ck_assert_msg(!ours_differs(KERN_PREFIX_HILLIS_STEELE, 0, mms[mi], D, (uint64_t)D),
                    "D = %ld, %s: hillis-steele differs from gdn_cp's order", (long)D,
                    kern_matmul_name(mms[mi]));
}
END_TEST

START_TEST(other_orders_differ) {
  int seq = 0, tree = 0, broken = 0;
  for (int64_t D = 3; D <= MAXD; D++) {
    seq += ours_differs(KERN_PREFIX_SEQUENTIAL, 0, KERN_MATMUL_IEEE, D, (uint64_t)D);
    tree += ours_differs(KERN_PREFIX_ASSOCIATIVE_SCAN, 0, KERN_MATMUL_IEEE, D, (uint64_t)D);
    broken += ours_differs(KERN_PREFIX_HILLIS_STEELE, 1, KERN_MATMUL_IEEE, D, (uint64_t)D);
  }
  ck_assert_int_gt(seq, 0);
  ck_assert_int_gt(tree, 0);
  ck_assert_int_eq(broken, MAXD - 2); /* the wrong order is wrong at every D >= 3 */
}
END_TEST

CKR_MAIN("prefix_upstream", "all", 0, hillis_steele_is_upstream_order, other_orders_differ)
