/* The Markdown summary of a recurrence document (report_recur.h): the
 * verdict, the deciding failure, the recurrence, its gate and the oracle's
 * certificate, a link to the HTML report, then one table row per case
 * (failing cases first), cut before REPORT_MARKDOWN_MAX_BYTES as the GDN
 * summary is (report_markdown.h); coverage: a row per mutant. */
#include <stdio.h>
#include <string.h>

#include "report_doc.h"
#include "report_escape.h"
#include "report_markdown.h"
#include "report_num.h"
#include "report_recur.h"

#define M(...) report_escape_fill(b, report_escape_markdown_cell_z, __VA_ARGS__)

typedef struct md_ctx {
  report_buf *b;
  int want_fail; /* the pass: failing rows (1), then the rest (0) */
  size_t cut;    /* rows left out for size */
} md_ctx;

static void md_row(const report_recur_row *r, void *ctx) {
  md_ctx *x = ctx;
  report_buf *b = x->b;
  const int fail = !json_is_true(json_object_get(r->c, "pass"));
  if (fail != x->want_fail) return;
  if (b->len > REPORT_MARKDOWN_MAX_BYTES - 4096) {
    x->cut++;
    return;
  }
  char label[700], errs[400] = "", k[200], band[REPORT_NUM_CHARS] = "-";
  report_recur_row_label(r, label, sizeof label);
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(r, names);
  size_t at = 0;
  for (int i = 0; i < n && at < sizeof errs; i++) {
    double err, bd;
    char es[REPORT_NUM_CHARS];
    if (!report_recur_output(r, names[i], &err, &bd)) {
      at += (size_t)snprintf(errs + at, sizeof errs - at, "%s%s not stored", i ? ", " : "", names[i]);
      continue;
    }
    report_num_format(es, err, 3);
    if (band[0] == '-' || !strcmp(names[i], "o")) report_num_format(band, bd, 3);
    at += (size_t)snprintf(errs + at, sizeof errs - at, "%s%s %s%s", i ? ", " : "", names[i], es,
                           err <= bd ? "" : " (over)");
  }
  report_recur_kappa_text(r->c, k, sizeof k);
  M("| %s | %s | %s | %s | %s |\n", fail ? "FAIL" : "pass", label, errs, band, k[0] ? k + strlen("kappa_G ") : "-");
}

static void md_mutants(report_buf *b, const json_t *doc) {
  const json_t *ms = json_object_get(doc, "mutants");
  report_buf_puts(b, "| mutant | verdict | failing entries | largest error |\n|---|---|---|---|\n");
  for (size_t i = 0; i < json_array_size(ms); i++) {
    const json_t *m = json_array_get(ms, i), *kb = json_object_get(m, "killed_by");
    char list[256] = "", v[REPORT_NUM_CHARS] = "?";
    size_t at = 0;
    for (size_t j = 0; j < json_array_size(kb) && at < sizeof list; j++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%lld", j ? ", " : "",
                             (long long)json_integer_value(json_array_get(kb, j)));
    report_doc_num_text(m, "max_err", 3, v);
    M("| %s | %s | %s | %s |\n", report_doc_str(m, "name"),
      json_is_true(json_object_get(m, "killed")) ? "killed" : "SURVIVED", list[0] ? list : "-", v);
  }
}

static void md_head(report_buf *b, const json_t *doc, const char *html_relpath) {
  const json_t *sec = report_recur_first_section(doc);
  const char *rec = report_doc_str(sec ? sec : doc, "recurrence");
  const int pass = report_recur_pass(doc);
  M("## gdn-parity --recurrence %s (%s): %s\n\n", rec, report_recur_kind(doc), pass ? "PASS" : "FAIL");
  if (report_recur_mutant(doc))
    M("**PLANTED MUTANT %s**: %s.\n\n", report_recur_mutant(doc), REPORT_RECUR_MUTANT_NOTE);
  report_recur_worst w;
  if (report_recur_find_worst(doc, &w)) {
    char t[1024];
    report_recur_worst_text(&w, t, sizeof t);
    M("**Failing**: %s.\n\n", t);
  }
  char s[700];
  if (sec) {
    M("- recurrence: %s, gate %s (%s)\n", rec, report_doc_str(sec, "gate_shape"),
      report_recur_gate_words(report_doc_str(sec, "gate_shape")));
    report_recur_oracle_text(sec, s, sizeof s);
    M("- oracle%s: %s\n", json_object_get(doc, "entries") ? " (entry 0)" : json_is_array(doc) ? " (first file)" : "",
      s);
    report_recur_grad_oracle_text(sec, s, sizeof s);
    if (s[0]) M("- backward: %s\n", s);
    for (int bw = 0; bw < 2; bw++)
      if (report_recur_band_reason(sec, bw))
        M("- %sband moved by the mode: %s\n", bw ? "backward " : "", report_recur_band_reason(sec, bw));
  }
  if (!sec) M("- recurrence: %s\n", rec);
  if (report_doc_str(doc, "grid")) M("- grid: %s\n", report_doc_str(doc, "grid"));
  if (sec && !json_is_array(doc) && !json_is_array(json_object_get(doc, "entries"))) {
    report_recur_shape_text(sec, s, sizeof s);
    M("- shape: %s%s%s\n", s, report_doc_str(sec, "fixture") ? ", fixture " : "", report_doc_str(sec, "fixture"));
  }
  if (html_relpath) {
    report_buf_puts(b, "- [the HTML report](");
    report_escape_url_path(b, html_relpath, strlen(html_relpath));
    report_buf_puts(b, ")\n");
  }
  report_buf_puts(b, "\n");
}

int report_recur_markdown_render(const json_t *doc, const char *html_relpath, report_buf *b, gdn_error *e) {
  int rc = report_recur_validate(doc, NULL, e);
  if (rc) return rc;
  md_head(b, doc, html_relpath);
  if (!strcmp(report_recur_kind(doc), "coverage")) {
    md_mutants(b, doc);
  } else {
    report_buf_puts(b, "| verdict | case | errors | band | kappa_G (worst channel) |\n|---|---|---|---|---|\n");
    md_ctx x = {b, 1, 0};
    report_recur_each(doc, md_row, &x);
    x.want_fail = 0;
    report_recur_each(doc, md_row, &x);
    if (x.cut) report_buf_printf(b, "\n... and %zu more cases (see the report).\n", x.cut);
  }
  return report_buf_status(b, "recurrence Markdown", e);
}
