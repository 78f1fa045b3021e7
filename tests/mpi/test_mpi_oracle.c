/* The oracle dealt across ranks (parity/run/parity_dist.h, parity_dist_oracle.c):
 * run under `mpirun -np N`, every rank's parity_dist_oracle_mpfr / _dd
 * result must equal the one-process oracle_run_certified / oracle_run_dd
 * computed on that rank, bit for bit (memcmp: the claim is identity, the
 * bound zero) with every certificate field equal, for the MPFR tier (token
 * and chunked forms) and the dd tier (its sample and guaranteed bound), on
 * B Hv = 6 heads (at N = 4 some ranks hold 1 head, some 2; at N = 8 some
 * none); and the VJP (certified MPFR and dd), dealt by items (b, key
 * head), its six gradients and certificate likewise.
 * Errors: gates of 800 overflow the dd tier at head 4 (b 1, j 1, t 5) and
 * head 5 (b 1, j 2, t 2), which lie on different ranks from N = 2 on: every
 * rank returns the one-process error, word for word (head 4's, the first
 * in (b, j) order), and a config error (not a head's) likewise.
 * Negative control: with GDN_TEST_MPI_DIE=1:oracle-deal rank 1 computes
 * rank 0's heads, not its own: the outputs then differ (N >= 2), so the
 * identity above is not vacuous.
 * Check runs without fork (CK_NOFORK: a forked child must not use MPI). */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "parity_dist.h"
#include "../check_runner.h"
#include "../oracle/oracle_test_util.h"

static int g_rank, g_size;
static const gdn_shape SHAPE = {2, 37, 1, 3, 12, 20};

static int identical(const gdn_outputs *a, const gdn_outputs *b) {
  return a->o && b->o && !memcmp(a->o, b->o, gdn_shape_numel_v(&a->shape) * sizeof(double)) &&
         !memcmp(a->ht, b->ht, gdn_shape_numel_state(&a->shape) * sizeof(double));
}

static void mpfr_pair(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *d, gdn_outputs *w,
                      oracle_certificate *cd, oracle_certificate *cw) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(d);
  gdn_outputs_init(w);
  ck_assert_msg(parity_dist_oracle_mpfr(in, cfg, d, cd, &e) == GDN_OK, "dealt: %s", e.msg);
  ck_assert_msg(oracle_run_certified(in, cfg, w, cw, &e) == GDN_OK, "whole: %s", e.msg);
}

START_TEST(mpfr_dealt_equals_whole) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 51);
  const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0}, {ORACLE_FORM_CHUNKED, 8}};
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg;
    oracle_config_init(&cfg);
    cfg.prec = 80, cfg.form = forms[fi].f, cfg.chunk = forms[fi].C;
    gdn_outputs d, w;
    oracle_certificate cd, cw;
    mpfr_pair(&in, &cfg, &d, &w, &cd, &cw);
    ck_assert_msg(identical(&d, &w), "rank %d, form %d: dealt outputs differ", g_rank, fi);
    ck_assert_int_gt(cw.certified_bits, 60);
    ck_assert(cd.certified_bits == cw.certified_bits && cd.certified_o == cw.certified_o &&
              cd.certified_ht == cw.certified_ht && cd.floor_o == cw.floor_o && cd.floor_ht == cw.floor_ht &&
              cd.precision_bits == cw.precision_bits && cd.check_bits == cw.check_bits);
    gdn_outputs_clear(&d);
    gdn_outputs_clear(&w);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(dd_dealt_equals_whole) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 52);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs d, w;
  gdn_outputs_init(&d);
  gdn_outputs_init(&w);
  oracle_dd_certificate cd, cw;
  ck_assert_msg(parity_dist_oracle_dd(&in, &cfg, &d, &cd, &e) == GDN_OK, "dealt: %s", e.msg);
  ck_assert_msg(oracle_run_dd(&in, &cfg, &w, &cw, &e) == GDN_OK, "whole: %s", e.msg);
  ck_assert_msg(identical(&d, &w), "rank %d: dealt dd outputs differ", g_rank);
  ck_assert_int_gt(cw.certified_bits, 90);
  ck_assert_int_eq(cw.bound_violations, 0);
  ck_assert(cd.certified_bits == cw.certified_bits && cd.normwise_bits == cw.normwise_bits &&
            cd.floor_o == cw.floor_o && cd.floor_ht == cw.floor_ht && cd.guaranteed_bits == cw.guaranteed_bits &&
            cd.guaranteed_normwise == cw.guaranteed_normwise && cd.bound_violations == cw.bound_violations &&
            cd.sampled_columns == cw.sampled_columns && cd.total_columns == cw.total_columns);
  gdn_outputs_clear(&d);
  gdn_outputs_clear(&w);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(errors_agree) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 53);
  gdn_error ed, ew;
  otu_plant_dd_overflow(&in, &ew);
  gdn_error_init(&ed);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  gdn_outputs d;
  gdn_outputs_init(&d);
  oracle_dd_certificate c;
  ck_assert_int_eq(parity_dist_oracle_dd(&in, &cfg, &d, &c, &ed), GDN_ERR_INPUT);
  ck_assert_str_eq(ed.msg, ew.msg);
  ck_assert_ptr_null(d.o);
  cfg.sample_columns = -1; /* a config error, every rank's */
  ck_assert_int_eq(oracle_run_dd(&in, &cfg, &d, &c, &ew), GDN_ERR_INPUT);
  ck_assert_int_eq(parity_dist_oracle_dd(&in, &cfg, &d, &c, &ed), GDN_ERR_INPUT);
  ck_assert_str_eq(ed.msg, ew.msg);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(wrong_subset_caught) {
  if (g_size < 2) return; /* one rank deals nothing */
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 54);
  oracle_config cfg;
  oracle_config_init(&cfg);
  cfg.prec = 64;
  setenv("GDN_TEST_MPI_DIE", "1:oracle-deal", 1);
  gdn_outputs d, w;
  oracle_certificate cd, cw;
  mpfr_pair(&in, &cfg, &d, &w, &cd, &cw);
  unsetenv("GDN_TEST_MPI_DIE");
  ck_assert_msg(!identical(&d, &w), "rank %d: rank 1 computing the wrong heads went unnoticed", g_rank);
  gdn_outputs_clear(&d);
  gdn_outputs_clear(&w);
  gdn_inputs_clear(&in);
}
END_TEST

/* The MPFR VJP by items (b, key head): 2 x 2 items of G = 2 value heads. */
START_TEST(vjp_dealt_equals_whole) {
  const gdn_shape vs = {2, 13, 2, 4, 8, 12};
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_error e;
  gdn_error_init(&e);
  gdn_synth_opts o = {55, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&in, &vs, &o, &e), GDN_OK);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert_int_eq(gdn_cotangents_alloc(&ct, &vs, 1, &e), GDN_OK);
  gdn_cotangents_synth(&ct, 55);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.prec = 80;
  gdn_grads d, w;
  gdn_grads_init(&d);
  gdn_grads_init(&w);
  oracle_vjp_certificate cd, cw;
  ck_assert_msg(parity_dist_oracle_vjp(&in, &ct, &cfg, &d, &cd, &e) == GDN_OK, "dealt: %s", e.msg);
  ck_assert_msg(oracle_vjp_certified(&in, &ct, &cfg, &w, &cw, &e) == GDN_OK, "whole: %s", e.msg);
  const size_t qk = gdn_shape_numel_qk(&vs), v = gdn_shape_numel_v(&vs), g = gdn_shape_numel_gate(&vs),
               h = gdn_shape_numel_state(&vs);
  ck_assert_msg(!memcmp(d.dq, w.dq, qk * 8) && !memcmp(d.dk, w.dk, qk * 8) && !memcmp(d.dv, w.dv, v * 8) &&
                    !memcmp(d.dg, w.dg, g * 8) && !memcmp(d.dbeta, w.dbeta, g * 8) && !memcmp(d.dh0, w.dh0, h * 8),
                "rank %d: dealt gradients differ", g_rank);
  ck_assert_int_gt(cw.certified_bits, 50);
  ck_assert(!memcmp(cd.certified, cw.certified, sizeof cw.certified) && cd.certified_bits == cw.certified_bits &&
            !memcmp(cd.floor, cw.floor, sizeof cw.floor));
  gdn_grads_clear(&d);
  gdn_grads_clear(&w);
  /* the dd tier's VJP */
  oracle_vjp_dd_config dc;
  oracle_vjp_dd_config_init(&dc);
  oracle_vjp_dd_certificate dd, dw;
  ck_assert_msg(parity_dist_oracle_vjp_dd(&in, &ct, &dc, &d, &dd, &e) == GDN_OK, "dealt dd: %s", e.msg);
  ck_assert_msg(oracle_vjp_dd(&in, &ct, &dc, &w, &dw, &e) == GDN_OK, "whole dd: %s", e.msg);
  ck_assert_msg(!memcmp(d.dq, w.dq, qk * 8) && !memcmp(d.dk, w.dk, qk * 8) && !memcmp(d.dv, w.dv, v * 8) &&
                    !memcmp(d.dg, w.dg, g * 8) && !memcmp(d.dbeta, w.dbeta, g * 8) && !memcmp(d.dh0, w.dh0, h * 8),
                "rank %d: dealt dd gradients differ", g_rank);
  ck_assert_int_gt(dw.certified_bits, 90);
  ck_assert(!memcmp(&dd, &dw, sizeof dw));
  gdn_grads_clear(&d);
  gdn_grads_clear(&w);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_threads_set(2);
  if (parity_dist_start(&argc, &argv, &e)) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  g_rank = parity_dist_rank();
  g_size = parity_dist_size();
  parity_dist_set_collective(1);
  Suite *su = suite_create("mpi_oracle");
  CKR_TCASE(su, "ranks", 600, mpfr_dealt_equals_whole, dd_dealt_equals_whole, errors_agree, wrong_subset_caught,
      vjp_dealt_equals_whole);
  int failed = ckr_run_with(su, CK_NOFORK, g_rank == 0 ? CK_NORMAL : CK_SILENT);
  int any = 0; /* a rank that failed mid-test may be between collectives: end them all */
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  parity_dist_end();
  return any ? 1 : 0;
}
