/* The Markdown job summary: under 1 MiB however many cases (GitHub refuses
 * a larger $GITHUB_STEP_SUMMARY), failing cases first, a truncation line
 * that says how many were left out, table cells that cannot break the
 * table, a link to the HTML report. */
#include <check.h>

#include "gdn_alloc.h"
#include "report_markdown.h"
#include "page_doc.h"
#include "sample_doc.h"
#include "test_util.h"
#include "../check_runner.h"
#include "../check_text.h"

static char *render(const json_t *doc, const char *rel, size_t *len) {
  report_buf b;
  report_buf_init(&b);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_markdown_render(doc, rel, &b, &e), GDN_OK);
  *len = b.len;
  return b.data;
}

/* Table rows ("| 12 | ..."), and the unescaped pipes in a line. */
static int is_row(const char *line) { return line[0] == '|' && line[1] == ' ' && line[2] >= '0' && line[2] <= '9'; }

static int pipes(const char *line, const char *end) {
  int n = 0;
  for (const char *p = line; p < end; p++)
    if (*p == '|' && (p == line || p[-1] != '\\')) n++;
  return n;
}

START_TEST(twenty_thousand_cases) {
  const size_t N = 20000, NF = 300;
  /* The failing cases at the end of the document: they must still come
   * first in the summary. */
  json_t *cases = page_doc_use(sample_doc_many(N, 0, 0));
  for (size_t i = N - NF; i < N; i++) {
    json_t *k = json_array_get(json_object_get(json_object_get(json_array_get(cases, i),
                                                               "tolerance"), "checks"), 1);
    json_object_set_new(k, "value", json_real(1e-6));
  }
  sample_doc_refresh_verdict(doc);
  size_t len;
  char *md = render(doc, "report.html", &len);
  ck_assert_uint_lt(len, 1024 * 1024);
  ck_assert_uint_le(len, REPORT_MARKDOWN_MAX_BYTES);
  CKT_HAS_ALL(md, "## \xE2\x9D\x8C gdn-parity: **FAIL**", "**300 of 20000 cases out of tolerance.**");
  const char *fail_head = strstr(md, "### Failing cases (300)");
  const char *pass_head = strstr(md, "### Passing cases (19700)");
  ck_assert_ptr_nonnull(fail_head);
  ck_assert_ptr_nonnull(pass_head);
  ck_assert(fail_head < pass_head);
  size_t rows = 0, fail_rows = 0;
  int seen_pass = 0;
  for (const char *l = md; *l;) {
    const char *e = strchr(l, '\n');
    if (!e) e = l + strlen(l);
    if (is_row(l)) {
      rows++;
      int fail = strstr(l, "| **FAIL** |") && strstr(l, "| **FAIL** |") < e;
      if (fail) {
        ck_assert_msg(!seen_pass, "a failing row after a passing one");
        fail_rows++;
      } else seen_pass = 1;
      /* 17 columns: 18 unescaped pipes, whatever the cells contain (the
       * ids here contain '|'). */
      ck_assert_int_eq(pipes(l, e), 18);
    }
    l = *e ? e + 1 : e;
  }
  ck_assert_uint_eq(fail_rows, NF);
  ck_assert_uint_gt(rows, 1000); /* the budget is used, not wasted */
  char want[96];
  snprintf(want, sizeof want, "\n... and %zu more cases (see the report).\n", N - rows);
  ck_assert_msg(strstr(md, want), "no line \"%s\"", want + 1);
  /* The ids contain '|': escaped in the cells. */
  ck_assert_ptr_nonnull(strstr(md, "| case-019999\\|pass |"));
  ck_assert_ptr_null(strstr(md, "case-019999|"));
  gdn_free(md);
}
END_TEST

START_TEST(small_and_link) {
  size_t len;
  char *md = render(doc, "out dir/report (1).html", &len);
  ck_assert_ptr_nonnull(strstr(md, "Full report: [out dir/report (1).html]"
                                   "(out%20dir/report%20%281%29.html)"));
  ck_assert_ptr_null(strstr(md, "more cases (see the report)"));
  /* The deciding numbers and the upstream comparison are spelled out. */
  CKT_HAS_ALL(md, "rel\\_fro = **1.009e-6**, limit **6e-7**", "**Upstream would have missed it:**",
              "**upstream 4/4 pass / ours fail**");
  /* Names with markup are neutralised. */
  ck_assert_ptr_nonnull(strstr(md, "qwen3.5 layer 7 &lt;&amp;\"quoted\"&gt;"));
  ck_assert_ptr_null(strstr(md, "<&"));
  gdn_free(md);
  md = render(doc, NULL, &len);
  ck_assert_ptr_null(strstr(md, "Full report"));
  gdn_free(md);
  /* A passing run says so, and names the case closest to its limit. */
  page_doc_use(sample_doc_many(5, 0, 0));
  md = render(doc, NULL, &len);
  CKT_HAS_ALL(md, "gdn-parity: **PASS**", "**All 5 cases within tolerance.**", "**Closest to its limit**");
  ck_assert_ptr_null(strstr(md, "### Failing"));
  gdn_free(md);
}
END_TEST

/* An external output (an impls entry with its own "pass") comes first: its
 * verdict over its cases and the deciding check of its worst case precede
 * the kernels' headline, and the table gains its column.  Without one the
 * table header is the kernels' (the main job's summary is unchanged). */
static void add_external(json_t *c, const char *name, double rel, double limit) {
  json_t *m = json_pack("{sf}", "rel_fro", rel);
  json_object_set_new(json_object_get(c, "impls"), name, json_pack("{so sb}", "o", m, "pass", rel <= limit));
  json_t *k = json_pack("{ss ss ss sf sf sb ss}", "name", "tpu o rel_fro <= limit", "subject", name, "metric",
                        "rel_fro", "value", rel, "limit", limit, "pass", rel <= limit, "reason", "planted");
  json_array_append_new(json_object_get(json_object_get(c, "tolerance"), "checks"), k);
}

START_TEST(external_outputs_first) {
  page_doc_use(sample_doc_many(3, 0, 0));
  size_t len;
  char *md = render(doc, NULL, &len);
  ck_assert_ptr_null(strstr(md, "External output"));
  ck_assert_ptr_null(strstr(md, "external outputs (o rel_fro, verdict)"));
  gdn_free(md);
  json_t *cases = json_object_get(doc, "cases");
  add_external(json_array_get(cases, 0), "tpu", 1e-7, 1e-6);
  add_external(json_array_get(cases, 1), "tpu", 3e-5, 1e-6); /* the worst: fails */
  add_external(json_array_get(cases, 2), "tpu", 2e-7, 1e-6);
  sample_doc_refresh_verdict(doc);
  md = render(doc, NULL, &len);
  const char *ext = strstr(md, "**External output tpu: FAIL** in 1 of 3 cases. Deciding check of its worst case, ");
  const char *worst = strstr(md, "**Deciding check** of the worst case");
  ck_assert_ptr_nonnull(ext);
  ck_assert_ptr_nonnull(worst);
  ck_assert(ext < worst);
  CKT_HAS_ALL(ext, "case-000001", "rel\\_fro = **3e-5**, limit **1e-6** (30\xC3\x97 the limit, **fail**)");
  CKT_HAS_ALL(md, "| external outputs (o rel_fro, verdict) |", "| tpu 3e-5 **fail** |", "| tpu 1e-7 pass |");
  gdn_free(md);
  /* All passing: the one closest to its limit, by its own checks. */
  json_t *c1 = json_array_get(cases, 1);
  json_object_set_new(json_object_get(json_object_get(c1, "impls"), "tpu"), "pass", json_true());
  json_t *checks = json_object_get(json_object_get(c1, "tolerance"), "checks");
  json_t *k = json_array_get(checks, json_array_size(checks) - 1);
  json_object_set_new(k, "value", json_real(1e-8));
  json_object_set_new(json_object_get(json_object_get(json_object_get(c1, "impls"), "tpu"), "o"), "rel_fro",
                      json_real(1e-8));
  sample_doc_refresh_verdict(doc);
  md = render(doc, NULL, &len);
  ck_assert_ptr_nonnull(strstr(md, "**External output tpu: pass** in all 3 cases. Closest to its limit: case "
                                   "case-000002"));
  gdn_free(md);
}
END_TEST

/* Shard, solve, packing: one line when every case shares them; in the
 * prefix cell of the cases where they vary (control: not there when shared). */
START_TEST(modes_where_they_vary) {
  json_t *cases = page_doc_use(sample_doc_many(3, 0, 0));
  for (size_t i = 0; i < 3; i++) {
    json_object_set_new(json_array_get(cases, i), "shard", json_string("tokens"));
    json_object_set_new(json_array_get(cases, i), "solve", json_string("xla-expander"));
  }
  size_t len;
  char *md = render(doc, NULL, &len);
  ck_assert_ptr_nonnull(strstr(md, "Modes every case shares: shard tokens, solve xla-expander.\n"));
  ck_assert_ptr_null(strstr(md, "\xC2\xB7 tokens"));
  gdn_free(md);
  json_object_set_new(json_array_get(cases, 2), "solve", json_string("substitution"));
  json_object_set_new(json_array_get(cases, 2), "packing", json_string("leak"));
  md = render(doc, NULL, &len);
  CKT_HAS_ALL(md, "Modes every case shares: shard tokens; the prefix column adds",
              " \xC2\xB7 substitution \xC2\xB7 leak |", " \xC2\xB7 xla-expander |");
  ck_assert_ptr_null(strstr(md, "\xC2\xB7 tokens"));
  gdn_free(md);
}
END_TEST

START_TEST(file_deterministic) {
  const char *dir = test_tmpdir(), *path = test_path_in(dir, "summary.md");
  page_doc_use(sample_doc_many(2000, 20, 0));
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_markdown_write(doc, path, "report.html", &e), GDN_OK);
  size_t n1 = 0, n2 = 0;
  char *a = test_read_file(path, &n1);
  ck_assert_int_eq(report_markdown_write(doc, path, "report.html", &e), GDN_OK);
  char *b = test_read_file(path, &n2);
  ck_assert_uint_eq(n1, n2);
  ck_assert(!memcmp(a, b, n1));
  ck_assert_int_eq(test_count_entries(dir), 1);
  free(a);
  free(b);
}
END_TEST

PAGE_DOC_MAIN("markdown", "markdown", 120, twenty_thousand_cases, small_and_link, external_outputs_first,
    file_deterministic, modes_where_they_vary)
