#include "parity_case_subject.h"
#include "parity_sweep.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdn_alloc.h"
#include "kern.h"
#include "parity_docstate.h"
#include "parity_kappa.h"
#include "parity_log.h"
#include "parity_metrics.h"
#include "parity_upstream.h"

#include "parity_sweep_ctx.h"
#include "gdn_clock.h"

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


static void ctx_free_chunk(input_ctx *x) {
  parity_model_clear(&x->model);
  x->has_model = 0;
  gdn_free(x->prof_ref);
  gdn_free(x->prof_base);
  x->prof_ref = x->prof_base = NULL;
  for (size_t i = 0; i < x->n_subj; i++)
    if (x->subj[i].m->stage == PARITY_STAGE_CHUNK) parity_subject_release(&x->subj[i]);
}

void parity_sweep_ctx_clear(input_ctx *x) {
  ctx_free_chunk(x);
  for (size_t i = 0; i < x->n_subj; i++) parity_subject_run_clear(&x->subj[i]);
  gdn_free(x->subj);
  gdn_free(x->meas);
  memset(x, 0, sizeof *x);
}

void parity_sweep_ctx_init(input_ctx *x, parity_doc *d, const parity_sweep_opts *o) {
  memset(x, 0, sizeof *x);
  parity_model_init(&x->model);
  x->d = d;
  x->o = o;
  kern_config_init(&x->cfg);
  x->cfg.dtype = o->dtype;
  x->cfg.matmul = o->matmul;
  x->cfg.ftz = parity_sweep_ftz(o);
  x->cfg.mutant = o->mutant;
  x->cfg.shard = o->shard;
  x->cfg.solve = o->solve;
}

void parity_sweep_scan_config(input_ctx *x) {
  kern_config fresh;
  kern_config_init(&fresh);
  x->cfg.devices = fresh.devices; /* the chunk stage (the scan) runs on one device */
  x->cfg.prefix = fresh.prefix;
}

int parity_sweep_chunk_begin(input_ctx *x, const gdn_shape *s, int64_t chunk, gdn_error *e) {
  x->cfg.chunk = chunk;
  parity_sweep_scan_config(x);
  x->n_chunks = gdn_shape_chunks(s, chunk);
  x->block = (x->n_chunks + MAX_PROFILE_BLOCKS - 1) / MAX_PROFILE_BLOCKS * chunk;
  x->n_blocks = (s->T + x->block - 1) / x->block;
  if (!(x->prof_ref = gdn_calloc((size_t)x->n_blocks, sizeof(double), "profile", e)) ||
      !(x->prof_base = gdn_calloc((size_t)x->n_blocks, sizeof(double), "profile", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  return GDN_OK;
}

int64_t parity_sweep_seam_place(const parity_case_result *r, parity_seam_result *sm, int64_t device) {
  sm->device = device;
  sm->chunk = r->shards[2 * device];
  /* The first chunk after the seam: its real tokens; the previous device's
   * padding sits right before the seam. */
  sm->t = r->pieces[3 * device];
  sm->pad_before = r->pieces[3 * (device - 1) + 2];
  return sm->t + r->chunk < r->pieces[3 * device + 1] ? sm->t + r->chunk : r->pieces[3 * device + 1];
}

void parity_sweep_seam_sums(parity_rel_acc *acc, kern_affine_seams *seams, const gdn_shape *s, int64_t device) {
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->Hv; h++)
      parity_rel_acc_add(acc, kern_affine_seams_h_in(seams, b, h, device),
                         kern_affine_seams_h_out(seams, b, h, device - 1), (size_t)(s->Dk * s->Dv));
}

void parity_sweep_meas_init(parity_subject_result *m, const parity_subject_run *s) {
  memset(m, 0, sizeof *m);
  m->name = s->name;
  m->kind = s->m->kind;
  m->role = s->m->role;
  m->own_numerics = s->own_numerics;
  m->dtype = s->dtype;
  m->matmul = s->matmul;
  m->attrs = s->ext ? s->ext->attrs : NULL;
  memcpy(m->out_dtype, s->out_dtype, sizeof m->out_dtype);
}

int parity_sweep_ctx_subjects(input_ctx *x, const parity_external *ext, size_t n_ext, gdn_error *e) {
  const parity_sweep_opts *o = x->o;
  size_t n = parity_subject_n_rows - 1 + n_ext + o->n_extra;
  x->subj = gdn_calloc(n, sizeof *x->subj, "subjects", e);
  x->meas = gdn_calloc(n, sizeof *x->meas, "subject metrics", e);
  if (!x->subj || !x->meas) return e ? e->code : GDN_ERR_NOMEM;
  size_t k = 0;
  for (size_t i = 0; i < parity_subject_n_rows; i++)
    if (parity_subject_rows[i] != &parity_subject_external) parity_subject_run_init(&x->subj[k++], parity_subject_rows[i]);
  for (size_t i = 0; i < n_ext; i++, k++) {
    parity_subject_run_init(&x->subj[k], &parity_subject_external);
    x->subj[k].name = ext[i].name;
    x->subj[k].ext = &ext[i];
    x->subj[k].own_numerics = ext[i].own_numerics;
    x->subj[k].dtype = ext[i].dtype;
    x->subj[k].matmul = ext[i].matmul;
  }
  for (size_t i = 0; i < o->n_extra; i++) parity_subject_run_init(&x->subj[k++], o->extra[i]);
  x->n_subj = k;
  x->baseline = x->candidate = SIZE_MAX;
  for (size_t i = k; i-- > 0;) {
    if (x->subj[i].m->role == PARITY_ROLE_BASELINE) x->baseline = i;
    if (x->subj[i].m->role == PARITY_ROLE_CANDIDATE) x->candidate = i;
  }
  if (x->baseline == SIZE_MAX || x->candidate == SIZE_MAX || x->subj[x->baseline].m->stage != PARITY_STAGE_CHUNK)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "the subject table needs a chunk-stage baseline and a candidate");
  return GDN_OK;
}

/* An output's ht of final_state per_document (parity_docstate.h): one
 * state per document, against the oracle's, (n_docs, Hv, Dk, Dv); the
 * error model's scale (the row-end states') does not apply to it. */
static int per_document_ht(const parity_subject_run *s, int t) {
  return t == PARITY_T_HT && s->ext && s->ext->ht_docs;
}

/* Every tensor of subject i against the reference, and (its row asking)
 * against the baseline's outputs. */
static int measure_subject(input_ctx *x, size_t i, gdn_error *e) {
  const parity_subject_run *s = &x->subj[i];
  parity_subject_result *m = &x->meas[i];
  parity_sweep_meas_init(m, s);
  const parity_subject_run *bs = &x->subj[x->baseline];
  const gdn_grads *ref_grads = x->ref && x->ref->has_grads ? &x->ref->grads : NULL;
  for (int t = 0; t < PARITY_T_N; t++) {
    const parity_tensor *pt = &parity_tensors[t];
    int64_t dims[4];
    pt->dims(&x->in->shape, dims);
    if (!(s->present & (1u << t))) continue;
    parity_vals xs = parity_tensor_get(pt, s->out, s->grads);
    parity_vals rs = parity_tensor_get(pt, x->ref ? &x->ref->out : NULL, ref_grads);
    const int per_doc = per_document_ht(s, t);
    if (per_doc) {
      if (x->ref && (!x->ref->ht_docs || x->ref->n_docs != s->ext->n_docs))
        return gdn_error_set(e, GDN_ERR_INTERNAL, "output %s: the oracle's per-document states are missing", s->name);
      dims[0] = s->ext->n_docs;
      xs = parity_vals_f64(s->ext->ht_docs);
      rs = parity_vals_f64(x->ref ? x->ref->ht_docs : NULL);
    }
    int rc;
    int64_t bl[4];
    pt->blocks(&x->in->shape, x->cfg.chunk, bl);
    if (x->ref && ((rc = parity_metrics_compute_v(xs, rs, dims, s->out_dtype[t], &m->vs_ref[t], e)) ||
                   (rc = parity_metrics_blocks_v(xs, rs, dims, bl, &m->vs_ref[t], e))))
      return rc;
    if (x->ref) m->has_vs_ref |= 1u << t;
    if (x->ref && x->has_model && x->model.s[t] && !per_doc &&
        (rc = parity_metrics_model_v(xs, rs, x->model.s[t], dims, bl, s->out_dtype[t], &m->vs_ref[t], e)))
      return rc;
    if (!s->m->vs_scan || !bs->out || !(bs->present & (1u << t))) continue;
    const parity_vals bt = parity_tensor_get(pt, bs->out, bs->grads);
    if ((rc = parity_metrics_compute_v(xs, bt, dims, s->out_dtype[t], &m->vs_scan[t], e)) ||
        (rc = parity_metrics_blocks_v(xs, bt, dims, bl, &m->vs_scan[t], e)))
      return rc;
    m->has_vs_scan |= 1u << t;
  }
  return GDN_OK;
}

/* The reference's o when it is held as binary64 for the inputs' shape: the
 * base a float32 kernel's o may be coded against (parity_subject.h), for
 * outputs of PARITY_CODE_MIN elements or more (a long case's memory is what
 * the codes are for; below, float32 costs less to read).  The environment
 * variable GDN_PARITY_CODE_MIN (elements) moves the threshold: the tests
 * run small cases both ways. */
#define PARITY_CODE_MIN ((int64_t)1 << 24)
static int64_t code_min(void) {
  const char *v = getenv("GDN_PARITY_CODE_MIN");
  char *end;
  long long n = v && *v ? strtoll(v, &end, 10) : -1;
  return n >= 0 && v && !*end ? (int64_t)n : PARITY_CODE_MIN;
}

static const double *code_base(const input_ctx *x) {
  if (!x->ref || !x->ref->out.o || (int64_t)gdn_shape_numel_v(&x->in->shape) < code_min()) return NULL;
  const gdn_shape *a = &x->ref->out.shape, *b = &x->in->shape;
  return a->B == b->B && a->T == b->T && a->Hv == b->Hv && a->Dv == b->Dv ? x->ref->out.o : NULL;
}

/* The caller's extra rows (parity_sweep_opts.extra) close the table. */
static int is_extra(const input_ctx *x, size_t i) { return i >= x->n_subj - x->o->n_extra; }

/* Produces, then measures, every subject of one stage; returns the time
 * the producing took in *seconds.  An extra row is produced, measured and
 * released before the next: only its metrics are kept, so the stage holds
 * one extra output set at a time (what parity_budget counts for coverage). */
static int run_stage(input_ctx *x, parity_subject_stage stage, int want_seams, double *seconds, gdn_error *e) {
  parity_produce_ctx cx = {x->in, &x->cfg, want_seams, x->o->ct, code_base(x)};
  double t0 = gdn_clock_seconds();
  int rc;
  for (size_t i = 0; i < x->n_subj; i++)
    if (x->subj[i].m->stage == stage && !is_extra(x, i) && (rc = parity_subject_produce(&x->subj[i], &cx, e)))
      return rc;
  *seconds = gdn_clock_seconds() - t0;
  for (size_t i = 0; i < x->n_subj; i++)
    if (x->subj[i].m->stage == stage && !is_extra(x, i) && (rc = measure_subject(x, i, e))) return rc;
  for (size_t i = 0; i < x->n_subj; i++) {
    if (x->subj[i].m->stage != stage || !is_extra(x, i)) continue;
    double t1 = gdn_clock_seconds();
    rc = parity_subject_produce(&x->subj[i], &cx, e);
    *seconds += gdn_clock_seconds() - t1;
    if (!rc) rc = measure_subject(x, i, e);
    parity_subject_release(&x->subj[i]);
    if (rc) return rc;
  }
  return GDN_OK;
}

void parity_sweep_case_describe(const input_ctx *x, parity_case_result *r) {
  const parity_sweep_opts *o = x->o;
  r->input = x->input_index;
  r->shape = x->in->shape;
  r->chunk = x->cfg.chunk;
  r->devices = x->cfg.devices;
  r->prefix = x->cfg.prefix;
  r->dtype = o->dtype;
  r->matmul = o->matmul;
  r->ftz = x->cfg.ftz;
  r->output_dtype = x->subj[x->baseline].out_dtype[PARITY_T_O];
  r->has_ref = x->ref != NULL;
  r->baseline = x->baseline;
  r->candidate = x->candidate;
  r->shard = x->cfg.shard;
  r->shard_from = o->shard_from;
  r->solve = x->cfg.solve;
  r->mutant = x->cfg.mutant;
  r->packing = x->in->seg ? (int)x->in->packing : -1;
  parity_case_id(r->id, sizeof r->id, &r->shape, r->chunk, r->devices, r->prefix, o->dtype, o->matmul);
  if (r->devices > 1 && r->shard != KERN_SHARD_TOKENS) /* ids of the default mode unchanged */
    strncat(r->id, "-shard-chunks", sizeof r->id - strlen(r->id) - 1);
  if (r->solve != KERN_SOLVE_SUBSTITUTION) /* ids of the default solve unchanged */
    strncat(r->id, "-solve-xla-expander", sizeof r->id - strlen(r->id) - 1);
  if (r->mutant != KERN_MUTANT_NONE) { /* ids without a mutant unchanged */
    strncat(r->id, "-mutant-", sizeof r->id - strlen(r->id) - 1);
    strncat(r->id, kern_mutant_name(r->mutant), sizeof r->id - strlen(r->id) - 1);
  }
  /* Device d's piece (kern_affine_piece): its chunks numbered as the devices
   * see the sequence (each device's chunks after the previous device's,
   * padding included), its real tokens and the padding after them. */
  for (int64_t d = 0; d < r->devices; d++) {
    kern_piece pc;
    kern_affine_piece(&x->cfg, x->in->shape.T, d, &pc);
    r->shards[2 * d] = pc.index;
    r->shards[2 * d + 1] = pc.count;
    r->pieces[3 * d] = pc.t0;
    r->pieces[3 * d + 1] = pc.t1;
    r->pieces[3 * d + 2] = pc.pad;
  }
}

/* The first chunk after each seam: o errors there, and how far the
 * prefix-derived incoming state is from the state the previous device
 * actually ended with (over every head; exact sums, so in any order). */
static void case_seams(const input_ctx *x, parity_case_result *r) {
  const gdn_shape *s = &x->in->shape;
  const parity_subject_run *base = &x->subj[x->baseline];
  parity_subject_run *cand = &x->subj[x->candidate];
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(s, od);
  for (size_t k = 0; k < r->n_seams; k++) {
    parity_seam_result *sm = &r->seams[k];
    const int64_t t1 = parity_sweep_seam_place(r, sm, (int64_t)k + 1);
    sm->cand_vs_base = parity_max_abs_rows_v(parity_vals_o(cand->out), parity_vals_o(base->out), od, sm->t, t1);
    if (x->ref) {
      const parity_vals ro = parity_vals_o(&x->ref->out);
      sm->baseline = parity_max_abs_rows_v(parity_vals_o(base->out), ro, od, sm->t, t1);
      sm->candidate = parity_max_abs_rows_v(parity_vals_o(cand->out), ro, od, sm->t, t1);
    }
    if (!(sm->has_state = cand->has_seams)) continue;
    static __thread parity_rel_acc acc; /* 64 KiB: not on the stack */
    parity_rel_acc_init(&acc);
    parity_sweep_seam_sums(&acc, &cand->seams, s, sm->device);
    sm->state_rel = parity_rel_acc_value(&acc);
  }
}

/* The heat map of the judged subject (not the scan) whose o has the worst
 * block_rel against the reference: at most 256 position bins per head. */
static int case_block_map(const input_ctx *x, parity_case_result *r, gdn_error *e) {
  size_t w = SIZE_MAX;
  for (size_t i = 0; i < x->n_subj; i++) { /* r's: an output of another device count is not the case's */
    const parity_subject_result *m = &r->subjects[i];
    if (m->kind == PARITY_SUBJ_SCAN || !x->subj[i].out || !(m->has_vs_ref & (1u << PARITY_T_O))) continue;
    if (w == SIZE_MAX || m->vs_ref[PARITY_T_O].block_rel > r->subjects[w].vs_ref[PARITY_T_O].block_rel) w = i;
  }
  if (w == SIZE_MAX || !x->ref) return GDN_OK;
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(&x->in->shape, od);
  int64_t C = x->cfg.chunk, nblk = (od[1] + C - 1) / C, per = (nblk + 255) / 256;
  r->block_map.heads = od[2];
  r->block_map.bins = (nblk + per - 1) / per;
  r->block_map.tokens_per_bin = per * C;
  r->block_map.values = gdn_calloc((size_t)(od[2] * r->block_map.bins), sizeof(double), "block map", e);
  if (!r->block_map.values) return e ? e->code : GDN_ERR_NOMEM;
  r->block_map.subject = x->meas[w].name;
  return parity_block_map_o_v(parity_vals_o(x->subj[w].out), parity_vals_o(&x->ref->out), od, C,
                              x->meas[w].vs_ref[PARITY_T_O].rel_floor, per, r->block_map.values, e);
}

/* Metrics of every subject, the seams, the profiles along the sequence and
 * what the upstream checks would say (candidate against baseline). */
static void case_measure(const input_ctx *x, parity_case_result *r) {
  const gdn_shape *s = &x->in->shape;
  memcpy(r->subjects, x->meas, x->n_subj * sizeof *r->subjects);
  parity_sweep_case_scope(x, r);
  case_seams(x, r);
  const gdn_outputs *base = x->subj[x->baseline].out, *cand = x->subj[x->candidate].out;
  const parity_subject_result *cm = &x->meas[x->candidate];
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(s, od);
  parity_profile *p = &r->profile;
  p->block = x->block;
  memcpy(p->ref_max_abs, x->prof_ref, (size_t)p->n * sizeof(double));
  memcpy(p->baseline, x->prof_base, (size_t)p->n * sizeof(double));
  parity_profile_o_v(parity_vals_o(cand), parity_vals_o(base), od, x->block, p->cand_vs_base);
  if (x->ref) parity_profile_o_v(parity_vals_o(cand), parity_vals_o(&x->ref->out), od, x->block, p->candidate);
  const parity_subject_run *bs = &x->subj[x->baseline], *cs = &x->subj[x->candidate];
  parity_vals xs[PARITY_T_N], rs[PARITY_T_N];
  size_t ns[PARITY_T_N];
  double rf[PARITY_T_N];
  for (int t = 0; t < PARITY_T_N; t++) {
    xs[t] = parity_tensor_get(&parity_tensors[t], cand, cs->grads);
    rs[t] = parity_tensor_get(&parity_tensors[t], base, bs->grads);
    ns[t] = (size_t)parity_tensor_numel(&parity_tensors[t], s);
    rf[t] = cm->vs_scan[t].rel_fro;
  }
  parity_upstream_evaluate(xs, rs, ns, rf, cm->has_vs_scan, r->upstream);
}

/* --grad: each token-axis gradient's error per block along the sequence
 * (the o profile's blocks), baseline and candidate against the reference. */
static int case_grad_profile(const input_ctx *x, parity_case_result *r, gdn_error *e) {
  const parity_subject_run *bs = &x->subj[x->baseline], *cs = &x->subj[x->candidate];
  if (!x->ref || !x->ref->has_grads || !bs->grads || !cs->grads) return GDN_OK;
  unsigned mask = 0;
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad && !strcmp(parity_tensors[t].index_names[1], "t")) mask |= 1u << t;
  int rc = parity_case_result_alloc_grads(r, mask, e);
  if (rc) return rc;
  for (int t = 0; t < PARITY_T_N; t++) {
    if (!(mask & (1u << t))) continue;
    const parity_tensor *pt = &parity_tensors[t];
    int64_t d[4];
    pt->dims(&x->in->shape, d);
    const parity_vals ref = parity_tensor_get(pt, NULL, &x->ref->grads);
    parity_profile_o_v(ref, parity_vals_f64(NULL), d, x->block, r->grad_profile.ref_max_abs[t]);
    parity_profile_o_v(parity_tensor_get(pt, NULL, bs->grads), ref, d, x->block, r->grad_profile.baseline[t]);
    parity_profile_o_v(parity_tensor_get(pt, NULL, cs->grads), ref, d, x->block, r->grad_profile.candidate[t]);
  }
  return GDN_OK;
}

/* A problem whose answer lies within 1/u of the dtype's smallest normal
 * (2^-126 for float32 and bfloat16) cannot be carried to the dtype's
 * precision: its products are subnormal, and flushed with --ftz (v = 1e-36
 * puts the float32 scan at 0.28 with FTZ, 6.5e-5 without).  The errors are
 * then the format's range, not a kernel defect: the case says so. */
static void case_range_finding(const input_ctx *x, parity_case_result *r) {
  r->finding[0] = '\0';
  if (!r->has_ref || x->o->dtype == GDN_DTYPE_F64) return;
  const parity_metrics *mo = &r->subjects[r->baseline].vs_ref[PARITY_T_O];
  double tiny = 0x1p-126 / gdn_dtype_unit_roundoff(x->o->dtype);
  if (!(mo->ref_max_abs < tiny)) return;
  snprintf(r->finding, sizeof r->finding,
           "range: the exact o is at most %.3g, below 2^-126/u = %.3g, so the %s computation works with subnormal "
           "values (%s): the format cannot carry this problem to its precision, so errors here measure the "
           "format's range, not a kernel defect",
           mo->ref_max_abs, tiny, gdn_dtype_name(x->o->dtype),
           x->cfg.ftz ? "flushed to zero by --ftz, which changes the mathematics" : "with fewer significant bits");
}

/* A band of the policy widened by kappa_G (parity_policy.h) is a finding
 * about the stock algorithm, not about the implementation judged: its
 * float32 in-chunk cumsum G loses u |G| absolutely, and exp(G_i - G_j)
 * keeps that as a relative error (docs/tolerance.md, finding (a)).  Appended to the
 * range finding if there is one. */
static void case_kappa_finding(parity_case_result *r) {
  const parity_check *w = NULL;
  for (size_t i = 0; i < r->checks.n; i++)
    if (r->checks.v[i].kappa_g != 0 && (!w || r->checks.v[i].limit > w->limit)) w = &r->checks.v[i];
  if (!w) return;
  size_t n = strlen(r->finding);
  snprintf(r->finding + n, sizeof r->finding - n,
           "%sstock algorithm: G, the float32 cumsum of g inside each chunk of %lld, is large where the decays "
           "exp(G_i - G_j) matter (kappa_G = %.4g for o, %.4g for ht; parity_kappa.h), and each such decay carries "
           "a relative error of about u |G|, so the stock chunked scan itself is only that accurate (not a kernel "
           "defect); the band follows it: %s %s <= %.3g = %g kappa_G u (rule %s) instead of its constant",
           n ? "; " : "", (long long)r->chunk, r->kappa_g[0], r->kappa_g[1],
           parity_tensors[__builtin_ctz((unsigned)w->tensor)].name, parity_metric_name(w->rule->metric), w->limit,
           w->rule->kappa_g_u, w->rule->id);
}

void parity_sweep_case_scope(const input_ctx *x, parity_case_result *r) {
  for (size_t i = 0; i < r->n_subjects && i < x->n_subj; i++) {
    const parity_external *xe = x->subj[i].ext;
    if (!xe || !xe->devices || xe->devices == r->devices) continue;
    r->subjects[i].other_case = 1;
    r->subjects[i].has_vs_ref = r->subjects[i].has_vs_scan = 0;
  }
}

int parity_sweep_case_judge(const input_ctx *x, parity_case_result *r, gdn_error *e) {
  parity_sweep_case_scope(x, r); /* idempotent: the streamed path's cases come here directly */
  parity_subject *view = gdn_calloc(r->n_subjects, sizeof *view, "policy view", e);
  if (!view) return e ? e->code : GDN_ERR_NOMEM;
  for (size_t i = 0; i < r->n_subjects; i++) {
    const parity_subject_result *s = &r->subjects[i];
    view[i].name = s->name;
    view[i].kind = s->other_case ? 0u : s->kind; /* no rule applies to a subject of no kind */
    view[i].own_numerics = s->own_numerics;
    view[i].dtype = s->dtype;
    view[i].matmul = s->matmul;
    for (int t = 0; t < PARITY_T_N; t++) {
      view[i].out_dtype[t] = s->out_dtype[t];
      if (s->has_vs_ref & (1u << t)) view[i].vs_oracle[t] = &s->vs_ref[t];
      if (s->has_vs_scan & (1u << t)) view[i].vs_scan[t] = &s->vs_scan[t];
    }
  }
  int64_t *seam_t = gdn_calloc(r->n_seams + 1, sizeof *seam_t, "seam positions", e);
  if (!seam_t) {
    gdn_free(view);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  for (size_t k = 0; k < r->n_seams; k++) seam_t[k] = r->seams[k].t;
  parity_kappa kg = x->kappa ? *x->kappa : parity_kappa_g(x->in, r->chunk);
  r->kappa_g[0] = kg.o, r->kappa_g[1] = kg.ht;
  parity_case_view cv = {x->o->dtype, x->o->matmul, r->has_ref, {NULL}, r->n_subjects, view, seam_t, r->n_seams,
                         {0}};
  cv.kappa_g[PARITY_T_O] = kg.o, cv.kappa_g[PARITY_T_HT] = kg.ht;
  for (int t = 0; t < PARITY_T_N; t++) cv.scan_vs_oracle[t] = view[r->baseline].vs_oracle[t];
  int rc = parity_policy_judge(x->o->policy, &cv, &r->checks, e);
  gdn_free(view);
  gdn_free(seam_t);
  if (rc) return rc;
  case_range_finding(x, r);
  case_kappa_finding(r);
  r->pass = 1;
  for (size_t i = 0; i < r->checks.n; i++) r->pass &= r->checks.v[i].pass;
  for (size_t i = 0; i < r->n_subjects; i++) {
    r->subjects[i].pass = parity_checks_subject_pass(&r->checks, i);
    r->subjects[i].deciding = parity_checks_subject_deciding(&r->checks, i);
    /* parity_packing.h: an output of the other packing computed another function */
    const parity_external *xe = x->subj[i].ext;
    if (xe && xe->packing_mismatch) r->subjects[i].pass = r->pass = 0;
  }
  return GDN_OK;
}

/* Seam states cost 2 B Hv D Dk Dv doubles: recorded while that stays
 * modest (256 MiB), otherwise the seams report o errors only. */
int parity_sweep_want_seams(const gdn_shape *s, int64_t devices) {
  double bytes = 16.0 * (double)(s->B * s->Hv) * (double)devices * (double)(s->Dk * s->Dv);
  return devices > 1 && bytes <= 256.0 * 1048576.0;
}

/* One case: produce, measure, judge, record. */
static int run_case(input_ctx *x, int64_t devices, kern_prefix prefix, gdn_error *e) {
  x->cfg.devices = devices;
  x->cfg.prefix = prefix;
  parity_case_result r;
  parity_case_result_init(&r);
  char what[96];
  snprintf(what, sizeof what, "C%" PRId64 " D%" PRId64 " %s", x->cfg.chunk, devices, kern_prefix_name(prefix));
  parity_progress_begin(x->o->progress, what);
  int rc = parity_case_result_alloc(&r, devices, x->n_subj, x->n_blocks, e);
  if (!rc) rc = run_stage(x, PARITY_STAGE_CASE, parity_sweep_want_seams(&x->in->shape, devices), &r.seconds, e);
  parity_progress_end(x->o->progress);
  if (!rc) {
    x->d->t_kernels += r.seconds;
    parity_sweep_case_describe(x, &r);
    case_measure(x, &r);
    rc = case_block_map(x, &r, e);
    if (!rc) rc = parity_case_subject_measure(x, &r, e);
    if (!rc) rc = case_grad_profile(x, &r, e);
    if (!rc) rc = parity_sweep_case_judge(x, &r, e);
  }
  if (!rc) rc = parity_doc_add_case(x->d, &r, x->o->reproducible, e);
  if (!rc && x->o->verbosity >= 1 && x->o->log) parity_progress_clear(x->o->progress);
  if (!rc && x->o->verbosity >= 1 && x->o->log) parity_log_case(x->o->log, &r, x->o->verbosity);
  for (size_t i = 0; i < x->n_subj; i++) /* buffers kept for the next case (same shapes) */
    if (x->subj[i].m->stage == PARITY_STAGE_CASE) parity_subject_park(&x->subj[i]);
  parity_case_result_clear(&r);
  return rc;
}

size_t parity_sweep_model_devices(const parity_sweep_opts *o, const gdn_shape *s, int64_t chunk, int64_t *out) {
  return o->shard == KERN_SHARD_TOKENS ? parity_sweep_devices_for(o, s, chunk, out) : 0;
}

/* The error model of this chunk size (parity_kappa_model.h), with a
 * reference, float32 or bfloat16 compute (G summed in float32) and a policy
 * with a rule that follows it; the
 * subjects measured once per input (external outputs) get its statistics
 * for this chunk size. */
static int chunk_model(input_ctx *x, int64_t chunk, gdn_error *e) {
  if (!x->ref || x->o->dtype == GDN_DTYPE_F64 || !parity_policy_uses_model(x->o->policy)) return GDN_OK;
  int64_t dev[PARITY_MAX_LIST];
  const size_t nd = parity_sweep_model_devices(x->o, &x->in->shape, chunk, dev);
  int rc = parity_model_compute_layouts(&x->model, x->in, x->o->ct, chunk, 0x1p-24, &x->cfg, 0, dev, nd, e);
  if (rc) return rc;
  x->has_model = 1;
  const gdn_grads *ref_grads = x->ref->has_grads ? &x->ref->grads : NULL;
  parity_model dm; /* per-document states' (parity_docstate.h), made for the first output that has them */
  parity_model_init(&dm);
  for (size_t i = 0; !rc && i < x->n_subj; i++) {
    const parity_subject_run *s = &x->subj[i];
    parity_subject_result *m = &x->meas[i];
    if (s->m->stage != PARITY_STAGE_INPUT || !per_document_ht(s, PARITY_T_HT) ||
        !(m->has_vs_ref & PARITY_TENSOR_HT))
      continue;
    if (!dm.s[PARITY_T_HT]) rc = parity_docstate_model(x->in, chunk, &x->cfg, 0, &dm, e);
    if (!rc) rc = parity_docstate_model_apply(&dm, x->ref, s->ext, chunk, &m->vs_ref[PARITY_T_HT], e);
  }
  parity_model_clear(&dm);
  if (rc) return rc;
  for (size_t i = 0; i < x->n_subj; i++) {
    const parity_subject_run *s = &x->subj[i];
    parity_subject_result *m = &x->meas[i];
    if (s->m->stage != PARITY_STAGE_INPUT) continue;
    for (int t = 0; t < PARITY_T_N; t++) {
      if (!(m->has_vs_ref & (1u << t)) || !x->model.s[t] || per_document_ht(s, t)) continue;
      const parity_tensor *pt = &parity_tensors[t];
      int64_t dims[4], bl[4];
      pt->dims(&x->in->shape, dims);
      pt->blocks(&x->in->shape, chunk, bl);
      if ((rc = parity_metrics_model_v(parity_tensor_get(pt, s->out, s->grads), parity_tensor_get(pt, &x->ref->out, ref_grads),
                                       x->model.s[t], dims, bl, s->out_dtype[t], &m->vs_ref[t], e)))
        return rc;
    }
  }
  return GDN_OK;
}

/* One chunk size: its chunk-stage subjects (the scan), the profiles of the
 * reference and the baseline, then every device count and prefix. */
static int run_chunk(input_ctx *x, int64_t chunk, gdn_error *e) {
  const parity_sweep_opts *o = x->o;
  const gdn_shape *s = &x->in->shape;
  int rc = parity_sweep_chunk_begin(x, s, chunk, e);
  if (!rc) rc = chunk_model(x, chunk, e);
  if (rc) return rc;
  double secs = 0;
  char what[64];
  snprintf(what, sizeof what, "C%" PRId64 " scan", chunk);
  parity_progress_begin(o->progress, what);
  rc = run_stage(x, PARITY_STAGE_CHUNK, 0, &secs, e);
  parity_progress_end(o->progress);
  if (rc) return rc;
  x->d->t_kernels += secs;
  if (x->ref) {
    int64_t od[4];
    parity_tensors[PARITY_T_O].dims(s, od);
    const parity_vals ro = parity_vals_o(&x->ref->out);
    parity_profile_o_v(ro, parity_vals_f64(NULL), od, x->block, x->prof_ref);
    parity_profile_o_v(parity_vals_o(x->subj[x->baseline].out), ro, od, x->block, x->prof_base);
  }
  int64_t dev[PARITY_MAX_LIST];
  size_t nd = parity_sweep_devices_for(o, s, chunk, dev);
  if (o->verbosity >= 1 && o->log) parity_progress_clear(o->progress);
  if (o->verbosity >= 1 && o->log) parity_log_chunk(o->log, chunk, x->n_chunks, o->shard == KERN_SHARD_TOKENS ? s->T : 0, nd < o->n_devices,
                                                    x->ref != NULL);
  for (size_t di = 0; di < nd; di++)
    for (size_t pi = 0; pi < o->n_prefixes; pi++)
      if ((rc = run_case(x, dev[di], o->prefixes[pi], e))) return rc;
  ctx_free_chunk(x);
  return GDN_OK;
}

int64_t parity_sweep_steps(const parity_sweep_opts *o, const gdn_shape *s) {
  int64_t n = 0;
  for (size_t ci = 0; ci < o->n_chunks; ci++) { /* each chunk's scan and its cases */
    int64_t dev[PARITY_MAX_LIST];
    n += 1 + (int64_t)(parity_sweep_devices_for(o, s, o->chunks[ci], dev) * o->n_prefixes);
  }
  return n;
}

int parity_sweep_run(parity_doc *d, const gdn_inputs *in, const parity_input_info *info,
                     const parity_reference *ref, const parity_external *ext, size_t n_ext,
                     const parity_sweep_opts *o, gdn_error *e) {
  int rc = parity_sweep_validate(&in->shape, o, e);
  if (rc) return rc;
  input_ctx x;
  parity_sweep_ctx_init(&x, d, o);
  x.in = in;
  x.ref = ref && ref->tier != PARITY_ORACLE_NONE ? ref : NULL;
  x.input_index = parity_doc_next_input(d);
  if ((rc = parity_sweep_ctx_subjects(&x, ext, n_ext, e))) goto done;
  parity_input_result ir = {info, in, x.ref, x.subj, x.n_subj};
  if ((rc = parity_doc_add_input(d, &ir, e))) goto done;
  if (o->verbosity >= 1 && o->log) parity_progress_clear(o->progress);
  if (o->verbosity >= 1 && o->log) parity_log_input(o->log, &ir, o->dtype, o->matmul, x.cfg.ftz, o->ftz < 0);
  if (o->verbosity >= 1 && o->log) parity_log_mutant(o->log, o->mutant);
  double secs;
  if ((rc = run_stage(&x, PARITY_STAGE_INPUT, 0, &secs, e))) goto done;
  for (size_t ci = 0; ci < o->n_chunks; ci++)
    if ((rc = run_chunk(&x, o->chunks[ci], e))) goto done;
done:
  parity_sweep_ctx_clear(&x);
  return rc;
}
