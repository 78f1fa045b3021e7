/* The error model's padded chunk ends (parity_kappa_model.h,
 * parity_model_compute_layouts): where no device's piece is padded the
 * model is the one-device model bit for bit; where it is (T 256, C 64, 8
 * devices: 32 tokens a chunk), ht's scale holds the last end's own term,
 * u |G_L| |ht| with G_L the padded chunk's sum of g, o's before the first
 * end is untouched (an end reaches only later tokens) and o's after it
 * grows. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_synth.h"
#include "kern.h"
#include "parity_kappa_model.h"
#include "../check_runner.h"

#define T 256
#define C 64

static void inputs(gdn_inputs *in) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  const gdn_shape s = {1, T, 1, 2, 16, 16};
  const gdn_synth_opts so = {3, GDN_SYNTH_H0, 0}; /* the model's initial gates */
  ck_assert_int_eq(gdn_synth_generate(in, &s, &so, &e), GDN_OK);
}

static void model(parity_model *m, const gdn_inputs *in, const int64_t *dev, size_t nd) {
  gdn_error e;
  gdn_error_init(&e);
  parity_model_init(m);
  ck_assert_msg(parity_model_compute_layouts(m, in, NULL, C, 0x1p-24, NULL, 0, dev, nd, &e) == GDN_OK, "%s", e.msg);
}

START_TEST(whole_chunks_change_nothing) {
  gdn_inputs in;
  inputs(&in);
  gdn_error e;
  gdn_error_init(&e);
  parity_model m1, m2;
  parity_model_init(&m1);
  ck_assert_int_eq(parity_model_compute(&m1, &in, NULL, C, 0x1p-24, NULL, 0, &e), GDN_OK);
  const int64_t dev[3] = {1, 2, 4}; /* 256, 128, 64 tokens: whole chunks */
  model(&m2, &in, dev, 3);
  const size_t no = (size_t)T * 2 * 16, nh = 2 * 16 * 16;
  ck_assert(memcmp(m1.s[PARITY_T_O], m2.s[PARITY_T_O], no * sizeof(double)) == 0);
  ck_assert(memcmp(m1.s[PARITY_T_HT], m2.s[PARITY_T_HT], nh * sizeof(double)) == 0);
  parity_model_clear(&m1), parity_model_clear(&m2);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(padded_ends_are_probed) {
  gdn_inputs in;
  inputs(&in);
  gdn_error e;
  gdn_error_init(&e);
  parity_model m1, m8;
  const int64_t one = 1, eight = 8;
  model(&m1, &in, &one, 1);
  model(&m8, &in, &eight, 1);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F64;
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.chunk = C;
  gdn_outputs o;
  gdn_outputs_init(&o);
  ck_assert_int_eq(gdn_outputs_alloc(&o, &in.shape, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert_int_eq(kern_scan(&in, &cfg, &o, &e), GDN_OK);
  double grow = 0, base = 0;
  for (int64_t h = 0; h < 2; h++) {
    double GL = 0; /* the last device's 32 tokens */
    for (int64_t t = T - 32; t < T; t++) GL += in.g[t * 2 + h];
    for (int64_t x = 0; x < 256; x++) {
      const size_t i = (size_t)(h * 256 + x);
      const double own = 0x1p-24 * fabs(GL) * fabs(o.ht[i]);
      ck_assert_msg(m8.s[PARITY_T_HT][i] >= own * (1 - 1e-9), "ht[%zu]: s %g < u |G_L| |ht| %g", i,
                    m8.s[PARITY_T_HT][i], own);
      grow += m8.s[PARITY_T_HT][i] * m8.s[PARITY_T_HT][i], base += m1.s[PARITY_T_HT][i] * m1.s[PARITY_T_HT][i];
    }
  }
  ck_assert_msg(grow > 4 * base, "ht's variance %g against %g without the ends", grow, base);
  const size_t first = 32 * 2 * 16; /* o of tokens 0..31: before the first end's effect */
  ck_assert(memcmp(m1.s[PARITY_T_O], m8.s[PARITY_T_O], first * sizeof(double)) == 0);
  double after1 = 0, after8 = 0;
  for (size_t i = first; i < first + 2 * 16; i++) /* token 32: right after the first end */
    after1 += m1.s[PARITY_T_O][i] * m1.s[PARITY_T_O][i], after8 += m8.s[PARITY_T_O][i] * m8.s[PARITY_T_O][i];
  ck_assert_msg(after8 > after1, "o after the end: %g, without %g", after8, after1);
  gdn_outputs_clear(&o);
  parity_model_clear(&m1), parity_model_clear(&m8);
  gdn_inputs_clear(&in);
}
END_TEST

/* The underflow part: with v = 0 and no h0 every output is exactly 0, so
 * G's probes and the arithmetic's samples add nothing, and each element's
 * s is the underflow part alone, sqrt(C) eta = 8 eta at C 64 (exact: a
 * power of two), eta the compute format's smallest normal; in binary64
 * compute none (eta^2 is below binary64's range).  Negative control:
 * without the case's numerics (acfg NULL) there is no such part and s is
 * 0. */
START_TEST(underflow_part) {
  ck_assert(parity_model_eta(GDN_DTYPE_F32) == 0x1p-126);
  ck_assert(parity_model_eta(GDN_DTYPE_BF16) == 0x1p-126);
  ck_assert(parity_model_eta(GDN_DTYPE_F64) == 0x1p-1022);
  gdn_inputs in;
  inputs(&in);
  memset(in.v, 0, gdn_shape_numel_v(&in.shape) * sizeof(float));
  gdn_free(in.h0), in.h0 = NULL;
  gdn_error e;
  gdn_error_init(&e);
  const gdn_dtype dts[2] = {GDN_DTYPE_F32, GDN_DTYPE_F64};
  const size_t no = (size_t)T * 2 * 16, nh = 2 * 16 * 16;
  for (int i = 0; i < 3; i++) {
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.chunk = C;
    if (i < 2) cfg.dtype = dts[i];
    parity_model m;
    parity_model_init(&m);
    ck_assert_msg(parity_model_compute(&m, &in, NULL, C, 0x1p-24, i < 2 ? &cfg : NULL, 0, &e) == GDN_OK, "%s", e.msg);
    const double want = i == 0 ? 8 * parity_model_eta(dts[i]) : 0; /* binary64: none */
    for (size_t j = 0; j < no; j++) ck_assert_msg(m.s[PARITY_T_O][j] == want, "o %zu: %g, want %g", j, m.s[PARITY_T_O][j], want);
    for (size_t j = 0; j < nh; j++) ck_assert_msg(m.s[PARITY_T_HT][j] == want, "ht %zu: %g", j, m.s[PARITY_T_HT][j]);
    parity_model_clear(&m);
  }
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("kappa_model", "kappa_model", 60, whole_chunks_change_nothing, padded_ends_are_probed, underflow_part)
