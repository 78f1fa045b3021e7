#include "parity_trust.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_clock.h"
#include "gdn_config.h"
#include "gdn_grads.h"
#include "gdn_synth.h"
#include "parity_doc.h"
#include "parity_subject.h"
#include "parity_sweep.h"
#include "report_doc.h"
#include "report_summary.h"

#define TRUST_SCHEMA "gdn-parity-trust"
#define TRUST_VERSION 1

const char *const parity_trust_regime_names[] = {"slow", "init", "spike-10", "spike-40", "spike-80", NULL};
static const float spike_g[PARITY_TRUST_REGIMES] = {0, 0, -10.0f, -40.0f, -80.0f};

/* ---- the reformulations as subject rows ---- */

static parity_subject_methods reform_rows[KERN_REFORM_COUNT];
static pthread_once_t reform_rows_once = PTHREAD_ONCE_INIT;

static kern_reform reform_of(const parity_subject_methods *m) {
  for (int i = 0; i < KERN_REFORM_COUNT; i++)
    if (m == &reform_rows[i]) return (kern_reform)i;
  return KERN_REFORM_COUNT;
}

/* The row's forward (o, ht: float32 values) and, with cotangents, its
 * backward when it has one. */
static int produce_reform(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  const kern_reform r = reform_of(s->m);
  if (r == KERN_REFORM_COUNT) return gdn_error_set(e, GDN_ERR_INTERNAL, "subject %s: not a reformulation", s->name);
  int rc = kern_reform_forward(cx->in, cx->cfg->chunk, cx->cfg->devices, r, &s->owned, e);
  if (rc) return rc;
  s->out = &s->owned;
  s->present = PARITY_TENSOR_FORWARD;
  s->out_dtype[PARITY_T_O] = s->out_dtype[PARITY_T_HT] = GDN_DTYPE_F32;
  if (!cx->ct || !kern_reform_row_of(r)->has_vjp) return GDN_OK;
  if ((rc = kern_reform_vjp(cx->in, cx->ct, cx->cfg->chunk, r, &s->owned_grads, e))) return rc;
  s->grads = &s->owned_grads;
  s->present |= PARITY_TENSOR_GRADS;
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad) s->out_dtype[t] = GDN_DTYPE_F32;
  return GDN_OK;
}

/* Judged as an external output is (another implementation with the case's
 * numerics), once per case: on the case's device count. */
static void reform_rows_build(void) {
  for (int r = 0; r < KERN_REFORM_COUNT; r++)
    reform_rows[r] = (parity_subject_methods){kern_reform_name((kern_reform)r), PARITY_SUBJ_EXTERNAL,
                                              PARITY_STAGE_CASE, PARITY_ROLE_JUDGED, 0, produce_reform};
}

const parity_subject_methods *parity_trust_subject(kern_reform r) {
  pthread_once(&reform_rows_once, reform_rows_build);
  return &reform_rows[r];
}

int parity_trust_parse_reforms(const char *s, kern_reform *out, size_t *n, gdn_error *e) {
  unsigned char on[KERN_REFORM_COUNT] = {0};
  *n = 0;
  if (!s || !*s) return gdn_error_set(e, GDN_ERR_INPUT, "--reforms: empty; give all or names");
  if (!strcmp(s, "all")) {
    memset(on + 1, 1, KERN_REFORM_COUNT - 1);
  } else {
    for (const char *p = s; *p;) {
      const char *c = strchr(p, ',');
      const size_t len = c ? (size_t)(c - p) : strlen(p);
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
      kern_reform r;
      if (kern_reform_parse(name, &r, e)) return gdn_error_prefix(e, "--reforms: "), GDN_ERR_INPUT;
      if (on[r]) return gdn_error_set(e, GDN_ERR_INPUT, "--reforms: '%s' is listed twice", name);
      on[r] = 1;
      p += len + (c != NULL);
      if (c && !*p) return gdn_error_set(e, GDN_ERR_INPUT, "--reforms: '%s' ends with a comma", s);
    }
  }
  for (int r = 0; r < KERN_REFORM_COUNT; r++)
    if (on[r]) out[(*n)++] = (kern_reform)r;
  return GDN_OK;
}

void parity_trust_spike(gdn_inputs *in, parity_trust_regime r, uint64_t seed) {
  if ((unsigned)r >= PARITY_TRUST_REGIMES || spike_g[r] == 0) return;
  gdn_synth_spikes(in, spike_g[r], seed);
}

/* ---- statistics ---- */

typedef struct tr_rule {
  char rule[96], tensor[16], metric[32];
  double *ratio;
  size_t n, cap, fails;
  json_t *worst; /* the largest ratio's record */
  double worst_ratio;
} tr_rule;

enum { TR_ALL = PARITY_TRUST_REGIMES }; /* the per-subject column of every regime */

typedef struct tr_subject {
  const char *name, *doc;
  int backward;
  size_t runs[TR_ALL + 1], failed[TR_ALL + 1];
  double worst[TR_ALL + 1];
  int touched, failed_now; /* in the case being read */
} tr_subject;

typedef struct tr_stats {
  tr_rule *rules;
  size_t n_rules, cap_rules;
  tr_subject subj[KERN_REFORM_COUNT + 2];
  size_t n_subj;
  json_t *fails;
  size_t checks;
} tr_stats;

static json_t *num(double v) {
  if (isfinite(v)) return json_real(v);
  return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static tr_rule *stats_rule(tr_stats *st, const char *rule, const char *tensor, const char *metric) {
  for (size_t i = 0; i < st->n_rules; i++)
    if (!strcmp(st->rules[i].rule, rule) && !strcmp(st->rules[i].tensor, tensor)) return &st->rules[i];
  if (st->n_rules == st->cap_rules) {
    size_t cap = st->cap_rules ? 2 * st->cap_rules : 16;
    tr_rule *nr = realloc(st->rules, cap * sizeof *nr);
    if (!nr) return NULL;
    st->rules = nr, st->cap_rules = cap;
  }
  tr_rule *r = &st->rules[st->n_rules++];
  memset(r, 0, sizeof *r);
  snprintf(r->rule, sizeof r->rule, "%s", rule);
  snprintf(r->tensor, sizeof r->tensor, "%s", tensor);
  snprintf(r->metric, sizeof r->metric, "%s", metric);
  r->worst_ratio = -INFINITY;
  return r;
}

static tr_subject *stats_subject(tr_stats *st, const char *name) {
  for (size_t i = 0; name && i < st->n_subj; i++)
    if (!strcmp(st->subj[i].name, name)) return &st->subj[i];
  return NULL;
}

static void stats_clear(tr_stats *st) {
  for (size_t i = 0; i < st->n_rules; i++) {
    free(st->rules[i].ratio);
    json_decref(st->rules[i].worst);
  }
  free(st->rules);
  json_decref(st->fails);
  memset(st, 0, sizeof *st);
}

static void stats_init(tr_stats *st, const parity_trust_opts *o) {
  memset(st, 0, sizeof *st);
  st->fails = json_array();
  st->subj[st->n_subj++] = (tr_subject){.name = "scan", .doc = "the stock scan (the baseline), by its bands",
                                        .backward = 1};
  st->subj[st->n_subj++] = (tr_subject){.name = "affine-prefix",
                                        .doc = "the stock context-parallel kernel, at each device count",
                                        .backward = 1};
  for (size_t i = 0; i < o->n_reforms; i++) {
    const kern_reform_row *rr = kern_reform_row_of(o->reforms[i]);
    st->subj[st->n_subj++] = (tr_subject){.name = rr->name, .doc = rr->doc, .backward = rr->has_vjp};
  }
  for (size_t i = 0; i < st->n_subj; i++)
    for (int g = 0; g <= TR_ALL; g++) st->subj[i].worst[g] = -INFINITY;
}

/* One check of a run: its ratio into the rule's distribution, a FAIL into
 * the list. */
static int stats_check(tr_stats *st, const json_t *k, const char *run, int64_t devices, tr_subject *sj) {
  const char *rule = report_doc_str(k, "rule"), *tensor = report_doc_str(k, "tensor");
  const char *metric = report_doc_str(k, "metric");
  double v = NAN, l = NAN;
  report_doc_num(k, "value", &v);
  report_doc_num(k, "limit", &l);
  const double m = report_summary_margin(v, l);
  const int pass = json_is_true(json_object_get(k, "pass"));
  tr_rule *r = stats_rule(st, rule ? rule : "?", tensor ? tensor : "?", metric ? metric : "?");
  if (!r) return GDN_ERR_NOMEM;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    double *nr = realloc(r->ratio, cap * sizeof *nr);
    if (!nr) return GDN_ERR_NOMEM;
    r->ratio = nr, r->cap = cap;
  }
  r->ratio[r->n++] = m;
  st->checks++;
  json_t *rec = json_pack("{sssssIsssssssoso}", "subject", sj->name, "run", run, "devices", (json_int_t)devices,
                          "rule", r->rule, "tensor", r->tensor, "metric", r->metric, "value", num(v), "limit",
                          num(l));
  if (!rec) return GDN_ERR_NOMEM;
  json_object_set_new(rec, "ratio", num(m));
  if (m > r->worst_ratio) {
    json_decref(r->worst);
    r->worst = json_incref(rec);
    r->worst_ratio = m;
  }
  sj->touched = 1;
  if (!pass) {
    r->fails++;
    sj->failed_now = 1;
    json_array_append(st->fails, rec);
  }
  json_decref(rec);
  return GDN_OK;
}

/* Every counted check of one run's document (see the header: the scan
 * from the first case, the others from every case). */
static int stats_run(tr_stats *st, const parity_doc *d, const char *run, int regime) {
  for (size_t c = 0; c < json_array_size(d->cases); c++) {
    const json_t *jc = json_array_get(d->cases, c);
    const json_int_t devices = json_integer_value(json_object_get(jc, "devices"));
    const json_t *checks = json_object_get(json_object_get(jc, "tolerance"), "checks");
    for (size_t i = 0; i < st->n_subj; i++) st->subj[i].touched = st->subj[i].failed_now = 0;
    for (size_t i = 0; i < json_array_size(checks); i++) {
      const json_t *k = json_array_get(checks, i);
      const char *name = report_doc_str(k, "subject");
      tr_subject *sj = stats_subject(st, name);
      if (!sj || (c > 0 && !strcmp(name, "scan"))) continue;
      int rc = stats_check(st, k, run, devices, sj);
      if (rc) return rc;
      double v = NAN, l = NAN;
      report_doc_num(k, "value", &v);
      report_doc_num(k, "limit", &l);
      const double m = report_summary_margin(v, l);
      for (int g = 0; g < 2; g++) {
        const int col = g ? TR_ALL : regime;
        if (m > sj->worst[col]) sj->worst[col] = m;
      }
    }
    for (size_t i = 0; i < st->n_subj; i++) {
      tr_subject *sj = &st->subj[i];
      if (!sj->touched) continue;
      sj->runs[regime]++, sj->runs[TR_ALL]++;
      sj->failed[regime] += (size_t)sj->failed_now, sj->failed[TR_ALL] += (size_t)sj->failed_now;
    }
  }
  return GDN_OK;
}

/* ---- one run ---- */

static void run_label(char *buf, size_t n, const gdn_shape *s, int h0, int regime, int64_t seed) {
  char sh[128];
  gdn_shape_format(s, sh, sizeof sh);
  snprintf(buf, n, "%s%s %s seed %" PRId64, sh, h0 ? " h0" : "", parity_trust_regime_names[regime], seed);
}

static int run_inputs(const parity_trust_opts *o, const gdn_shape *s, int h0, int regime, int64_t seed,
                      gdn_inputs *in, parity_reference *ref, gdn_cotangents *ct, gdn_error *e) {
  unsigned flags = (h0 ? GDN_SYNTH_H0 : 0u) | (regime == PARITY_TRUST_INIT ? 0u : GDN_SYNTH_SLOW_GATES);
  gdn_synth_opts so = {(uint64_t)seed, flags, 0};
  int rc = gdn_synth_generate(in, s, &so, e);
  if (rc) return rc;
  parity_trust_spike(in, (parity_trust_regime)regime, (uint64_t)seed);
  if ((rc = parity_reference_compute(ref, in, o->tier, o->oracle_bits, e))) return rc;
  if (!o->grad) return GDN_OK;
  if ((rc = gdn_cotangents_alloc(ct, s, 1, e))) return rc;
  gdn_cotangents_synth(ct, (uint64_t)seed);
  return parity_reference_compute_grads(ref, in, ct, o->tier, o->oracle_bits, e);
}

static parity_sweep_opts run_sweep_opts(const parity_trust_opts *o, const parity_subject_methods *const *rows,
                                        const gdn_cotangents *ct) {
  parity_sweep_opts so;
  parity_sweep_opts_init(&so);
  so.chunks[0] = o->chunk;
  so.n_chunks = 1;
  memcpy(so.devices, o->devices, o->n_devices * sizeof *o->devices);
  so.n_devices = o->n_devices;
  so.devices_default = 0;
  so.prefixes[0] = KERN_PREFIX_SEQUENTIAL;
  so.n_prefixes = 1;
  so.dtype = GDN_DTYPE_F32;
  so.matmul = KERN_MATMUL_IEEE;
  so.ftz = 0;
  so.policy = o->policy;
  so.verbosity = 0;
  so.log = NULL;
  so.reproducible = 1;
  so.extra = rows;
  so.n_extra = o->n_reforms;
  so.ct = o->grad ? ct : NULL;
  return so;
}

static int run_one(const parity_trust_opts *o, tr_stats *st, const parity_subject_methods *const *rows,
                   const gdn_shape *s, int h0, int regime, int64_t seed, gdn_error *e) {
  char label[256];
  run_label(label, sizeof label, s, h0, regime, seed);
  gdn_inputs in;
  gdn_inputs_init(&in);
  parity_reference ref;
  parity_reference_init(&ref);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  parity_doc d;
  int have_doc = 0;
  parity_input_info info = {label, "synthetic", NULL, NULL};
  int rc = run_inputs(o, s, h0, regime, seed, &in, &ref, &ct, e);
  parity_sweep_opts so = run_sweep_opts(o, rows, &ct);
  if (!rc && !(rc = parity_doc_init(&d, NULL, o->policy, e))) have_doc = 1;
  if (!rc) rc = parity_sweep_run(&d, &in, &info, &ref, NULL, 0, &so, e);
  if (!rc && (rc = stats_run(st, &d, label, regime))) gdn_error_set(e, rc, "out of memory (trust statistics)");
  if (!rc && o->progress) fprintf(o->progress, "trust: %s: %zu false FAIL%s so far\n", label,
                                  json_array_size(st->fails), json_array_size(st->fails) == 1 ? "" : "s");
  if (rc) gdn_error_prefix(e, "trust: %s: ", label);
  if (have_doc) parity_doc_clear(&d);
  gdn_cotangents_clear(&ct);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
  return rc;
}

/* ---- the document ---- */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest rank: element ceil(q n) - 1 of the sorted values. */
static double quantile(const double *x, size_t n, double q) {
  size_t k = (size_t)ceil(q * (double)n);
  return x[k ? k - 1 : 0];
}

static json_t *rules_json(tr_stats *st) {
  json_t *a = json_array();
  for (size_t i = 0; i < st->n_rules; i++) {
    tr_rule *r = &st->rules[i];
    qsort(r->ratio, r->n, sizeof *r->ratio, cmp_double);
    json_t *dist = json_object();
    json_object_set_new(dist, "min", num(r->ratio[0]));
    json_object_set_new(dist, "median", num(quantile(r->ratio, r->n, 0.5)));
    json_object_set_new(dist, "p90", num(quantile(r->ratio, r->n, 0.9)));
    json_object_set_new(dist, "max", num(r->ratio[r->n - 1]));
    json_array_append_new(a, json_pack("{sssssssIsIsosO}", "rule", r->rule, "tensor", r->tensor, "metric", r->metric,
                                       "checks", (json_int_t)r->n, "fails", (json_int_t)r->fails, "ratio", dist,
                                       "worst", r->worst));
  }
  return a;
}

static json_t *subjects_json(const tr_stats *st) {
  json_t *a = json_array();
  for (size_t i = 0; i < st->n_subj; i++) {
    const tr_subject *sj = &st->subj[i];
    json_t *by = json_object();
    for (int g = 0; g < PARITY_TRUST_REGIMES; g++) {
      if (!sj->runs[g]) continue;
      json_object_set_new(by, parity_trust_regime_names[g],
                          json_pack("{sIsIso}", "runs", (json_int_t)sj->runs[g], "failed_runs",
                                    (json_int_t)sj->failed[g], "worst_ratio", num(sj->worst[g])));
    }
    json_array_append_new(a, json_pack("{sssssbsIsIsoso}", "name", sj->name, "doc", sj->doc, "backward",
                                       sj->backward, "runs", (json_int_t)sj->runs[TR_ALL], "failed_runs",
                                       (json_int_t)sj->failed[TR_ALL], "worst_ratio", num(sj->worst[TR_ALL]),
                                       "regimes", by));
  }
  return a;
}

static json_t *budget_json(const parity_trust_opts *o, size_t runs) {
  json_t *b = json_object(), *shapes = json_array(), *dev = json_array(), *reg = json_array(), *h0 = json_array();
  for (size_t i = 0; i < o->n_shapes; i++) {
    char sh[128];
    gdn_shape_format(&o->shapes[i], sh, sizeof sh);
    json_array_append_new(shapes, json_string(sh));
  }
  for (size_t i = 0; i < o->n_devices; i++) json_array_append_new(dev, json_integer((json_int_t)o->devices[i]));
  for (size_t i = 0; i < o->n_regimes; i++) json_array_append_new(reg, json_string(parity_trust_regime_names[o->regimes[i]]));
  for (size_t i = 0; i < o->n_h0; i++) json_array_append_new(h0, json_boolean(o->h0[i]));
  json_object_set_new(b, "campaign", json_boolean(o->campaign));
  json_object_set_new(b, "shapes", shapes);
  json_object_set_new(b, "chunk", json_integer((json_int_t)o->chunk));
  json_object_set_new(b, "devices", dev);
  json_object_set_new(b, "regimes", reg);
  json_object_set_new(b, "h0", h0);
  json_object_set_new(b, "seeds", json_integer((json_int_t)o->seeds));
  json_object_set_new(b, "first_seed", json_integer((json_int_t)o->first_seed));
  json_object_set_new(b, "grad", json_boolean(o->grad));
  json_object_set_new(b, "oracle", json_string(parity_oracle_tier_name(o->tier)));
  json_object_set_new(b, "runs", json_integer((json_int_t)runs));
  return b;
}

static json_t *trust_doc(const parity_trust_opts *o, tr_stats *st, size_t runs, double seconds) {
  json_t *d = json_object();
  json_object_set_new(d, "schema", json_string(TRUST_SCHEMA));
  json_object_set_new(d, "version", json_integer(TRUST_VERSION));
  json_object_set_new(d, "tool", json_string("gdn-parity"));
  json_object_set_new(d, "tool_version", json_string(GDN_VERSION));
  json_object_set_new(d, "command", o->command ? json_string(o->command) : json_null());
  json_object_set_new(d, "policy", json_pack("{sssssbss}", "name", o->policy->name, "source", o->policy->source,
                                             "builtin", o->policy->builtin, "sha256", o->policy->sha256));
  json_object_set_new(d, "budget", budget_json(o, runs));
  double worst = -INFINITY;
  for (size_t i = 0; i < st->n_rules; i++) worst = fmax(worst, st->rules[i].worst_ratio);
  json_object_set_new(d, "checks", json_integer((json_int_t)st->checks));
  json_object_set_new(d, "false_fails", json_integer((json_int_t)json_array_size(st->fails)));
  json_object_set_new(d, "worst_ratio", num(worst));
  json_object_set_new(d, "pass", json_boolean(json_array_size(st->fails) == 0));
  json_object_set_new(d, "rules", rules_json(st));
  json_object_set_new(d, "subjects", subjects_json(st));
  json_object_set_new(d, "fails", json_incref(st->fails));
  if (!o->reproducible) json_object_set_new(d, "seconds", num(seconds));
  return d;
}

int parity_trust_run(const parity_trust_opts *o, json_t **doc, gdn_error *e) {
  *doc = NULL;
  const parity_subject_methods *rows[KERN_REFORM_COUNT];
  for (size_t i = 0; i < o->n_reforms; i++) rows[i] = parity_trust_subject(o->reforms[i]);
  for (size_t i = 0; i < o->n_shapes; i++) {
    parity_sweep_opts so = run_sweep_opts(o, rows, NULL);
    if (parity_sweep_validate(&o->shapes[i], &so, e)) return gdn_error_prefix(e, "trust: "), e->code;
  }
  tr_stats st;
  stats_init(&st, o);
  const double t0 = gdn_clock_seconds();
  size_t runs = 0;
  int rc = st.fails ? GDN_OK : gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  for (size_t si = 0; !rc && si < o->n_shapes; si++)
    for (size_t hi = 0; !rc && hi < o->n_h0; hi++)
      for (size_t ri = 0; !rc && ri < o->n_regimes; ri++)
        for (int64_t seed = o->first_seed; !rc && seed < o->first_seed + o->seeds; seed++, runs++)
          rc = run_one(o, &st, rows, &o->shapes[si], o->h0[hi], o->regimes[ri], seed, e);
  if (!rc && !st.checks)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "trust: policy '%s' judged no check (no rule for float32 IEEE outputs)",
                       o->policy->name);
  if (!rc && !(*doc = trust_doc(o, &st, runs, gdn_clock_seconds() - t0)))
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (trust document)");
  stats_clear(&st);
  return rc;
}

/* ---- the text table ---- */

static double jnum(const json_t *o, const char *k) {
  double v = NAN;
  report_doc_num(o, k, &v);
  return v;
}

void parity_trust_log(FILE *f, const json_t *doc) {
  const json_t *rules = json_object_get(doc, "rules"), *subj = json_object_get(doc, "subjects");
  fprintf(f, "policy %s; %" JSON_INTEGER_FORMAT " runs, %" JSON_INTEGER_FORMAT " checks\n\n",
          report_doc_str(json_object_get(doc, "policy"), "name"),
          json_integer_value(json_object_get(json_object_get(doc, "budget"), "runs")),
          json_integer_value(json_object_get(doc, "checks")));
  fprintf(f, "%-44s %-6s %7s %6s  %9s %9s %9s %9s\n", "rule", "tensor", "checks", "FAILs", "min", "median", "p90",
          "max");
  for (size_t i = 0; i < json_array_size(rules); i++) {
    const json_t *r = json_array_get(rules, i), *d = json_object_get(r, "ratio");
    fprintf(f, "%-44s %-6s %7" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT "  %9.3g %9.3g %9.3g %9.3g\n",
            report_doc_str(r, "rule"), report_doc_str(r, "tensor"), json_integer_value(json_object_get(r, "checks")),
            json_integer_value(json_object_get(r, "fails")), jnum(d, "min"), jnum(d, "median"), jnum(d, "p90"),
            jnum(d, "max"));
  }
  fprintf(f, "\n%-22s %7s %12s %10s   failed runs per regime\n", "subject", "runs", "failed runs", "worst");
  for (size_t i = 0; i < json_array_size(subj); i++) {
    const json_t *s = json_array_get(subj, i), *by = json_object_get(s, "regimes");
    fprintf(f, "%-22s %7" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT " %10.3g  ", report_doc_str(s, "name"),
            json_integer_value(json_object_get(s, "runs")), json_integer_value(json_object_get(s, "failed_runs")),
            jnum(s, "worst_ratio"));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)by, key, v)
    fprintf(f, " %s %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT, key,
            json_integer_value(json_object_get(v, "failed_runs")), json_integer_value(json_object_get(v, "runs")));
    fputc('\n', f);
  }
  fprintf(f, "\ntrust: %" JSON_INTEGER_FORMAT " false FAIL%s in %" JSON_INTEGER_FORMAT " checks; worst value/limit %.3g\n",
          json_integer_value(json_object_get(doc, "false_fails")),
          json_integer_value(json_object_get(doc, "false_fails")) == 1 ? "" : "s",
          json_integer_value(json_object_get(doc, "checks")), jnum(doc, "worst_ratio"));
}
