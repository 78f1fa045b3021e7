/* The KDA oracle (oracle_kda.h) on its own: the certified run returns the
 * uncertified run's bits and certifies ~p bits; any thread count and column
 * block give the same bits; decays per channel are really per channel (a
 * hand-worked case); what it refuses it names; allocation failures leave
 * the outputs cleared; the dd tier agrees with it and certifies itself,
 * and run by key-head groups (oracle_kda_run_dd_part) gives the whole run's
 * outputs and, its tallies merged, its certificate bit for bit. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_alloc.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_threads.h"
#include "oracle_kda.h"
#include "oracle_part.h"

static const gdn_shape SHAPE = {1, 40, 1, 2, 6, 5};

static gdn_outputs run(const gdn_inputs *in, const gdn_chgate *g, int64_t column_block, oracle_certificate *cert) {
  oracle_config cfg;
  oracle_config_init(&cfg);
  cfg.column_block = column_block;
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_kda_run(in, g, &cfg, &out, cert, &e) == GDN_OK, "%s", e.msg);
  return out;
}

static void same_bits(const gdn_outputs *a, const gdn_outputs *b) {
  ck_assert(memcmp(a->o, b->o, gdn_shape_numel_v(&a->shape) * sizeof(double)) == 0);
  ck_assert(memcmp(a->ht, b->ht, gdn_shape_numel_state(&a->shape) * sizeof(double)) == 0);
}

START_TEST(test_certified_and_threads) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 31);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &SHAPE, 31, &e), GDN_OK);
  oracle_certificate cert;
  gdn_threads_set(1);
  gdn_outputs a = run(&in, &g, 0, NULL), b = run(&in, &g, 0, &cert);
  gdn_threads_set(3);
  gdn_outputs c = run(&in, &g, 2, NULL);
  same_bits(&a, &b);
  same_bits(&a, &c);
  /* 128 bits working, 192 checking: a contractive recurrence of 40 steps
   * loses a few bits at most */
  ck_assert_int_eq(cert.precision_bits, 128);
  ck_assert_int_eq(cert.check_bits, 192);
  ck_assert_int_ge(cert.certified_bits, 110);
  gdn_outputs_clear(&a), gdn_outputs_clear(&b), gdn_outputs_clear(&c);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

/* One head, Dk = Dv = 2, beta = 1, no L2 norm, scale 1.  t = 0: k = e_0,
 * v = (3, 5) writes S = e_0 v^T.  t = 1: g = (log 1/2, log 1/4) decays row 0
 * by 1/2 and row 1 by 1/4; k = e_1, v = 0 writes nothing (row 1 is zero);
 * q = e_0 reads row 0: o_1 = (1.5, 2.5).  The gate on the value axis would
 * read (1.5, 1.25) instead. */
START_TEST(test_hand_worked) {
  const gdn_shape s = {1, 2, 1, 1, 2, 2};
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_alloc(&in, &s, 0, &e), GDN_OK);
  in.l2norm_in_kernel = 0;
  in.has_scale = 1;
  in.scale = 1.0;
  in.k[0] = 1, in.v[0] = 3, in.v[1] = 5, in.beta[0] = 1; /* t = 0: S = e_0 v^T */
  in.q[2] = 1, in.k[3] = 1, in.beta[1] = 1;            /* t = 1: q = e_0, k = e_1, v = 0 */
  gdn_chgate g;
  gdn_chgate_init(&g);
  ck_assert_int_eq(gdn_chgate_alloc(&g, &s, &e), GDN_OK);
  g.g[2] = (float)log(0.5), g.g[3] = (float)log(0.25);
  gdn_outputs out = run(&in, &g, 0, NULL);
  /* exp of the float32 log: within 2^-24 relative of 1/2 */
  ck_assert_double_eq_tol(out.o[2], 1.5, 1.5 * 0x1p-22);
  ck_assert_double_eq_tol(out.o[3], 2.5, 2.5 * 0x1p-22);
  ck_assert_double_eq(out.ht[2], 0.0); /* row 1: decayed zero, then k = e_1 writes beta (0 - 0) */
  gdn_outputs_clear(&out);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(test_refusals) {
  gdn_inputs in = tsu_inputs(SHAPE, 0, 32);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &SHAPE, 32, &e), GDN_OK);
  oracle_config cfg;
  oracle_config_init(&cfg);
  gdn_outputs out;
  gdn_outputs_init(&out);
  cfg.form = ORACLE_FORM_CHUNKED;
  ck_assert_int_eq(oracle_kda_run(&in, &g, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "token form"));
  cfg.form = ORACLE_FORM_TOKEN;
  g.g[(size_t)(1 * SHAPE.Hv + 1) * SHAPE.Dk + 3] = NAN; /* b 0, t 1, head 1, channel 3 */
  ck_assert_int_eq(oracle_kda_run(&in, &g, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "g[0, 1, 1, 3]"), "%s", e.msg);
  gdn_chgate other;
  gdn_chgate_init(&other);
  gdn_shape s2 = SHAPE;
  s2.T = 39;
  ck_assert_int_eq(gdn_chgate_alloc(&other, &s2, &e), GDN_OK);
  ck_assert_int_eq(oracle_kda_run(&in, &other, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "(1, 39, 2, 6)"));
  ck_assert_int_eq(oracle_kda_run(&in, NULL, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(gdn_inputs_alloc_seg(&in, &e), GDN_OK);
  ck_assert_int_eq(oracle_kda_run(&in, &other, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "segment ids"));
  ck_assert_ptr_null(out.o);
  gdn_chgate_clear(&other);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

typedef struct alloc_ctx {
  gdn_inputs in;
  gdn_chgate g;
  gdn_outputs out, ref;
} alloc_ctx;

static int alloc_run(void *c, gdn_error *e) {
  alloc_ctx *x = c;
  oracle_config cfg;
  oracle_config_init(&cfg);
  oracle_certificate cert;
  return oracle_kda_run(&x->in, &x->g, &cfg, &x->out, &cert, e);
}
static void alloc_failed(void *c, long n, int rc, const gdn_error *e) {
  alloc_ctx *x = c;
  ck_assert_msg(rc == GDN_ERR_NOMEM, "allocation %ld: %d %s", n, rc, e->msg);
  ck_assert_ptr_null(x->out.o);
}
static void alloc_succeeded(void *c) {
  alloc_ctx *x = c;
  ck_assert(memcmp(x->out.o, x->ref.o, gdn_shape_numel_v(&x->ref.shape) * sizeof(double)) == 0);
  gdn_outputs_clear(&x->out);
}

START_TEST(test_alloc_fail) {
  alloc_ctx x;
  const gdn_shape s = {1, 5, 1, 2, 3, 3};
  x.in = tsu_inputs(s, 0, 33);
  gdn_chgate_init(&x.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&x.g, &s, 33, &e), GDN_OK);
  gdn_outputs_init(&x.out);
  x.ref = run(&x.in, &x.g, 0, NULL);
  tua_ops ops = {NULL, alloc_run, alloc_failed, alloc_succeeded, NULL, 200};
  ck_assert_int_ge(tua_sweep(&ops, &x), 4);
  gdn_outputs_clear(&x.ref);
  gdn_chgate_clear(&x.g);
  gdn_inputs_clear(&x.in);
}
END_TEST

/* The dd tier against the MPFR oracle: every column sampled, so the
 * certificate covers every element; the binary64 outputs agree to 52 bits
 * at least (the hi words are the double-word values rounded, the MPFR
 * values rounded: at most one ulp apart, where the exact value lies within
 * ~2^-106 of a midpoint); any thread count gives the same bits; with the
 * default two sampled columns the certificate holds the same floors. */
START_TEST(test_dd_tier) {
  const gdn_shape s = {2, 60, 1, 2, 8, 6};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 34);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &s, 34, &e), GDN_OK);
  gdn_outputs ref = run(&in, &g, 0, NULL), dd1, dd3;
  gdn_outputs_init(&dd1), gdn_outputs_init(&dd3);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  cfg.sample_columns = s.Dv;
  oracle_dd_certificate c1, c3;
  gdn_threads_set(1);
  ck_assert_msg(oracle_kda_run_dd(&in, &g, &cfg, &dd1, &c1, &e) == GDN_OK, "%s", e.msg);
  /* as the GDN dd tier's test asserts (test_oracle_dd_cert): elementwise
   * >= 85 (an element with cancellation loses some), normwise >= 100;
   * measured here 93 elementwise, 104 normwise */
  ck_assert_int_ge(c1.certified_bits, 85);
  ck_assert_int_ge(c1.normwise_bits, 100);
  ck_assert_int_eq(c1.sampled_columns, c1.total_columns);
  ck_assert_int_eq(c1.bound_violations, -1);
  ck_assert_int_ge(oracle_bits_agreed(&dd1, &ref, 53), 52);
  cfg.sample_columns = 2;
  gdn_threads_set(3);
  ck_assert_msg(oracle_kda_run_dd(&in, &g, &cfg, &dd3, &c3, &e) == GDN_OK, "%s", e.msg);
  same_bits(&dd1, &dd3); /* the sample changes no output either */
  ck_assert_int_ge(c3.certified_bits, 85);
  ck_assert_int_ge(c3.normwise_bits, 100);
  ck_assert_int_eq(c3.sampled_columns, 2 * s.B * s.Hv);
  /* the preparation is the same whether the sample provides it (at 128
   * bits) or not: no sample, or a sample at 160 bits, give the same bits */
  const int64_t cols[2] = {0, 2};
  for (int k = 0; k < 2; k++) {
    cfg.sample_columns = cols[k];
    cfg.sample_prec = k ? 160 : 128;
    gdn_outputs_clear(&dd3);
    ck_assert_msg(oracle_kda_run_dd(&in, &g, &cfg, &dd3, &c3, &e) == GDN_OK, "%s", e.msg);
    same_bits(&dd1, &dd3);
    ck_assert_int_eq(c3.certified_bits, k ? c3.certified_bits : 0);
    if (k) ck_assert_int_ge(c3.certified_bits, 85);
  }
  /* refusals as the MPFR tier's; the certificate is required */
  ck_assert_int_eq(oracle_kda_run_dd(&in, &g, &cfg, &dd3, NULL, &e), GDN_ERR_INTERNAL);
  ck_assert_int_eq(oracle_kda_run_dd(&in, NULL, &cfg, &dd3, &c3, &e), GDN_ERR_INPUT);
  gdn_outputs_clear(&dd1), gdn_outputs_clear(&dd3), gdn_outputs_clear(&ref);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

/* One group's dd part: key heads [k0, k1) of shape s, its sample placed in
 * the whole run (place) or by its own shape (not). */
static gdn_outputs dd_part(const gdn_shape *s, int64_t k0, int64_t k1, int place, oracle_tally *t) {
  gdn_error e;
  gdn_error_init(&e);
  const int64_t r = s->Hv / s->Hk;
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts so = {35, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate_heads(&in, s, k0, k1, &so, &e), GDN_OK);
  gdn_chgate g;
  gdn_chgate_init(&g);
  ck_assert_int_eq(gdn_chgate_draw_kimi_heads(&g, s, k0 * r, k1 * r, 35, &e), GDN_OK);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  if (place) cfg.head0 = k0 * r, cfg.whole_hv = s->Hv;
  gdn_outputs out;
  gdn_outputs_init(&out);
  ck_assert_msg(oracle_kda_run_dd_part(&in, &g, &cfg, &out, t, &e) == GDN_OK, "%s", e.msg);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return out;
}

/* The dd tier by key-head group: each group's o and ht the whole run's
 * heads bit for bit, and the groups' tallies merged read back as the whole
 * run's certificate, every field.  Negative control: groups whose sample
 * is placed by their own shape sample other columns (head 3's start moves),
 * and their merged certificate is not the whole run's. */
START_TEST(test_dd_parts) {
  const gdn_shape s = {2, 50, 3, 6, 8, 12}; /* Hk 3, Hv 6: groups of 1 and 2 key heads */
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 35);
  gdn_chgate g;
  gdn_chgate_init(&g);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &s, 35, &e), GDN_OK);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  gdn_outputs whole;
  gdn_outputs_init(&whole);
  oracle_dd_certificate cw, cp;
  ck_assert_msg(oracle_kda_run_dd(&in, &g, &cfg, &whole, &cw, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_ge(cw.certified_bits, 85);
  const int64_t cut[3] = {0, 1, 3}; /* groups [0, 1) and [1, 3) */
  for (int place = 1; place >= 0; place--) {
    oracle_tally sum;
    oracle_tally_init(&sum);
    for (int i = 0; i < 2; i++) {
      oracle_tally t;
      oracle_tally_init(&t);
      gdn_outputs part = dd_part(&s, cut[i], cut[i + 1], place, &t);
      const int64_t v0 = cut[i] * 2, nv = (cut[i + 1] - cut[i]) * 2;
      for (int64_t b = 0; b < s.B; b++) {
        for (int64_t tk = 0; tk < s.T; tk++)
          ck_assert(!memcmp(gdn_outputs_o(&part, b, tk, 0), gdn_outputs_o(&whole, b, tk, v0),
                            (size_t)(nv * s.Dv) * sizeof(double)));
        ck_assert(!memcmp(gdn_outputs_ht(&part, b, 0), gdn_outputs_ht(&whole, b, v0),
                          (size_t)(nv * s.Dk * s.Dv) * sizeof(double)));
      }
      if (i == 0) sum = t, oracle_tally_init(&t);
      else ck_assert_int_eq(oracle_tally_merge(&sum, &t, &e), GDN_OK);
      oracle_tally_clear(&t);
      gdn_outputs_clear(&part);
    }
    ck_assert_msg(oracle_kda_tally_dd_certificate(&sum, &s, &cfg, &cp, &e) == GDN_OK, "%s", e.msg);
    if (place) {
      ck_assert(!memcmp(&cp, &cw, sizeof cp));
    } else {
      const gdn_shape g2 = {s.B, s.T, 2, 4, s.Dk, s.Dv}; /* the second group's own shape */
      ck_assert_int_ne(oracle_dd_sample_start(&g2, cfg.sample_columns, 0, 1), oracle_dd_sample_start(&s, cfg.sample_columns, 0, 3));
      ck_assert(memcmp(&cp, &cw, sizeof cp) != 0);
    }
    oracle_tally_clear(&sum);
  }
  /* a tally of the other tier is refused by name */
  oracle_tally t;
  oracle_tally_init(&t);
  ck_assert_int_eq(oracle_tally_alloc(&t, ORACLE_TALLY_MPFR, 128, -1, &e), GDN_OK);
  ck_assert_int_eq(oracle_kda_tally_dd_certificate(&t, &s, &cfg, &cp, &e), GDN_ERR_INTERNAL);
  oracle_tally_clear(&t);
  /* a placement past the run is refused, nothing computed */
  cfg.head0 = 2, cfg.whole_hv = 6;
  gdn_outputs out;
  gdn_outputs_init(&out);
  ck_assert_int_eq(oracle_kda_run_dd_part(&in, &g, &cfg, &out, &t, &e), GDN_ERR_INPUT);
  ck_assert_ptr_null(out.o);
  ck_assert_msg(strstr(e.msg, "head0 + Hv > whole_hv") != NULL, "%s", e.msg);
  oracle_tally_clear(&t);
  gdn_outputs_clear(&whole);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle", "kda", 120, test_certified_and_threads, test_hand_worked, test_refusals, test_alloc_fail,
         test_dd_tier, test_dd_parts)
