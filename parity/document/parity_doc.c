#include "parity_doc.h"

#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gdn_alloc.h"
#include "gdn_config.h"
#include "gdn_threads.h"
#include "parity_json.h"
#include "gdn_clock.h"

static int nomem(gdn_error *e) {
  return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory building the results document");
}

int parity_doc_init(parity_doc *d, const char *command, const parity_policy *policy, gdn_error *e) {
  memset(d, 0, sizeof *d);
  d->min_certified = -1;
  d->min_guaranteed = -1;
  d->t_start = gdn_clock_seconds();
  d->root = json_object();
  d->inputs = json_array();
  d->cases = json_array();
  if (!d->root || !d->inputs || !d->cases) goto fail;
  json_t *pol = json_pack("{ssssss}", "name", policy->name, "source", policy->source, "sha256",
                          policy->sha256);
  if (parity_json_set(d->root, "tool", json_string("gdn-parity")) ||
      parity_json_set(d->root, "version", json_string(GDN_VERSION)) ||
      parity_json_set(d->root, "git_commit", json_string(GDN_GIT_COMMIT)) ||
      parity_json_set(d->root, "schema", json_integer(2)) ||
      parity_json_set(d->root, "command", json_string(command ? command : "")) ||
      parity_json_set(d->root, "policy", pol))
    goto fail;
  return GDN_OK;
fail:
  parity_doc_clear(d);
  return nomem(e);
}

void parity_doc_clear(parity_doc *d) {
  json_decref(d->root);
  json_decref(d->inputs);
  json_decref(d->cases);
  memset(d, 0, sizeof *d);
}

int parity_doc_pass(const parity_doc *d) { return d->n_failed == 0; }

size_t parity_doc_ht_unjudged(const json_t *root, char *buf, size_t n) {
  size_t count = 0;
  if (n) buf[0] = '\0';
  json_t *seen = json_object(); /* names already listed */
  const json_t *cases = json_object_get(root, "cases");
  for (size_t c = 0; seen && c < json_array_size(cases); c++) {
    const char *name;
    json_t *imp;
    json_object_foreach(json_object_get(json_array_get(cases, c), "impls"), name, imp) {
      if (!json_object_get(imp, "judged_on") || json_object_get(seen, name)) continue;
      json_object_set_new(seen, name, json_true());
      if (count++ && n) strncat(buf, ", ", n - strlen(buf) - 1);
      if (n) strncat(buf, name, n - strlen(buf) - 1);
    }
  }
  json_decref(seen);
  return count;
}

/* Over all inputs: the tier (or "mixed", then each input says its own),
 * the weakest certificate, how much of the state it covers. */
static json_t *oracle_json(const parity_doc *d) {
  json_t *or = json_pack("{sssssi}", "tier", d->mixed_tiers ? "mixed" : parity_oracle_tier_name(d->tier), "form",
                         "token", "precision_bits", d->precision_bits);
  if (!or) return NULL;
  int bad = 0;
  /* A fixture's stored oracle records its certified bits but not the
   * precision it was checked at. */
  if (d->check_bits > 0) bad |= parity_json_set(or, "check_bits", json_integer(d->check_bits));
  bad |= parity_json_set(or, "certified_bits", json_integer(d->min_certified));
  if (d->min_guaranteed >= 0) bad |= parity_json_set(or, "guaranteed_bits", json_integer(d->min_guaranteed));
  bad |= parity_json_set(or, "sampled_columns", json_integer(d->sampled_columns));
  bad |= parity_json_set(or, "total_columns", json_integer(d->total_columns));
  if (bad) json_decref(or);
  return bad ? NULL : or;
}

/* Timing and memory: not in reproducible output. */
static int run_figures(json_t *root, const parity_doc *d) {
  int bad = parity_json_set(root, "timing",
                            json_pack("{s{sfsfsf}si}", "seconds", "oracle", d->t_oracle, "kernels", d->t_kernels,
                                      "total", gdn_clock_seconds() - d->t_start, "threads", gdn_threads_get()));
  /* What the run held at its peak: the toolkit's heap through gdn_alloc's
   * accounting (-1 off glibc) and the process's peak resident set.  Not in
   * reproducible output: per-thread scratch makes both depend on the
   * thread count, the results do not. */
  struct rusage ru;
  long long rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (long long)ru.ru_maxrss * 1024 : -1;
  bad |= parity_json_set(root, "memory", json_pack("{sIsI}", "peak_heap_bytes", (json_int_t)gdn_alloc_bytes_peak(),
                                                   "peak_rss_bytes", (json_int_t)rss));
  return bad;
}

/* The cases' "mutant" (a run plants at most one, in every case). */
static const char *planted_mutant(const parity_doc *d) {
  for (size_t i = 0; i < json_array_size(d->cases); i++) {
    const char *m = json_string_value(json_object_get(json_array_get(d->cases, i), "mutant"));
    if (m) return m;
  }
  return NULL;
}

int parity_doc_finish(parity_doc *d, int reproducible, gdn_error *e) {
  int pass = parity_doc_pass(d);
  /* Fixed key order: tool, version, git_commit, schema, command, created,
   * pass, exit_status, planted_mutant, oracle, policy, inputs, cases,
   * timing, memory. */
  json_t *root = json_object();
  if (!root) return nomem(e);
  int bad = 0;
  const char *keys[] = {"tool", "version", "git_commit", "schema", "command"};
  for (size_t i = 0; i < 5; i++) bad |= json_object_set(root, keys[i], json_object_get(d->root, keys[i]));
  if (!reproducible) {
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    bad |= parity_json_set(root, "created", json_string(ts));
  }
  bad |= parity_json_set(root, "pass", json_boolean(pass));
  bad |= parity_json_set(root, "exit_status", json_integer(pass ? 0 : 1));
  /* A run with a planted mutant (--mutant, testing only) says so at the top
   * (the planted-mutant marking); documents without one are unchanged. */
  const char *pm = planted_mutant(d);
  if (pm) bad |= parity_json_set(root, "planted_mutant", json_string(pm));
  if (d->have_oracle) bad |= parity_json_set(root, "oracle", oracle_json(d));
  bad |= json_object_set(root, "policy", json_object_get(d->root, "policy"));
  bad |= json_object_set(root, "inputs", d->inputs);
  bad |= json_object_set(root, "cases", d->cases);
  if (!reproducible) bad |= run_figures(root, d);
  if (bad) {
    json_decref(root);
    return nomem(e);
  }
  json_decref(d->root);
  d->root = root;
  return GDN_OK;
}


int64_t parity_doc_next_input(const parity_doc *d) { return (int64_t)json_array_size(d->inputs); }

/* Over all inputs: the tier (or "mixed"), the weakest certificate, how much
 * of the state it covers. */
static void fold_reference(parity_doc *d, const parity_reference *ref) {
  if (d->have_oracle && d->tier != ref->tier) d->mixed_tiers = 1;
  d->have_oracle = 1;
  d->tier = ref->tier;
  d->sampled_columns += ref->sampled_columns;
  d->total_columns += ref->total_columns;
  if (ref->tier == PARITY_ORACLE_DD && (d->min_guaranteed < 0 || ref->guaranteed_bits < d->min_guaranteed))
    d->min_guaranteed = ref->guaranteed_bits;
  d->precision_bits = ref->precision_bits;
  if (ref->check_bits > d->check_bits) d->check_bits = ref->check_bits;
  if (d->min_certified < 0 || ref->certified_bits < d->min_certified) d->min_certified = ref->certified_bits;
  d->t_oracle += ref->seconds;
}

int parity_doc_add_input(parity_doc *d, const parity_input_result *r, gdn_error *e) {
  json_t *ji = parity_json_input(r);
  if (!ji || json_array_append_new(d->inputs, ji)) return nomem(e);
  if (r->ref) fold_reference(d, r->ref);
  return GDN_OK;
}

int parity_doc_add_case(parity_doc *d, const parity_case_result *r, int reproducible, gdn_error *e) {
  json_t *c = parity_json_case(r, reproducible);
  if (!c || json_array_append_new(d->cases, c)) return nomem(e);
  d->n_cases++;
  if (!r->pass) d->n_failed++;
  return GDN_OK;
}

int parity_doc_part_dump(const parity_doc *d, char **text, gdn_error *e) {
  json_t *p = json_pack("{sOsOs[IIiiiiiii]s[II]s[ff]}", "inputs", d->inputs, "cases", d->cases, "n",
                        (json_int_t)d->n_cases, (json_int_t)d->n_failed, d->have_oracle,
                        d->min_certified, d->precision_bits, d->check_bits, d->min_guaranteed,
                        d->mixed_tiers, (int)d->tier, "columns", (json_int_t)d->sampled_columns,
                        (json_int_t)d->total_columns, "seconds", d->t_oracle, d->t_kernels);
  *text = p ? json_dumps(p, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(p);
  return *text ? GDN_OK : nomem(e);
}

int parity_doc_part_load(parity_doc *d, const char *text, gdn_error *e) {
  json_error_t je;
  json_t *p = json_loads(text, 0, &je), *in, *cs;
  json_int_t nc, nf, sc, tc;
  int tier;
  if (!p || json_unpack(p, "{soso}", "inputs", &in, "cases", &cs) ||
      json_unpack(p, "{s[IIiiiiiii]s[II]s[ff]}", "n", &nc, &nf, &d->have_oracle, &d->min_certified,
                  &d->precision_bits, &d->check_bits, &d->min_guaranteed, &d->mixed_tiers, &tier,
                  "columns", &sc, &tc, "seconds", &d->t_oracle, &d->t_kernels)) {
    json_decref(p);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "a rank's part of the results is malformed: %s",
                         p ? "fields missing" : je.text);
  }
  json_decref(d->inputs);
  json_decref(d->cases);
  d->inputs = json_incref(in);
  d->cases = json_incref(cs);
  d->n_cases = (size_t)nc;
  d->n_failed = (size_t)nf;
  d->tier = (parity_oracle_tier)tier;
  d->sampled_columns = sc;
  d->total_columns = tc;
  json_decref(p);
  return GDN_OK;
}

static int min_known(int a, int b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

int parity_doc_merge(parity_doc *d, const parity_doc *part, gdn_error *e) {
  const json_int_t off = (json_int_t)json_array_size(d->inputs);
  size_t i;
  json_t *v;
  json_array_foreach(part->inputs, i, v) if (json_array_append(d->inputs, v)) return nomem(e);
  json_array_foreach(part->cases, i, v) {
    json_t *c = json_deep_copy(v), *ix = c ? json_object_get(c, "input") : NULL;
    if (!c || (ix && json_integer_set(ix, json_integer_value(ix) + off)) ||
        json_array_append_new(d->cases, c))
      return nomem(e);
  }
  d->n_cases += part->n_cases;
  d->n_failed += part->n_failed;
  d->t_kernels += part->t_kernels;
  if (!part->have_oracle) return GDN_OK;
  if ((d->have_oracle && d->tier != part->tier) || part->mixed_tiers) d->mixed_tiers = 1;
  d->have_oracle = 1;
  d->tier = part->tier;
  d->sampled_columns += part->sampled_columns;
  d->total_columns += part->total_columns;
  d->min_guaranteed = min_known(d->min_guaranteed, part->min_guaranteed);
  d->precision_bits = part->precision_bits;
  if (part->check_bits > d->check_bits) d->check_bits = part->check_bits;
  d->min_certified = min_known(d->min_certified, part->min_certified);
  d->t_oracle += part->t_oracle;
  return GDN_OK;
}
