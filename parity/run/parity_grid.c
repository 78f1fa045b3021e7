#include "parity_grid.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_cli.h"
#include "gdn_path.h"
#include "parity_json.h"

static int apply_heads(parity_synth_spec *sp, int64_t hk, int64_t dv, const char *where,
                       gdn_error *e) {
  if (hk > 0) {
    if (sp->shape.Hv % hk)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s: key heads %" PRId64 " do not divide the %" PRId64 " value heads", where,
                           hk, sp->shape.Hv);
    sp->shape.Hk = hk;
  }
  if (dv > 0) sp->shape.Dv = dv;
  return GDN_OK;
}

/* The synthetic inputs' two-valued switches: the word for the flag clear,
 * the word for it set.  One parser, so the options and the grid's keys
 * accept and refuse alike. */
typedef struct {
  const char *off, *on;
  unsigned flag;
} synth_switch;

static const synth_switch QK_NORM = {"in-kernel", "pre", GDN_SYNTH_QK_PRENORM};
static const synth_switch GATES = {"init", "slow", GDN_SYNTH_SLOW_GATES};
static const synth_switch PRELUDE = {"none", "bfloat16", GDN_SYNTH_PRELUDE_BF16};

static int parse_switch(const synth_switch *sw, const char *s, unsigned *flags, const char *where, gdn_error *e) {
  if (!strcmp(s, sw->off)) *flags &= ~sw->flag;
  else if (!strcmp(s, sw->on)) *flags |= sw->flag;
  else
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': expected %s or %s", where, s, sw->off, sw->on);
  return GDN_OK;
}

static int parse_qk_norm(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  return parse_switch(&QK_NORM, s, flags, where, e);
}

static int parse_gates(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  return parse_switch(&GATES, s, flags, where, e);
}

int parity_parse_prelude(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  return parse_switch(&PRELUDE, s, flags, where, e);
}

static int parse_input_dtype(const char *s, unsigned *mask, const char *where, gdn_error *e) {
  if (!strcmp(s, "float32")) *mask = 0;
  else if (!strcmp(s, "bfloat16")) *mask = GDN_T_Q | GDN_T_K | GDN_T_V | GDN_T_BETA;
  else
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s '%s': expected float32 or bfloat16 (g is always float32)", where, s);
  return GDN_OK;
}

int parity_synth_spec_from_cli(parity_synth_spec *sp, const char *shape_str, const char *key_heads,
                               const char *dv, const char *seed, int h0, const char *qk_norm,
                               const char *input_dtype, const char *gates, gdn_error *e) {
  memset(sp, 0, sizeof *sp);
  int rc;
  int64_t hk = 0, d = 0;
  if (key_heads && (rc = gdn_cli_int64(key_heads, "--key-heads", 1, INT32_MAX, &hk, e))) return rc;
  if (dv && (rc = gdn_cli_int64(dv, "--dv", 1, INT32_MAX, &d, e))) return rc;
  if (shape_str) {
    if ((rc = gdn_shape_parse(&sp->shape, shape_str, "--shape", e))) return rc;
    sp->have_shape = 1;
    if ((rc = apply_heads(sp, hk, d, "--key-heads", e))) return rc;
    if ((rc = gdn_shape_validate(&sp->shape, e))) return rc;
  } else if (key_heads || dv) {
    /* Remembered for grid entries: stored as a pseudo shape. */
    sp->shape.Hk = hk;
    sp->shape.Dv = d;
  }
  if (seed && (rc = gdn_cli_uint64(seed, "--seed", &sp->synth.seed, e))) return rc;
  if (h0) sp->synth.flags |= GDN_SYNTH_H0;
  if (qk_norm && (rc = parse_qk_norm(qk_norm, &sp->synth.flags, "--qk-norm", e))) return rc;
  if (input_dtype && (rc = parse_input_dtype(input_dtype, &sp->synth.bf16_mask, "--input-dtype", e)))
    return rc;
  if (gates && (rc = parse_gates(gates, &sp->synth.flags, "--gates", e))) return rc;
  return GDN_OK;
}

void parity_grid_init(parity_grid *g) { memset(g, 0, sizeof *g); }

void parity_grid_clear(parity_grid *g) {
  gdn_free(g->entries);
  parity_grid_init(g);
}

static int int_list(json_t *v, const char *where, const char *key, int64_t min, int64_t max,
                    int64_t *out, size_t *n, gdn_error *e) {
  if (json_is_integer(v)) {
    json_t *arr = json_array();
    json_array_append(arr, v);
    int rc = int_list(arr, where, key, min, max, out, n, e);
    json_decref(arr);
    return rc;
  }
  if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > PARITY_MAX_LIST)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\" must be an integer or a list of 1..%d integers",
                         where, key, PARITY_MAX_LIST);
  size_t i;
  json_t *x;
  *n = 0;
  json_array_foreach(v, i, x) {
    if (!json_is_integer(x) || json_integer_value(x) < min || json_integer_value(x) > max)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\"[%zu] must be an integer in [%" PRId64 ", %" PRId64 "]",
                           where, key, i, min, max);
    for (size_t j = 0; j < *n; j++)
      if (out[j] == json_integer_value(x))
        return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\" lists %" PRId64 " twice", where, key, out[j]);
    out[(*n)++] = json_integer_value(x);
  }
  return GDN_OK;
}

/* A string value of key `key`, or the "must be a string" refusal. */
static int str_of(json_t *v, const char *where, const char *key, const char **s, gdn_error *e) {
  if (!(*s = json_string_value(v))) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\" must be a string", where, key);
  return GDN_OK;
}

/* A parser's own refusal, placed at the entry. */
static int at(int rc, const char *where, gdn_error *e) { return rc ? gdn_error_prefix(e, "%s: ", where) : GDN_OK; }

/* "shape", with "key_heads" and "dv" applied to it, validated whole. */
static int entry_shape(json_t *en, const char *where, parity_grid_entry *ge, const parity_synth_spec *base,
                       gdn_error *e) {
  const char *shape = json_string_value(json_object_get(en, "shape"));
  if (!shape) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"shape\" (a string \"B,T,H,D\") is required", where);
  char w2[320];
  snprintf(w2, sizeof w2, "%s: shape", where);
  int rc = gdn_shape_parse(&ge->spec.shape, shape, w2, e);
  if (rc) return rc;
  ge->spec.have_shape = 1;
  int64_t hk = base->shape.Hk, dv = base->shape.Dv;
  json_t *v;
  if ((v = json_object_get(en, "key_heads"))) {
    if (!json_is_integer(v) || json_integer_value(v) < 1)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"key_heads\" must be a positive integer", where);
    hk = json_integer_value(v);
  }
  if ((v = json_object_get(en, "dv"))) {
    if (!json_is_integer(v) || json_integer_value(v) < 1)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"dv\" must be a positive integer", where);
    dv = json_integer_value(v);
  }
  if ((rc = apply_heads(&ge->spec, hk, dv, where, e))) return rc;
  return at(gdn_shape_validate(&ge->spec.shape, e), where, e);
}

/* The other keys of an entry: one parser each, chosen from a table. */
typedef int (*key_parser)(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e);

static int key_seed(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"seed\" must be a non-negative integer", where);
  ge->spec.synth.seed = (uint64_t)json_integer_value(v);
  return GDN_OK;
}

static int key_h0(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"h0\" must be true or false", where);
  if (json_is_true(v)) ge->spec.synth.flags |= GDN_SYNTH_H0;
  else ge->spec.synth.flags &= ~GDN_SYNTH_H0;
  return GDN_OK;
}

static int key_grad(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"grad\" must be true or false", where);
  ge->spec.grad = json_is_true(v);
  return GDN_OK;
}

static int key_qk_norm(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "qk_norm", &s, e) || parse_qk_norm(s, &ge->spec.synth.flags, where, e) ? -1 : GDN_OK;
}

static int key_input_dtype(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "input_dtype", &s, e) || parse_input_dtype(s, &ge->spec.synth.bf16_mask, where, e) ? -1
                                                                                                             : GDN_OK;
}

static int key_gates(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "gates", &s, e) || parse_gates(s, &ge->spec.synth.flags, where, e) ? -1 : GDN_OK;
}

static int key_prelude(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "prelude", &s, e) || parity_parse_prelude(s, &ge->spec.synth.flags, where, e) ? -1 : GDN_OK;
}

static int key_documents(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 20))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"documents\" must be an integer in [1, 1048576]", where);
  ge->spec.documents = json_integer_value(v);
  return GDN_OK;
}

static int key_packing(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "packing", &s, e) || at(gdn_packing_parse(s, &ge->spec.packing, e), where, e) ? -1 : GDN_OK;
}

static int key_chunk(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  return int_list(v, where, "chunk", 1, 1 << 20, ge->opts.chunks, &ge->opts.n_chunks, e);
}

static int key_devices(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  int rc = int_list(v, where, "devices", 1, 1 << 20, ge->opts.devices, &ge->opts.n_devices, e);
  if (!rc) ge->opts.devices_default = 0;
  return rc;
}

/* "prefix": a name or a list of 1..3 distinct names. */
static int prefix_list(json_t *arr, const char *where, parity_sweep_opts *o, gdn_error *e) {
  size_t i, n = 0;
  json_t *x;
  if (!arr || json_array_size(arr) == 0 || json_array_size(arr) > 3)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\" must be a name or a list of 1..3 names", where);
  json_array_foreach(arr, i, x) {
    const char *nm = json_string_value(x);
    kern_prefix p;
    if (!nm) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\"[%zu] must be a string", where, i);
    if (kern_prefix_parse(nm, &p, e)) return gdn_error_prefix(e, "%s: ", where);
    for (size_t j = 0; j < n; j++)
      if (o->prefixes[j] == p) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\" lists '%s' twice", where, nm);
    o->prefixes[n++] = p;
  }
  o->n_prefixes = n;
  return GDN_OK;
}

static int key_prefix(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  json_t *arr = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
  int rc = prefix_list(arr, where, &ge->opts, e);
  json_decref(arr);
  return rc;
}

static int key_shard(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "shard", &s, e) || at(kern_shard_parse(s, &ge->opts.shard, e), where, e) ? -1 : GDN_OK;
}

static int key_solve(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "solve", &s, e) || at(kern_solve_parse(s, &ge->opts.solve, e), where, e) ? -1 : GDN_OK;
}

static int key_dtype(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "dtype", &s, e) || at(gdn_dtype_parse(s, &ge->opts.dtype, "\"dtype\"", e), where, e) ? -1
                                                                                                              : GDN_OK;
}

static int key_matmul(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  const char *s;
  return str_of(v, where, "matmul_precision", &s, e) || at(kern_matmul_parse(s, &ge->opts.matmul, e), where, e)
             ? -1
             : GDN_OK;
}

static int key_ftz(json_t *v, const char *where, parity_grid_entry *ge, gdn_error *e) {
  if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"ftz\" must be true or false", where);
  ge->opts.ftz = json_is_true(v);
  return GDN_OK;
}

/* Every key an entry may have, in the order they apply ("shape",
 * "key_heads" and "dv" by entry_shape). */
static const struct {
  const char *key;
  key_parser parse;
} entry_keys[] = {
    {"shape", NULL},          {"key_heads", NULL},          {"dv", NULL},           {"seed", key_seed},
    {"h0", key_h0},           {"grad", key_grad},           {"qk_norm", key_qk_norm},
    {"input_dtype", key_input_dtype},
    {"gates", key_gates},     {"prelude", key_prelude},     {"documents", key_documents},
    {"packing", key_packing}, {"chunk", key_chunk},         {"devices", key_devices}, {"prefix", key_prefix},
    {"shard", key_shard},     {"solve", key_solve},         {"dtype", key_dtype},
    {"matmul_precision", key_matmul}, {"ftz", key_ftz},
};
#define N_ENTRY_KEYS (sizeof entry_keys / sizeof entry_keys[0])

static int entry_parse(json_t *en, const char *where, parity_grid_entry *ge,
                       const parity_synth_spec *base, gdn_error *e) {
  const char *keys[N_ENTRY_KEYS + 1];
  for (size_t i = 0; i < N_ENTRY_KEYS; i++) keys[i] = entry_keys[i].key;
  keys[N_ENTRY_KEYS] = NULL;
  if (!json_is_object(en)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: not an object", where);
  int rc = parity_json_check_keys(en, keys, where, "", e);
  if (!rc) rc = entry_shape(en, where, ge, base, e);
  for (size_t i = 0; !rc && i < N_ENTRY_KEYS; i++) {
    json_t *v = json_object_get(en, entry_keys[i].key);
    if (v && entry_keys[i].parse && entry_keys[i].parse(v, where, ge, e)) rc = e ? e->code : GDN_ERR_INPUT;
  }
  return rc;
}

static int same_list(const int64_t *a, size_t na, const int64_t *b, size_t nb) {
  return na == nb && (na == 0 || !memcmp(a, b, na * sizeof *a));
}

/* Two entries that would run the very same cases (the same inputs and the
 * same lists of numerics): the second only repeats the first. */
static int entries_same(const parity_grid_entry *x, const parity_grid_entry *y) {
  const parity_synth_spec *a = &x->spec, *b = &y->spec;
  const parity_sweep_opts *p = &x->opts, *q = &y->opts;
  return !memcmp(&a->shape, &b->shape, sizeof a->shape) && a->synth.seed == b->synth.seed &&
         a->synth.flags == b->synth.flags && a->synth.bf16_mask == b->synth.bf16_mask &&
         a->documents == b->documents && a->packing == b->packing && a->grad == b->grad &&
         p->shard == q->shard && p->solve == q->solve && same_list(p->chunks, p->n_chunks, q->chunks, q->n_chunks) &&
         same_list(p->devices, p->n_devices, q->devices, q->n_devices) &&
         p->devices_default == q->devices_default && p->n_prefixes == q->n_prefixes &&
         !memcmp(p->prefixes, q->prefixes, p->n_prefixes * sizeof p->prefixes[0]) && p->dtype == q->dtype &&
         p->matmul == q->matmul && p->ftz == q->ftz;
}

int parity_grid_parse(parity_grid *g, const char *text, const char *source,
                      const parity_synth_spec *base, const parity_sweep_opts *base_opts,
                      gdn_error *e) {
  parity_grid_clear(g);
  json_t *root;
  int rc = parity_json_loads(text, "grid", source, &root, e);
  if (rc) return rc;
  json_t *entries = json_object_get(root, "entries");
  if (!json_is_object(root) || !json_is_array(entries) || json_array_size(entries) == 0) {
    rc = gdn_error_set(e, GDN_ERR_INPUT, "grid %s: expected an object with \"entries\", a non-empty list",
                       source);
    goto done;
  }
  static const char *const top[] = {"name", "description", "entries", NULL};
  char where[300];
  snprintf(where, sizeof where, "grid %s", source);
  if ((rc = parity_json_check_keys(root, top, where, "top-level ", e))) goto done;
  size_t n = json_array_size(entries);
  g->entries = gdn_calloc(n, sizeof *g->entries, "grid entries", e);
  if (!g->entries) {
    rc = e ? e->code : GDN_ERR_NOMEM;
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    parity_grid_entry *ge = &g->entries[i];
    ge->spec = *base;
    ge->opts = *base_opts;
    snprintf(where, sizeof where, "grid %s: entry %zu", source, i);
    if ((rc = entry_parse(json_array_get(entries, i), where, ge, base, e))) goto done;
    for (size_t j = 0; j < i; j++)
      if (entries_same(&g->entries[j], ge)) {
        rc = gdn_error_set(e, GDN_ERR_INPUT, "%s repeats entry %zu (the same cases would run twice)", where, j);
        goto done;
      }
  }
  g->n = n;
done:
  json_decref(root);
  if (rc) parity_grid_clear(g);
  return rc;
}

int parity_grid_load(parity_grid *g, const char *path, const parity_synth_spec *base,
                     const parity_sweep_opts *base_opts, gdn_error *e) {
  json_error_t je;
  FILE *f;
  int rc0 = gdn_path_fopen_input("--grid", path, &f, NULL, e); /* never blocks: a FIFO is refused */
  if (rc0) return rc0;
  json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!root) {
    if (je.line < 0 || je.position == 0)
      return gdn_error_set(e, GDN_ERR_INPUT, "--grid %s: %s", path, je.text);
    return gdn_error_set(e, GDN_ERR_INPUT, "--grid %s: line %d, column %d: %s", path, je.line,
                         je.column, je.text);
  }
  char *text = json_dumps(root, 0);
  json_decref(root);
  if (!text) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory reading --grid %s", path);
  int rc = parity_grid_parse(g, text, path, base, base_opts, e);
  free(text);
  return rc;
}

/* Every gradient row of every subject met by at least one check of the dry
 * run (coverage in parity_policy is per subject: o alone would satisfy it). */
static int grads_covered(const parity_policy *p, const parity_case_view *v, const parity_check *checks, size_t n,
                         gdn_error *e) {
  for (size_t si = 0; si < v->n_subjects; si++)
    for (int t = 0; t < PARITY_T_N; t++) {
      const parity_subject *sj = &v->subjects[si];
      if (!parity_tensors[t].grad || (!sj->vs_oracle[t] && !sj->vs_scan[t])) continue; /* nothing measured */
      size_t k = 0;
      while (k < n && !(checks[k].subject_index == si && checks[k].tensor == (int)(1u << t))) k++;
      char lab[700];
      if (k == n)
        return gdn_error_set(e, GDN_ERR_INPUT,
                             "%s has no rule for the gradient %s of %s (dtype %s, matmul %s, %s oracle): "
                             "add one, or the gate would pass it unjudged",
                             parity_policy_label(p, lab, sizeof lab), parity_tensors[t].name, v->subjects[si].name, gdn_dtype_name(v->dtype),
                             kern_matmul_name(v->matmul), v->has_oracle ? "with" : "without");
    }
  return GDN_OK;
}

int parity_grid_check_policy(const parity_grid_entry *ge, const parity_policy *p, int has_oracle, gdn_error *e) {
  const parity_sweep_opts *o = &ge->opts;
  const int grad = ge->spec.grad;
  kern_config probe;
  kern_config_init(&probe);
  probe.dtype = o->dtype;
  const gdn_dtype od = kern_output_dtype(&probe, ge->spec.synth.bf16_mask);
  const gdn_dtype hd = o->dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
  /* placeholder metrics: only which rules apply matters here */
  static const parity_metrics zero;
  parity_subject subj[2];
  memset(subj, 0, sizeof subj);
  subj[0].name = "scan";
  subj[0].kind = PARITY_SUBJ_SCAN;
  subj[1].name = "affine-prefix";
  subj[1].kind = PARITY_SUBJ_AFFINE;
  for (int i = 0; i < 2; i++)
    for (int t = 0; t < PARITY_T_N; t++) {
      if (parity_tensors[t].grad && !grad) continue;
      /* o in the output dtype, ht and the gradients in the compute dtype (kern_vjp.h) */
      subj[i].out_dtype[t] = t == PARITY_T_O ? od : hd;
      if (i == 1) subj[i].vs_scan[t] = &zero;
      if (has_oracle) subj[i].vs_oracle[t] = &zero;
    }
  parity_case_view view = {o->dtype, o->matmul, has_oracle, {NULL}, 2, subj, NULL, 0, {0}};
  for (int t = 0; t < PARITY_T_N && has_oracle; t++)
    if (grad || !parity_tensors[t].grad) view.scan_vs_oracle[t] = &zero;
  size_t cap = (2 * PARITY_T_N + 2) * p->n_rules + 1, n, dec;
  parity_check *checks = gdn_calloc(cap, sizeof *checks, "policy dry run", e);
  if (!checks) return e ? e->code : GDN_ERR_NOMEM;
  int rc = parity_policy_evaluate(p, &view, checks, cap, &n, &dec, e);
  if (!rc && grad) rc = grads_covered(p, &view, checks, n, e);
  gdn_free(checks);
  return rc;
}
