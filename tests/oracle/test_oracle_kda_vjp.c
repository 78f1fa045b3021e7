/* KDA's VJP oracle (oracle_kda_vjp.h): a float64 reverse loop written here
 * (every state stored, the L2 norm's backward by hand) agrees with it to
 * 1e-13 normwise on every gradient; the certificate certifies ~p bits and
 * the results do not depend on threads or checkpoints; with every channel's
 * gate equal to GDN's scalar gate, dq dk dv dbeta dh0 are oracle_vjp's bits
 * and the channels' dg add up to GDN's dg within the roundings of the sums. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_alloc.h"
#include "../test_util_synth.h"
#include "gdn_alloc.h"
#include "gdn_chgate.h"
#include "gdn_threads.h"
#include "oracle_kda_vjp.h"

static const gdn_shape SHAPE = {1, 24, 1, 2, 5, 4}; /* B T Hk Hv Dk Dv: GQA 2 */

static gdn_grads run(const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, int64_t ckpt,
                     oracle_vjp_certificate *cert) {
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.checkpoint = ckpt;
  gdn_grads out;
  gdn_grads_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_kda_vjp(in, g, ct, &cfg, &out, cert, &e) == GDN_OK, "%s", e.msg);
  return out;
}

/* ---- the float64 reverse loop of the test: forward storing every state ---- */

/* prepared row X = r x, r = scale / sqrt(ss + eps) (L2 norm) or scale. */
static double prep(const float *x, int64_t n, int l2, double scale, double *X, double *ss) {
  double s2 = 0;
  for (int64_t i = 0; i < n; i++) s2 += (double)x[i] * x[i];
  *ss = s2 + 1e-6;
  const double r = l2 ? scale / sqrt(*ss) : scale;
  for (int64_t i = 0; i < n; i++) X[i] = r * x[i];
  return r;
}

static void back(const float *x, int64_t n, int l2, double r, double ss, const double *dX, double *dx) {
  double xd = 0;
  for (int64_t i = 0; i < n; i++) xd += (double)x[i] * dX[i];
  for (int64_t i = 0; i < n; i++) dx[i] += l2 ? r * (dX[i] - xd / ss * x[i]) : r * dX[i];
}

static void ref_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, gdn_grads *gr) {
  const gdn_shape *s = &in->shape;
  const int64_t T = s->T, Dk = s->Dk, Dv = s->Dv, SZ = Dk * Dv;
  const double scale = in->has_scale ? in->scale : 1 / sqrt((double)Dk);
  double *H = calloc((size_t)((T + 1) * SZ), sizeof(double)), *S = calloc((size_t)SZ, sizeof(double));
  double K[64], Q[64], dK[64], dQ[64], kss, qss, hp[4096], kv[64], dd[64];
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t j = 0; j < s->Hv; j++) {
      const int64_t kh = gdn_inputs_key_head(in, j);
      const float *h0 = gdn_inputs_h0(in, b, j);
      for (int64_t x = 0; x < SZ; x++) H[x] = h0 ? h0[x] : 0;
      for (int64_t t = 0; t < T; t++) {
        prep(gdn_inputs_k(in, b, t, kh), Dk, in->l2norm_in_kernel, 1, K, &kss);
        const float *g = gdn_chgate_row(gate->g, s, b, t, j), *v = gdn_inputs_v(in, b, t, j);
        const double beta = gdn_inputs_beta(in, b, t, j);
        double *h = H + (t + 1) * SZ;
        for (int64_t x = 0; x < SZ; x++) h[x] = exp((double)g[x / Dv]) * H[t * SZ + x];
        for (int64_t c = 0; c < Dv; c++) {
          double a = 0;
          for (int64_t i = 0; i < Dk; i++) a += h[i * Dv + c] * K[i];
          for (int64_t i = 0; i < Dk; i++) h[i * Dv + c] += K[i] * beta * (v[c] - a);
        }
      }
      const float *dht = ct->dht ? ct->dht + (b * s->Hv + j) * SZ : NULL;
      for (int64_t x = 0; x < SZ; x++) S[x] = dht ? dht[x] : 0;
      for (int64_t t = T - 1; t >= 0; t--) {
        const double kr = prep(gdn_inputs_k(in, b, t, kh), Dk, in->l2norm_in_kernel, 1, K, &kss);
        const double qr = prep(gdn_inputs_q(in, b, t, kh), Dk, in->l2norm_in_kernel, scale, Q, &qss);
        const float *g = gdn_chgate_row(gate->g, s, b, t, j), *v = gdn_inputs_v(in, b, t, j);
        const float *dot = ct->d_o + ((b * T + t) * s->Hv + j) * Dv;
        const double beta = gdn_inputs_beta(in, b, t, j);
        const int64_t gi = (b * T + t) * s->Hv + j, qk = ((b * T + t) * s->Hk + kh) * Dk;
        for (int64_t x = 0; x < SZ; x++) hp[x] = exp((double)g[x / Dv]) * H[t * SZ + x];
        for (int64_t i = 0; i < Dk; i++) dK[i] = dQ[i] = 0, gr->dg[gi * Dk + i] = 0;
        double db = 0;
        for (int64_t c = 0; c < Dv; c++) {
          kv[c] = 0;
          for (int64_t i = 0; i < Dk; i++) kv[c] += hp[i * Dv + c] * K[i];
          const double vm = v[c] - kv[c], delta = beta * vm;
          dd[c] = 0;
          for (int64_t i = 0; i < Dk; i++) {
            dQ[i] += H[(t + 1) * SZ + i * Dv + c] * dot[c];
            S[i * Dv + c] += Q[i] * dot[c];
            dd[c] += K[i] * S[i * Dv + c];
            dK[i] += S[i * Dv + c] * delta;
          }
          db += dd[c] * vm;
          gr->dv[gi * Dv + c] = beta * dd[c];
          for (int64_t i = 0; i < Dk; i++) {
            dK[i] -= hp[i * Dv + c] * beta * dd[c];
            S[i * Dv + c] -= K[i] * beta * dd[c];
            gr->dg[gi * Dk + i] += S[i * Dv + c] * hp[i * Dv + c];
            S[i * Dv + c] *= exp((double)g[i]);
          }
        }
        gr->dbeta[gi] = db;
        back(gdn_inputs_k(in, b, t, kh), Dk, in->l2norm_in_kernel, kr, kss, dK, gr->dk + qk);
        back(gdn_inputs_q(in, b, t, kh), Dk, in->l2norm_in_kernel, qr, qss, dQ, gr->dq + qk);
      }
      memcpy(gr->dh0 + (b * s->Hv + j) * SZ, S, (size_t)SZ * sizeof(double));
    }
  free(H);
  free(S);
}

static double normwise(const double *x, const double *r, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabs(x[i] - r[i]) > d) d = fabs(x[i] - r[i]);
    if (fabs(r[i]) > m) m = fabs(r[i]);
  }
  return m > 0 ? d / m : d;
}

START_TEST(test_reverse_loop_f64) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 7);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 8);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &SHAPE, 7, &e), GDN_OK);
  oracle_vjp_certificate cert;
  gdn_threads_set(1);
  gdn_grads o = run(&in, &g, &ct, 0, &cert), r;
  gdn_grads_init(&r);
  ck_assert_int_eq(gdn_chgrads_alloc(&r, &SHAPE, GDN_DTYPE_F64, &e), GDN_OK);
  ref_vjp(&in, &g, &ct, &r);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double err = normwise(gdn_grads_tensor(&o, (gdn_grad_id)id), gdn_grads_tensor(&r, (gdn_grad_id)id),
                                gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id));
    fprintf(stderr, "%s: normwise %.3e against the float64 reverse loop\n", gdn_grads_name(id), err);
    ck_assert_msg(err < 1e-13, "%s: normwise %.3e against the float64 reverse loop", gdn_grads_name(id), err);
  }
  ck_assert_int_ge(cert.certified_bits, 110);
  /* threads and checkpoints change no bit */
  gdn_threads_set(3);
  gdn_grads o2 = run(&in, &g, &ct, 5, NULL);
  for (int id = 0; id < GDN_GRADS_N; id++)
    ck_assert(memcmp(gdn_grads_tensor(&o, (gdn_grad_id)id), gdn_grads_tensor(&o2, (gdn_grad_id)id),
                     gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double)) == 0);
  gdn_threads_set(1);
  gdn_grads_clear(&o), gdn_grads_clear(&o2), gdn_grads_clear(&r);
  gdn_chgate_clear(&g);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

/* Equal channel gates: every operation but dg's is the GDN VJP's, so those
 * gradients are oracle_vjp's bits.  dg: each channel's value and GDN's are
 * certified roundings of exact values whose sum relation is exact
 * (sum_i dg_i = dg), so the binary64 sum of the Dk rounded channel values
 * differs from GDN's rounded dg by at most (Dk - 1) u sum|dg_i| (the sum)
 * + u sum|dg_i| (the channels' roundings) + u |dg| (GDN's): within
 * (Dk + 2) 2^-53 sum_i |dg_i|. */
START_TEST(test_equal_gates_is_gdn) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 11);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 12);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_from_scalar(&g, &in, &e), GDN_OK);
  gdn_grads k = run(&in, &g, &ct, 0, NULL), gd;
  gdn_grads_init(&gd);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  ck_assert_msg(oracle_vjp(&in, &ct, &cfg, &gd, &e) == GDN_OK, "%s", e.msg);
  const gdn_grad_id same[] = {GDN_GRAD_DQ, GDN_GRAD_DK, GDN_GRAD_DV, GDN_GRAD_DBETA, GDN_GRAD_DH0};
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
    ck_assert_msg(memcmp(gdn_grads_tensor(&k, same[i]), gdn_grads_tensor(&gd, same[i]),
                         gdn_grads_numel(&SHAPE, same[i]) * sizeof(double)) == 0,
                  "%s differs from GDN's", gdn_grads_name(same[i]));
  const size_t n = gdn_shape_numel_gate(&SHAPE);
  double worst = 0;
  for (size_t x = 0; x < n; x++) {
    double sum = 0, mag = 0;
    for (int64_t i = 0; i < SHAPE.Dk; i++) sum += k.dg[x * SHAPE.Dk + i], mag += fabs(k.dg[x * SHAPE.Dk + i]);
    const double bound = (double)(SHAPE.Dk + 2) * 0x1p-53 * mag;
    ck_assert_msg(fabs(sum - gd.dg[x]) <= bound, "dg[%zu]: channels sum %.17g, GDN %.17g", x, sum, gd.dg[x]);
    if (mag > 0 && fabs(sum - gd.dg[x]) / mag > worst) worst = fabs(sum - gd.dg[x]) / mag;
  }
  fprintf(stderr, "equal gates: worst |sum_i dg_i - dg_gdn| / sum_i |dg_i| = %.3e\n", worst);
  ck_assert(worst < 1e-15);
  gdn_grads_clear(&k), gdn_grads_clear(&gd);
  gdn_chgate_clear(&g);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(test_refusals) {
  gdn_inputs in = tsu_inputs(SHAPE, 0, 3);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 0, 4);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads out;
  gdn_grads_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(oracle_kda_vjp(&in, NULL, &ct, &cfg, &out, NULL, &e), GDN_ERR_INPUT);
  ck_assert(strstr(e.msg, "gate"));
  ck_assert(out.dq == NULL);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

/* Every allocation failing in turn: GDN_ERR_NOMEM, the gradients left
 * cleared, nothing leaked; the run that succeeds gives the reference bits. */
typedef struct alloc_ctx {
  gdn_inputs in;
  gdn_chgate g;
  gdn_cotangents ct;
  gdn_grads out, ref;
} alloc_ctx;

static int alloc_run(void *c, gdn_error *e) {
  alloc_ctx *x = c;
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  oracle_vjp_certificate cert;
  return oracle_kda_vjp(&x->in, &x->g, &x->ct, &cfg, &x->out, &cert, e);
}
static void alloc_failed(void *c, long n, int rc, const gdn_error *e) {
  alloc_ctx *x = c;
  ck_assert_msg(rc == GDN_ERR_NOMEM, "allocation %ld: %d %s", n, rc, e->msg);
  ck_assert_ptr_null(x->out.dg);
}
static void alloc_succeeded(void *c) {
  alloc_ctx *x = c;
  ck_assert(memcmp(x->out.dg, x->ref.dg, gdn_chgrads_numel(&x->ref.shape, GDN_GRAD_DG) * sizeof(double)) == 0);
  gdn_grads_clear(&x->out);
}

START_TEST(test_alloc_fail) {
  alloc_ctx x;
  const gdn_shape s = {1, 5, 1, 2, 3, 3};
  x.in = tsu_inputs(s, 0, 33);
  x.ct = tsu_cotangents(&s, 1, 34);
  gdn_chgate_init(&x.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&x.g, &s, 33, &e), GDN_OK);
  gdn_grads_init(&x.out);
  x.ref = run(&x.in, &x.g, &x.ct, 0, NULL);
  tua_ops ops = {NULL, alloc_run, alloc_failed, alloc_succeeded, NULL, 200};
  ck_assert_int_ge(tua_sweep(&ops, &x), 4);
  gdn_grads_clear(&x.ref);
  gdn_chgate_clear(&x.g);
  gdn_cotangents_clear(&x.ct);
  gdn_inputs_clear(&x.in);
}
END_TEST

CKR_MAIN("oracle", "kda_vjp", 120, test_reverse_loop_f64, test_equal_gates_is_gdn, test_refusals, test_alloc_fail)
