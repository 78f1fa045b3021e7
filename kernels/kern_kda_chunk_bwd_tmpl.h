/* Template (see kern_real.h): one chunk of kern_kda_chunk's forward taken
 * backwards by the chunkwise algebra (kern_kda_chunk_vjp.h, the chunkwise
 * backward): the VJP of the chunk's map
 *   A = (I + L)^-1 Diag(beta),  L_ij = beta_i K_ij (j < i),
 *   K_ij = sum_d k_i[d] k_j[d] e^(G_i[d] - G_j[d]),  P_ij the same with q_i (j <= i),
 *   w = A (k e^G),  u = A v,  v_new = u - w S0,
 *   o = (q e^G) S0 + P v_new,  S1 = Diag(e^(G_last)) S0 + (k e^(G_last - G))^T v_new
 * given dO and dS1: dS0, dq, dk (of the prepared rows), dv, dbeta and dG per
 * channel, then dg = the reverse cumulative sum of dG over the chunk's rows
 * (G_i = g_0 + ... + g_i restarts at each chunk).  The forward's values are
 * recomputed as kern_kda_chunk_tmpl.h computes them (rows, sub-chunked K and
 * P, the solve, w, u, v_new: the same bits); the gradient of K and P is
 * taken on the pairs directly, e^(G_i[d] - G_j[d]) formed per pair as the
 * forward's diagonal blocks form it.  T = (I + L)^-1 is formed by its own
 * forward substitution (the forward keeps only A = T Diag(beta)).  Every
 * other sum is kern_gemm's order or a loop with its index ascending.
 * Numerics (kern_kda_chunk_vjp.h, Modes): the products of the recompute
 * and of kcc_back_products are kda_gemm's, in the forward's matmul mode; in
 * a pass mode the solve's transpose is two kda_gemm products too
 * (kcc_back_solve_mm) and K and P are taken back by the forward's
 * sub-chunks (kcc_back_pairs_mm: the blocks against earlier sub-chunks by
 * transposed products in the mode, the diagonal sub-chunks pair by pair in
 * F, as the forward forms them); for bfloat16 the cotangents of v and beta
 * are rounded once per token and value head (the casts' transposes).
 * Memory: kcc_elems. */

typedef struct KR(kcc) {
  kreal *dQ, *dK, *dG, *dxk, *dxq, *dkj, *dw, *E; /* C x Dk each */
  kreal *dO, *dvn, *dv;                           /* C x Dv each */
  kreal *Km, *T, *dA, *dT, *M, *dP;               /* C x C each */
  kreal *deg, *er, *dbeta;                        /* Dk, Dk, C */
} KR(kcc);

static size_t KR(kcc_elems)(int64_t C, int64_t Dk, int64_t Dv) {
  return (size_t)(8 * C * Dk + 3 * C * Dv + 6 * C * C + 2 * Dk + C);
}

static void KR(kcc_carve)(KR(kcc) *b, int64_t C, int64_t Dk, int64_t Dv, kreal *p) {
  kreal **dk[] = {&b->dQ, &b->dK, &b->dG, &b->dxk, &b->dxq, &b->dkj, &b->dw, &b->E};
  for (int i = 0; i < 8; i++) *dk[i] = p, p += C * Dk;
  kreal **dv[] = {&b->dO, &b->dvn, &b->dv};
  for (int i = 0; i < 3; i++) *dv[i] = p, p += C * Dv;
  kreal **cc[] = {&b->Km, &b->T, &b->dA, &b->dT, &b->M, &b->dP};
  for (int i = 0; i < 6; i++) *cc[i] = p, p += C * C;
  b->deg = p, p += Dk;
  b->er = p, p += Dk;
  b->dbeta = p;
}

/* The forward of the chunk's n rows from S0 (value head hv; rows loaded
 * here): K into b->Km, T, and in w: A (the forward's bits), P, e^G (E),
 * xk, xq, w, u, v_new, e^(G_last), kj. */
static void KR(kcc_recompute)(KR(kda_ws) *w, KR(kcc) *b, const kreal *S0, int64_t n, int64_t Dk, int64_t Dv) {
  const int64_t C = n;
  kreal *beta = w->beta;
  for (int64_t i = 0; i < n; i++) w->row[i] = beta[i], beta[i] = KC(-1); /* kda_intra then leaves K itself */
  KR(kda_intra)(w, n, Dk);
  for (int64_t i = 0; i < n; i++) beta[i] = w->row[i];
  memcpy(b->Km, w->A, (size_t)(C * C) * sizeof(kreal));
  for (int64_t i = 0; i < n; i++) /* -(K beta_i): kda_intra's own last step, the same bits */
    for (int64_t j = 0; j < i; j++) w->A[i * C + j] = -(b->Km[i * C + j] * beta[i]);
  for (int64_t i = 0; i < n; i++) { /* T = (I + L)^-1, L_ij = beta_i K_ij */
    for (int64_t j = 0; j < n; j++) b->T[i * C + j] = i == j ? KC(1) : KC(0);
    for (int64_t j = 0; j < i; j++) {
      kreal acc = 0;
      for (int64_t m = j; m < i; m++) acc = acc + (beta[i] * b->Km[i * C + m]) * b->T[m * C + j];
      b->T[i * C + j] = -acc;
    }
  }
  KR(kda_solve)(w, n);
  KR(kda_expv)(b->E, w->G, n * Dk);
  for (int64_t x = 0; x < n * Dk; x++) w->xk[x] = w->k[x] * b->E[x], w->xq[x] = w->q[x] * b->E[x];
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, n, w->A, C, 1, w->xk, Dk, 1, w->w, Dk, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, n, w->A, C, 1, w->v, Dv, 1, w->u, Dv, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, Dk, w->w, Dk, 1, S0, Dv, 1, w->tmp, Dv, w->gws);
  for (int64_t x = 0; x < n * Dv; x++) w->vn[x] = w->u[x] - w->tmp[x];
  const kreal *Gl = w->G + (n - 1) * Dk;
  KR(kda_expv)(w->eg, Gl, Dk);
  KR(kda_scale_rows)(w->kj, w->k, Gl, w->G, n, Dk);
}

/* From dO, dS1 (dS, Dk x Dv, in) to dS0 (dS, out) and the gradients of v_new,
 * w, A, P (b->dP), xk, xq, kj, e^(G_last) (b->deg), v. */
static void KR(kcc_back_products)(KR(kda_ws) *w, KR(kcc) *b, const kreal *S0, kreal *dS, int64_t n, int64_t Dk,
                                  int64_t Dv, int value_axis) {
  const int64_t C = n;
  /* dv_new = P^T dO + kj dS1 */
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, Dk, w->kj, Dk, 1, dS, Dv, 1, b->dvn, Dv, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_ADD, n, Dv, n, w->P, 1, C, b->dO, Dv, 1, b->dvn, Dv, w->gws);
  /* deg = rowsum(S0 . dS1) (the state's decay), dkj = v_new dS1^T */
  for (int64_t d = 0; d < Dk; d++) {
    kreal acc = 0;
    if (value_axis) /* the mutant: the decay's gradient summed along the value axis */
      for (int64_t i = 0; i < Dk; i++) acc = acc + S0[i * Dv + d % Dv] * dS[i * Dv + d % Dv];
    else
      for (int64_t c = 0; c < Dv; c++) acc = acc + S0[d * Dv + c] * dS[d * Dv + c];
    b->deg[d] = acc;
  }
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, Dv, w->vn, Dv, 1, dS, 1, Dv, b->dkj, Dk, w->gws);
  /* dxq = dO S0^T, dw = -(dv_new S0^T), dP = dO v_new^T */
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, Dv, b->dO, Dv, 1, S0, 1, Dv, b->dxq, Dk, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, Dv, b->dvn, Dv, 1, S0, 1, Dv, b->dw, Dk, w->gws);
  for (int64_t x = 0; x < n * Dk; x++) b->dw[x] = -b->dw[x];
  KR(kda_gemm)(w, KERN_GEMM_SET, n, n, Dv, b->dO, Dv, 1, w->vn, 1, Dv, b->dP, C, w->gws);
  /* dS0 = e^(G_last) dS1 + xq^T dO - w^T dv_new */
  for (int64_t d = 0; d < Dk; d++)
    for (int64_t c = 0; c < Dv; c++) dS[d * Dv + c] = w->eg[d] * dS[d * Dv + c];
  KR(kda_gemm)(w, KERN_GEMM_ADD, Dk, Dv, n, w->xq, 1, Dk, b->dO, Dv, 1, dS, Dv, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dv, n, w->w, 1, Dk, b->dvn, Dv, 1, w->S, Dv, w->gws);
  for (int64_t x = 0; x < Dk * Dv; x++) dS[x] = dS[x] - w->S[x];
  /* dA = dw xk^T + dv_new v^T;  dxk = A^T dw;  dv = A^T dv_new */
  KR(kda_gemm)(w, KERN_GEMM_SET, n, n, Dk, b->dw, Dk, 1, w->xk, 1, Dk, b->dA, C, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_ADD, n, n, Dv, b->dvn, Dv, 1, w->v, 1, Dv, b->dA, C, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, n, w->A, 1, C, b->dw, Dk, 1, b->dxk, Dk, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, n, w->A, 1, C, b->dvn, Dv, 1, b->dv, Dv, w->gws);
}

/* Through A = T Diag(beta), T = (I + L)^-1, L = Diag(beta) K: dbeta into
 * dbeta[i], dK into b->dA (strictly lower). */
static void KR(kcc_back_solve)(KR(kda_ws) *w, KR(kcc) *b, kreal *dbeta, int64_t n) {
  const int64_t C = n;
  const kreal *beta = w->beta;
  for (int64_t i = 0; i < n; i++) dbeta[i] = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) {
      b->dT[i * C + j] = b->dA[i * C + j] * beta[j];
      dbeta[j] = dbeta[j] + b->dA[i * C + j] * b->T[i * C + j];
    }
  /* dL = -(T^T dT T^T), strictly lower: first X = T^T dT (full), then X T^T */
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      kreal acc = 0;
      for (int64_t m = i > j ? i : j; m < n; m++) acc = acc + b->T[m * C + i] * b->dT[m * C + j];
      b->M[i * C + j] = acc;
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) {
      kreal acc = 0;
      for (int64_t m = 0; m <= j; m++) acc = acc + b->M[i * C + m] * b->T[j * C + m];
      const kreal dL = -acc;
      dbeta[i] = dbeta[i] + dL * b->Km[i * C + j];
      b->dA[i * C + j] = dL * beta[i]; /* dK */
    }
}

/* kcc_back_solve in a pass mode: the same steps, the two products of
 * dL = -(T^T dT T^T) as kda_gemm products over the whole chunk (T and dT
 * lower triangular: the zeros above add exact zeros); dT's upper part
 * zeroed first. */
static void KR(kcc_back_solve_mm)(KR(kda_ws) *w, KR(kcc) *b, kreal *dbeta, int64_t n) {
  const int64_t C = n;
  const kreal *beta = w->beta;
  for (int64_t i = 0; i < n; i++) dbeta[i] = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      b->dT[i * C + j] = j <= i ? b->dA[i * C + j] * beta[j] : KC(0);
      if (j <= i) dbeta[j] = dbeta[j] + b->dA[i * C + j] * b->T[i * C + j];
    }
  KR(kda_gemm)(w, KERN_GEMM_SET, n, n, n, b->T, 1, C, b->dT, C, 1, b->M, C, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, n, n, b->M, C, 1, b->T, 1, C, b->dT, C, w->gws); /* dT is spent */
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) {
      const kreal dL = -b->dT[i * C + j];
      dbeta[i] = dbeta[i] + dL * b->Km[i * C + j];
      b->dA[i * C + j] = dL * beta[i]; /* dK */
    }
}

/* Through K (dK in b->dA, strictly lower) and P (b->dP, lower): per
 * pair and channel, the decay e^(G_i - G_j) formed as the forward forms it
 * (subtract, exp); the diagonal pairs (e = 1) add no dG.  Sums over j
 * ascending for each row's dk, dq, dG, then over i for the columns'. */
static void KR(kcc_back_pairs)(KR(kda_ws) *w, KR(kcc) *b, int64_t n, int64_t Dk) {
  const int64_t C = n;
  for (int64_t i = 0; i < n; i++) {
    const kreal *ki = w->k + i * Dk, *qi = w->q + i * Dk, *Gi = w->G + i * Dk;
    kreal *restrict dKi = b->dK + i * Dk, *restrict dQi = b->dQ + i * Dk, *restrict dGi = b->dG + i * Dk;
    for (int64_t j = 0; j < i; j++) {
      const kreal *kj = w->k + j * Dk, *Gj = w->G + j * Dk;
      kreal *restrict dKj = b->dK + j * Dk, *restrict dGj = b->dG + j * Dk, *restrict e = b->er;
      const kreal dk = b->dA[i * C + j], dp = b->dP[i * C + j];
      KSIMD for (int64_t d = 0; d < Dk; d++) e[d] = Gi[d] - Gj[d];
      KR(kda_expv)(e, e, Dk);
      KSIMD for (int64_t d = 0; d < Dk; d++) {
        const kreal a = dk * ki[d] + dp * qi[d], ke = kj[d] * e[d], t = a * ke;
        dKi[d] = dKi[d] + dk * ke;
        dQi[d] = dQi[d] + dp * ke;
        dGi[d] = dGi[d] + t;
        dKj[d] = dKj[d] + a * e[d];
        dGj[d] = dGj[d] - t;
      }
    }
    const kreal dp = b->dP[i * C + i];
    KSIMD for (int64_t d = 0; d < Dk; d++) {
      dKi[d] = dKi[d] + dp * qi[d];
      dQi[d] = dQi[d] + dp * ki[d];
    }
  }
}

/* kcc_back_pairs in a pass mode: the pairs of a diagonal sub-chunk (and
 * P's diagonal) per pair, as kcc_back_pairs; the block of each sub-chunk I
 * = [r, r1) against every earlier row J = [0, r), which the forward forms
 * as products in the mode (kda_intra: xk_I kj_J^T and xq_I kj_J^T, xk_i =
 * k_i e^(G_i - G_r), xq_i likewise, kj_j = k_j e^(G_r - G_j)), taken back
 * by the transposed products in the mode (kda_gemm): dxk_I = dK_IJ kj_J,
 * dxq_I = dP_IJ kj_J, dkj_J = dK_IJ^T xk_I + dP_IJ^T xq_I (the second
 * product formed, then added), then through the scaled rows elementwise
 * (dk, dq, and dG at i, j and the reference row r).  Scratch: the
 * forward's diagonal-block buffers (Et: e, xk_I, xq_I; Xe, kt: dxk_I,
 * dxq_I), b->dw (kj_J) and w->w (dkj_J), all spent by now; b->er a row. */
static void KR(kcc_back_pairs_mm)(KR(kda_ws) *w, KR(kcc) *b, int64_t n, int64_t Dk) {
  enum { SB = KERN_KDA_SUB };
  const int64_t C = n;
  for (int64_t i = 0; i < n; i++) { /* the diagonal sub-chunks, per pair */
    const kreal *ki = w->k + i * Dk, *qi = w->q + i * Dk, *Gi = w->G + i * Dk;
    kreal *dKi = b->dK + i * Dk, *dQi = b->dQ + i * Dk, *dGi = b->dG + i * Dk, *e = b->er;
    for (int64_t j = i - i % SB; j < i; j++) {
      const kreal *kj = w->k + j * Dk, *Gj = w->G + j * Dk;
      kreal *dKj = b->dK + j * Dk, *dGj = b->dG + j * Dk;
      const kreal dk = b->dA[i * C + j], dp = b->dP[i * C + j];
      for (int64_t d = 0; d < Dk; d++) e[d] = Gi[d] - Gj[d];
      KR(kda_expv)(e, e, Dk);
      for (int64_t d = 0; d < Dk; d++) {
        const kreal a = dk * ki[d] + dp * qi[d], ke = kj[d] * e[d], t = a * ke;
        dKi[d] = dKi[d] + dk * ke;
        dQi[d] = dQi[d] + dp * ke;
        dGi[d] = dGi[d] + t;
        dKj[d] = dKj[d] + a * e[d];
        dGj[d] = dGj[d] - t;
      }
    }
    const kreal dp = b->dP[i * C + i];
    for (int64_t d = 0; d < Dk; d++) dKi[d] = dKi[d] + dp * qi[d], dQi[d] = dQi[d] + dp * ki[d];
  }
  kreal *eI = w->Et, *xkI = w->Et + SB * Dk, *xqI = w->Et + 2 * SB * Dk, *dxkI = w->Xe, *dxqI = w->kt;
  kreal *kjJ = b->dw, *dkjJ = w->w;
  for (int64_t r = SB; r < n; r += SB) {
    const int64_t m = (r + SB < n ? r + SB : n) - r;
    const kreal *Gr = w->G + r * Dk;
    for (int64_t x = 0; x < m * Dk; x++) eI[x] = w->G[r * Dk + x] - Gr[x % Dk];
    KR(kda_expv)(eI, eI, m * Dk);
    for (int64_t x = 0; x < m * Dk; x++) xkI[x] = w->k[r * Dk + x] * eI[x], xqI[x] = w->q[r * Dk + x] * eI[x];
    KR(kda_scale_rows)(kjJ, w->k, Gr, w->G, r, Dk);
    KR(kda_gemm)(w, KERN_GEMM_SET, m, Dk, r, b->dA + r * C, C, 1, kjJ, Dk, 1, dxkI, Dk, w->gws);
    KR(kda_gemm)(w, KERN_GEMM_SET, m, Dk, r, b->dP + r * C, C, 1, kjJ, Dk, 1, dxqI, Dk, w->gws);
    KR(kda_gemm)(w, KERN_GEMM_SET, r, Dk, m, b->dA + r * C, 1, C, xkI, Dk, 1, dkjJ, Dk, w->gws);
    KR(kda_gemm)(w, KERN_GEMM_ADD, r, Dk, m, b->dP + r * C, 1, C, xqI, Dk, 1, dkjJ, Dk, w->gws);
    kreal *dGr = b->dG + r * Dk;
    for (int64_t i = 0; i < m; i++)
      for (int64_t d = 0; d < Dk; d++) {
        const int64_t x = i * Dk + d, X = (r + i) * Dk + d;
        const kreal t = dxkI[x] * xkI[x] + dxqI[x] * xqI[x];
        b->dK[X] = b->dK[X] + dxkI[x] * eI[x];
        b->dQ[X] = b->dQ[X] + dxqI[x] * eI[x];
        b->dG[X] = b->dG[X] + t;
        dGr[d] = dGr[d] - t;
      }
    for (int64_t j = 0; j < r; j++) {
      kreal *e = b->er;
      for (int64_t d = 0; d < Dk; d++) e[d] = Gr[d] - w->G[j * Dk + d];
      KR(kda_expv)(e, e, Dk);
      for (int64_t d = 0; d < Dk; d++) {
        const int64_t x = j * Dk + d;
        const kreal t = dkjJ[x] * kjJ[x];
        b->dK[x] = b->dK[x] + dkjJ[x] * e[d];
        dGr[d] = dGr[d] + t;
        b->dG[x] = b->dG[x] - t;
      }
    }
  }
}

/* x, or for compute dtype bfloat16 x rounded to bfloat16: the cotangent
 * of a bfloat16 input at its cast's transpose. */
static inline kreal KR(kcc_rn)(const kern_num *num, kreal x) {
#if KERN_REAL == 32
  return num->dtype == GDN_DTYPE_BF16 ? gdn_bf16_round(x) : x;
#else
  (void)num;
  return x;
#endif
}

/* Value head hv's share of one chunk (rows [c0, c0 + n)): dS in/out,
 * dq/dk (prepared rows) added into b->dQ/dK, dv, dbeta, dg written. */
static void KR(kcc_head)(KR(kda_ws) *w, KR(kcc) *b, const gdn_inputs *in, const gdn_chgate *gate,
                         const gdn_cotangents *ct, const kern_num *num, kreal scale, int value_axis, gdn_grads *out,
                         const kreal *S0, kreal *dS, int64_t bb, int64_t hv, int64_t c0, int64_t n) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv;
  KR(kda_rows)(w, in, gate, num, scale, bb, hv, c0, n);
  KR(kcc_recompute)(w, b, S0, n, Dk, Dv);
  for (int64_t i = 0; i < n; i++) {
    const float *d_o = ct->d_o + ((bb * s->T + c0 + i) * s->Hv + hv) * Dv;
    for (int64_t c = 0; c < Dv; c++) b->dO[i * Dv + c] = (kreal)KIN(num, d_o[c]); /* ftz: as an input */
  }
  KR(kcc_back_products)(w, b, S0, dS, n, Dk, Dv, value_axis);
  kreal *db = b->dbeta;
  if (w->mm != KERN_MATMUL_IEEE)
    KR(kcc_back_solve_mm)(w, b, db, n);
  else
    KR(kcc_back_solve)(w, b, db, n);
  for (int64_t x = 0; x < n * Dk; x++) b->dG[x] = 0;
  if (w->mm != KERN_MATMUL_IEEE)
    KR(kcc_back_pairs_mm)(w, b, n, Dk);
  else
    KR(kcc_back_pairs)(w, b, n, Dk);
  const kreal *Gl = w->G + (n - 1) * Dk;
  for (int64_t i = 0; i < n; i++)
    for (int64_t d = 0; d < Dk; d++) {
      const int64_t x = i * Dk + d;
      b->dK[x] = b->dK[x] + b->dxk[x] * b->E[x];
      b->dQ[x] = b->dQ[x] + b->dxq[x] * b->E[x];
      b->dG[x] = b->dG[x] + b->dxk[x] * w->xk[x] + b->dxq[x] * w->xq[x];
      if (i < n - 1) { /* kj's decay e^(G_last - G_i); the last row's is e^0 */
        b->dG[x] = b->dG[x] - b->dkj[x] * w->kj[x];
        b->dG[(n - 1) * Dk + d] = b->dG[(n - 1) * Dk + d] + b->dkj[x] * w->kj[x];
      }
    }
  /* dk through kj = k e^(G_last - G): the decay recomputed (the forward's) */
  for (int64_t i = 0; i < n; i++) {
    kreal *e = b->dxk + i * Dk; /* dxk is spent: scratch */
    for (int64_t d = 0; d < Dk; d++) e[d] = Gl[d] - w->G[i * Dk + d];
    KR(kda_expv)(e, e, Dk);
    for (int64_t d = 0; d < Dk; d++) b->dK[i * Dk + d] = b->dK[i * Dk + d] + b->dkj[i * Dk + d] * e[d];
  }
  for (int64_t d = 0; d < Dk; d++) b->dG[(n - 1) * Dk + d] = b->dG[(n - 1) * Dk + d] + b->deg[d] * w->eg[d];
  for (int64_t i = n - 1; i >= 0; i--) {
    const int64_t gi = (bb * s->T + c0 + i) * s->Hv + hv;
    double *dg = out->dg + gi * Dk;
    for (int64_t d = 0; d < Dk; d++) {
      if (i < n - 1) b->dG[i * Dk + d] = b->dG[i * Dk + d] + b->dG[(i + 1) * Dk + d];
      dg[d] = (double)b->dG[i * Dk + d];
    }
    out->dbeta[gi] = (double)KR(kcc_rn)(num, db[i]);
    for (int64_t c = 0; c < Dv; c++) out->dv[gi * Dv + c] = (double)KR(kcc_rn)(num, b->dv[i * Dv + c]);
  }
}
