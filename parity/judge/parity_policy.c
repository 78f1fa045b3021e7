#include "parity_policy.h"

#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_path.h"
#include "gdn_text.h"
#include "parity_json.h"

static const char *const metric_names[] = {"rel_fro", "max_abs", "max_rel", "max_ulp",
                                           "median_ulp", "block_rel", "elem_rel", "row_rel", NULL};

const char *parity_metric_name(parity_metric_id m) {
  return (unsigned)m < 8 ? metric_names[m] : "?";
}

double parity_metric_value(const parity_metrics *m, parity_metric_id id) {
  switch (id) {
  case PARITY_M_REL_FRO: return m->rel_fro;
  case PARITY_M_MAX_ABS: return m->max_abs;
  case PARITY_M_MAX_REL: return m->max_rel;
  case PARITY_M_MAX_ULP: return m->max_ulp;
  case PARITY_M_MEDIAN_ULP: return m->median_ulp;
  case PARITY_M_BLOCK_REL: return m->n_blocks ? m->block_rel : NAN; /* not computed: fails */
  case PARITY_M_ELEM_REL: return m->n_blocks ? m->elem_rel : NAN;
  case PARITY_M_ROW_REL: return m->row_rel;
  }
  return NAN;
}

void parity_policy_init(parity_policy *p) { memset(p, 0, sizeof *p); }

void parity_policy_clear(parity_policy *p) {
  gdn_free(p->rules);
  parity_policy_init(p);
}

int parity_policy_load_builtin(parity_policy *p, gdn_error *e) {
  int rc = parity_policy_parse(p, parity_policy_builtin_text(), "built in", e);
  if (!rc) p->builtin = 1;
  return rc;
}

const char *parity_policy_label(const parity_policy *p, char *buf, size_t n) {
  if (p->builtin) snprintf(buf, n, "the built-in policy");
  else snprintf(buf, n, "policy %s (name '%s')", gdn_text_show(p->source), gdn_text_show(p->name));
  return buf;
}

int parity_policy_load_file(parity_policy *p, const char *path, gdn_error *e) {
  FILE *f;
  int rc0 = gdn_path_fopen_input("--policy", path, &f, NULL, e); /* never blocks: a FIFO is refused */
  if (rc0) return rc0;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      size_t nc = cap ? cap * 2 : 8192;
      if (nc > (64u << 20)) {
        free(buf);
        fclose(f);
        return gdn_error_set(e, GDN_ERR_INPUT, "--policy %s: larger than 64 MiB", path);
      }
      char *nb = realloc(buf, nc);
      if (!nb) {
        free(buf);
        fclose(f);
        return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory reading --policy %s", path);
      }
      buf = nb;
      cap = nc;
    }
    size_t r = fread(buf + n, 1, 4096, f);
    n += r;
    if (r < 4096) break;
  }
  int rd_err = ferror(f);
  fclose(f);
  if (rd_err) {
    free(buf);
    return gdn_error_set(e, GDN_ERR_INPUT, "--policy %s: read error", path);
  }
  buf[n] = '\0';
  if (strlen(buf) != n) {
    free(buf);
    return gdn_error_set(e, GDN_ERR_INPUT, "--policy %s: contains a NUL byte; not JSON text", path);
  }
  int rc = parity_policy_parse(p, buf, path, e);
  free(buf);
  return rc;
}

static int name_mask(json_t *v, const char *const *names, unsigned *mask, const char *src,
                     size_t ri, const char *key, gdn_error *e) {
  *mask = 0;
  json_t *one;
  size_t i;
  if (json_is_string(v)) {
    json_t *arr = json_array();
    json_array_append(arr, v);
    int rc = name_mask(arr, names, mask, src, ri, key, e);
    json_decref(arr);
    return rc;
  }
  if (!json_is_array(v) || json_array_size(v) == 0)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "policy %s: rule %zu: \"%s\" must be a name or a non-empty list of names",
                         src, ri, key);
  json_array_foreach(v, i, one) {
    const char *s = json_string_value(one);
    int k = -1;
    for (int j = 0; s && names[j]; j++)
      if (!strcmp(names[j], s)) k = j;
    if (k < 0) {
      char all[200] = "";
      for (int j = 0; names[j]; j++) {
        strncat(all, j ? ", " : "", sizeof all - strlen(all) - 1);
        strncat(all, names[j], sizeof all - strlen(all) - 1);
      }
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu: \"%s\": unknown name %s%s%s; expected %s",
                           src, ri, key, s ? "'" : "", s ? s : "(not a string)", s ? "'" : "", all);
    }
    *mask |= 1u << k;
  }
  return GDN_OK;
}

static int get_number(json_t *r, const char *key, double *out, const char *src, size_t ri,
                      gdn_error *e) {
  json_t *v = json_object_get(r, key);
  if (!v) return 0;
  if (!json_is_number(v)) {
    gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu: \"%s\" must be a number", src, ri, key);
    return -1;
  }
  double x = json_number_value(v);
  if (!(x > 0) || !isfinite(x)) {
    gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu: \"%s\" = %g must be positive and finite",
                  src, ri, key, x);
    return -1;
  }
  *out = x;
  return 1;
}

/* Limits, factor and floors: which a kind takes, and the subjects it may
 * judge (a relative or vs-scan rule cannot judge the scan itself). */
static int parse_limits(json_t *r, size_t ri, const char *src, const char *id, parity_rule *out, gdn_error *e) {
  static const char *const kinds[] = {"absolute", "relative", "vs-scan", "localized", NULL};
  int hl, hlu, hf, hfl, hflu, hk;
  if ((hk = get_number(r, "kappa_g_u", &out->kappa_g_u, src, ri, e)) < 0 ||
      (hl = get_number(r, "limit", &out->limit, src, ri, e)) < 0 ||
      (hlu = get_number(r, "limit_u", &out->limit_u, src, ri, e)) < 0 ||
      (hf = get_number(r, "factor", &out->factor, src, ri, e)) < 0 ||
      (hfl = get_number(r, "floor", &out->floor, src, ri, e)) < 0 ||
      (hflu = get_number(r, "floor_u", &out->floor_u, src, ri, e)) < 0)
    return GDN_ERR_INPUT;
  if (hk && out->kind != PARITY_RULE_ABSOLUTE && out->kind != PARITY_RULE_VS_SCAN)
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"kappa_g_u\" widens an absolute or vs-scan band; "
                         "a %s rule follows the scan's own error already", src, ri, id, kinds[out->kind]);
  if (out->kind == PARITY_RULE_LOCALIZED && out->metric != PARITY_M_BLOCK_REL && out->metric != PARITY_M_ELEM_REL &&
      out->metric != PARITY_M_MAX_REL)
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): a localized rule judges \"block_rel\", \"elem_rel\" or \"max_rel\", not %s",
                         src, ri, id, parity_metric_name(out->metric));
  if (out->kind == PARITY_RULE_RELATIVE || out->kind == PARITY_RULE_LOCALIZED) {
    if (!hf || hl || hlu)
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): a %s rule takes \"factor\" (and \"floor\" or \"floor_u\"), not a limit",
                           src, ri, id, kinds[out->kind]);
    if (hfl && hflu)
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): give \"floor\" or \"floor_u\", not both", src, ri, id);
    if (out->subjects & PARITY_SUBJ_SCAN)
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): a %s rule judges against the scan; its subject cannot be the scan",
                           src, ri, id, kinds[out->kind]);
    if (!out->subjects) out->subjects = PARITY_SUBJ_AFFINE | PARITY_SUBJ_EXTERNAL;
    out->oracle = 1;
  } else {
    if (!(hl ^ hlu) || hf || hfl || hflu)
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): an %s rule takes exactly one of \"limit\" or \"limit_u\"",
                           src, ri, id, kinds[out->kind]);
    if (out->kind == PARITY_RULE_VS_SCAN) {
      if (out->subjects & PARITY_SUBJ_SCAN)
        return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): a vs-scan rule cannot judge the scan against itself",
                             src, ri, id);
      if (!out->subjects) out->subjects = PARITY_SUBJ_AFFINE | PARITY_SUBJ_EXTERNAL;
    } else {
      if (!out->subjects) out->subjects = PARITY_SUBJ_SCAN | PARITY_SUBJ_AFFINE | PARITY_SUBJ_EXTERNAL;
      out->oracle = 1;
    }
  }
  return GDN_OK;
}

static int parse_rule(json_t *r, size_t ri, const char *src, parity_rule *out, gdn_error *e) {
  static const char *const allowed[] = {"id", "kind", "subject", "dtype", "matmul", "oracle",
                                        "tensors", "metric", "limit", "limit_u", "factor",
                                        "floor", "floor_u", "reason", "output", "kappa_g_u", "model", NULL};
  static const char *const kinds[] = {"absolute", "relative", "vs-scan", "localized", NULL};
  static const char *const dtypes[] = {"float32", "bfloat16", "float64", NULL};
  static const char *const matmuls[] = {"ieee", "default", "high", "highest", NULL};
  const char *tensors[PARITY_T_N + 1];
  for (int i = 0; i < PARITY_T_N; i++) tensors[i] = parity_tensors[i].name;
  tensors[PARITY_T_N] = NULL;
  memset(out, 0, sizeof *out);
  if (!json_is_object(r))
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu is not an object", src, ri);
  char where[600];
  snprintf(where, sizeof where, "policy %s: rule %zu", src, ri);
  int krc = parity_json_check_keys(r, allowed, where, "", e);
  if (krc) return krc;
  const char *id = json_string_value(json_object_get(r, "id"));
  if (!id || !*id || strlen(id) >= sizeof out->id)
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu: \"id\" must be a string of 1..%zu characters",
                         src, ri, sizeof out->id - 1);
  snprintf(out->id, sizeof out->id, "%s", id);
  const char *reason = json_string_value(json_object_get(r, "reason"));
  if (!reason || !*reason)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "policy %s: rule %zu (%s): \"reason\" is required: say where the limit comes from",
                         src, ri, id);
  if (strlen(reason) >= sizeof out->reason)
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"reason\" is longer than %zu characters",
                         src, ri, id, sizeof out->reason - 1);
  snprintf(out->reason, sizeof out->reason, "%s", reason);
  unsigned m;
  json_t *v;
  int rc;
  if (!(v = json_object_get(r, "kind")))
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"kind\" is required", src, ri, id);
  if ((rc = name_mask(v, kinds, &m, src, ri, "kind", e))) return rc;
  if (!json_is_string(v))
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"kind\" must be one name", src, ri, id);
  out->kind = (parity_rule_kind)__builtin_ctz(m);
  if ((v = json_object_get(r, "subject")) && (rc = name_mask(v, parity_subject_kind_names, &out->subjects, src, ri, "subject", e)))
    return rc;
  if ((v = json_object_get(r, "dtype")) && (rc = name_mask(v, dtypes, &out->dtypes, src, ri, "dtype", e)))
    return rc;
  if ((v = json_object_get(r, "matmul")) && (rc = name_mask(v, matmuls, &out->matmuls, src, ri, "matmul", e)))
    return rc;
  if ((v = json_object_get(r, "output")) && (rc = name_mask(v, dtypes, &out->outputs, src, ri, "output", e)))
    return rc;
  out->tensors = PARITY_TENSOR_FORWARD; /* absent: o and ht (gradient rules name theirs) */
  if ((v = json_object_get(r, "tensors")) && (rc = name_mask(v, tensors, &out->tensors, src, ri, "tensors", e)))
    return rc;
  out->oracle = -1;
  if ((v = json_object_get(r, "oracle"))) {
    if (!json_is_boolean(v))
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"oracle\" must be true or false", src, ri, id);
    out->oracle = json_is_true(v);
  }
  if (!(v = json_object_get(r, "metric")) || !json_is_string(v))
    return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"metric\" must be one of rel_fro, max_abs, max_rel, max_ulp, median_ulp, block_rel, elem_rel",
                         src, ri, id);
  if ((rc = name_mask(v, metric_names, &m, src, ri, "metric", e))) return rc;
  out->metric = (parity_metric_id)__builtin_ctz(m);
  if ((v = json_object_get(r, "model"))) {
    if (!json_is_boolean(v))
      return gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule %zu (%s): \"model\" must be true or false", src, ri, id);
    out->model = json_is_true(v);
    const int ok = out->metric == PARITY_M_REL_FRO || out->metric == PARITY_M_BLOCK_REL ||
                   out->metric == PARITY_M_ELEM_REL || out->metric == PARITY_M_ROW_REL;
    if (out->model && (!ok || out->kind == PARITY_RULE_VS_SCAN))
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "policy %s: rule %zu (%s): \"model\" applies to absolute, relative and localized rules on "
                           "rel_fro, block_rel, elem_rel or row_rel",
                           src, ri, id);
  }
  return parse_limits(r, ri, src, id, out, e);
}

int parity_policy_parse(parity_policy *p, const char *text, const char *source, gdn_error *e) {
  parity_policy_clear(p);
  json_t *root;
  int rc = parity_json_loads(text, "policy", source, &root, e);
  if (rc) return rc;
  json_t *rules = json_object_get(root, "rules");
  const char *name = json_string_value(json_object_get(root, "name"));
  static const char *const top[] = {"name", "description", "rules", "version", NULL};
  char where[600];
  snprintf(where, sizeof where, "policy %s", source);
  if ((rc = parity_json_check_keys(root, top, where, "top-level ", e))) goto done;
  if (!json_is_object(root) || !name || !json_is_array(rules) || json_array_size(rules) == 0) {
    rc = gdn_error_set(e, GDN_ERR_INPUT,
                       "policy %s: expected an object with \"name\" (string) and \"rules\" (non-empty list)",
                       source);
    goto done;
  }
  json_t *ver = json_object_get(root, "version");
  if (ver && !(json_is_integer(ver) && json_integer_value(ver) == 1)) {
    rc = gdn_error_set(e, GDN_ERR_INPUT, "policy %s: unsupported \"version\" (this tool reads version 1)", source);
    goto done;
  }
  size_t n = json_array_size(rules);
  p->rules = gdn_calloc(n, sizeof *p->rules, "policy rules", e);
  if (!p->rules) {
    rc = e ? e->code : GDN_ERR_NOMEM;
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    if ((rc = parse_rule(json_array_get(rules, i), i, source, &p->rules[i], e))) goto done;
    for (size_t j = 0; j < i; j++)
      if (!strcmp(p->rules[j].id, p->rules[i].id)) {
        rc = gdn_error_set(e, GDN_ERR_INPUT, "policy %s: rule id \"%s\" is used twice", source,
                           p->rules[i].id);
        goto done;
      }
  }
  p->n_rules = n;
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->source, sizeof p->source, "%s", source);
  unsigned char md[32];
  unsigned int mdlen = 0;
  if (!EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
    rc = gdn_error_set(e, GDN_ERR_INTERNAL, "SHA-256 of the policy failed");
    goto done;
  }
  for (int i = 0; i < 32; i++) snprintf(p->sha256 + 2 * i, 3, "%02x", md[i]);
done:
  json_decref(root);
  if (rc) parity_policy_clear(p);
  return rc;
}

int parity_policy_uses_model(const parity_policy *p) {
  for (size_t i = 0; p && i < p->n_rules; i++)
    if (p->rules[i].model) return 1;
  return 0;
}

static double unit_u(gdn_dtype t) { return gdn_dtype_unit_roundoff(t); }

static void fmt_g(char *buf, size_t n, double x) { snprintf(buf, n, "%.3g", x); }

void parity_checks_init(parity_checks *c) { memset(c, 0, sizeof *c); }

void parity_checks_clear(parity_checks *c) {
  gdn_free(c->v);
  parity_checks_init(c);
}

parity_check *parity_checks_push(parity_checks *c, gdn_error *e) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? 2 * c->cap : 16;
    parity_check *nv = gdn_calloc(nc, sizeof *nv, "policy checks", e);
    if (!nv) return NULL;
    if (c->n) memcpy(nv, c->v, c->n * sizeof *nv);
    gdn_free(c->v);
    c->v = nv;
    c->cap = nc;
  }
  parity_check *k = &c->v[c->n++];
  memset(k, 0, sizeof *k);
  return k;
}

int parity_checks_subject_pass(const parity_checks *c, size_t si) {
  int pass = 1;
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i].subject_index == si) pass &= c->v[i].pass;
  return pass;
}

/* The deciding rule over checks[i] for which `take(i)`: the first failing,
 * else the largest value / limit (the first on ties). */
static size_t decide(const parity_check *v, size_t n, int only, size_t si) {
  size_t best = SIZE_MAX;
  double worst = -1;
  for (size_t i = 0; i < n; i++) {
    if (only && v[i].subject_index != si) continue;
    if (!v[i].pass) return i;
    double q = v[i].limit > 0 ? v[i].value / v[i].limit : 0;
    if (best == SIZE_MAX || q > worst) worst = q, best = i;
  }
  return best;
}

size_t parity_checks_subject_deciding(const parity_checks *c, size_t si) {
  return decide(c->v, c->n, 1, si);
}

/* The numerics a subject is held to: its own when it declared them. */
static void subject_numerics(const parity_case_view *c, const parity_subject *s, gdn_dtype *dt,
                             kern_matmul *mm) {
  *dt = s->own_numerics ? s->dtype : c->dtype;
  *mm = s->own_numerics ? s->matmul : c->matmul;
}

/* The metrics rule r judges for subject s and tensor ti, or NULL when r
 * does not apply to that pair. */
static const parity_metrics *rule_target(const parity_rule *r, const parity_case_view *c,
                                         const parity_subject *s, int ti) {
  gdn_dtype dt;
  kern_matmul mm;
  subject_numerics(c, s, &dt, &mm);
  int same = dt == c->dtype && mm == c->matmul;
  if (r->dtypes && !(r->dtypes & (1u << dt))) return NULL;
  if (r->matmuls && !(r->matmuls & (1u << mm))) return NULL;
  if (r->kind != PARITY_RULE_ABSOLUTE && !same) return NULL; /* the scan baseline has the case's numerics */
  if (r->outputs && !(r->outputs & (1u << s->out_dtype[ti]))) return NULL;
  if (!(r->subjects & s->kind)) return NULL;
  if ((r->kind == PARITY_RULE_RELATIVE || r->kind == PARITY_RULE_LOCALIZED) && !c->scan_vs_oracle[ti]) return NULL;
  const parity_metrics *m = r->kind == PARITY_RULE_VS_SCAN ? s->vs_scan[ti] : s->vs_oracle[ti];
  /* an absolute rule that follows the model item by item has no limit of its own where there is
   * none; a normwise one (rel_fro) keeps its constant, which the model only raises (model_apply) */
  if (m && r->model && r->kind == PARITY_RULE_ABSOLUTE && r->metric != PARITY_M_REL_FRO && !m->model.has)
    return NULL;
  return m;
}

/* The last seam at or before position t (0: none), from the view's seams. */
static int64_t seam_before(const parity_case_view *c, int64_t t) {
  int64_t dev = 0;
  for (size_t i = 0; i < c->n_seams; i++)
    if (c->seam_t[i] <= t) dev = (int64_t)i + 1;
  return dev;
}

/* A row whose axis 1 is the token position (o and the token-axis
 * gradients), where device seams lie. */
static int token_axis(const parity_tensor *pt) { return !strcmp(pt->index_names[1], "t"); }

void parity_check_locate(parity_check *k, const parity_case_view *c, int ti, const parity_metrics *m,
                         parity_metric_id id) {
  const parity_tensor *pt = &parity_tensors[ti];
  char *w = k->where;
  size_t n = sizeof k->where;
  if (id == PARITY_M_MAX_REL || id == PARITY_M_ELEM_REL) {
    const int64_t *at = id == PARITY_M_MAX_REL ? m->rel_at : m->elem_at;
    int o = snprintf(w, n, "worst element %s=%lld %s=%lld %s=%lld %s=%lld", pt->index_names[0], (long long)at[0],
                     pt->index_names[1], (long long)at[1], pt->index_names[2], (long long)at[2],
                     pt->index_names[3], (long long)at[3]);
    int64_t dev = token_axis(pt) ? seam_before(c, at[1]) : 0;
    if (dev && o > 0 && (size_t)o < n)
      snprintf(w + o, n - (size_t)o, ", %lld tokens after the seam of device %lld (t=%lld)",
               (long long)(at[1] - c->seam_t[dev - 1]), (long long)dev, (long long)c->seam_t[dev - 1]);
  } else if (token_axis(pt)) {
    int64_t t0 = m->block_lo[1], dev = seam_before(c, t0);
    int o = snprintf(w, n, "worst block b=%lld h=%lld t=[%lld, %lld)", (long long)m->block_lo[0],
                     (long long)m->block_lo[2], (long long)t0, (long long)m->block_hi[1]);
    if (dev && o > 0 && (size_t)o < n)
      snprintf(w + o, n - (size_t)o, ", %lld tokens after the seam of device %lld (t=%lld)",
               (long long)(t0 - c->seam_t[dev - 1]), (long long)dev, (long long)c->seam_t[dev - 1]);
  } else {
    snprintf(w, n, "worst block b=%lld h=%lld", (long long)m->block_lo[0], (long long)m->block_lo[1]);
  }
}

/* The band that follows the stock algorithm's condition measure
 * (parity_policy.h): c kappa_G u_G, 0 when the rule has none.  Absolute
 * bands and the vs-scan ones of --oracle none: two implementations whose
 * chunks fall differently (token shards padded to whole chunks) round G
 * differently, so they differ by about as much as each errs.  u_G is the
 * unit roundoff of the dtype G is summed in: float32 for float32 and
 * bfloat16 compute (kern_chunk_tmpl.h keeps g and G in float32), binary64
 * for float64.  A NaN kappa_G gives a NaN limit, which fails. */
static double kappa_limit(const parity_rule *r, const parity_case_view *c, gdn_dtype dt, int ti) {
  const double kg = c->kappa_g[ti];
  if ((r->kind != PARITY_RULE_ABSOLUTE && r->kind != PARITY_RULE_VS_SCAN) || !(r->kappa_g_u > 0) || !(kg != 0))
    return 0;
  double ug = dt == GDN_DTYPE_F64 ? 0x1p-53 : 0x1p-24;
  return isnan(kg) ? NAN : r->kappa_g_u * kg * ug;
}

/* A tensor with NaN or inf values fails every check on it, whatever the
 * metric reads (a NaN row can drop out of a maximum): the check says how
 * many and where the first is (the lowest flat index, parity_metrics.h). */
static void check_nonfinite(parity_check *k, int ti, const parity_metrics *m) {
  const parity_tensor *pt = &parity_tensors[ti];
  k->nonfinite = m->nonfinite;
  k->pass = 0;
  int o = snprintf(k->where, sizeof k->where, "%lld non-finite value%s (NaN or inf) in %s, the first at",
                   (long long)m->nonfinite, m->nonfinite == 1 ? "" : "s", pt->name);
  for (int a = 0; a < 4 && o > 0 && (size_t)o < sizeof k->where; a++)
    if (strcmp(pt->index_names[a], "_")) /* "_": the axis of length 1 of dg, dbeta */
      o += snprintf(k->where + o, sizeof k->where - (size_t)o, " %s=%lld", pt->index_names[a],
                    (long long)m->nonfinite_at[a]);
}

/* Where the model's deciding item sits: flat index `at` of an element, a
 * row or a block of the tensor. */
static void model_locate(parity_check *k, const parity_case_view *c, int ti, const parity_metrics *m, int64_t at) {
  const parity_tensor *pt = &parity_tensors[ti];
  const parity_model_stats *ms = &m->model;
  parity_metrics tmp = *m;
  int64_t idx[4], dims[4];
  const int metric = k->rule->metric;
  memcpy(dims, ms->dims, sizeof dims);
  if (metric == PARITY_M_ROW_REL) at *= dims[3];
  if (metric == PARITY_M_BLOCK_REL)
    for (int a = 0; a < 4; a++) dims[a] = (ms->dims[a] + ms->bl[a] - 1) / ms->bl[a];
  for (int a = 3; a >= 0; a--) {
    idx[a] = dims[a] > 0 ? at % dims[a] : 0;
    at = dims[a] > 0 ? at / dims[a] : 0;
  }
  if (metric == PARITY_M_ELEM_REL) {
    memcpy(tmp.elem_at, idx, sizeof idx);
    parity_check_locate(k, c, ti, &tmp, PARITY_M_ELEM_REL);
  } else if (metric == PARITY_M_BLOCK_REL) {
    for (int a = 0; a < 4; a++) {
      tmp.block_lo[a] = idx[a] * ms->bl[a];
      tmp.block_hi[a] = tmp.block_lo[a] + ms->bl[a] < ms->dims[a] ? tmp.block_lo[a] + ms->bl[a] : ms->dims[a];
    }
    parity_check_locate(k, c, ti, &tmp, PARITY_M_BLOCK_REL);
  } else {
    snprintf(k->where, sizeof k->where, "worst token %s=%lld %s=%lld %s=%lld", pt->index_names[0], (long long)idx[0],
             pt->index_names[1], (long long)idx[1], pt->index_names[2], (long long)idx[2]);
  }
}

/* The error model (parity_kappa_model.h) where the rule asks for it and the
 * case has one.  A normwise rule's limit widens to its factor x the
 * model's normwise scale ||s||_F / ||r||_F when that is larger (the model
 * as one more floor of "factor x max(scan, floor)").  A localized or per-token rule keeps
 * its limit L and judges each element, row or block i by
 * min(a_i, q_i / L) (parity_model_stats): value = L x the largest of those,
 * so value <= L exactly when every item is within its model bound or within
 * L relatively; an item's a_i and a_i x lambda (standard errors) are
 * recorded for the deciding one. */
static void model_apply(parity_check *k, const parity_rule *r, const parity_case_view *c, int ti,
                        const parity_metrics *m) {
  const parity_model_stats *ms = &m->model;
  k->has_model = 1;
  k->model_raw = k->value;
  const size_t nl = strlen(k->name);
  if (r->metric == PARITY_M_REL_FRO) { /* the model's normwise scale is one more floor of the rule */
    const double f = fmax(r->kind == PARITY_RULE_ABSOLUTE ? 1 : r->factor, ms->fro_tail); /* the norm's tail */
    k->model_lambda = f;
    k->model_bound = f * ms->fro;
    k->model_ratio = k->model_bound > 0 ? k->value / k->model_bound : INFINITY;
    k->model_sig = ms->fro > 0 ? k->value / ms->fro : INFINITY;
    if (k->model_bound > k->limit) {
      k->limit = k->model_bound;
      k->model_widened = 1;
      snprintf(k->name + nl, sizeof k->name - nl, " or %g x model %.3g", f, ms->fro);
    }
    k->factor_reached = k->value / k->limit * f;
    return;
  }
  const parity_model_front *f = r->metric == PARITY_M_ELEM_REL    ? &ms->elem
                                : r->metric == PARITY_M_BLOCK_REL ? &ms->block
                                                                  : &ms->row;
  k->model_lambda = r->metric == PARITY_M_ELEM_REL ? ms->lam_elem : r->metric == PARITY_M_BLOCK_REL ? ms->lam_block : ms->lam_row;
  int64_t at;
  const double rho = parity_model_front_rho(f, k->limit, &k->model_ratio, &at);
  k->model_sig = k->model_ratio * k->model_lambda;
  k->value = rho * k->limit;
  k->factor_reached = rho * (r->kind == PARITY_RULE_ABSOLUTE ? 1 : r->factor);
  if (at >= 0) model_locate(k, c, ti, m, at); /* the name stays the rule's: the figures are k->model_* */
}

/* Value, effective limit, factor reached and the check's name. */
static void fill_check(parity_check *k, const parity_rule *r, const parity_case_view *c,
                       const parity_subject *s, int ti, const parity_metrics *m) {
  const char *tn = parity_tensors[ti].name;
  gdn_dtype dt;
  kern_matmul mm;
  subject_numerics(c, s, &dt, &mm);
  double u = unit_u(dt);
  k->rule = r;
  k->subject = s->name;
  k->tensor = 1 << ti;
  k->value = parity_metric_value(m, r->metric);
  char lb[48];
  if (r->kind == PARITY_RULE_ABSOLUTE || r->kind == PARITY_RULE_VS_SCAN) {
    k->limit = r->limit ? r->limit : r->limit_u * u;
    double wide = kappa_limit(r, c, dt, ti);
    if (wide > k->limit || isnan(wide)) k->limit = wide, k->kappa_g = c->kappa_g[ti];
    k->factor_reached = k->value / k->limit;
    fmt_g(lb, sizeof lb, k->limit);
    if (k->kappa_g > 0 || isnan(k->kappa_g))
      snprintf(k->name, sizeof k->name, "%s%s %s %s <= %s = %g kappa_G u (kappa_G = %.4g: the stock algorithm's G)",
               s->name, r->kind == PARITY_RULE_VS_SCAN ? " vs scan" : "", tn, parity_metric_name(r->metric), lb,
               r->kappa_g_u, k->kappa_g);
    else
      snprintf(k->name, sizeof k->name, "%s%s %s %s <= %s", s->name,
               r->kind == PARITY_RULE_VS_SCAN ? " vs scan" : "", tn, parity_metric_name(r->metric), lb);
  } else {
    double base = parity_metric_value(c->scan_vs_oracle[ti], r->metric);
    double fl = r->floor ? r->floor : r->floor_u * u;
    double allow = base > fl ? base : fl;
    k->limit = r->factor * allow;
    k->factor_reached = allow > 0 ? k->value / allow : INFINITY;
    char fb[32];
    if (r->floor_u) snprintf(fb, sizeof fb, "%gu", r->floor_u);
    else fmt_g(fb, sizeof fb, fl);
    snprintf(k->name, sizeof k->name, "%s %s %s <= %g x max(scan, %s)", s->name, tn,
             parity_metric_name(r->metric), r->factor, fb);
  }
  if (r->metric == PARITY_M_BLOCK_REL || r->metric == PARITY_M_ELEM_REL || r->metric == PARITY_M_MAX_REL)
    parity_check_locate(k, c, ti, m, r->metric);
  /* the model was computed under the case's numerics: an output judged under its own others (an
   * absolute band) keeps the band's own limit */
  if (r->model && m->model.has && dt == c->dtype && mm == c->matmul) model_apply(k, r, c, ti, m);
  k->pass = k->value <= k->limit; /* NaN fails */
  if (m->nonfinite) check_nonfinite(k, ti, m);
}

/* Gradients (docs/gradients.md) are covered tensor by tensor: a subject's o
 * rules must not let its measured gradients pass unjudged (a fixture output
 * declaring numerics no gradient rule names, e.g. bfloat16 compute). */
static int check_grad_coverage(const parity_policy *p, const parity_case_view *c, const parity_checks *out,
                               gdn_error *e) {
  for (size_t si = 0; si < c->n_subjects; si++) {
    const parity_subject *s = &c->subjects[si];
    for (int ti = 0; ti < PARITY_T_N; ti++) {
      if (!parity_tensors[ti].grad || (!s->vs_oracle[ti] && !s->vs_scan[ti])) continue;
      size_t k = 0;
      while (k < out->n && !(out->v[k].subject_index == si && out->v[k].tensor == (int)(1u << ti))) k++;
      if (k < out->n) continue;
      gdn_dtype dt;
      kern_matmul mm;
      subject_numerics(c, s, &dt, &mm);
      char lab[700];
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s has no rule for the gradient %s of %s (dtype %s, matmul %s, %s oracle): "
                           "add one, or the gate would pass it unjudged",
                           parity_policy_label(p, lab, sizeof lab), parity_tensors[ti].name, s->name, gdn_dtype_name(dt), kern_matmul_name(mm),
                           c->has_oracle ? "with" : "without");
    }
  }
  return GDN_OK;
}

/* A policy must say something about everything it judges, or the gate
 * would pass what it never looked at. */
static int check_coverage(const parity_policy *p, const parity_case_view *c, const parity_checks *out,
                          gdn_error *e) {
  int rc;
  char lab[700];
  for (size_t si = 0; si < c->n_subjects; si++) {
    const parity_subject *s = &c->subjects[si];
    int has_metrics = 0;
    for (int ti = 0; ti < PARITY_T_N; ti++) has_metrics |= s->vs_oracle[ti] || s->vs_scan[ti];
    /* An external output is there to be judged: with nothing measured it
     * is an error too (the gate would report a pass it never looked at). */
    if (!has_metrics && s->kind == PARITY_SUBJ_EXTERNAL)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: nothing was measured (%s oracle), so it cannot be judged", s->name,
                           c->has_oracle ? "with" : "without");
    if (!has_metrics || parity_checks_subject_deciding(out, si) != SIZE_MAX) continue;
    gdn_dtype dt;
    kern_matmul mm;
    subject_numerics(c, s, &dt, &mm);
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s has no rule for %s (dtype %s, matmul %s, o rounded to %s, %s oracle): "
                         "add one, or the gate would pass it unjudged",
                         parity_policy_label(p, lab, sizeof lab), s->name, gdn_dtype_name(dt), kern_matmul_name(mm),
                         gdn_dtype_name(s->out_dtype[PARITY_T_O]), c->has_oracle ? "with" : "without");
  }
  if ((rc = check_grad_coverage(p, c, out, e))) return rc;
  if (out->n == 0)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s has no rule for this case (dtype %s, matmul %s, %s oracle)",
                         parity_policy_label(p, lab, sizeof lab), gdn_dtype_name(c->dtype), kern_matmul_name(c->matmul),
                         c->has_oracle ? "with" : "without");
  return GDN_OK;
}

int parity_policy_judge(const parity_policy *p, const parity_case_view *c, parity_checks *out, gdn_error *e) {
  out->n = 0;
  out->deciding = 0;
  for (size_t ri = 0; ri < p->n_rules; ri++) {
    const parity_rule *r = &p->rules[ri];
    if (r->oracle >= 0 && r->oracle != (c->has_oracle != 0)) continue;
    for (int ti = 0; ti < PARITY_T_N; ti++) {
      if (!(r->tensors & (1u << ti))) continue;
      for (size_t si = 0; si < c->n_subjects; si++) {
        const parity_metrics *m = rule_target(r, c, &c->subjects[si], ti);
        if (!m) continue;
        parity_check *k = parity_checks_push(out, e);
        if (!k) return GDN_ERR_NOMEM;
        fill_check(k, r, c, &c->subjects[si], ti, m);
        k->subject_index = si;
      }
    }
  }
  int rc = check_coverage(p, c, out, e);
  if (rc) return rc;
  out->deciding = decide(out->v, out->n, 0, 0);
  return GDN_OK;
}

int parity_policy_evaluate(const parity_policy *p, const parity_case_view *c, parity_check *out,
                           size_t cap, size_t *n, size_t *deciding, gdn_error *e) {
  *n = 0;
  *deciding = 0;
  parity_checks all;
  parity_checks_init(&all);
  int rc = parity_policy_judge(p, c, &all, e);
  if (!rc && all.n > cap) rc = gdn_error_set(e, GDN_ERR_INTERNAL, "more than %zu checks for one case", cap);
  if (!rc) {
    memcpy(out, all.v, all.n * sizeof *out);
    *n = all.n;
    *deciding = all.deciding;
  }
  parity_checks_clear(&all);
  return rc;
}
