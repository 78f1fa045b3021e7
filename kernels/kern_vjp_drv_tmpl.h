/* Template (see kern_real.h): the items of kern_scan_vjp and
 * kern_affine_prefix_vjp (kern_vjp.h) and their thread driver. */
#include "kern_vjp_tmpl.h"

typedef struct KR(vjd) {
  KR(vjw) w;
  kreal *y, *dy;           /* Dk */
  kreal *h, *dH, *dh, *h0, *g0; /* Dk x Dv (g0: dh0 being summed) */
  kreal *hs;               /* nmax x Dk Dv */
  kreal *fsA, *fsB;        /* nmax x Dk^2, Dk Dv (affine) */
  kreal *An, *Bn, *dA, *dB, *tA, *tB; /* Dk^2 / Dk Dv (affine) */
  kreal *Al, *Bl, *Ac, *Bc, *dAc, *dBc; /* D x Dk^2 / Dk Dv (affine) */
  kreal *Hin, *dHin;       /* D x Dk Dv: incoming states, their adjoints */
  kreal *uA, *uB;          /* nops x Dk^2 / Dk Dv: the prefix's undo log */
} KR(vjd);

typedef struct KR(vjob) {
  const gdn_inputs *in;
  const gdn_cotangents *ct;
  const kern_config *cfg;
  const kern_num *num;
  gdn_grads *out;
  double *dg_terms; /* NULL, or dg's root sums of squared terms per (b, t, value head): kern_scan_vjp_terms */
  int64_t D, nmax;
  int64_t nops, *ops; /* the prefix schedule: (l, e) per composition, in order */
  kreal *mem;
  size_t per;
} KR(vjob);

/* Per-thread elements: the chunk scratch, then the buffers above. */
KTMPL size_t KR(vjd_elems)(const gdn_shape *s, int64_t C, int64_t D, int64_t nmax, int64_t nops,
                            kern_matmul mode) {
  const size_t kv = KR(rows_pad)((size_t)(s->Dk * s->Dv)), kk = KR(rows_pad)((size_t)(s->Dk * s->Dk));
  size_t n = KR(vjw_elems)(C, s->Dk, s->Dv, mode);
  n = kern_size_add(n, kern_size_mul(2, KR(rows_pad)((size_t)s->Dk)));
  n = kern_size_add(n, kern_size_mul(5, kv));
  n = kern_size_add(n, kern_size_mul((size_t)nmax, kv));
  if (D < 2) return n;
  n = kern_size_add(n, kern_size_mul((size_t)nmax, kern_size_add(kk, kv)));
  n = kern_size_add(n, kern_size_mul(3, kern_size_add(kk, kv)));
  n = kern_size_add(n, kern_size_mul(kern_size_mul(2, (size_t)D), kv));
  n = kern_size_add(n, kern_size_mul((size_t)nops, kern_size_add(kk, kv)));
  return kern_size_add(n, kern_size_mul(kern_size_mul(3, (size_t)D), kern_size_add(kk, kv)));
}

KTMPL void KR(vjd_bind)(KR(vjd) *d, const KR(vjob) *j, int tid) {
  const gdn_shape *s = &j->in->shape;
  const size_t kv = (size_t)(s->Dk * s->Dv), kk = (size_t)(s->Dk * s->Dk);
  kreal *p = j->mem + (size_t)tid * j->per;
  KR(vjw_bind)(&d->w, p, j->in, j->ct, j->num, j->cfg->chunk);
  d->w.terms = j->dg_terms != NULL;
  p += KR(vjw_elems)(j->cfg->chunk, s->Dk, s->Dv, j->num->matmul);
  d->y = KR(rows_carve)(&p, (size_t)s->Dk);
  d->dy = KR(rows_carve)(&p, (size_t)s->Dk);
  kreal **v4[] = {&d->h, &d->dH, &d->dh, &d->h0, &d->g0};
  for (int i = 0; i < 5; i++) *v4[i] = KR(rows_carve)(&p, kv);
  d->hs = p, p += KR(rows_pad)(kv) * (size_t)j->nmax;
  if (j->D < 2) return;
  d->fsA = p, p += KR(rows_pad)(kk) * (size_t)j->nmax;
  d->fsB = p, p += KR(rows_pad)(kv) * (size_t)j->nmax;
  kreal **a3[] = {&d->An, &d->dA, &d->tA}, **b3[] = {&d->Bn, &d->dB, &d->tB};
  for (int i = 0; i < 3; i++) *a3[i] = KR(rows_carve)(&p, kk), *b3[i] = KR(rows_carve)(&p, kv);
  kreal **ad[] = {&d->Al, &d->Ac, &d->dAc}, **bd[] = {&d->Bl, &d->Bc, &d->dBc};
  for (int i = 0; i < 3; i++) *ad[i] = p, p += KR(rows_pad)(kk) * (size_t)j->D;
  for (int i = 0; i < 3; i++) *bd[i] = p, p += KR(rows_pad)(kv) * (size_t)j->D;
  d->Hin = p, p += KR(rows_pad)(kv) * (size_t)j->D;
  d->dHin = p, p += KR(rows_pad)(kv) * (size_t)j->D;
  d->uA = p, p += KR(rows_pad)(kk) * (size_t)j->nops;
  d->uB = p, p += KR(rows_pad)(kv) * (size_t)j->nops;
}

/* x (Dk x Dv) = the head's h0 or dht as F (zeros when absent). */
KTMPL void KR(vj_load_state)(const KR(vjob) *j, const float *src, kreal *x) {
  const size_t n = (size_t)(j->in->shape.Dk * j->in->shape.Dv);
  for (size_t i = 0; i < n; i++) x[i] = src ? (kreal)KIN(j->num, src[i]) : 0;
}

KTMPL const float *KR(vj_dht)(const KR(vjob) *j, int64_t b, int64_t hv) {
  const gdn_shape *s = &j->in->shape;
  return j->ct->dht ? j->ct->dht + (b * s->Hv + hv) * s->Dk * s->Dv : NULL;
}

KTMPL void KR(vj_store_dh0)(const KR(vjob) *j, int64_t b, int64_t hv, const kreal *x) {
  const gdn_shape *s = &j->in->shape;
  double *o = j->out->dh0 + (b * s->Hv + hv) * s->Dk * s->Dv;
  for (int64_t i = 0; i < s->Dk * s->Dv; i++) o[i] = x[i];
}

/* Where the chunks lie -- the one place the backward reads the layout from:
 * device r of D (D = 1 for the scan) holds kern_affine_piece's piece of the
 * sequence in cfg->shard's mode, the forward's own rule: vj_nchunks chunks,
 * its i-th the tokens [t0, t0 + rows) (rows < C: the rest of the chunk is
 * zero padding, g = 0, k = v = 0, through which the state and its adjoint
 * pass unchanged).  CHUNKS: the padded sequence's chunks split by numpy's
 * array_split rule, padding only at the end of the sequence; TOKENS: T/D
 * tokens per device chunked from the device's first token, padding at every
 * seam when C does not divide T/D. */
KTMPL void KR(vj_piece)(const KR(vjob) *j, int64_t r, kern_piece *p) {
  kern_config c = *j->cfg;
  c.devices = j->D; /* the scan is the one-device piece in both modes */
  kern_affine_piece(&c, j->in->shape.T, r, p);
}
KTMPL int64_t KR(vj_nchunks)(const KR(vjob) *j, int64_t r) {
  kern_piece p;
  KR(vj_piece)(j, r, &p);
  return p.count;
}
KTMPL void KR(vj_rows)(const KR(vjob) *j, int64_t r, int64_t i, int64_t *t0, int64_t *rows) {
  kern_piece p;
  KR(vj_piece)(j, r, &p);
  const int64_t C = j->cfg->chunk;
  *t0 = p.base + (p.first + i) * C;
  *rows = p.t1 - *t0 < C ? p.t1 - *t0 : C;
}
/* vj_prep of device r's i-th chunk. */
KTMPL void KR(vj_prep_chunk)(const KR(vjob) *j, KR(vjw) *w, int64_t r, int64_t i) {
  int64_t t0, rows;
  KR(vj_rows)(j, r, i, &t0, &rows);
  KR(vj_prep)(w, t0, rows);
}

#undef VJ_SWAP
#define VJ_SWAP(a, b)                                                                             \
  do {                                                                                           \
    kreal *t_ = (a);                                                                             \
    (a) = (b);                                                                                   \
    (b) = t_;                                                                                    \
  } while (0)

/* One value head through kern_scan_vjp. */
KTMPL void KR(vj_scan_head)(const KR(vjob) *j, KR(vjd) *d, int64_t b, int64_t hv, int first) {
  KR(vjw) *w = &d->w;
  const size_t kv = (size_t)(w->Dk * w->Dv), kvp = KR(rows_pad)(kv);
  const int64_t N = KR(vj_nchunks)(j, 0);
  KR(vj_head)(w, b, hv);
  KR(vj_load_state)(j, gdn_inputs_h0(j->in, b, hv), d->h);
  for (int64_t n = 0; n < N; n++) {
    memcpy(d->hs + (size_t)n * kvp, d->h, kv * sizeof(kreal));
    KR(vj_prep_chunk)(j, w, 0, n);
    KR(vj_body)(w, d->h, d->h);
  }
  kreal *dH = d->dH, *dh = d->dh;
  KR(vj_load_state)(j, KR(vj_dht)(j, b, hv), dH);
  for (int64_t n = N - 1; n >= 0; n--) {
    KR(vj_prep_chunk)(j, w, 0, n);
    KR(vj_back_begin)(w);
    KR(vj_load_do)(w);
    KR(vj_back_body)(w, d->hs + (size_t)n * kvp, dH, dh);
    KR(vj_back_prep)(w);
    KR(vj_store)(w, j->out, first);
    if (j->dg_terms)
      for (int64_t i = 0; i < w->rows; i++)
        j->dg_terms[(b * j->in->shape.T + w->t0 + i) * j->in->shape.Hv + hv] = sqrt((double)w->dGa[i]);
    VJ_SWAP(dH, dh);
  }
  KR(vj_store_dh0)(j, b, hv, dH);
}

/* (A, B) = (An A, An B + Bn) of the stored pair i into pair i + 1. */
KTMPL void KR(vj_fold_step)(KR(vjw) *w, const kreal *An, const kreal *Bn, const kreal *A,
                            const kreal *B, kreal *A2, kreal *B2) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  VJ_MM(w, KERN_GEMM_SET, Dk, Dk, Dk, An, Dk, 1, A, Dk, 1, A2, Dk);
  memcpy(B2, Bn, (size_t)(Dk * Dv) * sizeof(kreal));
  VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, Dk, An, Dk, 1, B, Dv, 1, B2, Dv);
}

KTMPL void KR(vj_identity)(kreal *A, kreal *B, int64_t Dk, int64_t Dv) {
  for (int64_t r = 0; r < Dk; r++)
    for (int64_t c = 0; c < Dk; c++) A[r * Dk + c] = r == c ? 1 : 0;
  memset(B, 0, (size_t)(Dk * Dv) * sizeof(kreal));
}

/* Device r's fold: into (A, B) = (A_loc, B_loc) when !fs; when fs, only
 * the pair before each of its m chunks, into fsA / fsB (stride kkp / kvp). */
KTMPL void KR(vj_fold)(const KR(vjob) *j, KR(vjd) *d, int64_t r, kreal *A, kreal *B, int fs) {
  KR(vjw) *w = &d->w;
  const int64_t Dk = w->Dk, Dv = w->Dv;
  const size_t kk = (size_t)(Dk * Dk), kv = (size_t)(Dk * Dv);
  const size_t kkp = KR(rows_pad)(kk), kvp = KR(rows_pad)(kv);
  const int64_t m = KR(vj_nchunks)(j, r);
  kreal *pa = d->tA, *pb = d->tB, *na = A, *nb = B;
  KR(vj_identity)(pa, pb, Dk, Dv);
  for (int64_t i = 0; i < m; i++) {
    if (fs) {
      if (i == 0) {
        memcpy(d->fsA, pa, kk * sizeof(kreal));
        memcpy(d->fsB, pb, kv * sizeof(kreal));
      }
      if (i == m - 1) return;
      pa = d->fsA + (size_t)i * kkp, pb = d->fsB + (size_t)i * kvp;
      na = d->fsA + (size_t)(i + 1) * kkp, nb = d->fsB + (size_t)(i + 1) * kvp;
    }
    KR(vj_prep_chunk)(j, w, r, i);
    KR(vj_map)(w, d->An, d->Bn);
    KR(vj_fold_step)(w, d->An, d->Bn, pa, pb, na, nb);
    if (!fs) {
      memcpy(d->tA, A, kk * sizeof(kreal));
      memcpy(d->tB, B, kv * sizeof(kreal));
      pa = d->tA, pb = d->tB;
    }
  }
}

/* Device r's chunks backwards (kern_vjp.h): the replay from h (d->h) with a
 * zero adjoint at its end, the fold with the adjoint (dA, dB) of its
 * (A_loc, B_loc) -- both consumed.  Leaves dh_in in *dHp. */
KTMPL void KR(vj_device_back)(const KR(vjob) *j, KR(vjd) *d, int64_t r, kreal *dA, kreal *dB,
                              int first, kreal **dHp) {
  KR(vjw) *w = &d->w;
  const int64_t Dk = w->Dk, Dv = w->Dv, m = KR(vj_nchunks)(j, r);
  const size_t kv = (size_t)(Dk * Dv), kvp = KR(rows_pad)(kv), kkp = KR(rows_pad)((size_t)(Dk * Dk));
  for (int64_t i = 0; i < m; i++) {
    memcpy(d->hs + (size_t)i * kvp, d->h, kv * sizeof(kreal));
    KR(vj_prep_chunk)(j, w, r, i);
    KR(vj_body)(w, d->h, d->h);
  }
  KR(vj_fold)(j, d, r, NULL, NULL, 1);
  kreal *dH = d->dH, *dh = d->dh, *tA = d->tA, *tB = d->tB;
  memset(dH, 0, kv * sizeof(kreal));
  for (int64_t i = m - 1; i >= 0; i--) {
    KR(vj_prep_chunk)(j, w, r, i);
    KR(vj_back_begin)(w);
    KR(vj_load_do)(w);
    KR(vj_back_body)(w, d->hs + (size_t)i * kvp, dH, dh);
    KR(vj_map)(w, d->An, d->Bn);
    VJ_MM(w, KERN_GEMM_SET, Dk, Dk, Dk, dA, Dk, 1, d->fsA + (size_t)i * kkp, 1, Dk, tA, Dk);
    VJ_MM(w, KERN_GEMM_PLUS, Dk, Dk, Dv, dB, Dv, 1, d->fsB + (size_t)i * kvp, 1, Dv, tA, Dk);
    KR(vj_back_map)(w, tA, dB);
    VJ_MM(w, KERN_GEMM_SET, Dk, Dk, Dk, d->An, 1, Dk, dA, Dk, 1, tA, Dk);
    VJ_MM(w, KERN_GEMM_SET, Dk, Dv, Dk, d->An, 1, Dk, dB, Dv, 1, tB, Dv);
    VJ_SWAP(dA, tA);
    VJ_SWAP(dB, tB);
    KR(vj_back_prep)(w);
    KR(vj_store)(w, j->out, first);
    VJ_SWAP(dH, dh);
  }
  *dHp = dH;
}

/* The prefix forward: (Ac, Bc) from (Al, Bl) by the schedule's operations
 * x[l] = x[l] o x[e] in their order, each old x[l] saved in the undo log. */
KTMPL void KR(vj_prefix_fwd)(const KR(vjob) *j, KR(vjd) *d) {
  KR(vjw) *w = &d->w;
  const int64_t Dk = w->Dk, Dv = w->Dv, D = j->D;
  const size_t kk = (size_t)(Dk * Dk), kv = (size_t)(Dk * Dv);
  const size_t kkp = KR(rows_pad)(kk), kvp = KR(rows_pad)(kv);
  memcpy(d->Ac, d->Al, (size_t)D * kkp * sizeof(kreal));
  memcpy(d->Bc, d->Bl, (size_t)D * kvp * sizeof(kreal));
  for (int64_t i = 0; i < j->nops; i++) {
    const int64_t l = j->ops[2 * i], e = j->ops[2 * i + 1];
    kreal *Al = d->Ac + l * kkp, *Bl = d->Bc + l * kvp;
    memcpy(d->uA + (size_t)i * kkp, Al, kk * sizeof(kreal));
    memcpy(d->uB + (size_t)i * kvp, Bl, kv * sizeof(kreal));
    KR(vj_fold_step)(w, d->uA + (size_t)i * kkp, d->uB + (size_t)i * kvp, d->Ac + e * kkp,
                     d->Bc + e * kvp, Al, Bl);
  }
}

/* The prefix backward: the operations in reverse, each undone after its
 * adjoint is taken.  With (A', B') = (A_l A_e, A_l B_e + B_l):
 * dA_e += A_l^T dA', dB_e += A_l^T dB', dA_l = dA' A_e^T + dB' B_e^T,
 * dB_l = dB'.  Leaves (dAc, dBc) the adjoints of the device folds and
 * (Ac, Bc) = (Al, Bl) again. */
KTMPL void KR(vj_prefix_back)(const KR(vjob) *j, KR(vjd) *d) {
  KR(vjw) *w = &d->w;
  const int64_t Dk = w->Dk, Dv = w->Dv;
  const size_t kk = (size_t)(Dk * Dk), kv = (size_t)(Dk * Dv);
  const size_t kkp = KR(rows_pad)(kk), kvp = KR(rows_pad)(kv);
  for (int64_t i = j->nops - 1; i >= 0; i--) {
    const int64_t l = j->ops[2 * i], e = j->ops[2 * i + 1];
    const kreal *Aold = d->uA + (size_t)i * kkp, *Ae = d->Ac + e * kkp, *Be = d->Bc + e * kvp;
    kreal *dAl = d->dAc + l * kkp, *dBl = d->dBc + l * kvp;
    VJ_MM(w, KERN_GEMM_PLUS, Dk, Dk, Dk, Aold, 1, Dk, dAl, Dk, 1, d->dAc + e * kkp, Dk);
    VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, Dk, Aold, 1, Dk, dBl, Dv, 1, d->dBc + e * kvp, Dv);
    VJ_MM(w, KERN_GEMM_SET, Dk, Dk, Dk, dAl, Dk, 1, Ae, 1, Dk, d->tA, Dk);
    VJ_MM(w, KERN_GEMM_PLUS, Dk, Dk, Dv, dBl, Dv, 1, Be, 1, Dv, d->tA, Dk);
    memcpy(dAl, d->tA, kk * sizeof(kreal));
    memcpy(d->Ac + l * kkp, Aold, kk * sizeof(kreal));
    memcpy(d->Bc + l * kvp, d->uB + (size_t)i * kvp, kv * sizeof(kreal));
  }
}

/* dh_in of device r: its replay from Hin[r] taken backwards (only dh) from
 * a zero adjoint at its end, into dHin[r]. */
KTMPL void KR(vj_replay_dh)(const KR(vjob) *j, KR(vjd) *d, int64_t r) {
  KR(vjw) *w = &d->w;
  const size_t kv = (size_t)(w->Dk * w->Dv), kvp = KR(rows_pad)(kv);
  const int64_t m = KR(vj_nchunks)(j, r);
  memcpy(d->h, d->Hin + r * kvp, kv * sizeof(kreal));
  for (int64_t i = 0; i < m; i++) {
    memcpy(d->hs + (size_t)i * kvp, d->h, kv * sizeof(kreal));
    KR(vj_prep_chunk)(j, w, r, i);
    KR(vj_body)(w, d->h, d->h);
  }
  kreal *dH = d->dH, *dh = d->dh;
  memset(dH, 0, kv * sizeof(kreal));
  for (int64_t i = m - 1; i >= 0; i--) {
    KR(vj_prep_chunk)(j, w, r, i);
    KR(vj_load_do)(w);
    KR(vj_back_dh)(w, dH, dh);
    VJ_SWAP(dH, dh);
  }
  memcpy(d->dHin + r * kvp, dH, kv * sizeof(kreal));
}

/* One value head through kern_affine_prefix_vjp, D >= 2 (kern_vjp.h): the
 * folds; the prefix (schedule's operations, undo log); every device's
 * incoming state; every device's dh_in (replay backwards); the adjoints of
 * the inclusive prefix (dht into A_cum[D-1], B_cum[D-1]; then for r = D-1
 * .. 1, dh_in[r] into A_cum[r-1], B_cum[r-1] and dh0); the prefix
 * backwards; then each device's chunks backwards (replay and fold). */
KTMPL void KR(vj_affine_head)(const KR(vjob) *j, KR(vjd) *d, int64_t b, int64_t hv, int first) {
  KR(vjw) *w = &d->w;
  const int64_t Dk = w->Dk, Dv = w->Dv, D = j->D;
  const size_t kk = (size_t)(Dk * Dk), kv = (size_t)(Dk * Dv);
  const size_t kkp = KR(rows_pad)(kk), kvp = KR(rows_pad)(kv);
  KR(vj_head)(w, b, hv);
  const float *h0p = gdn_inputs_h0(j->in, b, hv), *dhtp = KR(vj_dht)(j, b, hv);
  KR(vj_load_state)(j, h0p, d->h0);
  for (int64_t r = 0; r < D; r++) KR(vj_fold)(j, d, r, d->Al + r * kkp, d->Bl + r * kvp, 0);
  KR(vj_prefix_fwd)(j, d);
  for (int64_t r = 0; r < D; r++) { /* h_in = A_cum[r-1] h0 + B_cum[r-1] */
    kreal *hin = d->Hin + r * kvp;
    if (r == 0) {
      memcpy(hin, d->h0, kv * sizeof(kreal));
    } else {
      memcpy(hin, d->Bc + (r - 1) * kvp, kv * sizeof(kreal));
      if (h0p) VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, Dk, d->Ac + (r - 1) * kkp, Dk, 1, d->h0, Dv, 1, hin, Dv);
    }
    KR(vj_replay_dh)(j, d, r);
  }
  memset(d->dAc, 0, (size_t)D * kkp * sizeof(kreal));
  memset(d->dBc, 0, (size_t)D * kvp * sizeof(kreal));
  memset(d->g0, 0, kv * sizeof(kreal));
  if (dhtp) { /* ht = A_cum[D-1] h0 + B_cum[D-1] */
    kreal *dht = d->dH;
    KR(vj_load_state)(j, dhtp, dht);
    memcpy(d->dBc + (D - 1) * kvp, dht, kv * sizeof(kreal));
    if (h0p) VJ_MM(w, KERN_GEMM_SET, Dk, Dk, Dv, dht, Dv, 1, d->h0, 1, Dv, d->dAc + (D - 1) * kkp, Dk);
    VJ_MM(w, KERN_GEMM_SET, Dk, Dv, Dk, d->Ac + (D - 1) * kkp, 1, Dk, dht, Dv, 1, d->g0, Dv);
  }
  /* grad-seam-stopped (kern_mutant.h): the carried states are constants
   * to the backward, so no dh_in of a device r >= 1 reaches the prefix */
  const int64_t r_stop = j->cfg->mutant == KERN_MUTANT_GRAD_SEAM_STOPPED ? D : 1;
  for (int64_t r = D - 1; r >= r_stop; r--) {
    const kreal *dhin = d->dHin + r * kvp;
    kreal *dAp = d->dAc + (r - 1) * kkp, *dBp = d->dBc + (r - 1) * kvp;
    if (h0p) VJ_MM(w, KERN_GEMM_PLUS, Dk, Dk, Dv, dhin, Dv, 1, d->h0, 1, Dv, dAp, Dk);
    for (size_t i = 0; i < kv; i++) dBp[i] = dBp[i] + dhin[i];
    VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, Dk, d->Ac + (r - 1) * kkp, 1, Dk, dhin, Dv, 1, d->g0, Dv);
  }
  for (size_t i = 0; i < kv; i++) d->g0[i] = d->g0[i] + d->dHin[i];
  KR(vj_prefix_back)(j, d);
  for (int64_t r = D - 1; r >= 0; r--) {
    memcpy(d->h, d->Hin + r * kvp, kv * sizeof(kreal));
    memcpy(d->dA, d->dAc + r * kkp, kk * sizeof(kreal));
    memcpy(d->dB, d->dBc + r * kvp, kv * sizeof(kreal));
    kreal *dhin;
    KR(vj_device_back)(j, d, r, d->dA, d->dB, first, &dhin);
  }
  KR(vj_store_dh0)(j, b, hv, d->g0);
}

static __attribute__((noinline)) void KR(vj_thread)(const KR(vjob) *j) {
  const gdn_shape *s = &j->in->shape;
  const int tid = omp_get_thread_num();
  KR(vjd) d;
  KR(vjd_bind)(&d, j, tid);
  const int64_t G = s->Hv / s->Hk;
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < s->B * s->Hk; it++) {
    const int64_t b = it / s->Hk, kh = it % s->Hk;
    for (int64_t jj = 0; jj < G; jj++) {
      if (j->D < 2)
        KR(vj_scan_head)(j, &d, b, kh * G + jj, jj == 0);
      else
        KR(vj_affine_head)(j, &d, b, kh * G + jj, jj == 0);
    }
    KR(vj_rows_back)(j->in, j->num, d.w.scale, j->out, b, kh, d.y, d.dy);
  }
}

static int KR(vj_run)(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                      const kern_num *num, int64_t D, int64_t nops, int64_t *ops, gdn_grads *out,
                      double *dg_terms, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t items = s->B * s->Hk;
  int nt = gdn_threads_get();
  if (nt < 1) nt = 1;
  if (items < nt) nt = (int)items;
  KR(vjob) j = {in, ct, cfg, num, out, dg_terms, D, 0, nops, ops, NULL, 0};
  for (int64_t r = 0; r < D; r++) { /* the most chunks one device holds */
    const int64_t m = KR(vj_nchunks)(&j, r);
    j.nmax = m > j.nmax ? m : j.nmax;
  }
  j.per = KR(vjd_elems)(s, cfg->chunk, D, j.nmax, nops, num->matmul);
  j.mem = gdn_calloc((size_t)nt, kern_size_mul(j.per, sizeof(kreal)), "kern vjp per-thread scratch", e);
  if (!j.mem) return e ? e->code : GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(vj_thread)(&j);
    kern_fpenv_leave(num, env);
  }
  gdn_free(j.mem);
  return GDN_OK;
}
