/* One token of any gradient off by 1e-4 of its tensor's RMS fails (dq, dk,
 * dv, dg, dbeta; dh0: one head), with slow gates and with the model's
 * initial gates, while the correct gradients pass: the per-token and
 * per-head rules that follow the error model (docs/tolerance.md).
 *
 * Subjects: extra rows of the subject table judged by the affine-prefix
 * rules, each kern_affine_prefix and its backward with one plant: the row
 * of token T/2 + 3, value (or key) head 0 of one gradient moved by
 * +1e-4 x the tensor's RMS per element ("plant-dq" ... "plant-dbeta"), or
 * every element of dh0's head 0 ("plant-dh0"); "clean" has none.  Shape B1
 * T256 H2 Dk = Dv = 32, h0, C = 16, one device, MPFR oracle with its VJP.
 * The figures (value / limit of the deciding check of each plant) are
 * printed for docs/tolerance.md's table. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_synth.h"
#include "kern_vjp.h"
#include "parity_sweep.h"
#include "../check_runner.h"

enum { P_CLEAN, P_DQ, P_DK, P_DV, P_DG, P_DBETA, P_DH0, P_N };
static const char *const pname[P_N] = {"clean", "plant-dq", "plant-dk", "plant-dv", "plant-dg", "plant-dbeta", "plant-dh0"};
static const gdn_grad_id pgrad[P_N] = {GDN_GRAD_DQ, GDN_GRAD_DQ, GDN_GRAD_DK, GDN_GRAD_DV,
                                       GDN_GRAD_DG, GDN_GRAD_DBETA, GDN_GRAD_DH0};

static void plant(gdn_grads *g, int p) {
  const gdn_shape *s = &g->shape;
  double *x = gdn_grads_tensor(g, pgrad[p]);
  const size_t n = gdn_grads_numel(s, pgrad[p]);
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  const double dx = 1e-4 * sqrt(ss / (double)n);
  const int64_t t = s->T / 2 + 3;
  size_t at, len;
  switch (pgrad[p]) {
  case GDN_GRAD_DQ:
  case GDN_GRAD_DK: at = (size_t)(t * s->Hk * s->Dk), len = (size_t)s->Dk; break;
  case GDN_GRAD_DV: at = (size_t)(t * s->Hv * s->Dv), len = (size_t)s->Dv; break;
  case GDN_GRAD_DH0: at = 0, len = (size_t)(s->Dk * s->Dv); break;
  default: at = (size_t)(t * s->Hv), len = 1; break;
  }
  for (size_t i = at; i < at + len; i++) x[i] += dx;
}

static int produce(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  int p = 0;
  while (p < P_N && strcmp(s->name, pname[p])) p++;
  int rc = kern_affine_prefix(cx->in, cx->cfg, &s->owned, e);
  if (!rc && cx->ct) rc = kern_affine_prefix_vjp(cx->in, cx->ct, cx->cfg, &s->owned_grads, e);
  if (rc) return rc;
  s->out = &s->owned;
  s->present = PARITY_TENSOR_FORWARD;
  s->out_dtype[PARITY_T_O] = kern_output_dtype(cx->cfg, cx->in->bf16_mask);
  s->out_dtype[PARITY_T_HT] = GDN_DTYPE_F32;
  s->grads = &s->owned_grads;
  s->present |= PARITY_TENSOR_GRADS;
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad) s->out_dtype[t] = GDN_DTYPE_F32;
  if (p > P_CLEAN && p < P_N) plant(&s->owned_grads, p);
  return GDN_OK;
}

#define ROW(i) {NULL, PARITY_SUBJ_AFFINE, PARITY_STAGE_CASE, PARITY_ROLE_JUDGED, 1, produce}
static parity_subject_methods rows_m[P_N] = {ROW(0), ROW(1), ROW(2), ROW(3), ROW(4), ROW(5), ROW(6)};

/* The policy before the error model: the built-in one without "model" and
 * without the two rules that came with it (for the printed comparison). */
static void load_before(parity_policy *pol) {
  gdn_error e;
  gdn_error_init(&e);
  json_error_t je;
  json_t *root = json_loads(parity_policy_builtin_text(), 0, &je), *rules = json_object_get(root, "rules");
  ck_assert_ptr_nonnull(root);
  for (size_t i = json_array_size(rules); i-- > 0;) {
    json_t *r = json_array_get(rules, i);
    const char *id = json_string_value(json_object_get(r, "id"));
    if (!strcmp(id, "grad-per-token-float32-gates") || !strcmp(id, "grad-per-head-dh0")) json_array_remove(rules, i);
    else json_object_del(r, "model");
  }
  char *t = json_dumps(root, 0);
  ck_assert_msg(parity_policy_parse(pol, t, "before", &e) == GDN_OK, "%s", e.msg);
  free(t);
  json_decref(root);
}

static void verify(unsigned gates, const char *what) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {1, 256, 2, 2, 32, 32};
  gdn_inputs in;
  gdn_cotangents ct;
  parity_reference ref;
  gdn_inputs_init(&in);
  gdn_cotangents_init(&ct);
  parity_reference_init(&ref);
  gdn_synth_opts so = {5, gates | GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&in, &s, &so, &e), GDN_OK);
  ck_assert_int_eq(parity_reference_compute(&ref, &in, PARITY_ORACLE_MPFR, 128, &e), GDN_OK);
  ck_assert_int_eq(gdn_cotangents_alloc(&ct, &s, 1, &e), GDN_OK);
  gdn_cotangents_synth(&ct, 5);
  ck_assert_msg(parity_reference_compute_grads(&ref, &in, &ct, PARITY_ORACLE_MPFR, 128, &e) == GDN_OK, "%s", e.msg);
  static parity_policy pol, before;
  ck_assert_int_eq(parity_policy_load_builtin(&pol, &e), GDN_OK);
  load_before(&before);
  double caught_before[P_N];
  for (int after = 0; after < 2; after++) {
  parity_doc d;
  ck_assert_int_eq(parity_doc_init(&d, "test", &pol, &e), GDN_OK);
  parity_sweep_opts o;
  parity_sweep_opts_init(&o);
  o.policy = after ? &pol : &before;
  o.verbosity = 0;
  o.chunks[0] = 16;
  o.devices[0] = 1, o.n_devices = 1, o.devices_default = 0;
  o.ct = &ct;
  const parity_subject_methods *rows[P_N];
  for (int p = 0; p < P_N; p++) rows_m[p].name = pname[p], rows[p] = &rows_m[p];
  o.extra = rows;
  o.n_extra = P_N;
  parity_input_info info = {"synthetic", "synthetic", NULL, NULL};
  ck_assert_msg(parity_sweep_run(&d, &in, &info, &ref, NULL, 0, &o, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(parity_doc_finish(&d, 1, &e), GDN_OK);
  json_t *c = json_array_get(json_object_get(d.root, "cases"), 0);
  json_t *impls = json_object_get(c, "impls");
  json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks");
  for (int p = 0; p < P_N; p++) {
    json_t *x = json_object_get(impls, pname[p]);
    ck_assert_ptr_nonnull(x);
    const int pass = json_is_true(json_object_get(x, "pass"));
    /* the plant's tensor: the check with the largest value / limit on it */
    const char *tn = gdn_grads_name(pgrad[p]);
    json_t *w = NULL;
    double wq = -1;
    for (size_t i = 0; i < json_array_size(checks); i++) {
      json_t *k = json_array_get(checks, i);
      if (strcmp(json_string_value(json_object_get(k, "subject")), pname[p]) ||
          strcmp(json_string_value(json_object_get(k, "tensor")), tn))
        continue;
      const double q = json_real_value(json_object_get(k, "value")) / json_real_value(json_object_get(k, "limit"));
      if (q > wq) wq = q, w = k;
    }
    ck_assert_ptr_nonnull(w);
    if (!after) {
      caught_before[p] = 1e-4 / wq;
      continue;
    }
    fprintf(stderr, "%s gates %-12s %s: %s %.3g (rule %s); smallest caught %.3g x RMS, before the model %.3g%s\n", what,
            pname[p], pass ? "passes" : "FAILS", json_string_value(json_object_get(w, "name")), wq,
            json_string_value(json_object_get(w, "rule")), 1e-4 / wq, caught_before[p],
            p == P_CLEAN ? " (no plant: the correct gradients' worst value/limit)" : "");
    if (p == P_CLEAN) ck_assert_msg(pass, "%s: the correct gradients must pass", what);
    else ck_assert_msg(!pass, "%s: %s must fail", what, pname[p]);
  }
  parity_doc_clear(&d);
  }
  parity_reference_clear(&ref);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}

START_TEST(slow_gates) { verify(GDN_SYNTH_SLOW_GATES, "slow"); }
END_TEST
START_TEST(initial_gates) { verify(0, "initial"); }
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "grad_token_plant", "grad_token_plant", 600, slow_gates, initial_gates)
