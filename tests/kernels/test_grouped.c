/* Grouped heads: value head j reads key head j / (Hv / Hk).  Running with
 * Hk = 2, Hv = 4 must give bit for bit what the same kernel gives on the
 * explicit repeat-interleave of q and k (Hk = Hv = 4, key head j holding the
 * original key head j / 2): the kernels normalise and scale q, k per value
 * head from the key head's raw rows, so the two computations perform the
 * same operations on the same values.  All kernels, float32 and float64,
 * L2 norm on and off, several devices. */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

static void interleave(const gdn_inputs *in, gdn_inputs *rep) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(rep);
  gdn_shape s = in->shape;
  const int64_t g = s.Hv / s.Hk;
  s.Hk = s.Hv;
  ck_assert_int_eq(gdn_inputs_alloc(rep, &s, in->h0 != NULL, &e), GDN_OK);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t t = 0; t < s.T; t++)
      for (int64_t j = 0; j < s.Hv; j++)
        for (int64_t d = 0; d < s.Dk; d++) {
          size_t dst = (size_t)(((b * s.T + t) * s.Hv + j) * s.Dk + d);
          size_t src = (size_t)(((b * s.T + t) * in->shape.Hk + j / g) * s.Dk + d);
          rep->q[dst] = in->q[src];
          rep->k[dst] = in->k[src];
        }
  memcpy(rep->v, in->v, gdn_shape_numel_v(&s) * sizeof(float));
  memcpy(rep->g, in->g, gdn_shape_numel_gate(&s) * sizeof(float));
  memcpy(rep->beta, in->beta, gdn_shape_numel_gate(&s) * sizeof(float));
  if (in->h0) memcpy(rep->h0, in->h0, gdn_shape_numel_state(&s) * sizeof(float));
  rep->l2norm_in_kernel = in->l2norm_in_kernel;
  rep->has_scale = in->has_scale;
  rep->scale = in->scale;
}

static void grouped(gdn_dtype dt, int l2norm) {
  gdn_shape s = {2, 133, 2, 4, 16, 8};
  gdn_inputs in, rep;
  kt_make(&in, s, 41, 1, l2norm, 0.01f);
  interleave(&in, &rep);
  gdn_outputs a = kt_outputs(), b = kt_outputs();
  for (int k = 0; k < 3; k++) {
    kern_config c = kt_cfg(dt, 16, k == K_AFFINE ? 3 : 1);
    kt_run_ok((kt_kernel)k, &in, &c, &a);
    kt_run_ok((kt_kernel)k, &rep, &c, &b);
    ck_assert_msg(kt_same_outputs(&a, &b), "%s %s l2norm=%d: Hk=2 differs from repeat-interleave",
                  kt_kernel_names[k], gdn_dtype_name(dt), l2norm);
  }
  gdn_outputs_clear(&a);
  gdn_outputs_clear(&b);
  gdn_inputs_clear(&in);
  gdn_inputs_clear(&rep);
}

START_TEST(grouped_f32) {
  grouped(GDN_DTYPE_F32, 1);
  grouped(GDN_DTYPE_F32, 0);
}
END_TEST
START_TEST(grouped_f64) {
  grouped(GDN_DTYPE_F64, 1);
  grouped(GDN_DTYPE_F64, 0);
}
END_TEST

/* And the grouping is real: value heads 0 and 1 share key head 0 but have
 * their own v, g, beta, so their outputs differ. */
START_TEST(heads_of_a_group_differ) {
  gdn_inputs in = kt_inputs((gdn_shape){1, 20, 1, 2, 8, 8}, 43, 0, 1, 1.0f);
  kern_config c = kt_cfg(GDN_DTYPE_F64, 4, 1);
  gdn_outputs a = kt_outputs();
  kt_run_ok(K_SCAN, &in, &c, &a);
  ck_assert(!kt_same(gdn_outputs_ht(&a, 0, 0), gdn_outputs_ht(&a, 0, 1), 64));
  gdn_outputs_clear(&a);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("grouped", "grouped", 60, grouped_f32, grouped_f64, heads_of_a_group_differ)
