#include "parity_stream_subject.h"

#include <jansson.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_dist_merge.h"
#include "parity_metrics.h"
#include "parity_stream_merge.h"
#include "parity_upstream.h"

static int is_scan(const parity_subject_run *s) {
  const char *im = s->ext ? json_string_value(json_object_get(s->ext->attrs, "implementation")) : NULL;
  return im && !strcmp(im, "scan");
}

/* Whether subject i's outputs are a fixture's (kept by so). */
static int is_output(const parity_stream_outputs *so, size_t i) { return i >= so->first && i < so->first + so->n; }

size_t parity_stream_map_subject(const input_ctx *x, const parity_case_result *r) {
  size_t w = SIZE_MAX;
  for (size_t i = 0; i < x->n_subj && i < r->n_subjects; i++) {
    const parity_subject_result *m = &r->subjects[i];
    if (m->kind == PARITY_SUBJ_SCAN || !(m->has_vs_ref & (1u << PARITY_T_O))) continue;
    if (w == SIZE_MAX || m->vs_ref[PARITY_T_O].block_rel > r->subjects[w].vs_ref[PARITY_T_O].block_rel) w = i;
  }
  return x->ref ? w : SIZE_MAX;
}

static void max_into(double *acc, const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] > acc[i]) acc[i] = v[i];
}

/* Output w's o block map, its rows a group at a time (case_group_o's way). */
static int block_map(const parity_stream_outputs *so, const input_ctx *x, parity_case_result *r, size_t w,
                     const parity_spill_tensor *ref, gdn_error *e) {
  const parity_spill_tensor *xt = &so->t[w - so->first][PARITY_T_O];
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(&so->p->whole, od);
  const int64_t C = x->cfg.chunk, nblk = (od[1] + C - 1) / C, per = (nblk + 255) / 256;
  r->block_map.heads = od[2];
  r->block_map.bins = (nblk + per - 1) / per;
  r->block_map.tokens_per_bin = per * C;
  r->block_map.values = gdn_calloc((size_t)(od[2] * r->block_map.bins), sizeof(double), "block map", e);
  if (!r->block_map.values) return e ? e->code : GDN_ERR_NOMEM;
  r->block_map.subject = x->meas[w].name;
  const int64_t bins = r->block_map.bins;
  int rc = GDN_OK;
  for (int64_t g = 0; g < so->p->n_groups && !rc; g++) {
    if (!parity_stream_holds(g)) continue; /* each rank its groups' rows, merged below */
    int64_t k0, k1, gd[4];
    gdn_shape gs;
    parity_stream_group(so->p, g, &k0, &k1, &gs);
    parity_tensors[PARITY_T_O].dims(&gs, gd);
    parity_vals xo, ro;
    if ((rc = parity_spill_tensor_read(xt, g, so->buf[0], &xo, e)) ||
        (rc = parity_spill_tensor_read(&ref[PARITY_T_O], g, so->buf[1], &ro, e)))
      break;
    double *rows = gdn_calloc((size_t)(gd[2] * bins), sizeof *rows, "block map rows", e);
    if (!rows) return e ? e->code : GDN_ERR_NOMEM;
    rc = parity_block_map_o_v(xo, ro, gd, C, x->meas[w].vs_ref[PARITY_T_O].rel_floor, per, rows, e);
    if (!rc) memcpy(r->block_map.values + k0 * so->r * bins, rows, (size_t)(gd[2] * bins) * sizeof *rows);
    gdn_free(rows);
  }
  return parity_stream_merge_disjoint(rc, r->block_map.values, (size_t)(od[2] * bins), e);
}

/* The case's subject: an output judged in this case, measured against the
 * reference, not a stock scan; the worst o rel_fro (pick_subject's rule). */
static size_t pick_subject(const parity_stream_outputs *so, const input_ctx *x, const parity_case_result *r) {
  size_t w = SIZE_MAX;
  for (size_t i = so->first; i < so->first + so->n && i < r->n_subjects; i++) {
    const parity_subject_result *m = &r->subjects[i];
    if (m->other_case || is_scan(&x->subj[i]) || !(m->has_vs_ref & (1u << PARITY_T_O))) continue;
    if (w == SIZE_MAX || m->vs_ref[PARITY_T_O].rel_fro > r->subjects[w].vs_ref[PARITY_T_O].rel_fro) w = i;
  }
  return w;
}

/* What upstream's test compares it with: the fixture's scan output of one
 * device, else our scan (pick_against's rule). */
static size_t pick_against(const parity_stream_outputs *so, const input_ctx *x) {
  for (size_t i = so->first; i < so->first + so->n; i++)
    if (is_scan(&x->subj[i]) && (!x->subj[i].ext->devices || x->subj[i].ext->devices == 1)) return i;
  return x->baseline;
}

/* A pair's source: subject s's tensor against `against`'s. */
typedef struct vs_src {
  const parity_stream_outputs *so;
  const parity_spill_tensor *x, *a;
  int t;
} vs_src;

static int vs_get(void *ctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e) {
  const vs_src *s = ctx;
  parity_stream_outputs_heads(s->so, g, s->t, h0, h1);
  int rc = parity_spill_tensor_read(s->x, g, s->so->buf[0], x, e);
  return rc ? rc : parity_spill_tensor_read(s->a, g, s->so->buf[1], r, e);
}

/* parity_metrics_compute_v's figures of a pair, from the stream's (which
 * adds the localized statistic: taken back out). */
typedef struct vs_pair {
  vs_src *s;
  parity_mstream *M;
} vs_pair;

/* Group g's visit of the one pair. */
static int vs_visit(void *v, int64_t g, int pass_b, gdn_error *e) {
  const vs_pair *p = v;
  parity_vals xv, av;
  int64_t h0, h1;
  int rc = vs_get(p->s, g, &xv, &av, &h0, &h1, e);
  if (!rc) rc = pass_b ? parity_mstream_add_b(p->M, xv, av, h0, h1, e) : parity_mstream_add_a(p->M, xv, av, h0, h1, e);
  return rc;
}

static int vs_metrics(const parity_stream_outputs *so, int t, const parity_spill_tensor *xt,
                      const parity_spill_tensor *at, gdn_dtype ulp, parity_metrics *m, gdn_error *e) {
  int64_t dims[4], bl[4];
  parity_tensors[t].dims(&so->p->whole, dims);
  parity_tensors[t].blocks(&so->p->whole, 64, bl);
  vs_src s = {so, xt, at, t};
  parity_group_src gs = {vs_get, &s, so->p->n_groups, parity_stream_outputs_head_axis(t), NULL, NULL, NULL};
  parity_stream_group_net(&gs); /* the median's extra rounds count each rank's groups */
  memset(m, 0, sizeof *m);
  vs_pair vp = {&s, NULL};
  int rc = parity_mstream_new(&vp.M, &gs, dims, bl, ulp, e);
  parity_mstream *M = vp.M;
  rc = parity_stream_passes(rc, so->p->n_groups, vs_visit, &vp, &M, NULL, 1, NULL, e);
  if (!rc) rc = parity_mstream_finish(M, m, e);
  if (rc) memset(m, 0, sizeof *m);
  parity_mstream_free(M);
  m->block_rel = m->elem_rel = 0;
  memset(m->elem_at, 0, sizeof m->elem_at);
  memset(m->block_len, 0, sizeof m->block_len);
  memset(m->block_lo, 0, sizeof m->block_lo);
  memset(m->block_hi, 0, sizeof m->block_hi);
  m->n_blocks = 0;
  return rc;
}

/* The upstream figures (maxima over the groups) and the o profile. */
static int subject_groups(const parity_stream_outputs *so, const input_ctx *x, parity_case_result *r,
                          const parity_spill_tensor *st, const parity_spill_tensor *at, const parity_spill_tensor *ref,
                          double fig[PARITY_UPSTREAM_AC][PARITY_T_N], gdn_error *e) {
  const unsigned mask = r->subject_vs_mask;
  double *tmp = NULL;
  if (x->ref && r->profile.n) {
    r->subject_profile = gdn_calloc((size_t)r->profile.n, sizeof(double), "subject profile", e);
    tmp = r->subject_profile ? gdn_calloc((size_t)r->profile.n, sizeof *tmp, "profile", e) : NULL;
    if (!tmp) return e ? e->code : GDN_ERR_NOMEM;
  }
  int rc = GDN_OK;
  for (int64_t g = 0; g < so->p->n_groups && !rc; g++) {
    if (!parity_stream_holds(g)) continue; /* each rank its own groups, the maxima merged below */
    int64_t k0, k1, d[4];
    gdn_shape gs;
    parity_stream_group(so->p, g, &k0, &k1, &gs);
    for (int t = 0; t < PARITY_T_N && !rc; t++) {
      if (!(mask & (1u << t))) continue;
      parity_tensors[t].dims(&gs, d);
      parity_vals xv, av;
      if ((rc = parity_spill_tensor_read(&st[t], g, so->buf[0], &xv, e)) ||
          (rc = parity_spill_tensor_read(&at[t], g, so->buf[1], &av, e)))
        break;
      parity_vals xs[PARITY_T_N] = {{0}}, as[PARITY_T_N] = {{0}};
      size_t ns[PARITY_T_N] = {0};
      xs[t] = xv, as[t] = av, ns[t] = (size_t)(d[0] * d[1] * d[2] * d[3]);
      double gf[PARITY_UPSTREAM_AC][PARITY_T_N];
      parity_upstream_figures(xs, as, ns, 1u << t, gf);
      for (int i = 0; i < PARITY_UPSTREAM_AC; i++)
        if (gf[i][t] > fig[i][t]) fig[i][t] = gf[i][t];
    }
    if (rc || !tmp) continue;
    parity_vals xo, ro;
    parity_tensors[PARITY_T_O].dims(&gs, d);
    if ((rc = parity_spill_tensor_read(&st[PARITY_T_O], g, so->buf[0], &xo, e)) ||
        (rc = parity_spill_tensor_read(&ref[PARITY_T_O], g, so->buf[1], &ro, e)))
      break;
    parity_profile_o_v(xo, ro, d, x->block, tmp);
    max_into(r->subject_profile, tmp, r->profile.n);
  }
  gdn_free(tmp);
  rc = parity_dist_max_f64(rc, &fig[0][0], (size_t)PARITY_UPSTREAM_AC * PARITY_T_N, e);
  if (r->subject_profile) rc = parity_dist_max_f64(rc, r->subject_profile, (size_t)r->profile.n, e);
  return rc;
}

int parity_stream_subject_measure(const parity_stream_outputs *so, const input_ctx *x, parity_case_result *r,
                                  const parity_spill_tensor *ref, const parity_spill_tensor *base,
                                  unsigned base_present, gdn_error *e) {
  if (!so->n) return GDN_OK;
  const size_t w = parity_stream_map_subject(x, r);
  int rc = w != SIZE_MAX && is_output(so, w) ? block_map(so, x, r, w, ref, e) : GDN_OK;
  const size_t si = rc ? SIZE_MAX : pick_subject(so, x, r);
  if (rc || si == SIZE_MAX) return rc;
  const size_t ai = pick_against(so, x);
  const parity_spill_tensor *st = so->t[si - so->first];
  const parity_spill_tensor *at = is_output(so, ai) ? so->t[ai - so->first] : base;
  const unsigned sp = so->present[si - so->first], ap = is_output(so, ai) ? so->present[ai - so->first] : base_present;
  r->subject = si;
  r->subject_against = ai;
  double rf[PARITY_T_N] = {0};
  unsigned mask = 0;
  /* an ht of one state per document (parity_docstate.h) has no row-end state to compare */
  const int docs = so->per_doc[si - so->first] || (is_output(so, ai) && so->per_doc[ai - so->first]);
  for (int t = 0; t < PARITY_T_N && !rc; t++) {
    if (!(sp & ap & (1u << t)) || (t == PARITY_T_HT && docs)) continue;
    if ((rc = vs_metrics(so, t, &st[t], &at[t], so->out_dtype[si - so->first][t], &r->subject_vs[t], e))) break;
    rf[t] = r->subject_vs[t].rel_fro;
    mask |= 1u << t;
  }
  r->subject_vs_mask = mask;
  double fig[PARITY_UPSTREAM_AC][PARITY_T_N] = {{0}};
  if (!rc) rc = subject_groups(so, x, r, st, at, ref, fig, e);
  if (!rc) parity_upstream_judge(fig, rf, mask, r->upstream);
  return rc;
}
