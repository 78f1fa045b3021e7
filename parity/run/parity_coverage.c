#include "parity_coverage.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gdn_alloc.h"
#include "gdn_config.h"
#include "gdn_inputs.h"
#include "gdn_synth.h"
#include "gdn_text.h"
#include "parity_coverage_stream.h"
#include "parity_doc.h"
#include "parity_subject.h"
#include "parity_sweep.h"
#include "parity_sweep_stream.h"
#include "report_doc.h"
#include "report_summary.h"
#include "gdn_clock.h"

#define COVERAGE_SCHEMA "gdn-parity-coverage"
#define COVERAGE_VERSION 1
#define COVER_METHOD "greedy set cover, not proven minimal"
#define COVER_TIES "ties go to the lower case index (the cover depends on the kill matrix only, never on timings)"

/* ---- mutant selection ---- */

static int mutant_names_list(char *buf, size_t n) {
  buf[0] = '\0';
  for (int m = 1; m < KERN_MUTANT_COUNT; m++) {
    strncat(buf, kern_mutant_name((kern_mutant)m), n - strlen(buf) - 1);
    if (m + 1 < KERN_MUTANT_COUNT) strncat(buf, ", ", n - strlen(buf) - 1);
  }
  return 0;
}

/* One name of a --mutants list: a catalogue row other than none, given
 * once; 'all' only alone (it already names every row). */
static int parse_one_mutant(const char *s, const char *name, size_t len, const unsigned char *on, const char *names,
                            kern_mutant *m, gdn_error *e) {
  gdn_error sub;
  gdn_error_init(&sub);
  *m = KERN_MUTANT_NONE;
  if (len && len < 95 && !strcmp(name, "all"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--mutants '%s': 'all' stands alone (it selects every mutant); give "
                         "all, or a list of names without it (any of: %s)", gdn_text_show(s), names);
  if (!len || len >= 95 || kern_mutant_parse(name, m, &sub) || *m == KERN_MUTANT_NONE)
    return gdn_error_set(e, GDN_ERR_INPUT, "--mutants: unknown mutant '%s'%s (valid: all alone, or any of: %s)",
                         gdn_text_show(name), *m == KERN_MUTANT_NONE && len && len < 95 && !sub.code
                                                  ? " (none is the correct program, always run)" : "",
                         names);
  if (on[*m])
    return gdn_error_set(e, GDN_ERR_INPUT, "--mutants '%s': '%s' is listed twice; give each mutant once",
                         gdn_text_show(s), gdn_text_show(name));
  return GDN_OK;
}

int parity_coverage_parse_mutants(const char *s, kern_mutant *out, size_t *n, gdn_error *e) {
  unsigned char on[KERN_MUTANT_COUNT] = {0};
  char names[1024];
  mutant_names_list(names, sizeof names);
  if (!s || !*s) return gdn_error_set(e, GDN_ERR_INPUT, "--mutants: empty; give all or names (one of: %s)", names);
  if (!strcmp(s, "all")) {
    memset(on + 1, 1, KERN_MUTANT_COUNT - 1);
  } else {
    for (const char *p = s; *p;) {
      const char *c = strchr(p, ',');
      size_t len = c ? (size_t)(c - p) : strlen(p);
      char name[96];
      snprintf(name, sizeof name, "%.*s", (int)(len < 95 ? len : 95), p);
      kern_mutant m;
      int rc = parse_one_mutant(s, name, len, on, names, &m, e);
      if (rc) return rc;
      on[m] = 1;
      p += len + (c != NULL);
      if (c && !*p)
        return gdn_error_set(e, GDN_ERR_INPUT, "--mutants: '%s' ends with a comma (valid: all alone, or any of: %s)",
                             gdn_text_show(s), names);
    }
  }
  *n = 0;
  for (int m = 1; m < KERN_MUTANT_COUNT; m++)
    if (on[m]) out[(*n)++] = (kern_mutant)m;
  return GDN_OK;
}

/* ---- greedy set cover ---- */

size_t parity_coverage_cover(const unsigned char *kills, size_t n_cases, size_t n_mut, size_t *picked) {
  unsigned char *left = calloc(n_mut ? n_mut : 1, 1); /* a killable mutant not yet killed */
  if (!left) return 0;
  for (size_t j = 0; j < n_mut; j++)
    for (size_t i = 0; i < n_cases && !left[j]; i++) left[j] = kills[i * n_mut + j] != 0;
  size_t np = 0;
  for (;;) {
    size_t best = SIZE_MAX, best_gain = 0;
    for (size_t i = 0; i < n_cases; i++) {
      size_t gain = 0;
      for (size_t j = 0; j < n_mut; j++) gain += left[j] && kills[i * n_mut + j];
      if (gain > best_gain) best = i, best_gain = gain; /* strict: ties keep the lower index */
    }
    if (best == SIZE_MAX) break;
    picked[np++] = best;
    for (size_t j = 0; j < n_mut; j++)
      if (kills[best * n_mut + j]) left[j] = 0;
  }
  free(left);
  return np;
}

/* ---- one entry ---- */

/* A finite double, or the string jansson cannot hold it as. */
static json_t *num(double v) {
  if (isfinite(v)) return json_real(v);
  return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/* What the entry is, in words: its shape, inputs and the configurations
 * its sweep runs. */
static void entry_label(const parity_grid_entry *en, char *buf, size_t n) {
  const parity_synth_spec *sp = &en->spec;
  const parity_sweep_opts *o = &en->opts;
  char shape[128], cfg[256] = "";
  gdn_shape_format(&sp->shape, shape, sizeof shape);
  for (size_t i = 0; i < o->n_chunks; i++)
    snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), "%sC%" PRId64, i ? "," : " ", o->chunks[i]);
  for (size_t i = 0; i < o->n_devices; i++)
    snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), "%sD%" PRId64, i ? "," : " ", o->devices[i]);
  for (size_t i = 0; i < o->n_prefixes; i++)
    snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), "%s%s", i ? "," : " ", kern_prefix_name(o->prefixes[i]));
  unsigned f = sp->synth.flags;
  char docs[64] = "";
  if (sp->documents > 1)
    snprintf(docs, sizeof docs, ", %" PRId64 " documents (%s)", sp->documents, gdn_packing_name(sp->packing));
  snprintf(buf, n, "%s seed %" PRIu64 "%s%s%s%s;%s %s %s", shape, sp->synth.seed, (f & GDN_SYNTH_H0) ? ", h0" : "",
           (f & GDN_SYNTH_SLOW_GATES) ? ", slow gates" : "", (f & GDN_SYNTH_PRELUDE_BF16) ? ", bf16 prelude" : "",
           docs, cfg, gdn_dtype_name(o->dtype), kern_matmul_name(o->matmul));
}

/* The inputs and the reference of an entry. */
static int entry_inputs(const parity_coverage_opts *o, const parity_synth_spec *sp, gdn_inputs *in,
                        parity_reference *ref, gdn_error *e) {
  int rc = gdn_synth_generate(in, &sp->shape, &sp->synth, e);
  if (!rc) rc = gdn_synth_segments(in, sp->synth.seed, sp->documents, e);
  if (rc) return rc;
  in->packing = sp->packing;
  return parity_reference_compute(ref, in, o->tier, o->oracle_bits, e);
}

/* The entry's sweep options: quiet, the run's policy, and `extra` rows. */
static parity_sweep_opts entry_opts(const parity_coverage_opts *o, const parity_grid_entry *en,
                                    const parity_subject_methods *const *extra, size_t n_extra) {
  parity_sweep_opts so = en->opts;
  so.policy = o->policy;
  so.verbosity = 0;
  so.log = NULL;
  so.reproducible = o->reproducible;
  so.mutant = KERN_MUTANT_NONE;
  so.extra = extra;
  so.n_extra = n_extra;
  so.ct = NULL;
  so.progress = o->progress;
  return so;
}

/* The correct kernels' verdict over the plain sweep's cases: NULL when
 * every case passes, else the first failing case's id and deciding check. */
static json_t *correct_failure(const parity_doc *d) {
  for (size_t c = 0; c < json_array_size(d->cases); c++) {
    const json_t *jc = json_array_get(d->cases, c);
    if (json_is_true(json_object_get(jc, "pass"))) continue;
    const json_t *tol = json_object_get(jc, "tolerance");
    const json_t *k = json_array_get(json_object_get(tol, "checks"), (size_t)report_doc_int(tol, "deciding", 0));
    return json_sprintf("case %s fails: %s", report_doc_str(jc, "id") ? report_doc_str(jc, "id") : "?",
                        k && report_doc_str(k, "name") ? report_doc_str(k, "name") : "(no check)");
  }
  return NULL;
}

/* Mutant `name`'s killer among the mutant sweep's cases: its failing check
 * with the largest value / limit, the earliest on ties; NULL: survives. */
static json_t *find_killer(const parity_doc *d, const char *name) {
  const json_t *best = NULL, *best_case = NULL;
  double best_m = -INFINITY;
  for (size_t c = 0; c < json_array_size(d->cases); c++) {
    const json_t *jc = json_array_get(d->cases, c);
    const json_t *checks = json_object_get(json_object_get(jc, "tolerance"), "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
      const json_t *k = json_array_get(checks, i);
      const char *subj = report_doc_str(k, "subject");
      if (!subj || strcmp(subj, name) || json_is_true(json_object_get(k, "pass"))) continue;
      double v = NAN, l = NAN;
      report_doc_num(k, "value", &v);
      report_doc_num(k, "limit", &l);
      double m = report_summary_margin(v, l);
      if (!best || m > best_m) best = k, best_case = jc, best_m = m;
    }
  }
  if (!best) return NULL;
  double v = NAN, l = NAN;
  report_doc_num(best, "value", &v);
  report_doc_num(best, "limit", &l);
  json_t *j = json_object();
  json_object_set_new(j, "case", json_string(report_doc_str(best_case, "id")));
  json_object_set_new(j, "check", json_string(report_doc_str(best, "name")));
  json_object_set_new(j, "rule", json_string(report_doc_str(best, "rule")));
  json_object_set_new(j, "tensor", json_string(report_doc_str(best, "tensor")));
  json_object_set_new(j, "metric", json_string(report_doc_str(best, "metric")));
  json_object_set_new(j, "value", num(v));
  json_object_set_new(j, "limit", num(l));
  json_object_set_new(j, "margin", num(best_m));
  return j;
}

/* The entry's record: its label, case ids, time, the correct kernels'
 * verdict and one kill per selected mutant (kill row `row`). */
static json_t *entry_record(const parity_coverage_opts *o, size_t i, const parity_doc *plain, const parity_doc *mut,
                            double seconds, unsigned char *row) {
  char label[512];
  entry_label(&o->grid->entries[i], label, sizeof label);
  json_t *j = json_object(), *ids = json_array(), *kills = json_array();
  json_object_set_new(j, "index", json_integer((json_int_t)i));
  json_object_set_new(j, "label", json_string(label));
  for (size_t c = 0; c < json_array_size(plain->cases); c++)
    json_array_append_new(ids, json_string(report_doc_str(json_array_get(plain->cases, c), "id")));
  json_object_set_new(j, "case_ids", ids);
  if (!o->reproducible) json_object_set_new(j, "seconds", num(seconds));
  json_t *fail = correct_failure(plain);
  json_object_set_new(j, "correct_pass", json_boolean(fail == NULL));
  json_object_set_new(j, "correct_failure", fail ? fail : json_null());
  for (size_t m = 0; m < o->n_mutants; m++) {
    const char *name = kern_mutant_name(o->mutants[m]);
    json_t *k = find_killer(mut, name), *jk = json_object();
    json_object_set_new(jk, "mutant", json_string(name));
    json_object_set_new(jk, "killed", json_boolean(k != NULL));
    if (k) json_object_update(jk, k);
    json_decref(k);
    row[m] = k != NULL;
    json_array_append_new(kills, jk);
  }
  json_object_set_new(j, "kills", kills);
  return j;
}

/* A "grad" entry: the cotangents (from the entry's seed, as sweep's) and
 * the reference's VJP for them; both sweeps then run the backward too (a
 * forward mutant row gives none, a backward row its broken one). */
static int entry_grads(const parity_coverage_opts *o, const parity_synth_spec *sp, const gdn_inputs *in,
                       parity_reference *ref, gdn_cotangents *ct, gdn_error *e) {
  if (!sp->grad) return GDN_OK;
  int rc = gdn_cotangents_alloc(ct, &in->shape, 1, e);
  if (rc) return rc;
  gdn_cotangents_synth(ct, sp->synth.seed);
  return parity_reference_compute_grads(ref, in, ct, o->tier, o->oracle_bits, e);
}

/* One sweep of the entry under so into d: whole (in, ref) or, with a
 * plan of several groups, streamed (parity_coverage_stream.h). */
static int entry_sweep(const parity_coverage_opts *o, const parity_grid_entry *en, const parity_stream_plan *plan,
                       const gdn_inputs *in, const parity_reference *ref, const parity_sweep_opts *so, parity_doc *d,
                       gdn_error *e) {
  parity_input_info info = {"synthetic", "synthetic", NULL, NULL};
  if (plan->n_groups > 1) return parity_coverage_sweep_streamed(d, &en->spec, plan, o->tier, o->oracle_bits, so, e);
  parity_progress_add(o->progress, parity_sweep_steps(so, &en->spec.shape));
  return parity_sweep_run(d, in, &info, ref, NULL, 0, so, e);
}

/* One entry: inputs and reference, the plain sweep (timed), the mutant
 * sweep; its record appended to cases and its kill row filled.  Over
 * o->max_bytes both sweeps stream by head group instead. */
static int entry_run(const parity_coverage_opts *o, size_t i, const parity_subject_methods *const *rows,
                     json_t *cases, unsigned char *row, gdn_error *e) {
  const parity_grid_entry *en = &o->grid->entries[i];
  gdn_inputs in;
  gdn_inputs_init(&in);
  parity_reference ref;
  parity_reference_init(&ref);
  parity_doc plain, mut;
  int have_plain = 0, have_mut = 0;
  parity_sweep_opts so = entry_opts(o, en, NULL, 0), sm = entry_opts(o, en, rows, o->n_mutants);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  double t0 = gdn_clock_seconds();
  parity_stream_plan plan;
  int rc = parity_coverage_entry_plan(&en->spec, &so, o->max_bytes, o->group_heads, &plan, e);
  if (!rc && plan.n_groups == 1) rc = entry_inputs(o, &en->spec, &in, &ref, e);
  if (!rc && plan.n_groups == 1) rc = entry_grads(o, &en->spec, &in, &ref, &ct, e);
  if (en->spec.grad && plan.n_groups == 1) so.ct = sm.ct = &ct;
  if (!rc && !(rc = parity_doc_init(&plain, NULL, o->policy, e))) have_plain = 1;
  if (!rc) rc = entry_sweep(o, en, &plan, &in, &ref, &so, &plain, e);
  double seconds = gdn_clock_seconds() - t0;
  if (!rc && !(rc = parity_doc_init(&mut, NULL, o->policy, e))) have_mut = 1;
  if (!rc) rc = entry_sweep(o, en, &plan, &in, &ref, &sm, &mut, e);
  if (!rc) {
    json_t *rec = entry_record(o, i, &plain, &mut, seconds, row);
    if (!rec || json_array_append_new(cases, rec))
      rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (coverage record)");
  }
  if (rc) gdn_error_prefix(e, "%s: entry %zu: ", o->grid_name ? o->grid_name : "grid", i);
  if (have_mut) parity_doc_clear(&mut);
  if (have_plain) parity_doc_clear(&plain);
  gdn_cotangents_clear(&ct);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
  return rc;
}

/* An entry that streams (over o->max_bytes) is planned before any entry
 * runs: a budget it cannot meet is refused then. */
static int entry_stream_check(const parity_coverage_opts *o, size_t i, const parity_subject_methods *const *rows,
                              gdn_error *e) {
  const parity_grid_entry *en = &o->grid->entries[i];
  const parity_sweep_opts sm = entry_opts(o, en, rows, o->n_mutants);
  parity_stream_plan plan;
  int rc = parity_coverage_entry_plan(&en->spec, &sm, o->max_bytes, o->group_heads, &plan, e);
  if (rc) gdn_error_prefix(e, "%s: entry %zu: ", o->grid_name ? o->grid_name : "grid", i);
  return rc;
}

/* ---- the document ---- */

static json_t *mutants_json(const parity_coverage_opts *o) {
  json_t *a = json_array();
  for (size_t m = 0; m < o->n_mutants; m++) {
    const kern_mutant_row *r = kern_mutant_row_of(o->mutants[m]);
    json_t *needs = json_array();
    for (unsigned b = 0; b < 32; b++) { /* a bit added to the catalogue later is still shown */
      if (!(r->needs & (1u << b))) continue;
      const char *nn = kern_mutant_need_name(b);
      json_array_append_new(needs, nn ? json_string(nn) : json_sprintf("bit %u", b));
    }
    json_array_append_new(a, json_pack("{sssssO}", "name", r->name, "doc", r->doc, "needs", needs));
    json_decref(needs);
  }
  return a;
}

/* Whether mutant m (column m) is killed by some case; its first killer's
 * index in *first. */
static int killed_by_some(const unsigned char *kills, size_t n_cases, size_t nm, size_t m, size_t *first) {
  for (size_t i = 0; i < n_cases; i++)
    if (kills[i * nm + m]) return *first = i, 1;
  return 0;
}

/* The survivors (each with whether the README's table explains it) and the
 * contradictions: a mutant the table calls unkillable that this run kills
 * (the README is wrong; the run fails). */
static json_t *survivors_json(const parity_coverage_opts *o, const unsigned char *kills, size_t n_cases,
                              size_t *killable, json_t *contra) {
  const size_t nm = o->n_mutants;
  const parity_readme_unkillable *u = o->unkillable;
  json_t *surv = json_array();
  *killable = 0;
  for (size_t m = 0; m < nm; m++) {
    const char *name = kern_mutant_name(o->mutants[m]);
    const int line = u ? u->line[o->mutants[m]] : 0;
    size_t first = 0;
    if (killed_by_some(kills, n_cases, nm, m, &first)) {
      ++*killable;
      if (line)
        json_array_append_new(contra, json_pack("{sssisI}", "name", name, "readme_line", line, "case",
                                                (json_int_t)first));
      continue;
    }
    json_t *s = json_pack("{ssso}", "name", name, "readme_explains", u ? json_boolean(line != 0) : json_null());
    if (line) json_object_set_new(s, "readme_line", json_integer(line));
    json_array_append_new(surv, s);
  }
  return surv;
}

/* Survivors, the cover and the verdict from the kill matrix. */
static void summarize(const parity_coverage_opts *o, json_t *doc, const unsigned char *kills, size_t n_cases) {
  const size_t nm = o->n_mutants;
  size_t killable = 0;
  json_t *contra = json_array();
  json_t *surv = survivors_json(o, kills, n_cases, &killable, contra);
  size_t *picked = calloc(n_cases ? n_cases : 1, sizeof *picked);
  size_t np = picked ? parity_coverage_cover(kills, n_cases, nm, picked) : 0;
  json_t *cover = json_object(), *pc = json_array();
  double secs = 0;
  const json_t *cases = json_object_get(doc, "cases");
  for (size_t k = 0; k < np; k++) {
    json_array_append_new(pc, json_integer((json_int_t)picked[k]));
    double s = 0;
    report_doc_num(json_array_get(cases, picked[k]), "seconds", &s);
    secs += s;
  }
  free(picked);
  json_object_set_new(cover, "method", json_string(COVER_METHOD));
  json_object_set_new(cover, "tie_break", json_string(COVER_TIES));
  json_object_set_new(cover, "cases", pc);
  json_object_set_new(cover, "kills", json_integer((json_int_t)killable));
  if (!o->reproducible) json_object_set_new(cover, "seconds", num(secs));
  int correct = 1;
  for (size_t i = 0; i < json_array_size(cases); i++)
    correct &= json_is_true(json_object_get(json_array_get(cases, i), "correct_pass"));
  /* A survivor the README explains as unkillable (equal to the correct
   * program below round-off, say) does not fail the run: the issue asks for
   * every mutant killed *or* explained.  One nobody explains does. */
  size_t unexplained = 0;
  for (size_t i = 0; i < json_array_size(surv); i++)
    unexplained += !json_is_true(json_object_get(json_array_get(surv, i), "readme_explains"));
  int pass = correct && unexplained == 0 && json_array_size(contra) == 0;
  json_object_set_new(doc, "unexplained_survivors", json_integer((json_int_t)unexplained));
  json_object_set_new(doc, "survivors", surv);
  json_object_set_new(doc, "readme_contradictions", contra);
  json_object_set_new(doc, "cover", cover);
  json_object_set_new(doc, "killed", json_integer((json_int_t)killable));
  json_object_set_new(doc, "correct_pass", json_boolean(correct));
  json_object_set_new(doc, "pass", json_boolean(pass));
  json_object_set_new(doc, "exit_status", json_integer(pass ? 0 : 1));
  if (o->reproducible) return;
  /* What the run held at its peak, as in a results document (parity_doc.c):
   * the heap through gdn_alloc's accounting (-1 off glibc) and the peak
   * resident set; the budget (--max-bytes) bounds the first. */
  struct rusage ru;
  long long rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (long long)ru.ru_maxrss * 1024 : -1;
  json_object_set_new(doc, "memory", json_pack("{sIsI}", "peak_heap_bytes", (json_int_t)gdn_alloc_bytes_peak(),
                                               "peak_rss_bytes", (json_int_t)rss));
}

static json_t *doc_head(const parity_coverage_opts *o) {
  json_t *d = json_object();
  json_object_set_new(d, "schema", json_string(COVERAGE_SCHEMA));
  json_object_set_new(d, "version", json_integer(COVERAGE_VERSION));
  json_object_set_new(d, "tool", json_pack("{ssss}", "name", "gdn-parity", "version", GDN_VERSION));
  json_object_set_new(d, "command", o->command ? json_string(o->command) : json_null());
  if (!o->reproducible) json_object_set_new(d, "created", json_integer((json_int_t)time(NULL)));
  json_object_set_new(d, "grid", json_string(o->grid_name ? o->grid_name : ""));
  json_object_set_new(d, "oracle_tier", json_string(parity_oracle_tier_name(o->tier)));
  json_object_set_new(d, "readme", o->unkillable ? json_string(o->readme_name ? o->readme_name : "") : json_null());
  json_object_set_new(d, "mutants", mutants_json(o));
  json_object_set_new(d, "cases", json_array());
  return d;
}

int parity_coverage_run(const parity_coverage_opts *o, json_t **doc, gdn_error *e) {
  *doc = NULL;
  const size_t n = o->grid->n, nm = o->n_mutants;
  const parity_subject_methods *rows[KERN_MUTANT_COUNT];
  for (size_t m = 0; m < nm; m++)
    if (!(rows[m] = parity_subject_mutant(o->mutants[m])))
      return gdn_error_set(e, GDN_ERR_INTERNAL, "mutant %d has no subject row", (int)o->mutants[m]);
  for (size_t i = 0; i < n; i++) { /* refused before any entry runs */
    if (o->grid->entries[i].spec.grad && o->grid->entries[i].spec.documents > 1)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: entry %zu: \"grad\" with packed documents: segment ids have no "
                                             "backward yet; drop one of them", o->grid_name ? o->grid_name : "grid", i);
    int rc = entry_stream_check(o, i, rows, e);
    if (rc) return rc;
  }
  unsigned char *kills = gdn_calloc(n * nm + 1, 1, "kill matrix", e);
  json_t *d = kills ? doc_head(o) : NULL;
  if (!d) {
    gdn_free(kills);
    return kills ? gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (coverage document)") : e->code;
  }
  int rc = GDN_OK;
  for (size_t i = 0; i < n && !rc; i++) rc = entry_run(o, i, rows, json_object_get(d, "cases"), kills + i * nm, e);
  if (!rc) summarize(o, d, kills, n);
  gdn_free(kills);
  if (rc) json_decref(d);
  else *doc = d;
  return rc;
}

/* ---- the text log ---- */

static void log_matrix(FILE *f, const json_t *doc) {
  const json_t *cases = json_object_get(doc, "cases"), *muts = json_object_get(doc, "mutants");
  fprintf(f, "\nkill matrix (x: killed, .: survives; columns are cases)\n%-20s", "");
  for (size_t i = 0; i < json_array_size(cases); i++) fprintf(f, " %3zu", i);
  fputc('\n', f);
  for (size_t m = 0; m < json_array_size(muts); m++) {
    fprintf(f, "%-20s", report_doc_str(json_array_get(muts, m), "name"));
    const char *killer = NULL;
    for (size_t i = 0; i < json_array_size(cases); i++) {
      const json_t *k = json_array_get(json_object_get(json_array_get(cases, i), "kills"), m);
      int killed = json_is_true(json_object_get(k, "killed"));
      if (killed && !killer) killer = report_doc_str(k, "check");
      fprintf(f, "   %c", killed ? 'x' : '.');
    }
    fprintf(f, "   %s\n", killer ? killer : "SURVIVES");
  }
}

void parity_coverage_log(FILE *f, const json_t *doc) {
  const json_t *cases = json_object_get(doc, "cases");
  fprintf(f, "coverage of %s: %zu case%s (grid entries) x %zu mutants\n", report_doc_str(doc, "grid"),
          json_array_size(cases), json_array_size(cases) == 1 ? "" : "s",
          json_array_size(json_object_get(doc, "mutants")));
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    double s = NAN;
    int timed = report_doc_num(c, "seconds", &s);
    size_t nk = 0;
    const json_t *ks = json_object_get(c, "kills");
    for (size_t m = 0; m < json_array_size(ks); m++) nk += json_is_true(json_object_get(json_array_get(ks, m), "killed"));
    fprintf(f, "  case %zu: %s\n    correct kernels %s; kills %zu of %zu", i, report_doc_str(c, "label"),
            json_is_true(json_object_get(c, "correct_pass")) ? "pass" : "FAIL", nk, json_array_size(ks));
    if (timed) fprintf(f, "; %.2f s", s);
    fputc('\n', f);
    if (!json_is_true(json_object_get(c, "correct_pass")))
      fprintf(f, "    %s\n", report_doc_str(c, "correct_failure"));
  }
  log_matrix(f, doc);
  const json_t *surv = json_object_get(doc, "survivors"), *cover = json_object_get(doc, "cover");
  for (size_t i = 0; i < json_array_size(surv); i++) {
    const json_t *s = json_array_get(surv, i), *x = json_object_get(s, "readme_explains");
    fprintf(f, "survives: %s (README explains why it cannot be killed: %s", report_doc_str(s, "name"),
            json_is_null(x) ? "unknown, no README read" : json_is_true(x) ? "yes" : "NO");
    if (json_is_true(x)) fprintf(f, ", line %lld", (long long)report_doc_int(s, "readme_line", 0));
    fputs(")\n", f);
  }
  const json_t *contra = json_object_get(doc, "readme_contradictions");
  for (size_t i = 0; i < json_array_size(contra); i++) {
    const json_t *c = json_array_get(contra, i);
    fprintf(f, "CONTRADICTION: %s line %lld lists %s as unkillable, but case %lld kills it\n",
            report_doc_str(doc, "readme"), (long long)report_doc_int(c, "readme_line", 0), report_doc_str(c, "name"),
            (long long)report_doc_int(c, "case", 0));
  }
  fprintf(f, "cover (%s; %s): {", COVER_METHOD, "ties to the lower case index");
  const json_t *pc = json_object_get(cover, "cases");
  for (size_t i = 0; i < json_array_size(pc); i++)
    fprintf(f, "%s%lld", i ? ", " : "", (long long)json_integer_value(json_array_get(pc, i)));
  fprintf(f, "} kills %lld", (long long)json_integer_value(json_object_get(cover, "kills")));
  double s;
  if (report_doc_num(cover, "seconds", &s)) fprintf(f, " in %.2f s", s);
  fputc('\n', f);
  int correct = json_is_true(json_object_get(doc, "correct_pass"));
  fprintf(f, "\n%s: %lld of %zu mutants killed, %zu survive (%lld not explained by the README)%s%s\n",
          json_is_true(json_object_get(doc, "pass")) ? "PASS" : "FAIL",
          (long long)json_integer_value(json_object_get(doc, "killed")),
          json_array_size(json_object_get(doc, "mutants")), json_array_size(surv),
          (long long)json_integer_value(json_object_get(doc, "unexplained_survivors")),
          correct ? "" : "; the correct kernels FAIL a case, so the kill matrix means nothing",
          json_array_size(contra) ? "; the README calls a killed mutant unkillable" : "");
}
