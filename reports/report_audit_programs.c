/* The audit's compiled programs in the HTML report: one <details> per
 * group (function, pass, D, heads), its memory and cost figures per T and
 * every collective at every T.  A group a failing check names is open and
 * the collectives of the failing op are marked. */
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_escape.h"

/* Groups shown; an audit of 1..8 devices at a few lengths has about 20. */
#define MAX_GROUPS 128

static void esc(report_buf *b, const char *s) { report_escape_html_text_z(b, s ? s : "\xE2\x80\x94"); }

static int same_str(const char *x, const char *y) { return (!x && !y) || (x && y && !strcmp(x, y)); }

static int same_group(const json_t *p, const json_t *q) {
  return same_str(report_doc_str(p, "function"), report_doc_str(q, "function")) &&
         same_str(report_doc_str(p, "pass"), report_doc_str(q, "pass")) &&
         report_doc_int(p, "devices", 0) == report_doc_int(q, "devices", 0) &&
         same_str(report_doc_str(p, "heads"), report_doc_str(q, "heads"));
}

/* The failing check about this group's (function, pass, D), or NULL. */
static const json_t *group_failure(const json_t *a, const json_t *p) {
  const json_t *checks = json_object_get(a, "checks");
  for (size_t i = 0; i < json_array_size(checks); i++) {
    const json_t *k = json_array_get(checks, i);
    const char *v = report_doc_str(k, "verdict");
    if (v && !strcmp(v, "PASS")) continue;
    if (same_str(report_doc_str(k, "function"), report_doc_str(p, "function")) &&
        same_str(report_doc_str(k, "pass"), report_doc_str(p, "pass")) &&
        report_doc_int(k, "devices", 0) == report_doc_int(p, "devices", 0))
      return k;
  }
  return NULL;
}

/* A collective of the op a check names (its group: kind, op_name, source). */
static int is_failing_op(const json_t *c, const json_t *check) {
  const json_t *op = json_object_get(check, "op");
  return op && same_str(report_doc_str(c, "kind"), report_doc_str(op, "kind")) &&
         same_str(report_doc_str(c, "op_name"), report_doc_str(op, "op_name")) &&
         same_str(report_doc_str(c, "source"), report_doc_str(op, "source"));
}

static void td_num(report_buf *b, const json_t *obj, const char *key) {
  report_buf_puts(b, "<td class=\"num\">");
  report_audit_html_num(b, json_object_get(obj, key));
  report_buf_puts(b, "</td>");
}

static void memory_rows(report_buf *b, const json_t *progs, const json_t *first) {
  static const char *const mem[] = {"argument_bytes", "output_bytes", "temp_bytes", "alias_bytes",
                                    "generated_code_bytes"};
  static const char *const cost[] = {"flops", "bytes_accessed", "transcendentals"};
  report_buf_puts(b, "<table class=\"grid-table audit-memory-figures\"><thead><tr><th>T</th><th>argument bytes</th>"
                     "<th>output bytes</th><th>temp bytes</th><th>alias bytes</th><th>generated code bytes</th>"
                     "<th>work flops</th><th>cost_analysis flops (a loop body once)</th><th>bytes accessed</th>"
                     "<th>transcendentals</th><th>collective bytes</th>"
                     "<th>compile s</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *p = json_array_get(progs, i);
    if (!same_group(p, first)) continue;
    report_buf_puts(b, "<tr>");
    td_num(b, p, "T");
    for (size_t k = 0; k < 5; k++) td_num(b, json_object_get(p, "memory"), mem[k]);
    td_num(b, json_object_get(p, "work"), "flops");
    for (size_t k = 0; k < 3; k++) td_num(b, json_object_get(p, "cost"), cost[k]);
    td_num(b, p, "collective_bytes");
    td_num(b, p, "compile_seconds");
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

static void collective_row(report_buf *b, const json_t *p, const json_t *c, const json_t *check) {
  report_buf_printf(b, "<tr%s>", check && is_failing_op(c, check) ? " class=\"fail\"" : "");
  td_num(b, p, "T");
  report_escape_fill(b, esc, "<td>%s</td><td><code>%s</code></td><td><code>", report_doc_str(c, "kind"),
                     report_doc_str(c, "name"));
  report_audit_html_shape(b, c);
  report_buf_puts(b, "</code></td>");
  td_num(b, c, "bytes");
  td_num(b, c, "executions");
  td_num(b, c, "bytes_total");
  report_escape_fill(b, esc,
                     "<td><code class=\"op-name\">%s</code></td><td><code class=\"op-source\">%s</code></td></tr>\n",
                     report_doc_str(c, "op_name"), report_doc_str(c, "source"));
}

static void collective_rows(report_buf *b, const json_t *progs, const json_t *first, const json_t *check) {
  report_buf_puts(b, "<div class=\"table-wrap\"><table class=\"grid-table audit-collectives\"><thead><tr><th>T</th>"
                     "<th>kind</th><th>name</th><th>dtype and shape</th><th>bytes</th><th>executions</th>"
                     "<th>bytes total</th><th>op_name</th><th>source</th></tr></thead><tbody>\n");
  size_t rows = 0;
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *p = json_array_get(progs, i), *cs = json_object_get(p, "collectives");
    if (!same_group(p, first)) continue;
    for (size_t k = 0; k < json_array_size(cs); k++, rows++) collective_row(b, p, json_array_get(cs, k), check);
  }
  if (!rows) report_buf_puts(b, "<tr><td colspan=\"9\">no collectives: nothing moves between devices</td></tr>\n");
  report_buf_puts(b, "</tbody></table></div>\n");
}

static void group(report_buf *b, const json_t *a, const json_t *first, size_t index) {
  const json_t *check = group_failure(a, first);
  report_buf_printf(b, "<details class=\"profile audit-program\" id=\"audit-program-%zu\"%s><summary>", index,
                    check ? " open" : "");
  esc(b, report_doc_str(first, "function"));
  report_buf_puts(b, " ");
  esc(b, report_doc_str(first, "pass"));
  report_buf_printf(b, ", D = %lld", report_doc_int(first, "devices", 0));
  if (report_doc_str(first, "heads")) {
    report_buf_puts(b, ", heads ");
    esc(b, report_doc_str(first, "heads"));
  }
  if (check) report_buf_puts(b, " <span class=\"tag-fail\">FAIL</span>");
  report_buf_puts(b, "</summary>\n");
  const json_t *progs = json_object_get(a, "programs");
  memory_rows(b, progs, first);
  collective_rows(b, progs, first, check);
  report_buf_puts(b, "</details>\n");
}

void report_audit_programs(report_buf *b, const json_t *a) {
  const json_t *progs = json_object_get(a, "programs");
  report_buf_puts(b, "<h3>Compiled programs</h3>\n<p>Per device, as <code>compiled.memory_analysis()</code> and "
                     "<code>cost_analysis()</code> report them (XLA:CPU counts a loop body once); work and collectives "
                     "from the compiled module, per execution times the known trip counts of the loops around "
                     "them.</p>\n");
  size_t shown = 0, dropped = 0;
  for (size_t i = 0; i < json_array_size(progs); i++) {
    const json_t *p = json_array_get(progs, i);
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = same_group(json_array_get(progs, j), p);
    if (seen) continue;
    if (shown == MAX_GROUPS) {
      dropped++;
      continue;
    }
    group(b, a, p, shown++);
  }
  if (dropped) report_buf_printf(b, "<p class=\"no-data\">... and %zu more program groups (see the JSON).</p>\n", dropped);
}
