/* The audit in the HTML report: a line in the verdict header and a section
 * of tables (checks, affine minimum, work per token, memory at scale, every program's
 * collectives and memory), plots from report_audit_plots.c.  Tables only:
 * readable with scripts off. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"

static void esc(report_buf *b, const char *s) { report_escape_html_text_z(b, s ? s : "\xE2\x80\x94"); }

static void td_num(report_buf *b, const json_t *obj, const char *key) {
  report_buf_puts(b, "<td class=\"num\">");
  report_audit_html_num(b, json_object_get(obj, key));
  report_buf_puts(b, "</td>");
}

static void td_text(report_buf *b, const char *s, const char *cls) {
  report_buf_printf(b, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
  esc(b, s);
  report_buf_puts(b, "</td>");
}

/* The op a failing check names, as "all-gather f32[..] at op_name (source)". */
static void op_text(report_buf *b, const json_t *op) {
  report_escape_fill(b, esc, "<code>%s ", report_doc_str(op, "kind"));
  report_audit_html_shape(b, op);
  report_escape_fill(b, esc, "</code> <code class=\"op-name\">%s</code> at <code class=\"op-source\">%s</code>",
                     report_doc_str(op, "op_name"), report_doc_str(op, "source"));
}

static void headline_first(report_buf *b, const char *where, const char *reason) {
  report_escape_fill(b, esc, "; first <b>%s</b>: %s", where, reason);
}

void report_audit_html_headline(report_buf *b, const json_t *doc) {
  size_t n, nf;
  const json_t *a = report_audit_counted(doc, &n, &nf);
  if (!a) return;
  report_buf_printf(b, "<p id=\"audit-headline\"><b class=\"%s\">Audit %s</b>: %zu of %zu checks failed",
                    nf ? "tag-fail" : "tag-pass", nf ? "FAIL" : "PASS", nf, n);
  report_audit_each_failure(b, a, 1, headline_first);
  report_buf_puts(b, " (<a href=\"#audit\">the audit</a>).</p>\n");
}

/* Failing checks first, each naming its op. */
static void checks_table(report_buf *b, const json_t *a) {
  const json_t *checks = json_object_get(a, "checks");
  report_buf_puts(b, "<h3>Checks</h3>\n<div class=\"table-wrap\"><table id=\"audit-checks\" class=\"grid-table\">"
                     "<thead><tr><th>check</th><th>verdict</th><th>function</th><th>pass</th><th>D</th>"
                     "<th>reason</th><th>op</th></tr></thead><tbody>\n");
  for (int part = 0; part < 2; part++)
    for (size_t i = 0; i < json_array_size(checks); i++) {
      const json_t *k = json_array_get(checks, i);
      if (report_audit_check_failed(k) != (part == 0)) continue;
      report_buf_printf(b, "<tr class=\"%s\">", part ? "pass" : "fail");
      td_text(b, report_doc_str(k, "check"), NULL);
      report_buf_printf(b, "<td class=\"%s\">%s</td>", part ? "tag-pass" : "tag-fail", part ? "PASS" : "FAIL");
      td_text(b, report_doc_str(k, "function"), NULL);
      td_text(b, report_doc_str(k, "pass"), NULL);
      td_num(b, k, "devices");
      td_text(b, report_doc_str(k, "reason"), "reason-cell");
      report_buf_puts(b, "<td>");
      if (json_is_object(json_object_get(k, "op"))) op_text(b, json_object_get(k, "op"));
      report_buf_puts(b, "</td></tr>\n");
    }
  if (!json_array_size(checks)) report_buf_puts(b, "<tr><td colspan=\"7\">no checks</td></tr>\n");
  report_buf_puts(b, "</tbody></table></div>\n");
}

static void affine_table(report_buf *b, const json_t *a) {
  const json_t *rows = json_object_get(a, "affine_minimum");
  if (!json_array_size(rows)) return;
  report_buf_puts(b, "<h3>Exchanged bytes against the affine minimum</h3>\n<p>The minimum: one affine pair (A, B) "
                     "is B&middot;Hv&middot;(Dk&sup2; + Dk&middot;Dv)&middot;itemsize bytes, times the rounds of the "
                     "declared prefix; measured: every collective of the program, per device.</p>\n"
                     "<table id=\"audit-affine\" class=\"grid-table\"><thead><tr><th>pass</th><th>D</th><th>T</th>"
                     "<th>pair bytes</th><th>rounds</th><th>minimum bytes</th><th>measured bytes</th>"
                     "<th>measured / minimum</th></tr></thead><tbody>\n");
  static const char *const keys[] = {"devices", "T", "pair_bytes", "rounds", "minimum_bytes", "measured_bytes", "ratio"};
  for (size_t i = 0; i < json_array_size(rows); i++) {
    const json_t *r = json_array_get(rows, i);
    report_buf_puts(b, "<tr>");
    td_text(b, report_doc_str(r, "pass"), NULL);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) td_num(b, r, keys[k]);
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

static void heads_line(report_buf *b, const json_t *m) {
  const json_t *h = json_object_get(m, "heads");
  report_buf_puts(b, "<p id=\"audit-heads\">Backward temp bytes per device, fitted a + b&middot;T per device count, "
                     "at the heads of ");
  esc(b, report_doc_str(h, "name"));
  report_buf_printf(b, " (B %lld, Hk %lld, Hv %lld, Dk %lld, Dv %lld); resident bytes (argument + output + temp) "
                       "extrapolated, and the longest T whose resident bytes fit each accelerator.</p>\n",
                    report_doc_int(h, "B", 0), report_doc_int(h, "Hk", 0), report_doc_int(h, "Hv", 0),
                    report_doc_int(h, "Dk", 0), report_doc_int(h, "Dv", 0));
}

static void memory_header(report_buf *b, const json_t *tokens, const json_t *acc) {
  report_buf_puts(b, "<div class=\"table-wrap\"><table id=\"audit-memory\" class=\"grid-table\"><thead><tr>"
                     "<th>function</th><th>D</th><th>temp bytes per global token</th><th>per local token</th>"
                     "<th>ratio to stock</th><th>r&sup2;</th>");
  for (size_t i = 0; i < json_array_size(tokens); i++)
    report_buf_printf(b, "<th>resident bytes at T = %lld</th>", (long long)json_integer_value(json_array_get(tokens, i)));
  const char *name;
  const json_t *v;
  json_object_foreach((json_t *)acc, name, v) {
    report_escape_fill(b, esc, "<th>longest T on %s (", name);
    report_audit_html_num(b, v);
    report_buf_puts(b, " B)</th>");
  }
  report_buf_puts(b, "</tr></thead><tbody>\n");
}

static void memory_table(report_buf *b, const json_t *a) {
  const json_t *m = json_object_get(a, "memory_at_scale");
  if (json_is_null(m)) {
    report_buf_puts(b, "<h3>Memory at scale</h3>\n<p class=\"no-data\">Not measured: no backward program "
                       "was compiled (--passes forward).</p>\n");
    return;
  }
  if (!m) return;
  const json_t *tokens = json_object_get(m, "tokens"), *acc = json_object_get(m, "accelerators");
  const json_t *rows = json_object_get(m, "rows");
  report_buf_puts(b, "<h3>Memory at scale</h3>\n");
  heads_line(b, m);
  memory_header(b, tokens, acc);
  for (size_t i = 0; i < json_array_size(rows); i++) {
    const json_t *r = json_array_get(rows, i), *at = json_object_get(r, "at"), *lt = json_object_get(r, "longest_T");
    report_buf_puts(b, "<tr>");
    td_text(b, report_doc_str(r, "function"), NULL);
    td_num(b, r, "devices");
    td_num(b, r, "temp_bytes_per_token");
    td_num(b, r, "temp_bytes_per_local_token");
    td_num(b, r, "ratio_to_stock");
    td_num(b, r, "r2");
    for (size_t t = 0; t < json_array_size(tokens); t++) {
      char key[32];
      snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_array_get(tokens, t)));
      double v = NAN;
      report_doc_num(at, key, &v);
      report_buf_puts(b, "<td class=\"num\">");
      report_audit_html_num(b, json_object_get(at, key));
      if (isfinite(v)) report_buf_printf(b, "<br><small>%.3f GiB</small>", v / 1073741824.0);
      report_buf_puts(b, "</td>");
    }
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)acc, name, v) {
      (void)v;
      const json_t *x = json_object_get(lt, name);
      if (json_is_null(x)) report_buf_puts(b, "<td class=\"num over\">does not fit</td>");
      else td_num(b, lt, name);
    }
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table></div>\n");
}

void report_audit_html_section(report_buf *b, const json_t *doc) {
  size_t n, nf;
  const json_t *a = report_audit_counted(doc, &n, &nf);
  if (!a) return;
  const json_t *s = json_object_get(a, "subject");
  report_buf_puts(b, "<section id=\"audit\">\n<h2>Audit: what the context-parallel function moves, keeps and "
                     "computes per device</h2>\n");
  report_buf_printf(b, "<p id=\"audit-verdict\"><b class=\"%s\">Audit %s</b>: %zu of %zu checks failed. Stock ",
                    nf ? "tag-fail" : "tag-pass", nf ? "FAIL" : "PASS", nf, n);
  const char *note = report_doc_str(a, "note");
  report_escape_fill(b, esc,
                     "<code>%s</code>, context-parallel <code>%s</code> (layout %s, prefix %s), compiled on %s by %s, "
                     "JAX %s.</p>\n<p id=\"audit-note\" class=\"missed-note\">%s</p>\n",
                     report_doc_str(s, "impl"), report_doc_str(s, "cp"), report_doc_str(s, "layout"),
                     report_doc_str(s, "cp_prefix"), report_doc_str(a, "platform"), report_doc_str(a, "producer"),
                     report_doc_str(a, "jax_version"),
                     note ? note : "XLA-on-CPU buffer assignment is not a TPU's: the growth law carries over.");
  checks_table(b, a);
  affine_table(b, a);
  report_audit_work(b, a);
  memory_table(b, a);
  report_audit_plots(b, a);
  report_audit_programs(b, a);
  report_buf_puts(b, "</section>\n");
}
