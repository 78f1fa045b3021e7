/* The HTML report of a recurrence document (report_recur.h).
 *
 * One self-contained page, no script (a Content-Security-Policy forbids
 * fetching anything): the verdict, the deciding failure, the environment
 * (recurrence, gate shape, oracle and certificate), a table of cases per
 * section (forward, then backward), and for coverage the mutants.  Element
 * ids for tests and links: verdict, deciding, environment, cases-K (K the
 * section: 0 for a single document) and grad-cases-K, rows case-K-I and
 * grad-case-K-I, mutants; a cell over its band has class "fail". */
#include <stdio.h>
#include <string.h>

#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"
#include "report_recur.h"

#define CSS                                                                                                      \
  "body{font-family:sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse;margin:.5em 0 1.5em}"  \
  "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}td.num{text-align:right;white-space:nowrap;"                    \
  "font-variant-numeric:tabular-nums}.pass{background:#e3f4e3}.fail{background:#f8d7d7}"                        \
  "#verdict{font-size:1.3em;padding:.6em;border:2px solid #888}#verdict.fail{border-color:#b00}"               \
  "#verdict.pass{border-color:#070}code{background:#f4f4f4}"

#define H(...) report_escape_fill(b, report_escape_html_text_z, __VA_ARGS__)

static void env_row(report_buf *b, const char *k, const char *v) {
  if (v && v[0]) H("<tr><th>%s</th><td>%s</td></tr>\n", k, v);
}

/* The band row: float32's (per case under per-channel gates, else fixed),
 * unless the mode moved it: then the next row's words are the rule (each
 * case's band is in its row). */
static const char *band_text(const json_t *sec) {
  const char *gs = report_doc_str(sec, "gate_shape");
  if (report_recur_band_reason(sec, 0)) return "set by the mode per case (the next row says how)";
  if (gs && !strcmp(gs, "head-token-channel"))
    return "per case: u (8 kappa_G + 64), u = 2^-24, kappa_G the worst key channel's at the case's chunk and "
           "devices";
  return "float32's fixed 2^-12";
}

static void environment(report_buf *b, const json_t *doc) {
  const json_t *sec = report_recur_first_section(doc);
  char t[700];
  report_buf_puts(b, "<h2>Environment</h2>\n<table id=\"environment\">\n");
  env_row(b, "recurrence", report_doc_str(doc, "recurrence") ? report_doc_str(doc, "recurrence")
                                                             : report_doc_str(sec, "recurrence"));
  if (sec) {
    snprintf(t, sizeof t, "%s: %s", report_doc_str(sec, "gate_shape"),
             report_recur_gate_words(report_doc_str(sec, "gate_shape")));
    env_row(b, "gate shape", t);
  }
  env_row(b, "document", report_recur_kind(doc));
  env_row(b, "grid", report_doc_str(doc, "grid"));
  if (sec && !json_is_array(doc) && !json_is_array(json_object_get(doc, "entries"))) {
    report_recur_shape_text(sec, t, sizeof t);
    env_row(b, "shape", t);
    env_row(b, "fixture", report_doc_str(sec, "fixture"));
    env_row(b, "inputs sha256", report_doc_str(sec, "inputs_sha256"));
    if (json_is_integer(json_object_get(sec, "seed"))) {
      snprintf(t, sizeof t, "%lld%s", report_doc_int(sec, "seed", 0),
               json_is_true(json_object_get(sec, "h0")) ? ", with an initial state h0" : ", no h0");
      env_row(b, "seed", t);
    }
  }
  if (sec) {
    report_recur_oracle_text(sec, t, sizeof t);
    env_row(b, json_object_get(doc, "entries") ? "oracle (entry 0)" : json_is_array(doc) ? "oracle (first file)" : "oracle",
            t);
    report_recur_grad_oracle_text(sec, t, sizeof t);
    env_row(b, "backward oracle", t);
    env_row(b, "chunked backward", report_doc_str(json_object_get(sec, "grad"), "chunked_backward"));
  }
  if (sec) env_row(b, "band", band_text(sec));
  if (sec) {
    env_row(b, "band moved by the mode", report_recur_band_reason(sec, 0));
    env_row(b, "backward band moved by the mode", report_recur_band_reason(sec, 1));
  }
  report_buf_puts(b, "</table>\n");
}

static void num_cell(report_buf *b, double v, int fail) {
  char s[REPORT_NUM_CHARS];
  report_num_format(s, v, 3);
  report_buf_printf(b, "<td class=\"num%s\">%s</td>", fail ? " fail" : "", s);
}

typedef struct html_ctx {
  report_buf *b;
  long long sec;
  int backward; /* the table open: -1 none */
} html_ctx;

static void table_head(html_ctx *x, const report_recur_row *r) {
  report_buf *b = x->b;
  const long long k = r->sec_index < 0 ? 0 : r->sec_index;
  if (x->backward >= 0) report_buf_puts(b, "</tbody></table>\n");
  if (r->backward != x->backward || r->sec_index != x->sec) {
    char title[600], shape[200];
    report_recur_shape_text(r->sec, shape, sizeof shape);
    if (r->sec_index >= 0 && report_doc_str(r->sec, "fixture"))
      snprintf(title, sizeof title, "%.200s (%s)", report_doc_str(r->sec, "fixture"), shape);
    else if (r->sec_index >= 0)
      snprintf(title, sizeof title, "entry %lld (%s, seed %lld%s)", r->sec_index, shape,
               report_doc_int(r->sec, "seed", 0), json_is_true(json_object_get(r->sec, "h0")) ? ", h0" : "");
    else
      snprintf(title, sizeof title, "%s", shape);
    H("<h2>%s cases: %s</h2>\n", r->backward ? "Backward" : "Forward", title);
    char orc[700];
    if (r->backward) report_recur_grad_oracle_text(r->sec, orc, sizeof orc);
    else report_recur_oracle_text(r->sec, orc, sizeof orc);
    H("<p class=\"oracle\">oracle: %s</p>\n", orc);
  }
  report_buf_printf(b, "<table id=\"%scases-%lld\" class=\"cases\"><thead><tr><th>verdict</th><th>subject</th>"
                       "<th>chunk</th><th>devices</th>",
                    r->backward ? "grad-" : "", k);
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(r, names);
  for (int i = 0; i < n; i++) H("<th>%s err</th>", names[i]);
  report_buf_puts(b, "<th>band</th><th>kappa_G (worst channel)</th></tr></thead><tbody>\n");
  x->sec = r->sec_index;
  x->backward = r->backward;
}

static void html_row(const report_recur_row *r, void *ctx) {
  html_ctx *x = ctx;
  report_buf *b = x->b;
  if (r->backward != x->backward || r->sec_index != x->sec) table_head(x, r);
  const int pass = json_is_true(json_object_get(r->c, "pass"));
  report_buf_printf(b, "<tr id=\"%scase-%lld-%zu\"><td class=\"%s\">%s</td>", r->backward ? "grad-" : "",
                    r->sec_index < 0 ? 0 : r->sec_index, r->index, pass ? "pass" : "fail", pass ? "PASS" : "FAIL");
  H("<td>%s</td>", report_doc_str(r->c, "subject"));
  const json_t *C = json_object_get(r->c, "chunk"), *D = json_object_get(r->c, "devices");
  for (int i = 0; i < 2; i++) {
    const json_t *v = i ? D : C;
    if (json_is_integer(v)) report_buf_printf(b, "<td class=\"num\">%lld</td>", (long long)json_integer_value(v));
    else report_buf_puts(b, "<td>&mdash;</td>");
  }
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(r, names);
  double band = 0, err, bd;
  int have_band = 0;
  for (int i = 0; i < n; i++) {
    if (!report_recur_output(r, names[i], &err, &bd)) {
      report_buf_puts(b, "<td>not stored</td>");
      continue;
    }
    if (!have_band || !strcmp(names[i], "o")) band = bd, have_band = 1;
    num_cell(b, err, !(err <= bd));
  }
  if (have_band) num_cell(b, band, 0);
  else report_buf_puts(b, "<td>&mdash;</td>");
  char k[200];
  report_recur_kappa_text(r->c, k, sizeof k);
  H("<td>%s</td></tr>\n", k[0] ? k + strlen("kappa_G ") : "\xE2\x80\x94 (no cumulative decay)");
}

static void mutants(report_buf *b, const json_t *doc) {
  const json_t *ms = json_object_get(doc, "mutants");
  report_buf_puts(b, "<h2>Mutants</h2>\n<table id=\"mutants\"><thead><tr><th>mutant</th><th>verdict</th>"
                     "<th>failing entries</th><th>largest case error over the grid</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < json_array_size(ms); i++) {
    const json_t *m = json_array_get(ms, i), *kb = json_object_get(m, "killed_by");
    const int k = json_is_true(json_object_get(m, "killed"));
    H("<tr><td>%s</td>", report_doc_str(m, "name"));
    report_buf_printf(b, "<td class=\"%s\">%s</td><td>", k ? "pass" : "fail", k ? "killed" : "SURVIVED");
    for (size_t j = 0; j < json_array_size(kb); j++)
      report_buf_printf(b, "%s%lld", j ? ", " : "", (long long)json_integer_value(json_array_get(kb, j)));
    double v = 0;
    report_doc_num(m, "max_err", &v);
    report_buf_puts(b, "</td>");
    num_cell(b, v, 0);
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

/* The verdict box: the word, the counts, a planted mutant, the deciding failure. */
static void verdict(report_buf *b, const json_t *doc) {
  const int pass = report_recur_pass(doc);
  const json_t *sec = report_recur_first_section(doc);
  const char *rec = report_doc_str(sec ? sec : doc, "recurrence");
  report_buf_printf(b, "<div id=\"verdict\" class=\"%s\"><strong>%s</strong>: ", pass ? "pass" : "fail",
                    pass ? "PASS" : "FAIL");
  if (!strcmp(report_recur_kind(doc), "coverage")) {
    report_buf_printf(b, "%lld of %zu mutants killed", report_doc_int(doc, "n_killed", 0),
                      json_array_size(json_object_get(doc, "mutants")));
    H(" by grid %s", report_doc_str(doc, "grid"));
  } else {
    long long n = 0, f = 0;
    for (size_t i = 0; i < (json_is_array(doc) ? json_array_size(doc) : 1); i++) {
      const json_t *d = json_is_array(doc) ? json_array_get(doc, i) : doc;
      const json_t *ents = json_object_get(d, "entries");
      for (size_t j = 0; j < (json_is_array(ents) ? json_array_size(ents) : 1); j++) {
        const json_t *s = json_is_array(ents) ? json_array_get(ents, j) : d;
        n += report_doc_int(s, "n_cases", 0);
        f += report_doc_int(s, "n_failed", 0);
      }
    }
    report_buf_printf(b, "%lld of %lld cases within their band", n - f, n);
  }
  if (sec) H(" (recurrence %s, gate %s)", rec, report_doc_str(sec, "gate_shape"));
  else H(" (recurrence %s)", rec);
  if (report_recur_mutant(doc))
    H("<br>PLANTED MUTANT %s: %s", report_recur_mutant(doc), REPORT_RECUR_MUTANT_NOTE);
  report_buf_puts(b, "</div>\n");
  report_recur_worst w;
  if (report_recur_find_worst(doc, &w)) {
    char t[1024];
    report_recur_worst_text(&w, t, sizeof t);
    H("<p id=\"deciding\" class=\"fail\">Failing: <strong>%s</strong>", t);
    const json_t *at = json_object_get(json_object_get(w.row.c, w.output), "worst");
    const char *k;
    const json_t *v;
    int first = 1;
    json_object_foreach((json_t *)at, k, v) {
      H(first ? "; largest error at %s=" : ", %s=", k);
      report_buf_printf(b, "%lld", (long long)json_integer_value(v));
      first = 0;
    }
    report_buf_puts(b, "</p>\n");
  }
}

int report_recur_html_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_recur_validate(doc, NULL, e);
  if (rc) return rc;
  const int pass = report_recur_pass(doc);
  const json_t *sec = report_recur_first_section(doc);
  const char *rec = report_doc_str(sec ? sec : doc, "recurrence");
  report_buf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\" data-verdict=\"%s\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                       "style-src 'unsafe-inline'\">\n<title>%s \xE2\x80\x94 ",
                    pass ? "pass" : "fail", pass ? "PASS" : "FAIL");
  H("gdn-parity --recurrence %s %s</title>\n<style>%s</style>\n</head>\n<body>\n", rec, report_recur_kind(doc), CSS);
  H("<h1>gdn-parity parity report: recurrence %s (%s)</h1>\n", rec, report_recur_kind(doc));
  verdict(b, doc);
  environment(b, doc);
  html_ctx x = {b, -2, -1};
  report_recur_each(doc, html_row, &x);
  if (x.backward >= 0) report_buf_puts(b, "</tbody></table>\n");
  if (!strcmp(report_recur_kind(doc), "coverage")) mutants(b, doc);
  report_buf_puts(b, "</body>\n</html>\n");
  return report_buf_status(b, "recurrence HTML", e);
}
