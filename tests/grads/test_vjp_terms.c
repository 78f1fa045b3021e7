/* kern_scan_vjp_terms: dg's componentwise size beside the gradients.
 *   - the gradients are kern_scan_vjp's bit for bit (float32 and float64),
 *     and the terms are the same for 1 and 3 threads;
 *   - the terms are suffix sums inside each chunk: positive, never growing
 *     from a chunk's first token to its last, and a chunk's last token's
 *     no larger than its first's whatever the chunk before;
 *   - what they are for: with the model's initial gates (fast forgetting)
 *     some token's dg is far smaller than its terms (cancellation: the
 *     ratio terms / max(|dg|, RMS), row_rel's denominator, passes 100;
 *     measured 668 to 4,062 over seeds 1-3 at B1 T256 H2 D32 C32), while
 *     with slow gates (the negative control) no token's ratio reaches that
 *     (5.9 to 7.5);
 *   - NULL terms is kern_scan_vjp, and the refusals are kern_scan_vjp's. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "vjp_test_util.h"
#include "../check_runner.h"

static double *terms_of(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg, gdn_grads *g) {
  double *t = calloc(gdn_shape_numel_gate(&in->shape), sizeof *t);
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads_init(g);
  ck_assert_msg(kern_scan_vjp_terms(in, ct, cfg, g, t, &e) == GDN_OK, "%s", e.msg);
  return t;
}

START_TEST(bits_unchanged_and_threads_agree) {
  gdn_inputs in = tsu_inputs((gdn_shape){2, 72, 2, 4, 8, 6}, GDN_SYNTH_H0, 5);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 6);
  const gdn_dtype dts[] = {GDN_DTYPE_F32, GDN_DTYPE_F64};
  const size_t n = gdn_shape_numel_gate(&in.shape);
  for (size_t k = 0; k < 2; k++) {
    kern_config cfg = vtu_cfg(dts[k], 16, 1);
    gdn_grads ref, g, g3;
    gdn_threads_set(1);
    vtu_kern(&in, &ct, &cfg, 0, &ref);
    double *t1 = terms_of(&in, &ct, &cfg, &g);
    ck_assert_msg(vtu_same(&g, &ref), "%s: the gradients moved", k ? "float64" : "float32");
    gdn_threads_set(3);
    double *t3 = terms_of(&in, &ct, &cfg, &g3);
    ck_assert(vtu_same(&g3, &ref));
    ck_assert_msg(!memcmp(t1, t3, n * sizeof *t1), "%s: 3 threads give other terms", k ? "float64" : "float32");
    for (size_t i = 0; i < n; i++) ck_assert_msg(t1[i] > 0 && isfinite(t1[i]), "term %zu: %g", i, t1[i]);
    free(t1), free(t3);
    gdn_grads_clear(&ref), gdn_grads_clear(&g), gdn_grads_clear(&g3);
  }
  gdn_threads_set(2);
  tsu_problem_clear(&in, &ct);
}
END_TEST

START_TEST(suffix_sums_per_chunk) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 70, 1, 2, 8, 8}, GDN_SYNTH_H0, 7); /* 70 = 4 x 16 + 6: a padded chunk */
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 8);
  kern_config cfg = vtu_cfg(GDN_DTYPE_F64, 16, 1);
  gdn_grads g;
  double *t = terms_of(&in, &ct, &cfg, &g);
  const gdn_shape *s = &in.shape;
  for (int64_t h = 0; h < s->Hv; h++)
    for (int64_t c0 = 0; c0 < s->T; c0 += 16) {
      const int64_t last = c0 + 16 < s->T ? c0 + 15 : s->T - 1;
      for (int64_t i = c0; i < last; i++)
        ck_assert_msg(t[i * s->Hv + h] >= t[(i + 1) * s->Hv + h], "head %lld token %lld: %g < %g", (long long)h,
                      (long long)i, t[i * s->Hv + h], t[(i + 1) * s->Hv + h]);
    }
  free(t);
  gdn_grads_clear(&g);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The largest terms / max(|dg|, RMS(dg)) over tokens. */
static double worst_cancellation(unsigned flags, uint64_t seed) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 256, 2, 2, 32, 32}, flags, seed);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, seed + 1);
  kern_config cfg = vtu_cfg(GDN_DTYPE_F64, 32, 1);
  gdn_grads g;
  double *t = terms_of(&in, &ct, &cfg, &g);
  const size_t n = gdn_shape_numel_gate(&in.shape);
  double ss = 0, w = 0;
  for (size_t i = 0; i < n; i++) ss += g.dg[i] * g.dg[i];
  const double floor = sqrt(ss / (double)n); /* row_rel's denominator: max(|r|, RMS) */
  for (size_t i = 0; i < n; i++) w = fmax(w, t[i] / fmax(fabs(g.dg[i]), floor));
  free(t);
  gdn_grads_clear(&g);
  tsu_problem_clear(&in, &ct);
  return w;
}

START_TEST(cancellation_with_fast_gates_only) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    const double fast = worst_cancellation(GDN_SYNTH_H0, seed),
                 slow = worst_cancellation(GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, seed);
    ck_assert_msg(fast > 100, "seed %llu: the initial gates' worst ratio %g", (unsigned long long)seed, fast);
    ck_assert_msg(slow < 100, "seed %llu: slow gates' worst ratio %g", (unsigned long long)seed, slow);
  }
}
END_TEST

START_TEST(null_terms_and_refusals) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 20, 1, 1, 4, 4}, 0, 3);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 0, 4);
  kern_config cfg = vtu_cfg(GDN_DTYPE_F32, 8, 1);
  gdn_grads ref, g;
  vtu_kern(&in, &ct, &cfg, 0, &ref);
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads_init(&g);
  ck_assert_int_eq(kern_scan_vjp_terms(&in, &ct, &cfg, &g, NULL, &e), GDN_OK);
  ck_assert(vtu_same(&g, &ref));
  double t[20];
  cfg.chunk = 0; /* a bad config: refused as kern_scan_vjp refuses it, gradients cleared */
  ck_assert_int_eq(kern_scan_vjp_terms(&in, &ct, &cfg, &g, t, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_scan_vjp"), "%s", e.msg);
  ck_assert_ptr_null(g.dg);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

CKR_MAIN("vjp_terms", "vjp_terms", 120, bits_unchanged_and_threads_agree, suffix_sums_per_chunk,
         cancellation_with_fast_gates_only, null_terms_and_refusals)
