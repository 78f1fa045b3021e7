/* The Markdown job summary: under 1 MiB however many cases (GitHub refuses
 * a larger $GITHUB_STEP_SUMMARY), failing cases first, a truncation line
 * that says how many were left out, table cells that cannot break the
 * table, a link to the HTML report. */
#include <check.h>

#include "gdn_alloc.h"
#include "report_markdown.h"
#include "sample_doc.h"
#include "test_util.h"

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
  json_t *doc = sample_doc_many(N, 0, 0);
  /* The failing cases at the end of the document: they must still come
   * first in the summary. */
  json_t *cases = json_object_get(doc, "cases");
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
  ck_assert_ptr_nonnull(strstr(md, "## \xE2\x9D\x8C gdn-parity: **FAIL**"));
  ck_assert_ptr_nonnull(strstr(md, "**300 of 20000 cases out of tolerance.**"));
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
  json_decref(doc);
}
END_TEST

START_TEST(small_and_link) {
  json_t *doc = sample_doc_realistic();
  size_t len;
  char *md = render(doc, "out dir/report (1).html", &len);
  ck_assert_ptr_nonnull(strstr(md, "Full report: [out dir/report (1).html]"
                                   "(out%20dir/report%20%281%29.html)"));
  ck_assert_ptr_null(strstr(md, "more cases (see the report)"));
  /* The deciding numbers and the upstream comparison are spelled out. */
  ck_assert_ptr_nonnull(strstr(md, "rel\\_fro = **1.009e-6**, limit **6e-7**"));
  ck_assert_ptr_nonnull(strstr(md, "**Upstream would have missed it:**"));
  ck_assert_ptr_nonnull(strstr(md, "**upstream 4/4 pass / ours fail**"));
  /* Names with markup are neutralised. */
  ck_assert_ptr_nonnull(strstr(md, "qwen3.5 layer 7 &lt;&amp;\"quoted\"&gt;"));
  ck_assert_ptr_null(strstr(md, "<&"));
  gdn_free(md);
  md = render(doc, NULL, &len);
  ck_assert_ptr_null(strstr(md, "Full report"));
  gdn_free(md);
  json_decref(doc);
  /* A passing run says so, and names the case closest to its limit. */
  doc = sample_doc_many(5, 0, 0);
  md = render(doc, NULL, &len);
  ck_assert_ptr_nonnull(strstr(md, "gdn-parity: **PASS**"));
  ck_assert_ptr_nonnull(strstr(md, "**All 5 cases within tolerance.**"));
  ck_assert_ptr_nonnull(strstr(md, "**Closest to its limit**"));
  ck_assert_ptr_null(strstr(md, "### Failing"));
  gdn_free(md);
  json_decref(doc);
}
END_TEST

START_TEST(file_deterministic) {
  const char *dir = test_tmpdir();
  char path[600];
  snprintf(path, sizeof path, "%s/summary.md", dir);
  json_t *doc = sample_doc_many(2000, 20, 0);
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
  json_decref(doc);
}
END_TEST

int main(void) {
  Suite *su = suite_create("markdown");
  TCase *tc = tcase_create("markdown");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, twenty_thousand_cases);
  tcase_add_test(tc, small_and_link);
  tcase_add_test(tc, file_deterministic);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
