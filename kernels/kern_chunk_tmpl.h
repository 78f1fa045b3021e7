/* Template (see kern_real.h): one chunk of MaxText's chunked algorithm in F,
 * shared by kern_scan and kern_affine_prefix (algorithm.md steps 2-4).
 *
 * A kchunk is the scratch of one thread: every temporary of one chunk of one
 * (batch, value head), O(C^2 + C (Dk + Dv) + Dk Dv) elements (times 1 + the
 * number of bf16 parts of the matmul mode, for the operand splits), reused
 * chunk after chunk.  Nothing here allocates.
 *
 * Rounding points and reduction orders, step by step.  Every product is
 * kern_mm in the config's matmul mode (kern_mm.h: IEEE = kern_gemm, p
 * ascending, fma, from the first product; the bf16 pass modes on the
 * operands' splits, each split made once and reused by every product that
 * reads it: K by S and attn, A by U and W, W by the body and A_n, Kt by the
 * body and the affine map, h by o_inter and W h, v_new by attn v_new and
 * Kt^T v_new).  The KERN_RP_* hooks (kern_num.h) round to bfloat16 for
 * compute dtype bfloat16 and are the identity otherwise:
 *   load     rows as kern_rows_tmpl.h (KERN_RP_INPUT, KERN_RP_Q_SCALE); t >= T
 *            is zero padding (q, k, v, g, beta = 0, so the state passes
 *            through unchanged).
 *   G        G_0 = g_0, G_i = G_{i-1} + g_i (left to right, restarts each
 *            chunk); eG_i = exp(G_i); eGl_i = exp(G_{C-1} - G_i);
 *            eGlast = exp(G_{C-1}); dec_ij = exp(G_i - G_j) only for i > j
 *            (the mask is applied before exp).  All float32 for bfloat16.
 *   WY       kb = k * beta (row-wise; KERN_RP_BETA_MUL); S = kb K^T
 *            (KERN_RP_KKT); S_ij = S_ij * dec_ij for i > j, else 0.
 *            A = (I + S)^-1 by forward substitution: row i
 *            starts as e_i and for m = 0 .. i-1 ascending A_i. = fma(-S_im,
 *            A_m., A_i.) on columns 0 .. m (A_mj = 0 beyond m) -- bitwise the
 *            same as e_i - (sum_m S_im A_m. accumulated by fma), since
 *            round(-x) = -round(x).  (The solve is jax.scipy's
 *            solve_triangular, not a matmul: plain float32 fma in every
 *            mode.)  vb = v * beta (KERN_RP_BETA_MUL); U = A vb;
 *            kbg = kb * eG (row-wise); W = A kbg; then KERN_RP_UW on U, W.
 *   prep     qg = q * eG (row-wise); attn = q K^T (KERN_RP_QKT),
 *            attn_ij = attn_ij * dec_ij for i > j, kept for i = j (times
 *            exp(0) = 1, exact), 0 above; Kt = k * eGl (row-wise).
 *   body(h)  o_inter = qg h; v_new = U - W h (product, then subtract);
 *            o = o_inter + attn v_new (product, then add);
 *            h = h * eGlast + Kt^T v_new (product; multiply; add).
 *   affine   A_n = eGlast I - Kt^T W (product, then subtract from the
 *            diagonal / from 0), B_n = Kt^T U.
 * With ftz every step above also flushes (kern_num.h).
 */
#include "kern_rows_tmpl.h"

#undef KSPLIT
#define KSPLIT KR(kern_split)

typedef struct KR(kchunk) {
  const gdn_inputs *in;
  const kern_num *num;
  int64_t C, Dk, Dv;
  kreal scale;
  int out_bf16;
  int64_t b, hv, hk; /* the (batch, value head) being computed, its key head */
  kreal *q, *k, *v;               /* C x Dk, C x Dk, C x Dv */
  kreal *g, *beta, *G, *eG, *eGl; /* C */
  kreal eGlast;
  kreal *dec, *S, *A, *attn;      /* C x C */
  kreal *kb, *vb, *U, *W, *Kt, *qg; /* C x Dk or C x Dv */
  kreal *vnew, *oin, *oat;        /* C x Dv */
  kreal *hn;                      /* Dk x Dv */
  kreal *gws;                     /* kern_gemm workspace */
  /* operand splits (kern_mm.h; no storage in IEEE mode), with lifetimes:
   *   sk    K                       wy (S), prep (attn)
   *   sck   kb -> kbg -> q -> qg    S; W; attn; body (o_inter)
   *   scc   A -> attn               U, W; body (attn v_new)
   *   scv   vb -> U | v_new         U; affine (B_n) | body
   *   sW    W                       body (W h), affine (A_n)
   *   sKt   Kt                      body (h update), affine
   *   sh    the carried h           body (o_inter, W h) */
  KSPLIT sk, sck, scc, scv, sW, sKt, sh;
} KR(kchunk);

/* Elements (of F) one kchunk needs. */
KTMPL size_t KR(kchunk_elems)(int64_t C, int64_t Dk, int64_t Dv, kern_matmul mode) {
  /* saturating: see kern_size.h */
  const size_t c = (size_t)C, dk = (size_t)Dk, dv = (size_t)Dv;
  const size_t ck = KR(rows_pad)(kern_size_mul(c, dk)), cv = KR(rows_pad)(kern_size_mul(c, dv));
  size_t n = kern_size_mul(6, ck);                                 /* q k kb W Kt qg */
  n = kern_size_add(n, kern_size_mul(6, cv));                      /* v vb U vnew oin oat */
  n = kern_size_add(n, kern_size_mul(5, KR(rows_pad)(c)));         /* g beta G eG eGl */
  n = kern_size_add(n, kern_size_mul(4, KR(rows_pad)(kern_size_mul(c, c)))); /* dec S A attn */
  n = kern_size_add(n, KR(rows_pad)(kern_size_mul(dk, dv)));       /* hn */
  n = kern_size_add(n, KR(rows_pad)(KR(kern_gemm_ws_elems)()));
  /* splits: sk sck sW sKt (C x Dk), scc (C x C), scv (C x Dv), sh (Dk x Dv) */
  n = kern_size_add(n, kern_size_mul(4, KR(kern_split_elems)(mode, kern_size_mul(c, dk))));
  n = kern_size_add(n, KR(kern_split_elems)(mode, kern_size_mul(c, c)));
  n = kern_size_add(n, KR(kern_split_elems)(mode, kern_size_mul(c, dv)));
  return kern_size_add(n, KR(kern_split_elems)(mode, kern_size_mul(dk, dv)));
}

/* Binds split s to the next kern_split_elems(mode, n) elements at *p. */
KTMPL void KR(kchunk_bind_split)(KSPLIT *s, kern_matmul mode, kreal **p, size_t n) {
  KR(kern_split_bind)(s, mode, *p, n);
  *p += KR(kern_split_elems)(mode, n);
}

KTMPL void KR(kchunk_bind)(KR(kchunk) *c, kreal *mem, const gdn_inputs *in, const kern_num *num,
                            int64_t C, int out_bf16) {
  size_t C_ = (size_t)C, dk = (size_t)in->shape.Dk, dv = (size_t)in->shape.Dv;
  c->in = in;
  c->num = num;
  c->C = C;
  c->Dk = in->shape.Dk;
  c->Dv = in->shape.Dv;
  c->scale = KR(rows_scale)(in, num);
  c->out_bf16 = out_bf16;
  c->b = c->hv = c->hk = 0;
  kreal *p = mem;
  c->q = KR(rows_carve)(&p, C_ * dk);
  c->k = KR(rows_carve)(&p, C_ * dk);
  c->v = KR(rows_carve)(&p, C_ * dv);
  c->g = KR(rows_carve)(&p, C_);
  c->beta = KR(rows_carve)(&p, C_);
  c->G = KR(rows_carve)(&p, C_);
  c->eG = KR(rows_carve)(&p, C_);
  c->eGl = KR(rows_carve)(&p, C_);
  c->dec = KR(rows_carve)(&p, C_ * C_);
  c->S = KR(rows_carve)(&p, C_ * C_);
  c->A = KR(rows_carve)(&p, C_ * C_);
  c->attn = KR(rows_carve)(&p, C_ * C_);
  c->kb = KR(rows_carve)(&p, C_ * dk);
  c->W = KR(rows_carve)(&p, C_ * dk);
  c->Kt = KR(rows_carve)(&p, C_ * dk);
  c->qg = KR(rows_carve)(&p, C_ * dk);
  c->vb = KR(rows_carve)(&p, C_ * dv);
  c->U = KR(rows_carve)(&p, C_ * dv);
  c->vnew = KR(rows_carve)(&p, C_ * dv);
  c->oin = KR(rows_carve)(&p, C_ * dv);
  c->oat = KR(rows_carve)(&p, C_ * dv);
  c->hn = KR(rows_carve)(&p, dk * dv);
  c->gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  const kern_matmul mm = num->matmul;
  KR(kchunk_bind_split)(&c->sk, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->sck, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->sW, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->sKt, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->scc, mm, &p, C_ * C_);
  KR(kchunk_bind_split)(&c->scv, mm, &p, C_ * dv);
  KR(kchunk_bind_split)(&c->sh, mm, &p, dk * dv);
}

KTMPL void KR(kchunk_head)(KR(kchunk) *c, int64_t b, int64_t hv) {
  c->b = b;
  c->hv = hv;
  c->hk = gdn_inputs_key_head(c->in, hv);
}

/* out = op(a) op(b) in the config's matmul mode, on the operands' splits. */
KTMPL inline void KR(kchunk_mm)(KR(kchunk) *c, int64_t m, int64_t n, int64_t k, const KSPLIT *a,
                                 int64_t a_rs, int64_t a_cs, const KSPLIT *b, int64_t b_rs,
                                 int64_t b_cs, kreal *out, int64_t ldc) {
  KR(kern_mm)(c->num->matmul, m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, out, ldc, c->gws);
}
KTMPL inline void KR(kchunk_split)(KR(kchunk) *c, KSPLIT *s, const kreal *x, int64_t n) {
  KR(kern_split_fill)(s, c->num->matmul, x, (size_t)n);
}

/* Rows of chunk n (zero padded past T), G and the decays. */
KTMPL void KR(kchunk_load)(KR(kchunk) *c, int64_t n) {
  const gdn_inputs *in = c->in;
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv, T = in->shape.T;
  for (int64_t i = 0; i < C; i++) {
    int64_t t = n * C + i;
    kreal *qi = c->q + i * Dk, *ki = c->k + i * Dk, *vi = c->v + i * Dv;
    if (t < T) {
      KR(rows_qk)(gdn_inputs_q(in, c->b, t, c->hk), Dk, in->l2norm_in_kernel, 1, c->scale, c->num,
                  qi);
      KR(rows_qk)(gdn_inputs_k(in, c->b, t, c->hk), Dk, in->l2norm_in_kernel, 0, c->scale, c->num,
                  ki);
      KR(rows_v)(gdn_inputs_v(in, c->b, t, c->hv), Dv, c->num, vi);
      c->g[i] = KR(rows_g)(gdn_inputs_g(in, c->b, t, c->hv), c->num);
      c->beta[i] = KR(rows_beta)(gdn_inputs_beta(in, c->b, t, c->hv), c->num);
    } else {
      for (int64_t d = 0; d < Dk; d++) qi[d] = ki[d] = 0;
      for (int64_t d = 0; d < Dv; d++) vi[d] = 0;
      c->g[i] = 0;
      c->beta[i] = 0;
    }
  }
  c->G[0] = c->g[0];
  for (int64_t i = 1; i < C; i++) c->G[i] = c->G[i - 1] + c->g[i];
  const kreal Gl = c->G[C - 1];
  for (int64_t i = 0; i < C; i++) {
    c->eG[i] = KEXP(c->G[i]);
    c->eGl[i] = KEXP(Gl - c->G[i]);
  }
  c->eGlast = KEXP(Gl);
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < i; j++) c->dec[i * C + j] = KEXP(c->G[i] - c->G[j]);
}

/* The WY factors U, W of the loaded chunk. */
KTMPL void KR(kchunk_wy)(KR(kchunk) *c) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  for (int64_t i = 0; i < C; i++)
    KSIMD for (int64_t d = 0; d < Dk; d++) c->kb[i * Dk + d] = c->k[i * Dk + d] * c->beta[i];
  KROUND(c->num, KERN_RP_BETA_MUL, c->kb, C * Dk);
  KR(kchunk_split)(c, &c->sk, c->k, C * Dk);
  KR(kchunk_split)(c, &c->sck, c->kb, C * Dk);
  KR(kchunk_mm)(c, C, C, Dk, &c->sck, Dk, 1, &c->sk, 1, Dk, c->S, C); /* kb K^T */
  KROUND(c->num, KERN_RP_KKT, c->S, C * C);
  for (int64_t i = 0; i < C; i++) {
    kreal *s = c->S + i * C;
    KSIMD for (int64_t j = 0; j < i; j++) s[j] = s[j] * c->dec[i * C + j];
    for (int64_t j = i; j < C; j++) s[j] = 0;
  }
  /* forward substitution, row by row; the update of row i by row m is
   * vectorised across the independent columns j <= m */
  for (int64_t i = 0; i < C; i++) {
    kreal *restrict ai = c->A + i * C;
    for (int64_t j = 0; j < C; j++) ai[j] = 0;
    ai[i] = 1;
    for (int64_t m = 0; m < i; m++) {
      const kreal ns = -c->S[i * C + m];
      const kreal *restrict am = c->A + m * C;
      KSIMD for (int64_t j = 0; j <= m; j++) ai[j] = KFMA(ns, am[j], ai[j]);
    }
  }
  for (int64_t i = 0; i < C; i++)
    KSIMD for (int64_t d = 0; d < Dv; d++) c->vb[i * Dv + d] = c->v[i * Dv + d] * c->beta[i];
  KROUND(c->num, KERN_RP_BETA_MUL, c->vb, C * Dv);
  KR(kchunk_split)(c, &c->scc, c->A, C * C);
  KR(kchunk_split)(c, &c->scv, c->vb, C * Dv);
  KR(kchunk_mm)(c, C, Dv, C, &c->scc, C, 1, &c->scv, Dv, 1, c->U, Dv);
  for (int64_t i = 0; i < C; i++) /* kb becomes k_beta_g = k_beta * exp(G) */
    KSIMD for (int64_t d = 0; d < Dk; d++) c->kb[i * Dk + d] = c->kb[i * Dk + d] * c->eG[i];
  KR(kchunk_split)(c, &c->sck, c->kb, C * Dk);
  KR(kchunk_mm)(c, C, Dk, C, &c->scc, C, 1, &c->sck, Dk, 1, c->W, Dk);
  KROUND(c->num, KERN_RP_UW, c->U, C * Dv);
  KROUND(c->num, KERN_RP_UW, c->W, C * Dk);
  KR(kchunk_split)(c, &c->sW, c->W, C * Dk);
}

/* Kt = diag(exp(G_last - G)) K (needed by the body and by the affine map). */
KTMPL void KR(kchunk_kt)(KR(kchunk) *c) {
  const int64_t C = c->C, Dk = c->Dk;
  for (int64_t i = 0; i < C; i++)
    KSIMD for (int64_t d = 0; d < Dk; d++) c->Kt[i * Dk + d] = c->k[i * Dk + d] * c->eGl[i];
  KR(kchunk_split)(c, &c->sKt, c->Kt, C * Dk);
}

/* The h-independent parts of the scan body: qg, the masked attn, Kt. */
KTMPL void KR(kchunk_prep)(KR(kchunk) *c) {
  const int64_t C = c->C, Dk = c->Dk;
  for (int64_t i = 0; i < C; i++)
    KSIMD for (int64_t d = 0; d < Dk; d++) c->qg[i * Dk + d] = c->q[i * Dk + d] * c->eG[i];
  KR(kchunk_split)(c, &c->sck, c->q, C * Dk);
  KR(kchunk_mm)(c, C, C, Dk, &c->sck, Dk, 1, &c->sk, 1, Dk, c->attn, C); /* Q K^T */
  KROUND(c->num, KERN_RP_QKT, c->attn, C * C);
  for (int64_t i = 0; i < C; i++) {
    kreal *a = c->attn + i * C;
    KSIMD for (int64_t j = 0; j < i; j++) a[j] = a[j] * c->dec[i * C + j];
    for (int64_t j = i + 1; j < C; j++) a[j] = 0;
  }
  KR(kchunk_kt)(c);
  KR(kchunk_split)(c, &c->sck, c->qg, C * Dk);
  KR(kchunk_split)(c, &c->scc, c->attn, C * C);
}

/* One step of the scan over chunks: o of the chunk into oin, h updated in
 * place (Dk x Dv, row-major). */
KTMPL void KR(kchunk_body)(KR(kchunk) *c, kreal *restrict h) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  KR(kchunk_split)(c, &c->sh, h, Dk * Dv);
  KR(kchunk_mm)(c, C, Dv, Dk, &c->sck, Dk, 1, &c->sh, Dv, 1, c->oin, Dv); /* o_inter = qg h */
  KR(kchunk_mm)(c, C, Dv, Dk, &c->sW, Dk, 1, &c->sh, Dv, 1, c->vnew, Dv); /* v_prime = W h */
  KSIMD for (int64_t x = 0; x < C * Dv; x++) c->vnew[x] = c->U[x] - c->vnew[x];
  KR(kchunk_split)(c, &c->scv, c->vnew, C * Dv);
  KR(kchunk_mm)(c, C, Dv, C, &c->scc, C, 1, &c->scv, Dv, 1, c->oat, Dv); /* attn v_new */
  KSIMD for (int64_t x = 0; x < C * Dv; x++) c->oin[x] = c->oin[x] + c->oat[x];
  KR(kchunk_mm)(c, Dk, Dv, C, &c->sKt, 1, Dk, &c->scv, Dv, 1, c->hn, Dv); /* Kt^T v_new */
  const kreal e = c->eGlast;
  KSIMD for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h[x] * e + c->hn[x];
}

/* The rows t < T of the chunk's o into out. */
KTMPL void KR(kchunk_store_o)(const KR(kchunk) *c, int64_t n, gdn_outputs *out) {
  const int64_t C = c->C, Dv = c->Dv, T = c->in->shape.T;
  for (int64_t i = 0; i < C && n * C + i < T; i++) {
    double *o = gdn_outputs_o(out, c->b, n * C + i, c->hv);
    KSIMD for (int64_t d = 0; d < Dv; d++) o[d] = KR(rows_out)(c->oin[i * Dv + d], c->out_bf16);
  }
}

/* The stock scan over chunks first .. first+count-1 from the carry h
 * (updated in place), o rows stored.  kern_scan and every device's replay
 * in kern_affine_prefix run exactly this. */
KTMPL void KR(kchunk_scan)(KR(kchunk) *c, int64_t first, int64_t count, kreal *h,
                            gdn_outputs *out) {
  for (int64_t n = first; n < first + count; n++) {
    KR(kchunk_load)(c, n);
    KR(kchunk_wy)(c);
    KR(kchunk_prep)(c);
    KR(kchunk_body)(c, h);
    KR(kchunk_store_o)(c, n, out);
  }
}

/* The chunk's affine map h -> An h + Bn (after load, wy and kt; uses scv). */
KTMPL void KR(kchunk_affine)(KR(kchunk) *c, kreal *restrict An, kreal *restrict Bn) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  KR(kchunk_mm)(c, Dk, Dk, C, &c->sKt, 1, Dk, &c->sW, Dk, 1, An, Dk); /* Kt^T W */
  for (int64_t r = 0; r < Dk; r++)
    KSIMD for (int64_t s = 0; s < Dk; s++)
        An[r * Dk + s] = (r == s ? c->eGlast : 0) - An[r * Dk + s];
  KR(kchunk_split)(c, &c->scv, c->U, C * Dv);
  KR(kchunk_mm)(c, Dk, Dv, C, &c->sKt, 1, Dk, &c->scv, Dv, 1, Bn, Dv); /* Kt^T U */
}

/* Convert the h0 block of the current head (or zeros) to F. */
KTMPL void KR(kchunk_h0)(const KR(kchunk) *c, kreal *h) {
  const float *h0 = gdn_inputs_h0(c->in, c->b, c->hv);
  const int64_t n = c->Dk * c->Dv;
  for (int64_t x = 0; x < n; x++) h[x] = h0 ? (kreal)KIN(c->num, h0[x]) : 0;
}

KTMPL void KR(kchunk_store_state)(const KR(kchunk) *c, const kreal *h, double *dst) {
  const int64_t n = c->Dk * c->Dv;
  for (int64_t x = 0; x < n; x++) dst[x] = h[x];
}
