#include "parity_grid.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_cli.h"
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

static int parse_qk_norm(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  if (!strcmp(s, "in-kernel")) *flags &= ~GDN_SYNTH_QK_PRENORM;
  else if (!strcmp(s, "pre")) *flags |= GDN_SYNTH_QK_PRENORM;
  else
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': expected in-kernel or pre", where, s);
  return GDN_OK;
}

static int parse_gates(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  if (!strcmp(s, "init")) *flags &= ~GDN_SYNTH_SLOW_GATES;
  else if (!strcmp(s, "slow")) *flags |= GDN_SYNTH_SLOW_GATES;
  else
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': expected init or slow", where, s);
  return GDN_OK;
}

int parity_parse_prelude(const char *s, unsigned *flags, const char *where, gdn_error *e) {
  if (!strcmp(s, "none")) *flags &= ~GDN_SYNTH_PRELUDE_BF16;
  else if (!strcmp(s, "bfloat16")) *flags |= GDN_SYNTH_PRELUDE_BF16;
  else
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': expected none or bfloat16", where, s);
  return GDN_OK;
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

static int entry_parse(json_t *en, const char *where, parity_grid_entry *ge,
                       const parity_synth_spec *base, gdn_error *e) {
  static const char *const keys[] = {"shape", "key_heads", "dv", "seed", "h0", "qk_norm",
                                     "input_dtype", "gates", "chunk", "devices", "prefix", "shard", "solve", "prelude", "documents", "packing", "dtype", "grad",
                                     "matmul_precision", "ftz", NULL};
  if (!json_is_object(en)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: not an object", where);
  json_t *v;
  int rc;
  if ((rc = parity_json_check_keys(en, keys, where, "", e))) return rc;
  const char *shape = json_string_value(json_object_get(en, "shape"));
  if (!shape)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"shape\" (a string \"B,T,H,D\") is required", where);
  char w2[320];
  snprintf(w2, sizeof w2, "%s: shape", where);
  if ((rc = gdn_shape_parse(&ge->spec.shape, shape, w2, e))) return rc;
  ge->spec.have_shape = 1;
  int64_t hk = base->shape.Hk, dv = base->shape.Dv;
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
  if ((rc = gdn_shape_validate(&ge->spec.shape, e))) return gdn_error_prefix(e, "%s: ", where);
  if ((v = json_object_get(en, "seed"))) {
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"seed\" must be a non-negative integer", where);
    ge->spec.synth.seed = (uint64_t)json_integer_value(v);
  }
  if ((v = json_object_get(en, "h0"))) {
    if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"h0\" must be true or false", where);
    if (json_is_true(v)) ge->spec.synth.flags |= GDN_SYNTH_H0;
    else ge->spec.synth.flags &= ~GDN_SYNTH_H0;
  }
  if ((v = json_object_get(en, "grad"))) {
    if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"grad\" must be true or false", where);
    ge->spec.grad = json_is_true(v);
  }
  const char *s;
  if ((v = json_object_get(en, "qk_norm"))) {
    if (!(s = json_string_value(v))) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"qk_norm\" must be a string", where);
    if ((rc = parse_qk_norm(s, &ge->spec.synth.flags, where, e))) return rc;
  }
  if ((v = json_object_get(en, "input_dtype"))) {
    if (!(s = json_string_value(v))) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"input_dtype\" must be a string", where);
    if ((rc = parse_input_dtype(s, &ge->spec.synth.bf16_mask, where, e))) return rc;
  }
  if ((v = json_object_get(en, "gates"))) {
    if (!(s = json_string_value(v))) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"gates\" must be a string", where);
    if ((rc = parse_gates(s, &ge->spec.synth.flags, where, e))) return rc;
  }
  if ((v = json_object_get(en, "prelude"))) {
    if (!(s = json_string_value(v))) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prelude\" must be a string", where);
    if ((rc = parity_parse_prelude(s, &ge->spec.synth.flags, where, e))) return rc;
  }
  if ((v = json_object_get(en, "documents"))) {
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 20))
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"documents\" must be an integer in [1, 1048576]",
                           where);
    ge->spec.documents = json_integer_value(v);
  }
  if ((v = json_object_get(en, "packing"))) {
    if (!(s = json_string_value(v)) || (rc = gdn_packing_parse(s, &ge->spec.packing, e)))
      return s ? gdn_error_prefix(e, "%s: ", where)
               : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"packing\" must be a string", where);
  }
  parity_sweep_opts *o = &ge->opts;
  if ((v = json_object_get(en, "chunk")) &&
      (rc = int_list(v, where, "chunk", 1, 1 << 20, o->chunks, &o->n_chunks, e)))
    return rc;
  if ((v = json_object_get(en, "devices"))) {
    if ((rc = int_list(v, where, "devices", 1, 1 << 20, o->devices, &o->n_devices, e))) return rc;
    o->devices_default = 0;
  }
  if ((v = json_object_get(en, "prefix"))) {
    json_t *arr = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
    size_t i, n = 0;
    json_t *x;
    if (!arr || json_array_size(arr) == 0 || json_array_size(arr) > 3) {
      json_decref(arr);
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\" must be a name or a list of 1..3 names", where);
    }
    json_array_foreach(arr, i, x) {
      const char *nm = json_string_value(x);
      kern_prefix p;
      if (!nm || (rc = kern_prefix_parse(nm, &p, e))) {
        json_decref(arr);
        if (!nm) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\"[%zu] must be a string", where, i);
        return gdn_error_prefix(e, "%s: ", where);
      }
      o->prefixes[n++] = p;
    }
    o->n_prefixes = n;
    json_decref(arr);
  }
  if ((v = json_object_get(en, "shard"))) {
    if (!(s = json_string_value(v)) || (rc = kern_shard_parse(s, &o->shard, e)))
      return s ? gdn_error_prefix(e, "%s: ", where)
               : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"shard\" must be a string", where);
  }
  if ((v = json_object_get(en, "solve"))) {
    if (!(s = json_string_value(v)) || (rc = kern_solve_parse(s, &o->solve, e)))
      return s ? gdn_error_prefix(e, "%s: ", where)
               : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"solve\" must be a string", where);
  }
  if ((v = json_object_get(en, "dtype"))) {
    if (!(s = json_string_value(v)) || (rc = gdn_dtype_parse(s, &o->dtype, "\"dtype\"", e)))
      return s ? gdn_error_prefix(e, "%s: ", where)
               : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"dtype\" must be a string", where);
  }
  if ((v = json_object_get(en, "matmul_precision"))) {
    if (!(s = json_string_value(v)) || (rc = kern_matmul_parse(s, &o->matmul, e)))
      return s ? gdn_error_prefix(e, "%s: ", where)
               : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"matmul_precision\" must be a string", where);
  }
  if ((v = json_object_get(en, "ftz"))) {
    if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"ftz\" must be true or false", where);
    o->ftz = json_is_true(v);
  }
  return GDN_OK;
}

int parity_grid_parse(parity_grid *g, const char *text, const char *source,
                      const parity_synth_spec *base, const parity_sweep_opts *base_opts,
                      gdn_error *e) {
  parity_grid_clear(g);
  json_error_t je;
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return gdn_error_set(e, GDN_ERR_INPUT, "grid %s: line %d, column %d: %s", source, je.line,
                         je.column, je.text);
  int rc = GDN_OK;
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
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
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
