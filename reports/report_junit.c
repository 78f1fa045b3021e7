#include "report_junit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_findings.h"
#include "report_escape.h"
#include "report_num.h"
#include "report_summary.h"

static void xattr(report_buf *b, const char *name, const char *value) {
  report_buf_printf(b, " %s=\"", name);
  report_escape_xml_attr_z(b, value ? value : "");
  report_buf_putc(b, '"');
}

static void classname(report_buf *b, const char *input) {
  report_buf_puts(b, " classname=\"gdn-parity.");
  if (!input || !*input) input = "no-input";
  /* Dots would become packages in CI viewers; anything else unusual is
   * flattened too so the class name is a plain token. */
  int last_us = 0;
  for (const char *p = input; *p; p++) {
    char c = *p;
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '_';
    if (ok) report_buf_putc(b, c), last_us = 0;
    else if (!last_us) report_buf_putc(b, '_'), last_us = 1;
  }
  report_buf_putc(b, '"');
}

/* "name: metric = value > limit (ratio x the limit)" */
static void check_line(report_buf *b, const json_t *k, int xml_attr) {
  double v = NAN, l = NAN;
  report_doc_num(k, "value", &v);
  report_doc_num(k, "limit", &l);
  int pass = json_is_true(json_object_get(k, "pass"));
  char vs[REPORT_NUM_CHARS], ls[REPORT_NUM_CHARS], ms[REPORT_NUM_CHARS], line[600];
  report_num_format(vs, v, 6);
  report_num_format(ls, l, 6);
  report_num_format(ms, report_summary_margin(v, l), 3);
  const char *name = report_doc_str(k, "name"), *metric = report_doc_str(k, "metric");
  const char *where = report_doc_str(k, "where");
  if (json_integer_value(json_object_get(k, "nonfinite")) > 0 && where) /* NaN or inf: no value to compare */
    snprintf(line, sizeof line, "%.200s: fails, %.300s", name, where);
  else
    snprintf(line, sizeof line, "%.200s: %.80s = %s %s limit %s (%sx the limit)", name, metric, vs,
             pass ? "within" : "exceeds", ls, ms);
  if (xml_attr) report_escape_xml_attr_z(b, line);
  else report_escape_xml_text_z(b, line);
}

/* "finding (a finding about ...): TEXT\n", or nothing. */
static void finding_line(report_buf *b, const json_t *c) {
  const char *f = report_doc_str(c, "finding");
  if (!f || !*f) return;
  report_buf_puts(b, "finding (");
  report_buf_puts(b, report_finding_label(f));
  report_buf_puts(b, "): ");
  report_escape_xml_text_z(b, f);
  report_buf_putc(b, '\n');
}

static void failure_body(report_buf *b, const json_t *c) {
  const json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks");
  finding_line(b, c);
  report_buf_puts(b, "checks (deciding marked *):\n");
  long long d = report_doc_int(json_object_get(c, "tolerance"), "deciding", -1);
  for (size_t i = 0; i < json_array_size(checks); i++) {
    const json_t *k = json_array_get(checks, i);
    report_buf_printf(b, "%c %s ", (long long)i == d ? '*' : ' ',
                      json_is_true(json_object_get(k, "pass")) ? "pass" : "FAIL");
    check_line(b, k, 0);
    const char *reason = report_doc_str(k, "reason");
    if (reason) {
      report_buf_puts(b, "\n         limit: ");
      report_escape_xml_text_z(b, reason);
    }
    report_buf_putc(b, '\n');
  }
  const char *key;
  const json_t *im;
  json_object_foreach(json_object_get(c, "impls"), key, im) {
    if (!json_is_false(json_object_get(im, "pass"))) continue;
    report_buf_puts(b, "output ");
    report_escape_xml_text_z(b, key);
    report_buf_puts(b, " failed\n");
  }
  const json_t *up = json_object_get(c, "upstream");
  for (size_t i = 0; i < json_array_size(up); i++) {
    const json_t *u = json_array_get(up, i);
    report_buf_printf(b, "upstream %s: ", json_is_true(json_object_get(u, "pass")) ? "pass" : "fail");
    report_escape_xml_text_z(b, report_doc_str(u, "name"));
    if (report_doc_str(u, "detail")) {
      report_buf_puts(b, " (");
      report_escape_xml_text_z(b, report_doc_str(u, "detail"));
      report_buf_putc(b, ')');
    }
    report_buf_putc(b, '\n');
  }
}

/* The message of a failing case: its deciding check when that failed, else
 * the first failing output of impls. */
static void failure_message(report_buf *b, const report_case_view *v, const char *pm) {
  if (pm) { /* a planted mutant's failure is its kill, not the correct kernels' */
    report_buf_puts(b, "planted mutant ");
    report_escape_xml_attr_z(b, pm);
    report_buf_puts(b, " killed: ");
  }
  if (v->deciding && !json_is_true(json_object_get(v->deciding, "pass"))) {
    check_line(b, v->deciding, 1);
    return;
  }
  const char *key;
  const json_t *im;
  json_object_foreach(json_object_get(v->c, "impls"), key, im) {
    if (json_is_false(json_object_get(im, "pass"))) {
      report_buf_puts(b, "output ");
      report_escape_xml_attr_z(b, key);
      report_buf_puts(b, " is out of tolerance");
      return;
    }
  }
  report_buf_puts(b, "the case is out of tolerance");
}

int report_junit_render(const json_t *doc, report_buf *b, gdn_error *e) {
  report_summary s;
  int rc = report_summary_load(doc, &s, e);
  if (rc) return rc;
  double total = 0, t;
  for (size_t i = 0; i < s.n; i++)
    if (report_doc_num(s.cases[i].c, "seconds", &t) && isfinite(t) && t > 0) total += t;
  if (report_doc_num(json_object_get(json_object_get(doc, "timing"), "seconds"), "total", &t) &&
      isfinite(t) && t > 0)
    total = t;
  size_t failures = s.n_fail - s.n_error;
  report_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  char counts[160];
  snprintf(counts, sizeof counts, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" "
                                  "time=\"%.3f\"", s.n, failures, s.n_error, total);
  const char *pm = report_doc_planted_mutant(doc);
  char suite[160];
  snprintf(suite, sizeof suite, "gdn-parity%s%s%s", pm ? " (planted mutant " : "", pm ? pm : "", pm ? ")" : "");
  /* An embedded audit is a second testsuite; the totals count both. */
  size_t na = 0, naf = 0;
  if (report_audit_of(doc)) report_audit_counts(report_audit_of(doc), &na, &naf);
  report_buf_puts(b, "<testsuites");
  xattr(b, "name", suite);
  report_buf_printf(b, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"%.3f\"", s.n + na,
                    failures + naf, s.n_error, total);
  report_buf_puts(b, ">\n  <testsuite");
  xattr(b, "name", suite);
  report_buf_puts(b, counts);
  report_buf_puts(b, ">\n    <properties>\n");
  struct {
    const char *name, *value;
  } props[] = {{"tool", report_doc_str(doc, "tool")},
               {"version", report_doc_str(doc, "version")},
               {"git_commit", report_doc_str(doc, "git_commit")},
               {"command", report_doc_str(doc, "command")},
               {"oracle_tier", report_doc_str(json_object_get(doc, "oracle"), "tier")},
               {"policy", report_doc_str(json_object_get(doc, "policy"), "name")},
               {"policy_sha256", report_doc_str(json_object_get(doc, "policy"), "sha256")},
               {"planted_mutant", pm}};
  for (size_t i = 0; i < sizeof props / sizeof *props; i++) {
    if (!props[i].value) continue;
    report_buf_puts(b, "      <property");
    xattr(b, "name", props[i].name);
    xattr(b, "value", props[i].value);
    report_buf_puts(b, "/>\n");
  }
  double cert;
  if (report_doc_num(json_object_get(doc, "oracle"), "certified_bits", &cert)) {
    char v[REPORT_NUM_CHARS];
    report_num_format(v, cert, 6);
    report_buf_printf(b, "      <property name=\"oracle_certified_bits\" value=\"%s\"/>\n", v);
  }
  report_buf_puts(b, "    </properties>\n");
  /* Document order: CI viewers sort for themselves, and a stable order makes
   * runs comparable. */
  for (size_t i = 0; i < s.n; i++) {
    const report_case_view *v = &s.cases[i];
    const json_t *in = report_doc_input(doc, v->c);
    double secs = 0;
    if (!report_doc_num(v->c, "seconds", &secs) || !isfinite(secs) || secs < 0) secs = 0;
    report_buf_puts(b, "    <testcase");
    xattr(b, "name", report_doc_str(v->c, "id"));
    classname(b, in ? report_doc_str(in, "name") : NULL);
    report_buf_printf(b, " time=\"%.3f\"", secs);
    if (v->pass) {
      const char *f = report_doc_str(v->c, "finding");
      if (pm) { /* a planted mutant that passes survived: CI shows it as the case's output */
        report_buf_puts(b, ">\n      <system-out>planted mutant ");
        report_escape_xml_text_z(b, pm);
        report_buf_puts(b, " survived: " REPORT_MUTANT_NOTE "</system-out>\n    </testcase>\n");
        continue;
      }
      if (!f || !*f) {
        report_buf_puts(b, "/>\n");
        continue;
      }
      /* a passing case with a finding: CI shows it as the case's output */
      report_buf_puts(b, ">\n      <system-out>");
      finding_line(b, v->c);
      report_buf_puts(b, "</system-out>\n    </testcase>\n");
      continue;
    }
    report_buf_puts(b, ">\n");
    if (v->error) {
      report_buf_puts(b, "      <error type=\"evaluation\"");
      xattr(b, "message", v->error);
      report_buf_puts(b, ">");
    } else {
      report_buf_puts(b, "      <failure type=\"tolerance\" message=\"");
      failure_message(b, v, pm);
      report_buf_puts(b, "\">");
    }
    failure_body(b, v->c);
    report_buf_puts(b, v->error ? "</error>\n" : "</failure>\n");
    report_buf_puts(b, "    </testcase>\n");
  }
  report_buf_puts(b, "  </testsuite>\n");
  report_audit_junit(b, doc);
  report_buf_puts(b, "</testsuites>\n");
  report_summary_clear(&s);
  return report_buf_status(b, "rendering the JUnit XML", e);
}

int report_junit_write(const json_t *doc, const char *path, gdn_error *e) {
  report_buf b;
  report_buf_init(&b);
  return report_buf_write_file(&b, report_junit_render(doc, &b, e), path, e);
}
