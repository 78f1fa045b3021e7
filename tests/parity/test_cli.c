/* The gdn-parity command as users and scripts see it: exit statuses,
 * messages that name the problem, outputs, determinism.  argv[1] is the path
 * of the gdn-parity binary. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_run.h"
#include "parity_cli.h"
#include "parity_policy.h"
#include "../check_runner.h"
#include "../reports/test_util.h"

static char *exe;

#define RUN(res, ...)                                       \
  do {                                                      \
    char *const av_[] = {(char *)exe, __VA_ARGS__, NULL};   \
    cli_run(res, av_);                                      \
  } while (0)

/* Bad usage: exit 2 and a message on stderr containing the needle. */
/* text parsed as JSON (asserted). */
static json_t *parsed(const char *text) {
  json_error_t je;
  json_t *d = json_loads(text, 0, &je);
  ck_assert_msg(d != NULL, "%s", je.text);
  return d;
}

START_TEST(bad_usage_exits_2_with_a_message) {
  static const struct { const char *args[8]; const char *needle; } t[] = {
      {{"--shape", "1,2,3"}, "3 fields"},
      {{"--shape", "1,0,4,8"}, "T (sequence length)) must be at least 1"},
      {{"--shape", "x,2,3,4"}, "field 1"},
      {{"--shape", "1,64,4,8", "--key-heads", "3"}, "do not divide"},
      {{"--shape", "1,64,1,8", "--chunk", "32", "--devices", "4", "--shard", "chunks"},
       "more than the 2 chunks"},
      {{"--shape", "1,64,1,8", "--devices", "3"}, "does not divide T = 64"},
      {{"--shape", "1,64,1,8", "--devices", "3"}, "the nearest valid T is 63"},
      {{"--shape", "1,64,1,8", "--shard", "rows"}, "--shard 'rows'"},
      {{"--shape", "1,64,1,8", "--packing", "none"}, "--packing 'none'"},
      {{"--shape", "1,64,1,8", "--prelude", "half"}, "expected none or bfloat16"},
      {{"--shape", "1,64,1,8", "--documents", "0"}, "--documents"},
      {{"--shape", "1,64,1,8", "--documents", "65"}, "more documents than the 64 tokens"},
      {{"--shape", "1,64,1,8", "--chunk", "0"}, "--chunk"},
      {{"--shape", "1,64,1,8", "--prefix", "tree"}, "unknown name 'tree'"},
      {{"--shape", "1,64,1,8", "--dtype", "half"}, "'half'"},
      {{"--shape", "1,64,1,8", "--matmul-precision", "max"}, "'max'"},
      {{"--shape", "1,64,1,8", "--oracle", "magic"}, "'magic'"},
      {{"--shape", "1,64,1,8", "--oracle-bits", "10"}, "--oracle-bits"},
      {{"--shape", "1,64,1,8", "--threads", "0"}, "--threads"},
      {{"--shape", "1,64,1,8", "--devices", "1,1"}, "listed twice"},
      {{"--frobnicate"}, "unknown option '--frobnicate'"},
      {{"--shape"}, "needs a value"},
      {{"--quiet", "--verbose", "--shape", "1,64,1,8"}, "contradict"},
      {{"--shape", "1,64,1,8", "--ftz=1"}, "takes no value"},
      {{"bogus"}, "unknown command 'bogus'"},
      {{"sweep"}, "--grid"},
      {{"--shape", "1,64,1,8", "--json", "/nonexistent-dir/x.json"}, "does not exist"},
      {{"--shape", "1,64,1,8", "--policy", "/nonexistent-policy.json"}, "cannot open"},
      {{"--shape", "1,100000,8,64", "--max-bytes", "1M"}, "more than the limit"},
      {{"--shape", "1,64,1,8", "extra"}, "unexpected argument 'extra'"},
      {{"--seed", "1"}, "nothing to do"},
      {{"--shape", "1,64,1,8", "--grad", "--mutant", "compose-order", "--devices", "2"}, "mutant compose-order has no backward"},
      {{"--shape", "1,64,1,8", "--grad", "--documents", "3"}, "--grad: packed documents"},
      /* --grad streams by head group when the whole run does not fit (512M runs since the plan counts
       * the gradient sets); under one key head's need with its gradients it is refused, saying so */
      {{"--shape", "1,16384,8,64", "--grad", "--max-bytes", "2M"}, "with its gradient sets (--grad)"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *av[12] = {(char *)exe};
    int k = 1;
    for (int j = 0; j < 8 && t[i].args[j]; j++) av[k++] = (char *)t[i].args[j];
    av[k] = NULL;
    cli_result r;
    cli_run(&r, av);
    ck_assert_msg(r.status == 2, "case %zu (%s): status %d, stderr: %s", i, t[i].args[0], r.status, r.err);
    ck_assert_msg(strstr(r.err, t[i].needle), "case %zu: stderr '%s' lacks '%s'", i, r.err, t[i].needle);
    ck_assert_msg(strstr(r.err, "gdn-parity: error: "), "case %zu: %s", i, r.err);
  }
}
END_TEST

/* --help lists exactly the options the parser knows. */
START_TEST(help_lists_every_option) {
  cli_result r;
  RUN(&r, "--help");
  ck_assert_int_eq(r.status, 0);
  const gdn_cli_opt *o = parity_cli_options();
  int n = 0;
  for (; o[n].name; n++) {
    char needle[80];
    snprintf(needle, sizeof needle, "  --%s", o[n].name);
    ck_assert_msg(strstr(r.out, needle), "--help lacks %s", needle);
  }
  /* and nothing else: count "  --" option lines */
  int lines = 0;
  for (const char *p = r.out; (p = strstr(p, "\n  --")); p++) lines++;
  ck_assert_int_eq(lines, n);
  /* options of some commands only say which (the parser refuses the rest) */
  ck_assert_msg(strstr(r.out, "(for: --shape, sweep)\n"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "(for: check)\n"), "%s", r.out);
  const char *q = strstr(r.out, "  --quiet");
  ck_assert_msg(q && !strncmp(strchr(q, '\n') - 6, "erdict", 6), "--quiet is for every command: %.80s", q);
  RUN(&r, "--version");
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "gdn-parity "));
  RUN(&r, "--print-policy");
  ck_assert_int_eq(r.status, 0);
  json_error_t je;
  json_t *p = json_loads(r.out, 0, &je);
  ck_assert_msg(p != NULL, "--print-policy is not JSON: %s", je.text);
  ck_assert(json_array_size(json_object_get(p, "rules")) >= 1);
  json_decref(p);
}
END_TEST

/* A real run: exit 0, the contract's JSON fields, and byte-identical JSON for
 * --threads 1 and 2 with --reproducible. */
START_TEST(run_writes_contract_json_deterministically) {
  char *j1 = cli_path("a.json"), *j2 = cli_path("b.json");
  cli_result r;
  RUN(&r, "--shape", "1,200,2,16", "--key-heads", "1", "--chunk", "16", "--devices", "1,5,8",
      "--h0", "--json", j1, "--reproducible", "--threads", "1");
  ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "PASS: 3 cases"));
  RUN(&r, "--shape", "1,200,2,16", "--key-heads", "1", "--chunk", "16", "--devices", "1,5,8",
      "--h0", "--json", j2, "--reproducible", "--threads", "2");
  ck_assert_int_eq(r.status, 0);
  char *a = test_read_file(j1, NULL), *b = test_read_file(j2, NULL);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_msg(strcmp(a, b) == 0, "JSON differs between --threads 1 and 2");
  json_t *d = parsed(a);
  ck_assert_str_eq(json_string_value(json_object_get(d, "tool")), "gdn-parity");
  ck_assert(json_is_true(json_object_get(d, "pass")));
  ck_assert_ptr_null(json_object_get(d, "created"));
  ck_assert_ptr_null(json_object_get(d, "timing"));
  json_t *or = json_object_get(d, "oracle");
  ck_assert_int_eq(json_integer_value(json_object_get(or, "precision_bits")), 128);
  ck_assert(json_integer_value(json_object_get(or, "certified_bits")) >= 100);
  json_t *cases = json_object_get(d, "cases");
  ck_assert_uint_eq(json_array_size(cases), 3);
  json_t *c = json_array_get(cases, 1);
  ck_assert_str_eq(json_string_value(json_object_get(c, "id")),
                   "B1-T200-Hk1-Hv2-D16-C16-D5-sequential-float32-highest");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "shape"), "Hk")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(c, "devices")), 5);
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard")), "tokens");
  const char *impl[2] = {"scan", "affine-prefix"};
  for (int i = 0; i < 2; i++) {
    json_t *m = json_object_get(json_object_get(json_object_get(c, "impls"), impl[i]), "o");
    ck_assert_msg(json_is_number(json_object_get(m, "max_abs")) &&
                      json_is_number(json_object_get(m, "rel_fro")) &&
                      json_is_number(json_object_get(m, "max_ulp")),
                  "impls.%s.o lacks a metric", impl[i]);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(c, "impls"), impl[i]), "ht"));
  }
  ck_assert_ptr_nonnull(json_object_get(json_object_get(c, "affine_vs_scan"), "ht"));
  ck_assert(json_array_size(json_object_get(json_object_get(c, "tolerance"), "checks")) >= 1);
  ck_assert(json_is_true(json_object_get(c, "pass")));
  /* Seams: one per device boundary, where token sharding puts them (200
   * tokens over 5 devices: 40 each, 3 chunks of 16 with 8 rows of padding
   * at every device's end). */
  json_t *seams = json_object_get(c, "seams");
  ck_assert_uint_eq(json_array_size(seams), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(seams, 0), "chunk")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(seams, 0), "pad_before")), 8);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(seams, 1), "t")), 80);
  json_decref(d);
  free(a);
  free(b);
}
END_TEST

/* --shard chunks: array_split's shards (8 chunks over 3 devices: 3, 3, 2),
 * named in the case and its id; no padding before a seam. */
START_TEST(shard_chunks_mode) {
  char *js = cli_path("shard.json");
  cli_result r;
  RUN(&r, "--shape", "1,128,1,8", "--chunk", "16", "--devices", "3", "--shard", "chunks",
      "--json", js, "--reproducible");
  ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
  char *a = test_read_file(js, NULL);
  json_t *d = parsed(a);
  json_t *c = json_array_get(json_object_get(d, "cases"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard")), "chunks");
  ck_assert_str_eq(json_string_value(json_object_get(c, "id")),
                   "B1-T128-H1-D8-C16-D3-sequential-float32-highest-shard-chunks");
  json_t *seams = json_object_get(c, "seams");
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(seams, 1), "chunk")), 6);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(seams, 1), "pad_before")), 0);
  json_decref(d);
  free(a);
}
END_TEST

/* --grad: the six gradient rows in every subject's impls entry (with the
 * per-token row_rel), the gradient checks and the two upstream gradient
 * entries, the oracle's gradient certificate; the run passes (correct
 * float32 gradients, 1, 2, 4 devices, T/D not a multiple of C so every seam
 * is padded).  Without --grad the same run has none of these keys. */
START_TEST(grad_run) {
  char *js = cli_path("grad.json"), *html = cli_path("grad.html");
  for (int grad = 1; grad >= 0; grad--) {
    cli_result r;
    if (grad)
      RUN(&r, "--shape", "1,96,2,8", "--chunk", "16", "--devices", "1,2,4", "--h0", "--grad", "--json", js,
          "--report", html, "--reproducible");
    else
      RUN(&r, "--shape", "1,96,2,8", "--chunk", "16", "--devices", "1,2,4", "--h0", "--json", js,
          "--report", html, "--reproducible");
    char *h = test_read_file(html, NULL);
    /* the report: the gradient table and each token-axis gradient's profile */
    ck_assert(!strstr(h, "id=\"grad-table\"") == !grad);
    ck_assert(!strstr(h, "svg-profile-0-dk") == !grad);
    ck_assert(!strstr(h, "svg-profile-0-dbeta") == !grad);
    free(h);
    ck_assert_msg(r.status == 0, "grad %d: status %d: %s%s", grad, r.status, r.out, r.err);
    ck_assert(!strstr(r.out, "grads rel_fro") == !grad);
    char *a = test_read_file(js, NULL);
    json_t *d = parsed(a);
    ck_assert(!strstr(a, "\"dbeta\"") == !grad);
    ck_assert(!strstr(a, "row_rel") == !grad);
    ck_assert(!strstr(a, "oracle_grad_certified_bits") == !grad);
    json_t *cases = json_object_get(d, "cases");
    ck_assert_uint_eq(json_array_size(cases), 3);
    for (size_t i = 0; i < 3; i++) {
      json_t *c = json_array_get(cases, i);
      ck_assert(json_is_true(json_object_get(c, "pass")));
      ck_assert_uint_eq(json_array_size(json_object_get(c, "upstream")), grad ? 6 : 4);
      for (int s = 0; s < 2; s++) {
        json_t *im = json_object_get(json_object_get(c, "impls"), s ? "affine-prefix" : "scan");
        static const char *const g[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
        for (int k = 0; k < 6; k++) {
          json_t *m = json_object_get(im, g[k]);
          ck_assert(!m == !grad);
          if (!m) continue;
          /* float32 gradients against the oracle: the band, 64u, or dg's */
          double rf = json_real_value(json_object_get(m, "rel_fro"));
          ck_assert_msg(rf > 0 && rf < (k == 3 || k == 4 ? 6.1e-5 : 3.8e-6), "%s %s %g", s ? "affine" : "scan", g[k], rf);
          ck_assert_ptr_nonnull(json_object_get(m, "row_rel"));
        }
      }
    }
    json_decref(d);
    free(a);
  }
  /* Bit-identical for any thread count, gradients included. */
  char *docs[2];
  for (int th = 1; th <= 2; th++) {
    cli_result r;
    RUN(&r, "--shape", "2,96,2,8", "--chunk", "16", "--devices", "1,4", "--grad", "--json", js, "--reproducible",
        "--threads", th == 1 ? "1" : "2");
    ck_assert_int_eq(r.status, 0);
    docs[th - 1] = test_read_file(js, NULL);
  }
  ck_assert_str_eq(docs[0], docs[1]);
  free(docs[0]);
  free(docs[1]);
}
END_TEST

/* --documents / --packing: the semantics named in the inputs entry, every
 * case and the table; a reset on the seam T/2 makes D = 2's o exact. */
START_TEST(packed_documents) {
  char *js = cli_path("pack.json");
  cli_result r;
  RUN(&r, "--shape", "1,256,1,8", "--chunk", "16", "--devices", "1,2", "--documents", "4",
      "--packing", "reset", "--gates", "slow", "--json", js, "--reproducible");
  ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "packing reset"));
  char *a = test_read_file(js, NULL);
  json_t *d = parsed(a);
  json_t *in0 = json_array_get(json_object_get(d, "inputs"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(in0, "packing")), "reset");
  ck_assert_int_ge(json_integer_value(json_object_get(in0, "documents")), 2);
  for (size_t i = 0; i < 2; i++)
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(d, "cases"), i),
                                                       "packing")), "reset");
  json_decref(d);
  free(a);
  /* without --documents no packing is claimed */
  RUN(&r, "--shape", "1,64,1,8", "--chunk", "16", "--devices", "1", "--json", js, "--reproducible");
  ck_assert_int_eq(r.status, 0);
  a = test_read_file(js, NULL);
  ck_assert_ptr_null(strstr(a, "\"packing\""));
  free(a);
}
END_TEST

/* --oracle none judges affine-prefix against scan only and says so. */
START_TEST(oracle_none) {
  cli_result r;
  RUN(&r, "--shape", "1,128,1,8", "--chunk", "16", "--devices", "2,8", "--oracle", "none");
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "no oracle"));
}
END_TEST

/* Oracle tiers: auto picks MPFR for a small case; dd reports a sampled
 * certificate and a proven bound, and judges the same as MPFR would. */
START_TEST(oracle_tiers) {
  char *j1 = cli_path("mpfr.json"), *j2 = cli_path("dd.json");
  cli_result r;
  RUN(&r, "--shape", "1,256,2,16", "--gates", "slow", "--chunk", "32", "--devices", "1,4", "--json", j1, "--reproducible");
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  RUN(&r, "--shape", "1,256,2,16", "--gates", "slow", "--chunk", "32", "--devices", "1,4", "--oracle", "dd",
      "--json", j2, "--reproducible");
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "dd oracle (double-double, 106 bits)"));
  char *a = test_read_file(j1, NULL), *b = test_read_file(j2, NULL);
  json_t *da = json_loads(a, 0, NULL), *db = json_loads(b, 0, NULL);
  json_t *oa = json_object_get(da, "oracle"), *ob = json_object_get(db, "oracle");
  ck_assert_str_eq(json_string_value(json_object_get(oa, "tier")), "mpfr");
  ck_assert_int_eq(json_integer_value(json_object_get(oa, "sampled_columns")),
                   json_integer_value(json_object_get(oa, "total_columns")));
  ck_assert_str_eq(json_string_value(json_object_get(ob, "tier")), "dd");
  ck_assert_int_eq(json_integer_value(json_object_get(ob, "precision_bits")), 106);
  /* 2 sampled columns per head, of Dv = 16 per head, 2 heads. */
  ck_assert_int_eq(json_integer_value(json_object_get(ob, "sampled_columns")), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(ob, "total_columns")), 32);
  ck_assert(json_integer_value(json_object_get(ob, "certified_bits")) >= 80);
  ck_assert(json_integer_value(json_object_get(ob, "guaranteed_bits")) >= 53);
  /* The reference agrees to far below float32 round-off, so the kernels'
   * errors measured against either tier are the same numbers to 1e-9. */
  json_t *ca = json_array_get(json_object_get(da, "cases"), 1), *cb = json_array_get(json_object_get(db, "cases"), 1);
  double ea = json_real_value(json_object_get(json_object_get(json_object_get(json_object_get(ca, "impls"), "affine-prefix"), "o"), "rel_fro"));
  double eb = json_real_value(json_object_get(json_object_get(json_object_get(json_object_get(cb, "impls"), "affine-prefix"), "o"), "rel_fro"));
  ck_assert_msg(fabs(ea - eb) <= 1e-9 * ea, "%g vs %g", ea, eb);
  json_decref(da);
  json_decref(db);
  free(a);
  free(b);
}
END_TEST

/* The kernels' o held as codes against the reference (gdn_ocode.h; the
 * harness codes outputs of 2^24 elements or more, GDN_PARITY_CODE_MIN moves
 * the threshold): the results document is byte-identical to the float32-held
 * run's (slow gates, h0, three device counts, several threads, the dd and
 * MPFR tiers), and the heap peak is lower by about the 3 bytes per element of
 * each of the two float32 o held at once (the scan's and the case's).  The
 * control: the two uncoded runs give the same peak (no saving to see). */
/* The built-in policy without "model" (so no error model is computed): the
 * memory tests below measure the harness's own holdings; the model's
 * (parity_model_bytes: per element, in the budget) comes on top with the
 * built-in policy. */
static char *policy_without_model(void) {
  static char *path;
  if (path) return path;
  path = cli_path("nomodel.json");
  char *t = strdup(parity_policy_builtin_text()), *q;
  while ((q = strstr(t, "\"model\": true,"))) memmove(q, q + 14, strlen(q + 14) + 1);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(t, f);
  fclose(f);
  free(t);
  return path;
}

static long long run_codes(const char *code_min, const char *tier_c, const char *json_c, int reproducible) {
  char *tier = (char *)tier_c, *json = (char *)json_c; /* argv strings, not written */
  if (code_min) setenv("GDN_PARITY_CODE_MIN", code_min, 1);
  else unsetenv("GDN_PARITY_CODE_MIN");
  cli_result r;
  char *pol = policy_without_model();
  if (reproducible)
    RUN(&r, "--shape", "2,1024,2,32", "--key-heads", "1", "--chunk", "32", "--devices", "1,4,16", "--oracle", tier,
        "--gates", "slow", "--h0", "--threads", "2", "--json", json, "--reproducible", "--policy", pol);
  else
    RUN(&r, "--shape", "2,1024,2,32", "--key-heads", "1", "--chunk", "32", "--devices", "1,4,16", "--oracle", tier,
        "--gates", "slow", "--h0", "--threads", "2", "--json", json, "--policy", pol);
  unsetenv("GDN_PARITY_CODE_MIN");
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  char *a = test_read_file(json, NULL);
  json_t *d = json_loads(a, 0, NULL);
  long long peak = json_integer_value(json_object_get(json_object_get(d, "memory"), "peak_heap_bytes"));
  json_decref(d);
  free(a);
  return peak;
}

START_TEST(coded_outputs_change_no_result) {
  char *j1 = cli_path("whole.json"), *j2 = cli_path("coded.json");
  static const char *const tiers[] = {"dd", "mpfr"};
  for (int k = 0; k < 2; k++) {
    run_codes(NULL, tiers[k], j1, 1);
    run_codes("0", tiers[k], j2, 1);
    char *a = test_read_file(j1, NULL), *b = test_read_file(j2, NULL);
    ck_assert_msg(!strcmp(a, b), "%s: the coded run's results differ", tiers[k]);
    free(a);
    free(b);
  }
  const long long n = 2LL * 1024 * 2 * 32;
  long long f1 = run_codes(NULL, "dd", j1, 0), f2 = run_codes(NULL, "dd", j1, 0), c = run_codes("0", "dd", j2, 0);
  if (f1 >= 0 && c >= 0) { /* byte accounting on glibc only (gdn_alloc.h) */
    fprintf(stderr, "coded o: heap peak %lld bytes against %lld float32-held (%lld elements)\n", c, f1, n);
    ck_assert_msg(llabs(f1 - f2) < n / 8, "control: %lld vs %lld", f1, f2);
    ck_assert_msg(f1 - c > 5 * n, "the codes saved only %lld bytes for %lld elements", f1 - c, n);
  }
}
END_TEST

/* Peak memory of a whole run is the inputs and outputs plus a part that does
 * not grow with T (the bound: O(devices x D^2) and per-thread
 * scratch).  What a run holds at once: the inputs (q, k, v float32; g, beta),
 * and three o, ht output sets: the reference's o in binary64, the scan's and
 * the affine-prefix case's o in float32 (a float32 kernel's values, held as
 * they are: parity_vals.h), every ht in binary64.  The excess of the
 * measured heap peak over that must be the same at T = 2048 and T = 16384 up
 * to the per-4096-token profile arrays and allocator rounding (at most 8
 * KiB), while the inputs and outputs grow by 12.4 MiB: one extra byte per
 * token (14336) would show, and so would the kernels' o held in binary64
 * again (3.5 MiB more at T = 16384 than at 2048). */
static long long run_peak_heap(const char *T, long long *io) {
  char *j = cli_path("mem.json");
  char shape[64];
  snprintf(shape, sizeof shape, "1,%s,1,32", T);
  cli_result r;
  RUN(&r, "--shape", shape, "--chunk", "16", "--devices", "1,4,16", "--oracle", "dd",
      "--threads", "1", "--gates", "slow", "--json", j, "--policy", policy_without_model());
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  char *a = test_read_file(j, NULL);
  json_t *d = json_loads(a, 0, NULL);
  ck_assert_ptr_nonnull(d);
  json_t *m = json_object_get(d, "memory");
  ck_assert_ptr_nonnull(m);
  long long peak = json_integer_value(json_object_get(m, "peak_heap_bytes"));
  ck_assert(json_integer_value(json_object_get(m, "peak_rss_bytes")) > 0);
  const long long t = atoll(T), Dk = 32, Dv = 32;
  *io = t * (2 * Dk + Dv) * 4 + 2 * t * 4 + t * Dv * (8 + 2 * 4) + 3 * Dk * Dv * 8;
  json_decref(d);
  free(a);
  return peak;
}

START_TEST(memory_bounded_by_inputs_and_outputs) {
  long long io1, io2;
  long long p1 = run_peak_heap("2048", &io1), p2 = run_peak_heap("16384", &io2);
  if (p1 < 0 || p2 < 0) return; /* no byte accounting off glibc (gdn_alloc.h) */
  ck_assert_msg(p1 >= io1 && p2 >= io2, "peak %lld < inputs + outputs %lld (or %lld < %lld)",
                p1, io1, p2, io2);
  long long x1 = p1 - io1, x2 = p2 - io2;
  fprintf(stderr, "memory: excess over inputs + outputs %lld bytes at T = 2048, %lld at T = 16384\n", x1, x2);
  ck_assert_msg(io2 - io1 > 12 << 20, "%lld", io2 - io1);
  ck_assert_msg(llabs(x2 - x1) <= 8192, "the excess over inputs + outputs grew with T: %lld at "
                "T = 2048, %lld at T = 16384", x1, x2);
}
END_TEST

int main(int argc, char **argv) {
  ckr_args(argc, argv, "test_cli PATH-TO-gdn-parity", 1, &exe);
  Suite *su = suite_create("cli");
  TCase *tc = CKR_TCASE(su, "cli", 120, bad_usage_exits_2_with_a_message, help_lists_every_option,
                        run_writes_contract_json_deterministically, oracle_none, shard_chunks_mode, packed_documents,
                        grad_run, oracle_tiers, memory_bounded_by_inputs_and_outputs, coded_outputs_change_no_result);
  tcase_add_checked_fixture(tc, cli_scratch_make, cli_scratch_remove); /* the files the runs write */
  return ckr_run(su);
}
