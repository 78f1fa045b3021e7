/* Validation of the results document (report_doc_validate, and
 * report_json_read for `gdn-parity report results.json`): every field the
 * writers rely on is checked, and the message names the file and the field
 * so the user can fix it. */
#include <check.h>
#include <math.h>

#include "report_doc.h"
#include "report_findings.h"
#include "report_json.h"
#include "report_num.h"
#include "report_summary.h"
#include "sample_doc.h"
#include "test_util.h"
#include "../check_runner.h"

static json_t *case0(json_t *doc) { return json_array_get(json_object_get(doc, "cases"), 0); }

/* Validates doc and expects GDN_ERR_INPUT with every fragment in the
 * message. */
static void refused(json_t *doc, const char *frag1, const char *frag2) {
  gdn_error e;
  gdn_error_init(&e);
  int rc = report_doc_validate(doc, "r.json", &e);
  ck_assert_msg(rc == GDN_ERR_INPUT, "accepted; expected an error mentioning %s", frag1);
  ck_assert_msg(!strncmp(e.msg, "r.json: ", 8), "message does not start with the source: %s", e.msg);
  ck_assert_msg(strstr(e.msg, frag1), "'%s' not in: %s", frag1, e.msg);
  if (frag2) ck_assert_msg(strstr(e.msg, frag2), "'%s' not in: %s", frag2, e.msg);
  json_decref(doc);
}

START_TEST(valid_documents) {
  gdn_error e;
  gdn_error_init(&e);
  json_t *d = sample_doc_realistic();
  ck_assert_int_eq(report_doc_validate(d, "x", &e), GDN_OK);
  json_decref(d);
  d = sample_doc_many(50, 7, 1);
  ck_assert_int_eq(report_doc_validate(d, "x", &e), GDN_OK);
  json_decref(d);
  /* The minimum: the contract's fields, no optional ones. */
  d = json_pack("{ss ss sb s[]}", "tool", "gdn-parity", "version", "0", "pass", 1, "cases");
  ck_assert_int_eq(report_doc_validate(d, "x", &e), GDN_OK);
  json_decref(d);
}
END_TEST

START_TEST(top_level) {
  json_t *d = sample_doc_realistic();
  json_object_del(d, "tool");
  refused(d, "tool: missing (required)", NULL);
  d = sample_doc_realistic();
  json_object_set_new(d, "pass", json_string("yes"));
  refused(d, "pass: expected true or false, got a string", NULL);
  d = sample_doc_realistic();
  json_object_set_new(d, "schema", json_integer(3));
  refused(d, "schema: 3 is newer", NULL);
  d = sample_doc_realistic();
  json_object_set_new(d, "cases", json_object());
  refused(d, "cases: expected an array, got an object", NULL);
  d = sample_doc_realistic();
  json_object_set_new(d, "oracle", json_pack("{ss}", "precision_bits", "128"));
  refused(d, "oracle.precision_bits: expected an integer", NULL);
  refused(json_array(), "(top level): expected an object, got an array", NULL);
}
END_TEST

START_TEST(case_fields) {
  json_t *d = sample_doc_realistic();
  json_object_del(case0(d), "id");
  refused(d, "cases[0].id: missing (required)", NULL);
  d = sample_doc_realistic();
  json_object_set_new(case0(d), "chunk", json_string("64"));
  refused(d, "cases[0].chunk: expected an integer, got a string", NULL);
  d = sample_doc_realistic();
  json_object_set_new(case0(d), "devices", json_integer(0));
  refused(d, "cases[0].devices: 0 is out of range", NULL);
  d = sample_doc_realistic();
  json_object_set_new(case0(d), "input", json_integer(9));
  refused(d, "cases[0].input: 9 is out of range", NULL);
  d = sample_doc_realistic();
  json_object_del(json_object_get(case0(d), "shape"), "Dv");
  refused(d, "cases[0].shape.Dv: missing", NULL);
  /* A numeric field with a string that is not one of the three spellings. */
  d = sample_doc_realistic();
  json_object_set_new(json_object_get(json_object_get(json_object_get(case0(d), "impls"), "scan"),
                                      "o"),
                      "rel_fro", json_string("tiny"));
  refused(d, "cases[0].impls.scan.o.rel_fro", "\"inf\", \"-inf\", \"nan\", got the string \"tiny\"");
}
END_TEST

START_TEST(tolerance) {
  json_t *d = sample_doc_realistic();
  json_object_set_new(json_object_get(case0(d), "tolerance"), "deciding", json_integer(7));
  refused(d, "cases[0].tolerance.deciding: 7 is out of range (4 checks)", NULL);
  d = sample_doc_realistic();
  json_object_del(json_array_get(json_object_get(json_object_get(case0(d), "tolerance"), "checks"),
                                 2),
                  "limit");
  refused(d, "cases[0].tolerance.checks[2].limit: missing", NULL);
  /* PASS beside a failing check would make the report lie. */
  d = sample_doc_realistic();
  json_object_set_new(json_array_get(json_object_get(json_object_get(case0(d), "tolerance"),
                                                     "checks"), 0),
                      "pass", json_false());
  refused(d, "cases[0].pass: is true but a tolerance check failed", NULL);
  d = sample_doc_realistic();
  json_object_set_new(d, "pass", json_true());
  refused(d, "pass: is true but at least one case failed", NULL);
  d = sample_doc_realistic();
  json_object_set_new(case0(d), "error", json_string("oracle did not certify"));
  refused(d, "cases[0].pass: is true but the case has an error", NULL);
}
END_TEST

START_TEST(series) {
  json_t *d = sample_doc_realistic();
  json_array_remove(json_object_get(json_object_get(case0(d), "profile"), "scan"), 0);
  refused(d, "cases[0].profile.scan: has 15 entries but t0 has 16", NULL);
  d = sample_doc_realistic();
  json_array_append_new(json_object_get(json_object_get(case0(d), "ulp_histogram"), "scan"),
                        json_integer(1));
  refused(d, "cases[0].ulp_histogram.scan: has 11 counts but there are 10 edges", NULL);
  d = sample_doc_realistic();
  json_array_set_new(json_object_get(json_object_get(case0(d), "ulp_histogram"), "edges"), 3,
                     json_real(0.1));
  refused(d, "cases[0].ulp_histogram.edges[3]", "increasing");
  d = sample_doc_realistic();
  json_array_set_new(json_object_get(json_object_get(case0(d), "ulp_histogram"), "affine-prefix"),
                     1, json_integer(-3));
  refused(d, "cases[0].ulp_histogram.affine-prefix[1]", "non-negative");
  d = sample_doc_realistic();
  json_object_del(json_array_get(json_object_get(json_array_get(json_object_get(d, "cases"), 3),
                                                 "seams"),
                                 0),
                  "t");
  refused(d, "cases[3].seams[0].t: missing", NULL);
  d = sample_doc_realistic();
  json_object_set_new(json_array_get(json_object_get(case0(d), "upstream"), 1), "pass",
                      json_null());
  refused(d, "cases[0].upstream[1].pass: expected true or false, got null", NULL);
}
END_TEST

START_TEST(read_errors) {
  const char *dir = test_tmpdir();
  char path[600];
  gdn_error e;
  gdn_error_init(&e);
  json_t *doc = (json_t *)1;
  snprintf(path, sizeof path, "%s/absent.json", dir);
  ck_assert_int_eq(report_json_read(path, &doc, &e), GDN_ERR_INPUT);
  ck_assert_ptr_null(doc);
  ck_assert_ptr_nonnull(strstr(e.msg, path));
  /* Not JSON: file, line and column. */
  snprintf(path, sizeof path, "%s/broken.json", dir);
  test_write_text(path, "{\n  \"tool\": \"gdn-parity\",\n  oops\n}\n");
  ck_assert_int_eq(report_json_read(path, &doc, &e), GDN_ERR_INPUT);
  char want[700];
  snprintf(want, sizeof want, "%s:3:", path);
  ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
  /* Duplicate keys are ambiguous. */
  test_write_text(path, "{\"tool\": \"a\", \"tool\": \"b\"}");
  ck_assert_int_eq(report_json_read(path, &doc, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "duplicate"));
  /* Valid JSON, bad document: the file and the field. */
  test_write_text(path, "{\"tool\": \"gdn-parity\", \"version\": \"0.1.0\", \"pass\": true}");
  ck_assert_int_eq(report_json_read(path, &doc, &e), GDN_ERR_INPUT);
  snprintf(want, sizeof want, "%s: cases: missing (required)", path);
  ck_assert_str_eq(e.msg, want);
  ck_assert_int_eq(gdn_error_exit_status(e.code), 2);
}
END_TEST

START_TEST(summary_rules) {
  /* Margins: NaN and infinities are as bad as it gets; limit 0. */
  ck_assert(report_summary_margin(NAN, 1) == INFINITY);
  ck_assert(report_summary_margin(INFINITY, 1) == INFINITY);
  ck_assert(report_summary_margin(0, 0) == 0);
  ck_assert(report_summary_margin(1e-9, 0) == INFINITY);
  ck_assert(report_summary_margin(3e-7, 6e-7) == 0.5);
  json_t *d = sample_doc_many(10, 3, 0);
  report_summary s;
  report_summary_init(&s);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_summary_build(d, &s, &e), GDN_OK);
  ck_assert_uint_eq(s.n, 10);
  ck_assert_uint_eq(s.n_fail, 3);
  /* Failing first, by decreasing margin (values 1.5, 2.5, 3.5 x the limit
   * for cases 0, 1, 2), then the passing ones in document order. */
  ck_assert_uint_eq(s.order[0], 2);
  ck_assert_uint_eq(s.order[1], 1);
  ck_assert_uint_eq(s.order[2], 0);
  for (size_t i = 3; i < 10; i++) ck_assert_uint_eq(s.order[i], i);
  ck_assert_uint_eq(s.worst, 2);
  ck_assert_uint_eq(s.n_upstream, 4);
  report_summary_clear(&s);
  report_summary_clear(&s);
  json_decref(d);
}
END_TEST

/* report_findings_list: each distinct finding once in the writer's style,
 * at most REPORT_FINDINGS_SHOWN, then the count of the rest; nothing at
 * all without findings (the negative control). */
static void item_line(report_buf *b, const report_finding *f) {
  report_buf_printf(b, "<%s x%zu first %s>", f->text, f->cases, f->first_id ? f->first_id : "?");
}

START_TEST(findings_list) {
  static const report_findings_style st = {"[", item_line, "(+%zu)", "]"};
  json_t *d = sample_doc_many(12, 0, 0);
  gdn_error e;
  gdn_error_init(&e);
  report_summary s;
  ck_assert_int_eq(report_summary_load(d, &s, &e), GDN_OK);
  report_buf b;
  report_buf_init(&b);
  report_findings_list(&b, &s, &st);
  ck_assert_uint_eq(b.len, 0);
  report_summary_clear(&s);
  for (size_t i = 0; i < 12; i++) { /* 10 distinct texts; "f0" on cases 0, 10, 11 */
    char t[8];
    snprintf(t, sizeof t, "f%zu", i < 10 ? i : 0);
    json_object_set_new(json_array_get(json_object_get(d, "cases"), i), "finding", json_string(t));
  }
  ck_assert_int_eq(report_summary_load(d, &s, &e), GDN_OK);
  report_findings_list(&b, &s, &st);
  ck_assert_ptr_nonnull(b.data);
  ck_assert_msg(b.data[0] == '[' && strstr(b.data, "<f0 x3 first ") && strstr(b.data, "<f7 x1 first ") &&
                    !strstr(b.data, "<f8 ") && strstr(b.data, "(+2)]"),
                "%s", b.data);
  report_buf_clear(&b);
  report_summary_clear(&s);
  json_decref(d);
}
END_TEST

CKR_MAIN("doc", "doc", 0, valid_documents, top_level, case_fields, tolerance, series, read_errors, summary_rules,
         findings_list)
