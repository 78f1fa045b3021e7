/* parity_metrics: the localized block and element statistics, the block map (parity_metrics_pass.h). */
#include "parity_metrics_pass.h"

/* parity_metrics_blocks: the blocks' sums and elem_rel in parallel over
 * groups of rows -- the rows of one block index on the first three axes,
 * (a / bl[0], b / bl[1], c / bl[2]) = g, so the groups own disjoint blocks
 * k = g * nbk[3] + d / bl[3].  A group visits its rows in memory order, so
 * each block's sums accumulate in the same order as one pass from 0. */
typedef struct {
  int64_t lo[3], hi[3];
} rows3;

static rows3 group_rows(int64_t g, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4]) {
  rows3 w;
  int64_t j[3] = {g / (nbk[1] * nbk[2]), g / nbk[2] % nbk[1], g % nbk[2]};
  for (int a = 0; a < 3; a++) {
    w.lo[a] = j[a] * bl[a];
    w.hi[a] = w.lo[a] + bl[a] < dims[a] ? w.lo[a] + bl[a] : dims[a];
  }
  return w;
}

/* Iterates the rows of group w: i is the flat index of each row's start. */
#define FOR_ROWS(w, dims, i)                                                                       \
  for (int64_t a_ = (w).lo[0]; a_ < (w).hi[0]; a_++)                                               \
    for (int64_t b_ = (w).lo[1]; b_ < (w).hi[1]; b_++)                                             \
      for (int64_t c_ = (w).lo[2], i = ((a_ * (dims)[1] + b_) * (dims)[2] + c_) * (dims)[3]; c_ < (w).hi[2]; \
           c_++, i += (dims)[3])

/* Sums of (x - r)^2 and r^2 per block of group g; a non-finite x marks its
 * block.  Each row is walked in segments of bl[3], one block each, its sums
 * carried in registers (the same additions in the same order as adding to
 * d2[k] element by element). */
HOT void group_sums(VARGS, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t g, double *d2,
                    double *r2, unsigned char *bad) {
  const rows3 w = group_rows(g, dims, bl, nbk);
  const int64_t D = dims[3], B3 = bl[3];
  double *gd = d2 + g * nbk[3], *gr = r2 + g * nbk[3];
  unsigned char *gb = bad + g * nbk[3];
  FOR_ROWS(w, dims, i0) {
    for (int64_t j = 0, d0 = 0; d0 < D; j++, d0 += B3) {
      const size_t lo = (size_t)(i0 + d0), hi = (size_t)(i0 + (d0 + B3 < D ? d0 + B3 : D));
      double sd = gd[j], sr = gr[j];
      int nonfinite = 0;
      for (size_t i = lo; i < hi; i++) {
        const double xi = XV(i), ri = RV(i);
        nonfinite |= !isfinite(xi);
        double df = xi - ri;
        sd += df * df;
        sr += ri * ri;
      }
      gd[j] = sd, gr[j] = sr;
      if (nonfinite) gb[j] = 1;
    }
  }
}

/* Each element against max(|r|, the RMS of r over its block, rel_floor);
 * rms[k] holds the block RMS.  fk = max(rms, floor) is one value per
 * block, taken once per row segment; it is not NaN (floor is finite, fmax
 * drops a NaN RMS) and no term is -0 (sums of squares from +0, fabs), so
 * the per-element maximum needs no call to fmax. */
HOT void group_elem(VARGS, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t g,
                    const double *rms, double floor, erel *o) {
  const rows3 w = group_rows(g, dims, bl, nbk);
  const int64_t D = dims[3], B3 = bl[3];
  const double *gm = rms + g * nbk[3];
  erel v = {0, -1, -1, -1};
  FOR_ROWS(w, dims, i0) {
    for (int64_t j = 0, d0 = 0; d0 < D; j++, d0 += B3) {
      const size_t lo = (size_t)(i0 + d0), hi = (size_t)(i0 + (d0 + B3 < D ? d0 + B3 : D));
      const double fk = fmax(gm[j], floor);
      for (size_t i = lo; i < hi; i++) {
        const double xi = XV(i), ri = RV(i);
        double df = isfinite(xi) ? fabs(xi - ri) : INFINITY;
        if (df == 0) continue;
        const double ar = fabs(ri); /* fmax(ar, fk) inline: fk is never NaN, neither is -0 */
        double den = isnan(ar) || fk > ar ? fk : ar;
        double q = den > 0 ? df / den : INFINITY;
        if (v.i0 < 0) v.i0 = (int64_t)i, v.q0 = q;
        if (q > v.best) v.best = q, v.arg = (int64_t)i;
      }
    }
  }
  *o = v;
}

/* group_elem for one group, instantiated per form pair (FORMS) here, so
 * that the streamed pass (parity_metrics_stream.c) runs the same loop. */
void pm_group_elem(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4],
                   int64_t g, const double *rms, double floor, erel *o) {
  FORMS(group_elem, x, r, dims, bl, nbk, g, rms, floor, o);
}

/* elem_rel as one pass from 0 would find it (best starts at the first
 * differing element's q and grows on strictly greater ones): a NaN there
 * sticks, else the greatest non-NaN q at its first index. */
/* One pass from 0 over items each summarised by an erel (whole indices):
 * a NaN at the first differing item sticks, else the greatest non-NaN
 * value at its least index; (0, -1) when none differs. */
void pm_erel_pick(const erel *o, int64_t n, double *best_out, int64_t *arg_out) {
  int64_t first = -1, arg = -1;
  double q0 = 0, best = 0;
  for (int64_t g = 0; g < n; g++)
    if (o[g].i0 >= 0 && (first < 0 || o[g].i0 < first)) first = o[g].i0, q0 = o[g].q0;
  if (first >= 0 && isnan(q0)) best = q0, arg = first;
  else if (first >= 0)
    for (int64_t g = 0; g < n; g++)
      if (o[g].best >= 0 && (arg < 0 || o[g].best > best || (o[g].best == best && o[g].arg < arg)))
        best = o[g].best, arg = o[g].arg;
  *best_out = best, *arg_out = arg;
}

static void elem_combine(const erel *o, int64_t ng, const int64_t dims[4], parity_metrics *m) {
  int64_t arg;
  pm_erel_pick(o, ng, &m->elem_rel, &arg);
  if (arg >= 0) pm_unflatten(arg, dims, m->elem_at);
}

static void blocks_sum(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                       const int64_t nbk[4], int64_t ng, double *d2, double *r2, unsigned char *bad) {
#pragma omp parallel for schedule(dynamic) num_threads(pm_threads_for(ng, dims[0] * dims[1] * dims[2] * dims[3]))
  for (int64_t g = 0; g < ng; g++) FORMS(group_sums, x, r, dims, bl, nbk, g, d2, r2, bad);
}

static void blocks_elem(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                        const int64_t nbk[4], int64_t ng, const double *rms, erel *o, parity_metrics *m) {
#pragma omp parallel for schedule(dynamic) num_threads(pm_threads_for(ng, dims[0] * dims[1] * dims[2] * dims[3]))
  for (int64_t g = 0; g < ng; g++) FORMS(group_elem, x, r, dims, bl, nbk, g, rms, m->rel_floor, &o[g]);
  elem_combine(o, ng, dims, m);
}

/* The worst block's normwise error against its floor, each block's r2
 * turned into its RMS for elem_rel; returns the worst block. */
static int64_t blocks_judge(const int64_t dims[4], const int64_t bl[4], const int64_t nbk[4], int64_t nb,
                            const double *d2, double *r2, const unsigned char *bad, parity_metrics *m) {
  int64_t worst = 0;
  for (int64_t k = 0; k < nb; k++) {
    /* the block's element count (the last block on an axis may be short) */
    int64_t rem = k, cnt = 1;
    for (int a = 3; a >= 0; a--) {
      int64_t j = rem % nbk[a], lo = j * bl[a], hi = lo + bl[a] < dims[a] ? lo + bl[a] : dims[a];
      cnt *= hi - lo;
      rem /= nbk[a];
    }
    double fl = sqrt((double)cnt) * m->rel_floor, nr = sqrt(r2[k]);
    double den = nr > fl ? nr : fl;
    double q = bad[k] ? INFINITY : d2[k] == 0 ? 0 : den > 0 ? sqrt(d2[k]) / den : INFINITY;
    if (q > m->block_rel) m->block_rel = q, worst = k;
    r2[k] = sqrt(r2[k] / (double)cnt); /* now the block's RMS, for elem_rel */
  }
  return worst;
}

int parity_metrics_blocks_v(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t block_len[4],
                            parity_metrics *m, gdn_error *e) {
  int64_t bl[4], nbk[4], nb = 1;
  for (int a = 0; a < 4; a++) {
    bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (bl[a] < 1) bl[a] = 1;
    nbk[a] = (dims[a] + bl[a] - 1) / bl[a];
    nb *= nbk[a];
  }
  m->block_rel = m->elem_rel = 0;
  memset(m->elem_at, 0, sizeof m->elem_at);
  m->n_blocks = nb;
  memcpy(m->block_len, bl, sizeof bl);
  if (nb == 0 || m->n == 0) return GDN_OK;
  const int64_t ng = nb / nbk[3];
  double *d2 = gdn_calloc((size_t)nb * 2, sizeof *d2, "block sums", e);
  unsigned char *bad = d2 ? gdn_calloc((size_t)nb, 1, "block flags", e) : NULL;
  erel *o = bad ? gdn_calloc((size_t)ng, sizeof *o, "element maxima", e) : NULL;
  if (o) {
    double *r2 = d2 + nb;
    blocks_sum(x, r, dims, bl, nbk, ng, d2, r2, bad);
    int64_t worst = blocks_judge(dims, bl, nbk, nb, d2, r2, bad, m);
    blocks_elem(x, r, dims, bl, nbk, ng, r2, o, m);
    for (int a = 3; a >= 0; a--) {
      int64_t j = worst % nbk[a];
      worst /= nbk[a];
      m->block_lo[a] = j * bl[a];
      m->block_hi[a] = m->block_lo[a] + bl[a] < dims[a] ? m->block_lo[a] + bl[a] : dims[a];
    }
  }
  gdn_free(o);
  gdn_free(d2);
  gdn_free(bad);
  return o ? GDN_OK : e ? e->code : GDN_ERR_NOMEM;
}

/* Block length per axis clamped to [1, dims], and the block counts. */
int64_t pm_blocks_layout(const int64_t dims[4], const int64_t block_len[4], int64_t bl[4], int64_t nbk[4]) {
  int64_t nb = 1;
  for (int a = 0; a < 4; a++) {
    bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (bl[a] < 1) bl[a] = 1;
    nbk[a] = (dims[a] + bl[a] - 1) / bl[a];
    nb *= nbk[a];
  }
  return nb;
}

int parity_blocks_acc_init(parity_blocks_acc *a, const int64_t dims[4], const int64_t block_len[4], int head_axis,
                           gdn_error *e) {
  memset(a, 0, sizeof *a);
  memcpy(a->dims, dims, sizeof a->dims);
  a->nb = pm_blocks_layout(dims, block_len, a->bl, a->nbk);
  a->head_axis = head_axis;
  if (head_axis < 0 || head_axis > 3 || a->bl[head_axis] != 1)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "block sums by head group: blocks must lie inside one head");
  a->d2 = gdn_calloc((size_t)(a->nb ? 2 * a->nb : 1), sizeof *a->d2, "block sums", e);
  a->bad = a->d2 ? gdn_calloc((size_t)(a->nb ? a->nb : 1), 1, "block flags", e) : NULL;
  if (!a->bad) {
    gdn_free(a->d2);
    a->d2 = NULL;
    return e ? e->code : GDN_ERR_NOMEM;
  }
  return GDN_OK;
}

void parity_blocks_acc_clear(parity_blocks_acc *a) {
  gdn_free(a->d2);
  gdn_free(a->bad);
  memset(a, 0, sizeof *a);
}

/* The group's block sums (its own blocks: the same rows in the same order
 * as the whole pass sums them, every block being inside one head), then
 * each copied to its place among the whole tensor's blocks. */
int parity_blocks_acc_add_v(parity_blocks_acc *a, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e) {
  int64_t gd[4], bl[4], nbk[4];
  memcpy(gd, a->dims, sizeof gd);
  gd[a->head_axis] = h1 - h0;
  const int64_t nb = pm_blocks_layout(gd, a->bl, bl, nbk);
  if (nb == 0) return GDN_OK;
  double *d2 = gdn_calloc((size_t)nb * 2, sizeof *d2, "group block sums", e);
  unsigned char *bad = d2 ? gdn_calloc((size_t)nb, 1, "group block flags", e) : NULL;
  if (!bad) {
    gdn_free(d2);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  blocks_sum(x, r, gd, bl, nbk, nb / nbk[3], d2, d2 + nb, bad);
  for (int64_t k = 0; k < nb; k++) {
    int64_t rem = k, w = 0, j[4];
    for (int ax = 3; ax >= 0; ax--) j[ax] = rem % nbk[ax], rem /= nbk[ax];
    j[a->head_axis] += h0;
    for (int ax = 0; ax < 4; ax++) w = w * a->nbk[ax] + j[ax];
    a->d2[w] = d2[k], a->d2[a->nb + w] = d2[nb + k], a->bad[w] = bad[k];
  }
  gdn_free(d2);
  gdn_free(bad);
  return GDN_OK;
}

void parity_blocks_acc_value(parity_blocks_acc *a, parity_metrics *m) {
  m->block_rel = 0;
  m->n_blocks = a->nb;
  memcpy(m->block_len, a->bl, sizeof a->bl);
  if (a->nb == 0 || m->n == 0) return;
  int64_t worst = blocks_judge(a->dims, a->bl, a->nbk, a->nb, a->d2, a->d2 + a->nb, a->bad, m);
  for (int ax = 3; ax >= 0; ax--) {
    int64_t j = worst % a->nbk[ax];
    worst /= a->nbk[ax];
    m->block_lo[ax] = j * a->bl[ax];
    m->block_hi[ax] = m->block_lo[ax] + a->bl[ax] < a->dims[ax] ? m->block_lo[ax] + a->bl[ax] : a->dims[ax];
  }
}

int parity_block_map_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e) {
  const int64_t B = dims[0], T = dims[1], H = dims[2], D = dims[3];
  const int64_t nblk = (T + block - 1) / block, bins = (nblk + per_bin - 1) / per_bin;
  for (int64_t i = 0; i < H * bins; i++) out[i] = 0;
  double *acc = gdn_calloc((size_t)(2 * H), sizeof *acc, "block map sums", e);
  if (!acc) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < nblk; k++) {
      int64_t t0 = k * block, t1 = t0 + block < T ? t0 + block : T;
      memset(acc, 0, (size_t)(2 * H) * sizeof *acc);
      for (int64_t t = t0; t < t1; t++)
        for (int64_t h = 0; h < H; h++) {
          const size_t at = (size_t)(((b * T + t) * H + h) * D);
          for (int64_t d = 0; d < D; d++) {
            double xd = AT(x, at + (size_t)d), rd = AT(r, at + (size_t)d);
            double df = isfinite(xd) ? xd - rd : INFINITY;
            acc[2 * h] += df * df;
            acc[2 * h + 1] += rd * rd;
          }
        }
      double fl = sqrt((double)((t1 - t0) * D)) * rel_floor;
      for (int64_t h = 0; h < H; h++) {
        double nr = sqrt(acc[2 * h + 1]), den = nr > fl ? nr : fl;
        double q = acc[2 * h] == 0 ? 0 : den > 0 ? sqrt(acc[2 * h]) / den : INFINITY;
        if (isnan(q)) q = INFINITY;
        double *o = &out[h * bins + k / per_bin];
        if (q > *o) *o = q;
      }
    }
  gdn_free(acc);
  return GDN_OK;
}
