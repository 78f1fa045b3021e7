/* Template (see kern_real.h): one chunk of the chunked algorithm, forward
 * (recomputed) and backward, in F -- the pieces of kern_scan_vjp and
 * kern_affine_prefix_vjp (kern_vjp.h).
 *
 * Forward, recomputed from the inputs, with the forward kernels' IEEE
 * rounding points (kern_chunk_tmpl.h: rows as kern_rows_tmpl.h; G by a left
 * to right cumsum; eG = exp(G), eGl = exp(G_last - G), eGlast = exp(G_last),
 * dec_ij = exp(G_i - G_j) for i > j; kb = k beta; KK = kb K^T; S = KK .* dec
 * strictly below the diagonal; A = (I + S)^-1 by forward substitution with
 * fma; vb = v beta; U = A vb; kbg = kb eG; W = A kbg; qg = q eG; QK = q K^T;
 * attn = QK .* dec below, QK on the diagonal; Kt = k eGl; body vnew = U - W h,
 * h' = h eGlast + Kt^T vnew; map A_n = eGlast I - Kt^T W, B_n = Kt^T U).
 *
 * Backward of one chunk, the adjoints written d.  Every product (forward and
 * backward; not the solve, which is forward substitution with fma in every
 * mode and under either --solve: the recomputed forward is the
 * substitution's, and a run with the xla-expander forward is judged against
 * the oracle, not bitwise against this backward) is
 * kern_mm in the config's matmul mode: IEEE = kern_gemm (SET: first product
 * then fma, p ascending); the bf16 pass modes split both operands for each
 * product (kern_mm.h; the same values as the forward's splits made once) --
 * JAX's transposed dots keep the forward dot's precision.  "+=" of a
 * product is the product formed completely, then added once (kern_mm_plus:
 * as XLA adds the cotangents of a value used twice, add(dot, dot)); elementwise steps are one rounding each; a "sum_d"
 * is a dot along the row, first product then fma, d ascending.  Accumulators
 * start at zero (0 + x is exact).  In this order:
 *   body (given dO, the adjoint dH of h', and h):
 *     vnew = U - W h (recomputed);  dvnew = attn^T dO;  dvnew += Kt dH;
 *     dattn += dO vnew^T;  dqg += dO h^T;  dKt += vnew dH^T;
 *     deGlast += sum_ij dH_ij h_ij (fma, row-major order);
 *     dU += dvnew;  dW -= dvnew h^T;
 *     dh = dH eGlast;  dh = dh + qg^T dO;  dh = dh - W^T dvnew.
 *   map (given dA_n, dB_n):  deGlast += trace dA_n (i ascending);
 *     dKt -= W dA_n^T;  dKt += U dB_n^T;  dW -= Kt dA_n;  dU += Kt dB_n.
 *   prep:
 *     dQK = dattn .* dec below, dattn on the diagonal, 0 above;
 *     ddec = dattn .* QK below;
 *     dq = dQK K;  dq = dq + dqg .* eG;  deG_i = sum_d dqg_id q_id;
 *     dk = dQK^T q;  dk = dk + dKt .* eGl;  deGl_i = sum_d dKt_id k_id;
 *     dA = dU vb^T;  dA += dW kbg^T;  masked to the strictly lower part
 *       (A's diagonal and upper part are constants; the terms they would
 *       contribute to the strictly lower dS are exact zeros anyway);
 *     dvb = A^T dU;  dkbg = A^T dW;
 *     dS = -((A^T dA) A^T), strictly lower (d(I+S)^-1 = -A dS A);
 *     dkb = dkbg .* eG;  deG_i += sum_d dkbg_id kb_id;
 *     dKK = dS .* dec;  ddec += dS .* KK (strictly lower);
 *     dkb += dKK K;  dk += dKK^T kb;
 *     dv = dvb .* beta;  dbeta_i = sum_d dvb_id v_id;
 *     dk = dk + dkb .* beta;  dbeta_i += sum_d dkb_id k_id;
 *     x_ij = ddec_ij dec_ij;  dG_i = deG_i eG_i;  dG_i += sum_{j<i} x_ij
 *       (j ascending, one sum then one add);  dG_j -= sum_{i>j} x_ij (i
 *       ascending);  dG_i -= deGl_i eGl_i;  dG_last += sum_i deGl_i eGl_i;
 *       dG_last += deGlast eGlast;
 *     dg_i = sum_{m >= i} dG_m (from the last row backwards: cumsum's
 *       transpose).
 * The rows of the preparation (L2 norm, scale) are taken backwards once per
 * token after the value heads of a key head are summed (kern_vjp.h).
 * Padded rows (t >= T) take part as zeros, as in the forward; their
 * gradients are dropped.
 */
#include "kern_rows_tmpl.h"
#include "kern_mm.h"

#undef KGEMM
#define KGEMM KR(kern_gemm)

typedef struct KR(vjw) {
  const gdn_inputs *in;
  const gdn_cotangents *ct;
  const kern_num *num;
  int64_t C, Dk, Dv;
  kreal scale;
  int64_t b, hv, hk;
  int64_t t0, rows;                            /* the chunk: tokens [t0, t0 + rows), rows <= C */
  /* forward of the chunk */
  kreal *q, *k, *kb, *kbg, *W, *qg, *Kt;       /* C x Dk */
  kreal *v, *vb, *U, *vnew;                    /* C x Dv */
  kreal *dec, *KK, *A, *QK, *attn;             /* C x C (S lives in dS's slot before use) */
  kreal *g, *beta, *G, *eG, *eGl;              /* C */
  kreal eGlast;
  /* backward accumulators and scratch */
  kreal *dattn, *dA, *dS, *tcc;                /* C x C */
  kreal *dqg, *dKt, *dW, *dq, *dk, *dkb, *dkbg, *tck; /* C x Dk */
  kreal *dU, *dvnew, *dO, *dvb, *tcv;          /* C x Dv */
  kreal *deG, *deGl, *dG, *dbeta;              /* C */
  kreal *dGa;                                  /* C: dg's sums of squared terms (with terms) */
  kreal deGlast;
  kreal *tkv, *tkk;                            /* Dk x Dv, Dk x Dk */
  kreal *gws;                                  /* kern_gemm workspace */
  kern_matmul mode;                            /* effective (IEEE for float64) */
  KR(kern_split) sa, sb;                       /* the operands' parts (pass modes) */
  kreal *tmm;                                  /* kern_mm_plus's product */
  int bf;                                      /* compute dtype bfloat16: the VJ_RN points round */
  int terms;                                   /* also sum dg's squared terms into dGa */
} KR(vjw);

/* Rounding to bfloat16 (nearest, ties to even: gdn_bf16_round, XLA's
 * convert) at the backward's VJ_RN points when the compute dtype is
 * bfloat16; the identity otherwise (and always for F = float64). */
KTMPL kreal KR(vj_rn1)(const KR(vjw) *w, kreal x) {
#if KERN_REAL == 32
  return w->bf ? gdn_bf16_round(x) : x;
#else
  (void)w;
  return x;
#endif
}
KTMPL void KR(vj_rn)(const KR(vjw) *w, kreal *x, int64_t n) {
  if (!w->bf) return;
  for (int64_t i = 0; i < n; i++) x[i] = KR(vj_rn1)(w, x[i]);
}
/* x = rn(x + s rn(t)) elementwise, s = +-1: one more bfloat16 cotangent of
 * a bfloat16 value added to the others (add_any in bfloat16: the float32
 * sum of two bfloat16 values, rounded once). */
KTMPL void KR(vj_add_bf)(const KR(vjw) *w, kreal *x, kreal s, kreal *t, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = KR(vj_rn1)(w, x[i] + s * KR(vj_rn1)(w, t[i]));
}

/* Elements of the largest operand or product: C^2, C Dk, C Dv, Dk^2, Dk Dv. */
KTMPL size_t KR(vjw_maxop)(int64_t C, int64_t Dk, int64_t Dv) {
  const int64_t x[5] = {C * C, C * Dk, C * Dv, Dk * Dk, Dk * Dv};
  int64_t m = 0;
  for (int i = 0; i < 5; i++) m = x[i] > m ? x[i] : m;
  return (size_t)m;
}

KTMPL size_t KR(vjw_elems)(int64_t C, int64_t Dk, int64_t Dv, kern_matmul mode) {
  const size_t mo = KR(vjw_maxop)(C, Dk, Dv);
  size_t n = kern_size_mul(2, KR(rows_pad)(KR(kern_split_elems)(mode, mo)));
  n = kern_size_add(n, mode == KERN_MATMUL_IEEE ? 0 : KR(rows_pad)(mo));
  n = kern_size_add(n, kern_size_mul(15, KR(rows_pad)((size_t)(C * Dk))));
  n = kern_size_add(n, kern_size_mul(9, KR(rows_pad)((size_t)(C * Dv))));
  n = kern_size_add(n, kern_size_mul(9, KR(rows_pad)((size_t)(C * C))));
  n = kern_size_add(n, kern_size_mul(10, KR(rows_pad)((size_t)C)));
  n = kern_size_add(n, KR(rows_pad)((size_t)(Dk * Dv)));
  n = kern_size_add(n, KR(rows_pad)((size_t)(Dk * Dk)));
  n = kern_size_add(n, KR(rows_pad)(KR(kern_gemm_ws_elems)()));
  return n;
}

KTMPL void KR(vjw_bind)(KR(vjw) *w, kreal *p, const gdn_inputs *in, const gdn_cotangents *ct,
                        const kern_num *num, int64_t C) {
  const int64_t Dk = in->shape.Dk, Dv = in->shape.Dv;
  w->in = in, w->ct = ct, w->num = num, w->C = C, w->Dk = Dk, w->Dv = Dv;
  w->scale = KR(rows_scale)(in, num);
  kreal **ck[] = {&w->q, &w->k, &w->kb, &w->kbg, &w->W, &w->qg, &w->Kt, &w->dqg,
                  &w->dKt, &w->dW, &w->dq, &w->dk, &w->dkb, &w->dkbg, &w->tck};
  for (size_t i = 0; i < sizeof ck / sizeof ck[0]; i++) *ck[i] = KR(rows_carve)(&p, (size_t)(C * Dk));
  kreal **cv[] = {&w->v, &w->vb, &w->U, &w->vnew, &w->dU, &w->dvnew, &w->dO, &w->dvb, &w->tcv};
  for (size_t i = 0; i < sizeof cv / sizeof cv[0]; i++) *cv[i] = KR(rows_carve)(&p, (size_t)(C * Dv));
  kreal **cc[] = {&w->dec, &w->KK, &w->A, &w->QK, &w->attn, &w->dattn, &w->dA, &w->dS, &w->tcc};
  for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++) *cc[i] = KR(rows_carve)(&p, (size_t)(C * C));
  kreal **c1[] = {&w->g, &w->beta, &w->G, &w->eG, &w->eGl, &w->deG, &w->deGl, &w->dG, &w->dbeta, &w->dGa};
  for (size_t i = 0; i < sizeof c1 / sizeof c1[0]; i++) *c1[i] = KR(rows_carve)(&p, (size_t)C);
  w->tkv = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->tkk = KR(rows_carve)(&p, (size_t)(Dk * Dk));
  w->gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  w->mode = num->matmul;
  w->bf = KERN_REAL == 32 && num->dtype == GDN_DTYPE_BF16;
  const size_t mo = KR(vjw_maxop)(C, Dk, Dv), se = KR(kern_split_elems)(w->mode, mo);
  KR(kern_split_bind)(&w->sa, w->mode, se ? KR(rows_carve)(&p, se) : NULL, mo);
  KR(kern_split_bind)(&w->sb, w->mode, se ? KR(rows_carve)(&p, se) : NULL, mo);
  w->tmm = w->mode == KERN_MATMUL_IEEE ? NULL : KR(rows_carve)(&p, mo);
}

/* C (m x n) row-major = op(A) op(B) (SET) or C + op(A) op(B) (PLUS),
 * strided views (kern_gemm.h), in the mode (kern_mm.h).  The pass modes
 * split the extent of each view, its layout kept. */
KTMPL void KR(vj_mm)(KR(vjw) *w, kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, const kreal *a,
                     int64_t ars, int64_t acs, const kreal *b, int64_t brs, int64_t bcs, kreal *c,
                     int64_t ldc) {
  if (w->mode == KERN_MATMUL_IEEE) {
    KGEMM(acc, m, n, k, a, ars, acs, b, brs, bcs, c, ldc, w->gws);
    return;
  }
  KR(kern_split_fill)(&w->sa, w->mode, a, (size_t)((m - 1) * ars + (k - 1) * acs + 1));
  KR(kern_split_fill)(&w->sb, w->mode, b, (size_t)((k - 1) * brs + (n - 1) * bcs + 1));
  if (acc == KERN_GEMM_SET)
    KR(kern_mm)(w->mode, m, n, k, &w->sa, ars, acs, &w->sb, brs, bcs, c, ldc, w->gws);
  else
    KR(kern_mm_plus)(w->mode, m, n, k, &w->sa, ars, acs, &w->sb, brs, bcs, c, ldc, w->tmm, n, w->gws);
}
#undef VJ_MM
#define VJ_MM(w, acc, m, n, kk, a, ars, acs, bb, brs, bcs, c, ldc)                               \
  KR(vj_mm)((w), (acc), (m), (n), (kk), (a), (ars), (acs), (bb), (brs), (bcs), (c), (ldc))

KTMPL void KR(vj_head)(KR(vjw) *w, int64_t b, int64_t hv) {
  w->b = b, w->hv = hv, w->hk = gdn_inputs_key_head(w->in, hv);
}

/* A = (I + S)^-1, S strictly lower (in dS's slot): row i from e_i, for
 * m < i ascending A_i. = fma(-S_im, A_m., A_i.) -- kern_chunk_tmpl.h's
 * sequence for every element. */
KTMPL void KR(vj_solve)(int64_t C, const kreal *restrict S, kreal *restrict A) {
  for (int64_t i = 0; i < C; i++) {
    kreal *ai = A + i * C;
    for (int64_t j = 0; j < C; j++) ai[j] = 0;
    ai[i] = 1;
    for (int64_t m = 0; m < i; m++) {
      const kreal ns = -S[i * C + m];
      const kreal *am = A + m * C;
      KSIMD for (int64_t j = 0; j <= m; j++) ai[j] = KFMA(ns, am[j], ai[j]);
    }
  }
}

/* The h-independent forward of the chunk of tokens [t0, t0 + rows); rows
 * rows..C-1 are zero padding (vj_rows says where a chunk lies). */
KTMPL void KR(vj_prep)(KR(vjw) *w, int64_t t0, int64_t rows) {
  const gdn_inputs *in = w->in;
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  const int l2 = in->l2norm_in_kernel != 0;
  w->t0 = t0, w->rows = rows;
  for (int64_t i = 0; i < C; i++) {
    const int64_t t = t0 + i;
    if (i < rows) {
      KR(rows_qk)(gdn_inputs_k(in, w->b, t, w->hk), Dk, l2, 0, w->scale, w->num, w->k + i * Dk);
      KR(rows_qk)(gdn_inputs_q(in, w->b, t, w->hk), Dk, l2, 1, w->scale, w->num, w->q + i * Dk);
      KR(rows_v)(gdn_inputs_v(in, w->b, t, w->hv), Dv, w->num, w->v + i * Dv);
      w->beta[i] = KR(rows_beta)(gdn_inputs_beta(in, w->b, t, w->hv), w->num);
      w->g[i] = KR(rows_g)(gdn_inputs_g(in, w->b, t, w->hv), w->num);
    } else {
      memset(w->k + i * Dk, 0, (size_t)Dk * sizeof(kreal));
      memset(w->q + i * Dk, 0, (size_t)Dk * sizeof(kreal));
      memset(w->v + i * Dv, 0, (size_t)Dv * sizeof(kreal));
      w->beta[i] = 0, w->g[i] = 0;
    }
  }
  w->G[0] = w->g[0];
  for (int64_t i = 1; i < C; i++) w->G[i] = w->G[i - 1] + w->g[i];
  const kreal Gl = w->G[C - 1];
  for (int64_t i = 0; i < C; i++) w->eG[i] = KEXP(w->G[i]), w->eGl[i] = KEXP(Gl - w->G[i]);
  w->eGlast = KEXP(Gl);
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++) w->dec[i * C + j] = j < i ? KEXP(w->G[i] - w->G[j]) : 0;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dk; d++) w->kb[i * Dk + d] = w->k[i * Dk + d] * w->beta[i];
  KROUND(w->num, KERN_RP_BETA_MUL, w->kb, C * Dk);
  VJ_MM(w, KERN_GEMM_SET, C, C, Dk, w->kb, Dk, 1, w->k, 1, Dk, w->KK, C);
  KROUND(w->num, KERN_RP_KKT, w->KK, C * C);
  kreal *S = w->dS; /* free until the backward */
  for (int64_t i = 0; i < C * C; i++) S[i] = (i % C) < (i / C) ? w->KK[i] * w->dec[i] : 0;
  KR(vj_solve)(C, S, w->A);
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dv; d++) w->vb[i * Dv + d] = w->v[i * Dv + d] * w->beta[i];
  KROUND(w->num, KERN_RP_BETA_MUL, w->vb, C * Dv);
  VJ_MM(w, KERN_GEMM_SET, C, Dv, C, w->A, C, 1, w->vb, Dv, 1, w->U, Dv);
  KROUND(w->num, KERN_RP_UW, w->U, C * Dv);
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dk; d++) {
      w->kbg[i * Dk + d] = w->kb[i * Dk + d] * w->eG[i];
      w->qg[i * Dk + d] = w->q[i * Dk + d] * w->eG[i];
      w->Kt[i * Dk + d] = w->k[i * Dk + d] * w->eGl[i];
    }
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, w->A, C, 1, w->kbg, Dk, 1, w->W, Dk);
  KROUND(w->num, KERN_RP_UW, w->W, C * Dk);
  VJ_MM(w, KERN_GEMM_SET, C, C, Dk, w->q, Dk, 1, w->k, 1, Dk, w->QK, C);
  KROUND(w->num, KERN_RP_QKT, w->QK, C * C);
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++)
      w->attn[i * C + j] = j < i ? w->QK[i * C + j] * w->dec[i * C + j] : (j == i ? w->QK[i * C + j] : 0);
}

/* vnew = U - W h. */
KTMPL void KR(vj_vnew)(KR(vjw) *w, const kreal *h) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  VJ_MM(w, KERN_GEMM_SET, C, Dv, Dk, w->W, Dk, 1, h, Dv, 1, w->tcv, Dv);
  for (int64_t i = 0; i < C * Dv; i++) w->vnew[i] = w->U[i] - w->tcv[i];
}

/* hout = h eGlast + Kt^T vnew (hout may be h). */
KTMPL void KR(vj_body)(KR(vjw) *w, const kreal *h, kreal *hout) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  KR(vj_vnew)(w, h);
  VJ_MM(w, KERN_GEMM_SET, Dk, Dv, C, w->Kt, 1, Dk, w->vnew, Dv, 1, w->tkv, Dv);
  for (int64_t i = 0; i < Dk * Dv; i++) hout[i] = h[i] * w->eGlast + w->tkv[i];
}

/* A_n = eGlast I - Kt^T W, B_n = Kt^T U. */
KTMPL void KR(vj_map)(KR(vjw) *w, kreal *An, kreal *Bn) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  VJ_MM(w, KERN_GEMM_SET, Dk, Dk, C, w->Kt, 1, Dk, w->W, Dk, 1, An, Dk);
  for (int64_t r = 0; r < Dk; r++)
    for (int64_t s = 0; s < Dk; s++) An[r * Dk + s] = (r == s ? w->eGlast : 0) - An[r * Dk + s];
  VJ_MM(w, KERN_GEMM_SET, Dk, Dv, C, w->Kt, 1, Dk, w->U, Dv, 1, Bn, Dv);
}

KTMPL void KR(vj_back_begin)(KR(vjw) *w) {
  const size_t C = (size_t)w->C, Dk = (size_t)w->Dk, Dv = (size_t)w->Dv;
  memset(w->dattn, 0, C * C * sizeof(kreal));
  memset(w->dqg, 0, C * Dk * sizeof(kreal));
  memset(w->dKt, 0, C * Dk * sizeof(kreal));
  memset(w->dW, 0, C * Dk * sizeof(kreal));
  memset(w->dU, 0, C * Dv * sizeof(kreal));
  w->deGlast = 0;
}

/* The rows of dO for the chunk (zeros in the padding). */
KTMPL void KR(vj_load_do)(KR(vjw) *w) {
  const gdn_shape *s = &w->in->shape;
  for (int64_t i = 0; i < w->C; i++) {
    const int64_t t = w->t0 + i;
    kreal *r = w->dO + i * w->Dv;
    if (i >= w->rows) {
      memset(r, 0, (size_t)w->Dv * sizeof(kreal));
      continue;
    }
    const float *x = w->ct->d_o + ((w->b * s->T + t) * s->Hv + w->hv) * s->Dv;
    for (int64_t d = 0; d < w->Dv; d++) r[d] = (kreal)KIN(w->num, x[d]); /* ftz: as an input */
  }
}

/* The body's backward (dO loaded): dh = the adjoint of h. */
KTMPL void KR(vj_back_body)(KR(vjw) *w, const kreal *h, const kreal *dH, kreal *dh) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  KR(vj_vnew)(w, h);
  VJ_MM(w, KERN_GEMM_SET, C, Dv, C, w->attn, 1, C, w->dO, Dv, 1, w->dvnew, Dv);
  VJ_MM(w, KERN_GEMM_PLUS, C, Dv, Dk, w->Kt, Dk, 1, dH, Dv, 1, w->dvnew, Dv);
  VJ_MM(w, KERN_GEMM_PLUS, C, C, Dv, w->dO, Dv, 1, w->vnew, 1, Dv, w->dattn, C);
  VJ_MM(w, KERN_GEMM_PLUS, C, Dk, Dv, w->dO, Dv, 1, h, 1, Dv, w->dqg, Dk);
  VJ_MM(w, KERN_GEMM_PLUS, C, Dk, Dv, w->vnew, Dv, 1, dH, 1, Dv, w->dKt, Dk);
  kreal acc = w->deGlast;
  for (int64_t i = 0; i < Dk * Dv; i++) acc = KFMA(dH[i], h[i], acc);
  w->deGlast = acc;
  VJ_MM(w, KERN_GEMM_SET, C, Dk, Dv, w->dvnew, Dv, 1, h, 1, Dv, w->tck, Dk);
  if (w->bf) { /* U and W are bfloat16: their cotangents of this use rounded, then added */
    KR(vj_add_bf)(w, w->dU, 1, w->dvnew, C * Dv);
    KR(vj_add_bf)(w, w->dW, -1, w->tck, C * Dk);
  } else {
    for (int64_t i = 0; i < C * Dv; i++) w->dU[i] = w->dU[i] + w->dvnew[i];
    for (int64_t i = 0; i < C * Dk; i++) w->dW[i] = w->dW[i] - w->tck[i];
  }
  for (int64_t i = 0; i < Dk * Dv; i++) dh[i] = dH[i] * w->eGlast;
  VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, C, w->qg, 1, Dk, w->dO, Dv, 1, dh, Dv);
  VJ_MM(w, KERN_GEMM_SET, Dk, Dv, C, w->W, 1, Dk, w->dvnew, Dv, 1, w->tkv, Dv);
  for (int64_t i = 0; i < Dk * Dv; i++) dh[i] = dh[i] - w->tkv[i];
}

/* Only dh of the body's backward (dO loaded), by the same operations as
 * vj_back_body, so the same bits: dvnew = attn^T dO; dvnew += Kt dH;
 * dh = dH eGlast; dh = dh + qg^T dO; dh = dh - W^T dvnew. */
KTMPL void KR(vj_back_dh)(KR(vjw) *w, const kreal *dH, kreal *dh) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  VJ_MM(w, KERN_GEMM_SET, C, Dv, C, w->attn, 1, C, w->dO, Dv, 1, w->dvnew, Dv);
  VJ_MM(w, KERN_GEMM_PLUS, C, Dv, Dk, w->Kt, Dk, 1, dH, Dv, 1, w->dvnew, Dv);
  for (int64_t i = 0; i < Dk * Dv; i++) dh[i] = dH[i] * w->eGlast;
  VJ_MM(w, KERN_GEMM_PLUS, Dk, Dv, C, w->qg, 1, Dk, w->dO, Dv, 1, dh, Dv);
  VJ_MM(w, KERN_GEMM_SET, Dk, Dv, C, w->W, 1, Dk, w->dvnew, Dv, 1, w->tkv, Dv);
  for (int64_t i = 0; i < Dk * Dv; i++) dh[i] = dh[i] - w->tkv[i];
}

/* The affine map's backward. */
KTMPL void KR(vj_back_map)(KR(vjw) *w, const kreal *dAn, const kreal *dBn) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  kreal tr = w->deGlast;
  for (int64_t i = 0; i < Dk; i++) tr = tr + dAn[i * Dk + i];
  w->deGlast = tr;
  VJ_MM(w, KERN_GEMM_SET, C, Dk, Dk, w->W, Dk, 1, dAn, 1, Dk, w->tck, Dk);
  for (int64_t i = 0; i < C * Dk; i++) w->dKt[i] = w->dKt[i] - w->tck[i];
  VJ_MM(w, KERN_GEMM_PLUS, C, Dk, Dv, w->U, Dv, 1, dBn, 1, Dv, w->dKt, Dk);
  VJ_MM(w, KERN_GEMM_SET, C, Dk, Dk, w->Kt, Dk, 1, dAn, Dk, 1, w->tck, Dk);
  if (w->bf) { /* the map's use of U and W: cotangents rounded, then added (as the body's) */
    KR(vj_add_bf)(w, w->dW, -1, w->tck, C * Dk);
    VJ_MM(w, KERN_GEMM_SET, C, Dv, Dk, w->Kt, Dk, 1, dBn, Dv, 1, w->tcv, Dv);
    KR(vj_add_bf)(w, w->dU, 1, w->tcv, C * Dv);
    return;
  }
  for (int64_t i = 0; i < C * Dk; i++) w->dW[i] = w->dW[i] - w->tck[i];
  VJ_MM(w, KERN_GEMM_PLUS, C, Dv, Dk, w->Kt, Dk, 1, dBn, Dv, 1, w->dU, Dv);
}

/* sum_d x_d y_d: first product, then fma, d ascending. */
KTMPL kreal KR(vj_dot)(const kreal *x, const kreal *y, int64_t n) {
  kreal s = x[0] * y[0];
  for (int64_t d = 1; d < n; d++) s = KFMA(x[d], y[d], s);
  return s;
}

/* sum_d rn(x_d y_d), the products rounded to bfloat16 (the transpose of a
 * bfloat16 multiply by a broadcast row value), summed in float32 (d
 * ascending, XLA reducing bfloat16 in float32), the sum rounded once; vj_dot
 * when not bfloat16. */
KTMPL kreal KR(vj_dot_bf)(const KR(vjw) *w, const kreal *x, const kreal *y, int64_t n) {
  if (!w->bf) return KR(vj_dot)(x, y, n);
  kreal s = KR(vj_rn1)(w, x[0] * y[0]);
  for (int64_t d = 1; d < n; d++) s = s + KR(vj_rn1)(w, x[d] * y[d]);
  return KR(vj_rn1)(w, s);
}

/* x = rn(x + rn(y .* f)) per row i (f_i a row factor): one more bfloat16
 * cotangent of a bfloat16 row (f32 product rounded, bfloat16 add); when
 * not bfloat16, x = x + y f (one product, one add: the float32 steps). */
KTMPL void KR(vj_rows_add)(const KR(vjw) *w, kreal *x, const kreal *y, const kreal *f, int64_t C,
                           int64_t n) {
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < n; d++)
      x[i * n + d] = KR(vj_rn1)(w, x[i * n + d] + KR(vj_rn1)(w, y[i * n + d] * f[i]));
}

/* dg's componentwise size (w->terms): dGa_i = the sum of the squares of
 * every term the sums of dg_i add, as vj_back_decay forms them (x = ddec
 * .* dec, the deG, deGl and deGlast products), and of the diagonal terms
 * of the attention's decays, dattn_mm QK_mm twice (vj_back_prep puts them
 * in dGa first): this kernel takes exp(G_m - G_m) as the constant 1, but
 * an implementation that masks the decay after the exponential (as JAX's
 * and transformers' chunked functions do) differentiates it on both sides,
 * +x_mm into the row's sum and -x_mm into the column's, and rounds both
 * before they cancel.  A term met in two of the dG_m it enters counts
 * twice, for the same reason:
 *     a_m = (deG_m eG_m)^2 + sum_{j<m} x_mj^2 + sum_{i>m} x_im^2
 *           + (deGl_m eGl_m)^2 + 2 (dattn_mm QK_mm)^2,
 *     a_last += sum_i (deGl_i eGl_i)^2 + (deGlast eGlast)^2,
 *     dGa_i = sum_{m>=i} a_m.
 * u sqrt(dGa_i) is the size of a rounding of those sums in any order with
 * independent errors, and dg_i itself can be far smaller: with fast gates
 * the state's decay terms of the chunk's last tokens cancel to 1e-9 of
 * their size, and the attention's diagonal terms cancel exactly.  In F,
 * after the dG sums; reads x (ddec .* dec). */
KTMPL void KR(vj_decay_terms)(KR(vjw) *w, const kreal *x) {
  const int64_t C = w->C;
  kreal sl = 0;
  for (int64_t m = 0; m < C; m++) {
    const kreal e = w->deG[m] * w->eG[m], y = w->deGl[m] * w->eGl[m];
    kreal a = e * e + y * y;
    for (int64_t j = 0; j < m; j++) a += x[m * C + j] * x[m * C + j];
    for (int64_t i = m + 1; i < C; i++) a += x[i * C + m] * x[i * C + m];
    w->dGa[m] += a;
    sl += y * y;
  }
  w->dGa[C - 1] += sl + w->deGlast * w->eGlast * w->deGlast * w->eGlast;
  for (int64_t i = C - 2; i >= 0; i--) w->dGa[i] += w->dGa[i + 1];
}

/* The decays and the cumsum taken back: dG from deG, deGl, deGlast and
 * ddec (in x, consumed), then dg = cumsum's transpose (in dG).  float32
 * in every compute dtype (g is float32). */
KTMPL void KR(vj_back_decay)(KR(vjw) *w, kreal *x) {
  const int64_t C = w->C;
  for (int64_t i = 0; i < C * C; i++) x[i] = x[i] * w->dec[i];
  for (int64_t i = 0; i < C; i++) w->dG[i] = w->deG[i] * w->eG[i];
  for (int64_t i = 1; i < C; i++) {
    kreal s = x[i * C];
    for (int64_t j = 1; j < i; j++) s = s + x[i * C + j];
    w->dG[i] = w->dG[i] + s;
  }
  for (int64_t j = 0; j + 1 < C; j++) {
    kreal s = x[(j + 1) * C + j];
    for (int64_t i = j + 2; i < C; i++) s = s + x[i * C + j];
    w->dG[j] = w->dG[j] - s;
  }
  kreal sl = 0;
  for (int64_t i = 0; i < C; i++) {
    const kreal y = w->deGl[i] * w->eGl[i];
    w->dG[i] = w->dG[i] - y;
    sl = sl + y;
  }
  w->dG[C - 1] = w->dG[C - 1] + sl;
  w->dG[C - 1] = w->dG[C - 1] + w->deGlast * w->eGlast;
  for (int64_t i = C - 2; i >= 0; i--) w->dG[i] = w->dG[i] + w->dG[i + 1];
  if (w->terms) KR(vj_decay_terms)(w, x);
}

/* The WY part of the preparation's backward: from dU, dW to dvb (the
 * cotangent of v beta), dkb (of k beta), dk += the KK product's, deG +=,
 * ddec += (strictly lower). */
KTMPL void KR(vj_back_wy)(KR(vjw) *w, kreal *ddec) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  VJ_MM(w, KERN_GEMM_SET, C, C, Dv, w->dU, Dv, 1, w->vb, 1, Dv, w->dA, C);
  VJ_MM(w, KERN_GEMM_PLUS, C, C, Dk, w->dW, Dk, 1, w->kbg, 1, Dk, w->dA, C);
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = i; j < C; j++) w->dA[i * C + j] = 0;
  VJ_MM(w, KERN_GEMM_SET, C, Dv, C, w->A, 1, C, w->dU, Dv, 1, w->dvb, Dv);
  KR(vj_rn)(w, w->dvb, C * Dv); /* vb is bfloat16 (A vb.astype(f32)) */
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, w->A, 1, C, w->dW, Dk, 1, w->dkbg, Dk);
  kreal *AtdA = w->attn; /* attn is no longer needed */
  VJ_MM(w, KERN_GEMM_SET, C, C, C, w->A, 1, C, w->dA, C, 1, AtdA, C);
  kreal *dS = w->dS;
  VJ_MM(w, KERN_GEMM_SET, C, C, C, AtdA, C, 1, w->A, 1, C, dS, C);
  kreal *dKK = w->dA; /* dA is consumed */
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++) {
      const int64_t x = i * C + j;
      const kreal ds = j < i ? -dS[x] : 0;
      dKK[x] = ds * w->dec[x];
      if (j < i) ddec[x] = ddec[x] + ds * w->KK[x];
    }
  KR(vj_rn)(w, dKK, C * C); /* KK is a bfloat16 dot's output */
  for (int64_t i = 0; i < C; i++) {
    kreal *dkb = w->dkb + i * Dk;
    const kreal *dkbg = w->dkbg + i * Dk;
    for (int64_t d = 0; d < Dk; d++) dkb[d] = KR(vj_rn1)(w, dkbg[d] * w->eG[i]);
    w->deG[i] = w->deG[i] + KR(vj_dot)(dkbg, w->kb + i * Dk, Dk);
  }
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, dKK, C, 1, w->k, Dk, 1, w->tck, Dk);
  KR(vj_add_bf)(w, w->dkb, 1, w->tck, C * Dk);
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, dKK, 1, C, w->kb, Dk, 1, w->tck, Dk);
  KR(vj_add_bf)(w, w->dk, 1, w->tck, C * Dk);
}

/* The preparation's backward (after the body and/or the map): leaves dq,
 * dk (C x Dk, with respect to the prepared rows), dvb -> dv (in dvb),
 * dbeta, dG -> dg (in dG).  For bfloat16 the cotangents of the bfloat16
 * values are rounded where kern_vjp.h lists. */
KTMPL void KR(vj_back_prep)(KR(vjw) *w) {
  const int64_t C = w->C, Dk = w->Dk, Dv = w->Dv;
  kreal *dQK = w->dS, *ddec = w->tcc; /* dS is free again: S was consumed by the solve */
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++) {
      const int64_t x = i * C + j;
      dQK[x] = j < i ? w->dattn[x] * w->dec[x] : (j == i ? w->dattn[x] : 0);
      ddec[x] = j < i ? w->dattn[x] * w->QK[x] : 0;
    }
  if (w->terms) /* the diagonal decays' terms (vj_decay_terms) */
    for (int64_t i = 0; i < C; i++) {
      const kreal d = w->dattn[i * C + i] * w->QK[i * C + i];
      w->dGa[i] = 2 * d * d;
    }
  KR(vj_rn)(w, dQK, C * C); /* QK is a bfloat16 dot's output */
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, dQK, C, 1, w->k, Dk, 1, w->dq, Dk);
  VJ_MM(w, KERN_GEMM_SET, C, Dk, C, dQK, 1, C, w->q, Dk, 1, w->dk, Dk);
  KR(vj_rn)(w, w->dq, C * Dk); /* bf16 x bf16 dots, bfloat16 outputs */
  KR(vj_rn)(w, w->dk, C * Dk);
  KR(vj_rows_add)(w, w->dq, w->dqg, w->eG, C, Dk);
  KR(vj_rows_add)(w, w->dk, w->dKt, w->eGl, C, Dk);
  for (int64_t i = 0; i < C; i++) {
    w->deG[i] = KR(vj_dot)(w->dqg + i * Dk, w->q + i * Dk, Dk);
    w->deGl[i] = KR(vj_dot)(w->dKt + i * Dk, w->k + i * Dk, Dk);
  }
  KR(vj_back_wy)(w, ddec);
  for (int64_t i = 0; i < C; i++) {
    kreal *dvb = w->dvb + i * Dv;
    w->dbeta[i] = KR(vj_dot_bf)(w, dvb, w->v + i * Dv, Dv);
    for (int64_t d = 0; d < Dv; d++) dvb[d] = KR(vj_rn1)(w, dvb[d] * w->beta[i]);
    w->dbeta[i] = KR(vj_rn1)(w, w->dbeta[i] + KR(vj_dot_bf)(w, w->dkb + i * Dk, w->k + i * Dk, Dk));
  }
  KR(vj_rows_add)(w, w->dk, w->dkb, w->beta, C, Dk);
  KR(vj_back_decay)(w, ddec);
}

/* Writes the chunk's gradients for its real rows: dv, dbeta, dg of the
 * value head; dq, dk (prepared rows) into the key head's rows, set by the
 * first value head of the group (first) and added by the others. */
KTMPL void KR(vj_store)(KR(vjw) *w, gdn_grads *out, int first) {
  const gdn_shape *s = &w->in->shape;
  const int64_t Dk = w->Dk, Dv = w->Dv;
  for (int64_t i = 0; i < w->rows; i++) {
    const int64_t t = w->t0 + i, gt = (w->b * s->T + t) * s->Hv + w->hv;
    const int64_t qk = ((w->b * s->T + t) * s->Hk + w->hk) * Dk;
    for (int64_t d = 0; d < Dv; d++) out->dv[gt * Dv + d] = w->dvb[i * Dv + d];
    out->dbeta[gt] = w->dbeta[i];
    out->dg[gt] = w->dG[i];
    for (int64_t d = 0; d < Dk; d++) {
      kreal a = w->dq[i * Dk + d], c = w->dk[i * Dk + d];
      if (w->bf) a = KR(vj_rn1)(w, a * w->scale); /* q_bf16 * scale: a bfloat16 multiply, per head */
      if (!first) a = (kreal)out->dq[qk + d] + a, c = (kreal)out->dk[qk + d] + c;
      out->dq[qk + d] = a;
      out->dk[qk + d] = c;
    }
  }
}

/* The preparation of q and k taken backwards for every token of (b, hk),
 * in place on out->dq, out->dk: with y = x inv the normalised row (rows_qk's
 * values, recomputed without the cast), dy = dX (times scale for q, one
 * rounding; for bfloat16 vj_store applied the scale per value head and the
 * cast's transpose is exact), and with
 * the L2 norm dx = inv (dy - (y . dy) y) (the dot first product then fma;
 * then per element a product, a difference, a product). */
KTMPL void KR(vj_rows_back)(const gdn_inputs *in, const kern_num *num, kreal scale, gdn_grads *out,
                            int64_t b, int64_t hk, kreal *y, kreal *dy) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk;
  const int l2 = in->l2norm_in_kernel != 0, bf = KERN_REAL == 32 && num->dtype == GDN_DTYPE_BF16;
  kern_num n32 = *num; /* the norm is in the input dtype, before the cast: no rounding points */
  n32.round_mask = 0;
  for (int64_t t = 0; t < s->T; t++)
    for (int is_q = 0; is_q < 2; is_q++) {
      const float *x = is_q ? gdn_inputs_q(in, b, t, hk) : gdn_inputs_k(in, b, t, hk);
      double *g = (is_q ? out->dq : out->dk) + ((b * s->T + t) * s->Hk + hk) * Dk;
      for (int64_t d = 0; d < Dk; d++) dy[d] = is_q && !bf ? (kreal)g[d] * scale : (kreal)g[d];
      if (!l2) {
        for (int64_t d = 0; d < Dk; d++) g[d] = dy[d];
        continue;
      }
      KR(rows_qk)(x, Dk, 0, 0, scale, &n32, y);
      kreal ss = y[0] * y[0];
      for (int64_t d = 1; d < Dk; d++) ss = ss + y[d] * y[d];
      const kreal inv = KC(1) / KSQRT(ss + KC(1e-6));
      for (int64_t d = 0; d < Dk; d++) y[d] = y[d] * inv;
      const kreal p = KR(vj_dot)(y, dy, Dk);
      for (int64_t d = 0; d < Dk; d++) g[d] = inv * (dy[d] - p * y[d]);
    }
}
