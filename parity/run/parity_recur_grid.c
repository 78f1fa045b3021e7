/* A recurrence's grid: sweep and coverage (parity_recur_grid.h). */
#include "parity_recur_grid.h"

#include <string.h>

#include "gdn_alloc.h"

void parity_recur_grid_init(parity_recur_grid *g) { memset(g, 0, sizeof *g); }

void parity_recur_grid_clear(parity_recur_grid *g) {
  gdn_free(g->entries);
  parity_recur_grid_init(g);
}

/* An integer list ("chunk", "devices") into dst. */
static int int_list(json_t *v, const char *key, const char *where, int64_t *dst, int *n, gdn_error *e) {
  if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > PARITY_RECUR_MAX_CHUNKS)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\" must be a list of 1 to %d integers", where, key,
                         PARITY_RECUR_MAX_CHUNKS);
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > (1 << 20))
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"%s\"[%zu] must be an integer in [1, 2^20]", where, key, i);
    dst[i] = json_integer_value(x);
  }
  *n = (int)json_array_size(v);
  return GDN_OK;
}

static int entry_parse(json_t *je, const parity_recurrence *rec, const char *where, parity_recur_opts *o,
                       gdn_error *e) {
  parity_recur_opts_init(o, rec);
  if (!json_is_object(je)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: must be an object", where);
  static const char *const keys[] = {"shape", "key_heads", "dv", "h0", "seed", "chunk", "devices", "prefix", "shard",
                                     NULL};
  const char *k;
  json_t *v;
  json_object_foreach(je, k, v) {
    int ok = 0;
    for (int i = 0; keys[i]; i++) ok |= !strcmp(k, keys[i]);
    if (!ok) return gdn_error_set(e, GDN_ERR_INPUT, "%s: unknown key \"%s\"", where, k);
  }
  json_t *s = json_object_get(je, "shape");
  if (!json_is_string(s)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"shape\": \"B,T,H,D\" is required", where);
  if (gdn_shape_parse(&o->shape, json_string_value(s), "shape", e)) return gdn_error_prefix(e, "%s: ", where);
  if ((v = json_object_get(je, "key_heads"))) {
    if (!json_is_integer(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"key_heads\" must be an integer", where);
    o->shape.Hk = json_integer_value(v);
  }
  if ((v = json_object_get(je, "dv"))) {
    if (!json_is_integer(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"dv\" must be an integer", where);
    o->shape.Dv = json_integer_value(v);
  }
  if (gdn_shape_validate(&o->shape, e)) return gdn_error_prefix(e, "%s: ", where);
  if ((v = json_object_get(je, "h0"))) {
    if (!json_is_boolean(v)) return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"h0\" must be true or false", where);
    o->h0 = json_is_true(v);
  }
  if ((v = json_object_get(je, "seed"))) {
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: \"seed\" must be a non-negative integer", where);
    o->seed = (uint64_t)json_integer_value(v);
  }
  if ((v = json_object_get(je, "chunk")) && int_list(v, "chunk", where, o->chunks, &o->n_chunks, e)) return -1;
  if ((v = json_object_get(je, "devices")) && int_list(v, "devices", where, o->devices, &o->n_devices, e)) return -1;
  /* the affine-prefix's schedule and shard mode: one name each (kern_config.h) */
  if ((v = json_object_get(je, "prefix")) &&
      (!json_is_string(v) || kern_prefix_parse(json_string_value(v), &o->prefix, e)))
    return json_is_string(v) ? gdn_error_prefix(e, "%s: ", where)
                             : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"prefix\" must be one schedule's name", where);
  if ((v = json_object_get(je, "shard")) &&
      (!json_is_string(v) || kern_shard_parse(json_string_value(v), &o->shard, e)))
    return json_is_string(v) ? gdn_error_prefix(e, "%s: ", where)
                             : gdn_error_set(e, GDN_ERR_INPUT, "%s: \"shard\" must be tokens or chunks", where);
  for (int i = 0; i < o->n_devices && o->shard == KERN_SHARD_TOKENS; i++)
    if (o->shape.T % o->devices[i])
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: devices %lld does not divide T = %lld", where,
                           (long long)o->devices[i], (long long)o->shape.T);
  /* the CLI's memory policy (parity_recur_cli.c): 16 GiB for the inputs, gate and three output sets */
  if (gdn_shape_check_limit(&o->shape, o->h0, 3, 16ull << 30, e)) return gdn_error_prefix(e, "%s: ", where);
  return GDN_OK;
}

int parity_recur_grid_load(parity_recur_grid *g, const parity_recurrence *rec, const char *path, gdn_error *e) {
  parity_recur_grid_clear(g);
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root) return gdn_error_set(e, GDN_ERR_INPUT, "--grid %s: line %d: %s", path, je.line, je.text);
  int rc = GDN_OK;
  json_t *r = json_object_get(root, "recurrence"), *ents = json_object_get(root, "entries"),
         *nm = json_object_get(root, "name");
  if (!json_is_object(root) || !json_is_string(r) || strcmp(json_string_value(r), rec->name))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "--grid %s: not a grid of recurrence %s (its \"recurrence\" must be \"%s\")",
                       path, rec->name, rec->name);
  else if (!json_is_array(ents) || !json_array_size(ents))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "--grid %s: \"entries\" must be a non-empty list", path);
  else if (!(g->entries = gdn_calloc(json_array_size(ents), sizeof *g->entries, "the grid", e)))
    rc = GDN_ERR_NOMEM;
  snprintf(g->name, sizeof g->name, "%s", json_is_string(nm) ? json_string_value(nm) : path);
  for (size_t i = 0; !rc && i < json_array_size(ents); i++) {
    char where[700];
    snprintf(where, sizeof where, "--grid %s: entries[%zu]", path, i);
    if ((rc = entry_parse(json_array_get(ents, i), rec, where, &g->entries[i], e))) rc = e->code ? e->code : -1;
    else g->n = i + 1;
  }
  json_decref(root);
  if (rc) parity_recur_grid_clear(g);
  return rc;
}

/* The largest case error (o or ht) of a sweep document. */
static double max_err(json_t *doc) {
  double m = 0;
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(doc, "cases"), i, c) {
    const double a = json_real_value(json_object_get(json_object_get(c, "o"), "err")),
                 b = json_real_value(json_object_get(json_object_get(c, "ht"), "err"));
    if (a > m) m = a;
    if (b > m) m = b;
  }
  return m;
}

/* Every entry with mutant planted: docs (NULL: not kept), failing entries into killed_by, the largest error. */
static int run_entries(const parity_recur_grid *g, int mutant, json_t *docs, json_t *killed_by, double *worst,
                       gdn_error *e) {
  *worst = 0;
  for (size_t i = 0; i < g->n; i++) {
    parity_recur_opts o = g->entries[i];
    o.mutant = mutant;
    json_t *d = NULL;
    int pass, rc = parity_recur_sweep(&o, &d, &pass, e);
    if (rc) return rc;
    const double m = max_err(d);
    if (m > *worst) *worst = m;
    if (!pass) json_array_append_new(killed_by, json_integer((json_int_t)i));
    if (docs) json_array_append_new(docs, d);
    else json_decref(d);
  }
  return GDN_OK;
}

int parity_recur_grid_run(const parity_recur_grid *g, const parity_recurrence *rec, const int *mutants, FILE *log,
                          json_t **doc, int *pass, gdn_error *e) {
  *doc = NULL;
  *pass = 0;
  json_t *docs = json_array(), *failed = json_array(), *ms = json_array();
  double w;
  int rc = run_entries(g, 0, docs, failed, &w, e);
  const size_t nf = json_array_size(failed);
  if (log && !rc)
    fprintf(log, "grid %s (recurrence %s): %zu entr%s, %zu failed unplanted\n", g->name, rec->name, g->n,
            g->n == 1 ? "y" : "ies", nf);
  size_t killed = 0, nm = 0;
  for (; !rc && mutants && mutants[nm]; nm++) {
    json_t *kb = json_array();
    if ((rc = run_entries(g, mutants[nm], NULL, kb, &w, e))) {
      json_decref(kb);
      break;
    }
    const int k = json_array_size(kb) > 0;
    killed += (size_t)k;
    if (log)
      fprintf(log, "  %-8s %s (largest error %.3e over the grid)\n", k ? "KILLED" : "SURVIVED",
              rec->mutants[mutants[nm]], w);
    json_array_append_new(ms, json_pack("{s:s, s:b, s:o, s:f}", "name", rec->mutants[mutants[nm]], "killed", k,
                                        "killed_by", kb, "max_err", w));
  }
  if (!rc) {
    *pass = nf == 0 && killed == nm;
    *doc = mutants ? json_pack("{s:s, s:i, s:s, s:s, s:O, s:I, s:I, s:b}", "schema", "gdn-parity-recurrence-coverage",
                               "version", 1, "recurrence", rec->name, "grid", g->name, "mutants", ms, "n_mutants",
                               (json_int_t)nm, "n_killed", (json_int_t)killed, "pass", *pass)
                   : json_pack("{s:s, s:i, s:s, s:s, s:O, s:I, s:I, s:b}", "schema", "gdn-parity-recurrence-sweep",
                               "version", 1, "recurrence", rec->name, "grid", g->name, "entries", docs, "n_entries",
                               (json_int_t)g->n, "n_failed", (json_int_t)nf, "pass", *pass);
    if (!*doc) rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  }
  json_decref(docs);
  json_decref(failed);
  json_decref(ms);
  return rc;
}
