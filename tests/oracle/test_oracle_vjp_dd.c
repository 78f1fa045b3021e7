/* oracle_vjp_dd, the VJP's double-word tier, against the MPFR VJP.
 *
 * Both are far more accurate than binary64 (MPFR at 128 bits certifies
 * > 100 bits; the dd tier's operations are ~2^-104 relative, a few hundred
 * of them per element and token in a contractive recurrence: measured
 * below), and both round their result to binary64, so every element must
 * agree to 1 ulp of binary64: |x - r| <= 2^-52 |r|, or 2^-90 max |r| for an
 * element near zero (cancellation can leave an element far below its
 * terms, and the dd tier's absolute error there is ~2^-100 max).  The
 * certificate must reach 90 bits on these cases and fall when an error is
 * planted in a sampled column (the negative control).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"
#include "oracle_test_util.h"
#include "oracle_vjp.h"
#include "../check_runner.h"

static void run_dd(const gdn_inputs *in, const gdn_cotangents *ct, int64_t ns, int64_t K, gdn_grads *g,
                   oracle_vjp_dd_certificate *cert) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  cfg.sample_columns = ns;
  cfg.checkpoint = K;
  gdn_grads_init(g);
  int rc = oracle_vjp_dd(in, ct, &cfg, g, cert, &e);
  ck_assert_msg(rc == GDN_OK, "oracle_vjp_dd: %s", e.msg);
}

static void run_mpfr(const gdn_inputs *in, const gdn_cotangents *ct, gdn_grads *g) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads_init(g);
  ck_assert_msg(oracle_vjp(in, ct, &cfg, g, &e) == GDN_OK, "oracle_vjp: %s", e.msg);
}

static int same(const gdn_grads *a, const gdn_grads *b) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_grads_numel(&a->shape, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

/* The rule at the top; returns the number of elements off by more. */
static long off_elements(const gdn_grads *x, const gdn_grads *r, const char **which) {
  long bad = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double *a = gdn_grads_tensor_c(x, (gdn_grad_id)id), *b = gdn_grads_tensor_c(r, (gdn_grad_id)id);
    size_t n = gdn_grads_numel(&r->shape, (gdn_grad_id)id);
    double M = 0;
    for (size_t i = 0; i < n; i++) M = fabs(b[i]) > M ? fabs(b[i]) : M;
    for (size_t i = 0; i < n; i++)
      if (fabs(a[i] - b[i]) > ldexp(fabs(b[i]), -52) + ldexp(M, -90)) bad++, *which = gdn_grads_name((gdn_grad_id)id);
  }
  return bad;
}

typedef struct ddcase {
  gdn_shape s;
  unsigned flags;
  int dht;
} ddcase;

static const ddcase cases[] = {
    {{1, 150, 1, 2, 16, 12}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 1},
    {{2, 61, 2, 2, 8, 6}, GDN_SYNTH_QK_PRENORM | GDN_SYNTH_SLOW_GATES, 0},
    {{1, 90, 1, 1, 12, 8}, GDN_SYNTH_H0, 1},
};

START_TEST(agrees_with_mpfr) {
  const ddcase *c = &cases[_i];
  gdn_inputs in = tsu_inputs(c->s, c->flags, 21);
  gdn_cotangents ct = tsu_cotangents(&c->s, c->dht, 4);
  gdn_grads ref, g;
  oracle_vjp_dd_certificate cert;
  run_mpfr(&in, &ct, &ref);
  run_dd(&in, &ct, 2, 0, &g, &cert);
  const char *which = "";
  long bad = off_elements(&g, &ref, &which);
  fprintf(stderr, "case %d: %ld elements off; certified %d bits (normwise %d), dq %d dk %d dv %d dg %d dbeta %d dh0 %d\n",
          _i, bad, cert.certified_bits, cert.normwise_bits, cert.certified[0], cert.certified[1],
          cert.certified[2], cert.certified[3], cert.certified[4], cert.certified[5]);
  ck_assert_msg(bad == 0, "%ld elements (last in %s) differ by more than 1 ulp", bad, which);
  ck_assert_msg(cert.certified_bits >= 90, "certified %d bits", cert.certified_bits);
  ck_assert_int_eq(cert.precision_bits, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.sampled_columns, c->s.B * c->s.Hv * 2);
  gdn_grads_clear(&g);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* Threads, checkpoint interval and sample size never change the gradients. */
START_TEST(nothing_changes_the_values) {
  const ddcase *c = &cases[1];
  gdn_inputs in = tsu_inputs(c->s, c->flags, 3);
  gdn_cotangents ct = tsu_cotangents(&c->s, 1, 5);
  gdn_grads ref, g;
  oracle_vjp_dd_certificate cert;
  gdn_threads_set(1);
  run_dd(&in, &ct, 2, 0, &ref, &cert);
  const struct { int th; int64_t ns, K; } v[] = {{2, 2, 0}, {2, 0, 5}, {1, 6, 1}, {2, 100, 61}};
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    gdn_threads_set(v[k].th);
    run_dd(&in, &ct, v[k].ns, v[k].K, &g, &cert);
    ck_assert_msg(same(&g, &ref), "variant %zu differs", k);
    if (v[k].ns == 0) ck_assert_int_eq(cert.certified_bits, 0);
    gdn_grads_clear(&g);
  }
  gdn_threads_set(2);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The negative control: 2^-60 (relative) added to one sampled adjoint
 * element mid-sequence pulls the certificate to about 60 bits; the same
 * error in an unsampled column is not seen (what a sample cannot do). */
START_TEST(planted_error_lowers_the_certificate) {
  const ddcase *c = &cases[0];
  gdn_inputs in = tsu_inputs(c->s, c->flags, 21);
  gdn_cotangents ct = tsu_cotangents(&c->s, c->dht, 4);
  gdn_grads g;
  oracle_vjp_dd_certificate cert;
  int64_t s0 = oracle_dd_sample_start(&c->s, 2, 0, 0);
  oracle_vjp_dd_test_plant(0, 0, 1, s0 + 1, 75, 0x1p-60);
  run_dd(&in, &ct, 2, 0, &g, &cert);
  gdn_grads_clear(&g);
  ck_assert_msg(cert.certified_bits <= 64 && cert.certified_bits >= 40, "planted: %d bits", cert.certified_bits);
  oracle_vjp_dd_test_plant(0, 0, 1, s0 >= 3 ? 0 : 11, 75, 0x1p-60);
  run_dd(&in, &ct, 2, 0, &g, &cert);
  oracle_vjp_dd_test_plant(0, 0, 0, -1, 0, 0);
  ck_assert_msg(cert.certified_bits >= 90, "unsampled plant: %d bits", cert.certified_bits);
  gdn_grads_clear(&g);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* Refusals by name; exp(g) beyond binary64 fails naming the token; every
 * allocation failing in turn leaves the gradients cleared. */
START_TEST(errors_and_allocation_failures) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 12, 1, 2, 4, 3}, GDN_SYNTH_H0, 1);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 1);
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads g;
  gdn_grads_init(&g);
  oracle_vjp_dd_certificate cert;
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  cfg.sample_columns = -1;
  ck_assert_int_eq(oracle_vjp_dd(&in, &ct, &cfg, &g, &cert, &e), GDN_ERR_INPUT);
  ck_assert(strstr(e.msg, "sample_columns = -1"));
  oracle_vjp_dd_config_init(&cfg);
  ck_assert_int_eq(oracle_vjp_dd(&in, &ct, &cfg, &g, NULL, &e), GDN_ERR_INTERNAL);
  float g7 = in.g[7];
  in.g[7] = 800.0f; /* t = 3, value head 1 */
  ck_assert_int_eq(oracle_vjp_dd(&in, &ct, &cfg, &g, &cert, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "binary64's range") && strstr(e.msg, "token t=3"), "%s", e.msg);
  ck_assert(g.dq == NULL && cert.certified_bits == 0);
  in.g[7] = g7;
  gdn_grads ref;
  run_dd(&in, &ct, 2, 0, &ref, &cert);
  long sites = 0;
  for (long n = 1;; n++) {
    ck_assert(n < 200);
    gdn_alloc_fail_after(n);
    int rc = oracle_vjp_dd(&in, &ct, &cfg, &g, &cert, &e);
    gdn_alloc_fail_after(0);
    if (rc == GDN_OK) {
      ck_assert(same(&g, &ref));
      gdn_grads_clear(&g);
      break;
    }
    sites++;
    ck_assert_msg(rc == GDN_ERR_NOMEM && strstr(e.msg, "out of memory"), "%d %s", rc, e.msg);
    ck_assert(g.dq == NULL && g.dh0 == NULL && cert.certified_bits == 0);
  }
  ck_assert_msg(sites >= 10, "%ld sites", sites);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

int main(void) {
  Suite *su = suite_create("oracle_vjp_dd");
  TCase *tc = CKR_TCASE(su, "vjp_dd", 120, nothing_changes_the_values, planted_error_lowers_the_certificate,
      errors_and_allocation_failures);
  tcase_add_loop_test(tc, agrees_with_mpfr, 0, (int)(sizeof cases / sizeof cases[0]));
  int nf = ckr_run(su);
  mpfr_free_cache();
  return nf;
}
