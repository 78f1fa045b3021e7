/* The audit document (reports/report_audit.h) in the results document and
 * its reports: reading and validation (each refusal a negative control
 * naming the field), embedding (an audit FAIL fails the run), the HTML
 * section's tables, numbers and plots, escaping of a hostile op_name and
 * source, the Markdown paragraph and the JUnit testsuite.
 * argv[1]: the folder of the sample audits (tests/reports/data). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"
#include "report_audit.h"
#include "report_doc.h"
#include "page_doc.h"
#include "sample_doc.h"
#include "test_util.h"
#include "../check_runner.h"
#include "../check_text.h"

static const char *g_data = "tests/reports/data";
static const char *HOSTILE_OP = "<script>alert(1)</script>|x";
static const char *HOSTILE_SRC = "\"><img src=x onerror=alert(2)>:31 (f)";

static json_t *load(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", g_data, name);
  json_t *a = NULL;
  gdn_error e;
  gdn_error_init(&e);
  int rc = report_audit_read(p, &a, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", p, e.msg);
  return a;
}

/* The realistic sample results document, every case passing, with audit.
 * The caller's reference to audit passes to the document (as jansson's
 * *_new calls take theirs): the audit lives as long as the document, and
 * one json_decref of the document releases both. */
static json_t *doc_with_new(json_t *audit) {
  json_t *doc = sample_doc_many(3, 0, 0);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_audit_embed(doc, audit, &e), GDN_OK);
  json_decref(audit);
  return doc;
}

/* The audit sample `name` read and embedded in this test's document (doc,
 * page_doc.h); the audit, borrowed: it lives as long as doc. */
static json_t *audited(const char *name) {
  json_t *a = load(name);
  page_doc_use(doc_with_new(a));
  return a;
}

static char *render(const json_t *doc, test_render_fn fn) { return test_render(fn, doc, NULL); /* the caller frees */ }

static int markdown(const json_t *doc, report_buf *b, gdn_error *e) { return report_markdown_render(doc, NULL, b, e); }

/* Validation: err names the field; GDN_ERR_INPUT. */
static void refused(json_t *a, const char *field) {
  gdn_error e;
  gdn_error_init(&e);
  int rc = report_audit_validate(a, "A.json", "", &e);
  ck_assert_int_eq(rc, GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "A.json: ") && strstr(e.msg, field), "'%s' does not name %s", e.msg, field);
}

START_TEST(samples_validate) {
  json_t *p = load("audit-pass.json"), *f = load("audit-fail.json");
  ck_assert(report_audit_pass(p));
  ck_assert(!report_audit_pass(f));
  size_t n, nf;
  report_audit_counts(f, &n, &nf);
  ck_assert_uint_eq(n, 6);
  ck_assert_uint_eq(nf, 1);
  json_decref(p);
  json_decref(f);
}
END_TEST

START_TEST(validation_names_the_field) {
  json_t *a = load("audit-fail.json");
  json_t *c;
  c = json_deep_copy(a), json_object_set_new(c, "schema", json_string("gdn-parity")), refused(c, "schema"), json_decref(c);
  c = json_deep_copy(a), json_object_set_new(c, "schema_version", json_integer(2)), refused(c, "schema_version"),
  json_decref(c);
  c = json_deep_copy(a), json_object_del(c, "checks"), refused(c, "checks: missing"), json_decref(c);
  c = json_deep_copy(a);
  json_object_set_new(json_array_get(json_object_get(c, "checks"), 0), "verdict", json_string("MAYBE"));
  refused(c, "checks[0].verdict");
  json_decref(c);
  c = json_deep_copy(a);
  json_t *coll = json_array_get(json_object_get(json_array_get(json_object_get(c, "programs"), 7), "collectives"), 0);
  json_object_set_new(coll, "bytes", json_string("2048"));
  refused(c, "programs[7].collectives[0].bytes");
  json_decref(c);
  c = json_deep_copy(a);
  json_object_set_new(json_object_get(json_object_get(c, "memory_at_scale"), "accelerators"), "v5e", json_string("16G"));
  refused(c, "memory_at_scale.accelerators.v5e");
  json_decref(c);
  /* A PASS over a failing check, and a FAIL with exit status 0. */
  c = json_deep_copy(a), json_object_set_new(c, "verdict", json_string("PASS")), refused(c, "verdict"), json_decref(c);
  c = json_deep_copy(a), json_object_set_new(c, "exit_status", json_integer(0)), refused(c, "exit_status"),
  json_decref(c);
  /* the control: the unchanged document passes */
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_audit_validate(a, "A.json", "", &e), GDN_OK);
  json_decref(a);
}
END_TEST

static void read_refused(const char *path, const char *what) {
  json_t *a = (json_t *)1;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_audit_read(path, &a, &e), GDN_ERR_INPUT);
  ck_assert_ptr_null(a);
  ck_assert_msg(strstr(e.msg, path) && strstr(e.msg, what), "'%s' lacks %s", e.msg, what);
}

START_TEST(read_refuses_non_regular_and_bad_json) {
  const char *dir = test_tmpdir();
  char fifo[600], bad[600], none[600];
  snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
  snprintf(bad, sizeof bad, "%s/bad.json", dir);
  snprintf(none, sizeof none, "%s/none.json", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  read_refused(fifo, "is a FIFO, not a regular file"); /* and it returned: nothing blocked */
  read_refused(dir, "is a folder, not a regular file");
  FILE *f = fopen(bad, "w");
  fputs("{\"schema\": \"gdn-parity-audit\",\n \"schema_version\": 1,,}\n", f);
  fclose(f);
  read_refused(bad, ":2:");
  read_refused(none, "cannot open");
  f = fopen(bad, "w");
  fputs("{\"schema\": \"gdn-parity-audit\", \"schema_version\": 1}\n", f);
  fclose(f);
  read_refused(bad, "programs: missing");
  unlink(fifo);
  unlink(bad);
  rmdir(dir);
}
END_TEST

START_TEST(embed_ands_the_verdict) {
  json_t *p = load("audit-pass.json"), *f = load("audit-fail.json");
  json_t *dp = doc_with_new(p), *df = doc_with_new(f);
  ck_assert(json_is_true(json_object_get(dp, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(dp, "exit_status")), 0);
  ck_assert(json_is_false(json_object_get(df, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(df, "exit_status")), 1);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_doc_validate(df, "r.json", &e), GDN_OK);
  /* A document claiming PASS beside a failing audit is refused. */
  json_object_set_new(df, "pass", json_true());
  ck_assert_int_eq(report_doc_validate(df, "r.json", &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "r.json: pass") && strstr(e.msg, "audit's verdict is FAIL"), "%s", e.msg);
  /* A broken embedded audit is named by its path in the results document. */
  json_object_set_new(df, "pass", json_false());
  json_object_set_new(json_object_get(df, "audit"), "checks", json_string("none"));
  ck_assert_int_eq(report_doc_validate(df, "r.json", &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "r.json: audit.checks"), "%s", e.msg);
  json_decref(dp);
  json_decref(df);
}
END_TEST

START_TEST(json_keeps_the_audit) {
  json_t *f = audited("audit-fail.json");
  char *text = render(doc, report_json_render);
  json_error_t je;
  json_t *back = json_loads(text, JSON_PRESERVE_ORDER, &je);
  ck_assert_ptr_nonnull(back);
  ck_assert(json_equal(json_object_get(back, "audit"), f));
  /* the producer's key order, not byte order */
  void *it = json_object_iter(json_object_get(back, "audit"));
  ck_assert_str_eq(json_object_iter_key(it), "schema");
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_doc_validate(back, "back", &e), GDN_OK);
  char *h1 = render(doc, report_html_render), *h2 = render(back, report_html_render);
  ck_assert_str_eq(h1, h2);
  free(h1), free(h2), free(text);
  json_decref(back);
}
END_TEST

START_TEST(html_fail_section) {
  audited("audit-fail.json");
  char *h = render(doc, report_html_render);
  CKT_HAS_ALL(h,
      "<html lang=\"en\" data-verdict=\"fail\">",
      "<p id=\"audit-headline\"><b class=\"tag-fail\">Audit FAIL</b>: 1 of 6 checks failed"
      "; first <b>collective-grows-with-T cp backward D=4</b>: all-gather f32[1,1024,2,16] "
      "32768 -&gt; 131072 bytes",
      "<section id=\"audit\">");
  /* checks: the FAIL first, naming the op */
  const char *checks = strstr(h, "<table id=\"audit-checks\"");
  ck_assert_ptr_nonnull(checks);
  const char *first_row = strstr(checks, "<tr class=");
  ck_assert_ptr_eq(first_row, strstr(checks, "<tr class=\"fail\"><td>collective-grows-with-T</td>"));
  ck_assert_ptr_nonnull(strstr(first_row, "<code>all-gather f32[1,1024,2,16]</code> <code class=\"op-name\">"
                                          "jit(f)/shard_map/all_gather</code> at <code class=\"op-source\">"
                                          "layer.py:31 (gathered_layer)</code>"));
  /* affine minimum: backward D=4 measures 57344 bytes against 12288 */
  ck_assert_ptr_nonnull(strstr(h, "<td>backward</td><td class=\"num\">4</td><td class=\"num\">256</td>"
                                  "<td class=\"num\">4096</td><td class=\"num\">3</td><td class=\"num\">12288</td>"
                                  "<td class=\"num\">57344</td><td class=\"num\">4.667</td>"));
  /* memory at scale: cp at D=4, 1200 B per local token, resident bytes and the longest T on v5e */
  CKT_HAS_ALL(h,
      "<td>cp</td><td class=\"num\">4</td><td class=\"num\">300</td>"
      "<td class=\"num\">1200</td><td class=\"num\">1</td><td class=\"num\">1</td>"
      "<td class=\"num\">128977848<br><small>0.120 GiB</small></td>",
      "<td class=\"num\">34918424</td>",
      "longest T on v5e (17179869184 B)");
  /* plots: the growing all-gather is a series of the backward plot, listed first */
  const char *svg = strstr(h, "id=\"svg-audit-collectives-backward\"");
  ck_assert_ptr_nonnull(svg);
  const char *end = strstr(svg, "</svg>");
  const char *ag = strstr(svg, "D=4 G1 all-gather");
  ck_assert(ag && ag < end);
  ck_assert_ptr_nonnull(strstr(end, "<tr><td>G1</td><td>all-gather</td><td><code class=\"op-name\">"
                                    "jit(f)/shard_map/all_gather</code></td>"));
  const char *fw = strstr(h, "id=\"svg-audit-collectives-forward\"");
  ck_assert_ptr_nonnull(fw);
  const char *fw_ag = strstr(fw, "all-gather");
  ck_assert(!fw_ag || fw_ag > strstr(fw, "</svg>"));
  CKT_HAS_ALL(h, "id=\"svg-audit-memory\"", "cp per local token");
  /* the program group of the failing check is open, its all-gather rows marked */
  CKT_HAS_ALL(h,
      "cp backward, D = 4, heads audited <span class=\"tag-fail\">FAIL</span>",
      "<tr class=\"fail\"><td class=\"num\">1024</td><td>all-gather</td>"
      "<td><code>all-gather.15</code></td><td><code>f32[1,1024,2,16]</code></td>"
      "<td class=\"num\">131072</td>",
      "<p id=\"audit-note\" class=\"missed-note\">XLA-on-CPU buffer assignment");
  free(h);
}
END_TEST

START_TEST(html_pass_section) {
  audited("audit-pass.json");
  char *h = render(doc, report_html_render);
  CKT_HAS_ALL(h, "data-verdict=\"pass\"", "<b class=\"tag-pass\">Audit PASS</b>: 0 of 6 checks failed");
  CKT_HAS_NONE(h, "Audit FAIL", "all-gather", "<tr class=\"fail\">");
  free(h);
  /* and without an audit there is no section at all */
  json_t *plain = sample_doc_many(3, 0, 0);
  h = render(plain, report_html_render);
  ck_assert_ptr_null(strstr(h, "id=\"audit"));
  free(h);
  json_decref(plain);
}
END_TEST

/* --passes forward: no backward was compiled, memory_at_scale is null (the
 * spec's "object or null"): accepted, and the section says it was not
 * measured.  Control: any other non-object there is refused. */
START_TEST(memory_at_scale_null_forward_only) {
  json_t *p = load("audit-pass.json");
  json_object_set_new(p, "memory_at_scale", json_null());
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(report_audit_validate(p, "A.json", "", &e) == GDN_OK, "%s", e.msg);
  page_doc_use(doc_with_new(p));
  char *h = render(doc, report_html_render);
  ck_assert_ptr_nonnull(strstr(h, "Not measured: no backward program was compiled"));
  free(h);
  json_t *c = json_deep_copy(p);
  json_object_set_new(c, "memory_at_scale", json_integer(3));
  refused(c, "memory_at_scale: expected an object or null");
  json_decref(c);
}
END_TEST

/* The failing check's op and every instance of its group made hostile. */
static json_t *hostile(void) {
  json_t *a = load("audit-fail.json");
  const json_t *progs = json_object_get(a, "programs");
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *cs = json_object_get(json_array_get(progs, i), "collectives");
    for (size_t k = 0; k < json_array_size(cs); k++) {
      json_t *c = json_array_get(cs, k);
      if (strcmp(json_string_value(json_object_get(c, "kind")), "all-gather")) continue;
      json_object_set_new(c, "op_name", json_string(HOSTILE_OP));
      json_object_set_new(c, "source", json_string(HOSTILE_SRC));
    }
  }
  json_t *k = json_array_get(json_object_get(a, "checks"), 3);
  json_object_set_new(json_object_get(k, "op"), "op_name", json_string(HOSTILE_OP));
  json_object_set_new(json_object_get(k, "op"), "source", json_string(HOSTILE_SRC));
  json_object_set_new(k, "reason", json_string("all-gather grows (<script>alert(1)</script>, \"><img src=x "
                                               "onerror=alert(2)>:31 (f)) | pipe"));
  /* the fits' group keys carry them too */
  const json_t *fits = json_object_get(a, "fits");
  for (size_t i = 0; i < json_array_size(fits); i++) {
    json_t *fi = json_array_get(fits, i);
    if (strncmp(json_string_value(json_object_get(fi, "figure")), "collective:all-gather", 21)) continue;
    char key[512];
    snprintf(key, sizeof key, "collective:all-gather|%s|%s", HOSTILE_OP, HOSTILE_SRC);
    json_object_set_new(fi, "figure", json_string(key));
  }
  return a;
}

START_TEST(hostile_strings_escaped) {
  page_doc_use(doc_with_new(hostile()));
  char *h = render(doc, report_html_render);
  ck_assert_ptr_null(strstr(h, "<script>alert"));
  ck_assert_ptr_null(strstr(h, "<img src=x"));
  CKT_HAS_ALL(h,
      "<code class=\"op-name\">&lt;script&gt;alert(1)&lt;/script&gt;|x</code>",
      "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;:31 (f)");
  char *md = render(doc, markdown);
  ck_assert_ptr_null(strstr(md, "<script>"));
  CKT_HAS_ALL(md,
      "&lt;script&gt;alert(1)&lt;/script&gt;",
      "\\| pipe"); /* the pipe cannot end the cell */
  char *x = render(doc, report_junit_render);
  ck_assert_ptr_null(strstr(x, "<script>"));
  ck_assert_ptr_nonnull(strstr(x, "message=\"all-gather grows (&lt;script&gt;alert(1)&lt;/script&gt;, &quot;&gt;"));
  free(h), free(md), free(x);
}
END_TEST

START_TEST(markdown_and_junit) {
  json_t *f = load("audit-fail.json"), *p = load("audit-pass.json");
  json_t *df = doc_with_new(f), *dp = doc_with_new(p);
  char *md = render(df, markdown);
  CKT_HAS_ALL(md,
      "### \xE2\x9D\x8C Audit: **FAIL** (1 of 6 checks failed)\n",
      "| collective-grows-with-T cp backward D=4 | all-gather f32\\[1,1024,2,16\\] "
      "32768 -&gt; 131072 bytes from T=256 to 1024",
      "## \xE2\x9D\x8C gdn-parity: **FAIL**");
  char *mp = render(dp, markdown);
  ck_assert_ptr_nonnull(strstr(mp, "### \xE2\x9C\x85 Audit: **PASS** (0 of 6 checks failed)\n"));
  ck_assert_ptr_null(strstr(mp, "| failing check |"));
  char *x = render(df, report_junit_render);
  CKT_HAS_ALL(x,
      "<testsuites name=\"gdn-parity\" tests=\"9\" failures=\"1\" errors=\"0\"",
      "<testsuite name=\"gdn-parity.audit\" tests=\"6\" failures=\"1\"",
      "<testcase name=\"collective-grows-with-T cp backward D=4\" "
      "classname=\"gdn-parity.audit.collective-grows-with-T\" time=\"0.000\">\n"
      "      <failure type=\"collective-grows-with-T\" message=\"all-gather "
      "f32[1,1024,2,16] 32768 -&gt; 131072 bytes",
      "<testcase name=\"flops-fall-with-D cp forward\" "
      "classname=\"gdn-parity.audit.flops-fall-with-D\" time=\"0.000\"/>");
  char *xp = render(dp, report_junit_render);
  ck_assert_ptr_nonnull(strstr(xp, "<testsuites name=\"gdn-parity\" tests=\"9\" failures=\"0\""));
  ck_assert_ptr_null(strstr(xp, "<failure"));
  free(md), free(mp), free(x), free(xp);
  json_decref(df), json_decref(dp);
}
END_TEST

/* The verdict box and title say what failed: the cases passed, the audit did not. */
START_TEST(headline_when_only_the_audit_fails) {
  audited("audit-fail.json");
  char *h = render(doc, report_html_render);
  CKT_HAS_ALL(h,
      "<title>FAIL \xE2\x80\x94 gdn-parity: 3 cases within tolerance; audit FAIL</title>",
      "<p class=\"count\">All 3 cases within tolerance. Exit status 1.</p>");
  char *md = render(doc, markdown);
  ck_assert_ptr_nonnull(strstr(md, "**All 3 cases within tolerance.** Exit status 1."));
  free(h), free(md);
}
END_TEST

/* A huge reason is cut in the Markdown (GitHub's 1 MiB), kept whole in the HTML. */
START_TEST(markdown_bounds_a_huge_reason) {
  json_t *f = load("audit-fail.json");
  static char big[100001];
  memset(big, 'x', sizeof big - 1);
  memcpy(big + 99990, "THE-END", 7);
  json_object_set_new(json_array_get(json_object_get(f, "checks"), 3), "reason", json_string(big));
  page_doc_use(doc_with_new(f));
  char *md = render(doc, markdown), *h = render(doc, report_html_render);
  ck_assert_uint_lt(strlen(md), 20000);
  ck_assert_ptr_null(strstr(md, "THE-END"));
  ck_assert_ptr_nonnull(strstr(md, "xxx\xE2\x80\xA6 |"));
  ck_assert_ptr_nonnull(strstr(h, "THE-END"));
  free(md), free(h);
}
END_TEST

/* A real audit (gdn-parity-jax audit of broken:sequence_gathered, D = 1, 2,
 * T = 128..512, on the h-audit branch): read, and every failing check in
 * every view. */
START_TEST(real_audit_renders) {
  json_t *a = audited("audit-real-sequence-gathered.json");
  size_t n, nf;
  report_audit_counts(a, &n, &nf);
  ck_assert_uint_eq(n, 5);
  ck_assert_uint_eq(nf, 5);
  char *h = render(doc, report_html_render), *md = render(doc, markdown), *x = render(doc, report_junit_render);
  CKT_HAS_ALL(h,
      "<code>all-gather f32[1,512,2]</code> <code class=\"op-name\">"
      "jit(f)/shard_map/all_gather</code> at <code class=\"op-source\">"
      "gdn_parity_jax/broken.py:414 (sequence_gathered.&lt;locals&gt;.&lt;genexpr&gt;)</code>",
      "D=2 G2 all-gather");
  ck_assert_ptr_nonnull(strstr(md, "Audit: **FAIL** (5 of 5 checks failed)"));
  ck_assert_ptr_nonnull(strstr(x, "<testsuite name=\"gdn-parity.audit\" tests=\"5\" failures=\"5\""));
  free(h), free(md), free(x);
}
END_TEST

/* Work per token counted from the programs' HLO: the table (cp backward
 * D=4: 3250 flops per token, 13000 per local token, 1.444 x the stock's),
 * where the work is per source line with its share, the note on what
 * XLA:CPU's cost analysis misses, what was not judged; an older document
 * without work figures renders no work table. */
START_TEST(html_work_section) {
  audited("audit-pass.json");
  char *h = render(doc, report_html_render);
  CKT_HAS_ALL(h, "<table id=\"audit-work\"",
      "<td>cp</td><td>backward</td><td class=\"num\">4</td><td class=\"num\">3250</td>"
      "<td class=\"num\">13000</td><td class=\"num\">1.444</td>",
      "Where the work is: cp backward, D = 4, T = 1024 (3328000 flops per device; "
      "<code>cost_analysis()</code> said 1280100).",
      "<tr><td><code class=\"op-source\">gdn_cp.py:41 (chunk_fold)</code></td><td class=\"num\">2304000</td>"
      "<td class=\"num\">69.2%</td></tr>",
      "<p id=\"audit-work-note\" class=\"missed-note\">work is counted from the compiled module",
      "<ul id=\"audit-unjudged\">\n<li><b>flops-fall-with-D cp forward D=8</b>: D=8: fewer than two lengths",
      "<th>work flops</th><th>cost_analysis flops (a loop body once)</th>");
  CKT_HAS_NONE(h, "audit-unknown-loops");
  free(h);
  audited("audit-real-sequence-gathered.json");
  h = render(doc, report_html_render);
  CKT_HAS_NONE(h, "<table id=\"audit-work\"", "audit-unjudged");
  free(h);
}
END_TEST

START_TEST(console_lines) {
  json_t *f = audited("audit-fail.json");
  report_buf b;
  report_buf_init(&b);
  report_audit_text_lines(&b, f);
  report_audit_text_verdict(&b, doc);
  ck_assert_str_eq(b.data, "audit: FAIL collective-grows-with-T cp backward D=4: all-gather f32[1,1024,2,16] 32768 "
                           "-> 131072 bytes from T=256 to 1024 (jit(f)/shard_map/all_gather, layer.py:31 "
                           "(gathered_layer))\n; audit FAIL (1 of 6 checks, first collective-grows-with-T cp "
                           "backward D=4)");
  report_buf_clear(&b);
}
END_TEST

int main(int argc, char **argv) {
  if (argc > 1) g_data = argv[1];
  Suite *s = suite_create("report_audit");
  page_doc_fixture(CKR_TCASE(s, "audit", 120, samples_validate, validation_names_the_field,
      read_refuses_non_regular_and_bad_json, memory_at_scale_null_forward_only, embed_ands_the_verdict,
      json_keeps_the_audit, html_fail_section, html_pass_section, hostile_strings_escaped, markdown_and_junit,
      console_lines, headline_when_only_the_audit_fails, markdown_bounds_a_huge_reason, real_audit_renders,
      html_work_section));
  return ckr_run(s);
}
