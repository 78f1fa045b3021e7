/* A Kimi Delta Attention fixture's stored /oracle and synthetic kernel
 * outputs: regen stores the KDA oracle and check trusts it (spot-checked)
 * with the same errors as on the fly; a stale /oracle (inputs changed) and
 * a planted /oracle/o value are recomputed with a note (so is one whose
 * problem_sha256 differs: the scale attribute changed); synth's kernel
 * outputs (the chunked kernel at D = 1, the affine-prefix at D = 8) PASS,
 * and a planted element FAILs named by output, head and token.  Small
 * shapes: about 3 s, most of it the gdn-fixture runs. */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/h5_edit.h"
#include "cli_inproc.h"
#include "cli_run.h"
#include "fix_kda.h"
#include "fix_regen.h"
#include "fix_string.h"
#include "fix_synth_grads.h"
#include "fix_write.h"
#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "kern_kda.h"
#include "../scratch_case.h"

static const gdn_shape shape = {1, 96, 1, 2, 16, 16}; /* B T Hk Hv Dk Dv */

/* synth's KDA fixture (gdn_synth's inputs, Kimi's gate), with the kernel
 * outputs synth --kernel-outputs 1,8 adds. */
static void write_kda(const char *p, int kernel_outputs) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_synth_opts so = {5, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 5, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "synthetic", &e), 0);
  fx.chunk_size = 64;
  if (kernel_outputs) {
    ck_assert_msg(fix_synth_kernel_output(&fx, 1, &e) == 0, "%s", e.msg);
    ck_assert_msg(fix_synth_kernel_output(&fx, 8, &e) == 0, "%s", e.msg);
  }
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
}

static void regen(const char *p, int force) {
  fix_regen_opts o;
  fix_regen_opts_init(&o);
  o.force = force;
  gdn_error e;
  gdn_error_init(&e);
  fix_oracle r;
  fix_oracle_init(&r);
  ck_assert_msg(fix_regen(p, &o, &r, &e) == 0, "%s", e.msg);
  ck_assert_int_ge(r.certified_bits, 100);
  ck_assert_int_eq(r.precision_bits, 128);
  fix_oracle_clear(&r);
}

static json_t *check_doc(const char *p, int want) {
  const char *j = scratch_case_path("c.json");
  char *av[] = {"gdn-parity", "check", (char *)p, "--json", (char *)j, "--reproducible", NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == want, "%s", e.msg);
  json_error_t je;
  json_t *d = json_load_file(j, 0, &je);
  ck_assert_msg(d != NULL, "%s", je.text);
  return d;
}

static json_t *oracle_of(json_t *d) { return json_object_get(d, "oracle"); }

static double case_err(json_t *d, size_t i, const char *t) {
  return json_real_value(json_object_get(json_object_get(json_array_get(json_object_get(d, "cases"), i), t), "err"));
}

static json_t *find_case(json_t *doc, const char *subject) {
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(doc, "cases"), i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "subject")), subject)) return c;
  }
  ck_abort_msg("no case %s", subject);
  return NULL;
}

START_TEST(regen_then_check_trusts_the_stored_oracle) {
  const char *p = scratch_case_path("k.h5");
  write_kda(p, 1);
  json_t *fly = check_doc(p, 0);
  ck_assert(json_is_false(json_object_get(oracle_of(fly), "from_fixture")));
  regen(p, 0);
  /* stored as GDN's: the loader finds it fresh for these inputs and attributes */
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_error e;
  ck_assert_msg(fix_kda_load(&fx, p, 0, &e) == 0, "%s", e.msg);
  ck_assert(fx.oracle.present && fx.oracle.fresh && fx.oracle.problem_fresh == 1);
  ck_assert_str_eq(fx.oracle.inputs_sha256, fx.inputs_sha256);
  fix_fixture_clear(&fx);
  json_t *st = check_doc(p, 0);
  json_t *o = oracle_of(st), *sp = json_object_get(o, "spot_check");
  ck_assert(json_is_true(json_object_get(o, "from_fixture")));
  ck_assert_int_eq(json_integer_value(json_object_get(sp, "columns")), 4);
  ck_assert_msg(json_real_value(json_object_get(sp, "rel")) <= 0x1p-40, "spot %g",
                json_real_value(json_object_get(sp, "rel")));
  ck_assert(json_is_null(json_object_get(o, "check_bits")));
  ck_assert_int_eq(json_integer_value(json_object_get(o, "certified_bits")),
                   json_integer_value(json_object_get(oracle_of(fly), "certified_bits")));
  /* the same binary64 oracle (MPFR at 128 bits, rounded): the same errors, bit for bit */
  const size_t n = json_array_size(json_object_get(fly, "cases"));
  ck_assert_int_eq(n, json_array_size(json_object_get(st, "cases")));
  ck_assert_int_eq(n, 8); /* token, chunked at 64, affine-prefix at 1, 2, 4, 8, the two outputs */
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(case_err(fly, i, "o") == case_err(st, i, "o"), "case %zu o", i);
    ck_assert_msg(case_err(fly, i, "ht") == case_err(st, i, "ht"), "case %zu ht", i);
  }
  json_decref(fly);
  json_decref(st);
  /* a second regen is refused without --force, done with it */
  fix_regen_opts ro;
  fix_regen_opts_init(&ro);
  ck_assert_int_eq(fix_regen(p, &ro, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "already has an /oracle (fresh"), "%s", e.msg);
  regen(p, 1);
}
END_TEST

START_TEST(stale_oracle_is_recomputed_with_a_note) {
  const char *p = scratch_case_path("k.h5");
  write_kda(p, 0);
  regen(p, 0);
  h5e_poke(p, "/inputs/g", 100, -0.25f); /* an input changed after regen */
  json_t *d = check_doc(p, 0);
  json_t *o = oracle_of(d);
  ck_assert(json_is_false(json_object_get(o, "from_fixture")));
  ck_assert_msg(strstr(json_string_value(json_object_get(o, "note")), "stale (its inputs_sha256"), "%s",
                json_string_value(json_object_get(o, "note")));
  ck_assert_int_ge(json_integer_value(json_object_get(o, "check_bits")), 192);
  ck_assert(json_is_true(json_object_get(d, "pass")));
  json_decref(d);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_error e;
  ck_assert_msg(fix_kda_load(&fx, p, 0, &e) == 0, "%s", e.msg);
  ck_assert(fx.oracle.present && !fx.oracle.fresh);
  fix_fixture_clear(&fx);
  /* an attribute that changes the answer (scale), the inputs unchanged: problem_sha256 says stale */
  regen(p, 1);
  const double scale = 0.2;
  h5e_set_attr(p, "/", "scale", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &scale, 0);
  d = check_doc(p, 0);
  ck_assert_msg(strstr(json_string_value(json_object_get(oracle_of(d), "note")), "problem_sha256 differs"), "%s",
                json_string_value(json_object_get(oracle_of(d), "note")));
  json_decref(d);
}
END_TEST

/* A value of /oracle/o edited in a column the spot check recomputes
 * (columns 2, 6, 10, 14 of Dv = 16) is seen: the stored oracle is not
 * trusted, the fresh one judges -- the kernels pass against it. */
START_TEST(planted_oracle_value_is_caught) {
  const char *p = scratch_case_path("k.h5");
  write_kda(p, 0);
  regen(p, 0);
  const hsize_t flat = ((0 * 96 + 50) * 2 + 0) * 16 + 6; /* b 0, t 50, h 0, d 6 */
  h5e_poke(p, "/oracle/o", flat, 0.75f);
  json_t *d = check_doc(p, 0);
  json_t *o = oracle_of(d);
  ck_assert(json_is_false(json_object_get(o, "from_fixture")));
  ck_assert_msg(strstr(json_string_value(json_object_get(o, "note")), "spot check failed"), "%s",
                json_string_value(json_object_get(o, "note")));
  ck_assert(json_is_true(json_object_get(d, "pass")));
  json_decref(d);
  /* a non-finite one is refused before the spot check (fix_oracle_check, as verify) */
  h5e_poke(p, "/oracle/ht", 3, NAN);
  d = check_doc(p, 0);
  ck_assert_msg(strstr(json_string_value(json_object_get(oracle_of(d), "note")), "/oracle/ht[3] is not finite"),
                "%s", json_string_value(json_object_get(oracle_of(d), "note")));
  json_decref(d);
}
END_TEST

START_TEST(kernel_outputs_pass_and_a_planted_one_fails) {
  const char *p = scratch_case_path("k.h5");
  write_kda(p, 1);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_error e;
  ck_assert_msg(fix_kda_load(&fx, p, 0, &e) == 0, "%s", e.msg);
  ck_assert_int_eq(fx.n_outputs, 2);
  ck_assert_str_eq(fx.outputs[0].name, "kernel-affine-prefix-d8"); /* in name order */
  ck_assert_str_eq(fx.outputs[0].implementation, "affine-prefix");
  ck_assert_int_eq(fx.outputs[0].devices, 8);
  ck_assert_str_eq(fx.outputs[1].name, "kernel-scan");
  ck_assert_int_eq(fx.outputs[1].devices, 1);
  fix_fixture_clear(&fx);
  json_t *d = check_doc(p, 0);
  static const char *const outs[2] = {"output:kernel-scan", "output:kernel-affine-prefix-d8"};
  for (int i = 0; i < 2; i++) {
    json_t *c = find_case(d, outs[i]);
    const double eo = json_real_value(json_object_get(json_object_get(c, "o"), "err"));
    /* float32 kernels: measured a few 1e-7 normwise, far under 2^-12 */
    ck_assert_msg(eo > 0 && eo < 2e-6, "%s o %g", outs[i], eo);
    ck_assert(json_is_true(json_object_get(c, "pass")));
  }
  ck_assert_int_eq(json_integer_value(json_object_get(find_case(d, outs[1]), "devices")), 8);
  json_decref(d);
  /* o[b=0, t=71, h=1, d=3] of the 8-device output off by 0.5 */
  h5e_poke(p, "/outputs/kernel-affine-prefix-d8/o", ((0 * 96 + 71) * 2 + 1) * 16 + 3, 0.5f);
  d = check_doc(p, 1);
  json_t *c = find_case(d, outs[1]), *w = json_object_get(json_object_get(c, "o"), "worst");
  ck_assert(json_is_false(json_object_get(c, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(w, "t")), 71);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "h")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "d")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_failed")), 1);
  ck_assert(json_is_true(json_object_get(find_case(d, outs[0]), "pass")));
  json_decref(d);
}
END_TEST

static const char *exe_fixture; /* argv[1]: the gdn-fixture program */

static cli_result *fixture_run(const char *const *args) {
  static cli_result r;
  char *av[16] = {(char *)exe_fixture};
  for (int i = 0; args[i]; i++) av[i + 1] = (char *)args[i];
  cli_run(&r, av);
  return &r;
}

/* The command line: synth --recurrence kda --kernel-outputs, info, verify
 * (no oracle, fresh, stale: exit 1), regen; --documents still refused. */
START_TEST(gdn_fixture_commands_read_kda_files) {
  const char *p = scratch_case_path("c.h5");
  const char *synth[] = {"synth", "--shape", "1,64,2,16", "--key-heads", "1", "--recurrence", "kda",
                         "--kernel-outputs", "1,2", "--out", p, NULL};
  cli_result *r = fixture_run(synth);
  ck_assert_msg(r->status == 0, "%s", r->err);
  const char *info[] = {"info", p, NULL};
  r = fixture_run(info);
  ck_assert_msg(r->status == 0, "%s", r->err);
  ck_assert_msg(strstr(r->out, "recurrence: kda") && strstr(r->out, "g     float32   (1,64,2,16)") &&
                    strstr(r->out, "implementation affine-prefix, devices 2, prefix sequential, matmul_precision "
                                   "ieee") &&
                    strstr(r->out, "oracle: absent"),
                "%s", r->out);
  const char *verify[] = {"verify", p, NULL};
  r = fixture_run(verify);
  ck_assert_msg(r->status == 0 && strstr(r->out, "no /oracle"), "%s%s", r->out, r->err);
  const char *regen_av[] = {"regen", p, "--quiet", NULL};
  r = fixture_run(regen_av);
  ck_assert_msg(r->status == 0, "%s", r->err);
  r = fixture_run(verify);
  ck_assert_msg(r->status == 0 && strstr(r->out, "oracle fresh (precision_bits 128"), "%s%s", r->out, r->err);
  r = fixture_run(regen_av);
  ck_assert_msg(r->status == 2 && strstr(r->err, "already has an /oracle"), "%s", r->err);
  h5e_poke(p, "/inputs/v", 7, 0.5f);
  r = fixture_run(verify);
  ck_assert_msg(r->status == 1 && strstr(r->err, "STALE oracle"), "%d %s", r->status, r->err);
  r = fixture_run(info);
  ck_assert_msg(r->status == 0 && strstr(r->out, "oracle: STALE"), "%s", r->out);
  const char *docs[] = {"synth", "--shape", "1,64,2,16", "--recurrence", "kda", "--documents", "2", "--out",
                        scratch_case_path("g.h5"), NULL};
  r = fixture_run(docs);
  ck_assert_msg(r->status == 2 && strstr(r->err, "--documents is not supported for KDA"), "%s", r->err);
}
END_TEST

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_kda_oracle GDN_FIXTURE\n");
    return 2;
  }
  exe_fixture = argv[1];
  Suite *s = suite_create("kda_oracle");
  TCase *tc = tcase_create("kda_oracle");
  tcase_add_checked_fixture(tc, scratch_case_setup, scratch_case_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, regen_then_check_trusts_the_stored_oracle);
  tcase_add_test(tc, stale_oracle_is_recomputed_with_a_note);
  tcase_add_test(tc, planted_oracle_value_is_caught);
  tcase_add_test(tc, kernel_outputs_pass_and_a_planted_one_fails);
  tcase_add_test(tc, gdn_fixture_commands_read_kda_files);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
