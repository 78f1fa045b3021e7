/* JUnit XML of a recurrence document (report_recur.h).
 *
 * One <testsuite name="gdn-parity.recurrence.NAME"> with a <testcase> per
 * row in document order: name = the row's label (report_recur_row_label),
 * classname "gdn-parity.NAME.forward" or ".backward", time 0 (the documents
 * carry no timings).  A failing case gets <failure message="the worst
 * output over its band: err > band" type="band">, the body listing every
 * output with its err and band (and why the mode moved the band, where it
 * did).  Where the mode moved the band the suite carries <properties>
 * band_reason and grad_band_reason.  Coverage: one testcase per mutant, a
 * survivor failing.  Valid against tests/reports/junit.xsd; deterministic. */
#include <stdio.h>
#include <string.h>

#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"
#include "report_recur.h"

typedef struct junit_ctx {
  report_buf *b;
  const char *rec;
  size_t n, failures;
  int count_only;
} junit_ctx;

/* The failure message (the worst output of the row over its band) and the
 * body (every output). */
static int row_failure(const report_recur_row *r, char *msg, size_t nm, report_buf *body) {
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(r, names);
  double worst = -1;
  msg[0] = 0;
  for (int i = 0; i < n; i++) {
    double err, band;
    char es[REPORT_NUM_CHARS], bs[REPORT_NUM_CHARS];
    if (!report_recur_output(r, names[i], &err, &band)) {
      report_buf_printf(body, "%s: not stored (not judged)\n", names[i]);
      continue;
    }
    report_num_format(es, err, 3);
    report_num_format(bs, band, 3);
    const int over = !(err <= band);
    report_buf_printf(body, "%s: err %s %s band %s%s\n", names[i], es, over ? ">" : "<=", bs, over ? "  FAIL" : "");
    const double q = band > 0 ? err / band : 1e308;
    if (over && q > worst) {
      worst = q;
      snprintf(msg, nm, "%s err %s > band %s", names[i], es, bs);
    }
  }
  char k[200];
  report_recur_kappa_text(r->c, k, sizeof k);
  if (k[0]) report_buf_printf(body, "%s\n", k);
  const char *why = report_recur_band_reason(r->sec, r->backward);
  if (why) report_buf_printf(body, "band moved by the mode: %s\n", why);
  return !json_is_true(json_object_get(r->c, "pass"));
}

static void junit_row(const report_recur_row *r, void *ctx) {
  junit_ctx *x = ctx;
  report_buf body;
  report_buf_init(&body);
  char msg[256], label[700];
  const int fail = row_failure(r, msg, sizeof msg, &body);
  x->n++;
  x->failures += (size_t)fail;
  if (!x->count_only) {
    report_buf *b = x->b;
    report_recur_row_label(r, label, sizeof label);
    report_escape_fill(b, report_escape_xml_attr_z, "    <testcase classname=\"gdn-parity.%s.%s\" time=\"0\" name=\"%s\"",
                       x->rec, r->backward ? "backward" : "forward", label);
    if (!fail) {
      report_buf_puts(b, "/>\n");
    } else {
      report_escape_fill(b, report_escape_xml_attr_z, ">\n      <failure type=\"band\" message=\"%s\">",
                         msg[0] ? msg : "the case failed");
      report_escape_xml_text_z(b, body.data);
      report_buf_puts(b, "</failure>\n    </testcase>\n");
    }
  }
  report_buf_clear(&body);
}

static void coverage_cases(junit_ctx *x, const json_t *doc) {
  const json_t *ms = json_object_get(doc, "mutants");
  for (size_t i = 0; i < json_array_size(ms); i++) {
    const json_t *m = json_array_get(ms, i);
    const int killed = json_is_true(json_object_get(m, "killed"));
    x->n++;
    x->failures += (size_t)!killed;
    if (x->count_only) continue;
    report_escape_fill(x->b, report_escape_xml_attr_z,
                       "    <testcase classname=\"gdn-parity.%s.coverage\" time=\"0\" name=\"mutant %s\"", x->rec,
                       report_doc_str(m, "name"));
    if (killed) {
      report_buf_puts(x->b, "/>\n");
      continue;
    }
    report_escape_fill(x->b, report_escape_xml_attr_z,
                       ">\n      <failure type=\"survivor\" message=\"no entry of grid %s fails with mutant %s planted\"/>"
                       "\n    </testcase>\n",
                       report_doc_str(doc, "grid"), report_doc_str(m, "name"));
  }
}

/* The first section's band reasons (where the mode moved the band) as
 * the suite's properties "band_reason" and "grad_band_reason". */
static void properties(report_buf *b, const json_t *sec) {
  const char *f = sec ? report_recur_band_reason(sec, 0) : NULL, *g = sec ? report_recur_band_reason(sec, 1) : NULL;
  if (!f && !g) return;
  report_buf_puts(b, "    <properties>\n");
  if (f) report_escape_fill(b, report_escape_xml_attr_z, "      <property name=\"band_reason\" value=\"%s\"/>\n", f);
  if (g) report_escape_fill(b, report_escape_xml_attr_z, "      <property name=\"grad_band_reason\" value=\"%s\"/>\n", g);
  report_buf_puts(b, "    </properties>\n");
}

static void walk(junit_ctx *x, const json_t *doc) {
  if (!strcmp(report_recur_kind(doc), "coverage")) coverage_cases(x, doc);
  else report_recur_each(doc, junit_row, x);
}

int report_recur_junit_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_recur_validate(doc, NULL, e);
  if (rc) return rc;
  const json_t *sec = report_recur_first_section(doc);
  junit_ctx x = {b, report_doc_str(sec ? sec : doc, "recurrence"), 0, 0, 1};
  walk(&x, doc); /* the totals first: the attributes come before the cases */
  report_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gdn-parity\" tests=\"%zu\" "
                       "failures=\"%zu\" errors=\"0\" skipped=\"0\" time=\"0\">\n",
                    x.n, x.failures);
  report_escape_fill(b, report_escape_xml_attr_z, "  <testsuite name=\"gdn-parity.recurrence.%s\"", x.rec);
  report_buf_printf(b, " tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" time=\"0\">\n", x.n, x.failures);
  properties(b, sec);
  x.n = x.failures = 0;
  x.count_only = 0;
  walk(&x, doc);
  report_buf_puts(b, "  </testsuite>\n</testsuites>\n");
  return report_buf_status(b, "recurrence JUnit", e);
}
