/* oracle_vjp against central finite differences of the loss in MPFR.
 *
 * The loss L = sum(do .* o) + sum(dht .* ht) is computed here by a separate,
 * plain MPFR forward (not the oracle's code) at FD_PREC = 640 bits, with one
 * input element moved by +-h, h = 2^-100 times max(1, |x|).  The central
 * difference (L(x+h) - L(x-h)) / 2h differs from dL/dx by h^2 L'''/6 plus
 * the rounding of L, 2^-640 |L| / h: both below 2^-180 relative to the
 * gradients on these shapes (|L'''| is O(T Dk Dv) here, < 2^10).  The
 * oracle's gradient at p = 128 bits is certified to > 100 bits and then
 * rounded to binary64 (half an ulp, 2^-53 relative).  So every element must
 * agree with the finite difference to 52 bits relatively, or to 2^-100 of the
 * tensor's largest value for elements near zero (cancellation in a sum of
 * O(T Dk Dv) terms of size ~max can leave an element far smaller than its
 * terms; the oracle's absolute error there is ~2^-120 max).  A wrong
 * derivative of any one rule (the L2 norm, the gate, GQA's sum) is off by
 * O(1) relatively; the negative control moves one element by 2^-47 relative
 * and must fail the same check.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "gdn_alloc.h"
#include "gdn_grads.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"
#include "oracle_test_util.h"
#include "oracle_vjp.h"
#include "../check_runner.h"

enum { FD_PREC = 640 };

/* The inputs as MPFR numbers (FD_PREC bits, exact copies). */
typedef struct mp_in {
  mpfr_t *t[6]; /* q, k, v, g, beta, h0 (gdn_grad_id order) */
  size_t n[6];
} mp_in;

static const float *src_of(const gdn_inputs *in, int id) {
  const float *p[6] = {in->q, in->k, in->v, in->g, in->beta, in->h0};
  return p[id];
}

static void mp_in_load(mp_in *m, const gdn_inputs *in) {
  for (int id = 0; id < 6; id++) {
    m->n[id] = gdn_grads_numel(&in->shape, (gdn_grad_id)id);
    m->t[id] = malloc(m->n[id] * sizeof(mpfr_t));
    const float *x = src_of(in, id);
    for (size_t i = 0; i < m->n[id]; i++) {
      mpfr_init2(m->t[id][i], FD_PREC);
      mpfr_set_flt(m->t[id][i], x ? x[i] : 0.0f, MPFR_RNDN);
    }
  }
}

static void mp_in_clear(mp_in *m) {
  for (int id = 0; id < 6; id++) {
    for (size_t i = 0; i < m->n[id]; i++) mpfr_clear(m->t[id][i]);
    free(m->t[id]);
  }
}

/* X[0..Dk) = the prepared row (L2 norm, and the scale for q). */
static void prep(const gdn_inputs *in, mpfr_t *x, mpfr_t *X, int is_q) {
  const int64_t Dk = in->shape.Dk;
  mpfr_t f, t;
  mpfr_inits2(FD_PREC, f, t, (mpfr_ptr)0);
  mpfr_set_ui(f, 1, MPFR_RNDN);
  if (in->l2norm_in_kernel) {
    mpfr_set_d(f, 1e-6, MPFR_RNDN);
    for (int64_t i = 0; i < Dk; i++) {
      mpfr_sqr(t, x[i], MPFR_RNDN);
      mpfr_add(f, f, t, MPFR_RNDN);
    }
    mpfr_rec_sqrt(f, f, MPFR_RNDN);
  }
  if (is_q) {
    if (in->has_scale) mpfr_set_d(t, in->scale, MPFR_RNDN);
    else mpfr_set_si(t, (long)Dk, MPFR_RNDN), mpfr_rec_sqrt(t, t, MPFR_RNDN);
    mpfr_mul(f, f, t, MPFR_RNDN);
  }
  for (int64_t i = 0; i < Dk; i++) mpfr_mul(X[i], x[i], f, MPFR_RNDN);
  mpfr_clears(f, t, (mpfr_ptr)0);
}

/* L at FD_PREC, as h_t = a (h - beta K (K^T h)) + beta K v^T, o = h^T Q. */
static void loss(const gdn_inputs *in, const gdn_cotangents *ct, mp_in *m, mpfr_t L) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, G = s->Hv / s->Hk;
  mpfr_t *h = malloc((size_t)(Dk * Dv) * sizeof(mpfr_t)), *K = malloc((size_t)Dk * sizeof(mpfr_t)),
         *Q = malloc((size_t)Dk * sizeof(mpfr_t));
  for (int64_t i = 0; i < Dk * Dv; i++) mpfr_init2(h[i], FD_PREC);
  for (int64_t i = 0; i < Dk; i++) mpfr_init2(K[i], FD_PREC), mpfr_init2(Q[i], FD_PREC);
  mpfr_t a, kh, t, u;
  mpfr_inits2(FD_PREC, a, kh, t, u, (mpfr_ptr)0);
  mpfr_set_zero(L, 1);
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t j = 0; j < s->Hv; j++) {
      const int64_t hk = j / G;
      for (int64_t i = 0; i < Dk * Dv; i++) mpfr_set(h[i], m->t[5][(b * s->Hv + j) * Dk * Dv + i], MPFR_RNDN);
      for (int64_t tt = 0; tt < s->T; tt++) {
        const int64_t qk = ((b * s->T + tt) * s->Hk + hk) * Dk, gt = (b * s->T + tt) * s->Hv + j;
        prep(in, m->t[1] + qk, K, 0);
        prep(in, m->t[0] + qk, Q, 1);
        mpfr_exp(a, m->t[3][gt], MPFR_RNDN);
        for (int64_t c = 0; c < Dv; c++) {
          mpfr_set_zero(kh, 1);
          for (int64_t i = 0; i < Dk; i++) mpfr_fma(kh, K[i], h[i * Dv + c], kh, MPFR_RNDN);
          /* h_c = a h_c + K coef, coef = beta (v - a K^T h_c) */
          mpfr_mul(t, a, kh, MPFR_RNDN);
          mpfr_sub(t, m->t[2][gt * Dv + c], t, MPFR_RNDN);
          mpfr_mul(t, t, m->t[4][gt], MPFR_RNDN);
          for (int64_t i = 0; i < Dk; i++) {
            mpfr_ptr x = h[i * Dv + c];
            mpfr_mul(x, x, a, MPFR_RNDN);
            mpfr_fma(x, K[i], t, x, MPFR_RNDN);
          }
          mpfr_set_zero(u, 1);
          for (int64_t i = 0; i < Dk; i++) mpfr_fma(u, h[i * Dv + c], Q[i], u, MPFR_RNDN);
          mpfr_mul_d(u, u, (double)ct->d_o[gt * Dv + c], MPFR_RNDN);
          mpfr_add(L, L, u, MPFR_RNDN);
        }
      }
      if (ct->dht)
        for (int64_t i = 0; i < Dk * Dv; i++) {
          mpfr_mul_d(u, h[i], (double)ct->dht[(b * s->Hv + j) * Dk * Dv + i], MPFR_RNDN);
          mpfr_add(L, L, u, MPFR_RNDN);
        }
    }
  for (int64_t i = 0; i < Dk * Dv; i++) mpfr_clear(h[i]);
  for (int64_t i = 0; i < Dk; i++) mpfr_clear(K[i]), mpfr_clear(Q[i]);
  mpfr_clears(a, kh, t, u, (mpfr_ptr)0);
  free(h), free(K), free(Q);
}

/* The central difference of L in input (id, i). */
static double fd_grad(const gdn_inputs *in, const gdn_cotangents *ct, mp_in *m, int id, size_t i,
                      mpfr_t out) {
  mpfr_t x0, hh, Lp, Lm;
  mpfr_inits2(FD_PREC, x0, hh, Lp, Lm, (mpfr_ptr)0);
  mpfr_set(x0, m->t[id][i], MPFR_RNDN);
  double ax = fabs(mpfr_get_d(x0, MPFR_RNDN));
  mpfr_set_d(hh, ldexp(ax > 1 ? ax : 1.0, -100), MPFR_RNDN);
  mpfr_add(m->t[id][i], x0, hh, MPFR_RNDN);
  loss(in, ct, m, Lp);
  mpfr_sub(m->t[id][i], x0, hh, MPFR_RNDN);
  loss(in, ct, m, Lm);
  mpfr_set(m->t[id][i], x0, MPFR_RNDN);
  mpfr_sub(out, Lp, Lm, MPFR_RNDN);
  mpfr_div(out, out, hh, MPFR_RNDN);
  mpfr_div_2ui(out, out, 1, MPFR_RNDN);
  double d = mpfr_get_d(out, MPFR_RNDN);
  mpfr_clears(x0, hh, Lp, Lm, (mpfr_ptr)0);
  return d;
}

/* The test's rule (top of file): worst agreement in bits over a tensor, of
 * x against the finite differences fd. */
static double agree_bits(const double *x, const double *fd, size_t n) {
  double M = 0, worst = 999;
  for (size_t i = 0; i < n; i++) M = fabs(fd[i]) > M ? fabs(fd[i]) : M;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(x[i] - fd[i]);
    if (d == 0) continue;
    double rel = fabs(fd[i]) > ldexp(M, -100) ? fabs(fd[i]) : ldexp(M, -100);
    double b = log2(rel / d);
    if (b < worst) worst = b;
  }
  return worst;
}

static void run_vjp(const gdn_inputs *in, const gdn_cotangents *ct, long prec, int64_t K,
                    gdn_grads *g, oracle_vjp_certificate *cert) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.prec = prec;
  cfg.checkpoint = K;
  gdn_grads_init(g);
  int rc = cert ? oracle_vjp_certified(in, ct, &cfg, g, cert, &e) : oracle_vjp(in, ct, &cfg, g, &e);
  ck_assert_msg(rc == GDN_OK, "oracle_vjp: %s", e.msg);
}

/* Every gradient element against its finite difference; returns the worst
 * bits per tensor in bits[6]. */
static void fd_all(const gdn_inputs *in, const gdn_cotangents *ct, const gdn_grads *g, double bits[6],
                   gdn_grads *fd) {
  mp_in m;
  mp_in_load(&m, in);
  mpfr_t d;
  mpfr_init2(d, FD_PREC);
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads_init(fd);
  ck_assert(gdn_grads_alloc(fd, &in->shape, GDN_DTYPE_F64, &e) == GDN_OK);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    double *f = gdn_grads_tensor(fd, (gdn_grad_id)id);
    for (size_t i = 0; i < m.n[id]; i++) f[i] = fd_grad(in, ct, &m, id, i, d);
    bits[id] = agree_bits(gdn_grads_tensor_c(g, (gdn_grad_id)id), f, m.n[id]);
  }
  mpfr_clear(d);
  mp_in_clear(&m);
}

static void fd_case(gdn_shape s, unsigned flags, int with_dht, int has_scale) {
  gdn_inputs in = tsu_inputs(s, flags, 11);
  if (has_scale) in.has_scale = 1, in.scale = 0.3;
  gdn_cotangents ct = tsu_cotangents(&s, with_dht, 5);
  gdn_grads g, fd;
  oracle_vjp_certificate cert;
  run_vjp(&in, &ct, 128, 0, &g, &cert);
  ck_assert_msg(cert.certified_bits >= 100, "certified %d bits", cert.certified_bits);
  double bits[6];
  fd_all(&in, &ct, &g, bits, &fd);
  fprintf(stderr, "fd agreement (bits) dq %.1f dk %.1f dv %.1f dg %.1f dbeta %.1f dh0 %.1f; certified %d\n",
          bits[0], bits[1], bits[2], bits[3], bits[4], bits[5], cert.certified_bits);
  for (int id = 0; id < GDN_GRADS_N; id++)
    ck_assert_msg(bits[id] >= 52, "%s agrees with finite differences to %.1f bits only",
                  gdn_grads_name((gdn_grad_id)id), bits[id]);
  /* Negative control: one element of each tensor off by 2^-47 relative
   * (its largest, so the floor does not hide it) fails the same rule. */
  for (int id = 0; id < GDN_GRADS_N; id++) {
    double *x = gdn_grads_tensor(&g, (gdn_grad_id)id);
    size_t n = gdn_grads_numel(&s, (gdn_grad_id)id), im = 0;
    for (size_t i = 0; i < n; i++) im = fabs(x[i]) > fabs(x[im]) ? i : im;
    x[im] *= 1 + 0x1p-47;
    double b = agree_bits(x, gdn_grads_tensor_c(&fd, (gdn_grad_id)id), n);
    ck_assert_msg(b < 52, "planted 2^-47 in %s not seen (%.1f bits)", gdn_grads_name((gdn_grad_id)id), b);
  }
  gdn_grads_clear(&g);
  gdn_grads_clear(&fd);
  tsu_problem_clear(&in, &ct);
}

/* In-kernel L2 norm, grouped heads (Hv = 2 Hk), h0 and dht, B = 2. */
START_TEST(fd_l2norm_gqa_h0_dht) { fd_case((gdn_shape){2, 5, 1, 2, 4, 3}, GDN_SYNTH_H0, 1, 0); }
END_TEST

/* Pre-normalised q, k (no L2 norm), a given scale, no dht, slow gates. */
START_TEST(fd_prenorm_scale_slow) {
  fd_case((gdn_shape){1, 6, 2, 2, 3, 2}, GDN_SYNTH_QK_PRENORM | GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 0, 1);
}
END_TEST

/* No h0 given: dh0 is still the gradient at the zero state. */
START_TEST(fd_no_h0_slow) { fd_case((gdn_shape){1, 7, 1, 3, 3, 2}, GDN_SYNTH_SLOW_GATES, 1, 0); }
END_TEST

static int same(const gdn_grads *a, const gdn_grads *b) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_grads_numel(&a->shape, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

/* The checkpoint interval and the thread count never change a bit; the
 * certificate is the same too. */
START_TEST(checkpoint_and_threads_change_nothing) {
  gdn_inputs in = tsu_inputs((gdn_shape){2, 23, 2, 4, 5, 4}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 3);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 9);
  gdn_grads ref, g;
  oracle_vjp_certificate c0, c1;
  gdn_threads_set(1);
  run_vjp(&in, &ct, 96, 23, &ref, &c0);
  const int64_t Ks[] = {1, 2, 5, 0, 7, 100};
  for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++)
    for (int th = 1; th <= 2; th++) {
      gdn_threads_set(th);
      run_vjp(&in, &ct, 96, Ks[k], &g, &c1);
      ck_assert_msg(same(&g, &ref), "K = %lld, %d threads: gradients differ", (long long)Ks[k], th);
      ck_assert_int_eq(c1.certified_bits, c0.certified_bits);
      gdn_grads_clear(&g);
    }
  gdn_threads_set(2);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The certificate: at p = 128 the six tensors certify >= 100 bits (a
 * contractive recurrence over 40 tokens loses a few bits of 128); at p = 24
 * (float32's precision) it must say so, <= 24 bits and above 0 on inputs
 * whose gradients are not all zero.  p = 53's values rounded to binary64
 * agree with p = 128's to the bits the p = 53 certificate claims, less the
 * final rounding (one bit). */
START_TEST(certificate) {
  gdn_shape s = {1, 40, 1, 1, 8, 4};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 4);
  gdn_cotangents ct = tsu_cotangents(&s, 1, 2);
  gdn_grads g128, g53;
  oracle_vjp_certificate c128, c53, c24;
  run_vjp(&in, &ct, 128, 0, &g128, &c128);
  ck_assert_msg(c128.certified_bits >= 100, "p = 128: %d bits", c128.certified_bits);
  ck_assert_int_eq(c128.precision_bits, 128);
  ck_assert_int_eq(c128.check_bits, 192);
  run_vjp(&in, &ct, 53, 0, &g53, &c53);
  ck_assert(c53.certified_bits <= 53 && c53.certified_bits >= 30);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    double b = agree_bits(gdn_grads_tensor_c(&g53, (gdn_grad_id)id),
                          gdn_grads_tensor_c(&g128, (gdn_grad_id)id), gdn_grads_numel(&s, (gdn_grad_id)id));
    ck_assert_msg(b >= c53.certified[id] - 1 || c53.certified[id] >= 52,
                  "%s: p = 53 certified %d bits, agrees to %.1f", gdn_grads_name((gdn_grad_id)id),
                  c53.certified[id], b);
  }
  gdn_grads_clear(&g53);
  run_vjp(&in, &ct, 24, 0, &g53, &c24);
  ck_assert_msg(c24.certified_bits <= 24 && c24.certified_bits > 0, "p = 24: %d bits", c24.certified_bits);
  gdn_grads_clear(&g53);
  gdn_grads_clear(&g128);
  tsu_problem_clear(&in, &ct);
}
END_TEST

static void assert_cleared(const gdn_grads *g) {
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert(gdn_grads_tensor_c(g, (gdn_grad_id)id) == NULL);
}

static void expect_error(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                         int code, const char *needle) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads g;
  gdn_grads_init(&g);
  oracle_vjp_certificate cert;
  int rc = oracle_vjp_certified(in, ct, cfg, &g, &cert, &e);
  ck_assert_msg(rc == code, "expected code %d, got %d (%s)", code, rc, e.msg);
  ck_assert_msg(strstr(e.msg, needle), "message '%s' lacks '%s'", e.msg, needle);
  assert_cleared(&g);
  ck_assert_int_eq(cert.certified_bits, 0);
}

/* Bad configs and cotangents are refused by name, nothing left allocated. */
START_TEST(errors) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 4, 1, 1, 3, 2}, GDN_SYNTH_H0, 1);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 1);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.prec = 10;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "prec = 10 bits");
  oracle_vjp_config_init(&cfg);
  cfg.checkpoint = -1;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "checkpoint = -1");
  oracle_vjp_config_init(&cfg);
  cfg.check_prec = 100;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "check_prec = 100 bits");
  oracle_vjp_config_init(&cfg);
  ct.dht[5] = NAN;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "cotangent dht: non-finite value nan at flat index 5");
  ct.dht[5] = 0;
  ct.shape.T = 3;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "is not the inputs'");
  ct.shape.T = 4;
  float *d = ct.d_o;
  ct.d_o = NULL;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "cotangent do is missing");
  ct.d_o = d;
  in.beta[2] = 3.0f;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "beta");
  in.beta[2] = 0.5f;
  /* A gate beyond MPFR's exponent range (exp(3e38) overflows): the first
   * failed item is named (orc_vjp_report_fail, shared with the dd tier). */
  float g1 = in.g[1];
  in.g[1] = 3e38f;
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "oracle_vjp: ");
  expect_error(&in, &ct, &cfg, GDN_ERR_INPUT, "left MPFR's exponent range (a non-finite value) at b=0, key head 0");
  in.g[1] = g1;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(oracle_vjp_certified(&in, &ct, &cfg, NULL, NULL, &e), GDN_ERR_INTERNAL);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* One allocation-failure sweep of the certified VJP (tua_sweep): the run,
 * its undisturbed gradients and certificate, the attempt's. */
typedef struct vjp_sweep {
  const gdn_inputs *in;
  const gdn_cotangents *ct;
  oracle_vjp_config cfg;
  const gdn_grads *ref;
  int ref_bits;
  gdn_grads g;
  oracle_vjp_certificate cert;
} vjp_sweep;

static void vjp_sweep_prepare(void *p) { gdn_grads_init(&((vjp_sweep *)p)->g); }

static int vjp_sweep_run(void *p, gdn_error *e) {
  vjp_sweep *w = p;
  return oracle_vjp_certified(w->in, w->ct, &w->cfg, &w->g, &w->cert, e);
}

static void vjp_sweep_failed(void *p, long n, int rc, const gdn_error *e) {
  ck_assert_msg(rc == GDN_ERR_NOMEM && strstr(e->msg, "out of memory"), "allocation %ld: %d %s", n, rc, e->msg);
  assert_cleared(&((vjp_sweep *)p)->g);
}

static void vjp_sweep_succeeded(void *p) {
  vjp_sweep *w = p;
  ck_assert(same(&w->g, w->ref));
  ck_assert_int_eq(w->cert.certified_bits, w->ref_bits);
  gdn_grads_clear(&w->g);
}

/* Every allocation failing in turn: GDN_ERR_NOMEM naming what, the
 * gradients cleared; the run that succeeds equals an undisturbed one. */
START_TEST(alloc_failures) {
  gdn_threads_set(2);
  gdn_inputs in = tsu_inputs((gdn_shape){1, 9, 2, 2, 3, 2}, GDN_SYNTH_H0, 2);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 3);
  gdn_grads ref;
  oracle_vjp_certificate cref;
  run_vjp(&in, &ct, 64, 0, &ref, &cref);
  vjp_sweep w = {.in = &in, .ct = &ct, .ref = &ref, .ref_bits = cref.certified_bits};
  oracle_vjp_config_init(&w.cfg);
  w.cfg.prec = 64;
  const tua_ops ops = {vjp_sweep_prepare, vjp_sweep_run, vjp_sweep_failed, vjp_sweep_succeeded, NULL, 1000};
  const long sites = tua_sweep(&ops, &w);
  /* 6 gradients, item status, workers, then per worker (2 threads) two
   * workspaces, scratch and 6 accumulators. */
  ck_assert_msg(sites == 8 + 2 * 9, "%ld allocation sites", sites);
  gdn_grads_clear(&ref);
  tsu_problem_clear(&in, &ct);
}
END_TEST

int main(void) {
  Suite *su = suite_create("oracle_vjp");
  CKR_TCASE(su, "vjp", 120, fd_l2norm_gqa_h0_dht, fd_prenorm_scale_slow, fd_no_h0_slow,
      checkpoint_and_threads_change_nothing, certificate, errors, alloc_failures);
  int nf = ckr_run(su);
  mpfr_free_cache();
  return nf;
}
