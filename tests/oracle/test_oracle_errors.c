/* Failure paths: bad configurations and inputs are refused with
 * GDN_ERR_INPUT naming the field; every gdn_alloc allocation failing in
 * turn gives GDN_ERR_NOMEM; in every case `out` is left cleared (even when
 * it held results before), the certificate zeroed, and nothing leaks --
 * gdn-side buffers are checked by the sanitizer build, MPFR's numbers here
 * by counting GMP's live bytes. */
#include <check.h>
#include <gmp.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "gmp_count_util.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

START_TEST(bad_config) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 5, 1, 1, 4, 4}, 0, 1);
  oracle_config c;
  c = otu_cfg(23, ORACLE_FORM_TOKEN, 64);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "prec = 23", 0);
  c = otu_cfg(ORACLE_PREC_MAX + 1, ORACLE_FORM_TOKEN, 64);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "prec = 4097", 0);
  c = otu_cfg(128, (oracle_form)2, 64);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "form = 2", 0);
  c = otu_cfg(128, ORACLE_FORM_CHUNKED, 0);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "chunk = 0", 0);
  c = otu_cfg(128, ORACLE_FORM_CHUNKED, -3);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "chunk = -3", 0);
  c = otu_cfg(128, ORACLE_FORM_TOKEN, 64);
  c.column_block = -1;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "column_block = -1", 0);
  c = otu_cfg(128, ORACLE_FORM_TOKEN, 64);
  c.check_prec = 128;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "check_prec = 128", 1);
  c.check_prec = 100;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "check_prec = 100", 1);
  c.check_prec = ORACLE_CHECK_PREC_MAX + 1;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "check_prec", 1);
  /* check_prec is oracle_run_certified's alone; chunk only the chunked
   * form's: oracle_run accepts them. */
  c.chunk = 0;
  gdn_outputs out;
  otu_run(&in, &c, &out);
  gdn_outputs_clear(&out);
  /* The extremes of the range work. */
  c = otu_cfg(ORACLE_PREC_MIN, ORACLE_FORM_CHUNKED, 1);
  otu_run(&in, &c, &out);
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(bad_inputs) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 5, 1, 2, 4, 4}, GDN_SYNTH_H0, 1);
  oracle_config c = otu_cfg(64, ORACLE_FORM_TOKEN, 4);
  in.v[7] = NAN;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "input v", 0);
  in.v[7] = 0;
  in.h0[3] = INFINITY;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "input h0", 0);
  in.h0[3] = 0;
  in.beta[2] = 2.5f;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "beta", 0);
  in.beta[2] = 0.5f;
  in.has_scale = 1;
  in.scale = NAN;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "scale", 0);
  in.has_scale = 0;
  float *k = in.k;
  in.k = NULL;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "input k is missing", 0);
  in.k = k;
  in.shape.Hk = 3; /* Hv = 2 is not a multiple of 3 */
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "Hk = 3", 0);
  in.shape.Hk = 1;
  /* A gate beyond MPFR's exponent range: exp(3e38) overflows to +inf. */
  in.g[2 * 3 + 1] = 3e38f;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "value head 1, token t=3", 0);
  c.form = ORACLE_FORM_CHUNKED;
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "exponent range", 0);
  in.g[2 * 3 + 1] = -1;
  /* NULL arguments are caller bugs. */
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs out;
  otu_filled(&out);
  ck_assert_int_eq(oracle_run(NULL, &c, &out, &e), GDN_ERR_INTERNAL);
  otu_assert_cleared(&out);
  otu_filled(&out);
  ck_assert_int_eq(oracle_run(&in, NULL, &out, &e), GDN_ERR_INTERNAL);
  otu_assert_cleared(&out);
  otu_filled(&out);
  ck_assert_int_eq(oracle_run_certified(&in, &c, &out, NULL, &e), GDN_ERR_INTERNAL);
  otu_assert_cleared(&out);
  ck_assert_int_eq(oracle_run(&in, &c, NULL, &e), GDN_ERR_INTERNAL);
  gdn_inputs_clear(&in);
}
END_TEST

/* Every allocation site of a run failing in turn: n = 1, 2, ... until the
 * run succeeds.  Each failure is GDN_ERR_NOMEM with the message naming
 * what was being allocated, `out` cleared, GMP's live bytes back to where
 * they were; the run that finally succeeds equals an undisturbed one. */
static void alloc_failures(oracle_form form, int64_t C, int certified, int threads) {
  gdn_threads_set(threads);
  gdn_inputs in = tsu_inputs((gdn_shape){1, 9, 1, 2, 4, 12}, GDN_SYNTH_H0, 2);
  oracle_config cfg = otu_cfg(64, form, C);
  cfg.column_block = 4; /* several token-form items */
  gdn_outputs ref;
  oracle_certificate cref = {0};
  if (certified)
    otu_run_cert(&in, &cfg, &ref, &cref);
  else
    otu_run(&in, &cfg, &ref);
  const long sites = otu_alloc_sweep(certified ? OTU_MPFR_CERTIFIED : OTU_MPFR, &in, &cfg, &ref, cref.certified_bits,
                                     gcu_live);
  /* outputs (2), item status, workers, then per worker its workspace(s) and,
   * certified, scratch and two accumulators. */
  long expect = 4 + threads * (certified ? 5 : 1);
  ck_assert_msg(sites == expect, "form %d certified %d threads %d: %ld allocation sites, expected %ld",
                (int)form, certified, threads, sites, expect);
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
  gdn_threads_set(2);
}

START_TEST(alloc_failures_token) { alloc_failures(ORACLE_FORM_TOKEN, 0, 0, 1); }
END_TEST
START_TEST(alloc_failures_chunked) { alloc_failures(ORACLE_FORM_CHUNKED, 4, 0, 1); }
END_TEST
START_TEST(alloc_failures_certified) { alloc_failures(ORACLE_FORM_TOKEN, 0, 1, 1); }
END_TEST
START_TEST(alloc_failures_certified_chunked_2threads) {
  alloc_failures(ORACLE_FORM_CHUNKED, 4, 1, 2);
}
END_TEST

int main(void) {
  gcu_install();
  Suite *su = suite_create("oracle_errors");
  CKR_TCASE(su, "errors", 60, bad_config, bad_inputs, alloc_failures_token, alloc_failures_chunked,
      alloc_failures_certified, alloc_failures_certified_chunked_2threads);
  return ckr_run(su);
}
