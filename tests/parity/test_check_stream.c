/* check of a fixture streamed by head group (parity_stream_outputs.h,
 * parity_stream_subject.h): its /outputs -- o, ht, and with /cotangents
 * their stored gradients -- each judged a group at a time, give the whole
 * check's results document byte for byte (--reproducible), asked for
 * (--group-heads) or chosen by a small --max-bytes (then all but the
 * recorded command).
 *
 * Negative control: one element of one output planted wrong at the last
 * head group fails the streamed check, naming the output, the value head
 * and the token, and the streamed document is still the whole check's: a
 * streamed run that skipped that group's slab would PASS and so differ.
 *
 * Packed documents with /outputs: the packing verdict merged over the
 * groups and o masked at padding slab by slab give the whole check's
 * document too (packed_outputs, packed_planted_fails). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"

#include "cli_run.h"
#include "../fixtures/h5_edit.h"
#include "../reports/test_util.h"

static char *exe, *fixture_exe;
static char dir[64];

/* A fresh folder for a test's files, removed (empty) at its end. */
static void dir_begin(void) {
  snprintf(dir, sizeof dir, "/tmp/gdn-check-stream-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}
static void dir_end(void) { ck_assert_msg(rmdir(dir) == 0, "%s is not empty", dir); }

/* gdn-fixture synth ARGS --out dir/name. */
static void synth(const char *name, const char *const *args, char *path, size_t n) {
  snprintf(path, n, "%s/%s", dir, name);
  char *av[24];
  int k = 0;
  av[k++] = fixture_exe;
  av[k++] = "synth";
  for (int i = 0; args[i]; i++) av[k++] = (char *)args[i];
  av[k++] = "--out";
  av[k++] = path;
  av[k] = NULL;
  cli_result r;
  cli_run(&r, av);
  ck_assert_msg(r.status == 0, "synth %s: %s", name, r.err);
}

/* check --fixture f [extra...] --json json --reproducible; its status. */
static int check_to(const char *f, const char *const *extra, const char *json, cli_result *r) {
  char *av[24];
  int n = 0;
  av[n++] = exe;
  av[n++] = "check";
  av[n++] = "--fixture";
  av[n++] = (char *)f;
  for (int i = 0; extra && extra[i]; i++) av[n++] = (char *)extra[i];
  av[n++] = "--json";
  av[n++] = (char *)json;
  av[n++] = "--reproducible";
  av[n] = NULL;
  cli_run(r, av);
  return r->status;
}

/* The whole check of f and the check streamed by one key head a group:
 * the same status (want) and the same document byte for byte; then (lim
 * not NULL) the check streamed because --max-bytes `lim` is under the whole
 * run: the same document but for the command it records.  r: the streamed
 * run's. */
static void same_both_ways(const char *f, const char *const *extra, const char *lim, int want, cli_result *r) {
  char a[256], b[256], c[256];
  snprintf(a, sizeof a, "%s/whole.json", dir);
  snprintf(b, sizeof b, "%s/streamed.json", dir);
  snprintf(c, sizeof c, "%s/budget.json", dir);
  const char *ex[8] = {NULL};
  int n = 0;
  for (int i = 0; extra && extra[i]; i++) ex[n++] = extra[i];
  ck_assert_msg(check_to(f, ex, a, r) == want, "%s whole: %d: %s", f, r->status, r->err);
  ck_assert_msg(!strstr(r->out, "streamed by head group"), "%s", r->out);
  cli_result rb;
  ex[n] = "--max-bytes", ex[n + 1] = lim;
  if (lim) {
    ck_assert_msg(check_to(f, ex, c, &rb) == want, "--max-bytes %s: %d: %s", lim, rb.status, rb.err);
    ck_assert_msg(strstr(rb.out, "streamed by head group"), "not streamed under --max-bytes %s: %s", lim, rb.out);
  }
  ex[n] = "--group-heads", ex[n + 1] = "1";
  ck_assert_msg(check_to(f, ex, b, r) == want, "streamed: %d (whole %d): %s", r->status, want, r->err);
  ck_assert_msg(strstr(r->out, "streamed by head group"), "%s", r->out);
  char *da = test_read_file(a, NULL), *db = test_read_file(b, NULL);
  ck_assert(da && db && strlen(da) > 1000);
  ck_assert_msg(!strcmp(da, db), "%s: the streamed document differs from the whole one", f);
  free(da), free(db);
  unlink(b);
  if (!lim) {
    unlink(a);
    return;
  }
  json_error_t je;
  json_t *ja = json_load_file(a, 0, &je), *jc = json_load_file(c, 0, &je);
  ck_assert(ja && jc);
  json_object_del(ja, "command");
  json_object_del(jc, "command");
  ck_assert_msg(json_equal(ja, jc), "%s: the document streamed under --max-bytes %s differs", f, lim);
  json_decref(ja), json_decref(jc);
  unlink(a), unlink(c);
}

/* Whether the document's case `devices` judged external output `name` (its
 * impls entry with an o rel_fro against the oracle). */
static int judged(const char *json_text, const char *name) {
  return strstr(json_text, name) != NULL;
}

/* o, ht of the stock scan's and a 2-device affine-prefix run's outputs,
 * GQA with h0: each output the subject of its case (the 2-device one),
 * against the fixture's scan output. */
START_TEST(outputs_forward) {
  char f[256];
  dir_begin();
  synth("fwd.h5", (const char *const[]){"--shape", "1,512,8,16", "--key-heads", "4", "--h0", "--kernel-outputs",
                                        "1,2", NULL},
        f, sizeof f);
  cli_result r;
  /* no --max-bytes leg: the stream plan counts the process's own resident
   * memory (some 30 MB), so a budget streams only a fixture whose whole run
   * needs more than that; the budget's own choice is test_sweep_stream's */
  same_both_ways(f, NULL, NULL, 0, &r);
  unlink(f);
  dir_end();
}
END_TEST

/* With /cotangents: the outputs' stored gradients dq dk dv dg dbeta dh0
 * judged against the oracle's VJP, a group at a time. */
START_TEST(outputs_with_gradients) {
  char f[256];
  dir_begin();
  synth("grad.h5", (const char *const[]){"--shape", "1,128,4,8", "--key-heads", "2", "--h0", "--grad",
                                         "--kernel-outputs", "1,2", NULL},
        f, sizeof f);
  cli_result r;
  same_both_ways(f, NULL, NULL, 0, &r);
  char a[256];
  snprintf(a, sizeof a, "%s/g.json", dir);
  ck_assert_int_eq(check_to(f, (const char *const[]){"--group-heads", "1", NULL}, a, &r), 0);
  char *d = test_read_file(a, NULL);
  ck_assert(d && judged(d, "kernel-affine-prefix-d2"));
  json_error_t je;
  json_t *j = json_loads(d, 0, &je);
  free(d);
  ck_assert(j);
  /* the output's gradients are judged: its dbeta against the oracle */
  json_t *cases = json_object_get(j, "cases");
  int seen = 0;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *impls = json_object_get(json_array_get(cases, i), "impls");
    json_t *x = json_object_get(impls, "kernel-affine-prefix-d2");
    if (x && json_object_get(json_object_get(x, "dbeta"), "rel_fro")) seen = 1;
  }
  ck_assert_msg(seen, "no case judged the output's dbeta");
  json_decref(j);
  unlink(a);
  unlink(f);
  dir_end();
}
END_TEST

/* One element of the 2-device output's o planted wrong in the last head
 * group (value head 3 of 4; key head 1 of 2), token 200: the streamed check
 * FAILs naming the output, the head and the token, and its document is the
 * whole check's. */
START_TEST(planted_output_fails) {
  char f[256];
  dir_begin();
  synth("bad.h5", (const char *const[]){"--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--kernel-outputs",
                                        "1,2", NULL},
        f, sizeof f);
  const hsize_t H = 4, D = 16, t = 200, h = 3, d = 5;
  h5e_poke(f, "/outputs/kernel-affine-prefix-d2/o", (t * H + h) * D + d, 0.5f);
  cli_result r;
  same_both_ways(f, NULL, NULL, 1, &r);
  ck_assert_msg(strstr(r.out, "FAIL") && strstr(r.out, "kernel-affine-prefix-d2"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "t=200") && strstr(r.out, "h=3"), "the worst element is not named: %s", r.out);
  unlink(f);
  dir_end();
}
END_TEST

/* A fixture with a stored /oracle (gdn-fixture regen), then one defect
 * each: the reference the streamed check reads by hyperslab and trusts or
 * recomputes is the whole check's, with its note.  Planted in the last head
 * group (value head 3 of 4): a value of /oracle/o in a spot-checked column
 * (dv 6 of 16: parity_reference_spot_check's columns are 2, 6, 10, 14), a
 * NaN in /oracle/ht (whole index ((3 * 16) + 2) * 16 + 5 = 805), an input
 * changed after regen (stale).  A streamed check that skipped the last
 * group's slab would trust the first two and differ. */
static const struct {
  const char *name, *dataset;
  hsize_t flat;
  float v;
  const char *note; /* in the document's oracle_note (NULL: trusted, none) */
  int status;       /* the check's: the outputs were computed before the stale input changed */
} stored_cases[] = {
    {"trusted", NULL, 0, 0, NULL, 0},
    {"spot", "/oracle/o", (200 * 4 + 3) * 16 + 6, 0.75f, "stored /oracle not used: spot check failed: 4 recomputed", 0},
    {"nan", "/oracle/ht", ((3 * 16) + 2) * 16 + 5, NAN, "stored /oracle not used: /oracle/ht[805] is not finite (nan)",
     0},
    {"stale", "/inputs/v", (100 * 4 + 3) * 16 + 1, 0.25f, "stored /oracle not used: stale", 1},
};

START_TEST(stored_oracle) {
  for (size_t i = 0; i < sizeof stored_cases / sizeof *stored_cases; i++) {
    char f[256], a[256];
    dir_begin();
    synth("oracle.h5", (const char *const[]){"--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--kernel-outputs",
                                             "1,2", NULL},
          f, sizeof f);
    cli_result r;
    char *regen[] = {fixture_exe, "regen", f, "--oracle-bits", "64", NULL};
    cli_run(&r, regen);
    ck_assert_msg(r.status == 0, "regen: %s", r.err);
    if (stored_cases[i].dataset) h5e_poke(f, stored_cases[i].dataset, stored_cases[i].flat, stored_cases[i].v);
    same_both_ways(f, NULL, NULL, stored_cases[i].status, &r);
    snprintf(a, sizeof a, "%s/s.json", dir);
    ck_assert_int_eq(check_to(f, (const char *const[]){"--group-heads", "1", NULL}, a, &r), stored_cases[i].status);
    json_error_t je;
    json_t *j = json_load_file(a, 0, &je), *in = json_array_get(json_object_get(j, "inputs"), 0);
    ck_assert(j && in);
    const char *note = json_string_value(json_object_get(in, "oracle_note"));
    if (!stored_cases[i].note) {
      ck_assert_msg(json_is_true(json_object_get(in, "oracle_from_fixture")) && !note, "%s: not trusted: %s",
                    stored_cases[i].name, note ? note : "");
    } else {
      ck_assert_msg(note && strstr(note, stored_cases[i].note), "%s: note %s", stored_cases[i].name, note ? note : "");
      ck_assert(!json_is_true(json_object_get(in, "oracle_from_fixture")));
      ck_assert_msg(strstr(r.out, "warning: the stored /oracle is"), "%s: no warning: %s", stored_cases[i].name, r.out);
    }
    json_decref(j);
    unlink(a);
    unlink(f);
    dir_end();
  }
}
END_TEST

/* The dd tier's /oracle (gdn-fixture regen --oracle dd) stored with its
 * certificate: trusted as an MPFR one is (fresh, the attribute table, the
 * spot check), whole and streamed alike, reported as tier dd with the
 * stored certificate; then one defect each, caught: a value of /oracle/o
 * in a spot-checked column (the spot check), certified_bits raised past
 * the tier's 106 bits (the attribute table), tier "dd" on an MPFR /oracle
 * (refused by name, exit 2); and with a trusted dd /oracle, one output
 * planted wrong at value head 3, token 200: FAIL naming the output, the
 * head and the token. */
static void regen_dd(const char *f) {
  cli_result r;
  char *regen[] = {fixture_exe, "regen", (char *)f, "--oracle", "dd", NULL};
  cli_run(&r, regen);
  ck_assert_msg(r.status == 0 && strstr(r.out, "tier dd"), "regen --oracle dd: %s %s", r.out, r.err);
}

static const char *const dd_synth[] = {"--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--kernel-outputs", "1,2",
                                       NULL};

START_TEST(stored_dd_oracle) {
  char f[256], a[256];
  dir_begin();
  synth("dd.h5", dd_synth, f, sizeof f);
  regen_dd(f);
  cli_result r;
  same_both_ways(f, NULL, NULL, 0, &r);
  ck_assert_msg(strstr(r.out, "reference: the fixture's dd oracle") && strstr(r.out, "spot check: 4"), "%s", r.out);
  snprintf(a, sizeof a, "%s/dd.json", dir);
  ck_assert_int_eq(check_to(f, (const char *const[]){"--group-heads", "1", NULL}, a, &r), 0);
  json_error_t je;
  json_t *j = json_load_file(a, 0, &je), *in = json_array_get(json_object_get(j, "inputs"), 0);
  ck_assert(j && in);
  ck_assert(json_is_true(json_object_get(in, "oracle_from_fixture")));
  ck_assert_str_eq(json_string_value(json_object_get(in, "oracle_tier")), "dd");
  ck_assert_int_eq(json_integer_value(json_object_get(in, "oracle_precision_bits")), 106);
  ck_assert_int_eq(json_integer_value(json_object_get(in, "oracle_sampled_columns")), 4 * 2);
  ck_assert_int_eq(json_integer_value(json_object_get(in, "oracle_bound_violations")), 0);
  ck_assert_int_ge(json_integer_value(json_object_get(in, "oracle_certified_bits")), 80);
  json_decref(j);
  unlink(a);
  /* an output planted wrong: value head 3, token 200 (the last head group) */
  h5e_poke(f, "/outputs/kernel-affine-prefix-d2/o", (200 * 4 + 3) * 16 + 5, 0.5f);
  same_both_ways(f, NULL, NULL, 1, &r);
  ck_assert_msg(strstr(r.out, "FAIL") && strstr(r.out, "kernel-affine-prefix-d2") && strstr(r.out, "t=200") &&
                    strstr(r.out, "h=3"),
                "%s", r.out);
  unlink(f);
  /* tampered: a value the spot check sees, then the certificate */
  synth("dd.h5", dd_synth, f, sizeof f);
  regen_dd(f);
  h5e_poke(f, "/oracle/o", (200 * 4 + 3) * 16 + 6, 0.75f);
  same_both_ways(f, NULL, NULL, 0, &r);
  ck_assert_msg(strstr(r.out, "not trusted (spot check failed: 4 recomputed"), "%s", r.out);
  unlink(f);
  synth("dd.h5", dd_synth, f, sizeof f);
  regen_dd(f);
  h5e_set_attr_int(f, "/oracle", "certified_bits", 107, 1);
  same_both_ways(f, NULL, NULL, 0, &r);
  ck_assert_msg(strstr(r.out, "certified_bits 107 is outside [1, precision_bits = 106]"), "%s", r.out);
  unlink(f);
  /* tier "dd" on an MPFR /oracle: refused by name */
  synth("dd.h5", dd_synth, f, sizeof f);
  char *regen[] = {fixture_exe, "regen", f, "--oracle-bits", "64", NULL};
  cli_run(&r, regen);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
  h5e_set_attr_str(f, "/oracle", "tier", "dd");
  ck_assert_int_eq(check_to(f, NULL, a, &r), 2);
  ck_assert_msg(strstr(r.err, "precision_bits 64 with tier \"dd\""), "%s", r.err);
  unlink(f);
  unlink(a);
  dir_end();
}
END_TEST

/* A stored /oracle with /cotangents: its forward read by group, the
 * oracle's VJP computed by group (parity_group_oracle.vjp_only), the
 * outputs' gradients judged against it. */
START_TEST(stored_oracle_with_gradients) {
  char f[256];
  dir_begin();
  synth("og.h5", (const char *const[]){"--shape", "1,128,4,8", "--key-heads", "2", "--h0", "--grad",
                                       "--kernel-outputs", "1,2", NULL},
        f, sizeof f);
  cli_result r;
  char *regen[] = {fixture_exe, "regen", f, "--oracle-bits", "64", NULL};
  cli_run(&r, regen);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
  same_both_ways(f, NULL, NULL, 0, &r);
  ck_assert_msg(strstr(r.out, "the fixture's MPFR oracle"), "%s", r.out);
  unlink(f);
  dir_end();
}
END_TEST

/* Outputs declaring two shard modes (parity_check_shard.h): two streamed
 * sweeps, each judging its outputs in its mode, as the whole check runs
 * two; with a stored /oracle, read again by each. */
START_TEST(two_shard_runs) {
  char f[256];
  dir_begin();
  synth("shards.h5", (const char *const[]){"--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--kernel-outputs",
                                           "1,2", NULL},
        f, sizeof f);
  h5e_set_attr_str(f, "/outputs/kernel-scan", "shard", "tokens");
  h5e_set_attr_str(f, "/outputs/kernel-affine-prefix-d2", "shard", "chunks");
  cli_result r;
  same_both_ways(f, NULL, NULL, 0, &r);
  ck_assert_msg(strstr(r.out, "shard tokens (declared), judging 1 of the fixture's 2 outputs") &&
                    strstr(r.out, "shard chunks (declared), judging 1 of the fixture's 2 outputs"),
                "%s", r.out);
  char *regen[] = {fixture_exe, "regen", f, "--oracle-bits", "64", NULL};
  cli_run(&r, regen);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
  same_both_ways(f, NULL, NULL, 0, &r);
  unlink(f);
  dir_end();
}
END_TEST

/* Packed documents (3 per row, reset, h0) with our kernels' outputs; the
 * 2-device output's "padding" attribute removed, so its o is masked at the
 * padding tokens (the reference's values there) and its ht, the row ending
 * in padding, is not judged; the stock one declares padding zeroed.  The
 * streamed check's packing verdict (merged over the head groups) and its
 * masks are the whole check's, byte for byte. */
static void packed_synth(const char *name, char *f, size_t n) {
  synth(name, (const char *const[]){"--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--documents", "3",
                                    "--packing", "reset", "--kernel-outputs", "1,2", NULL},
        f, n);
  hid_t h = h5e_open_rw(f), g = H5Gopen2(h, "/outputs/kernel-affine-prefix-d2", H5P_DEFAULT);
  ck_assert(g >= 0 && H5Adelete(g, "padding") >= 0);
  H5Gclose(g);
  H5Fclose(h);
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

START_TEST(packed_outputs) {
  char f[256], a[256];
  dir_begin();
  packed_synth("packed.h5", f, sizeof f);
  cli_result r;
  same_both_ways(f, NULL, NULL, 0, &r);
  snprintf(a, sizeof a, "%s/p.json", dir);
  ck_assert_int_eq(check_to(f, (const char *const[]){"--group-heads", "1", NULL}, a, &r), 0);
  char *d = test_read_file(a, NULL);
  ck_assert(d);
  /* both outputs compute reset (the fixture's), judged so in every case */
  ck_assert_msg(count_of(d, "\"packing_matched\": \"reset\"") >= 2 && !strstr(d, "\"packing_matched\": \"leak\""),
                "%s", d);
  ck_assert_msg(strstr(d, "not judged at the") && strstr(d, "padding tokens (segment id 0)"), "no mask: %s", d);
  free(d);
  unlink(a);
  unlink(f);
  dir_end();
}
END_TEST

/* Negative control: one element of the masked output's o planted wrong
 * inside a document at the last head group (value head 3, token 100): the
 * streamed check FAILs as the whole one, with its document byte for byte.
 * The planted error is that output's largest under both packings, so a
 * packing verdict recorded from the first group only (heads 0-1) would
 * record other packing_err values and differ. */
START_TEST(packed_planted_fails) {
  char f[256];
  dir_begin();
  packed_synth("packbad.h5", f, sizeof f);
  const hsize_t H = 4, D = 16, t = 100, h = 3, d = 5;
  h5e_poke(f, "/outputs/kernel-affine-prefix-d2/o", (t * H + h) * D + d, 0.5f);
  cli_result r;
  same_both_ways(f, NULL, NULL, 1, &r);
  ck_assert_msg(strstr(r.out, "FAIL") && strstr(r.out, "kernel-affine-prefix-d2"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "t=100") && strstr(r.out, "h=3"), "the worst element is not named: %s", r.out);
  unlink(f);
  dir_end();
}
END_TEST

CKR_MAIN_ARGS("test_check_stream PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, (&exe, &fixture_exe), "check_stream",
              "check_stream", 600, outputs_forward, outputs_with_gradients, planted_output_fails, stored_oracle,
              stored_dd_oracle, stored_oracle_with_gradients, two_shard_runs, packed_outputs, packed_planted_fails)
