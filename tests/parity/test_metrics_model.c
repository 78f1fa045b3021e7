/* The error model's statistics (parity_metrics.h, parity_model_stats) and
 * the policy's "model" key: lambda from the union bound, each item's
 * (a, q) and the value min(a, q / L), the frontier a set (any order, the
 * same), the check a rule with "model" makes (pass and FAIL, the figures it
 * records), and the policy refusing "model" where it cannot apply. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "parity_metrics.h"
#include "parity_policy.h"
#include "../check_runner.h"

/* x, r, s of 1 x 1 x 2 x 4 (two rows of four): row 0 exact but element 1
 * (off by 1e-3, scale 1e-3: one sigma), row 1 element 2 off by 1e-2 with
 * scale 1e-6 (beyond the model). */
static const double R[8] = {1, 2, -1, 0.5, 1, 1, 1, 1};
static const double S[8] = {1e-3, 1e-3, 1e-3, 1e-3, 1e-6, 1e-6, 1e-6, 1e-6};
static void pair(double *x) {
  memcpy(x, R, sizeof R);
  x[1] += 1e-3;
  x[6] += 1e-2;
}

static void measure(parity_metrics *m) {
  gdn_error e;
  gdn_error_init(&e);
  double x[8];
  pair(x);
  const int64_t dims[4] = {1, 1, 2, 4}, bl[4] = {1, 1, 1, 4};
  ck_assert_int_eq(parity_metrics_compute(x, R, dims, GDN_DTYPE_F64, m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(x, R, dims, bl, m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_model_v(parity_vals_f64(x), parity_vals_f64(R), S, dims, bl, GDN_DTYPE_F64, m, &e),
                   GDN_OK);
}

START_TEST(items_and_lambda) {
  parity_metrics m;
  measure(&m);
  const parity_model_stats *ms = &m.model;
  ck_assert(ms->has);
  ck_assert_double_eq_tol(ms->lam_elem, sqrt(2 * log(2 * 8 / 1e-3)), 1e-12);
  ck_assert_double_eq_tol(ms->lam_row, 1 + sqrt(2 * log(2 / 1e-3)), 1e-12);
  ck_assert_double_eq_tol(ms->lam_fro, 1 + sqrt(2 * log(1 / 1e-3)), 1e-12);
  /* element 6: a = 1e-2 / (lam 1e-6), q = 1e-2 / max(|r| = 1, block RMS 1) = 1e-2 */
  double a;
  int64_t at;
  double rho = parity_model_front_rho(&ms->elem, 1e-3, &a, &at);
  ck_assert_int_eq(at, 6);
  ck_assert_double_eq_tol(a, 1e-2 / (ms->lam_elem * 1e-6), 1e-6);
  ck_assert_double_eq_tol(rho, 10, 1e-9); /* min(a, q / L) = 1e-2 / 1e-3 */
  /* L = 0.1: element 6 is within L; element 1 (a = 1 / lam < 1, q = 1e-3 / 2 against its block RMS... ) */
  rho = parity_model_front_rho(&ms->elem, 0.1, &a, &at);
  ck_assert_int_eq(at, 6);
  ck_assert_double_eq_tol(rho, 0.1, 1e-9);
  /* element 1 alone is explained by the model: with a huge s on element 6 too, rho <= 1 / lam */
  ck_assert_double_eq_tol(ms->fro, sqrt(4 * 1e-6 + 4 * 1e-12) / m.ref_fro, 1e-15);
}
END_TEST

/* The frontier is a set: points in any order give the same frontier. */
START_TEST(frontier_is_a_set) {
  gdn_error e;
  gdn_error_init(&e);
  enum { N = 4096 };
  static double x[N], r[N], s[N], xr[N], rr[N], sr[N];
  uint64_t st = 7;
  for (int i = 0; i < N; i++) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    r[i] = (double)(st >> 11) / 9007199254740992.0 - 0.5;
    s[i] = 1e-7 * (1 + (double)((st >> 3) % 100));
    x[i] = r[i] + s[i] * ((double)((st >> 20) % 2001) / 1000.0 - 1);
  }
  /* the same tensor with the two heads' order as a head-group stream meets them: heads 1 then 0 */
  const int64_t dims[4] = {1, 64, 2, 32}, bl[4] = {1, 16, 1, 32};
  parity_model_acc *A;
  ck_assert_int_eq(parity_model_acc_new(&A, dims, bl, 2, GDN_DTYPE_F32, &e), GDN_OK);
  for (int pass = 0; pass < 2; pass++) {
    for (int h = 1; h >= 0; h--) {
      for (int t = 0; t < 64; t++)
        for (int d = 0; d < 32; d++) {
          xr[t * 32 + d] = x[(t * 2 + h) * 32 + d];
          rr[t * 32 + d] = r[(t * 2 + h) * 32 + d];
          sr[t * 32 + d] = s[(t * 2 + h) * 32 + d];
        }
      if (pass) parity_model_acc_add_b(A, parity_vals_f64(xr), parity_vals_f64(rr), sr, h, h + 1);
      else parity_model_acc_add_a(A, parity_vals_f64(xr), parity_vals_f64(rr), sr, h, h + 1);
    }
    if (!pass) parity_model_acc_between(A);
  }
  parity_metrics ms, mw;
  memset(&ms, 0, sizeof ms);
  double ss = 0;
  for (int i = 0; i < N; i++) ss += r[i] * r[i];
  ms.ref_fro = sqrt(ss);
  mw = ms;
  parity_model_acc_finish(A, &ms);
  parity_model_acc_free(A);
  ck_assert_int_eq(parity_metrics_model_v(parity_vals_f64(x), parity_vals_f64(r), s, dims, bl, GDN_DTYPE_F32, &mw, &e),
                   GDN_OK);
  ck_assert_int_gt(mw.model.elem.n, 0);
  ck_assert_int_lt(mw.model.elem.n, PARITY_MODEL_FRONT);
  const parity_model_front *fa[3] = {&ms.model.elem, &ms.model.row, &ms.model.block};
  const parity_model_front *fb[3] = {&mw.model.elem, &mw.model.row, &mw.model.block};
  for (int j = 0; j < 3; j++) {
    ck_assert_int_eq(fa[j]->n, fb[j]->n);
    ck_assert_mem_eq(fa[j]->a, fb[j]->a, (size_t)fa[j]->n * sizeof(double));
    ck_assert_mem_eq(fa[j]->q, fb[j]->q, (size_t)fa[j]->n * sizeof(double));
    ck_assert_mem_eq(fa[j]->at, fb[j]->at, (size_t)fa[j]->n * sizeof(int64_t));
  }
  ck_assert(ms.model.fro == mw.model.fro && ms.model.lam_elem == mw.model.lam_elem);
}
END_TEST

static const char *const rule_fmt =
    "{\"name\": \"t\", \"rules\": [{\"id\": \"e\", \"kind\": \"localized\", \"metric\": \"%s\", \"factor\": 2, "
    "\"floor_u\": 64, \"model\": %s, \"reason\": \"r\"}]}";

START_TEST(policy_model_key) {
  gdn_error e;
  gdn_error_init(&e);
  parity_policy p;
  parity_policy_init(&p);
  char t[512];
  snprintf(t, sizeof t, rule_fmt, "elem_rel", "true");
  ck_assert_int_eq(parity_policy_parse(&p, t, "t", &e), GDN_OK);
  ck_assert_int_eq(p.rules[0].model, 1);
  parity_policy_clear(&p);
  snprintf(t, sizeof t, rule_fmt, "elem_rel", "1");
  ck_assert_int_eq(parity_policy_parse(&p, t, "t", &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "\"model\" must be true or false"));
  snprintf(t, sizeof t, rule_fmt, "max_rel", "true");
  ck_assert_int_eq(parity_policy_parse(&p, t, "t", &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "\"model\" applies to"));
}
END_TEST

/* A localized rule with the model over a case view: the element beyond
 * both its model bound and the limit fails, with its figures; the same
 * pair without the model passes nothing it would not (value = raw). */
START_TEST(check_with_model) {
  gdn_error e;
  gdn_error_init(&e);
  parity_policy p;
  parity_policy_init(&p);
  char t[512];
  snprintf(t, sizeof t, rule_fmt, "elem_rel", "true");
  ck_assert_int_eq(parity_policy_parse(&p, t, "t", &e), GDN_OK);
  parity_metrics m, base;
  measure(&m);
  memset(&base, 0, sizeof base);
  base.elem_rel = 1e-4; /* the scan's: the limit is 2 x max(1e-4, 64u_64) = 2e-4 */
  base.n_blocks = 1;
  parity_subject subj[1];
  memset(subj, 0, sizeof subj);
  subj[0].name = "x";
  subj[0].kind = PARITY_SUBJ_AFFINE;
  subj[0].vs_oracle[PARITY_T_O] = &m;
  subj[0].out_dtype[PARITY_T_O] = GDN_DTYPE_F64;
  parity_case_view cv = {GDN_DTYPE_F64, KERN_MATMUL_IEEE, 1, {NULL}, 1, subj, NULL, 0, {0}};
  cv.scan_vs_oracle[PARITY_T_O] = &base;
  parity_checks c;
  parity_checks_init(&c);
  p.rules[0].tensors = PARITY_TENSOR_O;
  ck_assert_int_eq(parity_policy_judge(&p, &cv, &c, &e), GDN_OK);
  ck_assert_int_eq(c.n, 1);
  const parity_check *k = &c.v[0];
  ck_assert(k->has_model);
  ck_assert(!k->pass);
  ck_assert_double_eq_tol(k->limit, 2e-4, 1e-18);
  ck_assert_double_eq_tol(k->value, 1e-2, 1e-12); /* min(a L, q) = q: far beyond the model */
  ck_assert_double_eq_tol(k->model_sig, 1e-2 / 1e-6, 1e-3);
  ck_assert_ptr_nonnull(strstr(k->where, "d=2"));
  /* negative control: with s large everywhere, every element is within its bound: passes */
  parity_metrics m2 = m;
  double x[8];
  pair(x);
  const double big[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t dims[4] = {1, 1, 2, 4}, bl[4] = {1, 1, 1, 4};
  ck_assert_int_eq(parity_metrics_model_v(parity_vals_f64(x), parity_vals_f64(R), big, dims, bl, GDN_DTYPE_F64, &m2, &e),
                   GDN_OK);
  subj[0].vs_oracle[PARITY_T_O] = &m2;
  ck_assert_int_eq(parity_policy_judge(&p, &cv, &c, &e), GDN_OK);
  ck_assert(c.v[0].pass);
  ck_assert_double_eq_tol(c.v[0].model_raw, m.elem_rel, 1e-18);
  parity_checks_clear(&c);
  parity_policy_clear(&p);
}
END_TEST

/* The norm's tail (Laurent-Massart over the blocks, x = ln(1 / alpha)):
 * one block dominating (row 0's s^2 is 1e6 x row 1's) gives sqrt(1 + 2
 * sqrt(x) + 2 x) = 4.48; many equal blocks give about 1. */
START_TEST(norm_tail) {
  parity_metrics m;
  measure(&m);
  const double x = log(1 / PARITY_MODEL_ALPHA);
  ck_assert_double_eq_tol(m.model.fro_tail, sqrt(1 + 2 * sqrt(x) + 2 * x), 1e-5);
  gdn_error e;
  gdn_error_init(&e);
  enum { N = 4096 };
  static double xs[N], rs[N], ss[N];
  for (int i = 0; i < N; i++) xs[i] = rs[i] = 1 + i % 7, ss[i] = 1e-3;
  const int64_t dims[4] = {1, 1, N / 4, 4}, bl[4] = {1, 1, 1, 4};
  ck_assert_int_eq(parity_metrics_compute(xs, rs, dims, GDN_DTYPE_F64, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks(xs, rs, dims, bl, &m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_model_v(parity_vals_f64(xs), parity_vals_f64(rs), ss, dims, bl, GDN_DTYPE_F64, &m, &e),
                   GDN_OK);
  const double n = N / 4, want = sqrt(1 + 2 * sqrt(x / n) + 2 * x / n); /* 1024 equal blocks: 1.09 */
  ck_assert_double_eq_tol(m.model.fro_tail, want, 1e-9);
  ck_assert(m.model.fro_tail < 1.1);
}
END_TEST

CKR_MAIN("metrics_model", "metrics_model", 60, items_and_lambda, frontier_is_a_set, policy_model_key, check_with_model,
         norm_tail)
