#include "parity_sweep.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gdn_alloc.h"
#include "gdn_config.h"
#include "gdn_threads.h"
#include "kern.h"
#include "parity_json.h"
#include "parity_metrics.h"
#include "parity_upstream.h"

#define MAX_CHECKS 64
#define MAX_PROFILE_BLOCKS 256

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void parity_sweep_opts_init(parity_sweep_opts *o) {
  memset(o, 0, sizeof *o);
  o->chunks[0] = 64;
  o->n_chunks = 1;
  static const int64_t dev[] = {1, 2, 4, 8};
  memcpy(o->devices, dev, sizeof dev);
  o->n_devices = 4;
  o->devices_default = 1;
  o->prefixes[0] = KERN_PREFIX_SEQUENTIAL;
  o->n_prefixes = 1;
  o->shard = KERN_SHARD_TOKENS;
  o->dtype = GDN_DTYPE_F32;
  o->matmul = KERN_MATMUL_HIGHEST; /* the CLI contract's default, as MaxText asks */
  o->ftz = -1;
  o->verbosity = 1;
  o->log = stdout;
}

void parity_case_id(char *buf, size_t n, const gdn_shape *s, int64_t chunk, int64_t devices,
                    kern_prefix prefix, gdn_dtype dtype, kern_matmul matmul) {
  char h[64], d[64];
  if (s->Hk == s->Hv) snprintf(h, sizeof h, "H%" PRId64, s->Hv);
  else snprintf(h, sizeof h, "Hk%" PRId64 "-Hv%" PRId64, s->Hk, s->Hv);
  if (s->Dk == s->Dv) snprintf(d, sizeof d, "D%" PRId64, s->Dv);
  else snprintf(d, sizeof d, "Dk%" PRId64 "-Dv%" PRId64, s->Dk, s->Dv);
  snprintf(buf, n, "B%" PRId64 "-T%" PRId64 "-%s-%s-C%" PRId64 "-D%" PRId64 "-%s-%s-%s", s->B, s->T,
           h, d, chunk, devices, kern_prefix_name(prefix), gdn_dtype_name(dtype),
           kern_matmul_name(matmul));
}

static int nomem(gdn_error *e) {
  return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory building the results document");
}

int parity_doc_init(parity_doc *d, const char *command, const parity_policy *policy, gdn_error *e) {
  memset(d, 0, sizeof *d);
  d->min_certified = -1;
  d->min_guaranteed = -1;
  d->t_start = now();
  d->root = json_object();
  d->inputs = json_array();
  d->cases = json_array();
  if (!d->root || !d->inputs || !d->cases) goto fail;
  json_t *pol = json_pack("{ssssss}", "name", policy->name, "source", policy->source, "sha256",
                          policy->sha256);
  if (parity_json_set(d->root, "tool", json_string("gdn-parity")) ||
      parity_json_set(d->root, "version", json_string(GDN_VERSION)) ||
      parity_json_set(d->root, "git_commit", json_string(GDN_GIT_COMMIT)) ||
      parity_json_set(d->root, "schema", json_integer(1)) ||
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

int parity_doc_finish(parity_doc *d, int reproducible, gdn_error *e) {
  int pass = parity_doc_pass(d);
  /* Fixed key order: tool, version, git_commit, schema, command, created,
   * pass, exit_status, oracle, policy, inputs, cases, timing, memory. */
  json_t *root = json_object();
  if (!root) return nomem(e);
  const char *keys[] = {"tool", "version", "git_commit", "schema", "command"};
  for (size_t i = 0; i < 5; i++) json_object_set(root, keys[i], json_object_get(d->root, keys[i]));
  if (!reproducible) {
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(root, "created", json_string(ts));
  }
  json_object_set_new(root, "pass", json_boolean(pass));
  json_object_set_new(root, "exit_status", json_integer(pass ? 0 : 1));
  if (d->have_oracle) {
    /* Over all inputs: the tier (or "mixed", then each input says its own),
     * the weakest certificate, how much of the state it covers. */
    json_t *or = json_pack("{sssssi}", "tier", d->mixed_tiers ? "mixed" : parity_oracle_tier_name(d->tier),
                           "form", "token", "precision_bits", d->precision_bits);
    /* A fixture's stored oracle records its certified bits but not the
     * precision it was checked at. */
    if (or && d->check_bits > 0) json_object_set_new(or, "check_bits", json_integer(d->check_bits));
    if (or) json_object_set_new(or, "certified_bits", json_integer(d->min_certified));
    if (or && d->min_guaranteed >= 0)
      json_object_set_new(or, "guaranteed_bits", json_integer(d->min_guaranteed));
    if (or) json_object_set_new(or, "sampled_columns", json_integer(d->sampled_columns));
    if (or) json_object_set_new(or, "total_columns", json_integer(d->total_columns));
    json_object_set_new(root, "oracle", or);
  }
  json_object_set(root, "policy", json_object_get(d->root, "policy"));
  json_object_set(root, "inputs", d->inputs);
  json_object_set(root, "cases", d->cases);
  if (!reproducible) {
    json_object_set_new(
        root, "timing",
        json_pack("{s{sfsfsf}si}", "seconds", "oracle", d->t_oracle, "kernels", d->t_kernels, "total",
                  now() - d->t_start, "threads", gdn_threads_get()));
    /* What the run held at its peak: the toolkit's heap through gdn_alloc's
     * accounting (-1 off glibc) and the process's peak resident set.  Not in
     * reproducible output: per-thread scratch makes both depend on the
     * thread count, the results do not. */
    struct rusage ru;
    long long rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (long long)ru.ru_maxrss * 1024 : -1;
    json_object_set_new(root, "memory",
                        json_pack("{sIsI}", "peak_heap_bytes", (json_int_t)gdn_alloc_bytes_peak(),
                                  "peak_rss_bytes", (json_int_t)rss));
  }
  json_decref(d->root);
  d->root = root;
  return GDN_OK;
}

int parity_sweep_ftz(const parity_sweep_opts *o) {
  if (o->ftz >= 0) return o->ftz;
  if (o->dtype == GDN_DTYPE_F64) return 0;
  return o->dtype == GDN_DTYPE_BF16 || o->matmul != KERN_MATMUL_IEEE;
}

size_t parity_sweep_devices_for(const parity_sweep_opts *o, const gdn_shape *s, int64_t chunk,
                                int64_t *out) {
  int64_t n_chunks = gdn_shape_chunks(s, chunk);
  size_t k = 0;
  for (size_t i = 0; i < o->n_devices; i++)
    if (!o->devices_default ||
        (o->shard == KERN_SHARD_TOKENS ? s->T % o->devices[i] == 0 : o->devices[i] <= n_chunks))
      out[k++] = o->devices[i];
  return k;
}

int parity_sweep_validate(const gdn_shape *s, const parity_sweep_opts *o, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  for (size_t ci = 0; ci < o->n_chunks; ci++) {
    int64_t dev[PARITY_MAX_LIST];
    size_t nd = parity_sweep_devices_for(o, s, o->chunks[ci], dev);
    for (size_t di = 0; di < nd; di++) {
      kern_config cfg;
      kern_config_init(&cfg);
      cfg.chunk = o->chunks[ci];
      cfg.devices = dev[di];
      cfg.shard = o->shard;
      if ((rc = kern_config_validate(&cfg, s, e))) return rc;
    }
  }
  return GDN_OK;
}

/* Errors of x against r for o and ht. */
typedef struct pair_metrics {
  parity_metrics o, ht;
} pair_metrics;

static int measure(const gdn_outputs *x, const gdn_outputs *r, gdn_dtype o_dtype, gdn_dtype ht_dtype,
                   int with_ht, pair_metrics *m, gdn_error *e) {
  const gdn_shape *s = &x->shape;
  int64_t od[4] = {s->B, s->T, s->Hv, s->Dv}, hd[4] = {s->B, s->Hv, s->Dk, s->Dv};
  int rc = parity_metrics_compute(x->o, r->o, od, o_dtype, &m->o, e);
  if (!rc && with_ht) rc = parity_metrics_compute(x->ht, r->ht, hd, ht_dtype, &m->ht, e);
  return rc;
}

static json_t *pair_json(const pair_metrics *m, int with_ht) {
  json_t *o = json_object();
  if (!o) return NULL;
  if (parity_json_set(o, "o", parity_json_metrics(&m->o, 1)) ||
      (with_ht && parity_json_set(o, "ht", parity_json_metrics(&m->ht, 0)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *real_array(const double *x, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, parity_json_real(x[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static json_t *int_array(const int64_t *x, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_integer(x[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

/* Per-input state shared by its cases. */
typedef struct input_ctx {
  const gdn_inputs *in;
  const parity_reference *ref;
  int has_ref;
  int64_t input_index;
  gdn_dtype o_dtype, ht_dtype;
  /* Per chunk size: */
  int64_t chunk, n_chunks, block, n_blocks;
  gdn_outputs scan;
  pair_metrics scan_vs_ref;
  double *prof_ref, *prof_scan, *prof_aff, *prof_avs;
  /* Externals (measured once per input). */
  const parity_external *ext;
  size_t n_ext;
  pair_metrics *ext_vs_ref;
  double scan_seconds;
} input_ctx;

static void fmt_e(char *b, size_t n, double x) {
  if (isnan(x)) snprintf(b, n, "nan");
  else if (isinf(x)) snprintf(b, n, "inf");
  else snprintf(b, n, "%.2e", x);
}

static void print_header(FILE *f, int has_ref) {
  if (has_ref)
    fprintf(f, "  %-28s | %-29s | %-29s | %-20s | %-8s | %s\n", "case (C, devices, prefix)",
            "o rel_fro: scan  affine  a-s", "ht rel_fro: scan  affine  a-s",
            "o median ulp: scan aff", "factor", "verdict");
  else
    fprintf(f, "  %-28s | %-21s | %-21s | %-8s | %s\n", "case (C, devices, prefix)",
            "affine vs scan: o", "affine vs scan: ht", "factor", "verdict");
}

static int run_case(parity_doc *d, input_ctx *x, const parity_sweep_opts *o, int64_t devices,
                    kern_prefix prefix, gdn_error *e) {
  const gdn_inputs *in = x->in;
  const gdn_shape *s = &in->shape;
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = o->dtype;
  cfg.matmul = o->matmul;
  cfg.ftz = parity_sweep_ftz(o);
  cfg.chunk = x->chunk;
  cfg.devices = devices;
  cfg.prefix = prefix;
  cfg.shard = o->shard;
  cfg.solve = o->solve;
  cfg.broken_compose = o->broken_compose;
  gdn_outputs aff;
  gdn_outputs_init(&aff);
  /* Seam states cost 2 B Hv D Dk Dv doubles: recorded while that stays
   * modest (256 MiB), otherwise the seams report o errors only. */
  kern_affine_seams seams;
  kern_affine_seams_init(&seams);
  double seam_bytes = 16.0 * (double)(s->B * s->Hv) * (double)devices * (double)(s->Dk * s->Dv);
  int want_seams = devices > 1 && seam_bytes <= 256.0 * 1048576.0;
  double t0 = now();
  int rc = kern_affine_prefix_seams(in, &cfg, &aff, want_seams ? &seams : NULL, e);
  if (rc) return rc;
  double t_aff = now() - t0;
  d->t_kernels += t_aff;

  pair_metrics aff_vs_ref, avs;
  if (x->has_ref && (rc = measure(&aff, &x->ref->out, x->o_dtype, x->ht_dtype, 1, &aff_vs_ref, e)))
    goto out;
  if ((rc = measure(&aff, &x->scan, x->o_dtype, x->ht_dtype, 1, &avs, e))) goto out;

  /* Policy. */
  parity_subject subj[2 + 64];
  size_t ns = 0;
  memset(subj, 0, sizeof subj);
  subj[ns].name = "scan";
  subj[ns].kind = PARITY_SUBJ_SCAN;
  subj[ns].out_dtype[0] = x->o_dtype;
  subj[ns].out_dtype[1] = x->ht_dtype;
  if (x->has_ref) subj[ns].vs_oracle[0] = &x->scan_vs_ref.o, subj[ns].vs_oracle[1] = &x->scan_vs_ref.ht;
  ns++;
  subj[ns].name = "affine-prefix";
  subj[ns].kind = PARITY_SUBJ_AFFINE;
  subj[ns].out_dtype[0] = x->o_dtype;
  subj[ns].out_dtype[1] = x->ht_dtype;
  if (x->has_ref) subj[ns].vs_oracle[0] = &aff_vs_ref.o, subj[ns].vs_oracle[1] = &aff_vs_ref.ht;
  subj[ns].vs_scan[0] = &avs.o;
  subj[ns].vs_scan[1] = &avs.ht;
  ns++;
  for (size_t i = 0; i < x->n_ext && ns < sizeof subj / sizeof subj[0]; i++, ns++) {
    subj[ns].name = x->ext[i].name;
    subj[ns].kind = PARITY_SUBJ_EXTERNAL;
    subj[ns].own_numerics = x->ext[i].own_numerics;
    subj[ns].dtype = x->ext[i].dtype;
    subj[ns].matmul = x->ext[i].matmul;
    subj[ns].out_dtype[0] = x->ext[i].out->dtype;
    subj[ns].out_dtype[1] = GDN_DTYPE_F32; /* the schema stores ht as float32 */
    if (x->has_ref) {
      subj[ns].vs_oracle[0] = &x->ext_vs_ref[i].o;
      if (x->ext[i].has_ht) subj[ns].vs_oracle[1] = &x->ext_vs_ref[i].ht;
    }
  }
  parity_case_view view = {o->dtype, o->matmul, x->has_ref, {NULL, NULL}, ns, subj};
  if (x->has_ref) view.scan_vs_oracle[0] = &x->scan_vs_ref.o, view.scan_vs_oracle[1] = &x->scan_vs_ref.ht;
  parity_check checks[MAX_CHECKS];
  size_t nchk = 0, dec = 0;
  if ((rc = parity_policy_evaluate(o->policy, &view, checks, MAX_CHECKS, &nchk, &dec, e))) goto out;
  int pass = 1;
  for (size_t i = 0; i < nchk; i++) pass &= checks[i].pass;

  /* Upstream checks: affine-prefix against the scan. */
  parity_upstream up[PARITY_UPSTREAM_N];
  parity_upstream_evaluate(aff.o, x->scan.o, gdn_shape_numel_v(s), aff.ht, x->scan.ht,
                           gdn_shape_numel_state(s), avs.o.rel_fro, avs.ht.rel_fro, up);

  /* Profiles along the sequence and at the seams. */
  int64_t od[4] = {s->B, s->T, s->Hv, s->Dv};
  parity_profile_o(aff.o, x->scan.o, od, x->block, x->prof_avs);
  if (x->has_ref) parity_profile_o(aff.o, x->ref->out.o, od, x->block, x->prof_aff);

  char id[256];
  parity_case_id(id, sizeof id, s, x->chunk, devices, prefix, o->dtype, o->matmul);
  if (devices > 1 && o->shard != KERN_SHARD_TOKENS) /* ids of the default mode unchanged */
    strncat(id, "-shard-chunks", sizeof id - strlen(id) - 1);
  if (o->solve != KERN_SOLVE_SUBSTITUTION) /* ids of the default solve unchanged */
    strncat(id, "-solve-xla-expander", sizeof id - strlen(id) - 1);
  json_t *c = json_object(), *impls = json_object(), *tol = json_object(), *jchecks = json_array(),
         *jup = json_array(), *shards = json_array(), *jseams = json_array(), *prof = json_object(),
         *hist = json_object();
  if (!c || !impls || !tol || !jchecks || !jup || !shards || !jseams || !prof || !hist) {
    json_decref(c), json_decref(impls), json_decref(tol), json_decref(jchecks), json_decref(jup);
    json_decref(shards), json_decref(jseams), json_decref(prof), json_decref(hist);
    rc = nomem(e);
    goto out;
  }
  int bad = 0;
  bad |= parity_json_set(c, "id", json_string(id));
  bad |= parity_json_set(c, "input", json_integer(x->input_index));
  bad |= parity_json_set(c, "shape", parity_json_shape(s));
  bad |= parity_json_set(c, "chunk", json_integer(x->chunk));
  bad |= parity_json_set(c, "devices", json_integer(devices));
  bad |= parity_json_set(c, "prefix", json_string(kern_prefix_name(prefix)));
  bad |= parity_json_set(c, "shard", json_string(kern_shard_name(o->shard)));
  if (in->seg) bad |= parity_json_set(c, "packing", json_string(gdn_packing_name(in->packing)));
  bad |= parity_json_set(c, "solve", json_string(kern_solve_name(o->solve)));
  bad |= parity_json_set(c, "dtype", json_string(gdn_dtype_name(o->dtype)));
  bad |= parity_json_set(c, "matmul_precision", json_string(kern_matmul_name(o->matmul)));
  bad |= parity_json_set(c, "ftz", json_boolean(parity_sweep_ftz(o)));
  bad |= parity_json_set(c, "output_dtype", json_string(gdn_dtype_name(x->o_dtype)));
  for (int64_t r = 0; r < devices; r++) {
    /* Device r's piece (kern_affine_piece): its chunks numbered as the
     * devices see the sequence (each device's chunks after the previous
     * device's, padding included), and its first token. */
    kern_piece pc;
    kern_affine_piece(&cfg, s->T, r, &pc);
    const int64_t first = pc.index, cnt = pc.count;
    bad |= json_array_append_new(shards, json_pack("[II]", (json_int_t)first, (json_int_t)cnt));
    if (r == 0) continue;
    kern_piece prev; /* its padding sits right before the seam */
    kern_affine_piece(&cfg, s->T, r - 1, &prev);
    const int64_t pad_prev = prev.pad;
    /* The first chunk after the seam: its real tokens. */
    int64_t t0s = pc.t0, t1s = t0s + x->chunk < pc.t1 ? t0s + x->chunk : pc.t1;
    double m_scan = 0, m_aff = 0, m_avs = 0;
    for (int64_t b = 0; b < s->B; b++)
      for (int64_t t = t0s; t < t1s; t++)
        for (int64_t h = 0; h < s->Hv; h++) {
          size_t base = (size_t)(((b * s->T + t) * s->Hv + h) * s->Dv);
          for (int64_t i = 0; i < s->Dv; i++) {
            double ya = aff.o[base + i], ys = x->scan.o[base + i];
            double da = fabs(ya - ys);
            if (!(da <= m_avs)) m_avs = isnan(da) ? INFINITY : da;
            if (x->has_ref) {
              double yr = x->ref->out.o[base + i];
              double d1 = fabs(ys - yr), d2 = fabs(ya - yr);
              if (!(d1 <= m_scan)) m_scan = isnan(d1) ? INFINITY : d1;
              if (!(d2 <= m_aff)) m_aff = isnan(d2) ? INFINITY : d2;
            }
          }
        }
    json_t *sm = json_pack("{sIsIsIsI}", "device", (json_int_t)r, "chunk", (json_int_t)first, "t",
                           (json_int_t)t0s, "pad_before", (json_int_t)pad_prev);
    if (!sm) bad = 1;
    else {
      if (want_seams) {
        /* ||h_in[r] - h_out[r-1]||_F / ||h_out[r-1]||_F over every head: how
         * far the prefix-derived incoming state is from the state the
         * previous device actually ended with. */
        double dd = 0, nn = 0;
        size_t ns = (size_t)(s->Dk * s->Dv);
        for (int64_t b = 0; b < s->B; b++)
          for (int64_t h = 0; h < s->Hv; h++) {
            const double *hi = kern_affine_seams_h_in(&seams, b, h, r);
            const double *ho = kern_affine_seams_h_out(&seams, b, h, r - 1);
            for (size_t i = 0; i < ns; i++) {
              double df = hi[i] - ho[i];
              dd += df * df;
              nn += ho[i] * ho[i];
            }
          }
        bad |= parity_json_set(sm, "state_rel", parity_json_real(nn > 0 ? sqrt(dd / nn) : (dd > 0 ? INFINITY : 0)));
      }
      if (x->has_ref) {
        bad |= parity_json_set(sm, "scan", parity_json_real(m_scan));
        bad |= parity_json_set(sm, "affine-prefix", parity_json_real(m_aff));
      }
      bad |= parity_json_set(sm, "affine_vs_scan", parity_json_real(m_avs));
      bad |= json_array_append_new(jseams, sm);
    }
  }
  bad |= parity_json_set(c, "shards", shards);
  if (x->has_ref) {
    bad |= parity_json_set(impls, "scan", pair_json(&x->scan_vs_ref, 1));
    bad |= parity_json_set(impls, "affine-prefix", pair_json(&aff_vs_ref, 1));
    for (size_t i = 0; i < x->n_ext; i++) {
      json_t *ej = pair_json(&x->ext_vs_ref[i], x->ext[i].has_ht);
      if (!ej) {
        bad = 1;
        continue;
      }
      int epass = 1;
      for (size_t k = 0; k < nchk; k++)
        if (checks[k].subject == x->ext[i].name) epass &= checks[k].pass;
      bad |= parity_json_set(ej, "pass", json_boolean(epass));
      if (!x->ext[i].has_ht) /* the verdict says what it rests on */
        bad |= parity_json_set(ej, "judged_on", json_string("o alone: the output has no final state"));
      if (x->ext[i].attrs) bad |= json_object_set(ej, "attrs", x->ext[i].attrs);
      bad |= parity_json_set(impls, x->ext[i].name, ej);
    }
  }
  bad |= parity_json_set(c, "impls", impls);
  bad |= parity_json_set(c, "affine_vs_scan", pair_json(&avs, 1));
  for (size_t i = 0; i < nchk; i++) {
    const parity_check *k = &checks[i];
    json_t *jc = json_pack("{sssssssssssb}", "name", k->name, "rule", k->rule->id, "subject",
                           k->subject, "tensor", k->tensor == PARITY_TENSOR_O ? "o" : "ht",
                           "metric", parity_metric_name(k->rule->metric), "pass", k->pass);
    if (!jc) {
      bad = 1;
      continue;
    }
    bad |= parity_json_set(jc, "value", parity_json_real(k->value));
    bad |= parity_json_set(jc, "limit", parity_json_real(k->limit));
    bad |= parity_json_set(jc, "factor_reached", parity_json_real(k->factor_reached));
    bad |= parity_json_set(jc, "reason", json_string(k->rule->reason));
    bad |= json_array_append_new(jchecks, jc);
  }
  bad |= parity_json_set(tol, "checks", jchecks);
  bad |= parity_json_set(tol, "deciding", json_integer((json_int_t)dec));
  bad |= parity_json_set(c, "tolerance", tol);
  for (int i = 0; i < PARITY_UPSTREAM_N; i++) {
    json_t *ju = json_pack("{sssbss}", "name", up[i].name, "pass", up[i].pass, "worst_tensor",
                           up[i].worst_tensor);
    if (!ju) {
      bad = 1;
      continue;
    }
    bad |= parity_json_set(ju, "worst", parity_json_real(up[i].worst));
    bad |= json_array_append_new(jup, ju);
  }
  bad |= parity_json_set(c, "upstream", jup);
  {
    int64_t t0v[MAX_PROFILE_BLOCKS];
    for (int64_t k = 0; k < x->n_blocks; k++) t0v[k] = k * x->block;
    bad |= parity_json_set(prof, "block", json_integer(x->block));
    bad |= parity_json_set(prof, "t0", int_array(t0v, (size_t)x->n_blocks));
    if (x->has_ref) {
      bad |= parity_json_set(prof, "ref_max_abs", real_array(x->prof_ref, (size_t)x->n_blocks));
      bad |= parity_json_set(prof, "scan", real_array(x->prof_scan, (size_t)x->n_blocks));
      bad |= parity_json_set(prof, "affine-prefix", real_array(x->prof_aff, (size_t)x->n_blocks));
    }
    bad |= parity_json_set(prof, "affine_vs_scan", real_array(x->prof_avs, (size_t)x->n_blocks));
  }
  bad |= parity_json_set(c, "profile", prof);
  bad |= parity_json_set(c, "seams", jseams);
  if (x->has_ref) {
    double edges[PARITY_ULP_BINS];
    for (int i = 0; i < PARITY_ULP_BINS; i++) edges[i] = parity_ulp_bin_edge(i);
    bad |= parity_json_set(hist, "edges", real_array(edges, PARITY_ULP_BINS));
    bad |= parity_json_set(hist, "scan", int_array(x->scan_vs_ref.o.ulp_hist, PARITY_ULP_BINS));
    bad |= parity_json_set(hist, "affine-prefix", int_array(aff_vs_ref.o.ulp_hist, PARITY_ULP_BINS));
  }
  bad |= parity_json_set(c, "ulp_histogram", hist);
  bad |= parity_json_set(c, "pass", json_boolean(pass));
  if (!o->reproducible) bad |= parity_json_set(c, "seconds", json_real(t_aff));
  if (bad || json_array_append_new(d->cases, c)) {
    rc = nomem(e);
    goto out;
  }
  d->n_cases++;
  if (!pass) d->n_failed++;

  if (o->verbosity >= 1 && o->log) {
    char lab[64], fac[32];
    snprintf(lab, sizeof lab, "C%" PRId64 " D%" PRId64 "%s %s", x->chunk, devices,
             devices > 1 && o->shard != KERN_SHARD_TOKENS ? " chunks" : "", kern_prefix_name(prefix));
    const parity_check *k = &checks[dec];
    snprintf(fac, sizeof fac, "%.2fx", k->factor_reached);
    if (x->has_ref) {
      char a[6][16], u1[16], u2[16];
      fmt_e(a[0], 16, x->scan_vs_ref.o.rel_fro);
      fmt_e(a[1], 16, aff_vs_ref.o.rel_fro);
      fmt_e(a[2], 16, avs.o.rel_fro);
      fmt_e(a[3], 16, x->scan_vs_ref.ht.rel_fro);
      fmt_e(a[4], 16, aff_vs_ref.ht.rel_fro);
      fmt_e(a[5], 16, avs.ht.rel_fro);
      snprintf(u1, sizeof u1, "%.2f", x->scan_vs_ref.o.median_ulp);
      snprintf(u2, sizeof u2, "%.2f", aff_vs_ref.o.median_ulp);
      fprintf(o->log, "  %-28s | %8s %8s %8s    | %8s %8s %8s    | %9s %9s  | %-8s | %s\n", lab, a[0],
              a[1], a[2], a[3], a[4], a[5], u1, u2, fac, pass ? "PASS" : "FAIL");
    } else {
      char a[2][16];
      fmt_e(a[0], 16, avs.o.rel_fro);
      fmt_e(a[1], 16, avs.ht.rel_fro);
      fprintf(o->log, "  %-28s | rel_fro %-13s | rel_fro %-13s | %-8s | %s\n", lab, a[0], a[1], fac,
              pass ? "PASS" : "FAIL");
    }
    char v[16], l[16];
    fmt_e(v, 16, k->value);
    fmt_e(l, 16, k->limit);
    fprintf(o->log, "      %s: %s (value %s, limit %s)\n", pass ? "decided by" : "FAILED",
            k->name, v, l);
    if (o->verbosity >= 2) {
      for (size_t i = 0; i < nchk; i++) {
        fmt_e(v, 16, checks[i].value);
        fmt_e(l, 16, checks[i].limit);
        fprintf(o->log, "        [%s] %s: value %s limit %s -- %s\n", checks[i].pass ? "ok" : "FAIL",
                checks[i].name, v, l, checks[i].rule->reason);
      }
      for (int i = 0; i < PARITY_UPSTREAM_N; i++)
        fprintf(o->log, "        upstream %-48s %s (worst %.3g on %s)\n", up[i].name,
                up[i].pass ? "pass" : "FAIL", up[i].worst, up[i].worst_tensor);
    }
    fflush(o->log);
  }
  rc = GDN_OK;
out:
  kern_affine_seams_clear(&seams);
  gdn_outputs_clear(&aff);
  return rc;
}

static void ctx_free_chunk(input_ctx *x) {
  gdn_outputs_clear(&x->scan);
  gdn_free(x->prof_ref);
  gdn_free(x->prof_scan);
  gdn_free(x->prof_aff);
  gdn_free(x->prof_avs);
  x->prof_ref = x->prof_scan = x->prof_aff = x->prof_avs = NULL;
}

int parity_sweep_run(parity_doc *d, const gdn_inputs *in, const parity_input_info *info,
                     const parity_reference *ref, const parity_external *ext, size_t n_ext,
                     const parity_sweep_opts *o, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  int rc = parity_sweep_validate(s, o, e);
  if (rc) return rc;
  input_ctx x;
  memset(&x, 0, sizeof x);
  gdn_outputs_init(&x.scan);
  x.in = in;
  x.ref = ref;
  x.has_ref = ref && ref->tier != PARITY_ORACLE_NONE;
  x.ext = ext;
  x.n_ext = n_ext;
  kern_config probe;
  kern_config_init(&probe);
  probe.dtype = o->dtype;
  x.o_dtype = kern_output_dtype(&probe, in->bf16_mask);
  x.ht_dtype = o->dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
  x.input_index = (int64_t)json_array_size(d->inputs);

  /* The inputs entry. */
  json_t *ji = json_object();
  json_t *bfl = json_array();
  if (!ji || !bfl) {
    json_decref(ji);
    json_decref(bfl);
    return nomem(e);
  }
  static const char *const tn[5] = {"q", "k", "v", "g", "beta"};
  for (int i = 0; i < 5; i++)
    if (in->bf16_mask & (1u << i)) json_array_append_new(bfl, json_string(tn[i]));
  int bad = 0;
  bad |= parity_json_set(ji, "name", json_string(info->name));
  bad |= parity_json_set(ji, "source", json_string(info->source));
  if (info->path) bad |= parity_json_set(ji, "path", json_string(info->path));
  if (info->sha256) bad |= parity_json_set(ji, "sha256", json_string(info->sha256));
  bad |= parity_json_set(ji, "shape", parity_json_shape(s));
  bad |= parity_json_set(ji, "l2norm_in_kernel", json_boolean(in->l2norm_in_kernel));
  bad |= parity_json_set(ji, "h0", json_boolean(in->h0 != NULL));
  bad |= parity_json_set(ji, "bf16_inputs", bfl);
  if (in->seg) { /* packed documents: how many (the largest id) and what a boundary does */
    int32_t nd = 0;
    for (int64_t i = 0; i < s->B * s->T; i++) nd = in->seg[i] > nd ? in->seg[i] : nd;
    bad |= parity_json_set(ji, "documents", json_integer(nd));
    bad |= parity_json_set(ji, "packing", json_string(gdn_packing_name(in->packing)));
  }
  if (x.has_ref) {
    bad |= parity_json_set(ji, "oracle_tier", json_string(parity_oracle_tier_name(ref->tier)));
    if (ref->requested != ref->tier && ref->requested == PARITY_ORACLE_AUTO)
      bad |= parity_json_set(ji, "oracle_tier_requested", json_string("auto"));
    bad |= parity_json_set(ji, "oracle_from_fixture", json_boolean(ref->from_fixture));
    bad |= parity_json_set(ji, "oracle_precision_bits", json_integer(ref->precision_bits));
    bad |= parity_json_set(ji, "oracle_certified_bits", json_integer(ref->certified_bits));
    bad |= parity_json_set(ji, "oracle_sampled_columns", json_integer(ref->sampled_columns));
    bad |= parity_json_set(ji, "oracle_total_columns", json_integer(ref->total_columns));
    if (ref->tier == PARITY_ORACLE_DD) {
      bad |= parity_json_set(ji, "oracle_normwise_bits", json_integer(ref->normwise_bits));
      bad |= parity_json_set(ji, "oracle_guaranteed_bits", json_integer(ref->guaranteed_bits));
      bad |= parity_json_set(ji, "oracle_bound_violations", json_integer(ref->bound_violations));
    }
  }
  if (n_ext) {
    json_t *names = json_array();
    for (size_t i = 0; names && i < n_ext; i++) json_array_append_new(names, json_string(ext[i].name));
    bad |= parity_json_set(ji, "outputs", names);
  }
  if (bad || json_array_append_new(d->inputs, ji)) return nomem(e);
  if (x.has_ref) {
    if (d->have_oracle && d->tier != ref->tier) d->mixed_tiers = 1;
    d->have_oracle = 1;
    d->tier = ref->tier;
    d->sampled_columns += ref->sampled_columns;
    d->total_columns += ref->total_columns;
    if (ref->tier == PARITY_ORACLE_DD && (d->min_guaranteed < 0 || ref->guaranteed_bits < d->min_guaranteed))
      d->min_guaranteed = ref->guaranteed_bits;
    d->precision_bits = ref->precision_bits;
    if (ref->check_bits > d->check_bits) d->check_bits = ref->check_bits;
    if (d->min_certified < 0 || ref->certified_bits < d->min_certified)
      d->min_certified = ref->certified_bits;
    d->t_oracle += ref->seconds;
  }

  if (o->verbosity >= 1 && o->log) {
    char lab[160];
    gdn_shape_format(s, lab, sizeof lab);
    fprintf(o->log, "\n%s: %s, %s%s, dtype %s, matmul %s%s\n", info->name, lab,
            in->l2norm_in_kernel ? "q/k L2-normalised in the kernel" : "q/k pre-normalised",
            in->h0 ? ", with h0" : "", gdn_dtype_name(o->dtype),
            o->dtype == GDN_DTYPE_F64 ? "ieee (float64 ignores the matmul mode)" : kern_matmul_name(o->matmul),
            !parity_sweep_ftz(o) ? ""
            : o->ftz < 0 ? ", subnormals flushed to zero (on by default in the bf16 modes, as on TPU; --no-ftz turns it off)"
                         : ", subnormals flushed to zero");
    if (in->seg)
      fprintf(o->log, "packed documents (segment ids; id 0 = padding, k = v = g = 0): packing %s (%s)\n",
              gdn_packing_name(in->packing),
              in->packing == GDN_PACKING_RESET
                  ? "the state restarts at every boundary, as flash-linear-attention's cu_seqlens"
                  : "the state flows across boundaries, as MaxText's kernel");
    if (x.has_ref)
    {
      if (ref->tier == PARITY_ORACLE_DD)
        fprintf(o->log,
                "reference: dd oracle (double-double, %d bits)%s: certified %d bits (normwise %d) on %" PRId64
                " of %" PRId64 " state columns against MPFR at %d bits; every column within a proven %d bits\n",
                ref->precision_bits,
                ref->requested == PARITY_ORACLE_AUTO ? ", chosen by --oracle auto for this size" : "",
                ref->certified_bits, ref->normwise_bits, ref->sampled_columns, ref->total_columns,
                ref->check_bits, ref->guaranteed_bits);
      else if (ref->from_fixture)
        fprintf(o->log, "reference: the fixture's MPFR oracle (%d bits, certified %d bits)\n",
                ref->precision_bits, ref->certified_bits);
      else
        fprintf(o->log, "reference: mpfr oracle at %d bits, certified %d bits (checked at %d)\n",
                ref->precision_bits, ref->certified_bits, ref->check_bits);
    }
    else
      fprintf(o->log, "reference: none (--oracle none): affine-prefix is judged against the scan only\n");
  }

  /* Externals against the reference, once. */
  if (n_ext && x.has_ref) {
    x.ext_vs_ref = gdn_calloc(n_ext, sizeof *x.ext_vs_ref, "external output metrics", e);
    if (!x.ext_vs_ref) return e ? e->code : GDN_ERR_NOMEM;
    for (size_t i = 0; i < n_ext; i++) {
      gdn_dtype od = ext[i].out->dtype;
      if ((rc = measure(ext[i].out, &ref->out, od, GDN_DTYPE_F32, ext[i].has_ht, &x.ext_vs_ref[i], e)))
        goto done;
      if (!ext[i].has_ht && o->verbosity >= 1 && o->log)
        fprintf(o->log, "note: output %s has no final state (MaxText returns one only when an "
                        "initial state is given): judged on o alone\n", ext[i].name);
    }
  }

  for (size_t ci = 0; ci < o->n_chunks; ci++) {
    x.chunk = o->chunks[ci];
    x.n_chunks = gdn_shape_chunks(s, x.chunk);
    int64_t per = (x.n_chunks + MAX_PROFILE_BLOCKS - 1) / MAX_PROFILE_BLOCKS;
    x.block = per * x.chunk;
    x.n_blocks = (s->T + x.block - 1) / x.block;
    if (!(x.prof_ref = gdn_calloc((size_t)x.n_blocks, sizeof(double), "profile", e)) ||
        !(x.prof_scan = gdn_calloc((size_t)x.n_blocks, sizeof(double), "profile", e)) ||
        !(x.prof_aff = gdn_calloc((size_t)x.n_blocks, sizeof(double), "profile", e)) ||
        !(x.prof_avs = gdn_calloc((size_t)x.n_blocks, sizeof(double), "profile", e))) {
      rc = e ? e->code : GDN_ERR_NOMEM;
      goto done;
    }
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.dtype = o->dtype;
    cfg.matmul = o->matmul;
    cfg.ftz = parity_sweep_ftz(o);
    cfg.chunk = x.chunk;
    cfg.solve = o->solve;
    double t0 = now();
    if ((rc = kern_scan(in, &cfg, &x.scan, e))) goto done;
    d->t_kernels += now() - t0;
    if (x.has_ref) {
      if ((rc = measure(&x.scan, &ref->out, x.o_dtype, x.ht_dtype, 1, &x.scan_vs_ref, e))) goto done;
      int64_t od[4] = {s->B, s->T, s->Hv, s->Dv};
      parity_profile_o(ref->out.o, NULL, od, x.block, x.prof_ref);
      parity_profile_o(x.scan.o, ref->out.o, od, x.block, x.prof_scan);
    }
    int64_t dev[PARITY_MAX_LIST];
    size_t nd = parity_sweep_devices_for(o, s, x.chunk, dev);
    if (o->verbosity >= 1 && o->log) {
      if (nd < o->n_devices && o->shard == KERN_SHARD_TOKENS)
        fprintf(o->log, "  note: --shard tokens needs D to divide T = %" PRId64 "; default device counts that do not are skipped\n",
                s->T);
      else if (nd < o->n_devices)
        fprintf(o->log, "  note: chunk size %" PRId64 " gives %" PRId64 " chunk%s; default device counts above that are skipped\n",
                x.chunk, x.n_chunks, x.n_chunks == 1 ? "" : "s");
      print_header(o->log, x.has_ref);
    }
    for (size_t di = 0; di < nd; di++)
      for (size_t pi = 0; pi < o->n_prefixes; pi++)
        if ((rc = run_case(d, &x, o, dev[di], o->prefixes[pi], e))) goto done;
    ctx_free_chunk(&x);
  }
  rc = GDN_OK;
done:
  ctx_free_chunk(&x);
  gdn_free(x.ext_vs_ref);
  return rc;
}
