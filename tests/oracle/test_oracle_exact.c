/* Tiny cases worked out by hand: the oracle must reproduce them exactly.
 *
 * With g = 0 (a = 1) and dyadic k, v, beta, q, scale, every intermediate of
 * both forms is a dyadic rational with a few significant bits, so any
 * p >= 24 computes them without rounding: the binary64 outputs must equal
 * the hand-derived values exactly, at the minimum precision and at 128.
 * The case with g != 0 is checked against its closed form evaluated
 * independently in MPFR at 256 bits.
 */
#include <check.h>
#include <mpfr.h>

#include "oracle_test_util.h"
#include "../check_runner.h"

static const long precs[] = {24, 53, 128};
static const struct { oracle_form form; int64_t chunk; } forms[] = {
    {ORACLE_FORM_TOKEN, 0}, {ORACLE_FORM_CHUNKED, 1}, {ORACLE_FORM_CHUNKED, 2},
    {ORACLE_FORM_CHUNKED, 64}};

static void alloc_inputs(gdn_inputs *in, gdn_shape s, int with_h0) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, with_h0, &e), GDN_OK);
}

/* Dk = Dv = 1, T = 2, g = 0, scale = 1/2, h0 = 0, no L2 norm.
 *   t = 0: k = 1, v = 2, beta = 1/2, q = 1:
 *          kv = 0, delta = 1/2 (2 - 0) = 1, h = 0 + 1 * 1 = 1, o = 1 * (1/2) = 1/2
 *   t = 1: k = 1/2, v = 3, beta = 1/4, q = 2:
 *          kv = 1/2, delta = 1/4 (3 - 1/2) = 5/8, h = 1 + 1/2 * 5/8 = 21/16,
 *          o = 21/16 * (1/2 * 2) = 21/16
 * Chunked (C = 2) by hand: L_10 = beta_1 k_1 k_0 = 1/8, A_10 = -1/8,
 * U = (1, -1/8 + 3/4) = (1, 5/8), P = [[1/2, .], [1, 1/2]],
 * O_1 = 1 * 1 + 1/2 * 5/8 = 21/16, h' = 1 * 1 + 1/2 * 5/8 = 21/16: the same. */
START_TEST(scalar_state) {
  gdn_inputs in;
  otu_scalar_state(&in);
  for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++)
    for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
      oracle_config cfg = otu_cfg(precs[pi], forms[fi].form, forms[fi].chunk);
      gdn_outputs out;
      otu_run(&in, &cfg, &out);
      ck_assert_msg(out.o[0] == 0.5 && out.o[1] == 21.0 / 16 && out.ht[0] == 21.0 / 16,
                    "p=%ld form %d C=%lld: o = (%.17g, %.17g), ht = %.17g", precs[pi],
                    (int)forms[fi].form, (long long)forms[fi].chunk, out.o[0], out.o[1], out.ht[0]);
      gdn_outputs_clear(&out);
    }
  gdn_inputs_clear(&in);
}
END_TEST

/* Dk = Dv = 2, T = 2, g = 0, scale = 1/2, no L2 norm, h0 = [[1/2, 0], [0, 1/4]]
 * (rows: the Dk index i; columns: the Dv index c).
 *   t = 0: k = (1, 0), v = (1, 2), beta = 1, q = (1, 1):
 *     kv_c = sum_i h_ic k_i = (1/2, 0); delta = (1 - 1/2, 2 - 0) = (1/2, 2);
 *     h += k delta^T: row 0 += (1/2, 2): h = [[1, 2], [0, 1/4]];
 *     o_c = 1/2 (h_0c + h_1c) = (1/2, 9/8).
 *   t = 1: k = (1/2, 1/2), v = (0, 1), beta = 1/2, q = (1, -1):
 *     kv = 1/2 (h_0c + h_1c) = (1/2, 9/8); delta = 1/2 ((0, 1) - kv) = (-1/4, -1/16);
 *     every row += 1/2 delta = (-1/8, -1/32): h = [[7/8, 63/32], [-1/8, 7/32]];
 *     o_c = 1/2 (h_0c - h_1c) = (1/2, 7/8).
 * ht = [[7/8, 63/32], [-1/8, 7/32]]. */
START_TEST(two_by_two_with_h0) {
  gdn_shape s = {1, 2, 1, 1, 2, 2};
  gdn_inputs in;
  alloc_inputs(&in, s, 1);
  const float k[] = {1, 0, 0.5f, 0.5f}, v[] = {1, 2, 0, 1}, beta[] = {1, 0.5f},
              q[] = {1, 1, 1, -1}, h0[] = {0.5f, 0, 0, 0.25f};
  memcpy(in.k, k, sizeof k);
  memcpy(in.v, v, sizeof v);
  memcpy(in.beta, beta, sizeof beta);
  memcpy(in.q, q, sizeof q);
  memcpy(in.h0, h0, sizeof h0);
  in.has_scale = 1;
  in.scale = 0.5;
  const double o_ref[] = {0.5, 9.0 / 8, 0.5, 7.0 / 8};
  const double ht_ref[] = {7.0 / 8, 63.0 / 32, -1.0 / 8, 7.0 / 32};
  for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++)
    for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
      oracle_config cfg = otu_cfg(precs[pi], forms[fi].form, forms[fi].chunk);
      gdn_outputs out;
      otu_run(&in, &cfg, &out);
      for (int i = 0; i < 4; i++) {
        ck_assert_msg(out.o[i] == o_ref[i], "p=%ld form %d C=%lld: o[%d] = %.17g, expected %.17g",
                      precs[pi], (int)forms[fi].form, (long long)forms[fi].chunk, i, out.o[i],
                      o_ref[i]);
        ck_assert_msg(out.ht[i] == ht_ref[i],
                      "p=%ld form %d C=%lld: ht[%d] = %.17g, expected %.17g", precs[pi],
                      (int)forms[fi].form, (long long)forms[fi].chunk, i, out.ht[i], ht_ref[i]);
      }
      gdn_outputs_clear(&out);
    }
  gdn_inputs_clear(&in);
}
END_TEST

/* Dk = Dv = 1 with decay.  For a scalar state the recurrence is
 *   h_t = a_t (1 - beta_t k_t^2) h_{t-1} + beta_t k_t v_t,   o_t = scale q_t h_t
 * (h *= a; kv = h k; h += k beta (v - kv) = a h (1 - beta k^2) + beta k v).
 * With h0 = 1, g = (-1/2, -5/4), k = (1, 1/2), beta = (1/2, 1/4), v = (2, 3),
 * q = (1, 2), scale = 1/2:
 *   h_1 = e^{-1/2} (1 - 1/2) + 1/2 * 2        = e^{-1/2} / 2 + 1,   o_1 = h_1 / 2
 *   h_2 = e^{-5/4} (1 - 1/16) h_1 + 3/8       = 15/16 e^{-5/4} h_1 + 3/8,   o_2 = h_2.
 * The closed form is evaluated at 256 bits (each of its few operations adds a
 * relative error <= 2^-256).  The oracle at p = 128 is within ~2^-120 of the
 * exact value, so its binary64 rounding equals the closed form's unless the
 * exact value lies within 2^-100 (relative) of a rounding boundary -- which
 * the test checks is not the case before asserting equality. */
static double closed_form_rounded(mpfr_srcptr x) {
  mpfr_t lo, hi;
  mpfr_init2(lo, 256);
  mpfr_init2(hi, 256);
  mpfr_mul_2si(lo, x, -100, MPFR_RNDN);
  mpfr_sub(hi, x, lo, MPFR_RNDN); /* x (1 - 2^-100) */
  mpfr_add(lo, x, lo, MPFR_RNDN); /* x (1 + 2^-100) */
  double a = mpfr_get_d(hi, MPFR_RNDN), b = mpfr_get_d(lo, MPFR_RNDN), c = mpfr_get_d(x, MPFR_RNDN);
  ck_assert_msg(a == b && b == c, "closed form too close to a binary64 rounding boundary");
  mpfr_clear(lo);
  mpfr_clear(hi);
  return c;
}

START_TEST(decay_closed_form) {
  gdn_shape s = {1, 2, 1, 1, 1, 1};
  gdn_inputs in;
  alloc_inputs(&in, s, 1);
  const float k[] = {1, 0.5f}, v[] = {2, 3}, beta[] = {0.5f, 0.25f}, q[] = {1, 2},
              g[] = {-0.5f, -1.25f};
  memcpy(in.k, k, sizeof k);
  memcpy(in.v, v, sizeof v);
  memcpy(in.beta, beta, sizeof beta);
  memcpy(in.q, q, sizeof q);
  memcpy(in.g, g, sizeof g);
  in.h0[0] = 1;
  in.has_scale = 1;
  in.scale = 0.5;

  mpfr_t h1, h2, t;
  mpfr_inits2(256, h1, h2, t, (mpfr_ptr)0);
  mpfr_set_d(t, -0.5, MPFR_RNDN);
  mpfr_exp(t, t, MPFR_RNDN);
  mpfr_div_ui(t, t, 2, MPFR_RNDN);
  mpfr_add_ui(h1, t, 1, MPFR_RNDN); /* h_1 = e^{-1/2} / 2 + 1 */
  mpfr_set_d(t, -1.25, MPFR_RNDN);
  mpfr_exp(t, t, MPFR_RNDN);
  mpfr_mul_ui(t, t, 15, MPFR_RNDN);
  mpfr_div_ui(t, t, 16, MPFR_RNDN);
  mpfr_mul(t, t, h1, MPFR_RNDN);
  mpfr_set_d(h2, 0.375, MPFR_RNDN);
  mpfr_add(h2, h2, t, MPFR_RNDN); /* h_2 = 15/16 e^{-5/4} h_1 + 3/8 */
  mpfr_div_ui(t, h1, 2, MPFR_RNDN);
  double o1 = closed_form_rounded(t), o2 = closed_form_rounded(h2), ht = o2;
  mpfr_clears(h1, h2, t, (mpfr_ptr)0);
  mpfr_free_cache();

  for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
    oracle_config cfg = otu_cfg(128, forms[fi].form, forms[fi].chunk);
    gdn_outputs out;
    otu_run(&in, &cfg, &out);
    ck_assert_msg(out.o[0] == o1 && out.o[1] == o2 && out.ht[0] == ht,
                  "form %d C=%lld: o = (%.17g, %.17g) ht = %.17g; closed form (%.17g, %.17g) %.17g",
                  (int)forms[fi].form, (long long)forms[fi].chunk, out.o[0], out.o[1], out.ht[0],
                  o1, o2, ht);
    gdn_outputs_clear(&out);
  }
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_exact", "exact", 0, scalar_state, two_by_two_with_h0, decay_closed_form)
