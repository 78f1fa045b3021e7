/* parity_metrics: every metric over a tensor read a head group at a time (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

/* parity_metrics_stream (parity_metrics.h). */
typedef struct {
  const parity_group_src *src;
  int64_t dims[4];
  size_t inner, per_head; /* elements after the head axis; per head */
  gdn_dtype t;
  gdn_ulp_fmt f;
  int nt;
  parity_metrics_acc acc;
  parity_blocks_acc blk;
  parity_xsum *rows2;  /* pass A: sum of ||r_row||^2 (exact) */
  double row_floor;
  /* pass B */
  int64_t *hist;       /* nt + 1 slots of RADIX */
  tstate *ts;
  msel ms;
  sink sk;
  double rel_best;
  int64_t rel_at;
  erel *elem;          /* one per whole row group of blocks */
  int64_t n_elem;
  erel rows;           /* row_rel's summary over whole row indices */
} mstream;

/* Group [h0, h1)'s slab map and its own dims. */
static parity_slab slab_of(const mstream *S, int64_t h0, int64_t h1, int64_t gd[4]) {
  const int ax = S->src->head_axis;
  size_t outer = 1;
  for (int i = 0; i < ax; i++) outer *= (size_t)S->dims[i];
  memcpy(gd, S->dims, 4 * sizeof *gd);
  gd[ax] = h1 - h0;
  return (parity_slab){outer, (size_t)(h1 - h0) * S->inner, (size_t)S->dims[ax] * S->inner, (size_t)h0 * S->inner};
}

/* Rows of the group in chunks of ROWS: pass A adds ||r_row||^2 exactly;
 * pass B summarises row_rel against the floor in whole row indices. */
static void rows_group(mstream *S, parity_vals x, parity_vals r, const parity_slab *sl, int pass_b) {
  const int64_t len = S->dims[3], n_rows = (int64_t)(sl->runs * sl->len) / len;
  double v[ROWS];
  for (int64_t q = 0; q < n_rows; q += ROWS) {
    const int64_t cnt = n_rows - q < ROWS ? n_rows - q : ROWS;
    pm_rows_eval(pass_b ? x : NONE, r, q, cnt, len, pass_b ? S->row_floor : 0, v);
    for (int64_t j = 0; j < cnt; j++) {
      if (!pass_b) {
        parity_xsum_add(S->rows2, v[j] * v[j]);
        continue;
      }
      if (v[j] == -1) continue;
      const int64_t w = pm_slab_full(sl, (size_t)((q + j) * len)) / len;
      erel *o = &S->rows;
      if (o->i0 < 0 || w < o->i0) o->i0 = w, o->q0 = v[j];
      if (!isnan(v[j]) && (o->arg < 0 || v[j] > o->best || (v[j] == o->best && w < o->arg))) o->best = v[j], o->arg = w;
    }
  }
}

static int pass_a_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int64_t gd[4];
  const parity_slab sl = slab_of(S, h0, h1, gd);
  int rc = parity_metrics_acc_add_v(&S->acc, x, r, &sl, S->t, e);
  if (!rc) rc = parity_blocks_acc_add_v(&S->blk, x, r, h0, h1, e);
  if (!rc && S->dims[3] > 0) rows_group(S, x, r, &sl, 0);
  return rc;
}

/* elem_rel over the group's blocks, its erels moved to whole indices. */
static int elem_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, const int64_t gd[4],
                      const parity_slab *sl, double floor, gdn_error *e) {
  const parity_blocks_acc *B = &S->blk;
  int64_t bl[4], nbk[4];
  const int64_t nb = pm_blocks_layout(gd, B->bl, bl, nbk), ng = nb / nbk[3];
  double *rms = gdn_calloc((size_t)(nb ? nb : 1), sizeof *rms, "group block RMS", e);
  erel *o = rms ? gdn_calloc((size_t)(ng ? ng : 1), sizeof *o, "group element maxima", e) : NULL;
  if (!o) {
    gdn_free(rms);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  for (int64_t k = 0; k < nb; k++) { /* the group's block k among the whole's */
    int64_t rem = k, w = 0, j[4];
    for (int ax = 3; ax >= 0; ax--) j[ax] = rem % nbk[ax], rem /= nbk[ax];
    j[B->head_axis] += h0;
    for (int ax = 0; ax < 4; ax++) w = w * B->nbk[ax] + j[ax];
    rms[k] = B->d2[B->nb + w];
  }
#pragma omp parallel for schedule(dynamic) num_threads(pm_threads_for(ng, (int64_t)(sl->runs * sl->len)))
  for (int64_t g = 0; g < ng; g++) pm_group_elem(x, r, gd, bl, nbk, g, rms, floor, &o[g]);
  for (int64_t g = 0; g < ng; g++) {
    if (o[g].i0 >= 0) o[g].i0 = pm_slab_full(sl, (size_t)o[g].i0);
    if (o[g].arg >= 0) o[g].arg = pm_slab_full(sl, (size_t)o[g].arg);
    S->elem[S->n_elem++] = o[g];
  }
  gdn_free(o);
  gdn_free(rms);
  return GDN_OK;
}

static int pass_b_group(mstream *S, parity_vals x, parity_vals r, int64_t h0, int64_t h1, double rel_floor,
                        gdn_error *e) {
  int64_t gd[4];
  const parity_slab sl = slab_of(S, h0, h1, gd);
  const size_t n = sl.runs * sl.len, nb = (n + BLOCK - 1) / BLOCK;
  partial *p = gdn_calloc(nb ? nb : 1, sizeof *p, "metric partials", e);
  if (!p) return e ? e->code : GDN_ERR_NOMEM;
  pm_pass2(x, r, n, S->f, rel_floor, p, &S->ms, S->ts, &S->sk, S->nt);
  double m = 0;
  size_t a = 0;
  for (size_t bi = 0; bi < nb; bi++)
    if (p[bi].rel_max > m) m = p[bi].rel_max, a = p[bi].rel_at;
  gdn_free(p);
  if (m > 0) {
    const int64_t w = pm_slab_full(&sl, a);
    if (m > S->rel_best || (m == S->rel_best && w < S->rel_at)) S->rel_best = m, S->rel_at = w;
  }
  if (S->dims[3] > 0) rows_group(S, x, r, &sl, 1);
  return S->blk.nb > 0 ? elem_group(S, x, r, h0, gd, &sl, rel_floor, e) : GDN_OK;
}

static void mstream_clear(mstream *S) {
  parity_metrics_acc_clear(&S->acc);
  parity_blocks_acc_clear(&S->blk);
  gdn_free(S->rows2);
  gdn_free(S->hist);
  gdn_free(S->ts);
  gdn_free(S->elem);
}

static int mstream_init(mstream *S, const parity_group_src *src, const int64_t dims[4], const int64_t block_len[4],
                        gdn_dtype t, gdn_error *e) {
  memset(S, 0, sizeof *S);
  S->src = src;
  memcpy(S->dims, dims, sizeof S->dims);
  S->t = t;
  S->f = gdn_dtype_ulp_fmt(t);
  S->inner = 1;
  for (int i = src->head_axis + 1; i < 4; i++) S->inner *= (size_t)dims[i];
  S->per_head = S->inner;
  for (int i = 0; i < src->head_axis; i++) S->per_head *= (size_t)dims[i];
  const size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  S->nt = gdn_threads_for((int64_t)((n + BLOCK - 1) / BLOCK));
  S->rel_at = 0;
  S->rows = (erel){0, -1, -1, -1};
  if (src->head_axis < 0 || src->head_axis > 2)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "metrics by head group: the head axis must be 0, 1 or 2");
  int rc = parity_metrics_acc_init(&S->acc, e);
  if (!rc) rc = parity_blocks_acc_init(&S->blk, dims, block_len, src->head_axis, e);
  if (rc) return rc;
  S->rows2 = gdn_calloc(1, sizeof *S->rows2, "row norm sum", e);
  S->hist = S->rows2 ? gdn_calloc((size_t)(S->nt + 1) * RADIX, sizeof *S->hist, "median histograms", e) : NULL;
  S->ts = S->hist ? gdn_calloc((size_t)S->nt, sizeof *S->ts, "median thread state", e) : NULL;
  const int64_t ng = S->blk.nbk[3] ? S->blk.nb / S->blk.nbk[3] : 0;
  S->elem = S->ts ? gdn_calloc((size_t)(ng ? ng : 1), sizeof *S->elem, "element maxima", e) : NULL;
  return S->elem ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
}

/* After pass A: pass 1's fields, the blocks' statistic, the row floor and
 * the median's first round, as the whole pass has them before its pass 2. */
static void mstream_between(mstream *S, parity_metrics *m) {
  parity_metrics_acc_value(&S->acc, S->dims, S->t, m);
  const int64_t n_rows = S->dims[3] > 0 ? m->n / S->dims[3] : 0;
  S->row_floor = n_rows > 0 ? sqrt(parity_xsum_value(S->rows2) / (double)n_rows) : 0;
  parity_blocks_acc_value(&S->blk, m);
  memcpy(S->hist, S->acc.top, RADIX * sizeof *S->hist);
  if (m->n) pm_median_prepare(S->hist, S->nt, (size_t)m->n, &S->ms, S->ts, &S->sk);
}

/* The incremental form (parity_metrics.h). */
struct parity_mstream {
  mstream S;
  parity_metrics m;
};

int parity_mstream_new(parity_mstream **out, const parity_group_src *src, const int64_t dims[4],
                       const int64_t block_len[4], gdn_dtype t, gdn_error *e) {
  parity_mstream *M = gdn_calloc(1, sizeof *M, "metrics by head group", e);
  *out = M;
  if (!M) return e ? e->code : GDN_ERR_NOMEM;
  return mstream_init(&M->S, src, dims, block_len, t, e);
}

size_t parity_mstream_bytes(const int64_t dims[4], const int64_t block_len[4]) {
  int64_t bl[4], nbk[4];
  const int64_t nb = pm_blocks_layout(dims, block_len, bl, nbk), ng = nbk[3] ? nb / nbk[3] : 0;
  const size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  const size_t nt = (size_t)gdn_threads_for((int64_t)((n + BLOCK - 1) / BLOCK));
  return sizeof(parity_mstream) + RADIX * sizeof(int64_t) /* the accumulator's top histogram */ +
         sizeof(parity_xsum) + (nt + 1) * RADIX * sizeof(int64_t) + nt * sizeof(tstate) +
         (size_t)(ng ? ng : 1) * sizeof(erel) + (size_t)(nb ? nb : 1) * (2 * sizeof(double) + 1) +
         8 * 64; /* each block's alignment */
}

void parity_mstream_free(parity_mstream *M) {
  if (!M) return;
  mstream_clear(&M->S);
  gdn_free(M);
}

static int check_heads(const mstream *S, int64_t h0, int64_t h1, gdn_error *e) {
  if (h0 >= 0 && h1 > h0 && h1 <= S->dims[S->src->head_axis]) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "head group: heads [%lld, %lld) outside [0, %lld)", (long long)h0,
                       (long long)h1, (long long)S->dims[S->src->head_axis]);
}

int parity_mstream_add_a(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int rc = check_heads(&M->S, h0, h1, e);
  return rc ? rc : pass_a_group(&M->S, x, r, h0, h1, e);
}

void parity_mstream_between(parity_mstream *M) {
  memset(&M->m, 0, sizeof M->m);
  mstream_between(&M->S, &M->m);
}

int parity_mstream_add_b(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  if (!M->m.n) return GDN_OK;
  int rc = check_heads(&M->S, h0, h1, e);
  return rc ? rc : pass_b_group(&M->S, x, r, h0, h1, M->m.rel_floor, e);
}

int parity_mstream_finish(parity_mstream *M, parity_metrics *m, gdn_error *e) {
  mstream *S = &M->S;
  *m = M->m;
  int rc = GDN_OK;
  if (m->n) {
    m->max_rel = S->rel_best;
    pm_unflatten(S->rel_at, S->dims, m->rel_at);
    pm_tstate_combine(S->ts, S->nt);
    const usrc u = {NONE, NONE, (size_t)m->n, S->src, S->per_head};
    rc = pm_median_finish(&u, S->f, &S->ms, S->ts, &S->sk, S->hist, S->nt, &m->median_ulp, e);
  }
  if (!rc && S->dims[3] > 0) {
    int64_t arg;
    pm_erel_pick(&S->rows, 1, &m->row_rel, &arg);
    m->row_worst = arg;
  }
  if (!rc && S->blk.nb > 0 && m->n > 0) {
    int64_t arg;
    pm_erel_pick(S->elem, S->n_elem, &m->elem_rel, &arg);
    if (arg >= 0) pm_unflatten(arg, S->dims, m->elem_at);
  }
  return rc;
}

/* Reads every group through the source and hands it to pass A or B. */
static int stream_pass_m(parity_mstream *M, int pass_b, gdn_error *e) {
  const parity_group_src *src = M->S.src;
  for (int64_t g = 0; g < src->n_groups; g++) {
    parity_vals x, r;
    int64_t h0, h1;
    int rc = src->get(src->ctx, g, &x, &r, &h0, &h1, e);
    if (!rc && check_heads(&M->S, h0, h1, NULL))
      rc = gdn_error_set(e, GDN_ERR_INTERNAL, "head group %lld: heads [%lld, %lld) outside [0, %lld)", (long long)g,
                         (long long)h0, (long long)h1, (long long)M->S.dims[src->head_axis]);
    if (!rc) rc = pass_b ? parity_mstream_add_b(M, x, r, h0, h1, e) : parity_mstream_add_a(M, x, r, h0, h1, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

int parity_metrics_stream(const parity_group_src *src, const int64_t dims[4], const int64_t block_len[4], gdn_dtype t,
                          parity_metrics *m, gdn_error *e) {
  parity_mstream *M;
  memset(m, 0, sizeof *m);
  int rc = parity_mstream_new(&M, src, dims, block_len, t, e);
  if (!rc) rc = stream_pass_m(M, 0, e);
  if (!rc) {
    parity_mstream_between(M);
    rc = stream_pass_m(M, 1, e);
  }
  if (!rc) rc = parity_mstream_finish(M, m, e);
  if (rc) memset(m, 0, sizeof *m);
  parity_mstream_free(M);
  return rc;
}

/* --- mergeable (parity_mstream_pack / _merge) ----------------------------- */

/* A part is a flat run of fields; put with buf NULL counts the bytes. */
static size_t put(unsigned char *buf, size_t at, const void *p, size_t n) {
  if (buf && n) memcpy(buf + at, p, n);
  return at + n;
}

typedef struct {
  const unsigned char *p;
  size_t at, n;
} reader;

static int take(reader *rd, void *out, size_t n) {
  if (rd->n - rd->at < n) return -1;
  memcpy(out, rd->p + rd->at, n);
  rd->at += n;
  return 0;
}

/* Pass B's bucket work summed over the threads into thread 0's slots (the
 * extrema combined, the counts of the next 16 bits in hist's first slot):
 * what pm_median_finish combines itself, so doing it twice changes nothing. */
static void median_fold(mstream *S) {
  pm_tstate_combine(S->ts, S->nt);
  for (int j = 1; j < S->nt; j++)
    for (int i = 0; i < RADIX; i++) S->hist[i] += S->hist[(size_t)j * RADIX + i], S->hist[(size_t)j * RADIX + i] = 0;
}

static size_t pack_a(const mstream *S, unsigned char *buf) {
  size_t at = put(buf, 0, &S->acc, sizeof S->acc); /* its `top` pointer travels too, unread */
  at = put(buf, at, S->acc.top, RADIX * sizeof *S->acc.top);
  at = put(buf, at, S->blk.d2, (size_t)(2 * S->blk.nb) * sizeof *S->blk.d2);
  at = put(buf, at, S->blk.bad, (size_t)S->blk.nb);
  return put(buf, at, S->rows2, sizeof *S->rows2);
}

static size_t pack_b(mstream *S, unsigned char *buf) {
  median_fold(S);
  size_t at = put(buf, 0, &S->rel_best, sizeof S->rel_best);
  at = put(buf, at, &S->rel_at, sizeof S->rel_at);
  at = put(buf, at, &S->rows, sizeof S->rows);
  at = put(buf, at, &S->n_elem, sizeof S->n_elem);
  at = put(buf, at, S->elem, (size_t)S->n_elem * sizeof *S->elem);
  const double ext[3] = {S->ts[0].bmin, S->ts[0].bmax, S->ts[0].nmin};
  at = put(buf, at, ext, sizeof ext);
  if (S->sk.cand) {
    const uint64_t pos = S->sk.pos;
    at = put(buf, at, &pos, sizeof pos);
    return put(buf, at, S->sk.cand, S->sk.pos * sizeof *S->sk.cand);
  }
  return put(buf, at, S->hist, RADIX * sizeof *S->hist);
}

size_t parity_mstream_pack(parity_mstream *M, int pass_b, void *buf) {
  return pass_b ? pack_b(&M->S, buf) : pack_a(&M->S, buf);
}

static int merge_a(mstream *S, reader *rd, gdn_error *e) {
  parity_metrics_acc o;
  parity_xsum *rows2 = gdn_malloc(sizeof *rows2, "row norm sum", e);
  int64_t *top = rows2 ? gdn_malloc(RADIX * sizeof *top, "median histogram", e) : NULL;
  double *d2 = top ? gdn_malloc((size_t)(2 * S->blk.nb + 1) * sizeof *d2, "block sums", e) : NULL;
  unsigned char *bad = d2 ? gdn_malloc((size_t)S->blk.nb + 1, "block flags", e) : NULL;
  int rc = bad ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
  if (!rc && (take(rd, &o, sizeof o) || take(rd, top, RADIX * sizeof *top) ||
              take(rd, d2, (size_t)(2 * S->blk.nb) * sizeof *d2) || take(rd, bad, (size_t)S->blk.nb) ||
              take(rd, rows2, sizeof *rows2)))
    rc = gdn_error_set(e, GDN_ERR_INTERNAL, "merging pass A: a part of the wrong size");
  if (!rc) {
    o.top = top;
    parity_metrics_acc_merge(&S->acc, &o);
    /* a block lies in one group, so one part holds its sums and the others +0 */
    for (int64_t i = 0; i < 2 * S->blk.nb; i++) S->blk.d2[i] += d2[i];
    for (int64_t i = 0; i < S->blk.nb; i++) S->blk.bad[i] |= bad[i];
    parity_xsum_merge(S->rows2, rows2);
  }
  gdn_free(bad);
  gdn_free(d2);
  gdn_free(top);
  gdn_free(rows2);
  return rc;
}

/* rows_group's pass-B summary of another part folded into *o (the same
 * choices: the least first index, the greatest value with its least index). */
static void erel_merge(erel *o, const erel *b) {
  if (b->i0 >= 0 && (o->i0 < 0 || b->i0 < o->i0)) o->i0 = b->i0, o->q0 = b->q0;
  if (b->arg >= 0 && (o->arg < 0 || b->best > o->best || (b->best == o->best && b->arg < o->arg)))
    o->best = b->best, o->arg = b->arg;
}

static int merge_b(mstream *S, reader *rd, gdn_error *e) {
  double best, ext[3];
  int64_t at, n_elem;
  erel rows;
  const int64_t cap = S->blk.nbk[3] ? S->blk.nb / S->blk.nbk[3] : 0;
  if (take(rd, &best, sizeof best) || take(rd, &at, sizeof at) || take(rd, &rows, sizeof rows) ||
      take(rd, &n_elem, sizeof n_elem) || n_elem < 0 || n_elem > cap - S->n_elem ||
      take(rd, S->elem + S->n_elem, (size_t)n_elem * sizeof *S->elem) || take(rd, ext, sizeof ext))
    return gdn_error_set(e, GDN_ERR_INTERNAL, "merging pass B: a part of the wrong size");
  median_fold(S);
  if (best > 0 && (best > S->rel_best || (best == S->rel_best && at < S->rel_at))) S->rel_best = best, S->rel_at = at;
  erel_merge(&S->rows, &rows);
  S->n_elem += n_elem;
  if (ext[0] < S->ts[0].bmin) S->ts[0].bmin = ext[0];
  if (ext[1] > S->ts[0].bmax) S->ts[0].bmax = ext[1];
  if (ext[2] < S->ts[0].nmin) S->ts[0].nmin = ext[2];
  if (S->sk.cand) { /* the bucket's values: a multiset, so appended in any order */
    uint64_t pos;
    if (take(rd, &pos, sizeof pos) || pos > S->ms.count - S->sk.pos ||
        take(rd, S->sk.cand + S->sk.pos, (size_t)pos * sizeof *S->sk.cand))
      return gdn_error_set(e, GDN_ERR_INTERNAL, "merging pass B: the median's bucket overfilled");
    S->sk.pos += (size_t)pos;
    return GDN_OK;
  }
  for (int i = 0; i < RADIX; i++) {
    int64_t h;
    if (take(rd, &h, sizeof h)) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging pass B: a part of the wrong size");
    S->hist[i] += h;
  }
  return GDN_OK;
}

int parity_mstream_merge(parity_mstream *M, int pass_b, const void *buf, size_t n, gdn_error *e) {
  reader rd = {buf, 0, n};
  int rc = pass_b ? merge_b(&M->S, &rd, e) : merge_a(&M->S, &rd, e);
  if (!rc && rd.at != n) rc = gdn_error_set(e, GDN_ERR_INTERNAL, "merging a pass: %zu bytes left over", n - rd.at);
  return rc;
}
