/* The dd tier's failure paths and memory: bad configurations and inputs
 * are refused as the MPFR tier refuses them (GDN_ERR_INPUT, the same
 * messages for the inputs); binary64's range is enforced with a message
 * naming (b, head, t); every allocation failing in turn gives
 * GDN_ERR_NOMEM with `out` cleared, the certificate zeroed and nothing
 * leaked (GMP's live bytes counted here, gdn-side buffers by the sanitizer
 * build); memory does not grow with T (GMP's peak and the number of
 * gdn_alloc allocations are the same at T = 64 and T = 1024). */
#include <check.h>
#include <gmp.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "gmp_count_util.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static int cert_zero(const oracle_dd_certificate *c) {
  return c->certified_bits == 0 && c->check_bits == 0 && c->precision_bits == 0 &&
         c->sampled_columns == 0 && c->floor_o == 0 && c->normwise_bits == 0 &&
         c->guaranteed_bits == 0 && c->bound_violations == 0;
}

/* The dd tier fails with `code` and a message containing `needle`. */
static void expect_dd_error(const gdn_inputs *in, const oracle_dd_config *cfg, int code,
                            const char *needle) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs out;
  otu_filled(&out);
  oracle_dd_certificate cert;
  memset(&cert, 0x5a, sizeof cert);
  int rc = oracle_run_dd(in, cfg, &out, &cert, &e);
  ck_assert_msg(rc == code, "expected code %d for '%s', got %d (%s)", code, needle, rc, e.msg);
  ck_assert_int_eq(e.code, code);
  ck_assert_msg(strstr(e.msg, needle), "message '%s' does not name '%s'", e.msg, needle);
  otu_assert_cleared(&out);
  ck_assert(cert_zero(&cert));
}

/* Both tiers refuse the inputs with the same message. */
static void expect_same_refusal(const gdn_inputs *in, const char *needle) {
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  expect_dd_error(in, &dc, GDN_ERR_INPUT, needle);
  gdn_error e1, e2;
  gdn_error_init(&e1);
  gdn_error_init(&e2);
  gdn_outputs a, b;
  gdn_outputs_init(&a);
  gdn_outputs_init(&b);
  oracle_config mc = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  oracle_dd_certificate c;
  ck_assert_int_eq(oracle_run(in, &mc, &a, &e1), GDN_ERR_INPUT);
  ck_assert_int_eq(oracle_run_dd(in, &dc, &b, &c, &e2), GDN_ERR_INPUT);
  ck_assert_str_eq(e1.msg, e2.msg);
}

START_TEST(bad_config) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 5, 1, 1, 4, 4}, 0, 1);
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  c.sample_prec = 23;
  expect_dd_error(&in, &c, GDN_ERR_INPUT, "sample_prec = 23");
  c.sample_prec = ORACLE_PREC_MAX + 1;
  expect_dd_error(&in, &c, GDN_ERR_INPUT, "sample_prec = 4097");
  oracle_dd_config_init(&c);
  c.sample_columns = -1;
  expect_dd_error(&in, &c, GDN_ERR_INPUT, "sample_columns = -1");
  oracle_dd_config_init(&c);
  c.column_block = -2;
  expect_dd_error(&in, &c, GDN_ERR_INPUT, "column_block = -2");
  expect_dd_error(&in, NULL, GDN_ERR_INTERNAL, "config");
  /* The extremes of the range work. */
  oracle_dd_config_init(&c);
  c.sample_prec = ORACLE_PREC_MIN;
  gdn_outputs out;
  oracle_dd_certificate cert;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(&out);
  ck_assert_int_eq(oracle_run_dd(&in, &c, &out, &cert, &e), GDN_OK);
  ck_assert_int_eq(cert.check_bits, ORACLE_PREC_MIN);
  gdn_outputs_clear(&out);
  /* NULL arguments are caller bugs. */
  oracle_dd_config_init(&c);
  otu_filled(&out);
  ck_assert_int_eq(oracle_run_dd(&in, &c, &out, NULL, &e), GDN_ERR_INTERNAL);
  otu_assert_cleared(&out);
  ck_assert_int_eq(oracle_run_dd(&in, &c, NULL, &cert, &e), GDN_ERR_INTERNAL);
  ck_assert(cert_zero(&cert));
  otu_filled(&out);
  ck_assert_int_eq(oracle_run_dd(NULL, &c, &out, &cert, &e), GDN_ERR_INTERNAL);
  otu_assert_cleared(&out);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(bad_inputs_as_mpfr) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 5, 1, 2, 4, 4}, GDN_SYNTH_H0, 1);
  in.v[7] = NAN;
  expect_same_refusal(&in, "input v");
  in.v[7] = 0;
  in.h0[3] = INFINITY;
  expect_same_refusal(&in, "input h0");
  in.h0[3] = 0;
  in.beta[2] = 2.5f;
  expect_same_refusal(&in, "beta");
  in.beta[2] = 0.5f;
  in.q[1] = -INFINITY;
  expect_same_refusal(&in, "input q");
  in.q[1] = 0.5f;
  in.has_scale = 1;
  in.scale = NAN;
  expect_same_refusal(&in, "scale");
  in.has_scale = 0;
  float *k = in.k;
  in.k = NULL;
  expect_same_refusal(&in, "input k is missing");
  in.k = k;
  in.shape.Hk = 3;
  expect_same_refusal(&in, "Hk = 3");
  in.shape.Hk = 1;
  gdn_inputs_clear(&in);
}
END_TEST

/* Binary64's range: exp(800) overflows binary64 but not MPFR; a positive
 * gate of +4 held for 200 tokens grows the state by e^800.  Both are
 * refused by the dd tier naming where, and computed by the MPFR tier. */
START_TEST(binary64_range) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 6, 1, 2, 4, 4}, GDN_SYNTH_H0, 3);
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  in.g[3 * 2 + 1] = 800.0f;
  expect_dd_error(&in, &dc, GDN_ERR_INPUT, "value head 1, token t=3");
  expect_dd_error(&in, &dc, GDN_ERR_INPUT, "binary64's exponent range");
  gdn_outputs mp;
  oracle_config mc = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  otu_run(&in, &mc, &mp);
  gdn_outputs_clear(&mp);
  /* Beyond MPFR's range too: the dd tier's check comes first. */
  in.g[3 * 2 + 1] = 3e38f;
  expect_dd_error(&in, &dc, GDN_ERR_INPUT, "value head 1, token t=3");
  gdn_inputs_clear(&in);

  gdn_shape s2 = {1, 200, 1, 1, 4, 4};
  tsu_synth(&in, s2, GDN_SYNTH_H0, 3);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s2); i++) in.g[i] = 4.0f;
  expect_dd_error(&in, &dc, GDN_ERR_INPUT, "binary64's exponent range");
  gdn_inputs_clear(&in);
}
END_TEST

/* Every allocation of a run failing in turn. */
static void alloc_failures(int64_t ns, int threads) {
  gdn_threads_set(threads);
  gdn_inputs in = tsu_inputs((gdn_shape){1, 9, 1, 2, 4, 12}, GDN_SYNTH_H0, 2);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  cfg.sample_columns = ns;
  cfg.column_block = 4; /* several items per head */
  gdn_outputs ref;
  oracle_dd_certificate cref;
  otu_run_dd(&in, &cfg, &ref, &cref);
  const long sites = otu_alloc_sweep(OTU_DD, &in, &cfg, &ref, cref.certified_bits, gcu_live);
  /* outputs (2), items, item status, workers; per worker the dd buffer,
   * its MPFR numbers and the two bound accumulators, and with a sample its
   * MPFR workspace, scratch and two certificate accumulators. */
  long expect = 5 + threads * (ns > 0 ? 8 : 4);
  ck_assert_msg(sites == expect, "sample %lld threads %d: %ld allocation sites, expected %ld",
                (long long)ns, threads, sites, expect);
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
  gdn_threads_set(2);
}

/* Sampled on one and two threads, unsampled. */
static const struct { int64_t ns; int threads; } alloc_cases[] = {{2, 1}, {2, 2}, {0, 1}};

START_TEST(alloc_failures_each) { alloc_failures(alloc_cases[_i].ns, alloc_cases[_i].threads); }
END_TEST

/* Peak live GMP bytes and gdn_alloc allocations of one run. */
static void usage_of(const gdn_inputs *in, long *gmp_peak, long *allocs) {
  long base = gcu_mark();
  long a0 = gdn_alloc_count();
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  gdn_outputs out;
  oracle_dd_certificate cert;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(&out);
  ck_assert_int_eq(oracle_run_dd(in, &c, &out, &cert, &e), GDN_OK);
  *allocs = gdn_alloc_count() - a0;
  gdn_outputs_clear(&out);
  ck_assert_msg(gcu_live() == base, "GMP heap: %ld bytes left after the run",
                gcu_live() - base);
  *gmp_peak = gcu_peak() - base;
}

START_TEST(memory_flat_in_T) {
  gdn_threads_set(1); /* with several threads the peak depends on timing */
  long peaks[3], allocs[3];
  const int64_t Ts[3] = {64, 64, 1024}; /* a warm-up run first (MPFR's one-time allocation) */
  for (int i = 0; i < 3; i++) {
    gdn_inputs in = tsu_inputs((gdn_shape){1, Ts[i], 1, 2, 16, 16}, GDN_SYNTH_H0, 41);
    usage_of(&in, &peaks[i], &allocs[i]);
    gdn_inputs_clear(&in);
  }
  ck_assert_msg(peaks[1] > 0, "no GMP allocation seen: the counting allocator is not installed");
  ck_assert_msg(peaks[1] == peaks[2] && allocs[1] == allocs[2],
                "GMP peak %ld / %ld bytes, %ld / %ld allocations at T = 64 / 1024", peaks[1],
                peaks[2], allocs[1], allocs[2]);
  gdn_threads_set(2);
}
END_TEST

int main(void) {
  gcu_install();
  Suite *su = suite_create("oracle_dd_errors");
  TCase *tc = CKR_TCASE(su, "dd_errors", 60, bad_config, bad_inputs_as_mpfr, binary64_range, memory_flat_in_T);
  tcase_add_loop_test(tc, alloc_failures_each, 0, (int)(sizeof alloc_cases / sizeof alloc_cases[0]));
  return ckr_run(su);
}
