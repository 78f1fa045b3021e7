/* A recurrence document as the writers walk it (report_recur.h): its
 * sections, rows, outputs and the deciding failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_doc.h"
#include "report_num.h"
#include "report_recur.h"

#define SCHEMA "gdn-parity-recurrence"

int report_recur_is(const json_t *doc) {
  if (json_is_array(doc) && json_array_size(doc)) doc = json_array_get(doc, 0);
  const char *s = report_doc_str(doc, "schema");
  return s && !strncmp(s, SCHEMA, strlen(SCHEMA)) &&
         (!s[strlen(SCHEMA)] || !strcmp(s + strlen(SCHEMA), "-check") || !strcmp(s + strlen(SCHEMA), "-sweep") ||
          !strcmp(s + strlen(SCHEMA), "-coverage"));
}

int report_recur_pass(const json_t *doc) {
  if (!json_is_array(doc)) return json_is_true(json_object_get(doc, "pass"));
  for (size_t i = 0; i < json_array_size(doc); i++)
    if (!json_is_true(json_object_get(json_array_get(doc, i), "pass"))) return 0;
  return json_array_size(doc) > 0;
}

const char *report_recur_kind(const json_t *doc) {
  if (json_is_array(doc)) return "check";
  const char *s = report_doc_str(doc, "schema");
  s = s ? s + strlen(SCHEMA) : "";
  if (!strcmp(s, "-check")) return "check";
  if (!strcmp(s, "-sweep")) return "grid sweep";
  if (!strcmp(s, "-coverage")) return "coverage";
  return json_object_get(doc, "grad") ? "forward and backward sweep" : "forward sweep";
}

const char *report_recur_gate_words(const char *g) {
  if (g && !strcmp(g, "head-token-channel")) return "g of shape (B, T, Hv, Dk): one gate per key channel";
  if (g && !strcmp(g, "head-token")) return "g of shape (B, T, Hv): one gate per head and token";
  return "an unknown gate shape";
}

const json_t *report_recur_first_section(const json_t *doc) {
  if (json_is_array(doc)) return json_array_get(doc, 0);
  if (!strcmp(report_recur_kind(doc), "coverage")) return NULL;
  if (!strcmp(report_recur_kind(doc), "grid sweep")) return json_array_get(json_object_get(doc, "entries"), 0);
  return doc;
}

static const char *const fwd_names[] = {"o", "ht"};
static const char *const bwd_names[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};

int report_recur_outputs(const report_recur_row *r, const char *names[REPORT_RECUR_MAX_OUTPUTS]) {
  const int n = r->backward ? 6 : 2;
  for (int i = 0; i < n; i++) names[i] = r->backward ? bwd_names[i] : fwd_names[i];
  return n;
}

int report_recur_output(const report_recur_row *r, const char *name, double *err, double *band) {
  const json_t *m = json_object_get(r->c, name);
  if (!json_is_object(m) || !report_num_get(json_object_get(m, "err"), err)) return 0;
  const json_t *owner = r->backward ? json_object_get(r->sec, "grad") : r->sec;
  if (!strcmp(name, "ht") && report_doc_num(r->c, "band_ht", band)) return 1;
  if (report_doc_num(r->c, "band", band)) return 1;
  if (!report_doc_num(owner, "band", band)) *band = NAN;
  return 1;
}

void report_recur_row_label(const report_recur_row *r, char *buf, size_t n) {
  char where[300] = "", cd[64] = "";
  if (r->sec_index >= 0 && report_doc_str(r->sec, "fixture"))
    snprintf(where, sizeof where, "%.280s: ", report_doc_str(r->sec, "fixture"));
  else if (r->sec_index >= 0)
    snprintf(where, sizeof where, "entry %lld: ", r->sec_index);
  const json_t *C = json_object_get(r->c, "chunk"), *D = json_object_get(r->c, "devices");
  if (json_is_integer(C) && json_is_integer(D))
    snprintf(cd, sizeof cd, " C=%lld D=%lld", (long long)json_integer_value(C), (long long)json_integer_value(D));
  else if (json_is_integer(C))
    snprintf(cd, sizeof cd, " C=%lld", (long long)json_integer_value(C));
  else if (json_is_integer(D))
    snprintf(cd, sizeof cd, " D=%lld", (long long)json_integer_value(D));
  const char *s = report_doc_str(r->c, "subject");
  snprintf(buf, n, "%s%.200s%s%s", where, s ? s : "?", cd, r->backward ? " backward" : "");
}

static void each_section(const json_t *sec, long long k, report_recur_row_fn fn, void *ctx) {
  for (int bw = 0; bw < 2; bw++) {
    const json_t *cases = json_object_get(bw ? json_object_get(sec, "grad") : sec, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
      report_recur_row r = {sec, json_array_get(cases, i), bw, k, i};
      fn(&r, ctx);
    }
  }
}

void report_recur_each(const json_t *doc, report_recur_row_fn fn, void *ctx) {
  const json_t *list = json_is_array(doc) ? doc : json_object_get(doc, "entries");
  if (json_is_array(doc) || (json_is_array(list) && !strcmp(report_recur_kind(doc), "grid sweep"))) {
    for (size_t i = 0; i < json_array_size(list); i++) each_section(json_array_get(list, i), (long long)i, fn, ctx);
    return;
  }
  if (strcmp(report_recur_kind(doc), "coverage")) each_section(doc, -1, fn, ctx);
}

/* err / band, inf for a zero or NaN band. */
static double ratio(double err, double band) { return band > 0 ? err / band : INFINITY; }

static void worst_of_row(const report_recur_row *r, void *ctx) {
  report_recur_worst *w = ctx;
  if (json_is_true(json_object_get(r->c, "pass"))) return;
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(r, names);
  for (int i = 0; i < n; i++) {
    double err, band;
    if (!report_recur_output(r, names[i], &err, &band) || err <= band) continue;
    if (w->output && !(ratio(err, band) > ratio(w->err, w->band))) continue;
    *w = (report_recur_worst){*r, names[i], err, band};
  }
}

int report_recur_find_worst(const json_t *doc, report_recur_worst *w) {
  memset(w, 0, sizeof *w);
  report_recur_each(doc, worst_of_row, w);
  return w->output != NULL;
}

void report_recur_worst_text(const report_recur_worst *w, char *buf, size_t n) {
  char label[600], es[REPORT_NUM_CHARS], bs[REPORT_NUM_CHARS], rs[REPORT_NUM_CHARS];
  report_recur_row_label(&w->row, label, sizeof label);
  report_num_format(es, w->err, 3);
  report_num_format(bs, w->band, 3);
  report_num_format(rs, ratio(w->err, w->band), 3);
  snprintf(buf, n, "%s: %s err %s > band %s (%sx the band)", label, w->output, es, bs, rs);
}

int report_recur_json_render(const json_t *doc, report_buf *b, gdn_error *e) {
  char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (!s) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (recurrence JSON)");
  report_buf_puts(b, s);
  free(s);
  return report_buf_status(b, "recurrence JSON", e);
}

void report_recur_shape_text(const json_t *sec, char *buf, size_t n) {
  const json_t *s = json_object_get(sec, "shape");
  snprintf(buf, n, "B=%lld T=%lld Hk=%lld Hv=%lld Dk=%lld Dv=%lld", report_doc_int(s, "B", 0),
           report_doc_int(s, "T", 0), report_doc_int(s, "Hk", 0), report_doc_int(s, "Hv", 0),
           report_doc_int(s, "Dk", 0), report_doc_int(s, "Dv", 0));
}

void report_recur_oracle_text(const json_t *sec, char *buf, size_t n) {
  const json_t *o = json_object_get(sec, "oracle"), *sp = json_object_get(o, "spot_check");
  const char *tier = report_doc_str(o, "tier");
  char extra[400] = "", rel[REPORT_NUM_CHARS];
  if (report_doc_int(o, "sampled_columns", -1) >= 0)
    snprintf(extra, sizeof extra, "; double-word tier, %lld sampled columns checked by MPFR, %lld bits normwise",
             report_doc_int(o, "sampled_columns", 0), report_doc_int(o, "normwise_bits", 0));
  else if (json_is_object(sp))
    snprintf(extra, sizeof extra, "; the fixture's stored /oracle, spot-checked on %lld columns (rel %s)",
             report_doc_int(sp, "columns", 0), report_doc_num_text(sp, "rel", 3, rel) ? rel : "?");
  else if (report_doc_str(o, "note"))
    snprintf(extra, sizeof extra, "; %.300s", report_doc_str(o, "note"));
  char check[64] = "";
  if (json_is_integer(json_object_get(o, "check_bits")))
    snprintf(check, sizeof check, ", checked at %lld", report_doc_int(o, "check_bits", 0));
  snprintf(buf, n, "%.16s at %lld bits%s, certified %lld bits%s", tier ? tier : "?",
           report_doc_int(o, "precision_bits", 0), check, report_doc_int(o, "certified_bits", 0), extra);
}

void report_recur_grad_oracle_text(const json_t *sec, char *buf, size_t n) {
  const json_t *o = json_object_get(json_object_get(sec, "grad"), "oracle"), *cert = json_object_get(o, "certified");
  buf[0] = 0;
  if (!json_is_object(o)) return;
  size_t at = (size_t)snprintf(buf, n, "VJP %.16s at %lld bits, certified %lld bits",
                               report_doc_str(o, "tier") ? report_doc_str(o, "tier") : "?",
                               report_doc_int(o, "precision_bits", 0), report_doc_int(o, "certified_bits", 0));
  static const char *const g[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  for (int i = 0; i < 6 && at < n && json_is_object(cert); i++)
    if (json_is_integer(json_object_get(cert, g[i])))
      at += (size_t)snprintf(buf + at, n - at, "%s%s %lld", i ? ", " : " (", g[i], report_doc_int(cert, g[i], 0));
  if (at < n && json_is_object(cert)) snprintf(buf + at, n - at, ")");
}

const char *report_recur_band_reason(const json_t *sec, int backward) {
  return report_doc_str(backward ? json_object_get(sec, "grad") : sec, "band_reason");
}

void report_recur_kappa_text(const json_t *c, char *buf, size_t n) {
  const json_t *k = json_object_get(c, "kappa_g");
  char v[REPORT_NUM_CHARS] = "?", m[REPORT_NUM_CHARS];
  buf[0] = 0;
  if (!json_is_object(k)) return;
  report_doc_num_text(k, "value", 3, v);
  if (report_doc_num_text(k, "median_channel", 3, m))
    snprintf(buf, n, "kappa_G %s on channel %lld (median channel %s)", v, report_doc_int(k, "worst_channel", 0), m);
  else
    snprintf(buf, n, "kappa_G %s on channel %lld", v, report_doc_int(k, "worst_channel", 0));
}

const char *report_recur_mutant(const json_t *doc) {
  const char *m = report_doc_str(doc, "mutant"),
             *vm = report_doc_str(json_object_get(doc, "grad"), "vjp_mutant");
  if (m && strcmp(m, "none")) return m;
  if (vm && strcmp(vm, "none")) return vm;
  return NULL;
}
