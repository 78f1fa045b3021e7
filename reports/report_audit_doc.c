/* The audit document: reading, validation (one table of rules per kind of
 * object, docs/audit-json.md), embedding into the results document. */
#include "report_audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdn_path.h"
#include "gdn_text.h"
#include "report_doc.h"
#include "report_num.h"

#define APATH 256

typedef enum {
  F_STR,      /* a string */
  F_STR_NULL, /* a string or null */
  F_INT,      /* an integer >= 0 */
  F_INT_NULL, /* an integer >= 0 or null */
  F_NUM,      /* a number (or "inf", "-inf", "nan") */
  F_NUM_NULL, /* the same or null */
  F_OBJ,      /* an object (child: its rules, or NULL) */
  F_OBJ_NULL, /* the same or null */
  F_OBJS,     /* an array of objects (child: their rules) */
  F_INTS,     /* an array of integers */
  F_ARRAY,    /* any array */
  F_VERDICT,  /* "PASS" or "FAIL" */
  F_POINTS,   /* [[T, y], ...] */
  F_NUM_MAP,  /* {name: number} */
  F_INT_MAP   /* {name: integer or null} */
} ftype;

typedef struct rule {
  const char *key;
  ftype t;
  int required;
  const struct rule *child;
} rule;

#define END {NULL, F_STR, 0, NULL}
static const rule COLL[] = {{"kind", F_STR, 1, NULL},       {"name", F_STR, 0, NULL},
                            {"dtype", F_STR, 0, NULL},      {"shape", F_INTS, 0, NULL},
                            {"shapes", F_ARRAY, 0, NULL},   {"bytes", F_NUM, 1, NULL},
                            {"executions", F_NUM, 1, NULL}, {"bytes_total", F_NUM, 1, NULL},
                            {"op_name", F_STR_NULL, 0, NULL}, {"source", F_STR_NULL, 0, NULL},
                            {"computation", F_STR_NULL, 0, NULL}, END};
static const rule MEMORY[] = {{"argument_bytes", F_NUM, 0, NULL}, {"output_bytes", F_NUM, 0, NULL},
                              {"temp_bytes", F_NUM, 1, NULL},     {"alias_bytes", F_NUM, 0, NULL},
                              {"generated_code_bytes", F_NUM, 0, NULL}, END};
static const rule COST[] = {{"flops", F_NUM_NULL, 0, NULL}, {"bytes_accessed", F_NUM_NULL, 0, NULL},
                            {"transcendentals", F_NUM_NULL, 0, NULL}, END};
static const rule PROGRAM[] = {{"function", F_STR, 1, NULL},  {"pass", F_STR, 1, NULL},
                               {"devices", F_INT, 1, NULL},   {"T", F_INT, 1, NULL},
                               {"heads", F_STR, 0, NULL},     {"memory", F_OBJ, 1, MEMORY},
                               {"cost", F_OBJ, 0, COST},      {"collectives", F_OBJS, 1, COLL},
                               {"collective_bytes", F_NUM, 1, NULL}, {"compile_seconds", F_NUM, 0, NULL},
                               END};
static const rule FIT[] = {{"function", F_STR, 1, NULL}, {"pass", F_STR, 1, NULL},   {"devices", F_INT, 1, NULL},
                           {"heads", F_STR, 0, NULL},    {"figure", F_STR, 1, NULL}, {"a", F_NUM, 1, NULL},
                           {"b", F_NUM, 1, NULL},        {"r2", F_NUM_NULL, 0, NULL},
                           {"max_rel_residual", F_NUM_NULL, 0, NULL}, {"points", F_POINTS, 1, NULL}, END};
static const rule AFFINE[] = {{"pass", F_STR, 1, NULL},          {"devices", F_INT, 1, NULL},
                              {"T", F_INT, 1, NULL},             {"pair_bytes", F_NUM, 1, NULL},
                              {"rounds", F_NUM, 1, NULL},        {"minimum_bytes", F_NUM, 1, NULL},
                              {"measured_bytes", F_NUM, 1, NULL}, {"ratio", F_NUM_NULL, 1, NULL}, END};
static const rule HEADS[] = {{"name", F_STR, 0, NULL}, {"B", F_INT, 0, NULL},  {"Hk", F_INT, 0, NULL},
                             {"Hv", F_INT, 0, NULL},   {"Dk", F_INT, 0, NULL}, {"Dv", F_INT, 0, NULL}, END};
static const rule MROW[] = {{"function", F_STR, 1, NULL},
                            {"devices", F_INT, 1, NULL},
                            {"temp_bytes_per_token", F_NUM, 1, NULL},
                            {"temp_bytes_per_local_token", F_NUM, 1, NULL},
                            {"ratio_to_stock", F_NUM_NULL, 0, NULL},
                            {"r2", F_NUM_NULL, 0, NULL},
                            {"resident_a", F_NUM, 0, NULL},
                            {"resident_b", F_NUM, 0, NULL},
                            {"at", F_NUM_MAP, 0, NULL},
                            {"longest_T", F_INT_MAP, 0, NULL},
                            END};
static const rule MAS[] = {{"heads", F_OBJ, 0, HEADS}, {"tokens", F_INTS, 1, NULL},
                           {"accelerators", F_NUM_MAP, 1, NULL}, {"rows", F_OBJS, 1, MROW}, END};
static const rule CHECK[] = {{"check", F_STR, 1, NULL},         {"verdict", F_VERDICT, 1, NULL},
                             {"function", F_STR_NULL, 0, NULL}, {"pass", F_STR_NULL, 0, NULL},
                             {"devices", F_INT_NULL, 0, NULL},  {"reason", F_STR, 1, NULL},
                             {"op", F_OBJ, 0, COLL},            {"figures", F_OBJ, 0, NULL}, END};
static const rule SUBJECT[] = {{"impl", F_STR_NULL, 0, NULL},      {"cp", F_STR_NULL, 0, NULL},
                               {"layout", F_STR_NULL, 0, NULL},    {"cp_prefix", F_STR_NULL, 0, NULL},
                               {"signature", F_STR_NULL, 0, NULL}, {"cp_axis", F_STR_NULL, 0, NULL}, END};
static const rule TOP[] = {{"producer", F_STR, 0, NULL},         {"platform", F_STR, 0, NULL},
                           {"jax_version", F_STR, 0, NULL},      {"note", F_STR, 0, NULL},
                           {"subject", F_OBJ, 0, SUBJECT},       {"shape", F_OBJ, 0, NULL},
                           {"lengths", F_INTS, 0, NULL},         {"devices", F_INTS, 0, NULL},
                           {"programs", F_OBJS, 1, PROGRAM},     {"fits", F_OBJS, 0, FIT},
                           {"affine_minimum", F_OBJS, 0, AFFINE}, {"memory_at_scale", F_OBJ_NULL, 0, MAS},
                           {"checks", F_OBJS, 1, CHECK},         {"verdict", F_VERDICT, 1, NULL},
                           {"exit_status", F_INT, 1, NULL},      END};

typedef struct vctx {
  const char *src;
  gdn_error *e;
} vctx;

static int bad(const vctx *v, const char *path, const char *what) {
  return gdn_error_set(v->e, GDN_ERR_INPUT, "%s: %s: %s", v->src, path, what);
}

static void join(char out[APATH], const char *path, const char *key) {
  int n = path[0] ? snprintf(out, APATH, "%s.%s", path, gdn_text_show(key)) : snprintf(out, APATH, "%s", key);
  if (n >= APATH) memcpy(out + APATH - 4, "...", 4);
}

static void at_index(char out[APATH], const char *path, size_t i) {
  if (snprintf(out, APATH, "%s[%zu]", path, i) >= APATH) memcpy(out + APATH - 4, "...", 4);
}

static int is_count(const json_t *j) { return json_is_integer(j) && json_integer_value(j) >= 0; }

static int is_num(const json_t *j) {
  double d;
  return report_num_get(j, &d);
}

static int v_object(const vctx *v, const json_t *o, const char *path, const rule *r);

/* Arrays whose elements share one test. */
static int v_each(const vctx *v, const json_t *a, const char *path, int (*ok)(const json_t *), const char *want) {
  char p[APATH];
  for (size_t i = 0; i < json_array_size(a); i++)
    if (!ok(json_array_get(a, i))) {
      at_index(p, path, i);
      return bad(v, p, want);
    }
  return GDN_OK;
}

static int is_point(const json_t *j) {
  return json_array_size(j) == 2 && is_count(json_array_get(j, 0)) && is_num(json_array_get(j, 1));
}

static int is_object(const json_t *j) { return json_is_object(j); }
static int is_count_or_null(const json_t *j) { return is_count(j) || json_is_null(j); }

static int v_map(const vctx *v, const json_t *m, const char *path, int (*ok)(const json_t *), const char *want) {
  const char *k;
  const json_t *x;
  char p[APATH];
  json_object_foreach((json_t *)m, k, x) if (!ok(x)) {
    join(p, path, k);
    return bad(v, p, want);
  }
  return GDN_OK;
}

static int v_objects(const vctx *v, const json_t *a, const char *path, const rule *child) {
  int rc = v_each(v, a, path, is_object, "expected an object");
  char p[APATH];
  for (size_t i = 0; !rc && child && i < json_array_size(a); i++) {
    at_index(p, path, i);
    rc = v_object(v, json_array_get(a, i), p, child);
  }
  return rc;
}

/* One present field against its rule. */
static int v_field(const vctx *v, const json_t *j, const char *p, const rule *r) {
  const int null = json_is_null(j);
  switch (r->t) {
  case F_STR: return json_is_string(j) ? GDN_OK : bad(v, p, "expected a string");
  case F_STR_NULL: return json_is_string(j) || null ? GDN_OK : bad(v, p, "expected a string or null");
  case F_INT: return is_count(j) ? GDN_OK : bad(v, p, "expected a non-negative integer");
  case F_INT_NULL: return is_count(j) || null ? GDN_OK : bad(v, p, "expected a non-negative integer or null");
  case F_NUM: return is_num(j) ? GDN_OK : bad(v, p, "expected a number");
  case F_NUM_NULL: return is_num(j) || null ? GDN_OK : bad(v, p, "expected a number or null");
  case F_OBJ_NULL:
    if (null) return GDN_OK;
    if (!json_is_object(j)) return bad(v, p, "expected an object or null");
    return r->child ? v_object(v, j, p, r->child) : GDN_OK;
  case F_OBJ:
    if (!json_is_object(j)) return bad(v, p, "expected an object");
    return r->child ? v_object(v, j, p, r->child) : GDN_OK;
  case F_OBJS: return json_is_array(j) ? v_objects(v, j, p, r->child) : bad(v, p, "expected an array of objects");
  case F_INTS:
    return json_is_array(j) ? v_each(v, j, p, is_count, "expected a non-negative integer")
                            : bad(v, p, "expected an array of integers");
  case F_ARRAY: return json_is_array(j) ? GDN_OK : bad(v, p, "expected an array");
  case F_VERDICT: {
    const char *s = json_string_value(j);
    return s && (!strcmp(s, "PASS") || !strcmp(s, "FAIL")) ? GDN_OK : bad(v, p, "expected \"PASS\" or \"FAIL\"");
  }
  case F_POINTS:
    return json_is_array(j) ? v_each(v, j, p, is_point, "expected a point [T, y]") : bad(v, p, "expected an array of points");
  case F_NUM_MAP: return json_is_object(j) ? v_map(v, j, p, is_num, "expected a number") : bad(v, p, "expected an object");
  case F_INT_MAP:
    return json_is_object(j) ? v_map(v, j, p, is_count_or_null, "expected a non-negative integer or null")
                             : bad(v, p, "expected an object");
  }
  return bad(v, p, "unknown rule");
}

static int v_object(const vctx *v, const json_t *o, const char *path, const rule *r) {
  char p[APATH];
  for (; r->key; r++) {
    const json_t *j = json_object_get(o, r->key);
    join(p, path, r->key);
    if (!j) {
      if (r->required) return bad(v, p, "missing (required)");
      continue;
    }
    int rc = v_field(v, j, p, r);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* The verdict must be what its checks say, and the exit status with it:
 * a report never prints PASS beside a failing check. */
static int v_verdict(const vctx *v, const json_t *a, const char *prefix) {
  size_t n, nf;
  report_audit_counts(a, &n, &nf);
  char p[APATH];
  const int pass = report_audit_pass(a);
  join(p, prefix, "verdict");
  if (pass && nf) return bad(v, p, "is \"PASS\" but a check FAILs");
  if (!pass && !nf) return bad(v, p, "is \"FAIL\" but no check FAILs");
  join(p, prefix, "exit_status");
  if (json_integer_value(json_object_get(a, "exit_status")) != (pass ? 0 : 1))
    return bad(v, p, pass ? "is not 0 for a PASS" : "is not 1 for a FAIL");
  return GDN_OK;
}

int report_audit_validate(const json_t *a, const char *source, const char *prefix, gdn_error *e) {
  const vctx v = {source ? source : "audit document", e};
  char p[APATH];
  if (!json_is_object(a)) return bad(&v, prefix[0] ? prefix : "(top level)", "expected an object (the audit document)");
  const char *schema = report_doc_str(a, "schema");
  join(p, prefix, "schema");
  if (!schema || strcmp(schema, REPORT_AUDIT_SCHEMA))
    return bad(&v, p, "is not \"" REPORT_AUDIT_SCHEMA "\" (not a gdn-parity-jax audit document)");
  join(p, prefix, "schema_version");
  if (!json_is_integer(json_object_get(a, "schema_version")))
    return bad(&v, p, "missing or not an integer");
  if (json_integer_value(json_object_get(a, "schema_version")) != REPORT_AUDIT_VERSION)
    return bad(&v, p, "only version 1 is known (use a gdn-parity that reads it)");
  int rc = v_object(&v, a, prefix, TOP);
  return rc ? rc : v_verdict(&v, a, prefix);
}

/* ---- reading ---- */

/* The file is opened by the shared input rule (gdn_path_fopen_input: never
 * blocks, a FIFO, folder or device refused); its size is bounded before
 * jansson reads it. */
static int read_file(FILE *f, const char *path, json_t **out, gdn_error *e) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0) return gdn_error_set(e, GDN_ERR_INPUT, "--audit %s: %s", path, strerror(errno));
  if (st.st_size > REPORT_AUDIT_MAX_BYTES)
    return gdn_error_set(e, GDN_ERR_INPUT, "--audit %s: %lld bytes, more than an audit document can be (%ld)", path,
                         (long long)st.st_size, REPORT_AUDIT_MAX_BYTES);
  json_error_t je;
  *out = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  if (!*out)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s:%d:%d: not a valid JSON document: %s", path, je.line, je.column,
                         je.text);
  return GDN_OK;
}

int report_audit_read(const char *path, json_t **audit, gdn_error *e) {
  *audit = NULL;
  FILE *f = NULL;
  int rc = gdn_path_fopen_input("--audit", path, &f, NULL, e);
  if (rc) return rc;
  json_t *j = NULL;
  rc = read_file(f, path, &j, e);
  fclose(f);
  if (!rc) rc = report_audit_validate(j, path, "", e);
  if (rc) {
    json_decref(j);
    return rc;
  }
  *audit = j;
  return GDN_OK;
}

/* ---- embedding and access ---- */

int report_audit_embed(json_t *doc, json_t *audit, gdn_error *e) {
  int pass = report_audit_pass(audit);
  const json_t *cases = json_object_get(doc, "cases");
  for (size_t i = 0; i < json_array_size(cases); i++)
    pass &= json_is_true(json_object_get(json_array_get(cases, i), "pass"));
  if (json_object_set(doc, "audit", audit) || json_object_set_new(doc, "pass", json_boolean(pass)) ||
      json_object_set_new(doc, "exit_status", json_integer(pass ? 0 : 1)))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (embedding the audit)");
  return GDN_OK;
}

const json_t *report_audit_of(const json_t *doc) {
  const json_t *a = json_object_get(doc, "audit");
  return json_is_object(a) ? a : NULL;
}

int report_audit_pass(const json_t *audit) {
  const char *v = report_doc_str(audit, "verdict");
  return v && !strcmp(v, "PASS");
}

int report_audit_check_failed(const json_t *k) {
  const char *v = report_doc_str(k, "verdict");
  return !v || strcmp(v, "PASS");
}

void report_audit_counts(const json_t *audit, size_t *n, size_t *n_fail) {
  const json_t *checks = json_object_get(audit, "checks");
  *n = json_array_size(checks);
  *n_fail = 0;
  for (size_t i = 0; i < *n; i++) *n_fail += report_audit_check_failed(json_array_get(checks, i));
}

const json_t *report_audit_counted(const json_t *doc, size_t *n, size_t *n_fail) {
  const json_t *a = report_audit_of(doc);
  if (a) report_audit_counts(a, n, n_fail);
  return a;
}

void report_audit_check_where(const json_t *k, char *out, size_t n) {
  const char *c = report_doc_str(k, "check"), *f = report_doc_str(k, "function"), *p = report_doc_str(k, "pass");
  int len = snprintf(out, n, "%s", c ? c : "?");
  if (len >= 0 && (size_t)len < n && f) len += snprintf(out + len, n - (size_t)len, " %s", f);
  if (len >= 0 && (size_t)len < n && p) len += snprintf(out + len, n - (size_t)len, " %s", p);
  if (len >= 0 && (size_t)len < n && json_is_integer(json_object_get(k, "devices")))
    snprintf(out + len, n - (size_t)len, " D=%lld", (long long)json_integer_value(json_object_get(k, "devices")));
}

size_t report_audit_each_failure(report_buf *b, const json_t *audit, size_t max, report_audit_failure_fn *emit) {
  const json_t *checks = json_object_get(audit, "checks");
  size_t shown = 0;
  for (size_t i = 0; i < json_array_size(checks) && (!max || shown < max); i++) {
    const json_t *k = json_array_get(checks, i);
    if (!report_audit_check_failed(k)) continue;
    char where[200];
    report_audit_check_where(k, where, sizeof where);
    emit(b, where, report_doc_str(k, "reason"));
    shown++;
  }
  return shown;
}
