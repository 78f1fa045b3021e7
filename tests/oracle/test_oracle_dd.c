/* The dd tier against the MPFR oracle on shorter cases: every column
 * sampled (sample_columns = Dv), so its certificate is the full agreement
 * of the double-word values with the 128-bit MPFR values of every element
 * of o and ht, before either is rounded to binary64.
 *
 * Bounds, from the error analysis in oracle.h (u^2 = 2^-106).  Per token
 * and column the first-order local error is at most L u^2 (|h| + |v|),
 * L = 6 Dk + 40 (the decay 5, the dot kv (3 Dk + 4) twice over through
 * beta <= 2, delta and the update ~25); the recurrence is
 * contractive with factor <= a_max = exp(max g), so the errors of
 * M = min(T, 1 / (1 - a_max)) tokens add up.  Relative to the largest
 * element (max-norm against the 2-norm of a column: sqrt(Dk); o = Q^T h
 * with |Q| = Dk^-1/2 typically smaller than scale |h|: 3 bits more):
 *   worst case   normwise >= 106 - log2(L M) - log2(Dk) / 2 - 3
 *   typical      normwise >= 106 - log2(L M) / 2 - log2(Dk) / 2 - 3 - 6
 * the second treating the roundings as independent zero-mean errors
 * (their sum grows as the square root of their number), with a 6-bit
 * (64 sigma) margin.  Elementwise (the certificate's rule) an element r
 * loses log2(max|r| / |r|) more, at most down to the floor tau.
 * Observed: normwise 102-105, elementwise 86-97. */
#include <check.h>

#include "gdn_threads.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static void run_dd(const gdn_inputs *in, int64_t ns, gdn_outputs *out, oracle_dd_certificate *cert) {
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  c.sample_columns = ns;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  int rc = oracle_run_dd(in, &c, out, cert, &e);
  ck_assert_msg(rc == GDN_OK, "oracle_run_dd: %s", e.msg);
  ck_assert_int_eq(cert->precision_bits, ORACLE_DD_BITS);
  ck_assert_int_eq(cert->check_bits, 128);
}

/* ceil(log2(max|r| / max(min|r|, tau))) over a tensor, tau = 2^-64 max|r|. */
static int drop_bits(const double *r, size_t n) {
  double M = 0, m = INFINITY;
  for (size_t i = 0; i < n; i++) M = fmax(M, fabs(r[i]));
  double tau = ldexp(M, -64);
  for (size_t i = 0; i < n; i++) m = fmin(m, fmax(fabs(r[i]), tau));
  return M == 0 ? 0 : (int)ceil(log2(M / m));
}

typedef struct dd_case {
  gdn_shape s;
  unsigned flags;
  uint64_t seed;
  const char *what;
} dd_case;

static void check_case(const dd_case *k) {
  gdn_inputs in = tsu_inputs(k->s, k->flags, k->seed);
  gdn_outputs full, samp, mp;
  oracle_dd_certificate cf, cs;
  run_dd(&in, k->s.Dv, &full, &cf);
  ck_assert_int_eq(cf.sample_columns, k->s.Dv);
  ck_assert_int_eq(cf.sampled_columns, cf.total_columns);
  /* The default sample changes nothing in the outputs. */
  run_dd(&in, 2, &samp, &cs);
  ck_assert(otu_identical(&full, &samp));
  ck_assert(cs.certified_bits >= cf.certified_bits && cs.normwise_bits >= cf.normwise_bits);
  /* Binary64 outputs: both are roundings of values 2^-85 or closer, so
   * they are equal unless one sits within that of a midpoint (then 1 ulp). */
  oracle_config mc = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  otu_run(&in, &mc, &mp);
  int b64 = oracle_bits_agreed(&full, &mp, 53);
  ck_assert_msg(b64 >= 52, "%s: binary64 outputs agree to %d bits only", k->what, b64);

  double gmax = -INFINITY;
  for (size_t i = 0; i < gdn_shape_numel_gate(&k->s); i++) gmax = fmax(gmax, in.g[i]);
  double amax = exp(gmax), M = amax < 1 ? fmin((double)k->s.T, 1.0 / (1.0 - amax)) : (double)k->s.T;
  double L = 6.0 * (double)k->s.Dk + 40.0, lg = log2(L * M), dk = 0.5 * log2((double)k->s.Dk);
  int worst = (int)floor(106 - lg - dk - 3), typical = (int)floor(106 - lg / 2 - dk - 3 - 6);
  int drop = drop_bits(mp.o, gdn_shape_numel_v(&k->s));
  int dh = drop_bits(mp.ht, gdn_shape_numel_state(&k->s));
  if (dh > drop) drop = dh;
  printf("%-44s memory %7.1f: normwise %3d (bounds: worst %d, typical %d), elementwise %3d "
         "(o %d, ht %d; bound %d), guaranteed %d, sampled-2: %d / %d\n",
         k->what, M, cf.normwise_bits, worst, typical, cf.certified_bits, cf.certified_o,
         cf.certified_ht, typical - drop, cf.guaranteed_bits, cs.certified_bits, cs.normwise_bits);
  fflush(stdout);
  ck_assert_msg(cf.normwise_bits >= worst && cf.normwise_bits >= typical,
                "%s: normwise %d bits; bounds %d (worst case), %d (typical)", k->what,
                cf.normwise_bits, worst, typical);
  ck_assert_msg(cf.certified_bits >= typical - drop, "%s: elementwise %d bits, bound %d - %d",
                k->what, cf.certified_bits, typical, drop);
  /* The running bound holds on every element (checked against MPFR in
   * the run: 0 violations), claims no more than is measured (the
   * measurement, against MPFR, is within MPFR's 2^-110 of the truth), and
   * does not depend on the sample. */
  ck_assert_int_eq(cf.bound_violations, 0);
  ck_assert_int_eq(cs.bound_violations, 0);
  ck_assert_msg(cf.guaranteed_bits <= cf.certified_bits + 1, "%s: guaranteed %d > certified %d",
                k->what, cf.guaranteed_bits, cf.certified_bits);
  ck_assert(cs.guaranteed_bits == cf.guaranteed_bits && cs.guaranteed_o == cf.guaranteed_o);
  /* A worst-case bound, so below the typical estimate; but the a priori
   * worst case (relative to each element) it must meet. */
  ck_assert_msg(cf.guaranteed_bits >= worst - drop, "%s: guaranteed %d bits, worst case %d - %d",
                k->what, cf.guaranteed_bits, worst, drop);
  /* Above MPFR's own reach nothing can be certified; below binary64's
   * the tier would be pointless.  (Both hold with room.) */
  ck_assert(cf.certified_bits <= ORACLE_DD_BITS && cf.certified_bits > 53);
  gdn_outputs_clear(&full);
  gdn_outputs_clear(&samp);
  gdn_outputs_clear(&mp);
  gdn_inputs_clear(&in);
}

static const dd_case cases[] = {
    {{1, 256, 2, 4, 32, 32}, GDN_SYNTH_H0, 1, "grouped heads, h0, l2norm, fast gates"},
    {{2, 384, 1, 2, 64, 16}, GDN_SYNTH_QK_PRENORM, 2, "B=2, prenormalised q k, no h0"},
    {{1, 2048, 1, 1, 32, 12}, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 3, "slow gates, h0, T=2048"},
    {{1, 3000, 2, 2, 16, 12}, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_QK_PRENORM, 4,
     "slow gates, prenormalised, T=3000"},
    {{1, 300, 1, 1, 128, 16}, GDN_SYNTH_H0, 5, "Dk=128, h0, l2norm"},
};

START_TEST(dd_vs_mpfr) { check_case(&cases[_i]); }
END_TEST

/* An explicit scale, bfloat16 inputs (exact float32 values with short
 * significands) and beta up to 2 (the (0, 2) variant): the same bounds. */
START_TEST(dd_vs_mpfr_variants) {
  dd_case k = {{1, 400, 1, 2, 32, 16}, GDN_SYNTH_H0, 6, "scale 0.3, beta in [0, 2)"};
  gdn_inputs in = tsu_inputs(k.s, k.flags, k.seed);
  in.has_scale = 1;
  in.scale = 0.3;
  for (size_t i = 0; i < gdn_shape_numel_gate(&k.s); i++) in.beta[i] *= 2.0f;
  gdn_outputs full, mp;
  oracle_dd_certificate cf;
  run_dd(&in, k.s.Dv, &full, &cf);
  oracle_config mc = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  otu_run(&in, &mc, &mp);
  ck_assert_int_ge(oracle_bits_agreed(&full, &mp, 53), 52);
  printf("%-44s normwise %3d, elementwise %3d, guaranteed %d\n", k.what, cf.normwise_bits,
         cf.certified_bits, cf.guaranteed_bits);
  ck_assert_int_eq(cf.bound_violations, 0);
  ck_assert_int_le(cf.guaranteed_bits, cf.certified_bits + 1);
  fflush(stdout);
  /* L M <= 232 * 400 and Dk = 32 give 106 - 8.3 - 2.5 - 9 = 86 (typical). */
  ck_assert_int_ge(cf.normwise_bits, 86);
  gdn_outputs_clear(&full);
  gdn_outputs_clear(&mp);
  gdn_inputs_clear(&in);
}
END_TEST

int main(void) {
  gdn_threads_set(2);
  Suite *su = suite_create("oracle_dd");
  TCase *tc = CKR_TCASE(su, "dd", 120, dd_vs_mpfr_variants);
  tcase_add_loop_test(tc, dd_vs_mpfr, 0, (int)(sizeof cases / sizeof cases[0]));
  return ckr_run(su);
}
