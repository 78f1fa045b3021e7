/* KDA's backward judged (parity_recur_grad.h): the float32 token loop's
 * backward passes against the VJP oracle with its errors asserted, the
 * float64 one agrees with the oracle to 1e-12; a planted error in one token
 * of dg fails the judge, the dg-value-axis backward mutant fails it on dg
 * alone; gdn-parity --recurrence kda --grad passes (the token loop's, the
 * chunked kernel's and the affine-prefix's backward), names each gradient
 * in its JSON and refuses a forward mutant with --grad. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "../test_util_synth.h"
#include "cli_inproc.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern_kda_vjp.h"
#include "kern_vjp.h"
#include "oracle_kda_vjp.h"
#include "oracle_vjp.h"
#include "parity_recur_grad.h"
#include "parity_recurrence.h"

static const gdn_shape SHAPE = {2, 40, 1, 2, 8, 6}; /* GQA 2, two batch items */

typedef struct problem {
  gdn_inputs in;
  gdn_chgate gate;
  gdn_cotangents ct;
  gdn_grads ref;
} problem;

static void problem_make(problem *p, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  p->in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  p->ct = tsu_cotangents(&SHAPE, 1, seed + 1);
  gdn_chgate_init(&p->gate);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p->gate, &SHAPE, seed, &e), GDN_OK);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads_init(&p->ref);
  ck_assert_msg(oracle_kda_vjp(&p->in, &p->gate, &p->ct, &cfg, &p->ref, NULL, &e) == GDN_OK, "%s", e.msg);
}

static void problem_clear(problem *p) {
  gdn_grads_clear(&p->ref);
  gdn_chgate_clear(&p->gate);
  gdn_cotangents_clear(&p->ct);
  gdn_inputs_clear(&p->in);
}

static gdn_grads kernel(const problem *p, gdn_dtype dt, kern_kda_vjp_mutant m) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.dtype = dt;
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(kern_kda_recurrent_vjp(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e) == GDN_OK, "%s", e.msg);
  return g;
}

START_TEST(test_kernels_against_oracle) {
  problem p;
  problem_make(&p, 5);
  double err[GDN_GRADS_N];
  gdn_grads g32 = kernel(&p, GDN_DTYPE_F32, KERN_KDA_VJP_MUTANT_NONE);
  ck_assert(parity_recur_grad_judge(&g32, &p.ref, &SHAPE, 1, 0x1p-12, err));
  for (int id = 0; id < GDN_GRADS_N; id++) {
    fprintf(stderr, "float32 %s: %.3e\n", gdn_grads_name(id), err[id]);
    ck_assert_msg(err[id] < 1e-5 && err[id] > 0, "float32 %s: %.3e", gdn_grads_name(id), err[id]);
  }
  /* any thread count, the same bits (items (b, key head) are independent) */
  gdn_threads_set(3);
  gdn_grads g3 = kernel(&p, GDN_DTYPE_F32, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(1);
  for (int id = 0; id < GDN_GRADS_N; id++)
    ck_assert(memcmp(gdn_grads_tensor(&g32, (gdn_grad_id)id), gdn_grads_tensor(&g3, (gdn_grad_id)id),
                     gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double)) == 0);
  ck_assert_int_eq(g32.dtype, GDN_DTYPE_F32);
  gdn_grads_clear(&g3);
  gdn_grads g64 = kernel(&p, GDN_DTYPE_F64, KERN_KDA_VJP_MUTANT_NONE);
  ck_assert_int_eq(g64.dtype, GDN_DTYPE_F64);
  ck_assert(parity_recur_grad_judge(&g64, &p.ref, &SHAPE, 1, 1e-12, err));
  for (int id = 0; id < GDN_GRADS_N; id++) fprintf(stderr, "float64 %s: %.3e\n", gdn_grads_name(id), err[id]);
  gdn_grads_clear(&g32), gdn_grads_clear(&g64);
  problem_clear(&p);
}
END_TEST

/* One token's dg (one channel of one value head) moved by 1% of dg's
 * largest value: the judge fails on dg and on nothing else. */
START_TEST(test_planted_dg_token_fails) {
  problem p;
  problem_make(&p, 9);
  gdn_grads g = kernel(&p, GDN_DTYPE_F32, KERN_KDA_VJP_MUTANT_NONE);
  double err[GDN_GRADS_N], mx = 0;
  ck_assert(parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 0x1p-12, err));
  const size_t n = gdn_chgrads_numel(&SHAPE, GDN_GRAD_DG);
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(p.ref.dg[i]));
  const int64_t t = 17, j = 1, d = 3;
  g.dg[((1 * SHAPE.T + t) * SHAPE.Hv + j) * SHAPE.Dk + d] += 1e-2 * mx;
  ck_assert(!parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 0x1p-12, err));
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert(id == GDN_GRAD_DG ? err[id] > 0x1p-12 : err[id] <= 0x1p-12);
  ck_assert(fabs(err[GDN_GRAD_DG] - 1e-2) < 1e-4);
  gdn_grads_clear(&g);
  problem_clear(&p);
}
END_TEST

/* The gate's gradient summed along the value axis: dg fails by orders of
 * magnitude, the other gradients (computed before it) still pass. */
START_TEST(test_mutant_dg_value_axis_fails) {
  problem p;
  problem_make(&p, 13);
  gdn_grads g = kernel(&p, GDN_DTYPE_F32, KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS);
  double err[GDN_GRADS_N];
  ck_assert(!parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 0x1p-12, err));
  fprintf(stderr, "dg-value-axis: dg err %.3e\n", err[GDN_GRAD_DG]);
  ck_assert(err[GDN_GRAD_DG] > 0.05);
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (id != GDN_GRAD_DG) ck_assert(err[id] <= 0x1p-12);
  ck_assert_str_eq(kern_kda_vjp_mutant_name(KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS), "dg-value-axis");
  gdn_error e;
  const parity_recurrence *kda = parity_recurrence_find("kda", &e);
  for (int m = 0; m < KERN_KDA_VJP_MUTANT_COUNT; m++) ck_assert_str_eq(kda->vjp_mutants[m], kern_kda_vjp_mutant_name(m));
  ck_assert_ptr_null(kda->vjp_mutants[KERN_KDA_VJP_MUTANT_COUNT]);
  ck_assert_ptr_nonnull(kda->kern_chunked_vjp);
  ck_assert_ptr_nonnull(kda->kern_affine_vjp);
  gdn_grads_clear(&g);
  problem_clear(&p);
}
END_TEST

/* The sweep with the backward attached, and the mutant through it. */
START_TEST(test_grad_sweep) {
  gdn_error e;
  gdn_error_init(&e);
  parity_recur_opts o;
  parity_recur_opts_init(&o, parity_recurrence_find("kda", &e));
  o.shape = (gdn_shape){1, 48, 1, 2, 8, 8};
  o.h0 = 1;
  o.devices[0] = 2, o.n_devices = 1;
  for (int m = 0; m < 2; m++) {
    json_t *doc = NULL;
    int pass = 0;
    ck_assert_msg(parity_recur_sweep(&o, &doc, &pass, &e) == GDN_OK, "%s", e.msg);
    ck_assert_msg(parity_recur_grad_attach(&o, m, doc, &pass, &e) == GDN_OK, "%s", e.msg);
    ck_assert_int_eq(pass, !m);
    json_t *g = json_object_get(doc, "grad"), *c = json_array_get(json_object_get(g, "cases"), 0);
    /* forward: token, C=64, D=2; backward: the same three */
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_cases")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_failed")), 3 * m);
    ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(g, "oracle"), "certified_bits")), 100);
    for (int id = 0; id < GDN_GRADS_N; id++)
      ck_assert_ptr_nonnull(json_object_get(json_object_get(c, gdn_grads_name(id)), "err"));
    ck_assert_str_eq(json_string_value(json_object_get(g, "vjp_mutant")), m ? "dg-value-axis" : "none");
    /* implemented: the form it takes named */
    ck_assert_str_eq(json_string_value(json_object_get(g, "chunked_backward")), "chunkwise");
    const char *subj[] = {"kda-recurrent", "kda-chunk", "kda-affine-prefix"};
    for (int i = 0; i < 3; i++) {
      json_t *ci = json_array_get(json_object_get(g, "cases"), (size_t)i);
      ck_assert_str_eq(json_string_value(json_object_get(ci, "subject")), subj[i]);
      ck_assert_int_eq(json_is_true(json_object_get(ci, "pass")), !m);
      /* each backward case is judged by its forward case's kappa band */
      json_t *fi = json_array_get(json_object_get(doc, "cases"), (size_t)i);
      const double band = json_real_value(json_object_get(ci, "band"));
      ck_assert(band > 0 && band == json_real_value(json_object_get(fi, "band")));
      ck_assert(json_equal(json_object_get(ci, "kappa_g"), json_object_get(fi, "kappa_g")));
      ck_assert(i ? json_is_object(json_object_get(ci, "kappa_g")) : json_is_null(json_object_get(ci, "kappa_g")));
      for (int id = 0; !m && id < GDN_GRADS_N; id++)
        ck_assert(json_real_value(json_object_get(json_object_get(ci, gdn_grads_name(id)), "err")) <= band);
    }
    json_decref(doc);
  }
}
END_TEST

START_TEST(test_cli) {
  char *ok[] = {"gdn-parity", "--shape", "1,32,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "1,2",
                "--h0", "--grad", NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(ok, &e) == 0, "%s", e.msg);
  char *bwd[] = {"gdn-parity", "--shape", "1,32,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "1",
                 "--grad", "--mutant", "dg-value-axis", NULL};
  ck_assert_int_eq(cli_inproc(bwd, &e), 1); /* the backward mutant, planted: FAIL */
  char *fwd_only[] = {"gdn-parity", "--shape", "1,32,2,8", "--recurrence", "kda", "--mutant", "dg-value-axis", NULL};
  ck_assert_int_eq(cli_inproc(fwd_only, &e), -1); /* a backward mutant needs --grad */
  ck_assert_int_eq(e.code, GDN_ERR_INPUT);
  char *mut[] = {"gdn-parity", "--shape", "1,32,2,8", "--recurrence", "kda", "--grad", "--mutant",
                 "gate-value-axis", NULL};
  ck_assert_int_eq(cli_inproc(mut, &e), -1);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "--grad") && strstr(e.msg, "gate-value-axis"), "%s", e.msg);
}
END_TEST

/* What the backward does not implement it refuses by name, gradients left
 * cleared. */
START_TEST(test_kernel_refusals) {
  problem p;
  problem_make(&p, 21);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = (gdn_dtype)99; /* not a compute dtype (every real one is taken: test_kda_grad_modes) */
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_kda_recurrent_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e),
                   GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_recurrent_vjp"), "%s", e.msg);
  ck_assert_ptr_null(g.dq);
  kern_config_init(&cfg);
  ck_assert_int_eq(kern_kda_recurrent_vjp(&p.in, NULL, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(kern_kda_recurrent_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_COUNT, &g, &e),
                   GDN_ERR_INPUT);
  ck_assert_ptr_null(g.dg);
  problem_clear(&p);
}
END_TEST

/* --grad --json: the same bytes for 1 and 3 threads, every gradient named. */
START_TEST(test_cli_json_threads) {
  char *dir = scratch_mkdtemp("/tmp/kda-grad-json");
  char j1[4096], j3[4096];
  snprintf(j1, sizeof j1, "%s/one.json", dir);
  snprintf(j3, sizeof j3, "%s/three.json", dir);
  char *a1[] = {"gdn-parity", "--shape", "2,48,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--h0", "--grad", "--threads", "1", "--json", j1, NULL};
  char *a3[] = {"gdn-parity", "--shape", "2,48,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--h0", "--grad", "--threads", "3", "--json", j3, NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(a1, &e) == 0, "%s", e.msg);
  ck_assert_msg(cli_inproc(a3, &e) == 0, "%s", e.msg);
  json_error_t je;
  json_t *d1 = json_load_file(j1, 0, &je), *d3 = json_load_file(j3, 0, &je);
  ck_assert_ptr_nonnull(d1);
  ck_assert_ptr_nonnull(d3);
  ck_assert(json_equal(d1, d3));
  json_t *c = json_array_get(json_object_get(json_object_get(d1, "grad"), "cases"), 0);
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert_ptr_nonnull(json_object_get(c, gdn_grads_name(id)));
  json_decref(d1), json_decref(d3);
  gdn_threads_set(1);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

/* The gdn row's backward fields are GDN's functions: the same bits. */
START_TEST(test_gdn_row_backward) {
  gdn_error e;
  gdn_error_init(&e);
  const parity_recurrence *gdn = parity_recurrence_find("gdn", &e);
  const gdn_shape s = {1, 20, 1, 2, 4, 4};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 3);
  gdn_cotangents ct = tsu_cotangents(&s, 1, 4);
  oracle_vjp_config vc;
  oracle_vjp_config_init(&vc);
  kern_config kc;
  kern_config_init(&kc);
  gdn_grads a, b, c, d;
  gdn_grads_init(&a), gdn_grads_init(&b), gdn_grads_init(&c), gdn_grads_init(&d);
  ck_assert_int_eq(gdn->oracle_vjp(&in, NULL, &ct, &vc, &a, NULL, &e), GDN_OK);
  ck_assert_int_eq(oracle_vjp(&in, &ct, &vc, &b, &e), GDN_OK);
  ck_assert_int_eq(gdn->kern_chunked_vjp(&in, NULL, &ct, &kc, 0, &c, &e), GDN_OK);
  ck_assert_int_eq(kern_scan_vjp(&in, &ct, &kc, &d, &e), GDN_OK);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const size_t n = gdn_grads_numel(&s, (gdn_grad_id)id) * sizeof(double);
    ck_assert(!memcmp(gdn_grads_tensor(&a, (gdn_grad_id)id), gdn_grads_tensor(&b, (gdn_grad_id)id), n));
    ck_assert(!memcmp(gdn_grads_tensor(&c, (gdn_grad_id)id), gdn_grads_tensor(&d, (gdn_grad_id)id), n));
  }
  ck_assert_ptr_null(gdn->kern_token_vjp);
  gdn_grads_clear(&a), gdn_grads_clear(&b), gdn_grads_clear(&c), gdn_grads_clear(&d);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("parity", "kda_grad", 120, test_kernels_against_oracle, test_planted_dg_token_fails,
         test_mutant_dg_value_axis_fails, test_grad_sweep, test_cli, test_kernel_refusals,
         test_cli_json_threads, test_gdn_row_backward)
