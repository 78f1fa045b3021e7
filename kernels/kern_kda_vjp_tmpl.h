/* Template (see kern_real.h): kern_kda_recurrent_vjp in F (kern_kda_vjp.h
 * lists every step). */
#include "kern_rows_tmpl.h"

typedef struct KR(kvw) {
  int64_t Dk, Dv, G, K, nck;
  size_t st;                         /* G Dk Dv: one state set, head-major, rows */
  kreal *ck, *seg, *S, *hp, *q, *k, *a, *beta, *v, *kv, *vm, *dd, *dK, *dQ, *dx;
  /* the numerics (kern_kda_vjp.h, Modes): bf rounds the cotangents of the
   * bfloat16 rows; a pass mode mm takes every product through kern_mm
   * (kv_rhead_mm), with the splits sa, sb, the outer products' op (Dk x
   * Dv), the rows r1, r2 (Dk) and kern_gemm's workspace gws */
  const kern_num *num;
  kreal scale; /* the query scale (rows_scale), which bfloat16 takes back per value head */
  int bf;
  kern_matmul mm;
  KR(kern_split) sa, sb;
  kreal *op, *r1, *r2, *gws;
} KR(kvw);

/* The pass mode's scratch (0 for IEEE). */
static size_t KR(kvw_mm_elems)(const gdn_shape *s, kern_matmul mm) {
  if (mm == KERN_MATMUL_IEEE) return 0;
  const size_t x = (size_t)(s->Dk * s->Dv);
  return 2 * KR(kern_split_elems)(mm, x) + x + (size_t)(2 * s->Dk) + KR(kern_gemm_ws_elems)();
}

static size_t KR(kvw_elems)(const gdn_shape *s, int64_t K, kern_matmul mm) {
  const int64_t G = s->Hv / s->Hk, nck = (s->T + K - 1) / K;
  const size_t st = (size_t)(G * s->Dk * s->Dv);
  return st * (size_t)(nck + K + 1) + (size_t)(s->Dk * s->Dv) + (size_t)(6 * s->Dk) + (size_t)(2 * G * s->Dk) +
         (size_t)(4 * s->Dv) + (size_t)G + KR(kvw_mm_elems)(s, mm);
}

static void KR(kvw_carve)(KR(kvw) *w, const gdn_shape *s, int64_t K, const kern_num *num, kreal *p) {
  w->Dk = s->Dk, w->Dv = s->Dv, w->G = s->Hv / s->Hk, w->K = K, w->nck = (s->T + K - 1) / K;
  w->st = (size_t)(w->G * w->Dk * w->Dv);
  w->ck = p, p += w->st * (size_t)w->nck;
  w->seg = p, p += w->st * (size_t)K;
  w->S = p, p += w->st;
  w->hp = p, p += w->Dk * w->Dv;
  kreal **dk[] = {&w->q, &w->k, &w->dK, &w->dQ, &w->dx};
  for (int i = 0; i < 5; i++) *dk[i] = p, p += w->Dk;
  p += w->Dk; /* spare row */
  w->a = p, p += w->G * w->Dk;
  w->beta = p, p += w->G * w->Dk; /* G used */
  kreal **dv[] = {&w->v, &w->kv, &w->vm, &w->dd};
  for (int i = 0; i < 4; i++) *dv[i] = p, p += w->Dv;
  w->num = num;
  w->scale = KC(1);
  w->bf = KERN_REAL == 32 && num->dtype == GDN_DTYPE_BF16;
  w->mm = num->matmul;
  w->op = w->r1 = w->r2 = w->gws = NULL;
  if (w->mm == KERN_MATMUL_IEEE) return;
  const size_t x = (size_t)(w->Dk * w->Dv), se = KR(kern_split_elems)(w->mm, x);
  KR(kern_split_bind)(&w->sa, w->mm, p, x), p += se;
  KR(kern_split_bind)(&w->sb, w->mm, p, x), p += se;
  w->op = p, p += x;
  w->r1 = p, p += w->Dk;
  w->r2 = p, p += w->Dk;
  w->gws = p;
}

/* x rounded to bfloat16 when the compute dtype is bfloat16 (a cotangent at
 * the transpose of a bfloat16 -> float32 cast, or of a bfloat16 multiply);
 * x otherwise. */
static inline kreal KR(kv_rn)(const KR(kvw) *w, kreal x) {
#if KERN_REAL == 32
  return w->bf ? gdn_bf16_round(x) : x;
#else
  (void)w;
  return x;
#endif
}

/* c (m x n, ldc) = op(a) op(b) in the pass mode (kern_mm: both operands
 * split over their views' extents, kern_gemm.h's strides). */
static void KR(kv_mm)(KR(kvw) *w, int64_t m, int64_t n, int64_t k, const kreal *a, int64_t ars, int64_t acs,
                      const kreal *b, int64_t brs, int64_t bcs, kreal *c, int64_t ldc) {
  KR(kern_split_fill)(&w->sa, w->mm, a, (size_t)((m - 1) * ars + (k - 1) * acs + 1));
  KR(kern_split_fill)(&w->sb, w->mm, b, (size_t)((k - 1) * brs + (n - 1) * bcs + 1));
  KR(kern_mm)(w->mm, m, n, k, &w->sa, ars, acs, &w->sb, brs, bcs, c, ldc, w->gws);
}

/* q (when with_q), k, a, beta of token t for item (b, kh). */
static void KR(kv_rows)(KR(kvw) *w, const gdn_inputs *in, const gdn_chgate *gate, const kern_num *num, kreal scale,
                        int64_t b, int64_t kh, int64_t t, int with_q) {
  if (with_q) KR(rows_qk)(gdn_inputs_q(in, b, t, kh), w->Dk, in->l2norm_in_kernel, 1, scale, num, w->q);
  KR(rows_qk)(gdn_inputs_k(in, b, t, kh), w->Dk, in->l2norm_in_kernel, 0, scale, num, w->k);
  for (int64_t jj = 0; jj < w->G; jj++) {
    const int64_t j = kh * w->G + jj;
    const float *g = gdn_chgate_row(gate->g, &in->shape, b, t, j);
    for (int64_t i = 0; i < w->Dk; i++) w->a[jj * w->Dk + i] = KEXP(KR(rows_g)(g[i], num));
    w->beta[jj] = KR(rows_beta)(gdn_inputs_beta(in, b, t, j), num);
  }
}

/* h' = Diag(a) h into hp; kv = h'^T k; vm = v - kv (h one head's Dk x Dv). */
static void KR(kv_decay)(KR(kvw) *w, const kreal *h, const kreal *a) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  for (int64_t i = 0; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) w->hp[i * Dv + c] = a[i] * h[i * Dv + c];
  for (int64_t c = 0; c < Dv; c++) w->kv[c] = w->hp[c] * w->k[0];
  for (int64_t i = 1; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) w->kv[c] = w->kv[c] + w->hp[i * Dv + c] * w->k[i];
  for (int64_t c = 0; c < Dv; c++) w->vm[c] = w->v[c] - w->kv[c];
}

/* kv_decay in a pass mode: h' = Diag(a) h, kv = k^T h' (kern_mm, as
 * kern_kda_recurrent's), vm = v - kv. */
static void KR(kv_decay_mm)(KR(kvw) *w, const kreal *h, const kreal *a) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  for (int64_t i = 0; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) w->hp[i * Dv + c] = a[i] * h[i * Dv + c];
  KR(kv_mm)(w, 1, Dv, Dk, w->k, Dk, 1, w->hp, Dv, 1, w->kv, Dv);
  for (int64_t c = 0; c < Dv; c++) w->vm[c] = w->v[c] - w->kv[c];
}

/* Token t's state update on the G heads' set X (rows of k, a, beta loaded);
 * in a pass mode the products as kern_kda_recurrent forms them (k^T h' and
 * the outer product k delta^T by kern_mm, then the add). */
static void KR(kv_fstep)(KR(kvw) *w, const gdn_inputs *in, const kern_num *num, int64_t b, int64_t kh, int64_t t,
                         kreal *X) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  for (int64_t jj = 0; jj < w->G; jj++) {
    kreal *h = X + (size_t)(jj * Dk * Dv);
    KR(rows_v)(gdn_inputs_v(in, b, t, kh * w->G + jj), Dv, num, w->v);
    if (w->mm != KERN_MATMUL_IEEE) {
      KR(kv_decay_mm)(w, h, w->a + jj * Dk);
      for (int64_t c = 0; c < Dv; c++) w->vm[c] = w->beta[jj] * w->vm[c]; /* delta */
      KR(kv_mm)(w, Dk, Dv, 1, w->k, 1, 1, w->vm, Dv, 1, w->op, Dv);
      for (int64_t x = 0; x < Dk * Dv; x++) h[x] = w->hp[x] + w->op[x];
      continue;
    }
    KR(kv_decay)(w, h, w->a + jj * Dk);
    for (int64_t c = 0; c < Dv; c++) w->vm[c] = w->beta[jj] * w->vm[c]; /* delta */
    for (int64_t i = 0; i < Dk; i++)
      for (int64_t c = 0; c < Dv; c++) h[i * Dv + c] = w->hp[i * Dv + c] + w->k[i] * w->vm[c];
  }
}

/* The value head's share of dq and dk added into dQ, dK: as computed
 * (float32, float64); for bfloat16 the cotangent of the bfloat16 row rounded
 * (the cast's transpose), for q then times the scale and rounded again (q
 * scale is a bfloat16 multiply), per value head before the heads are summed
 * in float32, as kern_vjp.h's bfloat16 backward (the scale then not applied
 * again by kv_prep_back). */
static inline void KR(kv_add_dq)(KR(kvw) *w, int64_t i, kreal acc) {
  w->dQ[i] = w->dQ[i] + (w->bf ? KR(kv_rn)(w, KR(kv_rn)(w, acc) * w->scale) : acc);
}
static inline void KR(kv_add_dk)(KR(kvw) *w, int64_t i, kreal acc) { w->dK[i] = w->dK[i] + KR(kv_rn)(w, acc); }

/* The reverse step's tail: dg_d from S' (in S) and h', then S = Diag(a) S'. */
static void KR(kv_rgate)(KR(kvw) *w, kreal *S, const kreal *a, kern_kda_vjp_mutant mutant, double *dg) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  for (int64_t d = 0; d < Dk; d++) {
    kreal acc = 0;
    if (mutant == KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS)
      for (int64_t i = 0; i < Dk; i++) acc = acc + S[i * Dv + d % Dv] * w->hp[i * Dv + d % Dv];
    else
      for (int64_t c = 0; c < Dv; c++) acc = acc + S[d * Dv + c] * w->hp[d * Dv + c];
    dg[d] = (double)acc;
  }
  for (int64_t i = 0; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) S[i * Dv + c] = a[i] * S[i * Dv + c];
}

/* kv_rhead in a pass mode: every product of the step's transpose is a
 * kern_mm in the mode (JAX's transposed dots keep the forward dot's
 * precision): h_t = h' + k delta^T recomputed as the forward; dQ_h = h_t
 * do; S += q do^T (then the add); dd = k^T S; dbeta = sum_c dd_c vm_c;
 * dv = beta dd; dK_h = S delta - h' dv (two products, then the
 * difference); S' = S - k dv^T (the product, then the difference); the
 * elementwise steps (the decay's dg, S = a S') as in IEEE. */
static void KR(kv_rhead_mm)(KR(kvw) *w, const kreal *h, kreal *S, const kreal *a, kreal beta, const float *dot,
                            kern_kda_vjp_mutant mutant, double *dg, double *dbeta, double *dv) {
  const int64_t Dk = w->Dk, Dv = w->Dv;
  KR(kv_decay_mm)(w, h, a);
  kreal *delta = w->kv, *dO = w->v; /* kv and v are spent once vm is formed */
  for (int64_t c = 0; c < Dv; c++) delta[c] = beta * w->vm[c], dO[c] = (kreal)KIN(w->num, dot[c]);
  KR(kv_mm)(w, Dk, Dv, 1, w->k, 1, 1, delta, Dv, 1, w->op, Dv);
  for (int64_t x = 0; x < Dk * Dv; x++) w->op[x] = w->hp[x] + w->op[x]; /* h_t */
  KR(kv_mm)(w, 1, Dk, Dv, dO, Dv, 1, w->op, 1, Dv, w->r1, Dk);
  for (int64_t i = 0; i < Dk; i++) KR(kv_add_dq)(w, i, w->r1[i]);
  KR(kv_mm)(w, Dk, Dv, 1, w->q, 1, 1, dO, Dv, 1, w->op, Dv);
  for (int64_t x = 0; x < Dk * Dv; x++) S[x] = S[x] + w->op[x];
  KR(kv_mm)(w, 1, Dv, Dk, w->k, Dk, 1, S, Dv, 1, w->dd, Dv);
  kreal db = 0;
  for (int64_t c = 0; c < Dv; c++) {
    db = db + w->dd[c] * w->vm[c];
    w->dd[c] = beta * w->dd[c]; /* dv_c */
    dv[c] = (double)KR(kv_rn)(w, w->dd[c]);
  }
  *dbeta = (double)KR(kv_rn)(w, db);
  KR(kv_mm)(w, 1, Dk, Dv, delta, Dv, 1, S, 1, Dv, w->r1, Dk);
  KR(kv_mm)(w, 1, Dk, Dv, w->dd, Dv, 1, w->hp, 1, Dv, w->r2, Dk);
  for (int64_t i = 0; i < Dk; i++) KR(kv_add_dk)(w, i, w->r1[i] - w->r2[i]);
  KR(kv_mm)(w, Dk, Dv, 1, w->k, 1, 1, w->dd, Dv, 1, w->op, Dv);
  for (int64_t x = 0; x < Dk * Dv; x++) S[x] = S[x] - w->op[x]; /* S' */
  KR(kv_rgate)(w, S, a, mutant, dg);
}

/* One head's reverse step: h the state before t, S its adjoint (in: of h_t;
 * out: of h_{t-1}); dg, dbeta, dv the token's gradients of the head. */
static void KR(kv_rhead)(KR(kvw) *w, const kreal *h, kreal *S, const kreal *a, kreal beta, const float *dot,
                         kern_kda_vjp_mutant mutant, double *dg, double *dbeta, double *dv) {
  if (w->mm != KERN_MATMUL_IEEE) {
    KR(kv_rhead_mm)(w, h, S, a, beta, dot, mutant, dg, dbeta, dv);
    return;
  }
  const int64_t Dk = w->Dk, Dv = w->Dv;
  KR(kv_decay)(w, h, a);
  for (int64_t i = 0; i < Dk; i++) {
    kreal acc = 0;
    for (int64_t c = 0; c < Dv; c++) {
      const kreal ht = w->hp[i * Dv + c] + w->k[i] * (beta * w->vm[c]), doc = (kreal)KIN(w->num, dot[c]);
      acc = acc + ht * doc;
      S[i * Dv + c] = S[i * Dv + c] + w->q[i] * doc;
    }
    KR(kv_add_dq)(w, i, acc);
  }
  for (int64_t c = 0; c < Dv; c++) w->dd[c] = w->k[0] * S[c];
  for (int64_t i = 1; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) w->dd[c] = w->dd[c] + w->k[i] * S[i * Dv + c];
  kreal db = 0;
  for (int64_t c = 0; c < Dv; c++) {
    db = db + w->dd[c] * w->vm[c];
    w->dd[c] = beta * w->dd[c]; /* dv_c */
    dv[c] = (double)KR(kv_rn)(w, w->dd[c]);
  }
  *dbeta = (double)KR(kv_rn)(w, db);
  for (int64_t i = 0; i < Dk; i++) {
    kreal acc = 0;
    for (int64_t c = 0; c < Dv; c++) acc = acc + S[i * Dv + c] * (beta * w->vm[c]) - w->hp[i * Dv + c] * w->dd[c];
    KR(kv_add_dk)(w, i, acc);
  }
  for (int64_t i = 0; i < Dk; i++)
    for (int64_t c = 0; c < Dv; c++) S[i * Dv + c] = S[i * Dv + c] - w->k[i] * w->dd[c]; /* S' */
  KR(kv_rgate)(w, S, a, mutant, dg);
}

/* dx of one raw row x from the adjoint dX of its prepared row (scale s: 1
 * for k), rounded to the gradients' dtype into dst. */
static void KR(kv_prep_back)(KR(kvw) *w, const float *x, const kreal *dX, int l2norm, kreal s, const kern_num *num,
                             double *dst) {
  const int64_t Dk = w->Dk;
  if (!l2norm) {
    for (int64_t i = 0; i < Dk; i++) dst[i] = (double)(s * dX[i]);
    return;
  }
  for (int64_t i = 0; i < Dk; i++) w->dx[i] = (kreal)KIN(num, x[i]);
  kreal ss = w->dx[0] * w->dx[0], xd = w->dx[0] * dX[0];
  for (int64_t i = 1; i < Dk; i++) ss = ss + w->dx[i] * w->dx[i], xd = xd + w->dx[i] * dX[i];
  ss = ss + KC(1e-6);
  const kreal r = s * (KC(1) / KSQRT(ss)), f = xd / ss;
  for (int64_t i = 0; i < Dk; i++) dst[i] = (double)(r * (dX[i] - f * w->dx[i]));
}

static void KR(kv_item)(KR(kvw) *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const kern_num *num, kern_kda_vjp_mutant mutant, gdn_grads *out, int64_t b, int64_t kh) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, G = w->G;
  const kreal scale = KR(rows_scale)(in, num);
  w->scale = scale;
  kreal *h = w->seg; /* the forward sweep runs in seg[0] */
  for (int64_t jj = 0; jj < G; jj++) {
    const float *h0 = gdn_inputs_h0(in, b, kh * G + jj);
    const float *dht = ct->dht ? ct->dht + (b * s->Hv + kh * G + jj) * Dk * Dv : NULL;
    for (int64_t x = 0; x < Dk * Dv; x++) {
      h[jj * Dk * Dv + x] = h0 ? (kreal)KIN(num, h0[x]) : 0;
      w->S[jj * Dk * Dv + x] = dht ? (kreal)KIN(num, dht[x]) : 0; /* ftz: as an input */
    }
  }
  for (int64_t t = 0; t < s->T; t++) {
    if (t % w->K == 0) memcpy(w->ck + (size_t)(t / w->K) * w->st, h, w->st * sizeof(kreal));
    KR(kv_rows)(w, in, gate, num, scale, b, kh, t, 0);
    KR(kv_fstep)(w, in, num, b, kh, t, h);
  }
  for (int64_t m = w->nck - 1; m >= 0; m--) {
    const int64_t t0 = m * w->K, n = s->T - t0 < w->K ? s->T - t0 : w->K;
    memcpy(w->seg, w->ck + (size_t)m * w->st, w->st * sizeof(kreal));
    for (int64_t i = 0; i + 1 < n; i++) {
      memcpy(w->seg + (size_t)(i + 1) * w->st, w->seg + (size_t)i * w->st, w->st * sizeof(kreal));
      KR(kv_rows)(w, in, gate, num, scale, b, kh, t0 + i, 0);
      KR(kv_fstep)(w, in, num, b, kh, t0 + i, w->seg + (size_t)(i + 1) * w->st);
    }
    for (int64_t t = t0 + n - 1; t >= t0; t--) {
      KR(kv_rows)(w, in, gate, num, scale, b, kh, t, 1);
      for (int64_t i = 0; i < Dk; i++) w->dK[i] = 0, w->dQ[i] = 0;
      for (int64_t jj = 0; jj < G; jj++) {
        const int64_t j = kh * G + jj, gi = (b * s->T + t) * s->Hv + j;
        KR(rows_v)(gdn_inputs_v(in, b, t, j), Dv, num, w->v);
        KR(kv_rhead)(w, w->seg + (size_t)(t - t0) * w->st + (size_t)(jj * Dk * Dv), w->S + (size_t)(jj * Dk * Dv),
                     w->a + jj * Dk, w->beta[jj], ct->d_o + gi * Dv, mutant, out->dg + gi * Dk, out->dbeta + gi,
                     out->dv + gi * Dv);
      }
      const int64_t qk = ((b * s->T + t) * s->Hk + kh) * Dk;
      KR(kv_prep_back)(w, gdn_inputs_k(in, b, t, kh), w->dK, in->l2norm_in_kernel, KC(1), num, out->dk + qk);
      KR(kv_prep_back)(w, gdn_inputs_q(in, b, t, kh), w->dQ, in->l2norm_in_kernel, w->bf ? KC(1) : scale, num,
                       out->dq + qk);
    }
  }
  for (int64_t jj = 0; jj < G; jj++) {
    double *dh0 = out->dh0 + (b * s->Hv + kh * G + jj) * Dk * Dv;
    for (int64_t x = 0; x < Dk * Dv; x++) dh0[x] = (double)w->S[jj * Dk * Dv + x];
  }
}

static int KR(kv_run)(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_num *num,
                      kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t items = s->B * s->Hk;
  int64_t K = (int64_t)ceil(sqrt((double)s->T));
  if (K < 1) K = 1;
  const int nt = gdn_threads_for(items);
  const size_t per = KR(kvw_elems)(s, K, num->matmul);
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), "kern_kda_recurrent_vjp per-thread scratch", e);
  if (!mem) return gdn_error_prefix(e, "kern_kda_recurrent_vjp: "), GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(kvw) w;
    KR(kvw_carve)(&w, s, K, num, mem + (size_t)omp_get_thread_num() * per);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; it++) KR(kv_item)(&w, in, gate, ct, num, mutant, out, it / s->Hk, it % s->Hk);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
