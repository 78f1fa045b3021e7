/* gdn-parity --audit AUDIT.json (reports/report_audit.h, parity/run/parity_audit.h)
 * end to end: check and --shape embed the audit and fail on its FAIL (exit
 * 1, the verdict line says so and names the op), report rebuilds it from the
 * results document alone or adds one, and bad audits exit 2 naming the file
 * and the field with nothing written.
 * argv[1]: gdn-parity; argv[2]: the source root (fixtures/data,
 * tests/reports/data). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_run.h"
#include "../check_runner.h"
#include "../check_text.h"

static char *exe, *root;
static char dir[256], pass_audit[512], fail_audit[512], fixture[512];
static cli_result r;

static void run(const char *const *args) {
  char *argv[40];
  int n = 0;
  argv[n++] = (char *)exe;
  for (; *args; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  cli_run(&r, argv);
}

static char *path(const char *name) {
  static char p[4][600];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static char *slurp(const char *p) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  static char buf[1 << 21];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/gdn-audit-cli-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(pass_audit, sizeof pass_audit, "%s/tests/reports/data/audit-pass.json", root);
  snprintf(fail_audit, sizeof fail_audit, "%s/tests/reports/data/audit-fail.json", root);
  snprintf(fixture, sizeof fixture, "%s/fixtures/data/tiny-b1-t64-hk2-hv2-d16-prenorm.h5", root);
}

static void teardown(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

START_TEST(check_fails_on_an_audit_fail) {
  const char *a[] = {"check", "--fixture", fixture, "--audit", fail_audit, "--json", path("r.json"), "--quiet", NULL};
  run(a);
  ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
  CKT_HAS_ALL(r.out,
      "audit: FAIL collective-grows-with-T cp backward D=4: all-gather "
      "f32[1,1024,2,16] 32768 -> 131072 bytes from T=256 to 1024 "
      "(jit(f)/shard_map/all_gather, layer.py:31 (gathered_layer))\n",
      "FAIL: 4 cases, 0 failed; audit FAIL (1 of 6 checks, first "
      "collective-grows-with-T cp backward D=4)\n");
  char *j = slurp(path("r.json"));
  ck_assert_ptr_nonnull(j);
  CKT_HAS_ALL(j, "\"pass\": false,\n  \"exit_status\": 1,", "\"audit\": {\n    \"schema\": \"gdn-parity-audit\",");
  /* the negative control: the same check with the passing audit */
  const char *b[] = {"check", "--fixture", fixture, "--audit", pass_audit, "--quiet", NULL};
  run(b);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "PASS: 4 cases, 0 failed; audit PASS (6 checks)\n"));
  ck_assert_ptr_null(strstr(r.out, "audit: FAIL"));
  /* and without --audit, no audit in the verdict */
  const char *c[] = {"check", "--fixture", fixture, "--quiet", NULL};
  run(c);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_null(strstr(r.out, "audit"));
}
END_TEST

START_TEST(report_rebuilds_and_adds_the_audit) {
  const char *a[] = {"--shape", "1,64,2,16", "--devices", "1,2", "--chunk", "16", "--audit", fail_audit,
                     "--json", path("f.json"), "--quiet", NULL};
  run(a);
  ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
  /* the results document alone renders the audit again */
  const char *b[] = {"report", path("f.json"), "-o", path("f.html"), "--summary", path("f.md"), "--junit",
                     path("f.xml"), NULL};
  run(b);
  ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "; audit FAIL (1 of 6 checks"));
  ck_assert_ptr_nonnull(strstr(slurp(path("f.html")), "<section id=\"audit\">"));
  ck_assert_ptr_nonnull(strstr(slurp(path("f.md")), "Audit: **FAIL** (1 of 6 checks failed)"));
  ck_assert_ptr_nonnull(strstr(slurp(path("f.xml")), "<testsuite name=\"gdn-parity.audit\" tests=\"6\" failures=\"1\""));
  /* a document without an audit, given one by report */
  const char *c[] = {"--shape", "1,64,2,16", "--devices", "1,2", "--chunk", "16", "--json", path("p.json"), "--quiet",
                     NULL};
  run(c);
  ck_assert_int_eq(r.status, 0);
  const char *d[] = {"report", path("p.json"), "--audit", fail_audit, "-o", path("p.html"), NULL};
  run(d);
  ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(slurp(path("p.html")), "Audit FAIL"));
  const char *e[] = {"report", path("p.json"), "--audit", pass_audit, "-o", path("p.html"), NULL};
  run(e);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "PASS: rebuilt from"));
  ck_assert_ptr_nonnull(strstr(slurp(path("p.html")), "Audit PASS"));
}
END_TEST

static void write_text(const char *p, const char *text) {
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* Exit 2, the message naming `what`, and no output written. */
static void refused(const char *audit, const char *what) {
  const char *a[] = {"check", "--fixture", fixture, "--audit", audit, "--json", path("out.json"), NULL};
  run(a);
  ck_assert_msg(r.status == 2, "status %d for %s: %s", r.status, audit, r.err);
  ck_assert_msg(strstr(r.err, what), "'%s' lacks '%s'", r.err, what);
  struct stat st;
  ck_assert_int_ne(stat(path("out.json"), &st), 0);
}

START_TEST(bad_audits_exit_2) {
  write_text(path("bad.json"), "{\"schema\": \"gdn-parity-audit\", \"schema_version\": 1,\n \"programs\": [}\n");
  refused(path("bad.json"), "bad.json:2:");
  write_text(path("old.json"), "{\"schema\": \"gdn-parity-audit\", \"schema_version\": 9}");
  refused(path("old.json"), "old.json: schema_version: only version 1 is known");
  /* a field of the right name and the wrong type, deep inside */
  char *text = slurp(fail_audit);
  char *at = strstr(text, "\"bytes\": 2048");
  ck_assert_ptr_nonnull(at);
  memcpy(at, "\"bytes\": null", 13);
  write_text(path("typed.json"), text);
  refused(path("typed.json"), "typed.json: programs[3].collectives[0].bytes: expected a number");
  ck_assert_int_eq(mkfifo(path("fifo.json"), 0600), 0);
  refused(path("fifo.json"), "is a FIFO, not a regular file");
  refused(path("absent.json"), "cannot open");
  /* the audit may not be overwritten by an output */
  const char *a[] = {"check", "--fixture", fixture, "--audit", pass_audit, "--json", pass_audit, NULL};
  run(a);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--audit"));
  /* report too */
  const char *b[] = {"report", path("none.json"), "--audit", path("bad.json"), "-o", path("x.html"), NULL};
  run(b);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "bad.json:2:"));
}
END_TEST

int main(int argc, char **argv) {
  ckr_args(argc, argv, "test_audit_cli PATH-TO-gdn-parity SOURCE-ROOT", 2, &exe, &root);
  Suite *su = suite_create("audit_cli");
  TCase *tc = CKR_TCASE(su, "audit_cli", 120, check_fails_on_an_audit_fail, report_rebuilds_and_adds_the_audit,
      bad_audits_exit_2);
  tcase_add_checked_fixture(tc, setup, teardown);
  return ckr_run(su);
}
