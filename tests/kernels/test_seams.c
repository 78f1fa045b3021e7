/* kern_affine_prefix_seams: the states at the device boundaries.
 *   - h_in[0] is h0 exactly (zeros without h0);
 *   - device 0's replay is the stock scan of its shard, so h_out[0] is bit
 *     for bit the ht of kern_scan on the sequence cut after device 0's
 *     chunks (same operations on the same values);
 *   - at seam r (1 <= r < D) the prefix-derived h_in[r] equals the previous
 *     device's carry h_out[r-1] up to round-off (relative Frobenius <= 1e-13
 *     in float64, 48 u32 in float32: the bounds of test_agree_f64 and
 *     test_f32_vs_f64; measured ~3e-16 and ~2e-7), and ht matches
 *     h_out[D-1] to the same bound;
 *   - D = 1: h_out[0] is ht bit for bit (ht is the replay carry);
 *   - with broken_compose the seams from r = 2 on are off by >= 1e-2: the
 *     seam metric sees the wrong order. */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

static double rel_state(const double *x, const double *r, const kern_affine_seams *sm) {
  return kt_rel(x, r, (size_t)(sm->Dk * sm->Dv));
}

/* kern_affine_prefix_seams into fresh out and sm, failing the test on error. */
static void seams_ok(const gdn_inputs *in, const kern_config *c, gdn_outputs *out, kern_affine_seams *sm) {
  gdn_outputs_init(out);
  kern_affine_seams_init(sm);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(kern_affine_prefix_seams(in, c, out, sm, &e) == GDN_OK, "%s", e.msg);
}

static void seams(gdn_dtype dt, double bound) {
  gdn_shape s = {2, 700, 1, 2, 16, 8};
  gdn_inputs in = kt_inputs(s, 71, 1, 1, 0.002f);
  const int64_t C = 16, D = 4, N = gdn_shape_chunks(&s, C); /* 44 chunks: 11 each */
  kern_config c = kt_cfg(dt, C, D);
  gdn_outputs out;
  kern_affine_seams sm;
  seams_ok(&in, &c, &out, &sm);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(sm.devices, D);
  ck_assert_int_eq(sm.Dk, 16);
  double worst = 0;
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t hv = 0; hv < s.Hv; hv++) {
      const float *h0 = gdn_inputs_h0(&in, b, hv);
      const double *hin0 = kern_affine_seams_h_in(&sm, b, hv, 0);
      for (int64_t x = 0; x < s.Dk * s.Dv; x++) ck_assert(hin0[x] == (double)h0[x]);
      for (int64_t r = 1; r < D; r++) {
        double d = rel_state(kern_affine_seams_h_in(&sm, b, hv, r),
                             kern_affine_seams_h_out(&sm, b, hv, r - 1), &sm);
        ck_assert_msg(d <= bound, "%s seam %ld of (b=%ld, h=%ld): %.3g", gdn_dtype_name(dt),
                      (long)r, (long)b, (long)hv, d);
        worst = fmax(worst, d);
      }
      double d = rel_state(gdn_outputs_ht(&out, b, hv), kern_affine_seams_h_out(&sm, b, hv, D - 1),
                           &sm);
      ck_assert(d <= bound);
    }
  fprintf(stderr, "seams %s: worst seam mismatch %.3g (bound %.3g)\n", gdn_dtype_name(dt), worst,
          bound);

  /* device 0 = the scan of its shard */
  int64_t first, n0;
  kern_affine_shard(N, D, 0, &first, &n0);
  gdn_inputs cut;
  gdn_inputs_init(&cut);
  gdn_shape sc = s;
  sc.T = n0 * C;
  ck_assert_int_eq(gdn_inputs_alloc(&cut, &sc, 1, &e), GDN_OK);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t t = 0; t < sc.T; t++) {
      memcpy((float *)gdn_inputs_q(&cut, b, t, 0), gdn_inputs_q(&in, b, t, 0),
             (size_t)(s.Hk * s.Dk) * sizeof(float));
      memcpy((float *)gdn_inputs_k(&cut, b, t, 0), gdn_inputs_k(&in, b, t, 0),
             (size_t)(s.Hk * s.Dk) * sizeof(float));
      memcpy((float *)gdn_inputs_v(&cut, b, t, 0), gdn_inputs_v(&in, b, t, 0),
             (size_t)(s.Hv * s.Dv) * sizeof(float));
      for (int64_t h = 0; h < s.Hv; h++) {
        cut.g[(b * sc.T + t) * s.Hv + h] = gdn_inputs_g(&in, b, t, h);
        cut.beta[(b * sc.T + t) * s.Hv + h] = gdn_inputs_beta(&in, b, t, h);
      }
    }
  memcpy(cut.h0, in.h0, gdn_shape_numel_state(&s) * sizeof(float));
  cut.l2norm_in_kernel = in.l2norm_in_kernel;
  gdn_outputs sout = kt_outputs();
  kern_config c1 = kt_cfg(dt, C, 1);
  kt_run_ok(K_SCAN, &cut, &c1, &sout);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t hv = 0; hv < s.Hv; hv++)
      ck_assert(kt_same(kern_affine_seams_h_out(&sm, b, hv, 0), gdn_outputs_ht(&sout, b, hv),
                        (size_t)(s.Dk * s.Dv)));
  gdn_outputs_clear(&sout);
  gdn_inputs_clear(&cut);

  /* broken composition shows at seams r >= 2 */
  c.mutant = KERN_MUTANT_COMPOSE_ORDER;
  ck_assert_int_eq(kern_affine_prefix_seams(&in, &c, &out, &sm, &e), GDN_OK);
  for (int64_t r = 2; r < D; r++) {
    double d = rel_state(kern_affine_seams_h_in(&sm, 0, 0, r),
                         kern_affine_seams_h_out(&sm, 0, 0, r - 1), &sm);
    ck_assert_msg(d >= 1e-2, "broken compose: seam %ld only %.3g off", (long)r, d);
  }

  /* D = 1 */
  ck_assert_int_eq(kern_affine_prefix_seams(&in, &c1, &out, &sm, &e), GDN_OK);
  ck_assert_int_eq(sm.devices, 1);
  ck_assert(kt_same(sm.h_out, out.ht, gdn_shape_numel_state(&s)));
  gdn_outputs_clear(&out);
  kern_affine_seams_clear(&sm);
  kern_affine_seams_clear(&sm); /* twice is safe */
  gdn_inputs_clear(&in);
}

START_TEST(seams_f32) { seams(GDN_DTYPE_F32, 48 * ldexp(1, -24)); }
END_TEST
START_TEST(seams_f64) { seams(GDN_DTYPE_F64, 1e-13); }
END_TEST

/* Without h0, h_in[0] is zero. */
START_TEST(no_h0_zero_start) {
  gdn_inputs in = kt_inputs((gdn_shape){1, 100, 1, 1, 8, 8}, 73, 0, 1, 0.01f);
  kern_config c = kt_cfg(GDN_DTYPE_F32, 8, 3);
  gdn_outputs out;
  kern_affine_seams sm;
  seams_ok(&in, &c, &out, &sm);
  for (int x = 0; x < 64; x++) ck_assert(sm.h_in[x] == 0.0);
  ck_assert(rel_state(kern_affine_seams_h_in(&sm, 0, 0, 1), kern_affine_seams_h_out(&sm, 0, 0, 0),
                      &sm) <= 48 * ldexp(1, -24));
  gdn_outputs_clear(&out);
  kern_affine_seams_clear(&sm);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("seams", "seams", 60, seams_f32, seams_f64, no_h0_zero_start)
