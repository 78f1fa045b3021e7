/* Results as types, serialized in one place each:
 *   - parity_json_case writes a hand-filled parity_case_result with the
 *     documented key order (docs/results-json.md), every subject in impls
 *     in table order, a judged subject's own verdict and attrs, non-finite
 *     numbers as strings, and refuses a result without its roles;
 *   - parity_log_case prints a judged subject's row, verdict and deciding
 *     check before the kernels' row;
 *   - the small sweep functions: parity_case_id, parity_sweep_devices_for,
 *     parity_sweep_ftz. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity_json.h"
#include "parity_log.h"
#include "parity_sweep.h"
#include "../check_runner.h"

static parity_rule rule = {.id = "core", .kind = PARITY_RULE_RELATIVE, .metric = PARITY_M_REL_FRO, .reason = "why"};

/* Scan, affine-prefix and one external "tpu" (o only) on 2 devices. */
static void fill(parity_case_result *r, json_t *attrs) {
  gdn_error e;
  gdn_error_init(&e);
  parity_case_result_init(r);
  ck_assert_int_eq(parity_case_result_alloc(r, 2, 3, 2, &e), GDN_OK);
  gdn_shape s = {1, 128, 1, 1, 8, 8};
  r->shape = s;
  r->chunk = 64;
  r->devices = 2;
  r->has_ref = 1;
  r->baseline = 0;
  r->candidate = 1;
  parity_case_id(r->id, sizeof r->id, &s, 64, 2, KERN_PREFIX_SEQUENTIAL, GDN_DTYPE_F32, KERN_MATMUL_HIGHEST);
  const char *names[3] = {"scan", "affine-prefix", "tpu"};
  parity_subject_role roles[3] = {PARITY_ROLE_BASELINE, PARITY_ROLE_CANDIDATE, PARITY_ROLE_JUDGED};
  for (int i = 0; i < 3; i++) {
    parity_subject_result *x = &r->subjects[i];
    x->name = names[i];
    x->role = roles[i];
    x->kind = 1u << i;
    x->has_vs_ref = i == 2 ? PARITY_TENSOR_O : PARITY_TENSOR_ALL;
    x->has_vs_scan = i == 1 ? PARITY_TENSOR_ALL : 0;
    x->deciding = SIZE_MAX;
    for (int t = 0; t < PARITY_T_N; t++) x->vs_ref[t].rel_fro = 1e-7 * (i + 1);
  }
  r->subjects[2].vs_ref[PARITY_T_O].rel_fro = INFINITY;
  r->subjects[2].attrs = attrs;
  r->shards[0] = 0, r->shards[1] = 1, r->shards[2] = 1, r->shards[3] = 1;
  r->seams[0].device = 1;
  r->profile.block = 64;
  gdn_error_init(&e);
  parity_check *k = parity_checks_push(&r->checks, &e);
  snprintf(k->name, sizeof k->name, "tpu o rel_fro <= 2 x max(scan, 8u)");
  k->rule = &rule;
  k->subject = "tpu";
  k->subject_index = 2;
  k->tensor = PARITY_TENSOR_O;
  k->value = INFINITY;
  k->limit = 1e-6;
  k->factor_reached = INFINITY;
  r->subjects[2].deciding = 0;
  for (int i = 0; i < PARITY_UPSTREAM_N; i++) r->upstream[i].name = "u", r->upstream[i].worst_tensor = "o";
}

static void assert_keys(const json_t *o, const char *const *keys, size_t n) {
  const char *k;
  json_t *v;
  size_t i = 0;
  json_object_foreach((json_t *)o, k, v) {
    ck_assert_msg(i < n, "extra key %s", k);
    ck_assert_str_eq(k, keys[i]);
    i++;
  }
  ck_assert_uint_eq(i, n);
}

START_TEST(json_case_writer) {
  json_t *attrs = json_pack("{ss}", "platform", "tpu v5p");
  parity_case_result r;
  fill(&r, attrs);
  json_t *c = parity_json_case(&r, 1);
  ck_assert_ptr_nonnull(c);
  static const char *const keys[] = {"id", "input", "shape", "chunk", "devices", "prefix", "shard", "solve", "dtype",
                                     "matmul_precision", "ftz", "output_dtype", "shards", "impls",
                                     "affine_vs_scan", "tolerance", "upstream", "profile", "seams",
                                     "ulp_histogram", "kappa_g", "pass"};
  assert_keys(c, keys, sizeof keys / sizeof keys[0]);
  static const char *const impls[] = {"scan", "affine-prefix", "tpu"};
  assert_keys(json_object_get(c, "impls"), impls, 3);
  json_t *tpu = json_object_get(json_object_get(c, "impls"), "tpu");
  /* tpu has o alone: its verdict says so (judged_on) */
  static const char *const tk[] = {"o", "pass", "judged_on", "attrs"};
  assert_keys(tpu, tk, 4);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(tpu, "o"), "rel_fro")), "inf");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(tpu, "attrs"), "platform")), "tpu v5p");
  /* The worst position is named by the tensor row. */
  json_t *w = json_object_get(json_object_get(json_object_get(json_object_get(c, "impls"), "scan"), "ht"), "worst");
  static const char *const wk[] = {"b", "h", "dk", "dv"};
  assert_keys(w, wk, 4);
  json_t *k = json_array_get(json_object_get(json_object_get(c, "tolerance"), "checks"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(k, "subject")), "tpu");
  ck_assert_str_eq(json_string_value(json_object_get(k, "tensor")), "o");
  ck_assert_str_eq(json_string_value(json_object_get(k, "value")), "inf");
  /* The seam names its subjects by their names. */
  static const char *const sk[] = {"device", "chunk", "t", "pad_before", "scan", "affine-prefix", "affine_vs_scan"};
  assert_keys(json_array_get(json_object_get(c, "seams"), 0), sk, 7);
  json_decref(c);
  /* Timing only when not reproducible. */
  c = parity_json_case(&r, 0);
  ck_assert_ptr_nonnull(json_object_get(c, "seconds"));
  json_decref(c);
  /* Negative control: a result without its candidate is refused. */
  r.candidate = SIZE_MAX;
  ck_assert_ptr_null(parity_json_case(&r, 1));
  parity_case_result_clear(&r);
  parity_case_result_clear(&r); /* safe twice */
  ck_assert_ptr_null(r.subjects);
  json_decref(attrs);
}
END_TEST

START_TEST(log_judged_first) {
  parity_case_result r;
  fill(&r, NULL);
  r.pass = 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  parity_log_case(f, &r, 1);
  fclose(f);
  /* the output's row under the header's columns: its name in the case
   * column, its o error in the affine slot, no ht (not measured) */
  const char *ext = strstr(buf, " tpu        |        -      inf        -    |        -        -        -    |"
                                "         -      0.00  |");
  const char *failed = strstr(buf, "FAILED: tpu o rel_fro <= 2 x max(scan, 8u) (value inf, limit 1.00e-06)");
  const char *kern = strstr(buf, "| 1.00e-07 2.00e-07");
  ck_assert_msg(ext != NULL, "%s", buf);
  ck_assert_ptr_nonnull(failed);
  ck_assert_ptr_nonnull(kern);
  ck_assert(ext < failed && failed < kern);
  ck_assert_ptr_nonnull(strstr(ext, "| inf       | FAIL\n"));
  free(buf);
  /* Without judged subjects: the kernels' row alone. */
  r.subjects[2].role = PARITY_ROLE_CANDIDATE;
  f = open_memstream(&buf, &len);
  parity_log_case(f, &r, 1);
  fclose(f);
  ck_assert_ptr_null(strstr(buf, "sequential tpu"));
  free(buf);
  parity_case_result_clear(&r);
}
END_TEST

START_TEST(sweep_small_functions) {
  char id[256];
  gdn_shape s = {2, 1000, 2, 4, 64, 32};
  parity_case_id(id, sizeof id, &s, 64, 3, KERN_PREFIX_HILLIS_STEELE, GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT);
  ck_assert_str_eq(id, "B2-T1000-Hk2-Hv4-Dk64-Dv32-C64-D3-hillis-steele-bfloat16-default");
  gdn_shape q = {1, 4096, 4, 4, 128, 128};
  parity_case_id(id, sizeof id, &q, 64, 4, KERN_PREFIX_SEQUENTIAL, GDN_DTYPE_F32, KERN_MATMUL_HIGHEST);
  ck_assert_str_eq(id, "B1-T4096-H4-D128-C64-D4-sequential-float32-highest");
  /* --shard tokens (the default): default devices 1, 2, 4, 8 keep the
   * divisors of T: all four at T = 200, not 8 at T = 100. */
  parity_sweep_opts o;
  parity_sweep_opts_init(&o);
  gdn_shape t = {1, 200, 1, 1, 16, 16}, t100 = {1, 100, 1, 1, 16, 16};
  int64_t dev[PARITY_MAX_LIST];
  ck_assert_uint_eq(parity_sweep_devices_for(&o, &t, 64, dev), 4);
  ck_assert_uint_eq(parity_sweep_devices_for(&o, &t100, 64, dev), 3);
  ck_assert(dev[0] == 1 && dev[1] == 2 && dev[2] == 4);
  /* --shard chunks: at T = 200, C = 64, 4 chunks keep 1, 2, 4; an explicit
   * list is kept whole (validation refuses it later). */
  o.shard = KERN_SHARD_CHUNKS;
  ck_assert_uint_eq(parity_sweep_devices_for(&o, &t, 64, dev), 3);
  ck_assert(dev[0] == 1 && dev[1] == 2 && dev[2] == 4);
  o.devices_default = 0;
  ck_assert_uint_eq(parity_sweep_devices_for(&o, &t, 64, dev), 4);
  /* Flush to zero: auto is on with bf16 arithmetic, off for ieee float32
   * and float64; explicit wins. */
  ck_assert_int_eq(parity_sweep_ftz(&o), 1); /* float32 highest: bf16 passes */
  o.matmul = KERN_MATMUL_IEEE;
  ck_assert_int_eq(parity_sweep_ftz(&o), 0);
  o.dtype = GDN_DTYPE_BF16;
  ck_assert_int_eq(parity_sweep_ftz(&o), 1);
  o.dtype = GDN_DTYPE_F64;
  o.matmul = KERN_MATMUL_HIGHEST;
  ck_assert_int_eq(parity_sweep_ftz(&o), 0);
  o.ftz = 1;
  ck_assert_int_eq(parity_sweep_ftz(&o), 1);
}
END_TEST

CKR_MAIN("results", "results", 0, json_case_writer, log_judged_first, sweep_small_functions)
