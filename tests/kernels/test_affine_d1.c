/* kern_affine_prefix with one device is kern_scan; with more it differs
 * only by round-off.
 *
 * D = 1: the exclusive prefix is the identity and the single replay is the
 * stock scan (the path MaxText takes when the context axis has size 1), so
 * o and ht must be bit-identical to kern_scan's -- memcmp, no tolerance --
 * for every C, with and without h0, grouped heads, float32 and float64.
 *
 * D >= 2: device r > 0 starts from A_cum[r-1] h0 + B_cum[r-1], a different
 * floating-point computation of the same state, and ht is the composition;
 * the results must agree with the scan to round-off: relative Frobenius
 * <= 1e-13 in float64 and <= 48 u32 = 2.9e-6 in float32 (the bounds of
 * test_agree_f64 / test_f32_vs_f64, justified there; measured here: ~3e-16
 * and ~1.6e-7).  And ht must *not* be bit-identical to the scan's at D = 4 with
 * long memory: if it were, the composition would not be what produced it. */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

static void d1_bitwise(gdn_dtype dt, int h0, int l2norm) {
  gdn_shape s = {2, 300, 2, 4, 16, 8};
  gdn_inputs in = kt_inputs(s, 31, h0, l2norm, 0.002f);
  static const int64_t Cs[] = {1, 4, 16, 64};
  for (int ci = 0; ci < 4; ci++) {
    kern_config c = kt_cfg(dt, Cs[ci], 1);
    gdn_outputs scan = kt_outputs(), aff = kt_outputs();
    kt_run_ok(K_SCAN, &in, &c, &scan);
    kt_run_ok(K_AFFINE, &in, &c, &aff);
    ck_assert_msg(kt_same(aff.o, scan.o, gdn_shape_numel_v(&s)),
                  "%s C=%ld h0=%d: affine-prefix D=1 o differs from scan", gdn_dtype_name(dt),
                  (long)Cs[ci], h0);
    ck_assert_msg(kt_same(aff.ht, scan.ht, gdn_shape_numel_state(&s)),
                  "%s C=%ld h0=%d: affine-prefix D=1 ht differs from scan", gdn_dtype_name(dt),
                  (long)Cs[ci], h0);
    ck_assert_int_eq(aff.dtype, scan.dtype);
    gdn_outputs_clear(&scan);
    gdn_outputs_clear(&aff);
  }
  gdn_inputs_clear(&in);
}

/* Both dtypes, each with h0 and the in-kernel L2 norm on and off. */
static const struct { gdn_dtype dt; int h0, l2norm; } d1_cases[] = {
    {GDN_DTYPE_F32, 1, 1}, {GDN_DTYPE_F32, 0, 0}, {GDN_DTYPE_F64, 1, 0}, {GDN_DTYPE_F64, 0, 1}};

START_TEST(d1_bitwise_each) { d1_bitwise(d1_cases[_i].dt, d1_cases[_i].h0, d1_cases[_i].l2norm); }
END_TEST

static void dn_roundoff(gdn_dtype dt, double bound) {
  gdn_shape s = {1, 1000, 1, 2, 32, 32};
  gdn_inputs in = kt_inputs(s, 37, 1, 1, 0.002f);
  kern_config c = kt_cfg(dt, 16, 1);
  gdn_outputs scan = kt_outputs(), aff = kt_outputs();
  kt_run_ok(K_SCAN, &in, &c, &scan);
  static const int64_t Ds[] = {2, 3, 4, 7, 16, 63};
  double worst = 0;
  for (int di = 0; di < 6; di++) {
    c.devices = Ds[di];
    kt_run_ok(K_AFFINE, &in, &c, &aff);
    double ro = kt_rel_o(&aff, &scan), rh = kt_rel_ht(&aff, &scan);
    ck_assert_msg(ro <= bound && rh <= bound, "%s D=%ld: o %.3g ht %.3g (bound %.3g)",
                  gdn_dtype_name(dt), (long)Ds[di], ro, rh, bound);
    worst = fmax(worst, fmax(ro, rh));
    if (Ds[di] == 4)
      ck_assert_msg(!kt_same(aff.ht, scan.ht, gdn_shape_numel_state(&s)),
                    "%s D=4: ht bit-identical to the scan's; the composition was not used",
                    gdn_dtype_name(dt));
  }
  fprintf(stderr, "affine_d1 %s: D >= 2 vs scan worst %.3g (bound %.3g)\n", gdn_dtype_name(dt),
          worst, bound);
  gdn_outputs_clear(&scan);
  gdn_outputs_clear(&aff);
  gdn_inputs_clear(&in);
}

START_TEST(dn_roundoff_f32) { dn_roundoff(GDN_DTYPE_F32, 48 * ldexp(1, -24)); }
END_TEST
START_TEST(dn_roundoff_f64) { dn_roundoff(GDN_DTYPE_F64, 1e-13); }
END_TEST

CKR_MAIN_TABLE("affine_d1", "affine_d1", 120, d1_cases, (d1_bitwise_each), dn_roundoff_f32, dn_roundoff_f64)
