/* gdn-fixture regen --group-heads of a KDA fixture (fix_kda_regen.c): the
 * /oracle written one key-head group at a time -- groups of 1 and of 2 of 3
 * key heads (2 and 1), two batch items, h0, GVA -- holds the whole regen's
 * o and ht bit for bit, with the same precision and certified bits (the
 * groups' certificate tallies merged) and the same hashes; `check` trusts
 * it and reports the whole file's oracle.  The negative control: a group
 * regen at other bits gives another /oracle, which the comparison
 * catches.  The same with --oracle dd: each group's sampled columns placed
 * in the whole run, the tier's certificate (certified, check, normwise
 * bits, sampled columns) the whole dd regen's; its negative control a
 * group regen sampling 3 columns where the whole sampled 2. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"
#include "cli_inproc.h"
#include "fix_kda.h"
#include "fix_regen.h"
#include "fix_string.h"
#include "fix_write.h"
#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "../scratch_case.h"

static const gdn_shape shape = {2, 64, 3, 6, 16, 8}; /* B T Hk Hv Dk Dv */

static void write_kda(const char *p) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_synth_opts so = {9, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 9, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "synthetic", &e), 0);
  fx.chunk_size = 64;
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
}

static void regen_tier(const char *p, int64_t group_heads, int bits, int dd, int64_t dd_columns) {
  fix_regen_opts o;
  fix_regen_opts_init(&o);
  o.group_heads = group_heads;
  o.bits = bits;
  o.dd = dd;
  o.dd_columns = dd_columns;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(fix_regen(p, &o, NULL, &e) == 0, "%s", e.msg);
}

static void regen(const char *p, int64_t group_heads, int bits) { regen_tier(p, group_heads, bits, 0, 2); }

/* 1 when the two files' /oracle (values and attributes) are the same. */
static int same_oracle(const char *a, const char *b) {
  gdn_error e;
  fix_fixture x, y;
  fix_fixture_init(&x);
  fix_fixture_init(&y);
  ck_assert_msg(fix_kda_load(&x, a, 0, &e) == 0, "%s", e.msg);
  ck_assert_msg(fix_kda_load(&y, b, 0, &e) == 0, "%s", e.msg);
  ck_assert(x.oracle.present && y.oracle.present && x.oracle.fresh && y.oracle.fresh);
  const size_t no = gdn_shape_numel_v(&shape), nh = gdn_shape_numel_state(&shape);
  const int same = !memcmp(x.oracle.out.o, y.oracle.out.o, no * sizeof(double)) &&
                   !memcmp(x.oracle.out.ht, y.oracle.out.ht, nh * sizeof(double)) &&
                   x.oracle.precision_bits == y.oracle.precision_bits &&
                   x.oracle.certified_bits == y.oracle.certified_bits &&
                   !strcmp(x.oracle.inputs_sha256, y.oracle.inputs_sha256) &&
                   !strcmp(x.oracle.problem_sha256, y.oracle.problem_sha256) &&
                   x.oracle.tier_dd == y.oracle.tier_dd && x.oracle.check_bits == y.oracle.check_bits &&
                   x.oracle.normwise_bits == y.oracle.normwise_bits &&
                   x.oracle.guaranteed_bits == y.oracle.guaranteed_bits &&
                   x.oracle.sampled_columns == y.oracle.sampled_columns;
  fix_fixture_clear(&x);
  fix_fixture_clear(&y);
  return same;
}

static json_t *check_oracle(const char *p) {
  const char *j = scratch_case_path("c.json");
  char *av[] = {"gdn-parity", "check", (char *)p, "--json", (char *)j, "--reproducible", NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == 0, "%s", e.msg);
  json_error_t je;
  json_t *d = json_load_file(j, 0, &je);
  ck_assert_msg(d != NULL, "%s", je.text);
  json_t *o = json_incref(json_object_get(d, "oracle"));
  json_decref(d);
  ck_assert(o);
  return o;
}

START_TEST(test_group_regen) {
  const char *w = scratch_case_path("w.h5"), *g1 = scratch_case_path("g1.h5"), *g2 = scratch_case_path("g2.h5"), *g64 = scratch_case_path("g64.h5");
  write_kda(w);
  write_kda(g1);
  write_kda(g2);
  write_kda(g64);
  regen(w, 0, 128);
  regen(g1, 1, 128);
  regen(g2, 2, 128);
  regen(g64, 1, 64);
  ck_assert(same_oracle(w, g1));
  ck_assert(same_oracle(w, g2));
  ck_assert(!same_oracle(w, g64)); /* the negative control */
  json_t *ow = check_oracle(w), *o1 = check_oracle(g1);
  ck_assert(json_equal(ow, o1));
  json_decref(ow);
  json_decref(o1);
}
END_TEST

START_TEST(test_group_regen_dd) {
  const char *w = scratch_case_path("w.h5"), *g1 = scratch_case_path("g1.h5"), *g2 = scratch_case_path("g2.h5"), *g3 = scratch_case_path("g3.h5");
  write_kda(w);
  write_kda(g1);
  write_kda(g2);
  write_kda(g3);
  regen_tier(w, 0, 128, 1, 2);
  regen_tier(g1, 1, 128, 1, 2);
  regen_tier(g2, 2, 128, 1, 2);
  regen_tier(g3, 1, 128, 1, 3);
  fix_fixture x;
  fix_fixture_init(&x);
  gdn_error e;
  ck_assert_msg(fix_kda_load(&x, g1, 0, &e) == 0, "%s", e.msg);
  ck_assert(x.oracle.tier_dd);
  ck_assert_int_eq(x.oracle.precision_bits, 106);
  ck_assert_int_ge(x.oracle.certified_bits, 85);
  ck_assert_int_eq(x.oracle.sampled_columns, 2 * shape.B * shape.Hv);
  fix_fixture_clear(&x);
  ck_assert(same_oracle(w, g1));
  ck_assert(same_oracle(w, g2));
  ck_assert(!same_oracle(w, g3)); /* the negative control */
  json_t *ow = check_oracle(w), *o1 = check_oracle(g1);
  ck_assert_str_eq(json_string_value(json_object_get(o1, "tier")), "dd");
  ck_assert(json_equal(ow, o1));
  json_decref(ow);
  json_decref(o1);
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kda_regen_group");
  tcase_add_checked_fixture(tc, scratch_case_setup, scratch_case_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_group_regen);
  tcase_add_test(tc, test_group_regen_dd);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
