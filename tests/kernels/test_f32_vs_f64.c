/* float32 against float64: each float32 kernel's o and ht against the
 * float64 scan (whose own error, ~1e-16, is negligible here).
 *
 * Bound: ||x32 - x64||_F / ||x64||_F <= 48 u32, u32 = 2^-24 (2.9e-6).
 * Why: a float32 kernel commits rounding errors of relative size u32 at
 * every step; they reach the output through inner products of length up to
 * C + Dk and through the carried state, which is contractive (every factor
 * a_t (I - beta k k^T) has 2-norm <= 1), so they add rather than multiply
 * along the sequence, and, being of random sign, add like a random walk.
 * The growth factor kappa = (relative error) / u32 measured over the cases
 * below (Dk = 16 .. 128, C = 1 .. 64, D = 1 .. 8, l2norm on and off, fast and
 * slow gates, T = 517 .. 1024) is at most 5.7 at Dk = 16 and 5.6 at
 * Dk = Dv = 128 (both tests print it); 48 u32 leaves a 8x margin over the
 * worst case measured while staying below MaxText's own float32 test tolerance
 * (atol = rtol = 1e-6 elementwise), so a real defect (O(1e-3) or worse)
 * cannot pass. */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

#define U32 5.9604644775390625e-08 /* 2^-24 */
#define BOUND (48 * U32)

static double worst_kappa;

static void compare(gdn_shape s, int l2norm, float decay, const int64_t *Cs, int nC,
                    const int64_t *Ds, int nD, int with_recurrent) {
  gdn_inputs in = kt_inputs(s, 21 + (uint64_t)l2norm, 1, l2norm, decay);
  gdn_outputs ref = kt_outputs(), x = kt_outputs();
  kern_config c64 = kt_cfg(GDN_DTYPE_F64, 64, 1);
  kt_run_ok(K_SCAN, &in, &c64, &ref);
  if (with_recurrent) {
    kern_config c = kt_cfg(GDN_DTYPE_F32, 64, 1);
    kt_run_ok(K_RECURRENT, &in, &c, &x);
    double ro = kt_rel_o(&x, &ref), rh = kt_rel_ht(&x, &ref);
    ck_assert_msg(ro <= BOUND && rh <= BOUND, "recurrent float32: o %.3g ht %.3g", ro, rh);
    worst_kappa = fmax(worst_kappa, fmax(ro, rh) / U32);
  }
  for (int ci = 0; ci < nC; ci++)
    for (int di = 0; di < nD; di++) {
      if (Ds[di] > gdn_shape_chunks(&s, Cs[ci])) continue;
      kern_config c = kt_cfg(GDN_DTYPE_F32, Cs[ci], Ds[di]);
      for (int k = K_SCAN; k <= K_AFFINE; k++) {
        if (k == K_SCAN && di > 0) continue;
        kt_run_ok((kt_kernel)k, &in, &c, &x);
        ck_assert_int_eq(x.dtype, GDN_DTYPE_F32);
        double ro = kt_rel_o(&x, &ref), rh = kt_rel_ht(&x, &ref);
        ck_assert_msg(ro <= BOUND && rh <= BOUND, "%s float32 C=%ld D=%ld: o %.3g ht %.3g",
                      kt_kernel_names[k], (long)Cs[ci], (long)Ds[di], ro, rh);
        worst_kappa = fmax(worst_kappa, fmax(ro, rh) / U32);
        /* the float32 values are float32: o and ht round-trip exactly */
        for (size_t i = 0; i < gdn_shape_numel_v(&s); i += 97) ck_assert(x.o[i] == (float)x.o[i]);
        for (size_t i = 0; i < gdn_shape_numel_state(&s); i += 31)
          ck_assert(x.ht[i] == (float)x.ht[i]);
      }
    }
  gdn_outputs_clear(&ref);
  gdn_outputs_clear(&x);
  gdn_inputs_clear(&in);
}

static const int64_t Cs_all[] = {1, 4, 16, 64}, Ds_all[] = {1, 2, 3, 4, 8};
static const int64_t C64[] = {64}, Ds_big[] = {1, 4};

START_TEST(small_heads) {
  gdn_shape s = {2, 517, 2, 4, 16, 12};
  for (int l2 = 0; l2 < 2; l2++) {
    compare(s, l2, 0.002f, Cs_all, 4, Ds_all, 5, 1);
    compare(s, l2, 1.0f, Cs_all, 4, Ds_all, 5, 1);
  }
  fprintf(stderr, "f32_vs_f64 small heads: worst growth factor kappa = %.2f (bound %d u32)\n",
          worst_kappa, (int)(BOUND / U32 + 0.5));
}
END_TEST

/* Qwen 3.5's head dim: Dk = Dv = 128. */
START_TEST(qwen_heads) {
  gdn_shape s = {1, 1024, 1, 2, 128, 128};
  compare(s, 1, 0.002f, C64, 1, Ds_big, 2, 1);
  compare(s, 1, 1.0f, C64, 1, Ds_big, 2, 0);
  fprintf(stderr, "f32_vs_f64 Dk = Dv = 128: worst growth factor kappa = %.2f (bound %d u32)\n",
          worst_kappa, (int)(BOUND / U32 + 0.5));
}
END_TEST

CKR_MAIN("f32_vs_f64", "f32_vs_f64", 120, small_heads, qwen_heads)
