/* gdn-parity --recurrence kda with --prefix and --shard: every schedule and
 * shard mode passes the oracle's band forward and backward (--grad), the
 * JSON names the schedule and the shard mode and holds the affine-prefix
 * cases; a forward mutant still fails under every schedule and shard mode
 * (negative control); a list of schedules, an unknown schedule or shard,
 * and chunk sharding over more devices than chunks are refused (exit 2);
 * a sweep grid's entries take "prefix" and "shard" (one name each). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_inproc.h"

static const char *const SCHED[3] = {"sequential", "associative-scan", "hillis-steele"};

/* _i: schedule x shard.  T = 60, C = 16: 4 chunks (the last of 12 rows);
 * tokens D = 2, 3, 4 (pieces of 30, 20, 15 rows), chunks D = 2, 3, 4. */
START_TEST(test_pass_and_json) {
  const char *pf = SCHED[_i / 2], *sh = _i % 2 ? "chunks" : "tokens";
  char *dir = scratch_mkdtemp("/tmp/kda-prefix");
  char *js = scratch_join(dir, "out.json");
  char *av[] = {"gdn-parity", "--shape", "1,60,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "2,3,4",
                "--chunk", "16", "--h0", "--grad", "--prefix", (char *)pf, "--shard", (char *)sh, "--json", js, NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == 0, "%s %s: %s", pf, sh, e.msg);
  json_error_t je;
  json_t *d = json_load_file(js, 0, &je);
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(json_string_value(json_object_get(d, "prefix")), pf);
  ck_assert_str_eq(json_string_value(json_object_get(d, "shard")), sh);
  ck_assert(json_is_true(json_object_get(d, "pass")));
  size_t i, n = 0;
  json_t *c;
  json_array_foreach(json_object_get(d, "cases"), i, c) {
    if (strcmp(json_string_value(json_object_get(c, "subject")), "kda-affine-prefix")) continue;
    n++;
    const double err = json_real_value(json_object_get(json_object_get(c, "o"), "err"));
    const double band = json_real_value(json_object_get(c, "band"));
    ck_assert_msg(err > 0 && err <= band && band < 1e-4, "%s %s: err %.3e band %.3e", pf, sh, err, band);
  }
  ck_assert_uint_eq(n, 3);
  json_decref(d);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

START_TEST(test_mutant_fails) {
  const char *pf = SCHED[_i / 2], *sh = _i % 2 ? "chunks" : "tokens";
  char *av[] = {"gdn-parity", "--shape", "1,64,2,8", "--key-heads", "1", "--recurrence", "kda", "--devices", "2,4",
                "--chunk", "16", "--prefix", (char *)pf, "--shard", (char *)sh, "--mutant", "cumsum-across-chunks",
                "--quiet", NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == 1, "%s %s: the mutant passed (%s)", pf, sh, e.msg);
}
END_TEST

START_TEST(test_refusals) {
  static const char *const bad[][2] = {
      {"--prefix", "sequential,hillis-steele"}, {"--prefix", "ring"}, {"--shard", "heads"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *av[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", (char *)bad[i][0], (char *)bad[i][1],
                  NULL};
    gdn_error e;
    ck_assert_int_eq(cli_inproc(av, &e), -1);
    ck_assert_int_eq(e.code, GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, bad[i][0]), "%s", e.msg);
  }
  /* chunks: 2 chunks of 16, 4 devices */
  char *many[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--shard", "chunks", "--devices", "4",
                  "--chunk", "16", NULL};
  gdn_error e;
  ck_assert_int_eq(cli_inproc(many, &e), -1);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT);
  /* chunks: D need not divide T */
  char *nodiv[] = {"gdn-parity", "--shape", "1,40,1,4", "--recurrence", "kda", "--shard", "chunks", "--devices", "3",
                   "--chunk", "8", "--quiet", NULL};
  ck_assert_msg(cli_inproc(nodiv, &e) == 0, "%s", e.msg);
}
END_TEST

static char *write_file(const char *dir, const char *name, const char *text) {
  char *p = scratch_join(dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return p;
}

START_TEST(test_grid) {
  char *dir = scratch_mkdtemp("/tmp/kda-prefix-grid");
  const char *good = write_file(dir, "g.json",
                                "{\"name\": \"t\", \"recurrence\": \"kda\", \"entries\": [{\"shape\": \"1,40,2,8\", "
                                "\"key_heads\": 1, \"chunk\": [8], \"devices\": [3], \"prefix\": \"hillis-steele\", "
                                "\"shard\": \"chunks\"}]}");
  char *js = scratch_join(dir, "out.json");
  char *sw[] = {"gdn-parity", "sweep", "--recurrence", "kda", "--grid", (char *)good, "--json", js, NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(sw, &e) == 0, "%s", e.msg); /* D = 3 does not divide T = 40: chunks only */
  const char *bad = write_file(dir, "b.json",
                               "{\"name\": \"t\", \"recurrence\": \"kda\", \"entries\": [{\"shape\": \"1,40,2,8\", "
                               "\"prefix\": [\"sequential\"]}]}");
  sw[5] = (char *)bad;
  ck_assert_int_eq(cli_inproc(sw, &e), -1);
  ck_assert_msg(strstr(e.msg, "\"prefix\" must be one schedule"), "%s", e.msg);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kda_prefix_cli");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_pass_and_json, 0, 6);
  tcase_add_loop_test(tc, test_mutant_fails, 0, 6);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_grid);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
