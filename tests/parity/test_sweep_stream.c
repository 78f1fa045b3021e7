/* A run streamed by head group (--group-heads; parity_sweep_stream.h): its
 * results document (--reproducible) is the whole run's byte for byte --
 * the default grid, GQA with gradients (both oracle tiers), several chunk
 * sizes, chunk sharding and both prefixes, bfloat16, no oracle, a planted
 * mutant -- and the run chosen automatically by --max-bytes gives the same
 * document but for the command it records; gqa-tile, which reads key
 * heads across groups, streams on each group's tile view, a FAIL byte for
 * byte the whole run's.  Negative control: the streamed
 * run with a planted mutant is not the correct run's document (the
 * comparison can fail).  Failure paths: what cannot be streamed is refused
 * naming it, a group over the limit names its peak, an unwritable scratch
 * folder is named, and no scratch file is ever left behind.  check of a
 * fixture by head group (fix_group_read): the whole check's document, with
 * the file's /cotangents or --grad's, and a stored /oracle (its /outputs
 * and the oracle's defects: test_check_stream). */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_runner.h"

#include "cli_run.h"
#include "fix.h"
#include "../reports/test_util.h"

static char *exe, *fixture_exe;

/* exe, args..., extra..., --json out, --reproducible, --quiet */
static int run_to(const char *const *args, const char *const *extra, const char *json, cli_result *r) {
  char *av[48];
  int n = 0;
  av[n++] = (char *)exe;
  for (int i = 0; args[i]; i++) av[n++] = (char *)args[i];
  for (int i = 0; extra && extra[i]; i++) av[n++] = (char *)extra[i];
  av[n++] = "--json";
  av[n++] = (char *)json;
  av[n++] = "--reproducible";
  av[n++] = "--quiet";
  av[n] = NULL;
  cli_run(r, av);
  return r->status;
}

static char scratch[64];

/* A fresh, empty scratch folder as TMPDIR; the run must leave it empty. */
static void scratch_begin(void) {
  snprintf(scratch, sizeof scratch, "/tmp/gdn-stream-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(scratch));
  setenv("TMPDIR", scratch, 1);
}

static void scratch_end(void) {
  ck_assert_msg(test_count_entries(scratch) == 0, "scratch files left in %s", scratch);
  rmdir(scratch);
  unsetenv("TMPDIR");
}

/* The whole run and the run streamed by `group` key heads: both exit 0 or
 * 1 alike, their documents equal byte for byte. */
static void same_both_ways(const char *const *args, const char *group) {
  char a[] = "/tmp/gdn-stream-a-XXXXXX", b[] = "/tmp/gdn-stream-b-XXXXXX";
  close(mkstemp(a));
  close(mkstemp(b));
  cli_result r;
  scratch_begin();
  const int ra = run_to(args, NULL, a, &r);
  ck_assert_msg(ra == 0 || ra == 1, "whole run: status %d: %s", ra, r.err);
  const char *const g[] = {"--group-heads", group, NULL};
  const int rb = run_to(args, g, b, &r);
  ck_assert_msg(rb == ra, "streamed run: status %d (whole %d): %s", rb, ra, r.err);
  scratch_end();
  char *da = test_read_file(a, NULL), *db = test_read_file(b, NULL);
  ck_assert(da && db && strlen(da) > 1000);
  ck_assert_msg(!strcmp(da, db), "%s and %s differ (%s ...)", a, b, args[1]);
  free(da), free(db);
  unlink(a), unlink(b);
}

START_TEST(default_grid) {
  const char *const args[] = {"--shape", "1,256,4,16", "--key-heads", "2", NULL};
  same_both_ways(args, "1");
}
END_TEST

START_TEST(gqa_with_gradients) {
  const char *const mp[] = {"--shape", "2,192,6,8", "--key-heads", "3", "--h0", "--grad", NULL};
  same_both_ways(mp, "1");
  const char *const dd[] = {"--shape", "1,256,6,16", "--key-heads", "3", "--h0", "--grad", "--chunk", "32",
                            "--oracle", "dd", NULL};
  same_both_ways(dd, "2");
}
END_TEST

START_TEST(other_configurations) {
  const char *const chunks[] = {"--shape", "1,256,6,16", "--key-heads", "3", "--h0", "--chunk", "16,32",
                                "--devices", "1,2,4", NULL};
  same_both_ways(chunks, "1");
  const char *const shard[] = {"--shape", "2,192,4,8", "--key-heads", "4", "--h0", "--shard", "chunks", "--prefix",
                               "sequential,hillis-steele", NULL};
  same_both_ways(shard, "3");
  const char *const bf16[] = {"--shape", "1,256,4,16", "--h0", "--dtype", "bfloat16", NULL};
  same_both_ways(bf16, "1");
  const char *const none[] = {"--shape", "1,128,4,16", "--oracle", "none", NULL};
  same_both_ways(none, "2");
  const char *const mutant[] = {"--shape", "1,256,4,16", "--h0", "--mutant", "carry-zero", NULL};
  same_both_ways(mutant, "1");
}
END_TEST

/* gqa-tile planted (value head hv reads key head hv mod Hk): value heads
 * 0..5 of 3 key heads read key heads 0 1 2 0 1 2, across every group of
 * one key head and across groups of 2 and 1; streamed on each group's tile
 * view (parity_stream_tile.h), the whole run's document byte for byte, a
 * FAIL both ways (the mutant is seen, not lost to the grouping). */
START_TEST(gqa_tile_streamed) {
  const char *const tile[] = {"--shape", "1,256,6,16", "--key-heads", "3", "--h0", "--mutant", "gqa-tile", NULL};
  char a[] = "/tmp/gdn-stream-a-XXXXXX";
  close(mkstemp(a));
  cli_result r;
  ck_assert_int_eq(run_to(tile, NULL, a, &r), 1); /* the whole run kills it */
  unlink(a);
  same_both_ways(tile, "1");
  same_both_ways(tile, "2");
}
END_TEST

/* The streamed run with a mutant against the correct whole run: the
 * documents differ (and the verdicts), so the comparison above can fail. */
START_TEST(negative_control) {
  const char *const good[] = {"--shape", "1,256,4,16", "--h0", NULL};
  const char *const bad[] = {"--shape", "1,256,4,16", "--h0", "--mutant", "carry-zero", "--group-heads", "1", NULL};
  char a[] = "/tmp/gdn-stream-a-XXXXXX", b[] = "/tmp/gdn-stream-b-XXXXXX";
  close(mkstemp(a));
  close(mkstemp(b));
  cli_result r;
  ck_assert_int_eq(run_to(good, NULL, a, &r), 0);
  ck_assert_int_eq(run_to(bad, NULL, b, &r), 1);
  char *da = test_read_file(a, NULL), *db = test_read_file(b, NULL);
  ck_assert(da && db && strcmp(da, db));
  free(da), free(db);
  unlink(a), unlink(b);
}
END_TEST

/* --max-bytes below the whole run streams it by itself: the document is the
 * whole run's but for the recorded command (which keeps --max-bytes).  The
 * budget counts the process's resident memory and the run's measurements
 * (parity_stream.h), some 25 MiB at any shape, so the shape is one whose
 * whole run needs more. */
START_TEST(chosen_by_the_budget) {
  if (CKR_UNDER_ASAN) return; /* the plan counts resident memory, which holds ASan's shadow: other budgets */
  const char *const args[] = {"--shape", "1,2048,8,32", "--key-heads", "4", "--h0", "--oracle", "none", "--threads",
                              "1", NULL};
  const char *const lim[] = {"--max-bytes", "30M", NULL};
  char a[] = "/tmp/gdn-stream-a-XXXXXX", b[] = "/tmp/gdn-stream-b-XXXXXX";
  close(mkstemp(a));
  close(mkstemp(b));
  cli_result r;
  scratch_begin();
  ck_assert_int_eq(run_to(args, NULL, a, &r), 0);
  ck_assert_msg(run_to(args, lim, b, &r) == 0, "%s", r.err);
  scratch_end();
  char *argv[] = {(char *)exe, "--shape", "1,2048,8,32", "--key-heads", "4", "--h0", "--oracle", "none",
                  "--threads", "1", "--max-bytes", "30M", NULL};
  cli_run(&r, argv); /* the estimate names the group size and its peak */
  ck_assert_msg(strstr(r.out, "streamed by head group: ") && strstr(r.out, "per group") &&
                    strstr(r.out, "expected peak"), "%s", r.out);
  json_error_t je;
  json_t *ja = json_load_file(a, 0, &je), *jb = json_load_file(b, 0, &je);
  ck_assert(ja && jb);
  ck_assert(!json_equal(ja, jb)); /* the command differs ... */
  json_object_del(ja, "command");
  json_object_del(jb, "command");
  ck_assert(json_equal(ja, jb)); /* ... and nothing else */
  json_decref(ja), json_decref(jb);
  unlink(a), unlink(b);
}
END_TEST

START_TEST(refusals) {
  static const struct { const char *args[12]; const char *needle; } t[] = {
      {{"--shape", "1,128,4,16", "--key-heads", "2", "--group-heads", "3"}, "3 key heads"},
      {{"--shape", "1,128,4,16", "--group-heads", "0"}, "--group-heads"},
      {{"--shape", "1,128,4,16", "--key-heads", "2", "--max-bytes", "100K"}, "one key head alone would need"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char *av[16];
    int n = 0;
    av[n++] = (char *)exe;
    for (int j = 0; t[i].args[j]; j++) av[n++] = (char *)t[i].args[j];
    av[n] = NULL;
    cli_result r;
    cli_run(&r, av);
    ck_assert_msg(r.status == 2, "case %zu: status %d: %s", i, r.status, r.err);
    ck_assert_msg(strstr(r.err, t[i].needle) != NULL, "case %zu: %s", i, r.err);
  }
  /* an unwritable scratch folder: named, exit 3, nothing written */
  scratch_begin();
  chmod(scratch, 0500);
  char *av[] = {(char *)exe, "--shape", "1,128,4,16", "--group-heads", "2", "--quiet", NULL};
  cli_result r;
  cli_run(&r, av);
  chmod(scratch, 0700);
  if (geteuid() != 0) { /* root writes anyway */
    ck_assert_msg(r.status == 3, "status %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, scratch) && strstr(r.err, "TMPDIR"), "%s", r.err);
  }
  scratch_end();
  setenv("TMPDIR", "/nonexistent/gdn-parity-scratch", 1);
  cli_run(&r, av);
  unsetenv("TMPDIR");
  ck_assert_msg(r.status == 3 && strstr(r.err, "/nonexistent/gdn-parity-scratch"), "status %d: %s", r.status, r.err);
}
END_TEST

/* gdn-fixture synth ARGS --out a fresh file in `dir`. */
static void synth(const char *dir, const char *name, const char *const *args, char *path, size_t n) {
  snprintf(path, n, "%s/%s", dir, name);
  char *av[24];
  int k = 0;
  av[k++] = (char *)fixture_exe;
  av[k++] = "synth";
  for (int i = 0; args[i]; i++) av[k++] = (char *)args[i];
  av[k++] = "--out";
  av[k++] = path;
  av[k] = NULL;
  cli_result r;
  cli_run(&r, av);
  ck_assert_msg(r.status == 0, "synth %s: %s", name, r.err);
}

/* The hash `gdn-fixture synth` printed ("inputs_sha256 HEX"). */
static void printed_hash(const char *out, char hex[FIX_SHA256_HEX]) {
  const char *h = strstr(out, "inputs_sha256 ");
  ck_assert_msg(h && strlen(h) >= 14 + 64, "no hash printed: %s", out);
  memcpy(hex, h + 14, 64);
  hex[64] = '\0';
}

/* gdn-fixture synth by head group (--group-heads, never holding the whole
 * generation) writes the file the whole synth writes: the same inputs
 * (inputs_sha256 of the loaded files, which covers every value, the
 * segment ids and the packing), the same settings, and prints the same
 * hash -- GQA with h0, packed documents in bfloat16 storage, pre-normalised
 * q and k with slow gates, seed 5.  Negative control: seed 9's file
 * hashes otherwise. */
START_TEST(synth_by_head_group) {
  static const char *const sets[3][12] = {
      {"--shape", "2,96,6,8", "--key-heads", "3", "--h0", NULL},
      {"--shape", "1,128,4,16", "--documents", "3", "--packing", "reset", "--bf16", "q,k,v,beta", NULL},
      {"--shape", "1,64,2,16", "--prenorm", "--slow-gates", NULL}};
  char dir[] = "/tmp/gdn-stream-synth-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  for (int i = 0; i < 3; i++) {
    char paths[3][128], printed[3][FIX_SHA256_HEX];
    fix_fixture fx[3];
    for (int w = 0; w < 3; w++) { /* whole, by one key head, another seed by one key head */
      const char *av[24] = {fixture_exe, "synth"};
      int k = 2;
      for (int j = 0; sets[i][j]; j++) av[k++] = sets[i][j];
      if (w) av[k++] = "--group-heads", av[k++] = "1";
      av[k++] = "--seed", av[k++] = w == 2 ? "9" : "5";
      snprintf(paths[w], sizeof paths[w], "%s/%d-%d.h5", dir, i, w);
      av[k++] = "--out", av[k++] = paths[w], av[k] = NULL;
      cli_result r;
      cli_run(&r, (char *const *)av);
      ck_assert_msg(r.status == 0, "set %d, way %d: %s", i, w, r.err);
      printed_hash(r.out, printed[w]);
      gdn_error e;
      gdn_error_init(&e);
      fix_fixture_init(&fx[w]);
      ck_assert_msg(fix_load(&fx[w], paths[w], NULL, &e) == GDN_OK, "%s", e.msg);
      ck_assert_str_eq(fx[w].inputs_sha256, printed[w]);
    }
    ck_assert_str_eq(fx[1].inputs_sha256, fx[0].inputs_sha256);
    ck_assert_str_ne(fx[2].inputs_sha256, fx[0].inputs_sha256);
    const gdn_inputs *a = &fx[0].inputs, *b = &fx[1].inputs;
    ck_assert(a->l2norm_in_kernel == b->l2norm_in_kernel && a->bf16_mask == b->bf16_mask &&
              a->packing == b->packing && a->has_scale == b->has_scale && !memcmp(&a->shape, &b->shape, sizeof a->shape));
    ck_assert_int_eq(fx[1].chunk_size, fx[0].chunk_size);
    for (int w = 0; w < 3; w++) fix_fixture_clear(&fx[w]), unlink(paths[w]);
  }
  rmdir(dir);
}
END_TEST

/* check --fixture F [extra] whole and by head group: the same document. */
static void check_both_ways(const char *fixture, const char *extra) {
  const char *const args[] = {"check", "--fixture", fixture, extra, NULL};
  same_both_ways(extra ? args : (const char *const[]){"check", "--fixture", fixture, NULL}, "1");
}

START_TEST(check_of_a_fixture) {
  char dir[] = "/tmp/gdn-stream-fx-XXXXXX", f1[128], f2[128], f4[128];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  synth(dir, "gqa.h5", (const char *const[]){"--shape", "2,192,6,8", "--key-heads", "3", "--h0", NULL}, f1,
        sizeof f1);
  synth(dir, "cot.h5", (const char *const[]){"--shape", "1,256,4,16", "--grad", NULL}, f2, sizeof f2);
  check_both_ways(f1, NULL);
  check_both_ways(f1, "--grad"); /* our kernels' gradients, cotangents from seed 0 */
  check_both_ways(f2, NULL);     /* the file's /cotangents */
  synth(dir, "oracle.h5", (const char *const[]){"--shape", "1,64,2,8", NULL}, f4, sizeof f4);
  cli_result r;
  char *regen[] = {(char *)fixture_exe, "regen", f4, "--oracle-bits", "64", NULL};
  cli_run(&r, regen);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
  check_both_ways(f4, NULL); /* its stored /oracle read by group (test_check_stream) */
  const char *const rm[] = {f1, f2, f4};
  for (int i = 0; i < 3; i++) unlink(rm[i]);
  rmdir(dir);
}
END_TEST

/* --grad: the group size counts the gradient sets, so a larger budget never
 * refuses what a smaller one ran.  At 1,512,8,16 (4 key heads, h0) 4000K ran
 * streamed and 5000K was refused (the forward fit whole, its gradients did
 * not), 6000K ran.  Since the streamed plan counts the process's resident
 * memory and the measurements (some 25 MiB), the shape is larger: at
 * 1,4096,8,16 (devices 1 and 2, no oracle) 40M runs streamed (the forward
 * fits whole, its gradients do not); the control: under one key head's peak
 * with its gradient sets (24M) the refusal says so and names the smallest
 * budget. */
START_TEST(grad_budget_monotone) {
  if (CKR_UNDER_ASAN) return; /* the plan counts resident memory, which holds ASan's shadow: other budgets */
  const char *const args[] = {"--shape", "1,4096,8,16", "--key-heads", "4", "--h0", "--grad", "--oracle", "none",
                              "--devices", "1,2", NULL};
  const char *const mid[] = {"--max-bytes", "40M", NULL}, *const low[] = {"--max-bytes", "24M", NULL};
  char a[] = "/tmp/gdn-stream-g-XXXXXX";
  close(mkstemp(a));
  cli_result r;
  scratch_begin();
  ck_assert_msg(run_to(args, mid, a, &r) == 0, "%s", r.err);
  ck_assert_msg(run_to(args, low, a, &r) == 2 && strstr(r.err, "with its gradient sets (--grad)") &&
                    strstr(r.err, "(--max-bytes 3"), "%s", r.err);
  scratch_end();
  unlink(a);
}
END_TEST

/* CPU seconds of the children waited for since the last call. */
static double child_cpu_since(double *mark) {
  struct rusage u;
  getrusage(RUSAGE_CHILDREN, &u);
  const double now = (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
                     1e-6 * (double)u.ru_stime.tv_usec;
  const double d = now - *mark;
  *mark = now;
  return d;
}

/* A missing or unusable TMPDIR is refused before any work (the first head
 * group's oracle used to run first): the refusal costs under a tenth of the
 * CPU time of the same run with a good scratch folder (measured: ~0.01 s
 * against ~1.5 s, the oracle of one of 4 head groups alone being over a
 * quarter of it), and names the folder. */
START_TEST(scratch_checked_before_any_work) {
  char *av[] = {(char *)exe, "--shape", "1,512,4,32", "--group-heads", "1", "--oracle", "mpfr", "--quiet", NULL};
  cli_result r;
  double mark = 0;
  child_cpu_since(&mark);
  scratch_begin(); /* the control: a good folder, the whole run */
  cli_run(&r, av);
  const double whole = child_cpu_since(&mark);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  scratch_end();
  const char *const bad[] = {"/nonexistent/gdn-parity-scratch", "/dev/null"};
  for (int i = 0; i < 2; i++) {
    setenv("TMPDIR", bad[i], 1);
    cli_run(&r, av);
    unsetenv("TMPDIR");
    const double refused = child_cpu_since(&mark);
    ck_assert_msg(r.status == 3 && strstr(r.err, bad[i]) && strstr(r.err, "TMPDIR"), "status %d: %s", r.status,
                  r.err);
    ck_assert_msg(refused < 0.1 * whole, "%s: refused after %.3f s of CPU, the whole run took %.3f s", bad[i],
                  refused, whole);
  }
}
END_TEST

CKR_MAIN_ARGS("test_sweep_stream PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, (&exe, &fixture_exe), "sweep_stream",
              "sweep_stream", 600, default_grid, gqa_with_gradients, other_configurations, gqa_tile_streamed, negative_control,
              chosen_by_the_budget, refusals, check_of_a_fixture, synth_by_head_group,
              scratch_checked_before_any_work, grad_budget_monotone)
