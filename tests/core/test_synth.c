#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_bf16.h"
#include "gdn_synth.h"
#include "gdn_threads.h"

static void gen(gdn_inputs *in, const gdn_shape *s, unsigned flags, unsigned bm, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {seed, flags, bm};
  ck_assert_int_eq(gdn_synth_generate(in, s, &o, &e), GDN_OK);
}

START_TEST(deterministic_across_threads_and_seeds) {
  gdn_shape s = {2, 37, 2, 4, 8, 6};
  gdn_inputs a, b, c;
  gdn_threads_set(1);
  gen(&a, &s, GDN_SYNTH_H0, 0, 5);
  gdn_threads_set(2);
  gen(&b, &s, GDN_SYNTH_H0, 0, 5);
  gen(&c, &s, GDN_SYNTH_H0, 0, 6);
  ck_assert_mem_eq(a.q, b.q, gdn_shape_numel_qk(&s) * 4);
  ck_assert_mem_eq(a.v, b.v, gdn_shape_numel_v(&s) * 4);
  ck_assert_mem_eq(a.g, b.g, gdn_shape_numel_gate(&s) * 4);
  ck_assert_mem_eq(a.h0, b.h0, gdn_shape_numel_state(&s) * 4);
  ck_assert(memcmp(a.q, c.q, gdn_shape_numel_qk(&s) * 4) != 0);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
  gdn_inputs_clear(&c);
}
END_TEST

/* The gates look like a Qwen 3.5 layer: beta in (0, 1), g < 0, per-head decay
 * rate A in (0, 16) so g / softplus(...) is constant over t for a head. */
START_TEST(distributions) {
  gdn_shape s = {1, 4000, 1, 3, 16, 16};
  gdn_inputs in;
  gen(&in, &s, 0, 0, 1);
  ck_assert_int_eq(in.l2norm_in_kernel, 1);
  ck_assert_ptr_null(in.h0);
  double mean_v = 0, var_v = 0;
  size_t nv = gdn_shape_numel_v(&s);
  for (size_t i = 0; i < nv; i++) mean_v += in.v[i];
  mean_v /= nv;
  for (size_t i = 0; i < nv; i++) var_v += (in.v[i] - mean_v) * (in.v[i] - mean_v);
  var_v /= nv;
  /* 192000 samples: mean within 5 sigma (5/sqrt(n) = 0.011), variance within 3 %. */
  ck_assert_msg(fabs(mean_v) < 0.012 && fabs(var_v - 1) < 0.03, "v mean %g var %g", mean_v, var_v);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) {
    ck_assert(in.beta[i] > 0 && in.beta[i] < 1);
    ck_assert(in.g[i] < 0 && in.g[i] > -16 * 60);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(prenorm_and_bf16) {
  gdn_shape s = {1, 10, 2, 2, 32, 8};
  gdn_inputs in;
  gen(&in, &s, GDN_SYNTH_QK_PRENORM, GDN_T_Q | GDN_T_K | GDN_T_V, 3);
  ck_assert_int_eq(in.l2norm_in_kernel, 0);
  for (size_t r = 0; r < gdn_shape_numel_qk(&s) / 32; r++) {
    double n2 = 0;
    for (int i = 0; i < 32; i++) n2 += (double)in.k[r * 32 + i] * in.k[r * 32 + i];
    /* bf16 rounding of 32 entries: |n2 - 1| <= 2 * 2^-8 relative, plus eps. */
    ck_assert_msg(fabs(n2 - 1) < 1e-2, "row %zu norm^2 %g", r, n2);
  }
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) ck_assert(in.v[i] == gdn_bf16_round(in.v[i]));
  ck_assert_uint_eq(in.bf16_mask, GDN_T_Q | GDN_T_K | GDN_T_V);
  gdn_inputs_clear(&in);
}
END_TEST

int main(void) {
  Suite *su = suite_create("synth");
  TCase *tc = tcase_create("synth");
  tcase_add_test(tc, deterministic_across_threads_and_seeds);
  tcase_add_test(tc, distributions);
  tcase_add_test(tc, prenorm_and_bf16);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
