#include "report_doc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_num.h"

/* Paths in messages ("cases[3].impls.scan.o.rel_fro") are built in fixed
 * buffers: deep enough for every field of schema 1; a longer path (an absurd
 * unknown key) is truncated in the message, never overflowed. */
#define PATH_MAX_ 256

typedef struct vctx {
  const char *source;
  gdn_error *e;
} vctx;

static const char *type_name(const json_t *j) {
  switch (json_typeof(j)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "a value";
}

static int bad(vctx *v, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(vctx *v, const char *path, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return gdn_error_set(v->e, GDN_ERR_INPUT, "%s: %s: %s", v->source, path, what);
}

/* A truncated path ends in "..." so the message says it was cut. */
static void mark_cut(char out[PATH_MAX_], int n) {
  if (n >= PATH_MAX_) memcpy(out + PATH_MAX_ - 4, "...", 4);
}

static void join(char out[PATH_MAX_], const char *path, const char *key) {
  int n = path[0] ? snprintf(out, PATH_MAX_, "%s.%s", path, key)
                  : snprintf(out, PATH_MAX_, "%s", key);
  mark_cut(out, n);
}

static void index_path(char out[PATH_MAX_], const char *path, size_t i) {
  mark_cut(out, snprintf(out, PATH_MAX_, "%s[%zu]", path, i));
}

/* Fetch obj[key]; a required field that is absent is an error.  Returns
 * GDN_OK with *out NULL for an absent optional field. */
static int field(vctx *v, const json_t *obj, const char *path, const char *key, int required,
                 json_type type, const char *type_desc, const json_t **out) {
  char p[PATH_MAX_];
  join(p, path, key);
  const json_t *j = json_object_get(obj, key);
  *out = j;
  if (!j) return required ? bad(v, p, "missing (required)") : GDN_OK;
  int ok = json_typeof(j) == type || (type == JSON_TRUE && json_is_boolean(j)) ||
           (type == JSON_REAL && json_is_number(j));
  if (!ok) return bad(v, p, "expected %s, got %s", type_desc, type_name(j));
  return GDN_OK;
}

static int v_string(vctx *v, const json_t *obj, const char *path, const char *key, int required) {
  const json_t *j;
  return field(v, obj, path, key, required, JSON_STRING, "a string", &j);
}

static int v_bool(vctx *v, const json_t *obj, const char *path, const char *key, int required) {
  const json_t *j;
  return field(v, obj, path, key, required, JSON_TRUE, "true or false", &j);
}

static int v_int(vctx *v, const json_t *obj, const char *path, const char *key, int required,
                 long long min, long long max) {
  const json_t *j;
  int rc = field(v, obj, path, key, required, JSON_INTEGER, "an integer", &j);
  if (rc || !j) return rc;
  long long x = json_integer_value(j);
  if (x < min || x > max) {
    char p[PATH_MAX_];
    join(p, path, key);
    return bad(v, p, "%lld is out of range [%lld, %lld]", x, min, max);
  }
  return GDN_OK;
}

static int is_num(const json_t *j) {
  double d;
  return report_num_get(j, &d);
}

static int v_num_value(vctx *v, const json_t *j, const char *p) {
  if (is_num(j)) return GDN_OK;
  if (json_is_string(j))
    return bad(v, p, "expected a number or \"inf\", \"-inf\", \"nan\", got the string \"%.40s\"",
               json_string_value(j));
  return bad(v, p, "expected a number, got %s", type_name(j));
}

static int v_num(vctx *v, const json_t *obj, const char *path, const char *key, int required) {
  char p[PATH_MAX_];
  join(p, path, key);
  const json_t *j = json_object_get(obj, key);
  if (!j) return required ? bad(v, p, "missing (required)") : GDN_OK;
  return v_num_value(v, j, p);
}

/* An array of numbers; returns its length in *n (0 when absent). */
static int v_num_array(vctx *v, const json_t *obj, const char *path, const char *key,
                       int required, size_t *n) {
  const json_t *a;
  *n = 0;
  int rc = field(v, obj, path, key, required, JSON_ARRAY, "an array of numbers", &a);
  if (rc || !a) return rc;
  char p[PATH_MAX_], q[PATH_MAX_];
  join(p, path, key);
  for (size_t i = 0; i < json_array_size(a); i++) {
    index_path(q, p, i);
    if ((rc = v_num_value(v, json_array_get(a, i), q))) return rc;
  }
  *n = json_array_size(a);
  return GDN_OK;
}

static int v_shape(vctx *v, const json_t *obj, const char *path, int required) {
  const json_t *s;
  int rc = field(v, obj, path, "shape", required, JSON_OBJECT, "an object", &s);
  if (rc || !s) return rc;
  char p[PATH_MAX_];
  join(p, path, "shape");
  static const char *const dims[] = {"B", "T", "Hk", "Hv", "Dk", "Dv"};
  for (size_t i = 0; i < 6; i++)
    if ((rc = v_int(v, s, p, dims[i], 1, 1, (long long)1 << 50))) return rc;
  return GDN_OK;
}

static int v_metrics(vctx *v, const json_t *m, const char *p) {
  if (!json_is_object(m)) return bad(v, p, "expected an object of metrics, got %s", type_name(m));
  static const char *const nums[] = {"max_abs", "rel_fro", "max_ulp", "median_ulp", "max_rel",
                                     "rel_floor"};
  int rc;
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    if ((rc = v_num(v, m, p, nums[i], 0))) return rc;
  static const char *const ints[] = {"zero_ref", "nonfinite", "n"};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    if ((rc = v_int(v, m, p, ints[i], 0, 0, (long long)1 << 62))) return rc;
  const json_t *w;
  return field(v, m, p, "worst", 0, JSON_OBJECT, "an object", &w);
}

/* {"o": METRICS, "ht": METRICS}, both optional. */
static int v_tensors(vctx *v, const json_t *t, const char *p) {
  if (!json_is_object(t)) return bad(v, p, "expected an object, got %s", type_name(t));
  static const char *const names[] = {"o", "ht"};
  char q[PATH_MAX_];
  int rc;
  for (size_t i = 0; i < 2; i++) {
    const json_t *m = json_object_get(t, names[i]);
    join(q, p, names[i]);
    if (m && (rc = v_metrics(v, m, q))) return rc;
  }
  return GDN_OK;
}

static int v_tolerance(vctx *v, const json_t *c, const char *cp, int *any_fail) {
  const json_t *t, *checks;
  int rc = field(v, c, cp, "tolerance", 1, JSON_OBJECT, "an object", &t);
  if (rc) return rc;
  char p[PATH_MAX_], q[PATH_MAX_];
  join(p, cp, "tolerance");
  if ((rc = field(v, t, p, "checks", 1, JSON_ARRAY, "an array", &checks))) return rc;
  size_t n = json_array_size(checks);
  char ap[PATH_MAX_];
  join(ap, p, "checks");
  *any_fail = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *k = json_array_get(checks, i);
    index_path(q, ap, i);
    if (!json_is_object(k)) return bad(v, q, "expected an object, got %s", type_name(k));
    if ((rc = v_string(v, k, q, "name", 1)) || (rc = v_string(v, k, q, "metric", 1)) ||
        (rc = v_num(v, k, q, "value", 1)) || (rc = v_num(v, k, q, "limit", 1)) ||
        (rc = v_bool(v, k, q, "pass", 1)) || (rc = v_string(v, k, q, "reason", 0)) ||
        (rc = v_num(v, k, q, "factor_reached", 0)))
      return rc;
    if (!json_is_true(json_object_get(k, "pass"))) *any_fail = 1;
  }
  if (n == 0) return v_int(v, t, p, "deciding", 0, 0, 0);
  if ((rc = v_int(v, t, p, "deciding", 1, 0, (long long)1 << 62))) return rc;
  long long d = json_integer_value(json_object_get(t, "deciding"));
  if ((size_t)d >= n) {
    join(q, p, "deciding");
    return bad(v, q, "%lld is out of range (%zu checks)", d, n);
  }
  return GDN_OK;
}

/* field() for an optional member with members of its own: its path into
 * p as well. */
static int v_member(vctx *v, const json_t *obj, const char *cp, const char *key, json_type type,
                    const char *type_desc, const json_t **out, char p[PATH_MAX_]) {
  join(p, cp, key);
  return field(v, obj, cp, key, 0, type, type_desc, out);
}

static int v_profile(vctx *v, const json_t *c, const char *cp) {
  const json_t *pr;
  char p[PATH_MAX_];
  int rc = v_member(v, c, cp, "profile", JSON_OBJECT, "an object", &pr, p);
  if (rc || !pr) return rc;
  if ((rc = v_int(v, pr, p, "block", 1, 1, (long long)1 << 50))) return rc;
  size_t n0, n;
  if ((rc = v_num_array(v, pr, p, "t0", 1, &n0))) return rc;
  static const char *const series[] = {"ref_max_abs", "scan", "affine-prefix", "affine_vs_scan"};
  for (size_t i = 0; i < 4; i++) {
    if ((rc = v_num_array(v, pr, p, series[i], 0, &n))) return rc;
    if (json_object_get(pr, series[i]) && n != n0) {
      char q[PATH_MAX_];
      join(q, p, series[i]);
      return bad(v, q, "has %zu entries but t0 has %zu", n, n0);
    }
  }
  return GDN_OK;
}

/* An optional array of objects at obj[key] (the case's seams and upstream
 * verdicts), each object checked by `each` with its path "cp.key[i]". */
static int v_objects(vctx *v, const json_t *obj, const char *cp, const char *key,
                     int (*each)(vctx *v, const json_t *m, const char *q)) {
  const json_t *a;
  char p[PATH_MAX_], q[PATH_MAX_];
  int rc = v_member(v, obj, cp, key, JSON_ARRAY, "an array", &a, p);
  if (rc || !a) return rc;
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *m = json_array_get(a, i);
    index_path(q, p, i);
    if (!json_is_object(m)) return bad(v, q, "expected an object, got %s", type_name(m));
    if ((rc = each(v, m, q))) return rc;
  }
  return GDN_OK;
}

static int v_seam(vctx *v, const json_t *m, const char *q) {
  int rc;
  if ((rc = v_int(v, m, q, "device", 0, 0, (long long)1 << 40)) ||
      (rc = v_int(v, m, q, "chunk", 0, 0, (long long)1 << 50)) || (rc = v_num(v, m, q, "t", 1)) ||
      (rc = v_num(v, m, q, "scan", 0)) || (rc = v_num(v, m, q, "affine-prefix", 0)) ||
      (rc = v_num(v, m, q, "affine_vs_scan", 0)) || (rc = v_num(v, m, q, "state_rel", 0)) ||
      (rc = v_int(v, m, q, "pad_before", 0, 0, (long long)1 << 50)))
    return rc;
  return GDN_OK;
}

static int v_histogram(vctx *v, const json_t *c, const char *cp) {
  const json_t *h;
  char p[PATH_MAX_], q[PATH_MAX_];
  int rc = v_member(v, c, cp, "ulp_histogram", JSON_OBJECT, "an object", &h, p);
  if (rc || !h) return rc;
  size_t ne, n;
  if ((rc = v_num_array(v, h, p, "edges", 1, &ne))) return rc;
  double prev = 0;
  for (size_t i = 0; i < ne; i++) {
    double x;
    report_num_get(json_array_get(json_object_get(h, "edges"), i), &x);
    if (!(x >= 0) || isinf(x) || (i && !(x > prev))) {
      join(q, p, "edges");
      char r[PATH_MAX_];
      index_path(r, q, i);
      return bad(v, r, "edges must be finite, non-negative and increasing");
    }
    prev = x;
  }
  static const char *const series[] = {"scan", "affine-prefix"};
  for (size_t i = 0; i < 2; i++) {
    if ((rc = v_num_array(v, h, p, series[i], 0, &n))) return rc;
    join(q, p, series[i]);
    if (json_object_get(h, series[i]) && n != ne)
      return bad(v, q, "has %zu counts but there are %zu edges (one count per edge, the last bin "
                       "open above)",
                 n, ne);
    for (size_t k = 0; k < n; k++) {
      double x;
      report_num_get(json_array_get(json_object_get(h, series[i]), k), &x);
      if (!(x >= 0) || isinf(x)) {
        char r[PATH_MAX_];
        index_path(r, q, k);
        return bad(v, r, "a count must be finite and non-negative");
      }
    }
  }
  return GDN_OK;
}

/* One upstream verdict: the check's name, its pass, what it said. */
static int v_upstream_verdict(vctx *v, const json_t *m, const char *q) {
  int rc;
  if ((rc = v_string(v, m, q, "name", 1)) || (rc = v_bool(v, m, q, "pass", 1)) ||
      (rc = v_string(v, m, q, "detail", 0)))
    return rc;
  return GDN_OK;
}

static int v_impls(vctx *v, const json_t *c, const char *cp, int *impl_fail) {
  const json_t *im;
  *impl_fail = 0;
  int rc = field(v, c, cp, "impls", 0, JSON_OBJECT, "an object", &im);
  if (rc || !im) return rc;
  char p[PATH_MAX_], q[PATH_MAX_];
  join(p, cp, "impls");
  const char *key;
  const json_t *val;
  json_object_foreach((json_t *)im, key, val) {
    join(q, p, key);
    if ((rc = v_tensors(v, val, q)) || (rc = v_bool(v, val, q, "pass", 0))) return rc;
    const json_t *attrs;
    if ((rc = field(v, val, q, "attrs", 0, JSON_OBJECT, "an object", &attrs))) return rc;
    if (json_is_false(json_object_get(val, "pass"))) *impl_fail = 1;
  }
  return GDN_OK;
}

static int v_case(vctx *v, const json_t *c, const char *p, size_t n_inputs, int *pass) {
  if (!json_is_object(c)) return bad(v, p, "expected an object, got %s", type_name(c));
  int rc;
  if ((rc = v_string(v, c, p, "id", 1))) return rc;
  if (n_inputs) {
    if ((rc = v_int(v, c, p, "input", 0, 0, (long long)n_inputs - 1))) return rc;
  } else if (json_object_get(c, "input")) {
    char q[PATH_MAX_];
    join(q, p, "input");
    return bad(v, q, "refers to an input but the document has no \"inputs\"");
  }
  if ((rc = v_shape(v, c, p, 1)) || (rc = v_int(v, c, p, "chunk", 1, 1, (long long)1 << 40)) ||
      (rc = v_int(v, c, p, "devices", 1, 1, (long long)1 << 40)) ||
      (rc = v_string(v, c, p, "prefix", 1)) || (rc = v_string(v, c, p, "dtype", 1)) ||
      (rc = v_string(v, c, p, "shard", 0)) || (rc = v_string(v, c, p, "solve", 0)) ||
      (rc = v_string(v, c, p, "packing", 0)) ||
      (rc = v_string(v, c, p, "matmul_precision", 1)) || (rc = v_bool(v, c, p, "ftz", 0)) ||
      (rc = v_string(v, c, p, "output_dtype", 0)) || (rc = v_num(v, c, p, "seconds", 0)) ||
      (rc = v_string(v, c, p, "error", 0)) || (rc = v_bool(v, c, p, "pass", 1)))
    return rc;
  const json_t *shards;
  if ((rc = field(v, c, p, "shards", 0, JSON_ARRAY, "an array", &shards))) return rc;
  int impl_fail, check_fail;
  if ((rc = v_impls(v, c, p, &impl_fail))) return rc;
  const json_t *avs = json_object_get(c, "affine_vs_scan");
  char q[PATH_MAX_];
  join(q, p, "affine_vs_scan");
  if (avs && (rc = v_tensors(v, avs, q))) return rc;
  if ((rc = v_tolerance(v, c, p, &check_fail)) || (rc = v_objects(v, c, p, "upstream", v_upstream_verdict)) ||
      (rc = v_profile(v, c, p)) || (rc = v_objects(v, c, p, "seams", v_seam)) || (rc = v_histogram(v, c, p)))
    return rc;
  *pass = json_is_true(json_object_get(c, "pass"));
  /* A report must never print PASS beside a failing check or output. */
  if (*pass && (check_fail || impl_fail || json_object_get(c, "error"))) {
    join(q, p, "pass");
    return bad(v, q, "is true but %s", check_fail ? "a tolerance check failed"
                                       : impl_fail ? "an output in impls failed"
                                                   : "the case has an error");
  }
  return GDN_OK;
}

int report_doc_validate(const json_t *doc, const char *source, gdn_error *e) {
  vctx v = {source ? source : "results document", e};
  if (!json_is_object(doc))
    return bad(&v, "(top level)", "expected an object, got %s", doc ? type_name(doc) : "nothing");
  int rc;
  if ((rc = v_string(&v, doc, "", "tool", 1)) || (rc = v_string(&v, doc, "", "version", 1)) ||
      (rc = v_string(&v, doc, "", "git_commit", 0)) ||
      (rc = v_int(&v, doc, "", "schema", 0, 1, 1 << 30)) ||
      (rc = v_string(&v, doc, "", "command", 0)) || (rc = v_string(&v, doc, "", "created", 0)) ||
      (rc = v_bool(&v, doc, "", "pass", 1)) ||
      (rc = v_int(&v, doc, "", "exit_status", 0, 0, 255)))
    return rc;
  long long schema = report_doc_int(doc, "schema", REPORT_DOC_SCHEMA);
  if (schema > REPORT_DOC_SCHEMA)
    return bad(&v, "schema", "%lld is newer than this reader understands (%d); use a newer "
                             "gdn-parity",
               schema, REPORT_DOC_SCHEMA);
  const json_t *o;
  if ((rc = field(&v, doc, "", "oracle", 0, JSON_OBJECT, "an object", &o))) return rc;
  if (o && ((rc = v_string(&v, o, "oracle", "tier", 0)) ||
            (rc = v_string(&v, o, "oracle", "form", 0)) ||
            (rc = v_int(&v, o, "oracle", "precision_bits", 0, 1, 1 << 30)) ||
            (rc = v_int(&v, o, "oracle", "check_bits", 0, 1, 1 << 30)) ||
            (rc = v_num(&v, o, "oracle", "certified_bits", 0))))
    return rc;
  const json_t *pol;
  if ((rc = field(&v, doc, "", "policy", 0, JSON_OBJECT, "an object", &pol))) return rc;
  if (pol && ((rc = v_string(&v, pol, "policy", "name", 0)) ||
              (rc = v_string(&v, pol, "policy", "source", 0)) ||
              (rc = v_string(&v, pol, "policy", "sha256", 0))))
    return rc;
  const json_t *inputs;
  if ((rc = field(&v, doc, "", "inputs", 0, JSON_ARRAY, "an array", &inputs))) return rc;
  size_t n_inputs = json_array_size(inputs);
  char p[PATH_MAX_];
  for (size_t i = 0; i < n_inputs; i++) {
    const json_t *in = json_array_get(inputs, i);
    index_path(p, "inputs", i);
    if (!json_is_object(in)) return bad(&v, p, "expected an object, got %s", type_name(in));
    if ((rc = v_string(&v, in, p, "name", 1)) || (rc = v_string(&v, in, p, "source", 0)) ||
        (rc = v_string(&v, in, p, "path", 0)) || (rc = v_string(&v, in, p, "sha256", 0)) ||
        (rc = v_shape(&v, in, p, 0)) || (rc = v_bool(&v, in, p, "l2norm_in_kernel", 0)) ||
        (rc = v_bool(&v, in, p, "h0", 0)) || (rc = v_num(&v, in, p, "oracle_certified_bits", 0)))
      return rc;
    const json_t *bf;
    if ((rc = field(&v, in, p, "bf16_inputs", 0, JSON_ARRAY, "an array of names", &bf))) return rc;
  }
  const json_t *cases;
  if ((rc = field(&v, doc, "", "cases", 1, JSON_ARRAY, "an array", &cases))) return rc;
  int all_pass = 1;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    int pass;
    index_path(p, "cases", i);
    if ((rc = v_case(&v, json_array_get(cases, i), p, n_inputs, &pass))) return rc;
    all_pass &= pass;
  }
  /* An embedded audit (report_audit.h) is validated, and its verdict is part of the run's. */
  const json_t *audit = json_object_get(doc, "audit");
  if (audit && (rc = report_audit_validate(audit, v.source, "audit", e))) return rc;
  const int audit_pass = !audit || report_audit_pass(audit);
  if (json_is_true(json_object_get(doc, "pass")) != (all_pass && audit_pass))
    return bad(&v, "pass", "is %s but %s", all_pass && audit_pass ? "false" : "true",
               !all_pass ? "at least one case failed" : !audit_pass ? "the audit's verdict is FAIL" : "every case passed");
  const json_t *t, *secs;
  if ((rc = field(&v, doc, "", "timing", 0, JSON_OBJECT, "an object", &t))) return rc;
  if (t) {
    if ((rc = v_int(&v, t, "timing", "threads", 0, 0, 1 << 30)) ||
        (rc = field(&v, t, "timing", "seconds", 0, JSON_OBJECT, "an object", &secs)))
      return rc;
    const char *k;
    const json_t *x;
    if (secs) json_object_foreach((json_t *)secs, k, x) {
        if ((rc = v_num(&v, secs, "timing.seconds", k, 1))) return rc;
      }
  }
  return GDN_OK;
}

int report_doc_num(const json_t *obj, const char *key, double *out) {
  return report_num_get(json_object_get(obj, key), out);
}

const char *report_doc_num_text(const json_t *obj, const char *key, int digits, char *out) {
  double v;
  if (!report_doc_num(obj, key, &v)) return NULL;
  report_num_format(out, v, digits);
  return out;
}

const json_t *report_doc_metrics(const json_t *c, const char *impl, const char *tensor) {
  const json_t *t = !strcmp(impl, "affine_vs_scan")       ? json_object_get(c, "affine_vs_scan")
                    : !strcmp(impl, "subject_vs_against") ? json_object_get(c, "subject_vs_against")
                                                          : json_object_get(json_object_get(c, "impls"), impl);
  const json_t *m = json_object_get(t, tensor);
  return json_is_object(m) ? m : NULL;
}

int report_doc_metric(const json_t *c, const char *impl, const char *tensor, const char *field_,
                      double *out) {
  return report_doc_num(report_doc_metrics(c, impl, tensor), field_, out);
}

const json_t *report_doc_input(const json_t *doc, const json_t *c) {
  const json_t *j = json_object_get(c, "input");
  if (!json_is_integer(j)) return NULL;
  return json_array_get(json_object_get(doc, "inputs"), (size_t)json_integer_value(j));
}

const json_t *report_doc_deciding(const json_t *c) {
  const json_t *t = json_object_get(c, "tolerance");
  const json_t *checks = json_object_get(t, "checks");
  if (!json_array_size(checks)) return NULL;
  return json_array_get(checks, (size_t)report_doc_int(t, "deciding", 0));
}

const char *report_doc_planted_mutant(const json_t *doc) {
  const char *m = report_doc_str(doc, "planted_mutant");
  const json_t *cases = json_object_get(doc, "cases");
  for (size_t i = 0; !m && i < json_array_size(cases); i++) m = report_doc_str(json_array_get(cases, i), "mutant");
  return m;
}
