/* gdn-parity check of a KDA fixture streamed by key-head group
 * (parity_recur_check_stream.h): the JSON with --reproducible is the whole
 * check's byte for byte at --group-heads 1 and 2, for a fixture with
 * kernel outputs (gdn-fixture synth --kernel-outputs 1,2, GVA, h0) and a
 * stored /oracle from `gdn-fixture regen` (MPFR, and the dd tier; bfloat16
 * inputs, whose kernels' o is judged by the bfloat16 band), with
 * none (the oracle recomputed, its certificate merged over the groups) and
 * with a stale one (recomputed, the same note).  Negative control: one o
 * element of an output planted wrong fails streamed as whole, naming the
 * same head and token.  The budget: --max-bytes under one key head is
 * refused naming the smallest --max-bytes that runs; that value streams
 * (without --group-heads) to the whole check's JSON.  Stored gradients
 * (/cotangents and each output's gradients) stream too, the whole's JSON
 * byte for byte, and a planted dg and dq element fail both alike at the
 * same place.  Small shapes: a few seconds in all. */
#include <check.h>
#include <hdf5.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fixtures/h5_edit.h"
#include "cli_run.h"

static const char *exe_parity, *exe_fixture;

/* The whole file f as a string (caller frees). */
static char *slurp(const char *f) {
  FILE *fp = fopen(f, "rb");
  ck_assert_msg(fp != NULL, "%s", f);
  fseek(fp, 0, SEEK_END);
  const long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(s, 1, (size_t)n, fp), (size_t)n);
  s[n] = '\0';
  fclose(fp);
  return s;
}

/* gdn-fixture synth of the test's KDA fixture at f (B 1, T 64, Hk 3, Hv 6,
 * D 8, h0, kernel outputs D 1 and 2), then regen per `oracle` ("mpfr",
 * "dd" or NULL: none); grad: with /cotangents. */
static void make_opts(const char *f, const char *shape, const char *hk, const char *oracle, int grad, int bf16) {
  cli_result *r = malloc(sizeof *r);
  char *syn[] = {(char *)exe_fixture, "synth", "--recurrence", "kda", "--shape", (char *)shape, "--key-heads",
                 (char *)hk, "--h0", "--kernel-outputs", "1,2", "--seed", "7", "--out", (char *)f,
                 grad ? "--grad" : bf16 ? "--bf16" : NULL, bf16 && !grad ? "q,k,v,beta" : NULL, NULL};
  cli_run(r, syn);
  ck_assert_msg(r->status == 0, "%s", r->err);
  if (oracle) {
    char *reg[] = {(char *)exe_fixture, "regen", "--oracle", (char *)oracle, (char *)f, NULL};
    cli_run(r, reg);
    ck_assert_msg(r->status == 0, "%s", r->err);
  }
  free(r);
}

static void make_shape(const char *f, const char *shape, const char *hk, const char *oracle, int grad) {
  make_opts(f, shape, hk, oracle, grad, 0);
}

static void make(const char *f, const char *oracle, int grad) { make_shape(f, "1,64,6,8", "3", oracle, grad); }

/* check f with extra arguments (up to 4, NULL-ended) into json; its status, output in *r. */
static int check(cli_result *r, const char *f, const char *json, const char *a1, const char *a2, const char *a3,
                 const char *a4) {
  char *av[] = {(char *)exe_parity, "check", (char *)f, "--reproducible", "--json", (char *)json,
                (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
  cli_run(r, av);
  return r->status;
}

/* whole vs --group-heads 1 and 2: the same status and JSON bytes; the JSON (caller frees). */
static char *same_streamed(const char *f, int want_status) {
  cli_result *r = malloc(sizeof *r);
  ck_assert_msg(check(r, f, cli_path("whole.json"), NULL, NULL, NULL, NULL) == want_status, "%d %s", r->status, r->err);
  ck_assert_msg(!strstr(r->out, "streamed by head group"), "%s", r->out);
  char *whole = slurp(cli_path("whole.json"));
  for (int g = 1; g <= 2; g++) {
    const char *n = g == 1 ? "1" : "2";
    ck_assert_msg(check(r, f, cli_path("g.json"), "--group-heads", n, NULL, NULL) == want_status, "%d %s",
                  r->status, r->err);
    ck_assert_msg(strstr(r->out, "streamed by head group"), "%s", r->out);
    char *s = slurp(cli_path("g.json"));
    size_t at = 0;
    while (s[at] && s[at] == whole[at]) at++;
    ck_assert_msg(!strcmp(s, whole), "--group-heads %s: the JSON differs from the whole check's at byte %zu: %.60s",
                  n, at, s + at);
    free(s);
  }
  free(r);
  return whole;
}

START_TEST(stored_oracle_mpfr_and_dd) {
  char f[512];
  snprintf(f, sizeof f, "%s", cli_path("k.h5")); /* cli_path's buffers rotate */
  for (int dd = 0; dd <= 1; dd++) {
    make(f, dd ? "dd" : "mpfr", 0);
    char *j = same_streamed(f, 0);
    json_t *doc = json_loads(j, 0, NULL);
    ck_assert_ptr_nonnull(doc);
    json_t *orc = json_object_get(doc, "oracle");
    ck_assert(json_is_true(json_object_get(orc, "from_fixture")));
    ck_assert_str_eq(json_string_value(json_object_get(orc, "tier")), dd ? "dd" : "mpfr");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_cases")), 8); /* 6 kernels, 2 outputs */
    ck_assert(json_is_true(json_object_get(doc, "pass")));
    json_decref(doc);
    free(j);
    remove(f);
  }
  /* bfloat16 inputs: the kernels' o in bfloat16, judged by the bfloat16 band ("band_ht" in each case) */
  make_opts(f, "1,64,6,8", "3", "mpfr", 0, 1);
  char *j = same_streamed(f, 0);
  ck_assert_msg(strstr(j, "band_ht"), "%s", j);
  free(j);
}
END_TEST

START_TEST(oracle_absent_or_stale) {
  char f[512];
  snprintf(f, sizeof f, "%s", cli_path("k.h5")); /* cli_path's buffers rotate */
  make(f, NULL, 0); /* none: recomputed, the certificate merged over the groups */
  char *j = same_streamed(f, 0);
  ck_assert_msg(strstr(j, "\"from_fixture\": false") || strstr(j, "\"from_fixture\":false"), "%s", j);
  free(j);
  remove(f);
  make(f, "mpfr", 0);
  h5e_poke(f, "/inputs/v", 5, 0.25f); /* an input changed: the /oracle is stale, the stored outputs fail */
  j = same_streamed(f, 1);
  ck_assert_msg(strstr(j, "stored /oracle not used: stale"), "%s", j);
  free(j);
}
END_TEST

/* The negative control: one o element of an output off, found streamed as whole at the same head and token. */
START_TEST(planted_output_error) {
  char f[512];
  snprintf(f, sizeof f, "%s", cli_path("k.h5")); /* cli_path's buffers rotate */
  make(f, "mpfr", 0);
  const hsize_t T = 64, Hv = 6, D = 8, t = 37, h = 4, d = 3;
  h5e_poke(f, "/outputs/kernel-scan/o", (t * Hv + h) * D + d, 9.0f);
  char *j = same_streamed(f, 1);
  json_t *doc = json_loads(j, 0, NULL), *c;
  size_t i;
  int seen = 0;
  (void)T;
  ck_assert(json_is_false(json_object_get(doc, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_failed")), 1);
  json_array_foreach(json_object_get(doc, "cases"), i, c) {
    const char *sub = json_string_value(json_object_get(c, "subject"));
    if (strcmp(sub, "output:kernel-scan")) {
      ck_assert_msg(json_is_true(json_object_get(c, "pass")), "%s", sub);
      continue;
    }
    json_t *w = json_object_get(json_object_get(json_object_get(c, "o"), "worst"), "t");
    ck_assert_int_eq(json_integer_value(w), (json_int_t)t);
    w = json_object_get(json_object_get(json_object_get(c, "o"), "worst"), "h");
    ck_assert_int_eq(json_integer_value(w), (json_int_t)h);
    ck_assert(json_is_false(json_object_get(c, "pass")));
    seen = 1;
  }
  ck_assert(seen);
  json_decref(doc);
  free(j);
  cli_result *r = malloc(sizeof *r);
  ck_assert_int_eq(check(r, f, cli_path("g.json"), "--group-heads", "2", NULL, NULL), 1);
  ck_assert_msg(strstr(r->out, "FAIL output:kernel-scan") && strstr(r->out, "worst o at head 4, token 37"), "%s",
                r->out);
  free(r);
}
END_TEST

/* --max-bytes under one key head: refused naming the smallest that runs; that one streams to the whole's JSON. */
START_TEST(budget_names_smallest) {
  char f[512];
  snprintf(f, sizeof f, "%s", cli_path("b.h5")); /* cli_path's buffers rotate */
  make_shape(f, "1,256,8,32", "4", NULL, 0);
  cli_result *r = malloc(sizeof *r);
  ck_assert_int_eq(check(r, f, cli_path("whole.json"), NULL, NULL, NULL, NULL), 0);
  ck_assert_int_eq(check(r, f, cli_path("g.json"), "--max-bytes", "1M", NULL, NULL), 2);
  const char *at = strstr(r->err, "the smallest --max-bytes that runs is ");
  ck_assert_msg(at != NULL, "%s", r->err);
  uint64_t n = strtoull(at + strlen("the smallest --max-bytes that runs is "), NULL, 10);
  ck_assert_msg(n > (1u << 20) && n % (1u << 20) == 0, "%s", r->err);
  char mb[32];
  snprintf(mb, sizeof mb, "%" PRIu64, n);
  /* the figure runs; with one key head per group it streams (without, the
   * room it names for the process's own memory may fit the whole check:
   * under ASan that memory is some 48 MiB, and its sixteenth is 3 MiB) */
  ck_assert_msg(check(r, f, cli_path("g.json"), "--max-bytes", mb, NULL, NULL) == 0, "%s", r->err);
  char *a = slurp(cli_path("whole.json")), *b = slurp(cli_path("g.json"));
  ck_assert_msg(!strcmp(a, b), "--max-bytes %s: the JSON differs from the whole check's", mb);
  free(b);
  ck_assert_msg(check(r, f, cli_path("g.json"), "--max-bytes", mb, "--group-heads", "1") == 0, "%s", r->err);
  ck_assert_msg(strstr(r->out, "streamed by head group") && strstr(r->out, "groups"), "%s", r->out);
  b = slurp(cli_path("g.json"));
  ck_assert_msg(!strcmp(a, b), "--max-bytes %s --group-heads 1: the JSON differs from the whole check's", mb);
  free(a);
  free(b);
  /* a --group-heads above the key heads: refused by name */
  ck_assert_int_eq(check(r, f, cli_path("g.json"), "--group-heads", "5", NULL, NULL), 2);
  ck_assert_msg(strstr(r->err, "--group-heads 5: the fixture has 4 key heads"), "%s", r->err);
  free(r);
}
END_TEST

/* The "grad" case of output `name` in doc (NULL: none). */
static json_t *grad_case(json_t *doc, const char *name) {
  json_t *c;
  size_t i;
  json_array_foreach(json_object_get(json_object_get(doc, "grad"), "cases"), i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "subject")), name)) return c;
  }
  return NULL;
}

/* Stored gradients (/cotangents, each kernel output's dq .. dh0, a stored
 * /oracle): streamed, the whole check's JSON byte for byte, the VJP oracle
 * by group with its certificate merged and the file's grad_problem_sha256
 * by blocks.  Negative control: one dg element (value head 4) and one dq
 * element (key head 2) of an output planted wrong fail streamed as whole,
 * the case naming both and the worst of each at the planted place. */
START_TEST(stored_gradients) {
  char f[512];
  snprintf(f, sizeof f, "%s", cli_path("grad.h5")); /* cli_path's buffers rotate */
  make(f, "mpfr", 1);
  char *j = same_streamed(f, 0);
  json_t *doc = json_loads(j, 0, NULL);
  ck_assert_ptr_nonnull(doc);
  json_t *g = json_object_get(doc, "grad");
  ck_assert_int_eq(json_integer_value(json_object_get(g, "n_cases")), 2);
  ck_assert(json_is_true(json_object_get(g, "pass")));
  ck_assert_int_eq(strlen(json_string_value(json_object_get(json_object_get(g, "cotangents"), "grad_problem_sha256"))),
                   64);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_cases")), 10); /* 6 kernels, 2 outputs, 2 backward */
  json_decref(doc);
  free(j);
  const hsize_t Hv = 6, Hk = 3, D = 8;
  h5e_poke(f, "/outputs/kernel-scan/grads/dg", (37 * Hv + 4) * D + 3, 9.0f);
  h5e_poke(f, "/outputs/kernel-scan/grads/dq", (11 * Hk + 2) * D + 5, 9.0f);
  j = same_streamed(f, 1);
  doc = json_loads(j, 0, NULL);
  json_t *c = grad_case(doc, "output:kernel-scan");
  ck_assert_ptr_nonnull(c);
  ck_assert(json_is_false(json_object_get(c, "pass")));
  ck_assert_int_eq(json_array_size(json_object_get(c, "failed")), 2);
  json_t *w = json_object_get(json_object_get(c, "dg"), "worst");
  ck_assert(json_integer_value(json_object_get(w, "t")) == 37 && json_integer_value(json_object_get(w, "h")) == 4 &&
            json_integer_value(json_object_get(w, "dk")) == 3);
  w = json_object_get(json_object_get(c, "dq"), "worst");
  ck_assert(json_integer_value(json_object_get(w, "t")) == 11 && json_integer_value(json_object_get(w, "h")) == 2 &&
            json_integer_value(json_object_get(w, "dk")) == 5);
  ck_assert(json_is_true(json_object_get(grad_case(doc, "output:kernel-affine-prefix-d2"), "pass")));
  json_decref(doc);
  free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kda_check_stream");
  TCase *tc = tcase_create("stream");
  tcase_add_checked_fixture(tc, cli_scratch_make, cli_scratch_remove);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, stored_oracle_mpfr_and_dd);
  tcase_add_test(tc, oracle_absent_or_stale);
  tcase_add_test(tc, planted_output_error);
  tcase_add_test(tc, budget_names_smallest);
  tcase_add_test(tc, stored_gradients);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s GDN_PARITY GDN_FIXTURE\n", argv[0]);
    return 2;
  }
  exe_parity = argv[1];
  exe_fixture = argv[2];
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  const int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
