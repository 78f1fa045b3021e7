/* The paths a run streamed by head group once refused (parity_sweep_stream.h):
 * packed documents, the bfloat16 layer prelude and coverage's mutant rows.
 * Per path, the whole run and the run streamed by head group give the same
 * results document: byte for byte with --group-heads (--reproducible) --
 * synthetic inputs, and a fixture's check for packed
 * documents and the prelude; coverage's document with 3 mutants over an
 * entry with GQA, h0 and packed documents.  Negative controls per path: a
 * planted mutant is still killed when streamed (reset-missing under packed
 * documents, carry-zero under the prelude) with the whole mutant run's
 * document, which differs from the correct one (the comparison can fail);
 * coverage streams for real (an unusable TMPDIR fails the streamed run
 * only) and refuses a mutant that reads key heads across groups; a head
 * group whose segment ids differ from the first group's is refused naming
 * the group and the token (parity_stream_seg). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"

#include "cli_run.h"
#include "gdn_alloc.h"
#include "parity_stream_seg.h"
#include "../reports/test_util.h"

static char *exe, *fixture_exe;

/* exe, args..., extra..., --json out --reproducible --quiet; the status. */
static int run_to(const char *const *args, const char *const *extra, const char *json, cli_result *r) {
  char *av[48];
  int n = 0;
  av[n++] = (char *)exe;
  for (int i = 0; args[i]; i++) av[n++] = (char *)args[i];
  for (int i = 0; extra && extra[i]; i++) av[n++] = (char *)extra[i];
  av[n++] = "--json", av[n++] = (char *)json, av[n++] = "--reproducible", av[n++] = "--quiet", av[n] = NULL;
  cli_run(r, av);
  return r->status;
}

/* The documents at a and b with "command" removed are equal (want 1) or
 * not (want 0); the files are removed. */
static void docs_equal_but_command(const char *a, const char *b, int want) {
  json_error_t je;
  json_t *ja = json_load_file(a, 0, &je), *jb = json_load_file(b, 0, &je);
  ck_assert_msg(ja && jb, "%s", je.text);
  json_object_del(ja, "command");
  json_object_del(jb, "command");
  ck_assert_msg(json_equal(ja, jb) == want, "%s and %s: equal %d, wanted %d", a, b, json_equal(ja, jb), want);
  json_decref(ja), json_decref(jb);
}

/* A fresh file name under the test's scratch folder. */
static const char *doc(const char *name) { return cli_path(name); }

/* args whole and by one key head (--group-heads 1): the same bytes; the
 * status both share, returned. */
static int same_both_ways(const char *const *args) {
  cli_result r;
  const char *a = doc("whole.json"), *b = doc("group.json");
  const int ra = run_to(args, NULL, a, &r);
  ck_assert_msg(ra == 0 || ra == 1, "whole: status %d: %s", ra, r.err);
  const char *const g[] = {"--group-heads", "1", NULL};
  ck_assert_msg(run_to(args, g, b, &r) == ra, "by one key head: status %d (whole %d): %s", r.status, ra, r.err);
  char *da = test_read_file(a, NULL), *db = test_read_file(b, NULL);
  ck_assert(da && db && strlen(da) > 1000);
  ck_assert_msg(!strcmp(da, db), "%s and %s differ (%s ...)", a, b, args[0]);
  free(da), free(db);
  return ra;
}

/* A planted mutant streamed is killed as whole, with the whole mutant run's
 * document; the correct run's document is another. */
static void mutant_still_killed(const char *const *args, const char *mutant) {
  const char *av[32];
  int n = 0;
  for (int i = 0; args[i]; i++) av[n++] = args[i];
  av[n++] = "--mutant", av[n++] = mutant, av[n] = NULL;
  ck_assert_int_eq(same_both_ways(av), 1); /* whole and streamed both FAIL, the same bytes */
  cli_result r;
  ck_assert_int_eq(run_to(args, (const char *const[]){"--group-heads", "1", NULL}, doc("correct.json"), &r), 0);
  docs_equal_but_command(doc("correct.json"), doc("group.json"), 0);
}

static const char *const packed[] = {"--shape", "1,512,8,16", "--key-heads", "4", "--h0", "--documents", "3",
                                     "--packing", "reset", "--chunk", "32", "--devices", "1,2", "--oracle", "dd", NULL};

START_TEST(packed_documents) {
  ck_assert_int_eq(same_both_ways(packed), 0);
  const char *const leak[] = {"--shape", "2,128,4,16", "--key-heads", "2", "--documents", "4", "--oracle", "dd", NULL};
  same_both_ways(leak);
  mutant_still_killed(packed, "reset-missing");
}
END_TEST

static const char *const prelude[] = {"--shape", "1,512,8,16", "--key-heads", "4", "--h0", "--prelude", "bfloat16",
                                      "--chunk", "32", "--devices", "1,2", "--oracle", "dd", NULL};

START_TEST(bfloat16_prelude) {
  ck_assert_int_eq(same_both_ways(prelude), 0);
  const char *const both[] = {"--shape", "2,128,4,16", "--prelude", "bfloat16", "--documents", "2", "--oracle", "dd",
                              NULL};
  same_both_ways(both);
  mutant_still_killed(prelude, "carry-zero");
}
END_TEST

/* check of fixtures with packed documents and with the prelude: whole and by
 * one key head, the same bytes. */
START_TEST(fixtures) {
  static const char *const sets[2][12] = {
      {"--shape", "1,192,4,16", "--key-heads", "2", "--h0", "--documents", "3", "--packing", "reset", NULL},
      {"--shape", "1,128,4,16", "--prelude", "bfloat16", "--documents", "2", NULL}};
  for (int i = 0; i < 2; i++) {
    const char *path = doc(i ? "prelude.h5" : "packed.h5");
    const char *av[24] = {fixture_exe, "synth"};
    int k = 2;
    for (int j = 0; sets[i][j]; j++) av[k++] = sets[i][j];
    av[k++] = "--out", av[k++] = path, av[k] = NULL;
    cli_result r;
    cli_run(&r, (char *const *)av);
    ck_assert_msg(r.status == 0, "synth %d: %s", i, r.err);
    char keep[256];
    snprintf(keep, sizeof keep, "%s", path);
    const char *const args[] = {"check", "--fixture", keep, "--oracle", "dd", NULL};
    ck_assert_int_eq(same_both_ways(args), 0);
  }
}
END_TEST

static const char *const grid_json =
    "{\"name\": \"stream\", \"entries\": [{\"shape\": \"1,512,8,16\", \"key_heads\": 4, \"h0\": true, \"gates\": "
    "\"slow\", \"seed\": 4, \"chunk\": [32], \"devices\": [2], \"documents\": 3, \"packing\": \"reset\"}, "
    "{\"shape\": \"1,512,8,16\", \"key_heads\": 4, \"h0\": true, \"gates\": \"slow\", \"seed\": 5, \"chunk\": [32], "
    "\"devices\": [2], \"grad\": true}]}";

/* coverage over two entries (GQA, h0; packed documents, or gradients), 4
 * mutants (one backward-only): whole and by one key head a group
 * (--group-heads 1), the same document but the command. (A budget streams
 * these small entries no longer: the stream plan counts the seams' sums
 * and read-back buffers, so one key head needs more than the whole entry.) */
START_TEST(coverage_mutant_rows) {
  const char *grid = doc("grid.json");
  FILE *f = fopen(grid, "w");
  ck_assert_ptr_nonnull(f);
  fputs(grid_json, f);
  fclose(f);
  char g[256];
  snprintf(g, sizeof g, "%s", grid);
  const char *const args[] = {"coverage", "--grid", g, "--mutants", "carry-zero,h0-ignored,reset-missing,grad-seam-stopped",
                              "--oracle", "dd", NULL};
  const char *const big[] = {"--max-bytes", "16G", NULL}, *const small[] = {"--group-heads", "1", NULL};
  cli_result r;
  const char *a = doc("cov-whole.json"), *b = doc("cov-stream.json");
  ck_assert_msg(run_to(args, big, a, &r) == 0, "whole: %s", r.err);
  ck_assert_msg(run_to(args, small, b, &r) == 0, "streamed: %s", r.err);
  json_error_t je;
  json_t *j = json_load_file(b, 0, &je);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "killed")), 4); /* every mutant killed when streamed */
  json_decref(j);
  docs_equal_but_command(a, b, 1);
  /* it streamed: scratch files are needed by one key head a group, not whole */
  setenv("TMPDIR", "/nonexistent/gdn-stream-paths", 1);
  ck_assert_msg(run_to(args, big, a, &r) == 0, "whole without scratch: %s", r.err);
  const int st = run_to(args, small, b, &r);
  unsetenv("TMPDIR");
  ck_assert_msg(st == 3 && strstr(r.err, "TMPDIR"), "streamed without scratch: status %d: %s", st, r.err);
  /* gqa-tile, reading key heads across groups, streams on each group's
   * tile view: killed by the GQA entries, the whole run's document */
  const char *const cross[] = {"coverage", "--grid", g, "--mutants", "carry-zero,gqa-tile", "--oracle", "dd", NULL};
  ck_assert_msg(run_to(cross, big, a, &r) == 0, "whole: %s", r.err);
  ck_assert_msg(run_to(cross, small, b, &r) == 0, "streamed: %s", r.err);
  j = json_load_file(b, 0, &je);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "killed")), 2);
  json_decref(j);
  docs_equal_but_command(a, b, 1);
}
END_TEST

/* parity_stream_seg: each group's ids must be the first group's. */
START_TEST(segment_ids_per_group) {
  gdn_error e;
  gdn_error_init(&e);
  int32_t ids[2 * 8] = {1, 1, 1, 2, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3, 3, 0}, other[2 * 8];
  gdn_inputs first, hdr, grp;
  gdn_inputs_init(&first), gdn_inputs_init(&hdr), gdn_inputs_init(&grp);
  first.shape = (gdn_shape){2, 8, 1, 2, 4, 4};
  hdr.shape = (gdn_shape){2, 8, 4, 8, 4, 4};
  first.seg = ids, first.packing = GDN_PACKING_RESET;
  ck_assert_int_eq(parity_stream_seg_keep(&hdr, &first, &e), GDN_OK);
  ck_assert(hdr.seg != ids && !memcmp(hdr.seg, ids, sizeof ids) && hdr.packing == GDN_PACKING_RESET);
  memcpy(other, ids, sizeof ids);
  grp = first, grp.seg = other;
  ck_assert_int_eq(parity_stream_seg_same(&hdr, &grp, 3, &e), GDN_OK);
  other[8 + 5] = 7; /* b 1, t 5 */
  ck_assert_int_eq(parity_stream_seg_same(&hdr, &grp, 3, &e), GDN_ERR_INTERNAL);
  ck_assert_msg(strstr(e.msg, "head group 3") && strstr(e.msg, "b 1, t 5"), "%s", e.msg);
  other[8 + 5] = ids[8 + 5];
  grp.packing = GDN_PACKING_LEAK;
  ck_assert_int_eq(parity_stream_seg_same(&hdr, &grp, 1, &e), GDN_ERR_INTERNAL);
  ck_assert_msg(strstr(e.msg, "another packing"), "%s", e.msg);
  grp.packing = GDN_PACKING_RESET, grp.seg = NULL;
  ck_assert_int_eq(parity_stream_seg_same(&hdr, &grp, 2, &e), GDN_ERR_INTERNAL);
  ck_assert_msg(strstr(e.msg, "no segment ids"), "%s", e.msg);
  gdn_free(hdr.seg);
}
END_TEST

int main(int argc, char **argv) {
  ckr_args(argc, argv, "test_stream_paths PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, &exe, &fixture_exe);
  Suite *su = suite_create("stream_paths");
  TCase *tc = CKR_TCASE(su, "stream_paths", 600, packed_documents, bfloat16_prelude, fixtures, coverage_mutant_rows,
                        segment_ids_per_group);
  tcase_add_checked_fixture(tc, cli_scratch_make, cli_scratch_remove); /* the files the runs write */
  return ckr_run(su);
}
