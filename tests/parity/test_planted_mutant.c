/* The planted-mutant marking: a run with a planted mutant (`gdn-parity
 * --shape ... --mutant NAME`, testing only) says so in every view a reader
 * looks at: the console's table and verdict line, the results JSON
 * ("planted_mutant"), the HTML report (#planted-mutant), the Markdown
 * headline and the JUnit suite name, property and failure message (or, when
 * the mutant survives, the case's system-out).  Before, the console said
 * "FAIL: 1 case, 1 failed" (or "PASS") and a killed mutant read "FAILED:
 * affine-prefix ..." as if the correct kernel had failed.
 *   - scale-none (changes every output): killed, each view says "killed";
 *   - final-from-replay (round-off only): survives, each view says
 *     "survived" and the verdict stays PASS;
 *   - the negative control: the same run without --mutant has no such mark
 *     anywhere;
 *   - `report` rebuilds the views from the saved JSON, also from a document
 *     without the root key (the cases' "mutant" is enough). */
#include <check.h>
#include <jansson.h>

#include "cli_run.h"
#include "../check_runner.h"

static char *exe;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s missing", path);
  char *buf = malloc(1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* A small case with 2 devices (a seam), --mutant m (NULL: none). */
static void run(cli_result *r, const char *m, const cli_outs *v) {
  char *argv[24] = {(char *)exe, "--shape", "1,64,1,8", "--chunk", "8", "--devices", "2", "--oracle", "dd",
                    "--reproducible", "--json", (char *)v->json, "--report", (char *)v->html, "--junit",
                    (char *)v->junit, "--summary", (char *)v->md, NULL};
  if (m) {
    argv[18] = "--mutant";
    argv[19] = (char *)m;
    argv[20] = NULL;
  }
  cli_run(r, argv);
}

/* Every view of a run with mutant m, whose fate is "killed" or "survived". */
static void expect_marked(const cli_result *r, const cli_outs *v, const char *m, const char *fate) {
  char want[96];
  /* console: the banner over the table, the line under the case, the verdict */
  snprintf(want, sizeof want, "PLANTED MUTANT %s:", m);
  ck_assert_msg(strstr(r->out, want), "console banner: %s", r->out);
  snprintf(want, sizeof want, "planted mutant %s: %s", m, !strcmp(fate, "killed") ? "killed by this case" : "SURVIVES");
  ck_assert_msg(strstr(r->out, want), "console case line '%s': %s", want, r->out);
  snprintf(want, sizeof want, "; PLANTED MUTANT %s %s: ", m, fate);
  const char *verdict = strstr(r->out, !strcmp(fate, "killed") ? "\nFAIL: 1 case, 1 failed" : "\nPASS: 1 case, 0 failed");
  ck_assert_msg(verdict && strstr(verdict, want), "verdict line '%s': %s", want, r->out);
  /* JSON */
  json_error_t je;
  json_t *doc = json_load_file(v->json, 0, &je);
  ck_assert_msg(doc, "%s", je.text);
  ck_assert_str_eq(json_string_value(json_object_get(doc, "planted_mutant")), m);
  json_decref(doc);
  /* HTML: the banner inside the verdict header */
  char *h = slurp(v->html);
  snprintf(want, sizeof want, "<p class=\"planted-mutant\" id=\"planted-mutant\"><b>Planted mutant %s %s</b>", m, fate);
  const char *head = strstr(h, "<header id=\"verdict\""), *end = head ? strstr(head, "</header>") : NULL;
  const char *at = strstr(h, want);
  ck_assert_msg(head && at && at > head && at < end, "HTML banner '%s' not in the verdict header", want);
  free(h);
  /* Markdown: the headline */
  char *md = slurp(v->md);
  snprintf(want, sizeof want, "with planted mutant `%s` (%s)\n", m, fate);
  const char *nl = strchr(md, '\n');
  ck_assert_msg(strstr(md, want) && strstr(md, want) < nl + 1, "Markdown headline lacks '%s':\n%s", want, md);
  free(md);
  /* JUnit: the suite's name and property; the case's failure or output */
  char *x = slurp(v->junit);
  snprintf(want, sizeof want, "<testsuite name=\"gdn-parity (planted mutant %s)\"", m);
  ck_assert_msg(strstr(x, want), "JUnit suite name: %s", x);
  snprintf(want, sizeof want, "<property name=\"planted_mutant\" value=\"%s\"/>", m);
  ck_assert_msg(strstr(x, want), "JUnit property: %s", x);
  snprintf(want, sizeof want, !strcmp(fate, "killed") ? "<failure type=\"tolerance\" message=\"planted mutant %s killed: "
                                                      : "<system-out>planted mutant %s survived: ", m);
  ck_assert_msg(strstr(x, want), "JUnit case '%s': %s", want, x);
  free(x);
}

/* run() into fresh outputs v, asserting its exit status. */
static void run_expect(cli_result *r, const char *m, cli_outs *v, int status) {
  cli_outs_make(v, "/tmp/gdn-pm");
  run(r, m, v);
  ck_assert_msg(r->status == status, "exit %d\n%s%s", r->status, r->out, r->err);
}

/* Mutant m run (exit `status`) and marked `fate` in every view. */
static void expect_run_marked(const char *m, int status, const char *fate) {
  cli_outs v;
  cli_result r;
  run_expect(&r, m, &v, status);
  expect_marked(&r, &v, m, fate);
  cli_outs_unlink(&v);
}

START_TEST(killed_mutant_marked_everywhere) { expect_run_marked("scale-none", 1, "killed"); }
END_TEST

START_TEST(surviving_mutant_marked_everywhere) { expect_run_marked("final-from-replay", 0, "survived"); }
END_TEST

/* The control: without --mutant no view mentions a planted mutant. */
START_TEST(no_mutant_no_mark) {
  cli_outs v;
  cli_result r;
  run_expect(&r, NULL, &v, 0);
  ck_assert_msg(!strstr(r.out, "planted") && !strstr(r.out, "PLANTED"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "\nPASS: 1 case, 0 failed\n"), "%s", r.out);
  const char *files[4] = {v.json, v.html, v.junit, v.md};
  for (int i = 0; i < 4; i++) {
    char *t = slurp(files[i]);
    ck_assert_msg(!strstr(t, "lanted") && !strstr(t, "PLANTED") && !strstr(t, "\"mutant\""), "%s mentions a mutant",
                  files[i]);
    free(t);
  }
  cli_outs_unlink(&v);
}
END_TEST

/* `report` rebuilds the marked views from the JSON, also from a document
 * written before the root key (the cases' "mutant" is enough). */
START_TEST(report_rebuilds_the_marks) {
  cli_outs v;
  cli_result r;
  run_expect(&r, "scale-none", &v, 1);
  json_error_t je;
  json_t *doc = json_load_file(v.json, 0, &je);
  ck_assert_ptr_nonnull(doc);
  ck_assert_int_eq(json_object_del(doc, "planted_mutant"), 0);
  ck_assert_int_eq(json_dump_file(doc, v.json, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
  json_decref(doc);
  unlink(v.html);
  unlink(v.junit);
  unlink(v.md);
  char *argv[] = {(char *)exe, "report", v.json, "-o", v.html, "--junit", v.junit, "--summary", v.md, NULL};
  cli_run(&r, argv);
  ck_assert_msg(r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err); /* the document's verdict */
  char *h = slurp(v.html), *x = slurp(v.junit), *md = slurp(v.md);
  ck_assert_ptr_nonnull(strstr(h, "<b>Planted mutant scale-none killed</b>"));
  ck_assert_ptr_nonnull(strstr(x, "<property name=\"planted_mutant\" value=\"scale-none\"/>"));
  ck_assert_ptr_nonnull(strstr(md, "with planted mutant `scale-none` (killed)"));
  free(h);
  free(x);
  free(md);
  cli_outs_unlink(&v);
}
END_TEST

CKR_MAIN_ARGS("test_planted_mutant GDN_PARITY_EXE", 1, (&exe), "planted_mutant", "views", 120,
    killed_mutant_marked_everywhere, surviving_mutant_marked_everywhere, no_mutant_no_mark, report_rebuilds_the_marks)
