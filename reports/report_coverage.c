#include "report_coverage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_atomic.h"
#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"

#define SCHEMA "gdn-parity-coverage"

/* ---- validation: what every writer walks ---- */

static int need(int ok, const char *what, gdn_error *e) {
  return ok ? GDN_OK : gdn_error_set(e, GDN_ERR_INPUT, "coverage document: %s", what);
}

int report_coverage_validate(const json_t *doc, gdn_error *e) {
  int rc;
  const char *schema = report_doc_str(doc, "schema");
  if ((rc = need(json_is_object(doc), "not a JSON object", e)) ||
      (rc = need(schema && !strcmp(schema, SCHEMA), "\"schema\" is not \"" SCHEMA "\"", e)) ||
      (rc = need(report_doc_int(doc, "version", -1) == 1, "\"version\": only version 1 is known", e)) ||
      (rc = need(json_is_array(json_object_get(doc, "mutants")), "\"mutants\" is not an array", e)) ||
      (rc = need(json_is_array(json_object_get(doc, "cases")), "\"cases\" is not an array", e)) ||
      (rc = need(json_is_array(json_object_get(doc, "survivors")), "\"survivors\" is not an array", e)) ||
      (rc = need(json_is_object(json_object_get(doc, "cover")), "\"cover\" is not an object", e)))
    return rc;
  const size_t nm = json_array_size(json_object_get(doc, "mutants"));
  const json_t *cases = json_object_get(doc, "cases");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *k = json_object_get(json_array_get(cases, i), "kills");
    if (!json_is_array(k) || json_array_size(k) != nm)
      return gdn_error_set(e, GDN_ERR_INPUT, "coverage document: cases[%zu].kills: not an array of %zu kills", i, nm);
  }
  return GDN_OK;
}

/* ---- shared accessors ---- */

static const json_t *kill_at(const json_t *doc, size_t c, size_t m) {
  return json_array_get(json_object_get(json_array_get(json_object_get(doc, "cases"), c), "kills"), m);
}

static int killed(const json_t *k) { return json_is_true(json_object_get(k, "killed")); }

/* "o rel_fro 2.1e-3 (35x the limit)" */
static void kill_brief(char *buf, size_t n, const json_t *k) {
  double v = NAN, mg = NAN;
  report_doc_num(k, "value", &v);
  report_doc_num(k, "margin", &mg);
  char vs[REPORT_NUM_CHARS], ms[REPORT_NUM_CHARS];
  report_num_format(vs, v, 3);
  report_num_format(ms, mg, 3);
  snprintf(buf, n, "%.40s %.40s %s (%sx the limit)", report_doc_str(k, "tensor") ? report_doc_str(k, "tensor") : "?",
           report_doc_str(k, "metric") ? report_doc_str(k, "metric") : "?", vs, ms);
}

static const char *verdict(const json_t *doc) { return json_is_true(json_object_get(doc, "pass")) ? "PASS" : "FAIL"; }

static void cover_text(report_buf *b, const json_t *doc) {
  const json_t *cover = json_object_get(doc, "cover"), *pc = json_object_get(cover, "cases");
  report_buf_puts(b, "{");
  for (size_t i = 0; i < json_array_size(pc); i++)
    report_buf_printf(b, "%s%lld", i ? ", " : "", (long long)json_integer_value(json_array_get(pc, i)));
  report_buf_printf(b, "} kills %lld", (long long)report_doc_int(cover, "kills", 0));
  double s;
  if (report_doc_num(cover, "seconds", &s)) report_buf_printf(b, " in %.2f s (the sum of those cases' own times)", s);
}

static const char *explains(const json_t *s) {
  const json_t *x = json_object_get(s, "readme_explains");
  return json_is_null(x) || !x ? "unknown (no README read)" : json_is_true(x) ? "yes" : "no";
}

/* ---- JSON ---- */

int report_coverage_json_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_coverage_validate(doc, e);
  if (rc) return rc;
  char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  if (!s) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (coverage JSON)");
  report_buf_puts(b, s);
  report_buf_putc(b, '\n');
  free(s);
  return report_buf_status(b, "coverage JSON", e);
}

/* ---- HTML ---- */

static void html_matrix(report_buf *b, const json_t *doc) {
  const json_t *muts = json_object_get(doc, "mutants"), *cases = json_object_get(doc, "cases");
  report_buf_puts(b, "<h2>Kill matrix</h2>\n<table class=\"matrix\" id=\"kill-matrix\">\n<thead><tr><th>mutant</th>");
  for (size_t c = 0; c < json_array_size(cases); c++) report_buf_printf(b, "<th>case %zu</th>", c);
  report_buf_puts(b, "</tr></thead>\n<tbody>\n");
  for (size_t m = 0; m < json_array_size(muts); m++) {
    const json_t *mu = json_array_get(muts, m);
    report_escape_fill(b, report_escape_html_attr_z, "<tr><th title=\"%s\">", report_doc_str(mu, "doc"));
    report_escape_fill(b, report_escape_html_text_z, "%s</th>", report_doc_str(mu, "name"));
    for (size_t c = 0; c < json_array_size(cases); c++) {
      const json_t *k = kill_at(doc, c, m);
      if (!killed(k)) {
        report_buf_puts(b, "<td class=\"survive\">survives</td>");
        continue;
      }
      char brief[200];
      kill_brief(brief, sizeof brief, k);
      report_escape_fill(b, report_escape_html_attr_z, "<td class=\"kill\" title=\"%s in %s\">",
                         report_doc_str(k, "check"), report_doc_str(k, "case"));
      report_escape_fill(b, report_escape_html_text_z, "killed<br><small>%s</small></td>", brief);
    }
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

static void html_cases(report_buf *b, const json_t *doc) {
  const json_t *cases = json_object_get(doc, "cases");
  report_buf_puts(b, "<h2>Cases (grid entries)</h2>\n<table id=\"cases\"><thead><tr><th>case</th><th>what</th>"
                     "<th>correct kernels</th><th>seconds</th></tr></thead><tbody>\n");
  for (size_t c = 0; c < json_array_size(cases); c++) {
    const json_t *jc = json_array_get(cases, c);
    int ok = json_is_true(json_object_get(jc, "correct_pass"));
    double s;
    report_buf_printf(b, "<tr><td>%zu</td><td>", c);
    report_escape_html_text_z(b, report_doc_str(jc, "label"));
    report_buf_printf(b, "</td><td class=\"%s\">%s", ok ? "kill" : "survive", ok ? "pass" : "FAIL: ");
    if (!ok) report_escape_html_text_z(b, report_doc_str(jc, "correct_failure"));
    report_buf_puts(b, "</td><td>");
    if (report_doc_num(jc, "seconds", &s)) report_buf_printf(b, "%.2f", s);
    else report_buf_puts(b, "&mdash;");
    report_buf_puts(b, "</td></tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

static void html_summary(report_buf *b, const json_t *doc) {
  const json_t *surv = json_object_get(doc, "survivors");
  report_buf_puts(b, "<h2>Mutants no case kills</h2>\n<ul id=\"survivors\">\n");
  for (size_t i = 0; i < json_array_size(surv); i++) {
    const json_t *s = json_array_get(surv, i);
    report_buf_puts(b, "<li>");
    report_escape_html_text_z(b, report_doc_str(s, "name"));
    report_buf_printf(b, ": the README explains why it cannot be killed: %s</li>\n", explains(s));
  }
  if (!json_array_size(surv)) report_buf_puts(b, "<li>none</li>\n");
  const json_t *cover = json_object_get(doc, "cover");
  report_escape_fill(b, report_escape_html_text_z, "</ul>\n<h2>Smallest set of cases</h2>\n<p id=\"cover\">%s; %s: ",
                     report_doc_str(cover, "method"), report_doc_str(cover, "tie_break"));
  cover_text(b, doc);
  report_buf_puts(b, "</p>\n");
}

/* The catalogue rows run: name, what they need, what upstream code would
 * look like to contain them. */
static void html_mutants(report_buf *b, const json_t *doc) {
  const json_t *muts = json_object_get(doc, "mutants");
  report_buf_puts(b, "<h2>The mutants</h2>\n<table id=\"mutants\"><thead><tr><th>mutant</th><th>needs</th>"
                     "<th>what upstream code would look like to contain it</th></tr></thead><tbody>\n");
  for (size_t m = 0; m < json_array_size(muts); m++) {
    const json_t *mu = json_array_get(muts, m), *needs = json_object_get(mu, "needs");
    report_escape_fill(b, report_escape_html_text_z, "<tr><td>%s</td><td>", report_doc_str(mu, "name"));
    for (size_t i = 0; i < json_array_size(needs); i++) {
      if (i) report_buf_puts(b, ", ");
      report_escape_html_text_z(b, json_string_value(json_array_get(needs, i)));
    }
    report_escape_fill(b, report_escape_html_text_z, "</td><td>%s</td></tr>\n", report_doc_str(mu, "doc"));
  }
  report_buf_puts(b, "</tbody></table>\n");
}

int report_coverage_html_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_coverage_validate(doc, e);
  if (rc) return rc;
  report_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                     "<title>gdn-parity coverage</title>\n<style>body{font-family:sans-serif;margin:2em}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left}"
                     ".kill{background:#e3f4e3}.survive{background:#f8d7d7}small{color:#444}</style>\n"
                     "</head><body>\n<h1>gdn-parity coverage: ");
  report_buf_puts(b, verdict(doc));
  report_buf_puts(b, "</h1>\n<p id=\"verdict\">");
  report_buf_printf(b, "%lld of %zu mutants killed, %zu survive", report_doc_int(doc, "killed", 0),
                    json_array_size(json_object_get(doc, "mutants")), json_array_size(json_object_get(doc, "survivors")));
  if (!json_is_true(json_object_get(doc, "correct_pass")))
    report_buf_puts(b, "; the correct kernels fail a case, so the kill matrix means nothing");
  report_escape_fill(b, report_escape_html_text_z, ".</p>\n<p>grid <code>%s</code>, oracle %s",
                     report_doc_str(doc, "grid"), report_doc_str(doc, "oracle_tier"));
  if (report_doc_str(doc, "command"))
    report_escape_fill(b, report_escape_html_text_z, "; command <code>%s</code>", report_doc_str(doc, "command"));
  report_buf_puts(b, "</p>\n");
  html_matrix(b, doc);
  html_summary(b, doc);
  html_cases(b, doc);
  html_mutants(b, doc);
  report_buf_puts(b, "</body></html>\n");
  return report_buf_status(b, "coverage HTML", e);
}

/* ---- Markdown ---- */

int report_coverage_markdown_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_coverage_validate(doc, e);
  if (rc) return rc;
  const json_t *muts = json_object_get(doc, "mutants"), *cases = json_object_get(doc, "cases");
  report_buf_printf(b, "## gdn-parity coverage: %s\n\n%lld of %zu mutants killed, %zu survive%s.\n\n", verdict(doc),
                    report_doc_int(doc, "killed", 0), json_array_size(muts),
                    json_array_size(json_object_get(doc, "survivors")),
                    json_is_true(json_object_get(doc, "correct_pass"))
                        ? "" : "; the correct kernels fail a case, so the kill matrix means nothing");
  report_buf_puts(b, "| mutant |");
  for (size_t c = 0; c < json_array_size(cases); c++) report_buf_printf(b, " case %zu |", c);
  report_buf_puts(b, "\n|---|");
  for (size_t c = 0; c < json_array_size(cases); c++) report_buf_puts(b, "---|");
  report_buf_puts(b, "\n");
  for (size_t m = 0; m < json_array_size(muts); m++) {
    report_buf_puts(b, "| ");
    report_escape_markdown_cell_z(b, report_doc_str(json_array_get(muts, m), "name"));
    report_buf_puts(b, " |");
    for (size_t c = 0; c < json_array_size(cases); c++) {
      const json_t *k = kill_at(doc, c, m);
      char brief[200] = "survives";
      if (killed(k)) {
        char t[180];
        kill_brief(t, sizeof t, k);
        snprintf(brief, sizeof brief, "killed: %s", t);
      }
      report_buf_puts(b, " ");
      report_escape_markdown_cell_z(b, brief);
      report_buf_puts(b, " |");
    }
    report_buf_puts(b, "\n");
  }
  const json_t *surv = json_object_get(doc, "survivors");
  for (size_t i = 0; i < json_array_size(surv); i++) {
    report_buf_puts(b, i ? ", " : "\nSurvivors: ");
    report_escape_markdown_cell_z(b, report_doc_str(json_array_get(surv, i), "name"));
    report_buf_printf(b, " (README explains: %s)", explains(json_array_get(surv, i)));
  }
  report_buf_puts(b, "\n\nCover (greedy, not proven minimal; ties to the lower case index): ");
  cover_text(b, doc);
  report_buf_puts(b, "\n\n");
  for (size_t c = 0; c < json_array_size(cases); c++) {
    report_buf_printf(b, "- case %zu: ", c);
    report_escape_markdown_cell_z(b, report_doc_str(json_array_get(cases, c), "label"));
    report_buf_puts(b, "\n");
  }
  return report_buf_status(b, "coverage Markdown", e);
}

/* ---- JUnit ---- */

/* seconds: the case's own time; 0 where none was measured (a mutant's run,
 * or --reproducible). */
static void junit_case(report_buf *b, const char *cls, const char *name, double seconds, const char *failure) {
  report_buf_printf(b, "    <testcase classname=\"%s\" time=\"%.3f\" name=\"", cls, seconds);
  report_escape_xml_attr_z(b, name);
  if (!failure) {
    report_buf_puts(b, "\"/>\n");
    return;
  }
  report_buf_puts(b, "\">\n      <failure message=\"");
  report_escape_xml_attr_z(b, failure);
  report_buf_puts(b, "\">");
  report_escape_xml_text_z(b, failure);
  report_buf_puts(b, "</failure>\n    </testcase>\n");
}

static void junit_skipped(report_buf *b, const char *cls, const char *name, const char *why) {
  report_buf_printf(b, "    <testcase classname=\"%s\" time=\"0.000\" name=\"", cls);
  report_escape_xml_attr_z(b, name ? name : "?");
  report_buf_puts(b, "\">\n      <skipped message=\"");
  report_escape_xml_attr_z(b, why);
  report_buf_puts(b, "\"/>\n    </testcase>\n");
}

int report_coverage_junit_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_coverage_validate(doc, e);
  if (rc) return rc;
  const json_t *muts = json_object_get(doc, "mutants"), *cases = json_object_get(doc, "cases");
  const json_t *surv = json_object_get(doc, "survivors");
  /* A survivor the README explains as unkillable is skipped (with the
   * reason), one nobody explains fails. */
  size_t nskip = 0;
  for (size_t i = 0; i < json_array_size(surv); i++)
    nskip += json_is_true(json_object_get(json_array_get(surv, i), "readme_explains"));
  size_t nfail = json_array_size(surv) - nskip + json_array_size(json_object_get(doc, "readme_contradictions"));
  for (size_t c = 0; c < json_array_size(cases); c++)
    nfail += !json_is_true(json_object_get(json_array_get(cases, c), "correct_pass"));
  const size_t n = json_array_size(muts) + json_array_size(cases);
  double total = 0, s;
  for (size_t c = 0; c < json_array_size(cases); c++)
    if (report_doc_num(json_array_get(cases, c), "seconds", &s) && isfinite(s)) total += s;
  report_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gdn-parity coverage\" tests=\"%zu\" "
                       "failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n"
                       "  <testsuite name=\"gdn-parity.coverage\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
                       "skipped=\"%zu\" time=\"%.3f\">\n",
                    n, nfail, nskip, total, n, nfail, nskip, total);
  for (size_t c = 0; c < json_array_size(cases); c++) {
    const json_t *jc = json_array_get(cases, c);
    char name[64];
    snprintf(name, sizeof name, "correct kernels, case %zu", c);
    s = 0;
    if (!report_doc_num(jc, "seconds", &s) || !isfinite(s)) s = 0;
    junit_case(b, "gdn-parity.coverage.correct", name, s,
               json_is_true(json_object_get(jc, "correct_pass")) ? NULL : report_doc_str(jc, "correct_failure"));
  }
  for (size_t m = 0; m < json_array_size(muts); m++) {
    const char *name = report_doc_str(json_array_get(muts, m), "name");
    char why[256] = "";
    int skip = 0;
    for (size_t i = 0; i < json_array_size(surv); i++) {
      const json_t *sv = json_array_get(surv, i);
      const char *sn = report_doc_str(sv, "name");
      if (!name || !sn || strcmp(name, sn)) continue;
      skip = json_is_true(json_object_get(sv, "readme_explains"));
      snprintf(why, sizeof why, "no case kills mutant %s (the README explains why it cannot be killed: %s)", name,
               explains(sv));
    }
    const json_t *contra = json_object_get(doc, "readme_contradictions");
    for (size_t i = 0; i < json_array_size(contra); i++) {
      const json_t *c = json_array_get(contra, i);
      const char *cn = report_doc_str(c, "name");
      if (name && cn && !strcmp(name, cn))
        snprintf(why, sizeof why, "the README (line %lld) lists mutant %s as unkillable, but case %lld kills it",
                 (long long)report_doc_int(c, "readme_line", 0), name, (long long)report_doc_int(c, "case", 0));
    }
    if (skip) junit_skipped(b, "gdn-parity.coverage.mutant", name, why);
    else junit_case(b, "gdn-parity.coverage.mutant", name, 0, why[0] ? why : NULL);
  }
  report_buf_puts(b, "  </testsuite>\n</testsuites>\n");
  return report_buf_status(b, "coverage JUnit", e);
}

/* ---- all of them ---- */

typedef int (*render_fn)(const json_t *, report_buf *, gdn_error *);

static int write_one(const json_t *doc, const char *path, render_fn fn, gdn_error *e) {
  if (!path) return GDN_OK;
  report_buf b;
  report_buf_init(&b);
  int rc = fn(doc, &b, e);
  if (!rc) rc = gdn_atomic_write_all(path, b.data, b.len, e);
  report_buf_clear(&b);
  return rc;
}

int report_coverage_write_all(const json_t *doc, const char *json, const char *html, const char *junit,
                              const char *markdown, gdn_error *e) {
  gdn_atomic_set set;
  gdn_atomic_set_begin(&set);
  int rc = write_one(doc, json, report_coverage_json_render, e);
  if (!rc) rc = write_one(doc, html, report_coverage_html_render, e);
  if (!rc) rc = write_one(doc, junit, report_coverage_junit_render, e);
  if (!rc) rc = write_one(doc, markdown, report_coverage_markdown_render, e);
  if (rc) {
    gdn_atomic_set_abort(&set);
    return rc;
  }
  return gdn_atomic_set_commit(&set, e);
}
