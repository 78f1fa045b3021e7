/* The audit in the text outputs: Markdown summary, JUnit XML, console. */
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_escape.h"

/* The Markdown summary stays small whatever the audit holds. */
#define MD_MAX_FAILS 20

/* A reason or note from the audit, at most this many bytes in the
 * Markdown (GitHub's 1 MiB limit; the HTML and JUnit carry it whole). */
#define MD_MAX_TEXT 600

static void md_cell(report_buf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n <= MD_MAX_TEXT) {
    report_escape_markdown_cell_z(b, s);
    return;
  }
  size_t k = MD_MAX_TEXT;
  while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--; /* a UTF-8 boundary */
  report_escape_markdown_cell(b, s, k);
  report_buf_puts(b, "\xE2\x80\xA6");
}


static void md_subject(report_buf *b, const json_t *a) {
  const json_t *s = json_object_get(a, "subject");
  const char *cp = report_doc_str(s, "cp"), *layout = report_doc_str(s, "layout");
  const char *platform = report_doc_str(a, "platform");
  report_escape_fill(b, md_cell, "Audited: %s", cp ? cp : report_doc_str(s, "impl"));
  if (layout) report_escape_fill(b, md_cell, " (%s)", layout);
  report_escape_fill(b, md_cell, " on %s. %s\n\n", platform ? platform : "?", report_doc_str(a, "note"));
}

static void md_failure_row(report_buf *b, const char *where, const char *reason) {
  report_escape_fill(b, md_cell, "| %s | %s |\n", where, reason);
}

void report_audit_markdown(report_buf *b, const json_t *doc) {
  size_t n, nf;
  const json_t *a = report_audit_counted(doc, &n, &nf);
  if (!a) return;
  const int pass = report_audit_pass(a);
  report_buf_printf(b, "### %s Audit: **%s** (%zu of %zu checks failed)\n\n", pass ? "\xE2\x9C\x85" : "\xE2\x9D\x8C",
                    pass ? "PASS" : "FAIL", nf, n);
  md_subject(b, a);
  if (!nf) return;
  report_buf_puts(b, "| failing check | op and reason |\n|---|---|\n");
  report_audit_each_failure(b, a, MD_MAX_FAILS, md_failure_row);
  if (nf > MD_MAX_FAILS)
    report_buf_printf(b, "\n... and %zu more failing checks (see the report).\n", nf - MD_MAX_FAILS);
  report_buf_puts(b, "\n");
}

/* ---- JUnit ---- */

/* classname: "gdn-parity.audit." + the check with every character outside
 * [A-Za-z0-9_-] as '_' (viewers split classnames at dots). */
static void junit_classname(report_buf *b, const char *check) {
  report_buf_puts(b, " classname=\"gdn-parity.audit.");
  for (const char *c = check ? check : "unknown"; *c; c++) {
    int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
             *c == '-';
    report_buf_putc(b, ok ? *c : '_');
  }
  report_buf_puts(b, "\"");
}

void report_audit_junit(report_buf *b, const json_t *doc) {
  size_t n, nf;
  const json_t *a = report_audit_counted(doc, &n, &nf);
  if (!a) return;
  report_buf_printf(b, "  <testsuite name=\"gdn-parity.audit\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
                       "skipped=\"0\" time=\"0.000\">\n", n, nf);
  const json_t *checks = json_object_get(a, "checks");
  for (size_t i = 0; i < n; i++) {
    const json_t *k = json_array_get(checks, i);
    char where[200];
    report_audit_check_where(k, where, sizeof where);
    report_escape_fill(b, report_escape_xml_attr_z, "    <testcase name=\"%s\"", where);
    junit_classname(b, report_doc_str(k, "check"));
    report_buf_puts(b, " time=\"0.000\"");
    if (!report_audit_check_failed(k)) {
      report_buf_puts(b, "/>\n");
      continue;
    }
    report_escape_fill(b, report_escape_xml_attr_z, ">\n      <failure type=\"%s\" message=\"%s\">",
                       report_doc_str(k, "check"), report_doc_str(k, "reason"));
    report_escape_xml_text_z(b, report_doc_str(k, "reason"));
    report_buf_puts(b, "</failure>\n    </testcase>\n");
  }
  report_buf_puts(b, "  </testsuite>\n");
}

/* ---- console ---- */

/* The text is the terminal's: control characters would move its cursor. */
static void plain(report_buf *b, const char *s) {
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++)
    report_buf_putc(b, *c < 0x20 || *c == 0x7f ? '?' : (char)*c);
}

static void text_failure_line(report_buf *b, const char *where, const char *reason) {
  report_escape_fill(b, plain, "audit: FAIL %s: %s\n", where, reason);
}

void report_audit_text_lines(report_buf *b, const json_t *a) { report_audit_each_failure(b, a, 0, text_failure_line); }

static void verdict_first(report_buf *b, const char *where, const char *reason) {
  (void)reason; /* the verdict line stays one line: the reason is in the lines above */
  plain(b, where);
}

void report_audit_text_verdict(report_buf *b, const json_t *doc) {
  size_t n, nf;
  const json_t *a = report_audit_counted(doc, &n, &nf);
  if (!a) return;
  if (!nf) {
    report_buf_printf(b, "; audit PASS (%zu check%s)", n, n == 1 ? "" : "s");
    return;
  }
  report_buf_printf(b, "; audit FAIL (%zu of %zu checks, first ", nf, n);
  report_audit_each_failure(b, a, 1, verdict_first);
  report_buf_puts(b, ")");
}
