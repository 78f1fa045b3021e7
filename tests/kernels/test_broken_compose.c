/* cfg->broken_compose composes the device pairs in the wrong order,
 * (A_cum[r-1], B_cum[r-1]) o (A_loc[r], B_loc[r]).  Affine maps do not
 * commute, so the incoming states of devices r >= 2 and the final state are
 * wrong by O(1) of their size -- not by round-off.  A later gate test relies
 * on this, so it is asserted here with margins:
 *   D >= 3: o and ht differ from the scan by >= 1e-2 relative (measured
 *           0.19 .. 0.49 for o, ~1.5 for ht), i.e. >= 1e4 x the float32 round-off bound of
 *           test_f32_vs_f64 (2.9e-6) and 1e11 x the float64 one;
 *   D = 2:  device 1 starts from A_cum[0] h0 + B_cum[0] whatever the order,
 *           so o is bit-identical to the correct D = 2 run, and only ht (the
 *           composition) is wrong;
 *   D = 1:  there is nothing to compose: bit-identical to the scan.
 * Inputs: long memory (g * 0.002) and h0, so state crosses devices.  Every
 * prefix schedule (sequential, associative scan, Hillis-Steele), and
 * bfloat16 compute with matmul default (the TPU configuration), where the
 * correct order itself differs from that mode's scan by ~2e-3 (one bf16
 * pass per composition product): for D >= 3 the wrong order is also at
 * least 20x the correct order's distance (measured 88x for bfloat16, 1e6x
 * and more for float32 / float64). */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

#define WRONG 1e-2

static void broken_mode(gdn_dtype dt, kern_prefix prefix, kern_matmul mm) {
  gdn_shape s = {1, 640, 1, 2, 16, 16};
  gdn_inputs in = kt_inputs(s, 61, 1, 1, 0.002f);
  gdn_outputs scan = kt_outputs(), good = kt_outputs(), bad = kt_outputs();
  kern_config c = kt_cfg(dt, 16, 1);
  c.matmul = mm;
  kt_run_ok(K_SCAN, &in, &c, &scan);
  static const int64_t Ds[] = {1, 2, 3, 4, 8};
  for (int di = 0; di < 5; di++) {
    c = kt_cfg(dt, 16, Ds[di]);
    c.matmul = mm;
    c.prefix = prefix;
    kt_run_ok(K_AFFINE, &in, &c, &good);
    c.mutant = KERN_MUTANT_COMPOSE_ORDER;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    double ro = kt_rel_o(&bad, &scan), rh = kt_rel_ht(&bad, &scan);
    double go = kt_rel_o(&good, &scan), gh = kt_rel_ht(&good, &scan);
    fprintf(stderr, "broken_compose %s %s %s D=%ld: o %.3g ht %.3g (correct order: %.3g %.3g)\n",
            gdn_dtype_name(dt), kern_prefix_name(prefix), kern_matmul_name(mm), (long)Ds[di], ro,
            rh, go, gh);
    /* wrong by far more than the mode's own round-off */
    if (Ds[di] >= 3) ck_assert(ro >= 20 * go && rh >= 20 * gh);
    if (Ds[di] == 1) {
      ck_assert(kt_same_outputs(&bad, &scan));
    } else if (Ds[di] == 2) {
      ck_assert(kt_same(bad.o, good.o, gdn_shape_numel_v(&s)));
      ck_assert_msg(rh >= WRONG, "D=2: ht only %.3g off", rh);
    } else {
      ck_assert_msg(ro >= WRONG && rh >= WRONG, "%s D=%ld: broken compose only o %.3g ht %.3g off",
                    gdn_dtype_name(dt), (long)Ds[di], ro, rh);
    }
  }
  gdn_outputs_clear(&scan);
  gdn_outputs_clear(&good);
  gdn_outputs_clear(&bad);
  gdn_inputs_clear(&in);
}

static void broken(gdn_dtype dt) {
  for (int p = 0; p < 3; p++) broken_mode(dt, (kern_prefix)p, KERN_MATMUL_IEEE);
}

START_TEST(broken_f32) { broken(GDN_DTYPE_F32); }
END_TEST
START_TEST(broken_f64) { broken(GDN_DTYPE_F64); }
END_TEST
START_TEST(broken_bf16_default) {
  for (int p = 0; p < 3; p++) broken_mode(GDN_DTYPE_BF16, (kern_prefix)p, KERN_MATMUL_DEFAULT);
}
END_TEST

CKR_MAIN("broken_compose", "broken_compose", 60, broken_f32, broken_f64, broken_bf16_default)
