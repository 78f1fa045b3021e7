#include "report_summary.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "report_doc.h"
#include "report_num.h"

void report_summary_init(report_summary *s) {
  memset(s, 0, sizeof *s);
  s->worst = SIZE_MAX;
}

void report_summary_clear(report_summary *s) {
  gdn_free(s->externals);
  gdn_free(s->cases);
  gdn_free(s->order);
  report_summary_init(s);
}

double report_summary_margin(double value, double limit) {
  if (isnan(value) || isinf(value)) return INFINITY;
  value = fabs(value);
  if (isnan(limit)) return INFINITY;
  if (isinf(limit)) return 0;
  limit = fabs(limit);
  if (limit == 0) return value == 0 ? 0 : INFINITY;
  return value / limit;
}

/* Worse first: failing before passing, then larger margin, then earlier.
 * Sorting pointers keeps the comparator free of global state. */
static int worse_first(const void *a, const void *b) {
  const report_case_view *x = *(const report_case_view *const *)a;
  const report_case_view *y = *(const report_case_view *const *)b;
  if (x->pass != y->pass) return x->pass ? 1 : -1;
  if (!x->pass && x->margin != y->margin) return x->margin > y->margin ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static report_upstream_stat *upstream_slot(report_summary *s, const char *name) {
  for (size_t i = 0; i < s->n_upstream; i++)
    if (!strcmp(s->upstream[i].name, name)) return &s->upstream[i];
  if (s->n_upstream == REPORT_SUMMARY_MAX_UPSTREAM) return NULL;
  report_upstream_stat *u = &s->upstream[s->n_upstream++];
  memset(u, 0, sizeof *u);
  u->name = name;
  return u;
}

const json_t *report_summary_subject_deciding(const json_t *c, const char *name) {
  const json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks");
  const json_t *best = NULL;
  double worst = -INFINITY;
  for (size_t i = 0; i < json_array_size(checks); i++) {
    const json_t *k = json_array_get(checks, i);
    const char *subj = report_doc_str(k, "subject");
    if (!subj || strcmp(subj, name)) continue;
    if (!json_is_true(json_object_get(k, "pass"))) return k;
    double v = NAN, l = NAN;
    report_doc_num(k, "value", &v);
    report_doc_num(k, "limit", &l);
    double m = report_summary_margin(v, l);
    if (!best || m > worst) best = k, worst = m;
  }
  return best;
}

/* The slot of external output `name`, appended when new (grows by
 * doubling; *cap tracks the allocation). */
static report_external_stat *external_slot(report_summary *s, const char *name, size_t *cap, gdn_error *e) {
  for (size_t i = 0; i < s->n_externals; i++)
    if (!strcmp(s->externals[i].name, name)) return &s->externals[i];
  if (s->n_externals == *cap) {
    size_t nc = *cap ? 2 * *cap : 4;
    report_external_stat *nv = gdn_calloc(nc, sizeof *nv, "the external outputs", e);
    if (!nv) return NULL;
    if (s->n_externals) memcpy(nv, s->externals, s->n_externals * sizeof *nv);
    gdn_free(s->externals);
    s->externals = nv;
    *cap = nc;
  }
  report_external_stat *x = &s->externals[s->n_externals++];
  memset(x, 0, sizeof *x);
  x->name = name;
  x->value = x->limit = NAN;
  x->margin = -INFINITY;
  return x;
}

/* Folds case i into the stats of every external output it lists. */
static int externals_add(report_summary *s, size_t i, size_t *cap, gdn_error *e) {
  const json_t *c = s->cases[i].c, *impls = json_object_get(c, "impls"), *v;
  const char *name;
  json_object_foreach((json_t *)impls, name, v) {
    const json_t *jp = json_object_get(v, "pass");
    if (!json_is_boolean(jp)) continue;
    report_external_stat *x = external_slot(s, name, cap, e);
    if (!x) return GDN_ERR_NOMEM;
    const json_t *k = report_summary_subject_deciding(c, name);
    double val = NAN, lim = NAN;
    if (k) report_doc_num(k, "value", &val), report_doc_num(k, "limit", &lim);
    double m = k ? report_summary_margin(val, lim) : -INFINITY;
    int pass = json_is_true(jp), worse = !x->cases || (!pass && x->fail == 0) ||
                                         (pass == (x->fail == 0) && m > x->margin);
    x->cases++;
    x->fail += !pass;
    if (worse) x->worst = i, x->deciding = k, x->value = val, x->limit = lim, x->margin = m;
  }
  return GDN_OK;
}

int report_summary_build(const json_t *doc, report_summary *s, gdn_error *e) {
  report_summary_clear(s);
  s->doc = doc;
  s->pass = json_is_true(json_object_get(doc, "pass"));
  const json_t *cases = json_object_get(doc, "cases");
  s->n = json_array_size(cases);
  if (s->n) {
    s->cases = gdn_calloc(s->n, sizeof *s->cases, "the case summary", e);
    s->order = gdn_calloc(s->n, sizeof *s->order, "the case order", e);
    if (!s->cases || !s->order) {
      report_summary_clear(s);
      return GDN_ERR_NOMEM;
    }
  }
  for (size_t i = 0; i < s->n; i++) {
    report_case_view *v = &s->cases[i];
    v->c = json_array_get(cases, i);
    v->index = i;
    v->pass = json_is_true(json_object_get(v->c, "pass"));
    v->error = report_doc_str(v->c, "error");
    v->deciding = report_doc_deciding(v->c);
    v->value = v->limit = NAN;
    v->margin = -INFINITY;
    if (v->deciding) {
      report_doc_num(v->deciding, "value", &v->value);
      report_doc_num(v->deciding, "limit", &v->limit);
      v->margin = report_summary_margin(v->value, v->limit);
    }
    if (!v->pass) s->n_fail++;
    if (v->error) s->n_error++;
    const json_t *up = json_object_get(v->c, "upstream");
    int any_up_pass = 0;
    for (size_t k = 0; k < json_array_size(up); k++) {
      const json_t *u = json_array_get(up, k);
      int up_pass = json_is_true(json_object_get(u, "pass"));
      v->upstream_n++;
      v->upstream_pass += up_pass;
      any_up_pass |= up_pass;
      report_upstream_stat *st = upstream_slot(s, report_doc_str(u, "name"));
      if (!st) {
        s->upstream_dropped++;
        continue;
      }
      st->cases++;
      st->pass += up_pass;
      if (up_pass && !v->pass) st->missed++;
      if (!up_pass && v->pass) st->stricter++;
    }
    if (!v->pass && any_up_pass) s->n_missed++;
  }
  size_t ext_cap = 0;
  for (size_t i = 0; i < s->n; i++)
    if (externals_add(s, i, &ext_cap, e)) {
      report_summary_clear(s);
      return GDN_ERR_NOMEM;
    }
  /* qsort is not stable, but the comparator ends on the index, so the order
   * is total and the output deterministic. */
  if (s->n) {
    const report_case_view **ptr = gdn_calloc(s->n, sizeof *ptr, "the case order", e);
    if (!ptr) {
      report_summary_clear(s);
      return GDN_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->n; i++) ptr[i] = &s->cases[i];
    qsort(ptr, s->n, sizeof *ptr, worse_first);
    for (size_t i = 0; i < s->n; i++) s->order[i] = ptr[i]->index;
    gdn_free(ptr);
  }
  /* Worst: the first failing case in display order; with none failing, the
   * largest margin overall (earliest on ties). */
  if (s->n) {
    if (s->n_fail) s->worst = s->order[0];
    else {
      s->worst = 0;
      for (size_t i = 1; i < s->n; i++)
        if (s->cases[i].margin > s->cases[s->worst].margin) s->worst = i;
    }
  }
  return GDN_OK;
}

int report_summary_load(const json_t *doc, report_summary *s, gdn_error *e) {
  int rc = report_doc_validate(doc, "results document", e);
  if (rc) return rc;
  report_summary_init(s);
  return report_summary_build(doc, s, e);
}
