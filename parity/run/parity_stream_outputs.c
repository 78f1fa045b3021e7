#include "parity_stream_outputs.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_shape.h"
#include "kern.h"
#include "parity_metrics.h"
#include "parity_dist.h"
#include "parity_dist_merge.h"
#include "parity_docstate.h"
#include "parity_packing.h"
#include "parity_packing_group.h"
#include "parity_padding.h"
#include "parity_stream_docstate.h"
#include "parity_stream_merge.h"
#include "parity_upstream.h"

/* A tensor's head axis (states (B, H, Dk, Dv), the rest (B, T, H, ...)) and
 * whether its heads are key heads (dq, dk): as parity_sweep_stream.c. */
int parity_stream_outputs_head_axis(int t) { return t == PARITY_T_HT || t == PARITY_T_DH0 ? 1 : 2; }
static int head_axis(int t) { return parity_stream_outputs_head_axis(t); }
static int on_keys(int t) { return t == PARITY_T_DQ || t == PARITY_T_DK; }

void parity_stream_outputs_heads(const parity_stream_outputs *so, int64_t g, int t, int64_t *h0, int64_t *h1) {
  int64_t k0, k1;
  gdn_shape gs;
  parity_stream_group(so->p, g, &k0, &k1, &gs);
  *h0 = on_keys(t) ? k0 : k0 * so->r;
  *h1 = on_keys(t) ? k1 : k1 * so->r;
}

void parity_stream_outputs_init(parity_stream_outputs *so) { memset(so, 0, sizeof *so); }

int parity_stream_outputs_open(parity_stream_outputs *so, parity_external *ext, size_t n, size_t first,
                               const parity_stream_plan *p, int grads, int64_t *const counts[PARITY_T_N],
                               double *const buf[3], gdn_error *e) {
  parity_stream_outputs_clear(so);
  so->ext = ext, so->n = n, so->first = first, so->p = p, so->grads = grads;
  so->r = p->whole.Hv / p->whole.Hk;
  memcpy(so->counts, counts, sizeof so->counts);
  memcpy(so->buf, buf, sizeof so->buf);
  if (!n) return GDN_OK;
  so->t = gdn_calloc(n, sizeof *so->t, "outputs' scratch", e);
  so->present = so->t ? gdn_calloc(n, sizeof *so->present, "outputs' tensors", e) : NULL;
  so->out_dtype = so->present ? gdn_calloc(n, sizeof *so->out_dtype, "outputs' dtypes", e) : NULL;
  so->acc = so->out_dtype ? gdn_calloc(n, sizeof *so->acc, "outputs' packing maxima", e) : NULL;
  so->per_doc = so->acc ? gdn_calloc(n, sizeof *so->per_doc, "outputs' final states", e) : NULL;
  if (!so->per_doc) {
    parity_stream_outputs_clear(so);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    for (int t = 0; t < PARITY_T_N; t++) parity_spill_tensor_init(&so->t[i][t]);
  for (size_t i = 0; i < n; i++) parity_packing_acc_init(&so->acc[i]);
  for (size_t i = 0; i < n; i++) so->per_doc[i] = (unsigned char)(parity_docstate_declared(&ext[i]) && ext[i].docs_ht);
  return GDN_OK;
}

void parity_stream_outputs_clear(parity_stream_outputs *so) {
  for (size_t i = 0; so->t && i < so->n; i++)
    for (int t = 0; t < PARITY_T_N; t++) parity_spill_tensor_close(&so->t[i][t]);
  gdn_free(so->t);
  gdn_free(so->present);
  gdn_free(so->out_dtype);
  gdn_free(so->acc);
  gdn_free(so->per_doc);
  parity_stream_outputs_init(so);
}

/* What produce_external (parity_subject.c) gives the whole run: o, ht when
 * stored, the stored gradients when the run judges gradients. */
int parity_stream_outputs_keep(parity_stream_outputs *so, int64_t g, const fix_fixture *slab, gdn_error *e) {
  if (!so->n) return GDN_OK;
  for (size_t i = 0; i < so->n; i++) {
    const size_t j = so->index ? so->index[i] : i;
    if (!slab || j >= slab->n_outputs)
      return gdn_error_set(e, GDN_ERR_INTERNAL, "head group %lld: output %zu of %zu read", (long long)g, j,
                           slab ? slab->n_outputs : 0);
    const fix_output *fo = &slab->outputs[j];
    /* ht not judged where the padding convention leaves it unknown (parity_padding_note);
     * per document, its (N, hg, Dk, Dv) slab, judged against the documents' states */
    const int docs = so->per_doc[i] && fo->ht_docs;
    unsigned present = PARITY_TENSOR_O | ((fo->has_ht && so->ext[i].has_ht) || docs ? PARITY_TENSOR_HT : 0u);
    so->out_dtype[i][PARITY_T_O] = fo->out.dtype;
    so->out_dtype[i][PARITY_T_HT] = GDN_DTYPE_F32;
    if (fo->has_grads && so->grads) {
      present |= so->ext[i].grads_present;
      for (int t = 0; t < PARITY_T_N; t++)
        if (parity_tensors[t].grad) so->out_dtype[i][t] = fo->grads.dtype;
    }
    so->present[i] = present;
    for (int t = 0; t < PARITY_T_N; t++) {
      if (!(present & (1u << t))) continue;
      parity_spill_tensor *st = &so->t[i][t];
      const int docs_t = docs && t == PARITY_T_HT;
      int rc;
      if (docs_t && (!so->docs || !so->docs->on))
        return gdn_error_set(e, GDN_ERR_INTERNAL, "output %s: per-document states without their oracle", so->ext[i].name);
      if (st->f.fd < 0) {
        char what[96];
        snprintf(what, sizeof what, "output %s %s", so->ext[i].name, parity_tensors[t].name);
        if ((rc = parity_spill_tensor_open(st, what, docs_t ? so->docs->counts : so->counts[t], so->p->n_groups, e)))
          return rc;
      }
      parity_vals v = parity_tensor_get(&parity_tensors[t], &fo->out, fo->has_grads ? &fo->grads : NULL);
      if (docs_t) v = parity_vals_f64(fo->ht_docs); /* (N, hg, Dk, Dv): the group's slab of the file's */
      if (t == PARITY_T_O && so->pad && v.f) { /* binary64, to hold the reference's values where masked */
        const size_t m = gdn_shape_numel_v(&fo->out.shape);
        for (size_t k = 0; k < m; k++) so->buf[2][k] = v.f[k];
        v = parity_vals_f64(so->buf[2]);
      }
      if ((rc = parity_spill_tensor_write(st, g, v, e))) return rc;
    }
  }
  return GDN_OK;
}

/* Output i's slab of o in group g: packing maxima, then masked at padding. */
static int docs_one(parity_stream_outputs *so, size_t i, int64_t g, const gdn_inputs *in, const double *ref,
                    const double *alt, int mask, gdn_error *e) {
  parity_vals xv;
  int rc = parity_spill_tensor_read(&so->t[i][PARITY_T_O], g, so->buf[0], &xv, e);
  if (rc) return rc;
  const size_t row = (size_t)(in->shape.Hv * in->shape.Dv), nt = (size_t)(in->shape.B * in->shape.T);
  const double *o = xv.d;
  if (!o) { /* kept as float32 (no padding to mask) */
    for (size_t k = 0; k < nt * row; k++) so->buf[2][k] = xv.f[k];
    o = so->buf[2];
  }
  if (alt) {
    const int q = in->packing == GDN_PACKING_LEAK ? GDN_PACKING_RESET : GDN_PACKING_LEAK;
    parity_packing_acc_add(&so->acc[i], (int)in->packing, in, o, ref);
    parity_packing_acc_add(&so->acc[i], q, in, o, alt);
  }
  if (!mask) return GDN_OK;
  if (!xv.d)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "output %s: o kept as float32 cannot be masked", so->ext[i].name);
  for (size_t t = 0; t < nt; t++)
    if (in->seg[t] == 0) memcpy(so->buf[0] + t * row, ref + t * row, row * sizeof(double));
  return parity_spill_tensor_write(&so->t[i][PARITY_T_O], g, parity_vals_f64(so->buf[0]), e);
}

int parity_stream_outputs_docs(parity_stream_outputs *so, int64_t g, const gdn_inputs *in,
                               const parity_spill_tensor *ref_o, parity_oracle_tier tier, int bits, gdn_error *e) {
  const int bound = so->n && in->seg && parity_packing_boundaries(in) > 0;
  if (!bound && !so->pad) return GDN_OK;
  parity_vals rv;
  int rc = parity_spill_tensor_read(ref_o, g, so->buf[1], &rv, e);
  if (!rc && !rv.d)
    rc = gdn_error_set(e, GDN_ERR_INTERNAL, "head group %lld: the reference's o is not binary64", (long long)g);
  parity_reference alt;
  parity_reference_init(&alt);
  if (!rc && bound) { /* the group's owner alone: not the oracle dealt over every rank */
    const int coll = parity_dist_collective();
    parity_dist_set_collective(0);
    rc = parity_packing_group_other(in, tier, bits, &alt, e);
    parity_dist_set_collective(coll);
  }
  for (size_t i = 0; i < so->n && !rc; i++)
    rc = docs_one(so, i, g, in, rv.d, bound ? alt.out.o : NULL, so->pad && parity_padding_masks(&so->ext[i]), e);
  parity_reference_clear(&alt);
  return rc;
}

static int packing_fold(void *ctx, int rank, const void *part, size_t n, gdn_error *e) {
  parity_stream_outputs *so = ctx;
  (void)rank;
  if (n != so->n * sizeof *so->acc)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "merging the packing maxima: a part of %zu bytes", n);
  for (size_t i = 0; i < so->n; i++) {
    parity_packing_acc a;
    memcpy(&a, (const char *)part + i * sizeof a, sizeof a);
    for (int p = 0; p < 2; p++) { /* maxima, and a NaN anywhere is the verdict's NaN */
      if (a.num[p] > so->acc[i].num[p]) so->acc[i].num[p] = a.num[p];
      if (a.den[p] > so->acc[i].den[p]) so->acc[i].den[p] = a.den[p];
      so->acc[i].nan[p] |= a.nan[p];
    }
  }
  return GDN_OK;
}

int parity_stream_outputs_share(parity_stream_outputs *so, int status, gdn_error *e) {
  if (parity_dist_size() == 1 || !so->n) return status;
  /* what the outputs hold, as group 0's owner (rank 0) read it */
  int rc = status ? status : parity_dist_bcast(so->present, so->n * sizeof *so->present, 0, e);
  if (!rc) rc = parity_dist_bcast(so->out_dtype, so->n * sizeof *so->out_dtype, 0, e);
  parity_packing_acc *mine = gdn_malloc(so->n * sizeof *mine, "packing maxima", e);
  if (!mine && !rc) rc = GDN_ERR_NOMEM;
  if (mine) memcpy(mine, so->acc, so->n * sizeof *mine);
  rc = parity_dist_allmerge(rc, mine, mine ? so->n * sizeof *mine : 0, packing_fold, so, e);
  gdn_free(mine);
  return rc;
}

int parity_stream_outputs_record(parity_stream_outputs *so, const gdn_inputs *whole, gdn_error *e) {
  return parity_packing_group_record(whole, so->acc, so->ext, so->n, e);
}

/* --- the measurements ----------------------------------------------------- */

/* The source parity_mstream reads again for the median's extra rounds. */
typedef struct pair_src {
  const parity_stream_outputs *so;
  const parity_spill_tensor *x, *r;
  int t;
} pair_src;

static int pair_get(void *ctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e) {
  const pair_src *s = ctx;
  parity_stream_outputs_heads(s->so, g, s->t, h0, h1);
  int rc = parity_spill_tensor_read(s->x, g, s->so->buf[0], x, e);
  return rc ? rc : parity_spill_tensor_read(s->r, g, s->so->buf[1], r, e);
}

typedef struct opair {
  pair_src src;
  parity_group_src gs;
  parity_mstream *M;
  parity_model_acc *MA;
  size_t i;
} opair;

/* Tensor t's pairs, what their visits read. */
typedef struct pairs_ctx {
  const parity_stream_outputs *so;
  int t;
  opair *p;
  size_t n;
  const parity_spill_tensor *ref, *model;
} pairs_ctx;

/* Group g's visit (pass A or B) for tensor t's pairs: the reference and
 * the model's scale read once, each output's slab in turn. */
static int pairs_visit(void *v, int64_t g, int pass_b, gdn_error *e) {
  const pairs_ctx *c = v;
  const parity_stream_outputs *so = c->so;
  const int t = c->t;
  opair *p = c->p;
  int64_t h0, h1;
  parity_stream_outputs_heads(so, g, t, &h0, &h1);
  parity_vals rv, sv = {0}, xv;
  int rc = parity_spill_tensor_read(&c->ref[t], g, so->buf[1], &rv, e);
  for (size_t k = 0; k < c->n && !rc; k++)
    if (p[k].MA && !sv.d) rc = parity_spill_tensor_read(&c->model[t], g, so->buf[2], &sv, e);
  for (size_t k = 0; k < c->n && !rc; k++) {
    if ((rc = parity_spill_tensor_read(p[k].src.x, g, so->buf[0], &xv, e))) break;
    rc = pass_b ? parity_mstream_add_b(p[k].M, xv, rv, h0, h1, e) : parity_mstream_add_a(p[k].M, xv, rv, h0, h1, e);
    if (rc || !p[k].MA) continue;
    if (pass_b) parity_model_acc_add_b(p[k].MA, xv, rv, sv.d, h0, h1);
    else parity_model_acc_add_a(p[k].MA, xv, rv, sv.d, h0, h1);
  }
  return rc;
}

/* What tensor t's pairs are measured against: the reference and the
 * model's scales of the whole shape w (w.B the documents for a
 * per-document ht), and which outputs (per_doc 0 or 1). */
typedef struct pair_view {
  gdn_shape w;
  const parity_spill_tensor *ref, *model; /* indexed by tensor */
  int with_model, per_doc;
} pair_view;

static int measure_tensor(const parity_stream_outputs *so, input_ctx *x, int t, const pair_view *pv, int64_t chunk,
                          gdn_error *e) {
  const gdn_shape *w = &pv->w;
  const parity_spill_tensor *ref = pv->ref, *model = pv->model;
  const int with_model = pv->with_model;
  kern_config input_stage; /* the configuration the whole run's input stage measures with */
  kern_config_init(&input_stage);
  int64_t dims[4], bl[4], bm[4];
  parity_tensors[t].dims(w, dims);
  parity_tensors[t].blocks(w, input_stage.chunk, bl);
  parity_tensors[t].blocks(w, chunk, bm);
  const size_t most = so->n ? so->n : 1;
  opair *p = gdn_calloc(most, sizeof *p, "output pairs", e);
  parity_mstream **M = p ? gdn_calloc(most, sizeof *M, "output pairs", e) : NULL;
  parity_model_acc **MA = M ? gdn_calloc(most, sizeof *MA, "output pairs", e) : NULL;
  if (!MA) {
    gdn_free(M);
    gdn_free(p);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  size_t n = 0;
  int rc = GDN_OK;
  for (size_t i = 0; i < so->n && !rc; i++) {
    if (!(so->present[i] & (1u << t)) || (t == PARITY_T_HT && so->per_doc[i] != pv->per_doc)) continue;
    opair *q = &p[n++];
    q->i = i;
    q->src = (pair_src){so, &so->t[i][t], &ref[t], t};
    q->gs = (parity_group_src){pair_get, &q->src, so->p->n_groups, head_axis(t), NULL, NULL, NULL};
    parity_stream_group_net(&q->gs); /* the median's extra rounds count each rank's groups */
    rc = parity_mstream_new(&q->M, &q->gs, dims, bl, so->out_dtype[i][t], e);
    if (!rc && with_model) rc = parity_model_acc_new(&q->MA, dims, bm, head_axis(t), so->out_dtype[i][t], e);
  }
  for (size_t k = 0; k < n; k++) M[k] = p[k].M, MA[k] = p[k].MA;
  if (!rc && !n) { /* no output holds it (the same on every rank: parity_stream_outputs_share) */
    gdn_free(MA), gdn_free(M), gdn_free(p);
    return GDN_OK;
  }
  pairs_ctx cx = {so, t, p, n, ref, model};
  rc = parity_stream_passes(rc, so->p->n_groups, pairs_visit, &cx, M, MA, n, NULL, e);
  gdn_free(MA);
  gdn_free(M);
  for (size_t k = 0; k < n && !rc; k++) {
    parity_subject_result *m = &x->meas[so->first + p[k].i];
    if ((rc = parity_mstream_finish(p[k].M, &m->vs_ref[t], e))) break;
    m->has_vs_ref |= 1u << t;
    if (p[k].MA) parity_model_acc_finish(p[k].MA, &m->vs_ref[t]);
  }
  for (size_t k = 0; k < n; k++) parity_mstream_free(p[k].M), parity_model_acc_free(p[k].MA);
  gdn_free(p);
  return rc;
}

int parity_stream_outputs_measure(const parity_stream_outputs *so, input_ctx *x, const parity_spill_tensor *ref,
                                  unsigned ref_present, const parity_spill_tensor *model, unsigned model_present,
                                  int64_t chunk, gdn_error *e) {
  if (!so->n) return GDN_OK;
  for (size_t i = 0; i < so->n; i++) {
    parity_subject_result *m = &x->meas[so->first + i];
    parity_sweep_meas_init(m, &x->subj[so->first + i]);
    memcpy(m->out_dtype, so->out_dtype[i], sizeof m->out_dtype);
  }
  if (!x->ref) return GDN_OK;
  int rc = GDN_OK;
  for (int t = 0; t < PARITY_T_N && !rc; t++) {
    if (!(ref_present & (1u << t))) continue;
    const pair_view pv = {so->p->whole, ref, model, (model_present >> t) & 1, 0};
    rc = measure_tensor(so, x, t, &pv, chunk, e);
  }
  if (rc || !so->docs || !so->docs->on) return rc;
  /* per-document ht: against the documents' states, N in place of B (the whole run's measure_subject) */
  parity_spill_tensor dref[PARITY_T_N], dmodel[PARITY_T_N];
  dref[PARITY_T_HT] = so->docs->ref;
  dmodel[PARITY_T_HT] = so->docs->model;
  const pair_view pv = {so->docs->rows, dref, dmodel, so->docs->model_on, 1};
  return measure_tensor(so, x, PARITY_T_HT, &pv, chunk, e);
}
