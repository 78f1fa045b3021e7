/* Template (see kern_real.h): kern_kda_chunk in F (kern_kda.h states the
 * algorithm).  Rounding points, in order, per chunk of n <= C rows (the
 * last chunk computed on its n real rows: zero padding adds exact zeros and
 * leaves G_last unchanged):
 *   rows        kern_rows_tmpl.h (L2 norm, scale) for q and k; v, beta as read
 *   G           G_0 = g_0, G_i = G_(i-1) + g_i per channel (one add each)
 *   exponent    e = exp(G_x - G_y) (subtract, exp; an argument below
 *               -104 (float32) or -746 (float64) answered +0 without the
 *               call, which is what exp rounds it to: the same bits; in
 *               float32 the exps of a block are taken as an array by
 *               kern_expf.h, libm's expf bit for bit)
 *   scaled row  x_d * e (one product)
 *   A_kk, P     sums over d with fma, d ascending (kern_gemm's order for
 *               the blocks of earlier sub-chunks); inside a sub-chunk the
 *               term is (x_i[d] * e) times k_j[d], fused into the sum
 *   A_kk        * beta_i, negated (exact); (I + A_kk)^-1 by forward
 *               substitution (fma, m ascending), or under the xla-expander
 *               solve by kern_solve_xla.h on L = -A (exact), its rows one
 *               HIGHEST dot each; columns * beta_j
 *   products    every other product is kern_gemm (kern_gemm.h: fma, the
 *               inner index ascending; SET, or ADD continuing a sum):
 *   w, u        A (e^G k), A v over j ascending (A's zero upper triangle
 *               included: exact zeros)
 *   v_new       u - (w S) (the product, then the subtract)
 *   o           (q e^G) S, then ADD P v_new (one running sum per element)
 *   S           e^(G_last) S (one product), then ADD (k e^(G_last - G))^T v_new
 * Items: the B x Hv heads; memory per thread O(C^2 + C (Dk + Dv) + Dk Dv). */
#include "kern_mm.h"
#include "kern_rows_tmpl.h"
#include "kern_solve_xla.h"
#include "kern_kda_put_tmpl.h"

typedef struct KR(kda_ws) {
  kreal *q, *k, *v, *G, *beta;  /* C x Dk, C x Dk, C x Dv, C x Dk, C */
  kreal *A, *P, *row;           /* C x C, C x C, C */
  kreal *xk, *xq, *kj;          /* C x Dk each: rows scaled against a reference row */
  kreal *Et, *kt, *Xe;          /* kda_et_elems: a diagonal block's decays; Dk x SUB: its k rows, G rows (d-major), exp's arguments */
  kreal *w, *u, *vn, *o, *tmp;  /* C x Dk, C x Dv each */
  kreal *S, *eg, *gws;          /* Dk x Dv, Dk, kern_gemm's workspace */
  kreal *H0;                    /* Dk x Dv: h0 in F */
  kreal *Gc;                    /* Dk: G carried between chunks (mutant cumsum-across-chunks) */
  kern_kda_mutant mutant;
  /* the affine-prefix only (D >= 2): a piece's fold, a chunk's map, the
   * prefix, scratch: Dk x Dk (FA, An, Ac, T1) and Dk x Dv (FB, Bn, Bc, T2) */
  kreal *FA, *An, *Ac, *T1, *FB, *Bn, *Bc, *T2;
  /* the matmul mode (kern_mm.h) of the forward's products (kda_gemm): IEEE
   * unless kda_mm_bind gave a pass mode its splits and product scratch */
  kern_matmul mm;
  KR(kern_split) sa, sb;
  kreal *mmt;
  /* the in-chunk solve (kda_solve): substitution unless the forward's
   * config asks for the xla-expander, which solves L into A (Lx: C x C,
   * its splits at HIGHEST) */
  kern_solve solve;
  kreal *Lx;
  KR(kern_split) ssl, ssx;
} KR(kda_ws);

/* Et: a diagonal block's decays, channel-major, each channel's row pairs
 * (i, j < i) packed (kda_diag), and SB lanes of overrun. */
static size_t KR(kda_et_elems)(int64_t Dk) {
  return (size_t)(KERN_KDA_SUB * (KERN_KDA_SUB - 1) / 2 * Dk + KERN_KDA_SUB);
}

static size_t KR(kda_chunk_per)(int64_t C, int64_t Dk, int64_t Dv, int affine) {
  size_t per = 0;
  const size_t cdk = KR(rows_pad)((size_t)(C * Dk)), cdv = KR(rows_pad)((size_t)(C * Dv));
  per = kern_size_add(per, kern_size_mul(7, cdk));
  per = kern_size_add(per, kern_size_mul(5, cdv));
  per = kern_size_add(per, KR(rows_pad)(KR(kern_gemm_ws_elems)()));
  per = kern_size_add(per, kern_size_mul(2, KR(rows_pad)((size_t)(C * C))));
  per = kern_size_add(per, kern_size_mul(2, KR(rows_pad)((size_t)(KERN_KDA_SUB * Dk))));
  per = kern_size_add(per, KR(rows_pad)(KR(kda_et_elems)(Dk)));
  per = kern_size_add(per, 2 * KR(rows_pad)((size_t)C) + 2 * KR(rows_pad)((size_t)Dk));
  per = kern_size_add(per, kern_size_mul(2, KR(rows_pad)((size_t)(Dk * Dv))));
  /* the xla-expander's L and its and X's splits (HIGHEST; none for F64) */
  per = kern_size_add(per, KR(rows_pad)((size_t)(C * C)));
  per = kern_size_add(per, kern_size_mul(2, KR(rows_pad)(KR(kern_split_elems)(KERN_MATMUL_HIGHEST, (size_t)(C * C)))));
  if (affine) {
    per = kern_size_add(per, kern_size_mul(4, KR(rows_pad)((size_t)(Dk * Dk))));
    per = kern_size_add(per, kern_size_mul(4, KR(rows_pad)((size_t)(Dk * Dv))));
  }
  return per;
}

static void KR(kda_carve)(KR(kda_ws) *w, kreal *p, int64_t C, int64_t Dk, int64_t Dv, int affine) {
  w->q = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->k = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->G = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->xk = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->xq = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->kj = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->Et = KR(rows_carve)(&p, KR(kda_et_elems)(Dk));
  w->kt = KR(rows_carve)(&p, (size_t)(KERN_KDA_SUB * Dk));
  w->Xe = KR(rows_carve)(&p, (size_t)(KERN_KDA_SUB * Dk));
  w->w = KR(rows_carve)(&p, (size_t)(C * Dk));
  w->v = KR(rows_carve)(&p, (size_t)(C * Dv));
  w->u = KR(rows_carve)(&p, (size_t)(C * Dv));
  w->vn = KR(rows_carve)(&p, (size_t)(C * Dv));
  w->A = KR(rows_carve)(&p, (size_t)(C * C));
  w->P = KR(rows_carve)(&p, (size_t)(C * C));
  w->beta = KR(rows_carve)(&p, (size_t)C);
  w->row = KR(rows_carve)(&p, (size_t)C);
  w->o = KR(rows_carve)(&p, (size_t)(C * Dv));
  w->tmp = KR(rows_carve)(&p, (size_t)(C * Dv));
  w->gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  w->eg = KR(rows_carve)(&p, (size_t)Dk);
  w->Gc = KR(rows_carve)(&p, (size_t)Dk);
  w->S = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->H0 = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->solve = KERN_SOLVE_SUBSTITUTION;
  w->Lx = KR(rows_carve)(&p, (size_t)(C * C));
  const size_t ns = KR(kern_split_elems)(KERN_MATMUL_HIGHEST, (size_t)(C * C));
  KR(kern_split_bind)(&w->ssl, KERN_MATMUL_HIGHEST, KR(rows_carve)(&p, ns), (size_t)(C * C));
  KR(kern_split_bind)(&w->ssx, KERN_MATMUL_HIGHEST, KR(rows_carve)(&p, ns), (size_t)(C * C));
  w->FA = w->An = w->Ac = w->T1 = w->FB = w->Bn = w->Bc = w->T2 = NULL;
  w->mm = KERN_MATMUL_IEEE;
  w->mmt = NULL;
  if (!affine) return;
  w->FA = KR(rows_carve)(&p, (size_t)(Dk * Dk));
  w->An = KR(rows_carve)(&p, (size_t)(Dk * Dk));
  w->Ac = KR(rows_carve)(&p, (size_t)(Dk * Dk));
  w->T1 = KR(rows_carve)(&p, (size_t)(Dk * Dk));
  w->FB = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->Bn = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->Bc = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  w->T2 = KR(rows_carve)(&p, (size_t)(Dk * Dv));
}

/* The largest operand or product of kda_gemm (its storage extent). */
static size_t KR(kda_mm_extent)(int64_t C, int64_t Dk, int64_t Dv) {
  const int64_t wide = C > Dk ? (C > Dv ? C : Dv) : (Dk > Dv ? Dk : Dv);
  const size_t a = kern_size_mul((size_t)C, (size_t)wide), b = kern_size_mul((size_t)Dk, (size_t)wide);
  return a > b ? a : b;
}

/* Elements kda_mm_bind takes for mode mm (0 for IEEE). */
static size_t KR(kda_mm_per)(kern_matmul mm, int64_t C, int64_t Dk, int64_t Dv) {
  if (mm == KERN_MATMUL_IEEE) return 0;
  const size_t x = KR(kda_mm_extent)(C, Dk, Dv);
  return kern_size_add(kern_size_mul(2, KR(rows_pad)(KR(kern_split_elems)(mm, x))), KR(rows_pad)(x));
}

/* Gives w the pass mode mm (kda_mm_per(mm, ...) elements at p). */
static void KR(kda_mm_bind)(KR(kda_ws) *w, kreal *p, kern_matmul mm, int64_t C, int64_t Dk, int64_t Dv) {
  w->mm = mm;
  if (mm == KERN_MATMUL_IEEE) return;
  const size_t x = KR(kda_mm_extent)(C, Dk, Dv);
  KR(kern_split_bind)(&w->sa, mm, KR(rows_carve)(&p, KR(kern_split_elems)(mm, x)), x);
  KR(kern_split_bind)(&w->sb, mm, KR(rows_carve)(&p, KR(kern_split_elems)(mm, x)), x);
  w->mmt = KR(rows_carve)(&p, x);
}

/* kern_gemm's C (op) A B in w's matmul mode: IEEE is kern_gemm itself (the
 * same call, the same bits); a pass mode splits each operand over its
 * storage extent and multiplies by kern_mm (SET), or rounds the product
 * and adds it (ADD: kern_mm_plus, as jnp's c + a @ b). */
static void KR(kda_gemm)(KR(kda_ws) *w, kern_gemm_acc op, int64_t m, int64_t n, int64_t k, const kreal *a,
                         int64_t ars, int64_t acs, const kreal *b, int64_t brs, int64_t bcs, kreal *c, int64_t ldc,
                         kreal *gws) {
  if (w->mm == KERN_MATMUL_IEEE || m <= 0 || n <= 0 || k <= 0) {
    KR(kern_gemm)(op, m, n, k, a, ars, acs, b, brs, bcs, c, ldc, gws);
    return;
  }
  KR(kern_split_fill)(&w->sa, w->mm, a, (size_t)((m - 1) * ars + (k - 1) * acs + 1));
  KR(kern_split_fill)(&w->sb, w->mm, b, (size_t)((k - 1) * brs + (n - 1) * bcs + 1));
  if (op == KERN_GEMM_SET)
    KR(kern_mm)(w->mm, m, n, k, &w->sa, ars, acs, &w->sb, brs, bcs, c, ldc, gws);
  else
    KR(kern_mm_plus)(w->mm, m, n, k, &w->sa, ars, acs, &w->sb, brs, bcs, c, ldc, w->mmt, n, gws);
}

/* Rows [t0, t0 + n) of head (b, hv): prepared q, k, v, beta and G. */
static void KR(kda_rows)(KR(kda_ws) *w, const gdn_inputs *in, const gdn_chgate *gate, const kern_num *num,
                         kreal scale, int64_t b, int64_t hv, int64_t t0, int64_t n) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, hk = gdn_inputs_key_head(in, hv);
  for (int64_t i = 0; i < n; i++) {
    const int64_t t = t0 + i;
    KR(rows_in)(gdn_inputs_q(in, b, t, hk), Dk, num, w->q + i * Dk); /* rows_qk's steps, finished below */
    KR(rows_in)(gdn_inputs_k(in, b, t, hk), Dk, num, w->k + i * Dk);
    KR(rows_v)(gdn_inputs_v(in, b, t, hv), Dv, num, w->v + i * Dv);
    w->beta[i] = KR(rows_beta)(gdn_inputs_beta(in, b, t, hv), num);
    const int64_t hg = w->mutant == KERN_KDA_MUTANT_GATE_OTHER_HEAD ? (hv + 1) % s->Hv : hv;
    const float *g = gdn_chgate_row(gate->g, s, b, t, hg);
    kreal *G = w->G + i * Dk;
    if (i == 0 && w->mutant == KERN_KDA_MUTANT_CUMSUM_ACROSS_CHUNKS)
      for (int64_t d = 0; d < Dk; d++) G[d] = w->Gc[d] + KR(rows_g)(g[d], num);
    else
      for (int64_t d = 0; d < Dk; d++) G[d] = i ? G[d - Dk] + KR(rows_g)(g[d], num) : KR(rows_g)(g[d], num);
  }
  if (w->mutant == KERN_KDA_MUTANT_CUMSUM_ACROSS_CHUNKS)
    for (int64_t d = 0; d < Dk; d++) w->Gc[d] = w->G[(n - 1) * Dk + d];
  /* the L2 norms of eight rows side by side (kern_rows_tmpl.h): rows_qk's bits */
  KR(rows_qk_finish)(w->q, n, Dk, in->l2norm_in_kernel, 1, scale, num);
  KR(rows_qk_finish)(w->k, n, Dk, in->l2norm_in_kernel, 0, scale, num);
}

/* exp(x), with the arguments whose exp rounds to +0 in every rounding
 * mode the kernels run (round to nearest, FTZ or not) answered 0 without
 * the call: the same bits, without libm's underflow path. */
static inline kreal KR(kda_exp)(kreal x) {
  return x < KC(KERN_REAL == 32 ? -104.0 : -746.0) ? KC(0) : KEXP(x);
}

/* y[i] = exp(x[i]), i < n (y may be x): float32 through kern_expf.h (libm's
 * expf bit for bit, vectorised), float64 one kda_exp at a time. */
static inline void KR(kda_expv)(kreal *y, const kreal *x, int64_t n) {
#if KERN_REAL == 32
  kern_expf_array(y, x, n);
#else
  for (int64_t i = 0; i < n; i++) y[i] = KR(kda_exp)(x[i]);
#endif
}

/* out[j][d] = x[j][d] * exp(Ga[d] - Gb[j][d]) for j < m (Ga NULL:
 * exp(Gb[j][d])); out != x. */
static void KR(kda_scale_rows)(kreal *out, const kreal *x, const kreal *Ga, const kreal *Gb, int64_t m, int64_t Dk) {
  for (int64_t j = 0; j < m; j++) {
    kreal *o = out + j * Dk;
    const kreal *Gj = Gb + j * Dk;
    if (!Ga)
      KSIMD for (int64_t d = 0; d < Dk; d++) o[d] = Gj[d];
    else
      KSIMD for (int64_t d = 0; d < Dk; d++) o[d] = Ga[d] - Gj[d];
  }
  KR(kda_expv)(out, out, m * Dk);
  KSIMD for (int64_t t = 0; t < m * Dk; t++) out[t] = x[t] * out[t];
}

/* Rows i0 .. i0 + nr - 1 (nr 1 or 4, a constant where inlined) of the
 * diagonal block at r, from the packed decays Et (kda_diag): nr rows at a
 * time so that 2 nr independent sums are in flight (each its own
 * accumulator, d ascending: the bits of one row at a time). */
static inline __attribute__((always_inline)) void KR(kda_diag_rows)(KR(kda_ws) *w, int64_t r, int64_t i0, int nr,
                                                                    int64_t np, int64_t C, int64_t Dk) {
  enum { SB = KERN_KDA_SUB };
  const kreal *Et = w->Et, *kt = w->kt;
  kreal sa[4][SB], sp[4][SB];
  for (int x = 0; x < nr; x++)
    for (int64_t j = 0; j < SB; j++) sa[x][j] = sp[x][j] = 0;
  for (int64_t d = 0; d < Dk; d++) {
    const kreal *kd_j = kt + d * SB;
    for (int x = 0; x < nr; x++) {
      const int64_t ni = i0 + x - r;
      const kreal kd = w->k[(i0 + x) * Dk + d], qd = w->q[(i0 + x) * Dk + d], *Ed = Et + d * np + ni * (ni - 1) / 2;
      KSIMD for (int64_t j = 0; j < SB; j++) {
        const kreal e = j < ni ? Ed[j] : KC(1);
        sa[x][j] = KFMA(kd * e, kd_j[j], sa[x][j]);
        sp[x][j] = KFMA(qd * e, kd_j[j], sp[x][j]);
      }
    }
  }
  for (int x = 0; x < nr; x++) {
    const int64_t i = i0 + x, ni = i - r;
    for (int64_t j = 0; j < ni; j++) w->A[i * C + r + j] = sa[x][j];
    for (int64_t j = 0; j <= ni; j++) w->P[i * C + r + j] = sp[x][j];
  }
}

/* The diagonal block of sub-chunk [r, r1): for i in it and j = r .. i,
 *   A[i][j] = sum_d fma((k_i[d] e) , k_j[d]),  P[i][j] the same with q_i,
 * e = exp(G_i[d] - G_j[d]) per element (e = 1 for j = i: exp(0) is exact),
 * d ascending.  The loops run d outer and j inner over one row i at a time,
 * each (i, j) sum its own accumulator, so every sum sees the same terms in
 * the same order as the plain triple loop (the same bits): the j loop is
 * the vector one.  The decays are formed once per block, channel-major:
 * channel d's row holds the pairs (i, j < i) packed, row i's j lanes at
 * d np + i (i - 1) / 2 (np = m (m - 1) / 2 pairs), from G transposed once,
 * each row's arguments written SB lanes wide in i order (a row's lanes past
 * its own are overwritten by the next row's; the last row's spill lands in
 * the next channel, written after it, or the SB lanes of overrun); one exp
 * over the np Dk packed decays; the row loop reads SB lanes at the row's
 * start and takes 1 from lane i - r on (the exact diagonal; lanes past it
 * are not stored). */
static void KR(kda_diag)(KR(kda_ws) *w, int64_t r, int64_t r1, int64_t C, int64_t Dk) {
  enum { SB = KERN_KDA_SUB };
  const int64_t m = r1 - r, np = m * (m - 1) / 2;
  kreal *Et = w->Et, *kt = w->kt, *Gt = w->Xe;
  for (int64_t j = 0; j < m; j++)
    for (int64_t d = 0; d < Dk; d++) {
      kt[d * SB + j] = w->k[(r + j) * Dk + d];
      Gt[d * SB + j] = w->G[(r + j) * Dk + d];
    }
  for (int64_t j = m; j < SB; j++)
    for (int64_t d = 0; d < Dk; d++) kt[d * SB + j] = Gt[d * SB + j] = 0;
  for (int64_t d = 0; d < Dk; d++) {
    const kreal *Gd = Gt + d * SB;
    for (int64_t i = 1; i < m; i++) {
      kreal *Ed = Et + d * np + i * (i - 1) / 2;
      const kreal g = Gd[i];
      KSIMD for (int64_t j = 0; j < SB; j++) Ed[j] = g - Gd[j];
    }
  }
  KR(kda_expv)(Et, Et, np * Dk);
  int64_t i = r;
  for (; i + 4 <= r1; i += 4) KR(kda_diag_rows)(w, r, i, 4, np, C, Dk);
  for (; i < r1; i++) KR(kda_diag_rows)(w, r, i, 1, np, C, Dk);
}

/* A (strictly lower, times beta_i, negated) and P (lower, diagonal
 * included) by sub-chunks (kern_kda.h). */
static void KR(kda_intra)(KR(kda_ws) *w, int64_t n, int64_t Dk) {
  const int64_t C = n;
  for (int64_t x = 0; x < C * C; x++) w->A[x] = w->P[x] = 0;
  for (int64_t r = 0; r < n; r += KERN_KDA_SUB) {
    const int64_t r1 = r + KERN_KDA_SUB < n ? r + KERN_KDA_SUB : n;
    const kreal *Gr = w->G + r * Dk;
    /* the rows of sub-chunk I against its first row r, and every earlier row */
    for (int64_t i = r; i < r1; i++) {
      kreal *X = w->Xe + (i - r) * Dk;
      KSIMD for (int64_t d = 0; d < Dk; d++) X[d] = w->G[i * Dk + d] - Gr[d];
    }
    KR(kda_expv)(w->Xe, w->Xe, (r1 - r) * Dk);
    for (int64_t i = r; i < r1; i++)
      KSIMD for (int64_t d = 0; d < Dk; d++) {
        const kreal e = w->Xe[(i - r) * Dk + d];
        w->xk[i * Dk + d] = w->k[i * Dk + d] * e;
        w->xq[i * Dk + d] = w->q[i * Dk + d] * e;
      }
    KR(kda_scale_rows)(w->kj, w->k, Gr, w->G, r, Dk);
    /* the block of earlier sub-chunks: (x e^(G - G_r)) (k e^(G_r - G))^T,
     * kern_gemm's order (d ascending, fma) */
    if (r > 0) {
      const int64_t rj = w->mutant == KERN_KDA_MUTANT_SUBCHUNK_OFF_BY_ONE ? r - 1 : r;
      KR(kda_gemm)(w, KERN_GEMM_SET, r1 - r, rj, Dk, w->xk + r * Dk, Dk, 1, w->kj, 1, Dk, w->A + r * C, C, w->gws);
      KR(kda_gemm)(w, KERN_GEMM_SET, r1 - r, rj, Dk, w->xq + r * Dk, Dk, 1, w->kj, 1, Dk, w->P + r * C, C, w->gws);
    }
    KR(kda_diag)(w, r, r1, C, Dk);
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) w->A[i * C + j] = -(w->A[i * C + j] * w->beta[i]);
}

/* A <- ((I + L)^-1) Diag(beta), where A held -L (fla's substitution: row i
 * from its own original entries and the finished rows above it). */
static void KR(kda_solve_sub)(KR(kda_ws) *w, int64_t n) {
  const int64_t C = n;
  for (int64_t i = 1; i < n; i++) {
    kreal *Ai = w->A + i * C;
    for (int64_t c = 0; c < i; c++) w->row[c] = Ai[c];
    /* Ai[c] = row[c] + sum_{m = c+1}^{i-1} row[m] A[m][c], m ascending for
     * every c (the loop over c inside is over independent outputs) */
    for (int64_t m = 1; m < i; m++) {
      const kreal rm = w->row[m], *Am = w->A + m * C;
      KSIMD for (int64_t c = 0; c < m; c++) Ai[c] = KFMA(rm, Am[c], Ai[c]);
    }
  }
  for (int64_t i = 0; i < n; i++) {
    w->A[i * C + i] = 1;
    for (int64_t j = 0; j <= i; j++) w->A[i * C + j] = w->A[i * C + j] * w->beta[j];
  }
}

/* A <- ((I + L)^-1) Diag(beta), where A held -L, by XLA's
 * TriangularSolveExpander (kern_solve_xla.h) on the chunk's whole n x n
 * matrix (the sub-chunks only form L's entries): Lx = L (-(-L): exact),
 * X = (I + L)^-1 into A, then the columns times beta (one product each, as
 * the substitution's; the upper triangle +0). */
static void KR(kda_solve_xla)(KR(kda_ws) *w, int64_t n) {
  const int64_t C = n;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) w->Lx[i * C + j] = j < i ? -w->A[i * C + j] : KC(0);
  KR(kern_solve_xla)(n, w->Lx, w->A, &w->ssl, &w->ssx, w->row, w->gws);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) w->A[i * C + j] = j <= i ? w->A[i * C + j] * w->beta[j] : KC(0);
}

/* The chunk's solve in the mode w->solve. */
static void KR(kda_solve)(KR(kda_ws) *w, int64_t n) {
  if (w->solve == KERN_SOLVE_XLA_EXPANDER)
    KR(kda_solve_xla)(w, n);
  else
    KR(kda_solve_sub)(w, n);
}

/* w = A (e^G k), u = A v; then the chunk against the carried state S:
 * v_new, o (rows written to out), S updated. */
static void KR(kda_inter)(KR(kda_ws) *w, gdn_outputs *out, kern_kda_mutant mutant, int64_t b, int64_t hv,
                          int64_t t0, int64_t n, int64_t Dk, int64_t Dv) {
  const int64_t C = n;
  const int out_bf16 = out->dtype == GDN_DTYPE_BF16;
  KR(kda_expv)(w->xk, w->G, n * Dk); /* xk <- e^G k, xq <- q e^G (one exp for both) */
  KSIMD for (int64_t x = 0; x < n * Dk; x++) {
    const kreal e = w->xk[x];
    w->xk[x] = w->k[x] * e;
    w->xq[x] = w->q[x] * e;
  }
  /* w = A (e^G k), u = A v (A lower triangular: the zeros above the
   * diagonal add exact zeros) */
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, n, w->A, C, 1, w->xk, Dk, 1, w->w, Dk, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, n, w->A, C, 1, w->v, Dv, 1, w->u, Dv, w->gws);
  /* v_new = u - w S;  o = (q e^G) S + P v_new */
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, Dk, w->w, Dk, 1, w->S, Dv, 1, w->tmp, Dv, w->gws);
  for (int64_t x = 0; x < n * Dv; x++) w->vn[x] = w->u[x] - w->tmp[x];
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, Dk, w->xq, Dk, 1, w->S, Dv, 1, w->o, Dv, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_ADD, n, Dv, n, w->P, C, 1, w->vn, Dv, 1, w->o, Dv, w->gws);
  for (int64_t i = 0; i < n; i++) KR(kda_put_o)(out, b, t0 + i, hv, w->o + i * Dv, out_bf16);
  const kreal *Gl = w->G + (n - 1) * Dk;
  KR(kda_expv)(w->eg, Gl, Dk);
  for (int64_t d = 0; d < Dk; d++) {
    kreal *Sd = w->S + d * Dv;
    if (mutant == KERN_KDA_MUTANT_GATE_VALUE_AXIS)
      for (int64_t c = 0; c < Dv; c++) Sd[c] = Sd[c] * w->eg[c % Dk];
    else {
      const kreal ed = w->eg[d];
      KSIMD for (int64_t c = 0; c < Dv; c++) Sd[c] = Sd[c] * ed;
    }
  }
  /* S += (k e^(G_last - G))^T v_new, j ascending */
  KR(kda_scale_rows)(w->kj, w->k, Gl, w->G, n, Dk);
  KR(kda_gemm)(w, KERN_GEMM_ADD, Dk, Dv, n, w->kj, 1, Dk, w->vn, Dv, 1, w->S, Dv, w->gws);
}

/* The chunks of rows [t0, t1) of head (b, hv), their grid starting at t0,
 * from the carry w->S: o rows written, w->S the carry after t1. */
static void KR(kda_replay)(KR(kda_ws) *w, const gdn_inputs *in, const gdn_chgate *gate, kern_kda_mutant mutant,
                           int64_t C, const kern_num *num, kreal scale, gdn_outputs *out, int64_t b, int64_t hv,
                           int64_t t0, int64_t t1) {
  const int64_t Dk = in->shape.Dk, Dv = in->shape.Dv;
  w->mutant = mutant;
  for (int64_t d = 0; d < Dk; d++) w->Gc[d] = 0;
  for (int64_t c0 = t0; c0 < t1; c0 += C) {
    const int64_t n = t1 - c0 < C ? t1 - c0 : C;
    KR(kda_rows)(w, in, gate, num, scale, b, hv, c0, n);
    KR(kda_intra)(w, n, Dk);
    KR(kda_solve)(w, n);
    KR(kda_inter)(w, out, mutant, b, hv, c0, n, Dk, Dv);
  }
  w->mutant = KERN_KDA_MUTANT_NONE; /* the folds compute the correct map */
}

/* The affine map of rows [t0, t1) (kern_kda.h, kern_kda_affine): S_out =
 * FA S_in + FB, folded chunk by chunk from (I, 0): per chunk
 *   A_n = Diag(e^G_last) - (k e^(G_last - G))^T W,  B_n = (k e^(G_last - G))^T U
 * (each product kern_gemm; A_n's entries the diagonal minus the product, one
 * subtraction), then FA = A_n FA, FB = A_n FB + B_n (the product, then the
 * add). */
static void KR(kda_fold)(KR(kda_ws) *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t C,
                         const kern_num *num, kreal scale, int64_t b, int64_t hv, int64_t t0, int64_t t1) {
  const int64_t Dk = in->shape.Dk, Dv = in->shape.Dv;
  for (int64_t x = 0; x < Dk * Dk; x++) w->FA[x] = 0;
  for (int64_t d = 0; d < Dk; d++) w->FA[d * Dk + d] = 1;
  for (int64_t x = 0; x < Dk * Dv; x++) w->FB[x] = 0;
  for (int64_t c0 = t0; c0 < t1; c0 += C) {
    const int64_t n = t1 - c0 < C ? t1 - c0 : C;
    KR(kda_rows)(w, in, gate, num, scale, b, hv, c0, n);
    KR(kda_intra)(w, n, Dk);
    KR(kda_solve)(w, n);
    KR(kda_scale_rows)(w->xk, w->k, NULL, w->G, n, Dk);
    KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, n, w->A, n, 1, w->xk, Dk, 1, w->w, Dk, w->gws);
    KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, n, w->A, n, 1, w->v, Dv, 1, w->u, Dv, w->gws);
    const kreal *Gl = w->G + (n - 1) * Dk;
    KR(kda_scale_rows)(w->kj, w->k, Gl, w->G, n, Dk);
    KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dk, n, w->kj, 1, Dk, w->w, Dk, 1, w->An, Dk, w->gws);
    for (int64_t d = 0; d < Dk; d++)
      for (int64_t e2 = 0; e2 < Dk; e2++)
        w->An[d * Dk + e2] = (d == e2 ? KR(kda_exp)(Gl[d]) : KC(0)) - w->An[d * Dk + e2];
    KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dv, n, w->kj, 1, Dk, w->u, Dv, 1, w->Bn, Dv, w->gws);
    KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dk, Dk, w->An, Dk, 1, w->FA, Dk, 1, w->T1, Dk, w->gws);
    memcpy(w->FA, w->T1, (size_t)(Dk * Dk) * sizeof(kreal));
    KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dv, Dk, w->An, Dk, 1, w->FB, Dv, 1, w->T2, Dv, w->gws);
    for (int64_t x = 0; x < Dk * Dv; x++) w->FB[x] = w->T2[x] + w->Bn[x];
  }
}

/* h = FA h0 + FB into w->S (h0 NULL: FB). */
static void KR(kda_apply)(KR(kda_ws) *w, const kreal *FA, const kreal *FB, const kreal *h0, int64_t Dk, int64_t Dv) {
  if (!h0) {
    memcpy(w->S, FB, (size_t)(Dk * Dv) * sizeof(kreal));
    return;
  }
  KR(kda_gemm)(w, KERN_GEMM_SET, Dk, Dv, Dk, FA, Dk, 1, h0, Dv, 1, w->S, Dv, w->gws);
  for (int64_t x = 0; x < Dk * Dv; x++) w->S[x] = w->S[x] + FB[x];
}

static __attribute__((noinline)) void KR(kda_chunk_thread)(const gdn_inputs *in, const gdn_chgate *gate,
                                                           kern_kda_mutant mutant, int64_t C, int64_t D,
                                                           const kern_num *num, gdn_outputs *out, kreal *mem,
                                                           size_t per) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, items = s->B * s->Hv, L = s->T / D;
  const kreal scale = KR(rows_scale)(in, num);
  KR(kda_ws) w;
  kreal *p = mem + (size_t)omp_get_thread_num() * per;
  KR(kda_carve)(&w, p, C, Dk, Dv, D > 1);
  KR(kda_mm_bind)(&w, p + KR(rows_pad)(KR(kda_chunk_per)(C, Dk, Dv, D > 1)), num->matmul, C, Dk, Dv);
  w.mutant = KERN_KDA_MUTANT_NONE;
  w.solve = num->solve;
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < items; it++) {
    const int64_t b = it / s->Hv, hv = it % s->Hv;
    const float *h0f = gdn_inputs_h0(in, b, hv);
    if (h0f)
      for (int64_t x = 0; x < Dk * Dv; x++) w.H0[x] = (kreal)KIN(num, h0f[x]);
    const kreal *h0 = h0f ? w.H0 : NULL;
    if (D > 1) { /* the exclusive prefix, sequential: (Acum, Bcum) of devices 0 .. r-1 */
      for (int64_t x = 0; x < Dk * Dk; x++) w.Ac[x] = 0;
      for (int64_t d = 0; d < Dk; d++) w.Ac[d * Dk + d] = 1;
      for (int64_t x = 0; x < Dk * Dv; x++) w.Bc[x] = 0;
    }
    for (int64_t r = 0; r < D; r++) {
      if (r == 0) {
        for (int64_t x = 0; x < Dk * Dv; x++) w.S[x] = h0 ? h0[x] : 0;
      } else {
        KR(kda_apply)(&w, w.Ac, w.Bc, h0, Dk, Dv);
      }
      KR(kda_replay)(&w, in, gate, mutant, C, num, scale, out, b, hv, r * L, (r + 1) * L);
      if (D == 1) break;
      /* device r's pair, composed after the prefix: Acum = A_r Acum, Bcum = A_r Bcum + B_r */
      KR(kda_fold)(&w, in, gate, C, num, scale, b, hv, r * L, (r + 1) * L);
      KR(kda_gemm)(&w, KERN_GEMM_SET, Dk, Dk, Dk, w.FA, Dk, 1, w.Ac, Dk, 1, w.T1, Dk, w.gws);
      memcpy(w.Ac, w.T1, (size_t)(Dk * Dk) * sizeof(kreal));
      KR(kda_gemm)(&w, KERN_GEMM_SET, Dk, Dv, Dk, w.FA, Dk, 1, w.Bc, Dv, 1, w.T2, Dv, w.gws);
      for (int64_t x = 0; x < Dk * Dv; x++) w.Bc[x] = w.T2[x] + w.FB[x];
    }
    if (D > 1) KR(kda_apply)(&w, w.Ac, w.Bc, h0, Dk, Dv); /* ht: the full composition applied to h0 */
    double *ht = gdn_outputs_ht(out, b, hv);
    for (int64_t x = 0; x < Dk * Dv; x++) ht[x] = w.S[x];
  }
}

static int KR(kda_chunk_run)(const gdn_inputs *in, const gdn_chgate *gate, kern_kda_mutant mutant, int64_t C,
                             int64_t D, const kern_num *num, gdn_outputs *out, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int nt = gdn_threads_for(s->B * s->Hv);
  const size_t per = kern_size_add(KR(rows_pad)(KR(kda_chunk_per)(C, s->Dk, s->Dv, D > 1)),
                                   KR(kda_mm_per)(num->matmul, C, s->Dk, s->Dv));
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), "kern_kda_chunk per-thread scratch", e);
  if (!mem) return gdn_error_prefix(e, "kern_kda_chunk: "), GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(kda_chunk_thread)(in, gate, mutant, C, D, num, out, mem, per);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
