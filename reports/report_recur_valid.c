/* Validation of a recurrence document (report_recur.h): the types the
 * writers rely on, and the verdicts' agreement with the numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report_doc.h"
#include "report_num.h"
#include "report_recur.h"

/* Where in the document: source and a field path such as "entries[1].cases[3]". */
typedef struct vctx {
  const char *src;
  gdn_error *e;
} vctx;

static int bad(const vctx *v, const char *at, const char *field, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return gdn_error_set(v->e, GDN_ERR_INPUT, "%s: %s%s%s: %s", v->src, at, at[0] && field[0] ? "." : "", field, what);
}

/* A field path into dst (vsnprintf: a path cut at n is still a message). */
static void path(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, n, fmt, ap);
  va_end(ap);
}

static int need_str(const vctx *v, const json_t *o, const char *at, const char *k) {
  return json_is_string(json_object_get(o, k)) ? GDN_OK : bad(v, at, k, "missing or not a string");
}
static int need_int(const vctx *v, const json_t *o, const char *at, const char *k) {
  return json_is_integer(json_object_get(o, k)) ? GDN_OK : bad(v, at, k, "missing or not an integer");
}
static int need_num(const vctx *v, const json_t *o, const char *at, const char *k) {
  double x;
  return report_num_get(json_object_get(o, k), &x) ? GDN_OK : bad(v, at, k, "missing or not a number");
}
/* Absent, or a string (a sentence the views print: "band_reason"). */
static int str_or_absent(const vctx *v, const json_t *o, const char *at, const char *k) {
  const json_t *x = json_object_get(o, k);
  return !x || json_is_string(x) ? GDN_OK : bad(v, at, k, "not a string");
}
static int need_bool(const vctx *v, const json_t *o, const char *at, const char *k) {
  return json_is_boolean(json_object_get(o, k)) ? GDN_OK : bad(v, at, k, "missing or not true/false");
}
static int int_or_null(const vctx *v, const json_t *o, const char *at, const char *k) {
  const json_t *x = json_object_get(o, k);
  return json_is_integer(x) || json_is_null(x) ? GDN_OK : bad(v, at, k, "missing or not an integer or null");
}

static int head(const vctx *v, const json_t *d, const char *at, const char *schema) {
  int rc;
  const char *s = report_doc_str(d, "schema");
  if (!json_is_object(d)) return bad(v, at, "", "not a JSON object");
  if (!s || strcmp(s, schema)) return bad(v, at, "schema", "not \"%s\"", schema);
  if (report_doc_int(d, "version", -1) != 1) return bad(v, at, "version", "only version 1 is known");
  if ((rc = need_str(v, d, at, "recurrence"))) return rc;
  return GDN_OK;
}

/* One output's {"err", "max_abs_err", "max_ref"} (null: not judged where allowed). */
static int metrics(const vctx *v, const json_t *c, const char *at, const char *k, int nullable) {
  const json_t *m = json_object_get(c, k);
  if (nullable && json_is_null(m)) return GDN_OK;
  if (!json_is_object(m)) return bad(v, at, k, "missing or not an object");
  char sub[320];
  path(sub, sizeof sub, "%s.%s", at, k);
  static const char *const f[] = {"err", "max_abs_err", "max_ref"};
  for (int i = 0; i < 3; i++) {
    double x;
    int rc = need_num(v, m, sub, f[i]);
    if (rc) return rc;
    report_num_get(json_object_get(m, f[i]), &x);
    if (x < 0) return bad(v, sub, f[i], "negative");
  }
  return GDN_OK;
}

/* A case: its fields, and "pass" true only when no output is over its band. */
static int one_case(const vctx *v, const json_t *sec, int bw, size_t i, const char *at, int *failed) {
  const json_t *c = json_array_get(json_object_get(bw ? json_object_get(sec, "grad") : sec, "cases"), i);
  int rc;
  if (!json_is_object(c)) return bad(v, at, "", "not an object");
  if ((rc = need_str(v, c, at, "subject")) || (rc = int_or_null(v, c, at, "chunk")) ||
      (rc = int_or_null(v, c, at, "devices")) || (rc = need_bool(v, c, at, "pass")))
    return rc;
  const json_t *b = json_object_get(c, "band"), *k = json_object_get(c, "kappa_g");
  double x;
  if (b && !report_num_get(b, &x)) return bad(v, at, "band", "not a number");
  if (json_object_get(c, "band_ht") && (rc = need_num(v, c, at, "band_ht"))) return rc;
  if (k && !json_is_null(k)) {
    char sub[320];
    path(sub, sizeof sub, "%s.kappa_g", at);
    if (!json_is_object(k)) return bad(v, at, "kappa_g", "not an object or null");
    if ((rc = need_int(v, k, sub, "worst_channel")) || (rc = need_num(v, k, sub, "value"))) return rc;
  }
  report_recur_row r = {sec, c, bw, -1, i};
  const char *names[REPORT_RECUR_MAX_OUTPUTS];
  const int n = report_recur_outputs(&r, names);
  for (int j = 0; j < n; j++) {
    double err, band;
    /* o is always judged; ht (not stored by a fixture) and a gradient may be null */
    if ((rc = metrics(v, c, at, names[j], bw || j == 1))) return rc;
    if (report_recur_output(&r, names[j], &err, &band) && !(err <= band)) {
      if (json_is_true(json_object_get(c, "pass")))
        return bad(v, at, "pass", "true, but %s.err %.17g is over its band %.17g", names[j], err, band);
    }
  }
  *failed += !json_is_true(json_object_get(c, "pass"));
  return GDN_OK;
}

static int cases_of(const vctx *v, const json_t *sec, int bw, const char *at, int *failed) {
  const json_t *owner = bw ? json_object_get(sec, "grad") : sec;
  char sub[300];
  path(sub, sizeof sub, "%s%s%s", at, at[0] && bw ? "." : "", bw ? "grad" : "");
  const json_t *cases = json_object_get(owner, "cases");
  if (!json_is_array(cases) || !json_array_size(cases)) return bad(v, sub, "cases", "missing or an empty list");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    char ca[320];
    path(ca, sizeof ca, "%s%scases[%zu]", sub, sub[0] ? "." : "", i);
    int rc = one_case(v, sec, bw, i, ca, failed);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* A forward or check document (schema given), at `at`. */
static int section(const vctx *v, const json_t *d, const char *at, const char *schema) {
  int rc, failed = 0;
  if ((rc = head(v, d, at, schema)) || (rc = need_str(v, d, at, "gate_shape"))) return rc;
  const json_t *sh = json_object_get(d, "shape"), *orc = json_object_get(d, "oracle"), *g = json_object_get(d, "grad");
  char sub[300];
  if (!json_is_object(sh)) return bad(v, at, "shape", "missing or not an object");
  path(sub, sizeof sub, "%s%sshape", at, at[0] ? "." : "");
  static const char *const dims[] = {"B", "T", "Hk", "Hv", "Dk", "Dv"};
  for (int i = 0; i < 6; i++)
    if ((rc = need_int(v, sh, sub, dims[i]))) return rc;
  if (!json_is_object(orc)) return bad(v, at, "oracle", "missing or not an object");
  path(sub, sizeof sub, "%s%soracle", at, at[0] ? "." : "");
  if ((rc = need_str(v, orc, sub, "tier")) || (rc = need_int(v, orc, sub, "precision_bits")) ||
      (rc = need_int(v, orc, sub, "certified_bits")) || (rc = int_or_null(v, orc, sub, "check_bits")))
    return rc;
  if (!strcmp(schema, "gdn-parity-recurrence") && (rc = need_num(v, d, at, "band"))) return rc;
  if ((rc = str_or_absent(v, d, at, "band_reason"))) return rc;
  if ((rc = cases_of(v, d, 0, at, &failed))) return rc;
  if (g) {
    path(sub, sizeof sub, "%s%sgrad", at, at[0] ? "." : "");
    if (!json_is_object(g)) return bad(v, at, "grad", "not an object");
    int own = 1; /* every backward case with its own band: the grad's may be absent */
    for (size_t i = 0; i < json_array_size(json_object_get(g, "cases")); i++)
      own &= json_object_get(json_array_get(json_object_get(g, "cases"), i), "band") != NULL;
    if ((!own && (rc = need_num(v, g, sub, "band"))) || (rc = str_or_absent(v, g, sub, "band_reason")) ||
        (rc = cases_of(v, d, 1, at, &failed)))
      return rc;
  }
  if ((rc = need_int(v, d, at, "n_cases")) || (rc = need_int(v, d, at, "n_failed")) ||
      (rc = need_bool(v, d, at, "pass")))
    return rc;
  if (report_doc_int(d, "n_failed", -1) != failed)
    return bad(v, at, "n_failed", "%lld, but %d cases fail", report_doc_int(d, "n_failed", -1), failed);
  if (json_is_true(json_object_get(d, "pass")) != (failed == 0))
    return bad(v, at, "pass", "%s, but %d cases fail", failed ? "true" : "false", failed);
  return GDN_OK;
}

static int grid_sweep(const vctx *v, const json_t *d) {
  int rc;
  const json_t *ents = json_object_get(d, "entries");
  if ((rc = head(v, d, "", "gdn-parity-recurrence-sweep")) || (rc = need_str(v, d, "", "grid"))) return rc;
  if (!json_is_array(ents) || !json_array_size(ents)) return bad(v, "", "entries", "missing or an empty list");
  long long failed = 0;
  for (size_t i = 0; i < json_array_size(ents); i++) {
    char at[64];
    path(at, sizeof at, "entries[%zu]", i);
    if ((rc = section(v, json_array_get(ents, i), at, "gdn-parity-recurrence"))) return rc;
    failed += !json_is_true(json_object_get(json_array_get(ents, i), "pass"));
  }
  if ((rc = need_int(v, d, "", "n_failed")) || (rc = need_bool(v, d, "", "pass"))) return rc;
  if (report_doc_int(d, "n_failed", -1) != failed)
    return bad(v, "", "n_failed", "%lld, but %lld entries fail", report_doc_int(d, "n_failed", -1), failed);
  if (json_is_true(json_object_get(d, "pass")) != (failed == 0))
    return bad(v, "", "pass", "%s, but %lld entries fail", failed ? "true" : "false", failed);
  return GDN_OK;
}

static int coverage(const vctx *v, const json_t *d) {
  int rc;
  const json_t *ms = json_object_get(d, "mutants");
  if ((rc = head(v, d, "", "gdn-parity-recurrence-coverage")) || (rc = need_str(v, d, "", "grid"))) return rc;
  if (!json_is_array(ms)) return bad(v, "", "mutants", "missing or not a list");
  long long killed = 0;
  for (size_t i = 0; i < json_array_size(ms); i++) {
    const json_t *m = json_array_get(ms, i), *kb = json_object_get(m, "killed_by");
    char at[64];
    path(at, sizeof at, "mutants[%zu]", i);
    if (!json_is_object(m)) return bad(v, at, "", "not an object");
    if ((rc = need_str(v, m, at, "name")) || (rc = need_bool(v, m, at, "killed")) ||
        (rc = need_num(v, m, at, "max_err")))
      return rc;
    if (!json_is_array(kb)) return bad(v, at, "killed_by", "missing or not a list");
    for (size_t j = 0; j < json_array_size(kb); j++)
      if (!json_is_integer(json_array_get(kb, j))) return bad(v, at, "killed_by", "not a list of entry indices");
    if (json_is_true(json_object_get(m, "killed")) != (json_array_size(kb) > 0))
      return bad(v, at, "killed", "disagrees with killed_by (%zu entries)", json_array_size(kb));
    killed += json_is_true(json_object_get(m, "killed"));
  }
  if ((rc = need_int(v, d, "", "n_killed")) || (rc = need_bool(v, d, "", "pass"))) return rc;
  if (report_doc_int(d, "n_killed", -1) != killed)
    return bad(v, "", "n_killed", "%lld, but %lld mutants are killed", report_doc_int(d, "n_killed", -1), killed);
  if (json_is_true(json_object_get(d, "pass")) && killed != (long long)json_array_size(ms))
    return bad(v, "", "pass", "true, but a mutant survives");
  return GDN_OK;
}

int report_recur_validate(const json_t *doc, const char *source, gdn_error *e) {
  const vctx v = {source ? source : "recurrence document", e};
  if (json_is_array(doc)) {
    if (!json_array_size(doc)) return bad(&v, "", "", "an empty list of check documents");
    for (size_t i = 0; i < json_array_size(doc); i++) {
      char at[64];
      path(at, sizeof at, "[%zu]", i);
      int rc = section(&v, json_array_get(doc, i), at, "gdn-parity-recurrence-check");
      if (rc) return rc;
    }
    return GDN_OK;
  }
  const char *kind = report_recur_kind(doc);
  if (!report_recur_is(doc)) return bad(&v, "", "schema", "not a recurrence document's");
  if (!strcmp(kind, "grid sweep")) return grid_sweep(&v, doc);
  if (!strcmp(kind, "coverage")) return coverage(&v, doc);
  return section(&v, doc, "",
                 !strcmp(kind, "check") ? "gdn-parity-recurrence-check" : "gdn-parity-recurrence");
}
