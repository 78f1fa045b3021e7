/* The audit's work in the HTML report: work per token counted from the
 * compiled programs with their loops' trip counts, the overhead over the
 * stock function, where the work is (per source line), loops of unknown trip
 * count, and what a check could not judge.  A document without work figures
 * (an older audit) renders nothing here. */
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_escape.h"

#define MAX_SOURCES 8

static void esc(report_buf *b, const char *s) { report_escape_html_text_z(b, s ? s : "\xE2\x80\x94"); }

static void td_num(report_buf *b, const json_t *obj, const char *key) {
  report_buf_puts(b, "<td class=\"num\">");
  report_audit_html_num(b, json_object_get(obj, key));
  report_buf_puts(b, "</td>");
}

static void td_text(report_buf *b, const char *s) {
  report_buf_puts(b, "<td>");
  esc(b, s);
  report_buf_puts(b, "</td>");
}

static void work_rows(report_buf *b, const json_t *rows) {
  report_buf_puts(b, "<div class=\"table-wrap\"><table id=\"audit-work\" class=\"grid-table\"><thead><tr>"
                     "<th>function</th><th>pass</th><th>D</th><th>flops per token per device</th>"
                     "<th>per local token</th><th>overhead over stock</th><th>r&sup2;</th><th>lengths left out</th>"
                     "</tr></thead><tbody>\n");
  for (size_t i = 0; i < json_array_size(rows); i++) {
    const json_t *r = json_array_get(rows, i), *ex = json_object_get(r, "excluded_T");
    report_buf_puts(b, "<tr>");
    td_text(b, report_doc_str(r, "function"));
    td_text(b, report_doc_str(r, "pass"));
    td_num(b, r, "devices");
    td_num(b, r, "flops_per_token");
    td_num(b, r, "flops_per_local_token");
    td_num(b, r, "overhead");
    td_num(b, r, "r2");
    report_buf_puts(b, "<td class=\"num\">");
    for (size_t k = 0; k < json_array_size(ex); k++)
      report_buf_printf(b, "%s%lld", k ? ", " : "", (long long)json_integer_value(json_array_get(ex, k)));
    report_buf_puts(b, "</td></tr>\n");
  }
  report_buf_puts(b, "</tbody></table></div>\n");
}

/* The cp program at the largest T and D of a pass (NULL when none). */
static const json_t *largest_cp(const json_t *progs, const char *pass) {
  const json_t *best = NULL;
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *p = json_array_get(progs, i);
    const char *f = report_doc_str(p, "function"), *ps = report_doc_str(p, "pass"), *h = report_doc_str(p, "heads");
    if (!f || strcmp(f, "cp") || !ps || strcmp(ps, pass) || (h && strcmp(h, "audited")) ||
        !json_is_object(json_object_get(p, "work")))
      continue;
    if (!best || report_doc_int(p, "devices", 0) > report_doc_int(best, "devices", 0) ||
        (report_doc_int(p, "devices", 0) == report_doc_int(best, "devices", 0) &&
         report_doc_int(p, "T", 0) > report_doc_int(best, "T", 0)))
      best = p;
  }
  return best;
}

static void sources(report_buf *b, const json_t *progs) {
  static const char *const passes[] = {"forward", "backward"};
  for (size_t k = 0; k < 2; k++) {
    const json_t *p = largest_cp(progs, passes[k]);
    if (!p) continue;
    const json_t *w = json_object_get(p, "work"), *rows = json_object_get(w, "by_source");
    double total = 0;
    report_doc_num(w, "flops", &total);
    report_buf_printf(b, "<p>Where the work is: cp %s, D = %lld, T = %lld (", passes[k],
                      report_doc_int(p, "devices", 0), report_doc_int(p, "T", 0));
    report_audit_html_num(b, json_object_get(w, "flops"));
    report_buf_puts(b, " flops per device; <code>cost_analysis()</code> said ");
    report_audit_html_num(b, json_object_get(json_object_get(p, "cost"), "flops"));
    report_buf_printf(b, ").</p>\n<table class=\"grid-table audit-work-sources\" id=\"audit-work-sources-%s\">"
                         "<thead><tr><th>source line</th><th>flops</th><th>share</th></tr></thead><tbody>\n",
                      passes[k]);
    for (size_t i = 0; i < json_array_size(rows) && i < MAX_SOURCES; i++) {
      const json_t *r = json_array_get(rows, i);
      double f = 0;
      report_doc_num(r, "flops", &f);
      report_escape_fill(b, esc, "<tr><td><code class=\"op-source\">%s</code></td>", report_doc_str(r, "source"));
      td_num(b, r, "flops");
      report_buf_printf(b, "<td class=\"num\">%.1f%%</td></tr>\n", total > 0 ? 100.0 * f / total : 0.0);
    }
    report_buf_puts(b, "</tbody></table>\n");
  }
}

static void unknown_loops(report_buf *b, const json_t *progs) {
  size_t shown = 0;
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *p = json_array_get(progs, i), *lps = json_object_get(json_object_get(p, "work"), "unknown_loops");
    for (size_t k = 0; k < json_array_size(lps) && shown < MAX_SOURCES; k++, shown++) {
      const json_t *lp = json_array_get(lps, k);
      if (!shown)
        report_buf_puts(b, "<p class=\"fail\" id=\"audit-unknown-loops\">Loops whose trip count XLA cannot name "
                           "(never counted as one trip; the checks FAIL on them):</p>\n<ul>\n");
      report_escape_fill(b, esc, "<li><code>%s</code> in %s %s", report_doc_str(lp, "name"),
                         report_doc_str(p, "function"), report_doc_str(p, "pass"));
      report_buf_printf(b, " D = %lld T = %lld: ", report_doc_int(p, "devices", 0), report_doc_int(p, "T", 0));
      report_audit_html_num(b, json_object_get(lp, "flops_per_trip"));
      report_buf_puts(b, " flops and ");
      report_audit_html_num(b, json_object_get(lp, "collectives_per_trip"));
      report_escape_fill(b, esc, " collectives per trip (<code class=\"op-source\">%s</code>)</li>\n",
                         report_doc_str(lp, "source"));
    }
  }
  if (shown) report_buf_puts(b, "</ul>\n");
}

static void unjudged(report_buf *b, const json_t *a) {
  const json_t *u = json_object_get(a, "unjudged");
  if (!json_array_size(u)) return;
  report_buf_puts(b, "<p>Not judged (neither PASS nor FAIL):</p>\n<ul id=\"audit-unjudged\">\n");
  for (size_t i = 0; i < json_array_size(u); i++) {
    const json_t *n = json_array_get(u, i);
    char where[200];
    report_audit_check_where(n, where, sizeof where);
    report_escape_fill(b, esc, "<li><b>%s</b>: %s</li>\n", where, report_doc_str(n, "reason"));
  }
  report_buf_puts(b, "</ul>\n");
}

void report_audit_work(report_buf *b, const json_t *a) {
  const json_t *rows = json_object_get(a, "work");
  unjudged(b, a);
  if (!json_is_array(rows)) return;
  report_buf_puts(b, "<h3>Work per token</h3>\n<p>Flops per device counted from each compiled program's text: every "
                     "dot, convolution, elementwise and reduce instruction times the trip counts of the loops "
                     "around it (a conditional's largest branch); per local token = per token &times; D; the "
                     "overhead is the context-parallel function's work per local token over the stock "
                     "function's.</p>\n");
  const char *note = report_doc_str(a, "work_note");
  if (note) report_escape_fill(b, esc, "<p id=\"audit-work-note\" class=\"missed-note\">%s</p>\n", note);
  work_rows(b, rows);
  const json_t *progs = json_object_get(a, "programs");
  sources(b, progs);
  unknown_loops(b, progs);
}
