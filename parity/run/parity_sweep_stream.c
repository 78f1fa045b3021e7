#include "parity_stream_tile.h"
#include "parity_sweep_stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_prelude.h"
#include "kern_mutant.h"
#include "parity_dist.h"
#include "parity_dist_merge.h"
#include "parity_docstate.h"
#include "parity_kappa.h"
#include "parity_log.h"
#include "parity_metrics.h"
#include "parity_oracle_group.h"
#include "parity_padding.h"
#include "parity_stream_seg.h"
#include "parity_spill.h"
#include "parity_stream_oracle.h"
#include "parity_stored_grads.h"
#include "parity_stream_subject.h"
#include "parity_stream_docstate.h"
#include "parity_stream_merge.h"
#include "parity_sweep_ctx.h"
#include "parity_upstream.h"
#include "gdn_clock.h"

/* A tensor's head axis (parity_tensor.h: states (B, H, Dk, Dv), the rest
 * (B, T, H, ...)), and whether its heads are key heads (dq, dk). */
static int head_axis(int t) { return t == PARITY_T_HT || t == PARITY_T_DH0 ? 1 : 2; }
static int on_keys(int t) { return t == PARITY_T_DQ || t == PARITY_T_DK; }

/* One output set kept in scratch, a tensor per row. */
typedef struct set_head set_head_t;

typedef struct spill_set {
  parity_spill_tensor t[PARITY_T_N];
  unsigned present;
  gdn_dtype out_dtype[PARITY_T_N]; /* the producer's (parity_subject_run.out_dtype) */
  int has_seams;                   /* the producer recorded its seam states */
} spill_set;

typedef struct sctx {
  input_ctx x;
  const parity_stream_run *sr;
  const parity_stream_plan *p;
  gdn_shape whole;
  int64_t r; /* value heads per key head */
  gdn_inputs hdr;  /* the whole shape and the inputs' flags, no values: the document's and the log's view */
  float h0_mark;   /* hdr.h0 points here when the inputs have h0 */
  gdn_prelude prelude_mark; /* hdr.prelude points here when the inputs have the bfloat16 prelude */
  parity_reference ref; /* the certificate (no outputs: they are in scratch) */
  gdn_inputs in;   /* the current group's */
  gdn_cotangents ct;
  int64_t *counts[PARITY_T_N]; /* per group element counts */
  spill_set refs, base, *cases;
  size_t n_cases, n_dev;
  /* The extra subject rows (parity_sweep_opts.extra, case stage: coverage's
   * mutants), subjects 2.. of the table: per case k and row j, set
   * xsets[k * n_extra + j] in scratch, its owner's heads xsh (per group)
   * and its metrics meas_x, judged with the case. */
  size_t n_extra;
  spill_set *xsets;
  struct set_head *xsh;          /* n_groups x n_cases x n_extra */
  parity_subject_result *meas_x; /* n_cases x n_extra */
  int64_t case_dev[PARITY_MAX_LIST * 3];
  kern_prefix case_pre[PARITY_MAX_LIST * 3];
  double case_secs[PARITY_MAX_LIST * 3];
  parity_rel_acc *seams; /* n_cases x max_seams */
  parity_subject_result meas_base, *meas_case; /* the chunk size's metrics: the scan's, each case's candidate's */
  size_t max_seams;
  /* Per group, what its owner computed, kept until the exchange (below):
   * the oracle's status and tallies, each produced set's head, the
   * group's seam sums. */
  struct ref_head *rh;           /* n_groups */
  parity_group_tally *gt;        /* n_groups */
  struct set_head *sh;           /* n_groups x (1 + n_cases) */
  parity_rel_acc *gseams;        /* n_groups x n_cases x max_seams (owned groups) */
  parity_kappa_acc *kacc; /* per chunk size */
  double *bx, *br, *bb;   /* read-back buffers: the largest group slab as binary64 */
  /* The error model (parity_kappa_model.h) per group, as the whole run's
   * chunk_model computes it (each value head's part is its own): into
   * scratch with the scan, exchanged as its sets are. */
  spill_set model;
  set_head_t *mh; /* n_groups */
  int want_model;
  double *bm;     /* its read-back buffer */
  parity_stream_outputs outs; /* a fixture's outputs (rank 0) */
  parity_stream_docstate docs; /* their per-document final states' oracle and model */
  int stored;                 /* this oracle pass reads a fixture's stored /oracle (parity_stream_oracle.h) */
  int grads_stored;           /* and its stored /oracle/grads in place of the VJP (parity_stored_grads.h) */
  int stored_checked;         /* the stored /oracle was checked and trusted by an earlier pass: not again */
  double grad_spot_rel;       /* that pass's spot check (group 0's key head 0, rank 0) */
  double meas_secs; /* this rank's own measuring (its groups), for --verbose */
} sctx;

static void group_of(const sctx *c, int64_t g, int64_t *k0, int64_t *k1, gdn_shape *gs) {
  parity_stream_group(c->p, g, k0, k1, gs);
}

/* Tensor t's heads in group g: [*h0, *h1) along its head axis. */
static void group_heads(const sctx *c, int64_t g, int t, int64_t *h0, int64_t *h1) {
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  *h0 = on_keys(t) ? k0 : k0 * c->r;
  *h1 = on_keys(t) ? k1 : k1 * c->r;
}

static void spill_set_init(spill_set *s) {
  for (int t = 0; t < PARITY_T_N; t++) parity_spill_tensor_init(&s->t[t]);
  s->present = 0;
}

static void spill_set_close(spill_set *s) {
  for (int t = 0; t < PARITY_T_N; t++) parity_spill_tensor_close(&s->t[t]);
  s->present = 0;
}

/* Tensor t of group g of a set into scratch (its file opened with its
 * first group). */
static int spill_set_write_one(sctx *c, spill_set *s, const char *what, int64_t g, int t, parity_vals v,
                               gdn_error *e) {
  int rc;
  if (s->t[t].f.fd < 0) {
    char name[64];
    snprintf(name, sizeof name, "%s %s", what, parity_tensors[t].name);
    if ((rc = parity_spill_tensor_open(&s->t[t], name, c->counts[t], c->p->n_groups, e))) return rc;
  }
  return parity_spill_tensor_write(&s->t[t], g, v, e);
}

/* --- the group source for parity_metrics_stream -------------------------- */

typedef struct gsrc {
  sctx *c;
  const parity_spill_tensor *x, *r;
  int t;
} gsrc;

static int gsrc_get(void *vctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e) {
  gsrc *s = vctx;
  group_heads(s->c, g, s->t, h0, h1);
  int rc = parity_spill_tensor_read(s->x, g, s->c->bx, x, e);
  return rc ? rc : parity_spill_tensor_read(s->r, g, s->c->br, r, e);
}

/* The metrics of one chunk size, every pair at once: each pass over the
 * groups reads each group's reference, scan and candidates once per tensor
 * and feeds every pair that needs them (parity_mstream), so the scratch is
 * read twice in all, not twice per pair. */
typedef struct mpair {
  parity_mstream *M;
  gsrc src;              /* what the median's extra rounds read */
  parity_group_src gs;
  parity_metrics *out;
  unsigned *has, bit;
  parity_model_acc *MA; /* against the reference, with the model: its statistics (else NULL) */
} mpair;

/* Subject result m (its identity from run i, its dtypes from set s). */
static void meas_begin(sctx *c, size_t i, const spill_set *s, parity_subject_result *m) {
  parity_sweep_meas_init(m, &c->x.subj[i]);
  memcpy(m->out_dtype, s->out_dtype, sizeof m->out_dtype); /* the producer's: its run was released */
}

static int pair_add(sctx *c, mpair *p, size_t *n, int t, const parity_spill_tensor *x, const parity_spill_tensor *r,
                    gdn_dtype ulp, parity_metrics *out, unsigned *has, gdn_error *e) {
  mpair *q = &p[(*n)++];
  int64_t dims[4], bl[4];
  parity_tensors[t].dims(&c->whole, dims);
  parity_tensors[t].blocks(&c->whole, c->x.cfg.chunk, bl);
  q->src = (gsrc){c, x, r, t};
  q->gs = (parity_group_src){gsrc_get, &q->src, c->p->n_groups, head_axis(t), NULL, NULL, NULL};
  parity_stream_group_net(&q->gs); /* the median's extra rounds count each rank's groups */
  q->out = out, q->has = has, q->bit = 1u << t;
  q->MA = NULL;
  int rc = parity_mstream_new(&q->M, &q->gs, dims, bl, ulp, e);
  if (!rc && r == &c->refs.t[t] && (c->model.present & q->bit))
    rc = parity_model_acc_new(&q->MA, dims, bl, head_axis(t), ulp, e);
  return rc;
}

/* The pairs of tensor t: scan against the reference, each candidate
 * against the reference and the scan (as measure_subject, parity_sweep.c). */
static int chunk_pairs(sctx *c, int t, mpair *p, size_t *n, gdn_error *e) {
  input_ctx *x = &c->x;
  const unsigned bit = 1u << t;
  int rc = GDN_OK;
  if (x->ref && (c->base.present & c->refs.present & bit))
    rc = pair_add(c, p, n, t, &c->base.t[t], &c->refs.t[t], c->base.out_dtype[t], &c->meas_base.vs_ref[t],
                  &c->meas_base.has_vs_ref, e);
  for (size_t k = 0; k < c->n_cases && !rc; k++) {
    const spill_set *s = &c->cases[k];
    parity_subject_result *m = &c->meas_case[k];
    if (!(s->present & bit)) continue;
    if (x->ref && (c->refs.present & bit))
      rc = pair_add(c, p, n, t, &s->t[t], &c->refs.t[t], s->out_dtype[t], &m->vs_ref[t], &m->has_vs_ref, e);
    if (!rc && x->subj[x->candidate].m->vs_scan && (c->base.present & bit))
      rc = pair_add(c, p, n, t, &s->t[t], &c->base.t[t], s->out_dtype[t], &m->vs_scan[t], &m->has_vs_scan, e);
  }
  return rc;
}

/* A group visit's reads: the reference, the scan and the last candidate
 * read, each in its own buffer, so each is read once however many pairs
 * use it (a candidate's pairs follow one another). */
typedef struct vcache {
  const parity_spill_tensor *held[3];
  parity_vals v[3];
} vcache;

static int cached_read(sctx *c, vcache *vc, int t, const parity_spill_tensor *s, int64_t g, parity_vals *v,
                       gdn_error *e) {
  const int k = s == &c->refs.t[t] ? 0 : s == &c->base.t[t] ? 1 : 2;
  double *const buf[3] = {c->br, c->bb, c->bx};
  int rc = GDN_OK;
  if (vc->held[k] != s && !(rc = parity_spill_tensor_read(s, g, buf[k], &vc->v[k], e))) vc->held[k] = s;
  *v = vc->v[k];
  return rc;
}

/* One visit of group g for tensor t's pairs: pass A or B. */
static int chunk_visit(sctx *c, int t, int64_t g, mpair *p, size_t n, int pass_b, gdn_error *e) {
  int64_t h0, h1;
  group_heads(c, g, t, &h0, &h1);
  vcache vc = {{NULL}, {{0}}};
  int rc = GDN_OK, has_s = 0;
  parity_vals sv = {0};
  for (size_t i = 0; i < n && !rc; i++) {
    parity_vals xv, rv;
    if ((rc = cached_read(c, &vc, t, p[i].src.x, g, &xv, e)) || (rc = cached_read(c, &vc, t, p[i].src.r, g, &rv, e)))
      break;
    rc = pass_b ? parity_mstream_add_b(p[i].M, xv, rv, h0, h1, e) : parity_mstream_add_a(p[i].M, xv, rv, h0, h1, e);
    if (rc || !p[i].MA) continue;
    if (!has_s && !(rc = parity_spill_tensor_read(&c->model.t[t], g, c->bm, &sv, e))) has_s = 1;
    if (rc) break;
    if (pass_b) parity_model_acc_add_b(p[i].MA, xv, rv, sv.d, h0, h1);
    else parity_model_acc_add_a(p[i].MA, xv, rv, sv.d, h0, h1);
  }
  return rc;
}

typedef struct visit_ctx {
  sctx *c;
  int t;
  mpair *p;
  size_t n;
} visit_ctx;

static int visit_chunk(void *v, int64_t g, int pass_b, gdn_error *e) {
  visit_ctx *x = v;
  return chunk_visit(x->c, x->t, g, x->p, x->n, pass_b, e);
}

/* The two passes over the groups for pairs p[0..n) (parity_stream_passes),
 * finished into their results and freed. */
static int chunk_metrics_pairs(sctx *c, int t, mpair *p, size_t n, int rc, gdn_error *e) {
  parity_mstream *M[2 * PARITY_MAX_LIST * 3 + 1] = {NULL};
  parity_model_acc *MA[2 * PARITY_MAX_LIST * 3 + 1] = {NULL};
  for (size_t i = 0; i < n; i++) M[i] = p[i].M, MA[i] = p[i].MA;
  visit_ctx vx = {c, t, p, n};
  rc = parity_stream_passes(rc, c->p->n_groups, visit_chunk, &vx, M, MA, n, &c->meas_secs, e);
  for (size_t i = 0; i < n && !rc; i++)
    if (!(rc = parity_mstream_finish(p[i].M, p[i].out, e))) {
      *p[i].has |= p[i].bit;
      if (p[i].MA) parity_model_acc_finish(p[i].MA, p[i].out);
    }
  for (size_t i = 0; i < n; i++) parity_mstream_free(p[i].M), parity_model_acc_free(p[i].MA);
  return rc;
}

static int chunk_metrics_tensor(sctx *c, int t, gdn_error *e) {
  mpair p[2 * PARITY_MAX_LIST * 3 + 1];
  size_t n = 0;
  int rc = chunk_pairs(c, t, p, &n, e);
  return chunk_metrics_pairs(c, t, p, n, rc, e);
}

/* Extra row j of case k, tensor t: against the reference and (its row
 * asking) the scan, as measure_subject (parity_sweep.c) measures it; one
 * set at a time, so the measuring holds two pairs however many rows. */
static int extra_metrics_tensor(sctx *c, size_t k, size_t j, int t, gdn_error *e) {
  input_ctx *x = &c->x;
  const unsigned bit = 1u << t;
  const spill_set *s = &c->xsets[k * c->n_extra + j];
  parity_subject_result *m = &c->meas_x[k * c->n_extra + j];
  mpair p[2];
  size_t n = 0;
  int rc = GDN_OK;
  if (!(s->present & bit)) return rc;
  if (x->ref && (c->refs.present & bit))
    rc = pair_add(c, p, &n, t, &s->t[t], &c->refs.t[t], s->out_dtype[t], &m->vs_ref[t], &m->has_vs_ref, e);
  if (!rc && x->subj[2 + j].m->vs_scan && (c->base.present & bit))
    rc = pair_add(c, p, &n, t, &s->t[t], &c->base.t[t], s->out_dtype[t], &m->vs_scan[t], &m->has_vs_scan, e);
  return chunk_metrics_pairs(c, t, p, n, rc, e);
}

static int chunk_metrics(sctx *c, gdn_error *e) {
  input_ctx *x = &c->x;
  meas_begin(c, x->baseline, &c->base, &c->meas_base);
  for (size_t k = 0; k < c->n_cases; k++) meas_begin(c, x->candidate, &c->cases[k], &c->meas_case[k]);
  for (size_t i = 0; i < c->n_cases * c->n_extra; i++)
    meas_begin(c, 2 + i % c->n_extra, &c->xsets[i], &c->meas_x[i]);
  int rc = GDN_OK;
  for (int t = 0; t < PARITY_T_N && !rc; t++) rc = chunk_metrics_tensor(c, t, e);
  for (size_t i = 0; i < c->n_cases * c->n_extra && !rc; i++)
    for (int t = 0; t < PARITY_T_N && !rc; t++) rc = extra_metrics_tensor(c, i / c->n_extra, i % c->n_extra, t, e);
  return rc;
}

/* --- 1: the oracle, the inputs' scratch and kappa ----------------------- */

static int load_group(sctx *c, int64_t g, gdn_error *e) {
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  gdn_inputs_clear(&c->in);
  gdn_cotangents_clear(&c->ct);
  return c->sr->src.load(c->sr->src.ctx, k0, k1, &c->in, c->sr->grads ? &c->ct : NULL, e);
}

/* The document's view of the inputs: the first group's flags, the whole
 * shape, no values but the segment ids (per token, every group's:
 * parity_stream_seg.h), owned here. */
static int header_from(sctx *c, gdn_error *e) {
  c->hdr = c->in;
  c->hdr.shape = c->whole;
  c->hdr.q = c->hdr.k = c->hdr.v = c->hdr.g = c->hdr.beta = NULL;
  c->hdr.h0 = c->in.h0 ? &c->h0_mark : NULL;
  c->hdr.prelude = c->in.prelude ? &c->prelude_mark : NULL;
  c->hdr.seg = NULL;
  return parity_stream_seg_keep(&c->hdr, &c->in, e);
}

/* Group 0's header (header_from, rank 0's) on every rank: every rank
 * measures, with the document's view of the inputs. */
static int header_share(sctx *c, gdn_error *e) {
  if (parity_dist_size() == 1) return GDN_OK;
  int rc = parity_dist_bcast(&c->hdr, sizeof c->hdr, 0, e);
  if (parity_dist_rank() == 0) return rc;
  c->hdr.h0 = c->hdr.h0 ? &c->h0_mark : NULL; /* rank 0's addresses: only whether they were set */
  c->hdr.q = c->hdr.k = c->hdr.v = c->hdr.g = c->hdr.beta = NULL;
  c->hdr.seg = NULL;
  c->hdr.prelude = NULL;
  return rc;
}

/* A streamed run under mpirun deals whole groups: rank g mod N computes
 * group g (its oracle, its kernels) with all its threads into its own
 * scratch, every rank its groups at once; then the exchange: for each group
 * in order its owner broadcasts the heads of what it computed (presence,
 * forms, errors) and the tallies (parity_dist_bcast); rank 0 merges the
 * seam sums.  The tensors stay in the owner's scratch, where the owner
 * measures them (parity_stream_merge.h).  Errors travel in the heads, so
 * every rank stops alike.  One process: the owner is rank 0, nothing
 * moves. */

/* A group's oracle as its owner found it. */
typedef struct ref_head {
  int rc;
  gdn_error err;
  unsigned present;
  int tier[2], cap[2];
  double seconds[2];
} ref_head;

static int owner_of(int64_t g) { return (int)(g % parity_dist_size()); }

/* A tally of the owner's (tier 0: none) to every rank, into *t there. */
static int share_tally(oracle_tally *t, int tier, int cap, int owner, gdn_error *e) {
  int rc = GDN_OK;
  if (!tier) return rc;
  if (parity_dist_rank() != owner) rc = oracle_tally_alloc(t, tier, cap, 0, e);
  return rc ? rc : parity_dist_bcast(t->v, t->n * sizeof *t->v, owner, e);
}

/* The owner's side of a stored /oracle/grads: group g's slab of the six
 * gradients into the reference's scratch (no VJP, no tally); group 0 (key
 * head 0) spot-checked here. */
static int stored_grads_keep(sctx *c, int64_t g, ref_head *hd, gdn_error *e) {
  const gdn_grads *sg = &c->sr->fixture->slab(c->sr->src.ctx)->oracle.grads;
  if (!sg->dq) return gdn_error_set(e, GDN_ERR_INTERNAL, "head group %" PRId64 ": /oracle/grads was not read", g);
  int rc = g == 0 ? parity_stored_grads_spot(&c->in, NULL, &c->ct, sg, 0, &c->grad_spot_rel, e) : GDN_OK;
  gdn_outputs none;
  gdn_outputs_init(&none);
  for (int t = 0; !rc && t < PARITY_T_N; t++) {
    const parity_vals v = parity_tensor_get(&parity_tensors[t], &none, sg);
    if (!parity_vals_has(v)) continue;
    hd->present |= 1u << t;
    rc = spill_set_write_one(c, &c->refs, "reference", g, t, v, e);
  }
  return rc;
}

/* The owner's side: group g's oracle into its scratch, its head and tally
 * kept (with stored gradients, which come only with the stored forward:
 * nothing computed but the spot check). */
static void oracle_compute(sctx *c, parity_group_oracle *go, int64_t g) {
  ref_head *hd = &c->rh[g];
  if (c->grads_stored) {
    const double t0 = gdn_clock_seconds();
    hd->rc = stored_grads_keep(c, g, hd, &hd->err);
    hd->seconds[0] = 0, hd->seconds[1] = gdn_clock_seconds() - t0;
    return;
  }
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  parity_reference gr;
  parity_reference_init(&gr);
  hd->rc = parity_group_oracle_compute(go, &c->in, k0, c->sr->grads ? &c->ct : NULL, &gr, &c->gt[g], &hd->err);
  for (int t = 0; !hd->rc && gr.tier != PARITY_ORACLE_NONE && t < PARITY_T_N; t++) {
    const parity_vals v = parity_tensor_get(&parity_tensors[t], &gr.out, gr.has_grads ? &gr.grads : NULL);
    if (!parity_vals_has(v)) continue;
    hd->present |= 1u << t;
    hd->rc = spill_set_write_one(c, &c->refs, "reference", g, t, v, &hd->err);
  }
  hd->tier[0] = c->gt[g].fwd.tier, hd->cap[0] = c->gt[g].fwd.cap;
  hd->tier[1] = c->gt[g].vjp.tier, hd->cap[1] = c->gt[g].vjp.cap;
  memcpy(hd->seconds, c->gt[g].seconds, sizeof hd->seconds);
  parity_reference_clear(&gr);
}

/* The exchange of group g's oracle; rank 0 folds its tallies. */
static int oracle_share(sctx *c, parity_group_oracle *go, int64_t g, gdn_error *e) {
  const int owner = owner_of(g);
  ref_head hd = c->rh[g];
  int rc = parity_dist_bcast(&hd, sizeof hd, owner, e);
  if (!rc && hd.rc) *e = hd.err, rc = hd.rc;
  /* the tensors stay in the owner's scratch: the owner measures them (parity_stream_merge.h) */
  c->refs.present |= hd.present; /* a stored /oracle's o and ht are rank 0's already */
  parity_group_tally *gt = &c->gt[g];
  if (!rc) rc = share_tally(&gt->fwd, hd.tier[0], hd.cap[0], owner, e);
  if (!rc) rc = share_tally(&gt->vjp, hd.tier[1], hd.cap[1], owner, e);
  memcpy(gt->seconds, hd.seconds, sizeof gt->seconds);
  if (!rc) rc = parity_group_oracle_fold(go, gt, e);
  return rc;
}

/* Rank 0 loads every group (the inputs' hash and kappa are its); the owner
 * computes.  A rank that cannot load a group ends every rank. */
/* The owner's side of a stored /oracle: group g's slab of o and ht into
 * the reference's scratch, checked as it comes (parity_stored_oracle_group;
 * the ranks' findings merged after the pass, parity_stored_oracle_merge). */
static int stored_keep(sctx *c, int64_t g, gdn_error *e) {
  const fix_fixture *slab = c->sr->fixture->slab(c->sr->src.ctx);
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  int rc = c->stored_checked ? GDN_OK
                             : parity_stored_oracle_group(c->sr->fixture->stored, &c->in, &slab->oracle.out, k0 * c->r,
                                                          c->whole.Hv, e);
  for (int t = PARITY_T_O; t <= PARITY_T_HT && !rc; t++) {
    rc = spill_set_write_one(c, &c->refs, "reference", g, t, parity_tensor_get(&parity_tensors[t], &slab->oracle.out, NULL), e);
    c->refs.present |= 1u << t;
    c->rh[g].present |= 1u << t; /* every rank learns it from the group's head (oracle_share) */
  }
  return rc;
}

static int oracle_visit(sctx *c, parity_group_oracle *go, int64_t g, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  const int me = parity_dist_rank(), owner = owner_of(g);
  if (me != owner) return GDN_OK; /* the owner loads its group: its oracle, its kappa sums */
  const int wrong = me != 0 && parity_dist_test_fault("stream-oracle"); /* testing: the next group's oracle */
  gdn_error le;
  gdn_error_init(&le);
  int rc = load_group(c, wrong ? (g + 1) % c->p->n_groups : g, &le);
  if (!rc && g == 0) rc = header_from(c, &le);
  if (!rc && c->hdr.seg) rc = parity_stream_seg_same(&c->hdr, &c->in, g, &le); /* rank 0's header keeps the ids */
  /* a fixture's outputs and stored /oracle: the owner's, measured there (merged: parity_stream_merge.h) */
  if (!rc && c->outs.n) {
    c->outs.pad = parity_padding_tokens(&c->in) > 0; /* the same ids in every group */
    rc = parity_stream_outputs_keep(&c->outs, g, c->sr->fixture->slab(c->sr->src.ctx), &le);
  }
  if (!rc && c->stored) rc = stored_keep(c, g, &le);
  for (size_t ci = 0; !rc && ci < o->n_chunks; ci++) parity_kappa_acc_add(&c->kacc[ci], &c->in, o->chunks[ci]);
  if (rc && parity_dist_size() == 1) return *e = le, rc;
  if (rc) {
    fprintf(stderr, "gdn-parity: rank %d: error: %s\n", me, le.msg);
    parity_dist_abort(gdn_error_exit_status(rc));
  }
  if (me == owner && (!c->stored || c->sr->grads)) oracle_compute(c, go, g); /* stored: the VJP only */
  if (c->rh[g].rc && parity_dist_size() == 1) return *e = c->rh[g].err, c->rh[g].rc; /* the rest would fail alike */
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  parity_stream_docstate_group(&c->docs, g, &c->in, k0); /* its error told in the exchange */
  /* packed documents: the packing maxima (merged over the ranks after the pass) and the padding mask */
  if (c->outs.n)
    return parity_stream_outputs_docs(&c->outs, g, &c->in, &c->refs.t[PARITY_T_O], c->sr->tier, c->sr->oracle_bits, e);
  return GDN_OK;
}

/* The tier of the per-document states: the reference's (parity_docstate.h),
 * a stored /oracle's when this pass reads one. */
static parity_oracle_tier docs_tier(const sctx *c, const parity_group_oracle *go) {
  if (!c->stored) return go->tier;
  return c->sr->fixture->stored->attrs.tier_dd ? PARITY_ORACLE_DD : PARITY_ORACLE_MPFR; /* parity_stored_oracle_take */
}

/* After the pass: the per-document states' certificate, and each such
 * output's note (parity_docstate_note). */
static int docs_finish(sctx *c, gdn_error *e) {
  if (!c->docs.on) return GDN_OK;
  int rc = parity_stream_docstate_finish(&c->docs, e);
  for (size_t i = 0; i < c->outs.n && !rc; i++)
    if (c->outs.per_doc[i] && (c->outs.present[i] & PARITY_TENSOR_HT)) /* as the whole run: where it has states */
      rc = parity_docstate_note(c->docs.reset, c->docs.rows.B, c->docs.tier, c->docs.certified_bits, &c->outs.ext[i], e);
  return rc;
}

static int oracle_pass(sctx *c, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  parity_group_oracle go;
  parity_group_oracle_init(&go, &c->whole, c->sr->tier, c->sr->oracle_bits, c->sr->grads);
  go.vjp_only = c->stored;
  go.grads_stored = c->grads_stored;
  parity_stream_docstate_begin(&c->docs, docs_tier(c, &go), c->sr->oracle_bits);
  int rc = GDN_OK;
  for (int64_t g = 0; g < c->p->n_groups && !rc; g++) {
    char what[64];
    snprintf(what, sizeof what, "oracle, head group %" PRId64 " of %" PRId64, g + 1, c->p->n_groups);
    parity_progress_begin(o->progress, what);
    rc = oracle_visit(c, &go, g, e);
    parity_progress_end(o->progress);
  }
  for (int64_t g = 0; g < c->p->n_groups && !rc; g++) rc = oracle_share(c, &go, g, e);
  if (!rc) rc = parity_stream_merge_kappa(rc, c->kacc, o->n_chunks, e);
  if (!rc) rc = header_share(c, e);
  if (!rc) rc = parity_stream_outputs_share(&c->outs, rc, e); /* what they hold, their packing maxima */
  if (!rc && c->stored && !c->stored_checked) rc = parity_stored_oracle_merge(c->sr->fixture->stored, rc, e);
  if (!rc && c->outs.n) rc = parity_stream_outputs_record(&c->outs, &c->hdr, e); /* the packing verdict, merged */
  if (!rc) rc = docs_finish(c, e);
  if (!rc) rc = parity_group_oracle_finish(&go, &c->ref, e);
  parity_group_oracle_clear(&go);
  return rc;
}

/* After a pass that read the stored /oracle/grads: its spot check (rank
 * 0's, group 0) on every rank; passed, the stored certificate into the
 * reference; failed, the VJP computed by group after all (a second pass,
 * the forward still the stored one), as the whole check does. */
static int stored_grads_finish(sctx *c, parity_stored_oracle *so, int log, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  int rc = parity_dist_bcast(&c->grad_spot_rel, sizeof c->grad_spot_rel, 0, e);
  if (rc) return rc;
  if (c->grad_spot_rel <= PARITY_STORED_GRADS_SPOT) {
    parity_stored_grads_take(&so->attrs, &c->ref);
    c->ref.grad_spot_rel = c->grad_spot_rel;
    return GDN_OK;
  }
  char why[200];
  snprintf(why, sizeof why, "spot check: key head 0's VJP recomputed differs from it by %.3g, normwise",
           c->grad_spot_rel);
  if (log) {
    parity_progress_clear(o->progress);
    fprintf(o->log, "warning: the stored /oracle/grads is not trusted (%s); computing the oracle's VJP\n", why);
  }
  c->grads_stored = 0;
  c->stored_checked = 1; /* the forward's fields in c->ref stay the first pass's */
  spill_set_close(&c->refs);
  spill_set_init(&c->refs);
  memset(c->rh, 0, (size_t)c->p->n_groups * sizeof *c->rh);
  for (size_t ci = 0; ci < o->n_chunks; ci++) parity_kappa_acc_init(&c->kacc[ci]);
  rc = oracle_pass(c, e);
  c->stored_checked = 0;
  parity_stored_grads_note(c->ref.grad_note, sizeof c->ref.grad_note, why);
  return rc;
}

/* The oracle: a fixture's stored /oracle read by group when it may be
 * trusted, else (or when the groups show it may not) computed by group;
 * the reference's note and the warnings are the whole check's. */
static int phase_oracle(sctx *c, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  parity_stored_oracle *so = c->sr->fixture ? c->sr->fixture->stored : NULL;
  const int log = o->verbosity >= 1 && o->log && parity_dist_rank() == 0;
  if (so && so->present && !so->candidate && so->warning[0] && log) {
    parity_progress_clear(o->progress);
    fprintf(o->log, "%s: warning: %s\n", c->sr->path, so->warning);
  }
  c->stored = so && so->candidate;
  c->grads_stored = c->stored && c->sr->grads && c->sr->fixture->grads_usable;
  int rc = oracle_pass(c, e), trusted = 0;
  if (!rc && c->stored) {
    /* every rank: the findings were merged (oracle_pass), and each needs the reference's fields */
    parity_stored_oracle_finish(so, &c->whole, &c->ref, &trusted);
    rc = parity_dist_bcast(&trusted, sizeof trusted, 0, e);
  }
  if (!rc && c->stored && !trusted) { /* computed after all, every group read again */
    if (log) {
      parity_progress_clear(o->progress);
      fprintf(o->log, "%s: warning: %s\n", c->sr->path, so->warning);
    }
    c->stored = 0;
    c->grads_stored = 0; /* nor the gradients stored with it (parity_stored_grads.h) */
    spill_set_close(&c->refs);
    spill_set_init(&c->refs);
    memset(c->rh, 0, (size_t)c->p->n_groups * sizeof *c->rh);
    for (size_t ci = 0; ci < o->n_chunks; ci++) parity_kappa_acc_init(&c->kacc[ci]);
    rc = oracle_pass(c, e);
  }
  if (!rc && c->grads_stored) rc = stored_grads_finish(c, so, log, e);
  else if (!rc && c->ref.has_grads && c->sr->fixture) { /* why the stored gradients were not taken, if any */
    const parity_stream_fixture *f = c->sr->fixture;
    const char *why = f->grads_why && f->grads_why[0] ? f->grads_why : f->grads_usable ? PARITY_STORED_GRADS_NO_FORWARD : NULL;
    if (why) parity_stored_grads_note(c->ref.grad_note, sizeof c->ref.grad_note, why);
    if (why && !(f->grads_why && f->grads_why[0]) && log) /* the other reasons were said before the run */
      fprintf(o->log, "note: the stored /oracle/grads is not used (%s); computing the oracle's VJP\n", why);
  }
  if (!rc && so && so->note[0] && c->ref.tier != PARITY_ORACLE_NONE)
    snprintf(c->ref.note, sizeof c->ref.note, "%s", so->note);
  return rc;
}

/* --- 2: a chunk size's subjects, group by group -------------------------- */

static void chunk_cases(sctx *c, int64_t chunk) {
  const parity_sweep_opts *o = c->x.o;
  int64_t dev[PARITY_MAX_LIST];
  const size_t nd = parity_sweep_devices_for(o, &c->whole, chunk, dev);
  c->n_cases = 0;
  c->n_dev = nd;
  c->max_seams = 0;
  for (size_t di = 0; di < nd; di++)
    for (size_t pi = 0; pi < o->n_prefixes; pi++) {
      c->case_dev[c->n_cases] = dev[di];
      c->case_pre[c->n_cases] = o->prefixes[pi];
      c->case_secs[c->n_cases++] = 0;
      if ((size_t)dev[di] - 1 > c->max_seams) c->max_seams = (size_t)dev[di] - 1;
    }
}

/* A produced set as its owner found it: whether it was produced (else its
 * error), the tensors, their forms and dtypes, whether seam sums follow. */
typedef struct set_head {
  int rc;
  gdn_error err;
  unsigned present;
  int form[PARITY_T_N]; /* 1 float32, 2 binary64 */
  gdn_dtype out_dtype[PARITY_T_N];
  int has_seams;
} set_head;

/* Where group g's sums of case k's seam d go: in one process straight into
 * the run's (exact sums: the order of merging changes no bit), so no
 * accumulator is kept per group (64 KiB each); under mpirun one per group
 * until the exchange. */
static parity_rel_acc *group_seam(sctx *c, int64_t g, int64_t k, int64_t d) {
  if (parity_dist_size() == 1) return &c->seams[(size_t)k * c->max_seams + (size_t)d - 1];
  return &c->gseams[((size_t)g * c->n_cases + (size_t)k) * c->max_seams + (size_t)d - 1];
}

/* The owner's side: subject s's outputs of group g into its scratch set,
 * its head kept; case k >= 0: the group's seam sums too (one exact
 * accumulator per seam). */
static void set_keep(sctx *c, spill_set *set, const char *what, int64_t g, int64_t k, parity_subject_run *s,
                     set_head *hd) {
  hd->present = s->present;
  memcpy(hd->out_dtype, s->out_dtype, sizeof hd->out_dtype);
  hd->has_seams = s->has_seams;
  for (int t = 0; t < PARITY_T_N && !hd->rc; t++) {
    if (!(s->present & (1u << t))) continue;
    const parity_vals v = parity_tensor_get(&parity_tensors[t], s->out, s->grads);
    hd->form[t] = v.f ? 1 : 2;
    hd->rc = spill_set_write_one(c, set, what, g, t, v, &hd->err);
  }
  if (k < 0 || !s->has_seams) return;
  for (int64_t d = 1; d < c->case_dev[k]; d++) {
    parity_rel_acc *acc = group_seam(c, g, k, d);
    if (acc != &c->seams[(size_t)k * c->max_seams + (size_t)d - 1]) parity_rel_acc_init(acc);
    parity_sweep_seam_sums(acc, &s->seams, &c->in.shape, d);
  }
}

/* The exchange of one set of group g's head (k: its case, -1 the scan):
 * every rank learns its presence, forms and error; rank 0 merges the seam
 * sums. */
static int set_share(sctx *c, spill_set *set, int64_t g, int64_t k, const set_head *mine, gdn_error *e) {
  const int owner = owner_of(g), me = parity_dist_rank();
  set_head hd = *mine;
  int rc = parity_dist_bcast(&hd, sizeof hd, owner, e);
  if (!rc && hd.rc) *e = hd.err, rc = hd.rc;
  set->present = hd.present; /* its tensors stay in the owner's scratch: the owner measures them */
  memcpy(set->out_dtype, hd.out_dtype, sizeof hd.out_dtype);
  set->has_seams = hd.has_seams;
  for (int64_t d = 1; !rc && k >= 0 && hd.has_seams && d < c->case_dev[k]; d++) {
    parity_rel_acc *acc = group_seam(c, g, k, d);
    if (acc == &c->seams[(size_t)k * c->max_seams + (size_t)d - 1]) continue; /* merged as kept */
    if (owner != 0) rc = parity_dist_bcast(acc, sizeof *acc, owner, e);
    if (!rc && me == 0) parity_rel_acc_merge(&c->seams[(size_t)k * c->max_seams + (size_t)d - 1], acc);
  }
  return rc;
}

/* The owner's side: group g's error model (parity_kappa_model.h, for the
 * group's heads; the whole run's chunk_model) into its scratch set. */
static void model_keep(sctx *c, int64_t g) {
  input_ctx *x = &c->x;
  set_head *hd = &c->mh[g];
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  parity_model pm;
  parity_model_init(&pm);
  int64_t dev[PARITY_MAX_LIST];
  const size_t nd = parity_sweep_model_devices(x->o, &c->whole, x->cfg.chunk, dev);
  hd->rc = parity_model_compute_layouts(&pm, &c->in, c->sr->grads ? &c->ct : NULL, x->cfg.chunk, 0x1p-24, &x->cfg,
                                        k0 * c->r, dev, nd, &hd->err);
  parity_subject_run fake;
  memset(&fake, 0, sizeof fake);
  gdn_outputs o;
  gdn_grads gr;
  gdn_outputs_init(&o);
  gdn_grads_init(&gr);
  o.shape = gr.shape = gs;
  o.o = pm.s[PARITY_T_O], o.ht = pm.s[PARITY_T_HT];
  gr.dq = pm.s[PARITY_T_DQ], gr.dk = pm.s[PARITY_T_DK], gr.dv = pm.s[PARITY_T_DV];
  gr.dg = pm.s[PARITY_T_DG], gr.dbeta = pm.s[PARITY_T_DBETA], gr.dh0 = pm.s[PARITY_T_DH0];
  fake.out = &o;
  fake.grads = &gr;
  for (int t = 0; t < PARITY_T_N; t++)
    if (pm.s[t]) fake.present |= 1u << t, fake.out_dtype[t] = GDN_DTYPE_F64;
  if (!hd->rc) set_keep(c, &c->model, "model", g, -1, &fake, hd);
  parity_model_clear(&pm); /* o and gr borrowed its tensors */
  if (!hd->rc) hd->rc = parity_stream_docstate_model(&c->docs, g, &c->in, k0, x->cfg.chunk, &x->cfg, &hd->err);
}

/* The exchange of group g's model set's head (model_keep). */
static int model_share(sctx *c, int64_t g, gdn_error *e) {
  set_head hd = c->mh[g];
  int rc = parity_dist_bcast(&hd, sizeof hd, owner_of(g), e);
  if (!rc && hd.rc) *e = hd.err, rc = hd.rc;
  c->model.present = hd.present; /* its tensors stay in the owner's scratch */
  return rc;
}

/* Testing (GDN_TEST_MPI_DIE=R:stream-plant, R > 0): one error planted in
 * the first case's candidate o, at the group's first value head, token
 * T / 2, on rank R alone: measured only there, so the verdict and the
 * named head show that rank's measurement reached the document. */
static void plant_error(parity_subject_run *s) {
  gdn_outputs *o = (gdn_outputs *)s->out; /* the producer's own outputs */
  const size_t at = (size_t)((o->shape.T / 2) * o->shape.Hv * o->shape.Dv);
  if (o->o) o->o[at] += 1.0;
  else if (o->o32) o->o32[at] += 1.0f;
}

/* --backend mpi's row runs on every rank at once: its devices are the
 * ranks (gdn_mpi_affine_prefix). */
static int collective(const parity_subject_run *s) { return parity_subject_mpi && s->m == parity_subject_mpi; }

/* Whether mutant m reads key heads across this run's head groups
 * (gqa-tile with grouped heads and more than one group): its rows are
 * produced on the group's tile view (parity_stream_tile.h). */
static int tiled(const sctx *c, kern_mutant m) {
  return m != KERN_MUTANT_NONE && (kern_mutant_row_of(m)->needs & KERN_MUTANT_NEEDS_GQA) && c->p->n_groups > 1 &&
         c->whole.Hk < c->whole.Hv;
}

/* The inputs subject s (the candidate, under the planted mutant, or an
 * extra row) is produced on: the group's, or its tile view, made once per
 * group when first needed. */
static const gdn_inputs *subject_inputs(sctx *c, const parity_subject_run *s, int64_t g, parity_stream_tile *tile,
                                        set_head *h) {
  const kern_mutant m = s == &c->x.subj[c->x.candidate] ? c->x.cfg.mutant : parity_subject_mutant_of(s->m);
  if (!tiled(c, m)) return &c->in;
  int64_t k0, k1;
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  if (!tile->view.q && (h->rc = parity_stream_tile_make(tile, &c->in, &c->whole, k0, &c->sr->src, &h->err)))
    return NULL;
  return &tile->view;
}

/* The owner's side: group g's scan and every case's candidate into its
 * scratch (a failure is kept in the set's head and ends the group). */
static void produce_group(sctx *c, int64_t g) {
  input_ctx *x = &c->x;
  parity_subject_run *bs = &x->subj[x->baseline], *cs = &x->subj[x->candidate];
  set_head *hd = &c->sh[g * (int64_t)(1 + c->n_cases)];
  const int wrong = parity_dist_rank() != 0 && parity_dist_test_fault("stream-deal"); /* testing */
  parity_sweep_scan_config(x);
  parity_produce_ctx cx = {&c->in, &x->cfg, 0, c->sr->grads ? &c->ct : NULL, NULL}, tx;
  parity_stream_tile tile;
  parity_stream_tile_init(&tile);
  double t0 = gdn_clock_seconds();
  if ((hd->rc = load_group(c, wrong ? (g + 1) % c->p->n_groups : g, &hd->err)) ||
      (hd->rc = parity_subject_produce(bs, &cx, &hd->err)))
    return;
  x->d->t_kernels += gdn_clock_seconds() - t0;
  set_keep(c, &c->base, "scan", g, -1, bs, hd);
  if (!hd->rc && c->want_model) model_keep(c, g);
  for (size_t k = 0; k < c->n_cases && !hd->rc; k++) {
    set_head *hk = &hd[1 + k];
    x->cfg.devices = c->case_dev[k];
    x->cfg.prefix = c->case_pre[k];
    cx.want_seams = parity_sweep_want_seams(&c->whole, c->case_dev[k]);
    t0 = gdn_clock_seconds();
    tx = cx;
    if ((tx.in = subject_inputs(c, cs, g, &tile, hk))) hk->rc = parity_subject_produce(cs, &tx, &hk->err);
    if (!hk->rc && !k && parity_dist_rank() && parity_dist_test_fault("stream-plant")) plant_error(cs); /* testing */
    c->case_secs[k] += gdn_clock_seconds() - t0;
    char what[48];
    snprintf(what, sizeof what, "case %zu", k);
    if (!hk->rc) set_keep(c, &c->cases[k], what, g, (int64_t)k, cs, hk);
    if (hk->rc) *hd = *hk; /* the group's error, seen at its first set */
    parity_subject_park(cs);
    for (size_t j = 0; j < c->n_extra && !hd->rc; j++) {
      const size_t i = k * c->n_extra + j;
      set_head *hx = &c->xsh[(size_t)g * c->n_cases * c->n_extra + i];
      parity_subject_run *xs = &x->subj[2 + j];
      if (collective(xs)) continue; /* every rank's at once, group by group: produce_collective */
      t0 = gdn_clock_seconds();
      tx = cx;
      if ((tx.in = subject_inputs(c, xs, g, &tile, hx))) hx->rc = parity_subject_produce(xs, &tx, &hx->err);
      c->case_secs[k] += gdn_clock_seconds() - t0;
      snprintf(what, sizeof what, "case %zu %s", k, xs->name);
      if (!hx->rc) set_keep(c, &c->xsets[i], what, g, -1, xs, hx);
      if (hx->rc) *hd = *hx;
      parity_subject_release(xs); /* one extra set held at a time, as the whole run's run_stage */
    }
  }
  parity_stream_tile_clear(&tile);
  parity_subject_park(bs);
}

/* The collective rows, group after group on every rank together (after
 * each rank's own sets): each case's run gathers the group's o on rank 0
 * (ht is every rank's), which sends it on to the group's owner; the owner
 * keeps the set in its scratch as it keeps the others, its head exchanged
 * with theirs.  An error is kept in the owner's head (every rank meets the
 * same inputs and the same checks). */
static void produce_collective(sctx *c) {
  input_ctx *x = &c->x;
  for (size_t j = 0; j < c->n_extra; j++) {
    parity_subject_run *xs = &x->subj[2 + j];
    if (!collective(xs)) continue;
    for (int64_t g = 0; g < c->p->n_groups; g++) {
      set_head mine = {0};
      mine.rc = load_group(c, g, &mine.err);
      parity_sweep_scan_config(x);
      const parity_produce_ctx cx = {&c->in, &x->cfg, 0, NULL, NULL};
      for (size_t k = 0; k < c->n_cases; k++) {
        set_head *hx = &c->xsh[(size_t)g * c->n_cases * c->n_extra + k * c->n_extra + j];
        x->cfg.devices = c->case_dev[k];
        x->cfg.prefix = c->case_pre[k];
        const double t0 = gdn_clock_seconds();
        if (!mine.rc) mine.rc = parity_subject_produce(xs, &cx, &mine.err);
        gdn_outputs *out = mine.rc ? NULL : (gdn_outputs *)xs->out;
        if (out && owner_of(g) != 0) /* rank 0's gathered o to the owner (the others' copies unused) */
          mine.rc = parity_dist_bcast(out->o, gdn_shape_numel_v(&out->shape) * sizeof *out->o, 0, &mine.err);
        c->case_secs[k] += gdn_clock_seconds() - t0;
        if (owner_of(g) == parity_dist_rank()) {
          char what[64];
          snprintf(what, sizeof what, "case %zu %s", k, xs->name);
          *hx = mine;
          if (!hx->rc) set_keep(c, &c->xsets[k * c->n_extra + j], what, g, -1, xs, hx);
        }
        parity_subject_release(xs);
      }
    }
  }
}

static int phase_produce(sctx *c, int64_t chunk, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  const size_t per = 1 + c->n_cases;
  c->sh = gdn_calloc((size_t)c->p->n_groups * per, sizeof *c->sh, "produced sets", e);
  const size_t ng = parity_dist_size() == 1 ? 0 : (size_t)c->p->n_groups; /* group_seam */
  c->gseams = c->sh ? gdn_calloc(ng * c->n_cases * c->max_seams + 1, sizeof *c->gseams, "group seam sums", e)
                    : NULL;
  c->mh = c->gseams ? gdn_calloc((size_t)c->p->n_groups, sizeof *c->mh, "model sets", e) : NULL;
  c->xsh = c->mh ? gdn_calloc((size_t)c->p->n_groups * (c->n_cases * c->n_extra > 0 ? c->n_cases * c->n_extra : 1),
                              sizeof *c->xsh, "extra rows' sets", e)
                 : NULL;
  if (!c->xsh) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t g = parity_dist_rank(); g < c->p->n_groups; g += parity_dist_size()) {
    char what[80];
    snprintf(what, sizeof what, "C%" PRId64 ", head group %" PRId64 " of %" PRId64, chunk, g + 1, c->p->n_groups);
    parity_progress_begin(o->progress, what);
    produce_group(c, g);
    parity_progress_end(o->progress);
    if (c->sh[(size_t)g * per].rc) break; /* its error is told in the exchange */
  }
  produce_collective(c);
  gdn_inputs_clear(&c->in);
  gdn_cotangents_clear(&c->ct);
  parity_subject_release(&c->x.subj[c->x.baseline]); /* the measurements read scratch */
  parity_subject_release(&c->x.subj[c->x.candidate]);
  for (size_t j = 0; j < c->n_extra; j++) parity_subject_release(&c->x.subj[2 + j]);
  int rc = GDN_OK;
  for (int64_t g = 0; g < c->p->n_groups && !rc; g++) {
    rc = set_share(c, &c->base, g, -1, &c->sh[(size_t)g * (1 + c->n_cases)], e);
    if (!rc && c->want_model) rc = model_share(c, g, e);
    for (size_t k = 0; k < c->n_cases && !rc; k++)
      rc = set_share(c, &c->cases[k], g, (int64_t)k, &c->sh[(size_t)g * (1 + c->n_cases) + 1 + k], e);
    for (size_t i = 0; i < c->n_cases * c->n_extra && !rc; i++) /* no seam sums: -1 */
      rc = set_share(c, &c->xsets[i], g, -1, &c->xsh[(size_t)g * c->n_cases * c->n_extra + i], e);
  }
  return rc;
}

/* --- 3: measure, judge, record ------------------------------------------ */

static void max_into(double *acc, const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] > acc[i]) acc[i] = v[i];
}

/* The o profiles of the reference and the scan (run_chunk's), over groups. */
static int chunk_profiles(sctx *c, gdn_error *e) {
  input_ctx *x = &c->x;
  double *tmp = gdn_calloc((size_t)x->n_blocks, sizeof *tmp, "profile", e);
  int rc = tmp ? GDN_OK : (e ? e->code : GDN_ERR_NOMEM);
  const double t0 = gdn_clock_seconds();
  for (int64_t g = 0; g < c->p->n_groups && !rc && x->ref; g++) {
    if (!parity_stream_holds(g)) continue;
    parity_vals ro, bo;
    int64_t k0, k1, od[4];
    gdn_shape gs;
    group_of(c, g, &k0, &k1, &gs);
    parity_tensors[PARITY_T_O].dims(&gs, od);
    if ((rc = parity_spill_tensor_read(&c->refs.t[PARITY_T_O], g, c->br, &ro, e)) ||
        (rc = parity_spill_tensor_read(&c->base.t[PARITY_T_O], g, c->bb, &bo, e)))
      break;
    parity_profile_o_v(ro, parity_vals_f64(NULL), od, x->block, tmp);
    max_into(x->prof_ref, tmp, x->n_blocks);
    parity_profile_o_v(bo, ro, od, x->block, tmp);
    max_into(x->prof_base, tmp, x->n_blocks);
  }
  c->meas_secs += gdn_clock_seconds() - t0;
  gdn_free(tmp);
  if (x->ref && (rc = parity_dist_max_f64(rc, x->prof_ref, (size_t)x->n_blocks, e))) return rc;
  return x->ref ? parity_dist_max_f64(rc, x->prof_base, (size_t)x->n_blocks, e) : rc;
}

/* What a case measures beyond the metrics, over one group: the seams' o
 * errors, the profiles, the upstream figures, the gradients' profiles and
 * the block map's rows. */
typedef struct case_acc {
  parity_case_result *r;
  double fig[PARITY_UPSTREAM_AC][PARITY_T_N];
  unsigned fig_mask;
  int map; /* the block map is the candidate's */
  double *tmp;
} case_acc;

static int case_group_o(sctx *c, size_t k, int64_t g, case_acc *a, gdn_error *e) {
  input_ctx *x = &c->x;
  parity_case_result *r = a->r;
  int64_t k0, k1, od[4];
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  parity_tensors[PARITY_T_O].dims(&gs, od);
  parity_vals xo, bo, ro = parity_vals_f64(NULL);
  int rc = parity_spill_tensor_read(&c->cases[k].t[PARITY_T_O], g, c->bx, &xo, e);
  if (!rc) rc = parity_spill_tensor_read(&c->base.t[PARITY_T_O], g, c->bb, &bo, e);
  if (!rc && x->ref) rc = parity_spill_tensor_read(&c->refs.t[PARITY_T_O], g, c->br, &ro, e);
  if (rc) return rc;
  for (size_t s = 0; s < r->n_seams; s++) {
    parity_seam_result *sm = &r->seams[s];
    const int64_t t1 = parity_sweep_seam_place(r, sm, sm->device);
    double v = parity_max_abs_rows_v(xo, bo, od, sm->t, t1);
    if (v > sm->cand_vs_base) sm->cand_vs_base = v;
    if (!x->ref) continue;
    if ((v = parity_max_abs_rows_v(bo, ro, od, sm->t, t1)) > sm->baseline) sm->baseline = v;
    if ((v = parity_max_abs_rows_v(xo, ro, od, sm->t, t1)) > sm->candidate) sm->candidate = v;
  }
  parity_profile_o_v(xo, bo, od, x->block, a->tmp);
  max_into(r->profile.cand_vs_base, a->tmp, r->profile.n);
  if (x->ref) {
    parity_profile_o_v(xo, ro, od, x->block, a->tmp);
    max_into(r->profile.candidate, a->tmp, r->profile.n);
  }
  if (!a->map) return GDN_OK;
  const int64_t bins = r->block_map.bins, per = r->block_map.tokens_per_bin / x->cfg.chunk;
  double *rows = gdn_calloc((size_t)(od[2] * bins), sizeof *rows, "block map rows", e);
  if (!rows) return e ? e->code : GDN_ERR_NOMEM;
  rc = parity_block_map_o_v(xo, ro, od, x->cfg.chunk, x->meas[x->candidate].vs_ref[PARITY_T_O].rel_floor, per, rows, e);
  if (!rc) memcpy(r->block_map.values + k0 * c->r * bins, rows, (size_t)(od[2] * bins) * sizeof *rows);
  gdn_free(rows);
  return rc;
}

/* Tensor t of group g: the upstream figures (candidate against the scan)
 * and, for a gradient with a token axis, its profiles. */
static int case_group_tensor(sctx *c, size_t k, int64_t g, int t, case_acc *a, gdn_error *e) {
  input_ctx *x = &c->x;
  parity_case_result *r = a->r;
  const parity_tensor *pt = &parity_tensors[t];
  const int want_fig = (a->fig_mask >> t) & 1, want_prof = (r->grad_profile.mask >> t) & 1;
  if (!want_fig && !want_prof) return GDN_OK;
  int64_t k0, k1, d[4];
  gdn_shape gs;
  group_of(c, g, &k0, &k1, &gs);
  pt->dims(&gs, d);
  parity_vals xv, bv, rv;
  int rc = parity_spill_tensor_read(&c->cases[k].t[t], g, c->bx, &xv, e);
  if (!rc) rc = parity_spill_tensor_read(&c->base.t[t], g, c->bb, &bv, e);
  if (rc) return rc;
  if (want_fig) {
    parity_vals xs[PARITY_T_N] = {{0}}, bs[PARITY_T_N] = {{0}};
    size_t ns[PARITY_T_N] = {0};
    xs[t] = xv, bs[t] = bv, ns[t] = (size_t)(d[0] * d[1] * d[2] * d[3]);
    double fig[PARITY_UPSTREAM_AC][PARITY_T_N];
    parity_upstream_figures(xs, bs, ns, 1u << t, fig);
    for (int i = 0; i < PARITY_UPSTREAM_AC; i++)
      if (fig[i][t] > a->fig[i][t]) a->fig[i][t] = fig[i][t];
  }
  if (!want_prof) return GDN_OK;
  if ((rc = parity_spill_tensor_read(&c->refs.t[t], g, c->br, &rv, e))) return rc;
  const int64_t n = r->grad_profile.n;
  parity_profile_o_v(rv, parity_vals_f64(NULL), d, x->block, a->tmp);
  max_into(r->grad_profile.ref_max_abs[t], a->tmp, n);
  parity_profile_o_v(bv, rv, d, x->block, a->tmp);
  max_into(r->grad_profile.baseline[t], a->tmp, n);
  parity_profile_o_v(xv, rv, d, x->block, a->tmp);
  max_into(r->grad_profile.candidate[t], a->tmp, n);
  return GDN_OK;
}

/* The block map's size and subject, as case_block_map (parity_sweep.c)
 * chooses them: the candidate, its o measured against the reference. */
static int case_map_alloc(sctx *c, parity_case_result *r, gdn_error *e) {
  input_ctx *x = &c->x;
  if (!x->ref || !(x->meas[x->candidate].has_vs_ref & (1u << PARITY_T_O))) return 0;
  if (parity_stream_map_subject(x, r) != x->candidate) return 0; /* an output's (parity_stream_subject.h) */
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(&c->whole, od);
  const int64_t C = x->cfg.chunk, nblk = (od[1] + C - 1) / C, per = (nblk + 255) / 256;
  r->block_map.heads = od[2];
  r->block_map.bins = (nblk + per - 1) / per;
  r->block_map.tokens_per_bin = per * C;
  r->block_map.values = gdn_calloc((size_t)(od[2] * r->block_map.bins), sizeof(double), "block map", e);
  if (!r->block_map.values) return -1;
  r->block_map.subject = x->meas[x->candidate].name;
  return 1;
}

static int case_grad_mask(const sctx *c, size_t k) {
  if (!c->x.ref || !c->ref.has_grads || !(c->base.present & PARITY_TENSOR_GRADS) ||
      !(c->cases[k].present & PARITY_TENSOR_GRADS))
    return 0;
  unsigned mask = 0;
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad && !strcmp(parity_tensors[t].index_names[1], "t")) mask |= 1u << t;
  return (int)mask;
}

/* Everything case_measure, case_seams, case_block_map and
 * case_grad_profile (parity_sweep.c) find, from scratch a group at a time. */
static int case_measure_groups(sctx *c, size_t k, parity_case_result *r, gdn_error *e) {
  input_ctx *x = &c->x;
  const parity_subject_result *cm = &x->meas[x->candidate];
  case_acc a = {r, {{0}}, cm->has_vs_scan, 0, NULL};
  for (size_t s = 0; s < r->n_seams; s++) {
    parity_seam_result *sm = &r->seams[s];
    parity_sweep_seam_place(r, sm, (int64_t)s + 1);
    if ((sm->has_state = c->cases[k].has_seams))
      sm->state_rel = parity_rel_acc_value(&c->seams[k * c->max_seams + s]);
  }
  r->profile.block = x->block;
  memcpy(r->profile.ref_max_abs, x->prof_ref, (size_t)r->profile.n * sizeof(double));
  memcpy(r->profile.baseline, x->prof_base, (size_t)r->profile.n * sizeof(double));
  int rc = 0;
  const int gm = case_grad_mask(c, k);
  if (gm && (rc = parity_case_result_alloc_grads(r, (unsigned)gm, e))) return rc;
  if ((a.map = case_map_alloc(c, r, e)) < 0) return e ? e->code : GDN_ERR_NOMEM;
  if (!(a.tmp = gdn_calloc((size_t)x->n_blocks, sizeof *a.tmp, "profile", e))) return e ? e->code : GDN_ERR_NOMEM;
  const double t0 = gdn_clock_seconds();
  for (int64_t g = 0; g < c->p->n_groups && !rc; g++) {
    if (!parity_stream_holds(g)) continue; /* each rank its own groups, merged below */
    rc = case_group_o(c, k, g, &a, e);
    for (int t = 0; t < PARITY_T_N && !rc; t++) rc = case_group_tensor(c, k, g, t, &a, e);
  }
  c->meas_secs += gdn_clock_seconds() - t0;
  gdn_free(a.tmp);
  if ((rc = parity_stream_merge_case(rc, r, &a.fig[0][0], sizeof a.fig / sizeof a.fig[0][0], e))) return rc;
  double rf[PARITY_T_N];
  for (int t = 0; t < PARITY_T_N; t++) rf[t] = cm->vs_scan[t].rel_fro;
  parity_upstream_judge(a.fig, rf, cm->has_vs_scan, r->upstream);
  return GDN_OK;
}

static int run_case_k(sctx *c, size_t k, gdn_error *e) {
  input_ctx *x = &c->x;
  x->cfg.devices = c->case_dev[k];
  x->cfg.prefix = c->case_pre[k];
  parity_case_result r;
  parity_case_result_init(&r);
  int rc = parity_case_result_alloc(&r, x->cfg.devices, x->n_subj, x->n_blocks, e);
  x->meas[x->candidate] = c->meas_case[k];
  for (size_t j = 0; j < c->n_extra; j++) x->meas[2 + j] = c->meas_x[k * c->n_extra + j];
  if (!rc) {
    r.seconds = c->case_secs[k];
    x->d->t_kernels += r.seconds;
    parity_sweep_case_describe(x, &r);
    memcpy(r.subjects, x->meas, x->n_subj * sizeof *r.subjects);
    parity_sweep_case_scope(x, &r);
    rc = case_measure_groups(c, k, &r, e);
    if (!rc) rc = parity_stream_subject_measure(&c->outs, x, &r, c->refs.t, c->base.t, c->base.present, e);
  }
  if (parity_dist_rank() != 0) { /* rank 0 judges and records */
    parity_case_result_clear(&r);
    return rc;
  }
  if (!rc) rc = parity_sweep_case_judge(x, &r, e);
  if (!rc) rc = parity_doc_add_case(x->d, &r, x->o->reproducible, e);
  if (!rc && x->o->verbosity >= 1 && x->o->log) parity_progress_clear(x->o->progress);
  if (!rc && x->o->verbosity >= 1 && x->o->log) parity_log_case(x->o->log, &r, x->o->verbosity);
  parity_case_result_clear(&r);
  return rc;
}

static void chunk_clear(sctx *c) {
  input_ctx *x = &c->x;
  gdn_free(x->prof_ref);
  gdn_free(x->prof_base);
  x->prof_ref = x->prof_base = NULL;
  spill_set_close(&c->base);
  spill_set_close(&c->model);
  gdn_free(c->mh);
  c->mh = NULL;
  for (size_t k = 0; k < c->n_cases && c->cases; k++) spill_set_close(&c->cases[k]);
  for (size_t i = 0; i < c->n_cases * c->n_extra && c->xsets; i++) spill_set_close(&c->xsets[i]);
  gdn_free(c->xsets);
  gdn_free(c->xsh);
  gdn_free(c->meas_x);
  c->xsets = NULL;
  c->xsh = NULL;
  c->meas_x = NULL;
  gdn_free(c->cases);
  gdn_free(c->seams);
  gdn_free(c->sh);
  gdn_free(c->gseams);
  gdn_free(c->meas_case);
  c->meas_case = NULL;
  c->cases = NULL;
  c->seams = NULL;
  c->sh = NULL;
  c->gseams = NULL;
}

static int run_chunk_streamed(sctx *c, size_t ci, gdn_error *e) {
  input_ctx *x = &c->x;
  const parity_sweep_opts *o = x->o;
  const int64_t chunk = o->chunks[ci];
  int rc = parity_sweep_chunk_begin(x, &c->whole, chunk, e);
  if (rc) return rc;
  chunk_cases(c, chunk);
  spill_set_init(&c->base);
  spill_set_init(&c->model);
  /* chunk_model's condition, the same on every rank (only rank 0 holds the reference) */
  c->want_model = c->sr->tier != PARITY_ORACLE_NONE && o->dtype != GDN_DTYPE_F64 && parity_policy_uses_model(o->policy);
  c->docs.model_on = c->docs.on && c->want_model;
  c->cases = gdn_calloc(c->n_cases ? c->n_cases : 1, sizeof *c->cases, "case scratch", e);
  c->seams = c->cases ? gdn_calloc(c->n_cases * (c->max_seams ? c->max_seams : 1), sizeof *c->seams, "seam sums", e)
                      : NULL;
  const size_t nx = c->n_cases * c->n_extra > 0 ? c->n_cases * c->n_extra : 1;
  c->xsets = c->seams ? gdn_calloc(nx, sizeof *c->xsets, "extra rows' scratch", e) : NULL;
  c->meas_x = c->xsets ? gdn_calloc(nx, sizeof *c->meas_x, "extra rows' metrics", e) : NULL;
  if (!c->meas_x) return e ? e->code : GDN_ERR_NOMEM;
  for (size_t i = 0; i < nx; i++) spill_set_init(&c->xsets[i]);
  for (size_t k = 0; k < c->n_cases; k++) spill_set_init(&c->cases[k]);
  for (size_t i = 0; i < c->n_cases * c->max_seams; i++) parity_rel_acc_init(&c->seams[i]);
  rc = phase_produce(c, chunk, e);
  if (rc) return rc; /* every rank measures its groups; rank 0 merges, judges and records */
  char what[64];
  snprintf(what, sizeof what, "C%" PRId64 ": measuring", chunk);
  parity_progress_begin(o->progress, what);
  c->meas_case = gdn_calloc(c->n_cases ? c->n_cases : 1, sizeof *c->meas_case, "case metrics", e);
  if (!c->meas_case) rc = e ? e->code : GDN_ERR_NOMEM;
  if (!rc) rc = chunk_metrics(c, e);
  if (!rc)
    rc = parity_stream_outputs_measure(&c->outs, x, c->refs.t, c->refs.present, c->model.t,
                                       c->want_model ? c->model.present : 0, chunk, e);
  if (!rc) x->meas[x->baseline] = c->meas_base;
  if (!rc) rc = chunk_profiles(c, e);
  parity_progress_end(o->progress);
  if (rc) return rc;
  const parity_kappa kap = parity_kappa_acc_value(&c->kacc[ci]);
  x->kappa = &kap;
  const int log = o->verbosity >= 1 && o->log && parity_dist_rank() == 0;
  if (log) parity_progress_clear(o->progress);
  if (log)
    parity_log_chunk(o->log, chunk, x->n_chunks, o->shard == KERN_SHARD_TOKENS ? c->whole.T : 0,
                     c->n_dev < o->n_devices, x->ref != NULL);
  for (size_t k = 0; k < c->n_cases && !rc; k++) {
    snprintf(what, sizeof what, "C%" PRId64 " D%" PRId64 " %s", chunk, c->case_dev[k], kern_prefix_name(c->case_pre[k]));
    parity_progress_begin(o->progress, what);
    rc = run_case_k(c, k, e);
    parity_progress_end(o->progress);
  }
  x->kappa = NULL;
  return rc;
}

/* --- the run ------------------------------------------------------------- */

void parity_sweep_stream_refusal(const gdn_inputs *g, const parity_sweep_opts *o, char *why, size_t n) {
  (void)g; /* packed documents and the bfloat16 prelude stream (per group: parity_stream_seg.h, gdn_synth.h) */
  why[0] = '\0';
  for (size_t j = 0; j < o->n_extra && !why[0]; j++)
    if (o->extra[j]->stage != PARITY_STAGE_CASE)
      snprintf(why, n, "extra subject row %s is produced once per %s, and a streamed run keeps extra rows per case "
               "only", o->extra[j]->name, o->extra[j]->stage == PARITY_STAGE_CHUNK ? "chunk size" : "input");
}

/* A set's bytes as binary64 (its float32 tensors take half: an upper
 * bound), the tensors `mask` holds. */
static double set_bytes(const gdn_shape *s, unsigned mask) {
  double b = 0;
  for (int t = 0; t < PARITY_T_N; t++)
    if (mask & (1u << t)) b += 8.0 * (double)parity_tensor_numel(&parity_tensors[t], s);
  return b;
}

double parity_sweep_stream_scratch_bytes(const parity_stream_plan *p, const parity_sweep_opts *o, int grads) {
  const gdn_shape *s = &p->whole;
  const double set = set_bytes(s, PARITY_TENSOR_FORWARD | (grads ? PARITY_TENSOR_GRADS : 0));
  size_t most = 0; /* the most cases of one chunk size: their sets are kept together */
  for (size_t ci = 0; ci < o->n_chunks; ci++) {
    int64_t dev[PARITY_MAX_LIST];
    const size_t n = parity_sweep_devices_for(o, s, o->chunks[ci], dev) * o->n_prefixes;
    if (n > most) most = n;
  }
  return set * (double)(2 + most * (1 + o->n_extra)); /* the reference, the scan, the cases and their extra rows */
}

int64_t parity_sweep_stream_steps(const parity_stream_plan *p, const parity_sweep_opts *o) {
  return p->n_groups * (1 + (int64_t)o->n_chunks) + parity_sweep_steps(o, &p->whole);
}

static int ctx_init(sctx *c, parity_doc *d, const parity_stream_run *sr, const parity_sweep_opts *o, gdn_error *e) {
  memset(c, 0, sizeof *c);
  c->sr = sr;
  c->p = sr->plan;
  c->whole = sr->plan->whole;
  c->r = c->whole.Hv / c->whole.Hk;
  gdn_inputs_init(&c->in);
  gdn_cotangents_init(&c->ct);
  parity_reference_init(&c->ref);
  spill_set_init(&c->refs);
  spill_set_init(&c->base);
  spill_set_init(&c->model);
  parity_stream_docstate_init(&c->docs);
  input_ctx *x = &c->x;
  parity_sweep_ctx_init(x, d, o);
  const parity_stream_fixture *fx = sr->fixture;
  const size_t n_ext = fx ? fx->n_ext : 0;
  int rc = parity_sweep_ctx_subjects(x, fx ? fx->ext : NULL, n_ext, e);
  if (rc) return rc;
  c->n_extra = o->n_extra;
  if (n_ext && o->n_extra) /* the extra rows' sets are indexed after the candidate */
    return gdn_error_set(e, GDN_ERR_INPUT, "a run streamed by head group judges a fixture's outputs or extra "
                         "subject rows (a mutant), not both; run it whole (a larger --max-bytes)");
  if (x->n_subj != 2 + n_ext + o->n_extra || (!n_ext && (x->baseline != 0 || x->candidate != 1)))
    return gdn_error_set(e, GDN_ERR_INTERNAL, "a streamed run needs the scan, the candidate and the extra rows only "
                         "(%zu subjects)", x->n_subj);
  int docs = 0; /* an output of per-document final states (parity_stream_docstate.h) */
  for (size_t i = 0; i < n_ext; i++) docs |= parity_docstate_declared(&fx->ext[i]) && fx->ext[i].docs_ht;
  if (docs && !fx->seg_in)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "per-document final states streamed without the segment ids");
  if ((rc = parity_stream_docstate_open(&c->docs, docs, fx ? fx->seg_in : NULL, c->p, e))) return rc;
  size_t most = c->docs.most;
  for (int t = 0; t < PARITY_T_N; t++) {
    if (!(c->counts[t] = gdn_calloc((size_t)c->p->n_groups, sizeof(int64_t), "group sizes", e)))
      return e ? e->code : GDN_ERR_NOMEM;
    for (int64_t g = 0; g < c->p->n_groups; g++) {
      int64_t k0, k1;
      gdn_shape gs;
      group_of(c, g, &k0, &k1, &gs);
      c->counts[t][g] = parity_tensor_numel(&parity_tensors[t], &gs);
      if ((size_t)c->counts[t][g] > most) most = (size_t)c->counts[t][g];
    }
  }
  c->bx = gdn_malloc(most * sizeof(double), "scratch read buffer", e);
  c->br = c->bx ? gdn_malloc(most * sizeof(double), "scratch read buffer", e) : NULL;
  c->bb = c->br ? gdn_malloc(most * sizeof(double), "scratch read buffer", e) : NULL;
  c->bm = c->bb ? gdn_malloc(most * sizeof(double), "scratch read buffer", e) : NULL;
  c->kacc = c->bm ? gdn_calloc(o->n_chunks ? o->n_chunks : 1, sizeof *c->kacc, "kappa sums", e) : NULL;
  c->rh = c->kacc ? gdn_calloc((size_t)c->p->n_groups, sizeof *c->rh, "group oracle heads", e) : NULL;
  c->gt = c->rh ? gdn_calloc((size_t)c->p->n_groups, sizeof *c->gt, "group tallies", e) : NULL;
  if (!c->gt) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t g = 0; g < c->p->n_groups; g++) parity_group_tally_init(&c->gt[g]);
  double *const bufs[3] = {c->bx, c->br, c->bb};
  if (n_ext && (rc = parity_stream_outputs_open(&c->outs, fx->ext, n_ext, 2, c->p, sr->grads, c->counts, bufs, e)))
    return rc;
  c->outs.index = fx ? fx->index : NULL;
  c->outs.docs = &c->docs;
  for (size_t ci = 0; ci < o->n_chunks; ci++) parity_kappa_acc_init(&c->kacc[ci]);
  return GDN_OK;
}

static void ctx_free(sctx *c) {
  chunk_clear(c);
  parity_stream_outputs_clear(&c->outs);
  parity_stream_docstate_clear(&c->docs);
  spill_set_close(&c->refs);
  for (int t = 0; t < PARITY_T_N; t++) gdn_free(c->counts[t]);
  gdn_free(c->bx);
  gdn_free(c->br);
  gdn_free(c->bb);
  gdn_free(c->bm);
  gdn_free(c->kacc);
  for (int64_t g = 0; c->gt && g < c->p->n_groups; g++) parity_group_tally_clear(&c->gt[g]);
  gdn_free(c->gt);
  gdn_free(c->rh);
  gdn_inputs_clear(&c->in);
  gdn_cotangents_clear(&c->ct);
  gdn_free(c->hdr.seg);
  c->hdr.seg = NULL;
  parity_reference_clear(&c->ref);
  parity_sweep_ctx_clear(&c->x);
}

/* After the oracle: the input's entry in the document (and the log). */
static int add_input(sctx *c, gdn_error *e) {
  input_ctx *x = &c->x;
  const parity_sweep_opts *o = x->o;
  int rc;
  if (c->sr->grad_sha256 && c->ref.has_grads) snprintf(c->ref.grad_sha256, sizeof c->ref.grad_sha256, "%s", c->sr->grad_sha256);
  x->in = &c->hdr;
  x->ref = c->ref.tier != PARITY_ORACLE_NONE ? &c->ref : NULL;
  if (parity_dist_rank() != 0) return GDN_OK; /* every rank measures; rank 0 records */
  x->input_index = parity_doc_next_input(x->d);
  parity_input_info info = {c->sr->name, c->sr->source, c->sr->path, c->sr->sha256};
  parity_input_result ir = {&info, &c->hdr, x->ref, x->subj, x->n_subj};
  if ((rc = parity_doc_add_input(x->d, &ir, e))) return rc;
  if (o->verbosity >= 1 && o->log) parity_progress_clear(o->progress);
  if (o->verbosity >= 1 && o->log) parity_log_input(o->log, &ir, o->dtype, o->matmul, x->cfg.ftz, o->ftz < 0);
  if (o->verbosity >= 1 && o->log) parity_log_mutant(o->log, o->mutant);
  return GDN_OK;
}

/* --verbose: what each rank measured (collective under mpirun). */
static int log_dealt(sctx *c, gdn_error *e) {
  const parity_sweep_opts *o = c->x.o;
  char line[1024];
  int rc = parity_stream_measure_report(c->meas_secs, parity_stream_rank_groups(c->p, parity_dist_rank(), parity_dist_size()),
                                        c->p->n_groups, line, sizeof line, NULL, e);
  if (rc || parity_dist_rank() != 0 || !o->log) return rc;
  parity_progress_clear(o->progress);
  fprintf(o->log, "%s\n", line);
  return GDN_OK;
}

int parity_sweep_run_streamed(parity_doc *d, const parity_stream_run *sr, const parity_sweep_opts *o, gdn_error *e) {
  int rc = parity_sweep_validate(&sr->plan->whole, o, e);
  if (rc) return rc;
  if (o->ct)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "a streamed run draws its cotangents by group (parity_stream_run.grads)");
  sctx *c = gdn_calloc(1, sizeof *c, "streamed run", e);
  if (!c) return e ? e->code : GDN_ERR_NOMEM;
  rc = ctx_init(c, d, sr, o, e);
  if (!rc) rc = phase_oracle(c, e);
  if (!rc) {
    char why[160];
    parity_sweep_stream_refusal(&c->hdr, o, why, sizeof why);
    if (why[0]) rc = gdn_error_set(e, GDN_ERR_INPUT, "%s", why);
  }
  if (!rc) rc = add_input(c, e);
  for (size_t ci = 0; ci < o->n_chunks && !rc; ci++) {
    rc = run_chunk_streamed(c, ci, e);
    chunk_clear(c);
  }
  if (!rc && o->verbosity >= 2) rc = log_dealt(c, e);
  ctx_free(c);
  gdn_free(c);
  return rc;
}
