/* The KDA VJP's double-word tier (oracle_kda_vjp.h, oracle_kda_vjp_dd):
 * against the MPFR VJP (oracle_kda_vjp at 128 bits) every gradient agrees to
 * within binary64's last bit (normwise <= 2^-52, at most 1 element in 20
 * differing; measured: all equal), and its certificate, sampling every
 * column, certifies >= 90 bits of the double-word values elementwise
 * (>= 100 normwise) against the MPFR sweep; with every channel's gate equal
 * to GDN's scalar gate, dq dk dv dbeta dh0 are the GDN dd VJP's bits and the
 * channels' dg add up to its dg; threads, checkpoints and the sample change
 * no bit.  Negative controls: an error planted in a sampled column's adjoint
 * drops the certificate; a gate moved by 1e-6 relative in one channel breaks
 * the agreement with the MPFR VJP of the unmoved gate; exp(g) beyond
 * binary64 and a missing gate are refused; every allocation failing in turn
 * leaves the gradients cleared.  Run by key-head groups
 * (oracle_kda_vjp_dd_part) it gives the whole run's gradients and, its
 * tallies merged, certificate bit for bit; without the placement the
 * groups sample other columns and the certificate is not the whole's. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_alloc.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_threads.h"
#include "oracle_kda_vjp.h"
#include "oracle_part.h"

static const gdn_shape SHAPE = {2, 20, 1, 2, 6, 5}; /* B T Hk Hv Dk Dv: GQA 2 */

static gdn_grads run_dd(const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, int64_t ns, int64_t ckpt,
                        oracle_vjp_dd_certificate *cert) {
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  cfg.sample_columns = ns;
  cfg.checkpoint = ckpt;
  gdn_grads out;
  gdn_grads_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_kda_vjp_dd(in, g, ct, &cfg, &out, cert, &e) == GDN_OK, "%s", e.msg);
  return out;
}

static gdn_grads run_mp(const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct) {
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads out;
  gdn_grads_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_kda_vjp(in, g, ct, &cfg, &out, NULL, &e) == GDN_OK, "%s", e.msg);
  return out;
}

static double normwise(const double *x, const double *r, size_t n, size_t *differ) {
  double d = 0, m = 0;
  *differ = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabs(x[i] - r[i]) > d) d = fabs(x[i] - r[i]);
    if (fabs(r[i]) > m) m = fabs(r[i]);
    *differ += x[i] != r[i];
  }
  return m > 0 ? d / m : d;
}

typedef struct fx {
  gdn_inputs in;
  gdn_cotangents ct;
  gdn_chgate g;
} fx;

static fx fx_make(uint64_t seed, int from_scalar) {
  fx f;
  f.in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  f.ct = tsu_cotangents(&f.in.shape, 1, seed + 1);
  gdn_chgate_init(&f.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(from_scalar ? gdn_chgate_from_scalar(&f.g, &f.in, &e) : gdn_chgate_draw_kimi(&f.g, &SHAPE, seed, &e),
                   GDN_OK);
  return f;
}

static void fx_clear(fx *f) {
  gdn_chgate_clear(&f->g);
  gdn_cotangents_clear(&f->ct);
  gdn_inputs_clear(&f->in);
}

START_TEST(test_against_mpfr) {
  fx f = fx_make(21, 0);
  oracle_vjp_dd_certificate cert;
  gdn_threads_set(1);
  gdn_grads d = run_dd(&f.in, &f.g, &f.ct, SHAPE.Dv, 0, &cert), m = run_mp(&f.in, &f.g, &f.ct);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const size_t n = gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id);
    size_t differ;
    const double err = normwise(gdn_grads_tensor(&d, (gdn_grad_id)id), gdn_grads_tensor(&m, (gdn_grad_id)id), n, &differ);
    fprintf(stderr, "%s: normwise %.3e against the MPFR VJP, %zu of %zu elements differ; certified %d bits\n",
            gdn_grads_name(id), err, differ, n, cert.certified[id]);
    ck_assert_msg(err <= 0x1p-52, "%s: normwise %.3e", gdn_grads_name(id), err);
    ck_assert_msg(differ * 20 <= n, "%s: %zu of %zu elements differ", gdn_grads_name(id), differ, n);
    ck_assert_int_ge(cert.certified[id], 90);
  }
  fprintf(stderr, "certificate: certified %d bits, normwise %d bits, %lld of %lld columns\n", cert.certified_bits,
          cert.normwise_bits, (long long)cert.sampled_columns, (long long)cert.total_columns);
  ck_assert_int_ge(cert.normwise_bits, 100);
  ck_assert_int_eq(cert.precision_bits, 106);
  ck_assert_int_eq(cert.sampled_columns, cert.total_columns);
  /* threads, checkpoints and the sample change no bit */
  gdn_threads_set(3);
  oracle_vjp_dd_certificate c2;
  gdn_grads d2 = run_dd(&f.in, &f.g, &f.ct, 2, 3, &c2);
  for (int id = 0; id < GDN_GRADS_N; id++)
    ck_assert_msg(memcmp(gdn_grads_tensor(&d, (gdn_grad_id)id), gdn_grads_tensor(&d2, (gdn_grad_id)id),
                         gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double)) == 0,
                  "%s differs across threads/checkpoints/sample", gdn_grads_name(id));
  ck_assert_int_eq(c2.sampled_columns, SHAPE.B * SHAPE.Hv * 2);
  ck_assert_int_ge(c2.certified_bits, 90);
  gdn_threads_set(1);
  gdn_grads_clear(&d), gdn_grads_clear(&d2), gdn_grads_clear(&m);
  fx_clear(&f);
}
END_TEST

/* Equal channel gates: the GDN dd VJP's bits but for dg, whose channels add
 * up to GDN's dg within the roundings (test_oracle_kda_vjp's bound). */
START_TEST(test_equal_gates_is_gdn_dd) {
  fx f = fx_make(31, 1);
  oracle_vjp_dd_certificate ck, cg;
  gdn_grads k = run_dd(&f.in, &f.g, &f.ct, 2, 0, &ck), gd;
  gdn_grads_init(&gd);
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_vjp_dd(&f.in, &f.ct, &cfg, &gd, &cg, &e) == GDN_OK, "%s", e.msg);
  const gdn_grad_id same[] = {GDN_GRAD_DQ, GDN_GRAD_DK, GDN_GRAD_DV, GDN_GRAD_DBETA, GDN_GRAD_DH0};
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
    ck_assert_msg(memcmp(gdn_grads_tensor(&k, same[i]), gdn_grads_tensor(&gd, same[i]),
                         gdn_grads_numel(&SHAPE, same[i]) * sizeof(double)) == 0,
                  "%s differs from the GDN dd VJP's", gdn_grads_name(same[i]));
  const size_t n = gdn_shape_numel_gate(&SHAPE);
  for (size_t x = 0; x < n; x++) {
    double sum = 0, mag = 0;
    for (int64_t i = 0; i < SHAPE.Dk; i++) sum += k.dg[x * SHAPE.Dk + i], mag += fabs(k.dg[x * SHAPE.Dk + i]);
    ck_assert_msg(fabs(sum - gd.dg[x]) <= (double)(SHAPE.Dk + 2) * 0x1p-53 * mag, "dg[%zu]: %.17g vs %.17g", x, sum,
                  gd.dg[x]);
  }
  ck_assert_int_ge(ck.certified_bits, 90);
  gdn_grads_clear(&k), gdn_grads_clear(&gd);
  fx_clear(&f);
}
END_TEST

/* Negative control of the certificate: a 2^-60 relative error planted in a
 * sampled column's adjoint halfway through is seen (certified < 70 bits). */
START_TEST(test_plant_drops_certificate) {
  fx f = fx_make(41, 0);
  oracle_vjp_dd_certificate c0, c1;
  gdn_grads d0 = run_dd(&f.in, &f.g, &f.ct, SHAPE.Dv, 0, &c0);
  oracle_kda_vjp_dd_test_plant(1, 0, 1, 2, SHAPE.T / 2, 0x1p-60);
  gdn_grads d1 = run_dd(&f.in, &f.g, &f.ct, SHAPE.Dv, 0, &c1);
  oracle_kda_vjp_dd_test_plant(0, 0, 0, -1, 0, 0);
  fprintf(stderr, "planted 2^-60: certified %d -> %d bits\n", c0.certified_bits, c1.certified_bits);
  ck_assert_int_ge(c0.certified_bits, 90);
  ck_assert_int_lt(c1.certified_bits, 70);
  ck_assert_int_ge(c1.certified_bits, 50);
  gdn_grads_clear(&d0), gdn_grads_clear(&d1);
  fx_clear(&f);
}
END_TEST

/* Negative control of the agreement: one channel of one token's gate moved
 * by 1e-6 relative; the dd VJP of that gate is judged against the MPFR VJP
 * of the original and dg's normwise error rises far above 2^-52 (measured 2.4e-10). */
START_TEST(test_perturbed_gate_breaks_agreement) {
  fx f = fx_make(51, 0);
  gdn_grads m = run_mp(&f.in, &f.g, &f.ct);
  const size_t at = (((size_t)1 * SHAPE.T + 7) * SHAPE.Hv + 1) * SHAPE.Dk + 3;
  f.g.g[at] *= 1.0f + 1e-6f; /* float: the smallest steps are ~6e-8 relative */
  oracle_vjp_dd_certificate c;
  gdn_grads d = run_dd(&f.in, &f.g, &f.ct, 2, 0, &c);
  size_t differ;
  const double err = normwise(d.dg, m.dg, gdn_chgrads_numel(&SHAPE, GDN_GRAD_DG), &differ);
  fprintf(stderr, "perturbed gate: dg normwise %.3e against the unperturbed MPFR VJP (%zu differ)\n", err, differ);
  ck_assert(err > 1e-10);
  ck_assert_int_ge(c.certified_bits, 90); /* the dd run itself is still right */
  gdn_grads_clear(&d), gdn_grads_clear(&m);
  fx_clear(&f);
}
END_TEST

START_TEST(test_refusals) {
  fx f = fx_make(61, 0);
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  oracle_vjp_dd_certificate cert;
  gdn_grads out;
  gdn_grads_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(oracle_kda_vjp_dd(&f.in, NULL, &f.ct, &cfg, &out, &cert, &e), GDN_ERR_INPUT);
  ck_assert(strstr(e.msg, "gate"));
  ck_assert_int_eq(oracle_kda_vjp_dd(&f.in, &f.g, &f.ct, &cfg, &out, NULL, &e), GDN_ERR_INTERNAL);
  f.g.g[((size_t)0 * SHAPE.T + 4) * SHAPE.Hv * SHAPE.Dk + 2] = 800.0f; /* exp overflows binary64 */
  gdn_error_init(&e);
  ck_assert_int_eq(oracle_kda_vjp_dd(&f.in, &f.g, &f.ct, &cfg, &out, &cert, &e), GDN_ERR_INPUT);
  fprintf(stderr, "refused: %s\n", e.msg);
  ck_assert(strstr(e.msg, "t=4"));
  ck_assert(out.dq == NULL);
  ck_assert_int_eq(cert.certified_bits, 0);
  fx_clear(&f);
}
END_TEST

/* Every allocation failing in turn: GDN_ERR_NOMEM, the gradients left
 * cleared and the certificate zeroed, nothing leaked; the run that
 * succeeds gives the reference bits. */
typedef struct alloc_ctx {
  fx f;
  gdn_grads out, ref;
  oracle_vjp_dd_certificate cert;
} alloc_ctx;

static int alloc_run(void *c, gdn_error *e) {
  alloc_ctx *x = c;
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  return oracle_kda_vjp_dd(&x->f.in, &x->f.g, &x->f.ct, &cfg, &x->out, &x->cert, e);
}
static void alloc_failed(void *c, long n, int rc, const gdn_error *e) {
  alloc_ctx *x = c;
  ck_assert_msg(rc == GDN_ERR_NOMEM, "allocation %ld: %d %s", n, rc, e->msg);
  ck_assert_ptr_null(x->out.dg);
  ck_assert_int_eq(x->cert.certified_bits, 0);
}
static void alloc_succeeded(void *c) {
  alloc_ctx *x = c;
  ck_assert(memcmp(x->out.dg, x->ref.dg, gdn_chgrads_numel(&SHAPE, GDN_GRAD_DG) * sizeof(double)) == 0);
  gdn_grads_clear(&x->out);
}

START_TEST(test_alloc_fail) {
  alloc_ctx x;
  x.f = fx_make(71, 0);
  gdn_grads_init(&x.out);
  oracle_vjp_dd_certificate c;
  x.ref = run_dd(&x.f.in, &x.f.g, &x.f.ct, 2, 0, &c);
  tua_ops ops = {NULL, alloc_run, alloc_failed, alloc_succeeded, NULL, 200};
  ck_assert_int_ge(tua_sweep(&ops, &x), 4);
  gdn_grads_clear(&x.ref);
  fx_clear(&x.f);
}
END_TEST

/* Elements per (b, t) row of gradient id (dh0: per b), and per head. */
static void grad_rows(const gdn_shape *s, gdn_grad_id id, int64_t *heads, int64_t *per_head, int64_t *rows) {
  const int key = id == GDN_GRAD_DQ || id == GDN_GRAD_DK;
  *heads = key ? s->Hk : s->Hv;
  *per_head = id == GDN_GRAD_DV ? s->Dv : id == GDN_GRAD_DBETA ? 1 : id == GDN_GRAD_DH0 ? s->Dk * s->Dv : s->Dk;
  *rows = id == GDN_GRAD_DH0 ? s->B : s->B * s->T;
}

/* Group [k0, k1) of the whole shape s: every gradient's rows equal the
 * whole run's at the group's heads. */
static void same_group_grads(const gdn_shape *s, gdn_grads *part, gdn_grads *whole, int64_t k0,
                             int64_t k1) {
  const int64_t r = s->Hv / s->Hk;
  const gdn_shape gs = {s->B, s->T, k1 - k0, (k1 - k0) * r, s->Dk, s->Dv};
  for (int id = 0; id < GDN_GRADS_N; id++) {
    int64_t H, n, rows, h, nn, rr;
    grad_rows(s, (gdn_grad_id)id, &H, &n, &rows);
    grad_rows(&gs, (gdn_grad_id)id, &h, &nn, &rr);
    const int64_t h0 = H == s->Hk ? k0 : k0 * r;
    const double *p = gdn_grads_tensor(part, (gdn_grad_id)id), *w = gdn_grads_tensor(whole, (gdn_grad_id)id);
    for (int64_t x = 0; x < rows; x++)
      ck_assert_msg(!memcmp(p + x * h * n, w + (x * H + h0) * n, (size_t)(h * n) * sizeof(double)),
                    "%s: row %lld of key heads %lld..%lld", gdn_grads_name(id), (long long)x, (long long)k0,
                    (long long)k1 - 1);
  }
}

/* One group's dd VJP part, its sample placed in the whole run or not. */
static gdn_grads vjp_dd_part(const gdn_shape *s, int64_t k0, int64_t k1, int place, oracle_tally *t) {
  gdn_error e;
  gdn_error_init(&e);
  const int64_t r = s->Hv / s->Hk;
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts so = {23, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate_heads(&in, s, k0, k1, &so, &e), GDN_OK);
  gdn_chgate g;
  gdn_chgate_init(&g);
  ck_assert_int_eq(gdn_chgate_draw_kimi_heads(&g, s, k0 * r, k1 * r, 23, &e), GDN_OK);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert_int_eq(gdn_cotangents_alloc(&ct, &in.shape, 1, &e), GDN_OK);
  gdn_cotangents_synth_heads(&ct, s->Hv, k0 * r, 24);
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  if (place) cfg.head0 = k0 * r, cfg.whole_hv = s->Hv;
  gdn_grads out;
  gdn_grads_init(&out);
  ck_assert_msg(oracle_kda_vjp_dd_part(&in, &g, &ct, &cfg, &out, t, &e) == GDN_OK, "%s", e.msg);
  tsu_problem_clear(&in, &ct);
  gdn_chgate_clear(&g);
  return out;
}

START_TEST(test_parts) {
  const gdn_shape s = {2, 24, 3, 6, 6, 10}; /* Hk 3, Hv 6: groups [0, 1) and [1, 3) */
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 23);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 24);
  gdn_chgate g;
  gdn_chgate_init(&g);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &s, 23, &e), GDN_OK);
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  gdn_grads whole;
  gdn_grads_init(&whole);
  oracle_vjp_dd_certificate cw, cp;
  ck_assert_msg(oracle_kda_vjp_dd(&in, &g, &ct, &cfg, &whole, &cw, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_ge(cw.certified_bits, 90);
  const int64_t cut[3] = {0, 1, 3};
  for (int place = 1; place >= 0; place--) {
    oracle_tally sum;
    oracle_tally_init(&sum);
    for (int i = 0; i < 2; i++) {
      oracle_tally t;
      oracle_tally_init(&t);
      gdn_grads part = vjp_dd_part(&s, cut[i], cut[i + 1], place, &t);
      same_group_grads(&s, &part, &whole, cut[i], cut[i + 1]);
      if (i == 0) sum = t, oracle_tally_init(&t);
      else ck_assert_int_eq(oracle_tally_merge(&sum, &t, &e), GDN_OK);
      oracle_tally_clear(&t);
      gdn_grads_clear(&part);
    }
    ck_assert_msg(oracle_tally_vjp_dd_certificate(&sum, &s, &cfg, &cp, &e) == GDN_OK, "%s", e.msg);
    if (place) ck_assert(!memcmp(&cp, &cw, sizeof cp));
    else ck_assert(memcmp(&cp, &cw, sizeof cp) != 0);
    oracle_tally_clear(&sum);
  }
  gdn_grads_clear(&whole);
  gdn_chgate_clear(&g);
  tsu_problem_clear(&in, &ct);
}
END_TEST

CKR_MAIN("oracle", "kda_vjp_dd", 120, test_against_mpfr, test_equal_gates_is_gdn_dd, test_plant_drops_certificate,
         test_perturbed_gate_breaks_agreement, test_refusals, test_alloc_fail, test_parts)
