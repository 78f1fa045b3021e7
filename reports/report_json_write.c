#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "report_doc.h"
#include "report_json.h"

/* The key order of docs/results-json.md, per kind of object.  A key's child
 * kind says how its value (or each element, for arrays of objects) is
 * ordered.  Keys added by reports (cases[].seconds, cases[].error) have their
 * documented place here too. */
typedef enum {
  K_ANY, K_ROOT, K_ORACLE, K_POLICY, K_INPUT, K_SHAPE, K_CASE, K_IMPLS, K_IMPL, K_METRICS,
  K_WORST, K_TOL, K_CHECK, K_UPSTREAM, K_PROFILE, K_SEAM, K_HIST, K_TIMING, K_SECONDS,
  K_ASIS /* the embedded audit: its producer's key order, kept */
} kind;

typedef struct key_rule {
  const char *key;
  kind child;
} key_rule;

#define END {NULL, K_ANY}
static const key_rule ROOT[] = {
    {"tool", K_ANY},     {"version", K_ANY}, {"git_commit", K_ANY}, {"schema", K_ANY},
    {"command", K_ANY},  {"created", K_ANY}, {"pass", K_ANY},       {"exit_status", K_ANY},
    {"oracle", K_ORACLE}, {"policy", K_POLICY}, {"inputs", K_INPUT}, {"cases", K_CASE},
    {"audit", K_ASIS}, {"timing", K_TIMING}, END};
static const key_rule ORACLE[] = {{"tier", K_ANY},       {"form", K_ANY},
                                  {"precision_bits", K_ANY}, {"check_bits", K_ANY},
                                  {"certified_bits", K_ANY}, END};
static const key_rule POLICY[] = {{"name", K_ANY}, {"source", K_ANY}, {"sha256", K_ANY}, END};
static const key_rule INPUT[] = {{"name", K_ANY},   {"source", K_ANY},
                                 {"path", K_ANY},   {"sha256", K_ANY},
                                 {"shape", K_SHAPE}, {"l2norm_in_kernel", K_ANY},
                                 {"h0", K_ANY},     {"bf16_inputs", K_ANY},
                                 {"oracle_certified_bits", K_ANY}, END};
static const key_rule SHAPE[] = {{"B", K_ANY},  {"T", K_ANY},  {"Hk", K_ANY}, {"Hv", K_ANY},
                                 {"Dk", K_ANY}, {"Dv", K_ANY}, END};
static const key_rule CASE[] = {{"id", K_ANY},
                                {"input", K_ANY},
                                {"shape", K_SHAPE},
                                {"chunk", K_ANY},
                                {"devices", K_ANY},
                                {"prefix", K_ANY},
                                {"dtype", K_ANY},
                                {"matmul_precision", K_ANY},
                                {"ftz", K_ANY},
                                {"output_dtype", K_ANY},
                                {"shards", K_ANY},
                                {"impls", K_IMPLS},
                                {"affine_vs_scan", K_IMPL},
                                {"tolerance", K_TOL},
                                {"upstream", K_UPSTREAM},
                                {"profile", K_PROFILE},
                                {"seams", K_SEAM},
                                {"ulp_histogram", K_HIST},
                                {"seconds", K_ANY},
                                {"error", K_ANY},
                                {"pass", K_ANY},
                                END};
/* impls: scan and affine-prefix first; fixture outputs follow by name. */
static const key_rule IMPLS[] = {{"scan", K_IMPL}, {"affine-prefix", K_IMPL}, END};
static const key_rule IMPL[] = {
    {"o", K_METRICS}, {"ht", K_METRICS}, {"pass", K_ANY}, {"attrs", K_ANY}, END};
static const key_rule METRICS[] = {{"max_abs", K_ANY},   {"rel_fro", K_ANY},
                                   {"max_ulp", K_ANY},   {"median_ulp", K_ANY},
                                   {"max_rel", K_ANY},   {"rel_floor", K_ANY},
                                   {"zero_ref", K_ANY},  {"nonfinite", K_ANY},
                                   {"n", K_ANY},         {"worst", K_WORST},
                                   {"first_nonfinite", K_WORST}, END};
static const key_rule WORST[] = {{"b", K_ANY},  {"t", K_ANY},  {"h", K_ANY},
                                 {"d", K_ANY},  {"dk", K_ANY}, {"dv", K_ANY}, END};
static const key_rule TOL[] = {{"checks", K_CHECK}, {"deciding", K_ANY}, END};
static const key_rule CHECK[] = {{"name", K_ANY},  {"metric", K_ANY}, {"value", K_ANY},
                                 {"limit", K_ANY}, {"pass", K_ANY},   {"reason", K_ANY},
                                 {"factor_reached", K_ANY}, END};
static const key_rule UPSTREAM[] = {{"name", K_ANY}, {"pass", K_ANY}, {"detail", K_ANY}, END};
static const key_rule PROFILE[] = {{"block", K_ANY}, {"t0", K_ANY},
                                   {"ref_max_abs", K_ANY}, {"scan", K_ANY},
                                   {"affine-prefix", K_ANY}, {"affine_vs_scan", K_ANY}, END};
static const key_rule SEAM[] = {{"device", K_ANY},        {"chunk", K_ANY},
                                {"t", K_ANY},             {"scan", K_ANY},
                                {"affine-prefix", K_ANY}, {"affine_vs_scan", K_ANY},
                                {"state_rel", K_ANY},     END};
static const key_rule HIST[] = {{"edges", K_ANY}, {"scan", K_ANY}, {"affine-prefix", K_ANY}, END};
static const key_rule TIMING[] = {{"seconds", K_SECONDS}, {"threads", K_ANY}, END};
static const key_rule SECONDS[] = {{"oracle", K_ANY}, {"kernels", K_ANY}, {"total", K_ANY}, END};

static const key_rule *rules(kind k) {
  switch (k) {
  case K_ROOT: return ROOT;
  case K_ORACLE: return ORACLE;
  case K_POLICY: return POLICY;
  case K_INPUT: return INPUT;
  case K_SHAPE: return SHAPE;
  case K_CASE: return CASE;
  case K_IMPLS: return IMPLS;
  case K_IMPL: return IMPL;
  case K_METRICS: return METRICS;
  case K_WORST: return WORST;
  case K_TOL: return TOL;
  case K_CHECK: return CHECK;
  case K_UPSTREAM: return UPSTREAM;
  case K_PROFILE: return PROFILE;
  case K_SEAM: return SEAM;
  case K_HIST: return HIST;
  case K_TIMING: return TIMING;
  case K_SECONDS: return SECONDS;
  case K_ANY:
  case K_ASIS: break;
  }
  return NULL;
}

/* Unknown keys of an object of kind k: the child kind (impls' fixture
 * outputs are IMPL objects; everything else is ordered generically). */
static kind unknown_child(kind k) { return k == K_IMPLS ? K_IMPL : K_ANY; }

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *ordered(const json_t *j, kind k);

static int set_ordered(json_t *out, const char *key, const json_t *val, kind k) {
  json_t *c = ordered(val, k);
  return c ? json_object_set_new(out, key, c) : -1;
}

static json_t *ordered_object(const json_t *j, kind k) {
  json_t *out = json_object();
  if (!out) return NULL;
  const key_rule *r = rules(k);
  size_t n = json_object_size(j), nu = 0;
  /* Schema objects have a few dozen keys: the heap only for larger ones. */
  const char *small[64];
  const char **unknown =
      n <= 64 ? small : gdn_malloc(n * sizeof *unknown, "the key order", NULL);
  if (!unknown) goto fail;
  if (r)
    for (const key_rule *x = r; x->key; x++) {
      const json_t *v = json_object_get(j, x->key);
      if (v && set_ordered(out, x->key, v, x->child)) goto fail;
    }
  const char *key;
  const json_t *val;
  json_object_foreach((json_t *)j, key, val) {
    int named = 0;
    if (r)
      for (const key_rule *x = r; x->key && !named; x++) named = !strcmp(x->key, key);
    if (!named) unknown[nu++] = key;
  }
  /* Byte order of the names: independent of insertion order. */
  qsort(unknown, nu, sizeof *unknown, cmp_str);
  for (size_t i = 0; i < nu; i++)
    if (set_ordered(out, unknown[i], json_object_get(j, unknown[i]), unknown_child(k))) goto fail;
  if (unknown != small) gdn_free(unknown);
  return out;
fail:
  if (unknown != small) gdn_free(unknown);
  json_decref(out);
  return NULL;
}

static json_t *ordered(const json_t *j, kind k) {
  if (k == K_ASIS) return json_deep_copy(j);
  if (json_is_object(j)) return ordered_object(j, k);
  if (json_is_array(j)) {
    json_t *out = json_array();
    if (!out) return NULL;
    for (size_t i = 0; i < json_array_size(j); i++) {
      json_t *c = ordered(json_array_get(j, i), k);
      if (!c || json_array_append_new(out, c)) {
        json_decref(out);
        return NULL;
      }
    }
    return out;
  }
  return json_deep_copy(j);
}

static int dump_cb(const char *buffer, size_t size, void *data) {
  report_buf *b = data;
  report_buf_append(b, buffer, size);
  return b->err.code ? -1 : 0;
}

int report_json_render(const json_t *doc, report_buf *b, gdn_error *e) {
  int rc = report_doc_validate(doc, "results document", e);
  if (rc) return rc;
  json_t *o = ordered(doc, K_ROOT);
  if (!o) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory ordering the results document");
  /* JSON_REAL_PRECISION(17): %.17g, enough to read every double back
   * exactly; jansson keeps a ".0" on integral reals so types survive. */
  size_t flags = JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER;
  int d = json_dump_callback(o, dump_cb, b, flags);
  json_decref(o);
  if (d == 0) report_buf_putc(b, '\n');
  if ((rc = report_buf_status(b, "rendering the results document", e))) return rc;
  if (d) return gdn_error_set(e, GDN_ERR_INTERNAL, "jansson could not serialise the document");
  return GDN_OK;
}

int report_json_write(const json_t *doc, const char *path, gdn_error *e) {
  report_buf b;
  report_buf_init(&b);
  return report_buf_write_file(&b, report_json_render(doc, &b, e), path, e);
}
