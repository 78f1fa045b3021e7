/* Template (see kern_real.h): one chunk of MaxText's chunked algorithm in F,
 * shared by kern_scan and kern_affine_prefix (algorithm.md steps 2-4).
 *
 * Rounding points and reduction orders, step by step.  Every product is
 * kern_mm in the config's matmul mode (kern_mm.h: IEEE = kern_gemm, p
 * ascending, fma, from the first product; the bf16 pass modes on the
 * operands' splits, each split made once and reused by every product that
 * reads it: K by S and attn, A by U and W, W by the body and A_n, Kt by the
 * body and the affine map, h by o_inter and W h, v_new by attn v_new and
 * Kt^T v_new).  The KERN_RP_* hooks (kern_num.h) round to bfloat16 for
 * compute dtype bfloat16 and are the identity otherwise:
 *   load     rows as kern_rows_tmpl.h (KERN_RP_INPUT, KERN_RP_Q_SCALE).
 *            Chunk n of the current *piece* [t_base, t_end) (kchunk_piece;
 *            the whole sequence [0, T) unless a token-sharded device set
 *            its own) holds the tokens t_base + n C + i; those at or past
 *            t_end are zero padding (q, k, v, g, beta = 0, so the state
 *            passes through unchanged: exp(0) = 1 and k = v = 0, exactly).
 *            Packed documents (gdn_inputs_token_kind): a token with
 *            segment id 0 is loaded with k = v = 0 and g = 0 (before the L2
 *            norm; q and beta as given), as MaxText zeroes them; under
 *            packing = reset a boundary token b zeroes every decay that
 *            crosses it (kchunk_reset_masks): eG_i = 0 for i >= b,
 *            eGl_i = 0 for i < b, eGlast = 0, dec_ij = 0 for j < b <= i --
 *            exact zeros written over the exp values, the chunked form of
 *            "the state is zero before token b's update".
 *   G        G_0 = g_0, G_i = G_{i-1} + g_i (left to right, restarts each
 *            chunk); eG_i = exp(G_i); eGl_i = exp(G_{C-1} - G_i);
 *            eGlast = exp(G_{C-1}); dec_ij = exp(G_i - G_j) only for i > j
 *            (the mask is applied before exp).  All float32 for bfloat16.
 *   WY       kb = k * beta (row-wise; KERN_RP_BETA_MUL); S = kb K^T
 *            (KERN_RP_KKT); S_ij = S_ij * dec_ij for i > j, else 0.
 *            A = (I + S)^-1 by the config's solve (kern_config.h):
 *            substitution: row i
 *            starts as e_i and for m = 0 .. i-1 ascending A_i. = fma(-S_im,
 *            A_m., A_i.) on columns 0 .. m (A_mj = 0 beyond m) -- bitwise the
 *            same as e_i - (sum_m S_im A_m. accumulated by fma), since
 *            round(-x) = -round(x).  Plain float32 fma whatever the matmul
 *            mode.  It is the order of the reference BLAS strsm (left,
 *            lower, unit; right-hand side I) that jax.scipy's
 *            solve_triangular calls on CPU: for each column, k ascending,
 *            B_ij -= B_kj A_ik -- with a fused multiply-add where the BLAS
 *            is built to contract (OpenBLAS's blocked kernels may order
 *            the sums otherwise: not modelled).
 *            xla-expander (kern_solve_xla.h, shared with KDA's chunked
 *            kernels): XLA's TriangularSolveExpander
 *            as TPU runs it (openxla/xla xla/service/
 *            triangular_solve_expander.cc, read 2026): with C below its
 *            block size (128 by default; a block of min(128, C)) the
 *            whole matrix is one diagonal block, and C < 32 would only pick
 *            the direct solve on a backend that asks for it (TPU's choice is
 *            not public: assumed the blocked inverse).  The block L = I + S
 *            (mask then add I: exact), divided by its diagonal (1: exact);
 *            X starts as diag(1, -1, ..., -1) (off the diagonal -0); for
 *            i = 1 .. C-1 ascending, X_i. = -(L_i. X), one 1 x C x C dot
 *            at PrecisionConfig HIGHEST (kern_mm HIGHEST: 6 bf16 passes,
 *            each accumulated over the whole row, m = 0 .. C-1 ascending,
 *            including L_ii X_i. = -e_i and the zeros beyond i; then the
 *            passes summed in XLA's order), negated (exact).  Then X / diag
 *            (1: exact) and the solve X I at HIGHEST, which is exact (I's
 *            parts are I, 0, 0, and p0 + p1 + p2 = x exactly: kern_mm.h)
 *            and is skipped.  float64 compute: plain IEEE products in the
 *            same order.  TPU's MXU accumulation order within a pass is not
 *            public; this is kern_mm's (ascending, fma).  vb = v * beta (KERN_RP_BETA_MUL); U = A vb;
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
 *
 * Structure (for speed; no value depends on it):
 *   - a chunk is computed in two parts.  The *prep* (load, G, WY, prep) does
 *     not depend on the carried state h; it writes the chunk's shared
 *     results -- eGlast, qg, W, U, the masked attn, Kt and their splits --
 *     into a kprep.  The *body* updates h from a kprep.  Every column of h
 *     (and of v_new, o) is independent in the body, so it runs on a column
 *     block [c0, c1) of Dv; the whole body is the block [0, Dv).
 *   - kern_scan / kern_affine_prefix run a head either alone (one thread:
 *     prep then body, chunk after chunk) or as a team (kchunk_scan_team:
 *     nt threads prep nt consecutive chunks at once, each chunk's prep
 *     computed once by one thread, then every thread runs the bodies of
 *     those chunks on its own column block).  The bf16 pass modes skip a
 *     pass whose operand part is all zero (kern_mm.h); the decision for the
 *     splits of h and v_new is taken over the whole matrix (the team ORs the
 *     blocks' flags), exactly as one thread decides it.
 *   - K is transposed once per chunk (kT, Dk x C, row-major) and is the B
 *     operand of both S = kb K^T and attn = q K^T, read in place; in the bf16
 *     modes K^T is what is split (the same values, so the same parts and
 *     zero flags).
 *   - the L2 norms of a chunk's rows are summed eight rows at a time (eight
 *     independent sums, each in its row's order: kern_rows_tmpl.h).
 *   - exp(x) for x below glibc expf's underflow threshold is +0 without the
 *     call (KEXPU: what expf returns there, checked for every such float).
 *   - the next chunk's rows are prefetched; o is written with streaming
 *     stores where AVX is available (it is not read back by the kernel).
 *
 * Memory: a kchunk is the scratch of one thread -- every temporary of one
 * chunk, O(C^2 + C (Dk + Dv) + Dk Dv) elements of F (times 1 + the number
 * of bf16 parts of the matmul mode, for the operand splits) -- reused chunk
 * after chunk; a kprep is O(C^2 + C (Dk + Dv)) (times the same factor).
 * Nothing here allocates.
 */
#include "kern_rows_tmpl.h"
#include "kern_solve_xla.h"
#include "kern_team.h"

#undef KSPLIT
#define KSPLIT KR(kern_split)

/* exp with the underflow shortcut.  glibc's expf returns +0 for every float
 * x < -0x1.9fe368p6f (~ -103.97: exp(x) < 2^-150 rounds to zero) through a
 * slow path that sets errno; it returns 2^-149 at the threshold itself.
 * This returns the same +0 without the call (checked for every float below
 * the threshold on glibc 2.36; NaN and the threshold go to expf). */
#undef KEXPU
#if KERN_REAL == 32
static inline float KR(kexpu)(float x) { return x < -0x1.9fe368p6f ? 0.0f : expf(x); }
#define KEXPU(x) KR(kexpu)(x)
#else
#define KEXPU(x) exp(x)
#endif

/* One chunk's h-independent results, shared by every body of the chunk. */
typedef struct KR(kprep) {
  kreal eGlast;
  kreal *qg, *W, *Kt; /* C x Dk */
  kreal *U;           /* C x Dv */
  kreal *attn;        /* C x C, masked */
  KSPLIT sqg, sW, sKt, sattn, sU; /* sU: filled for the affine map only */
} KR(kprep);

/* The scratch of one thread: the prep's temporaries and one body's. */
typedef struct KR(kchunk) {
  const gdn_inputs *in;
  const kern_num *num;
  int64_t C, Dk, Dv;
  kreal scale;
  int out_bf16;
  int64_t b, hv, hk;              /* the (batch, value head) being computed, its key head */
  int64_t pf;                     /* chunk whose rows to prefetch at the next body / affine map */
  int64_t t_base, t_end;          /* the piece: chunk n starts at token t_base + n C; t >= t_end pads */
  kern_mutant mutant;             /* kern_mutant.h: set by kern_affine_prefix only; 0 otherwise */
  int64_t seam_chunk;             /* seam-decay: the chunk whose carried state is not decayed, or -1 */
  kreal *q, *k, *v;               /* C x Dk, C x Dk, C x Dv */
  kreal *kT;                      /* Dk x C: K^T */
  kreal *g, *beta, *G, *eG, *eGl; /* C */
  int32_t *lb;                    /* C: the last reset row <= i, or -1 (packing = reset) */
  kreal *srow;                    /* C: one row's dot (xla-expander solve) */
  kreal eGlast;
  kreal *dec, *S, *A;             /* C x C */
  kreal *kb, *vb;                 /* C x Dk, C x Dv */
  kreal *vnew, *oin, *oat;        /* C x Dv (the body; a block uses its columns) */
  kreal *hn;                      /* Dk x Dv */
  kreal *gws;                     /* kern_gemm workspace */
  /* operand splits (kern_mm.h; no storage in IEEE mode), with lifetimes:
   *   skT   K^T                     wy (S), prep (attn)
   *   sck   kb -> kbg -> q          S; W; attn
   *   scc   A                       U, W
   *   scv   vb                      U
   *   sh    the carried h           body (o_inter, W h)
   *   svn   v_new                   body (attn v_new, Kt^T v_new) */
  KSPLIT skT, sck, scc, scv, sh, svn;
  KSPLIT ssl, ssx; /* xla-expander solve: L = I + S and X (HIGHEST) */
} KR(kchunk);

/* Elements (of F) one kprep needs. */
KTMPL size_t KR(kprep_elems)(int64_t C, int64_t Dk, int64_t Dv, kern_matmul mode) {
  const size_t c = (size_t)C, dk = (size_t)Dk, dv = (size_t)Dv;
  const size_t ck = kern_size_mul(c, dk), cv = kern_size_mul(c, dv), cc = kern_size_mul(c, c);
  size_t n = kern_size_mul(3, KR(rows_pad)(ck));                  /* qg W Kt */
  n = kern_size_add(n, KR(rows_pad)(cv));                         /* U */
  n = kern_size_add(n, KR(rows_pad)(cc));                         /* attn */
  n = kern_size_add(n, kern_size_mul(3, KR(kern_split_elems)(mode, ck)));
  n = kern_size_add(n, KR(kern_split_elems)(mode, cv));
  return kern_size_add(n, KR(kern_split_elems)(mode, cc));
}

/* Binds split s to the next kern_split_elems(mode, n) elements at *p. */
KTMPL void KR(kchunk_bind_split)(KSPLIT *s, kern_matmul mode, kreal **p, size_t n) {
  KR(kern_split_bind)(s, mode, *p, n);
  *p += KR(kern_split_elems)(mode, n);
}

KTMPL void KR(kprep_bind)(KR(kprep) *P, kreal *mem, int64_t C, int64_t Dk, int64_t Dv,
                           kern_matmul mode) {
  const size_t c = (size_t)C, dk = (size_t)Dk, dv = (size_t)Dv;
  kreal *p = mem;
  P->eGlast = 0;
  P->qg = KR(rows_carve)(&p, c * dk);
  P->W = KR(rows_carve)(&p, c * dk);
  P->Kt = KR(rows_carve)(&p, c * dk);
  P->U = KR(rows_carve)(&p, c * dv);
  P->attn = KR(rows_carve)(&p, c * c);
  KR(kchunk_bind_split)(&P->sqg, mode, &p, c * dk);
  KR(kchunk_bind_split)(&P->sW, mode, &p, c * dk);
  KR(kchunk_bind_split)(&P->sKt, mode, &p, c * dk);
  KR(kchunk_bind_split)(&P->sU, mode, &p, c * dv);
  KR(kchunk_bind_split)(&P->sattn, mode, &p, c * c);
}

/* Elements (of F) one kchunk needs. */
KTMPL size_t KR(kchunk_elems)(int64_t C, int64_t Dk, int64_t Dv, kern_matmul mode) {
  /* saturating: see kern_size.h */
  const size_t c = (size_t)C, dk = (size_t)Dk, dv = (size_t)Dv;
  const size_t ck = KR(rows_pad)(kern_size_mul(c, dk)), cv = KR(rows_pad)(kern_size_mul(c, dv));
  size_t n = kern_size_mul(4, ck);                                 /* q k kT kb */
  n = kern_size_add(n, kern_size_mul(5, cv));                      /* v vb vnew oin oat */
  n = kern_size_add(n, kern_size_mul(6, KR(rows_pad)(c)));         /* g beta G eG eGl lb */
  n = kern_size_add(n, kern_size_mul(3, KR(rows_pad)(kern_size_mul(c, c)))); /* dec S A */
  n = kern_size_add(n, KR(rows_pad)(kern_size_mul(dk, dv)));       /* hn */
  n = kern_size_add(n, KR(rows_pad)(c));                            /* srow */
  /* the xla-expander solve's splits of L and X (HIGHEST; none for F64) */
  n = kern_size_add(n, kern_size_mul(2, KR(kern_split_elems)(KERN_MATMUL_HIGHEST, kern_size_mul(c, c))));
  n = kern_size_add(n, KR(rows_pad)(KR(kern_gemm_ws_elems)()));
  /* splits: skT sck (C x Dk), scc (C x C), scv svn (C x Dv), sh (Dk x Dv) */
  n = kern_size_add(n, kern_size_mul(2, KR(kern_split_elems)(mode, kern_size_mul(c, dk))));
  n = kern_size_add(n, KR(kern_split_elems)(mode, kern_size_mul(c, c)));
  n = kern_size_add(n, kern_size_mul(2, KR(kern_split_elems)(mode, kern_size_mul(c, dv))));
  return kern_size_add(n, KR(kern_split_elems)(mode, kern_size_mul(dk, dv)));
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
  c->pf = -1;
  c->t_base = 0;
  c->t_end = in->shape.T;
  c->mutant = KERN_MUTANT_NONE;
  c->seam_chunk = -1;
  kreal *p = mem;
  c->q = KR(rows_carve)(&p, C_ * dk);
  c->k = KR(rows_carve)(&p, C_ * dk);
  c->kT = KR(rows_carve)(&p, C_ * dk);
  c->v = KR(rows_carve)(&p, C_ * dv);
  c->g = KR(rows_carve)(&p, C_);
  c->beta = KR(rows_carve)(&p, C_);
  c->G = KR(rows_carve)(&p, C_);
  c->eG = KR(rows_carve)(&p, C_);
  c->eGl = KR(rows_carve)(&p, C_);
  c->lb = (int32_t *)(void *)KR(rows_carve)(&p, C_); /* C int32 fit in C elements of F */
  c->dec = KR(rows_carve)(&p, C_ * C_);
  c->S = KR(rows_carve)(&p, C_ * C_);
  c->A = KR(rows_carve)(&p, C_ * C_);
  c->kb = KR(rows_carve)(&p, C_ * dk);
  c->vb = KR(rows_carve)(&p, C_ * dv);
  c->vnew = KR(rows_carve)(&p, C_ * dv);
  c->oin = KR(rows_carve)(&p, C_ * dv);
  c->oat = KR(rows_carve)(&p, C_ * dv);
  c->hn = KR(rows_carve)(&p, dk * dv);
  c->srow = KR(rows_carve)(&p, C_);
  c->gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  const kern_matmul mm = num->matmul;
  KR(kchunk_bind_split)(&c->skT, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->sck, mm, &p, C_ * dk);
  KR(kchunk_bind_split)(&c->scc, mm, &p, C_ * C_);
  KR(kchunk_bind_split)(&c->scv, mm, &p, C_ * dv);
  KR(kchunk_bind_split)(&c->svn, mm, &p, C_ * dv);
  KR(kchunk_bind_split)(&c->sh, mm, &p, dk * dv);
  KR(kchunk_bind_split)(&c->ssl, KERN_MATMUL_HIGHEST, &p, C_ * C_);
  KR(kchunk_bind_split)(&c->ssx, KERN_MATMUL_HIGHEST, &p, C_ * C_);
}

/* The piece the following chunk indices refer to: chunk n holds the tokens
 * t_base + n C + i, i < C, those at or past t_end as zero padding.  A
 * token-sharded device sets its own [r T/D, (r+1) T/D); [0, T) otherwise
 * (kchunk_bind's default). */
KTMPL void KR(kchunk_piece)(KR(kchunk) *c, int64_t t_base, int64_t t_end) {
  c->t_base = t_base;
  c->t_end = t_end;
}

KTMPL void KR(kchunk_head)(KR(kchunk) *c, int64_t b, int64_t hv) {
  c->b = b;
  c->hv = hv;
  c->hk = gdn_inputs_key_head(c->in, hv);
  if (c->mutant == KERN_MUTANT_GQA_TILE) c->hk = hv % c->in->shape.Hk; /* tile, not repeat */
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

/* Hints the rows of chunk c->pf (if any) towards the L2 cache, once.  Called
 * half-way through a chunk (the body, or the fold's affine map), so the rows
 * arrive while the rest of this chunk runs and are not pushed out again by
 * its whole working set before the next load reads them. */
KTMPL void KR(kchunk_prefetch)(KR(kchunk) *c) {
  const gdn_inputs *in = c->in;
  const int64_t C = c->C, T = c->t_end, n = c->pf, t0 = c->t_base + n * C;
  c->pf = -1;
  if (n < 0 || t0 >= T) return;
  const int64_t t1 = t0 + C < T ? t0 + C : T;
  for (int64_t t = t0; t < t1; t++) {
    const char *q = (const char *)gdn_inputs_q(in, c->b, t, c->hk);
    const char *k = (const char *)gdn_inputs_k(in, c->b, t, c->hk);
    const char *v = (const char *)gdn_inputs_v(in, c->b, t, c->hv);
    for (int64_t x = 0; x < c->Dk * 4; x += 64) {
      __builtin_prefetch(q + x, 0, 2);
      __builtin_prefetch(k + x, 0, 2);
    }
    for (int64_t x = 0; x < c->Dv * 4; x += 64) __builtin_prefetch(v + x, 0, 2);
  }
}

/* dst (cols x rows, leading dimension ldd) = src^T (rows x cols, lds):
 * pure data movement, in 8 x 8 blocks (vector shuffles with AVX). */
KTMPL void KR(kchunk_transpose)(int64_t rows, int64_t cols, const kreal *restrict src,
                                 int64_t lds, kreal *restrict dst, int64_t ldd) {
  for (int64_t i0 = 0; i0 < rows; i0 += 8)
    for (int64_t d0 = 0; d0 < cols; d0 += 8) {
#if KERN_AVX && KERN_REAL == 32
      if (i0 + 8 <= rows && d0 + 8 <= cols) {
        kern_tr8_f32(src + i0 * lds + d0, lds, dst + d0 * ldd + i0, ldd);
        continue;
      }
#endif
      const int64_t i1 = i0 + 8 < rows ? i0 + 8 : rows, d1 = d0 + 8 < cols ? d0 + 8 : cols;
      for (int64_t i = i0; i < i1; i++)
        for (int64_t d = d0; d < d1; d++) dst[d * ldd + i] = src[i * lds + d];
    }
}

/* Zero every decay of the loaded chunk that crosses a reset row (lb: the
 * last reset row <= i, or -1): the decay from the chunk's start through i
 * (eG_i) when lb_i >= 0; from i to the chunk's end (eGl_i) and over the
 * whole chunk (eGlast) when the last reset row lies after i; from j to i
 * (dec_ij, i > j) when lb_i > j.  Exact zeros; nothing else changes. */
KTMPL void KR(kchunk_reset_masks)(KR(kchunk) *c) {
  const int64_t C = c->C;
  const int32_t *lb = c->lb, lbl = lb[C - 1];
  for (int64_t i = 0; i < C; i++) {
    if (lb[i] >= 0) c->eG[i] = 0;
    if (lbl > i) c->eGl[i] = 0;
    kreal *di = c->dec + i * C;
    for (int64_t j = 0; j < lb[i] && j < i; j++) di[j] = 0;
  }
  if (lbl >= 0) c->eGlast = 0;
}

/* Rows of chunk n of the piece (zero padded past its end), K^T, G and the decays.  K's L2 norm
 * is taken on K^T: row d of kT holds element d of every token, so the C
 * sums of squares run side by side (vectorised over the tokens), each still
 * over d ascending as rows_qk sums it; the factor then scales k's rows and
 * kT's columns alike (the same products). */
KTMPL void KR(kchunk_load)(KR(kchunk) *c, int64_t n) {
  const gdn_inputs *in = c->in;
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv, T = c->t_end, t0 = c->t_base + n * C;
  const int64_t nv = T - t0 < C ? T - t0 : C; /* rows t < t_end */
  const kern_mutant mu = c->mutant;
  int32_t last_reset = -1, late = 0;
  for (int64_t i = 0; i < nv; i++) {
    const int64_t t = t0 + i;
    KR(rows_in)(gdn_inputs_q(in, c->b, t, c->hk), Dk, c->num, c->q + i * Dk);
    KR(rows_in)(gdn_inputs_k(in, c->b, t, c->hk), Dk, c->num, c->k + i * Dk);
    KR(rows_in)(gdn_inputs_v(in, c->b, t, c->hv), Dv, c->num, c->v + i * Dv);
    c->g[i] = KR(rows_g)(gdn_inputs_g(in, c->b, t, c->hv), c->num);
    c->beta[i] = KR(rows_beta)(gdn_inputs_beta(in, c->b, t, c->hv), c->num);
    const int kind = gdn_inputs_token_kind(in, c->b, t);
    if (late) last_reset = (int32_t)i, late = 0; /* reset-late: one token after */
    if (kind == GDN_TOKEN_PAD) {
      kreal *ki = c->k + i * Dk, *vi = c->v + i * Dv;
      for (int64_t d = 0; d < Dk; d++) ki[d] = 0;
      for (int64_t d = 0; d < Dv; d++) vi[d] = 0;
      if (mu != KERN_MUTANT_PAD_UNMASKED) c->g[i] = 0;
    } else if (kind == GDN_TOKEN_RESET) {
      if (mu == KERN_MUTANT_RESET_LATE)
        late = 1;
      else if (mu != KERN_MUTANT_RESET_MISSING)
        last_reset = (int32_t)i;
    }
    c->lb[i] = last_reset;
  }
  for (int64_t i = nv; i < C; i++) c->lb[i] = last_reset;
  for (int64_t i = nv; i < C; i++) {
    kreal *qi = c->q + i * Dk, *ki = c->k + i * Dk, *vi = c->v + i * Dv;
    for (int64_t d = 0; d < Dk; d++) qi[d] = ki[d] = 0;
    for (int64_t d = 0; d < Dv; d++) vi[d] = 0;
    c->g[i] = mu == KERN_MUTANT_PAD_UNMASKED && nv > 0 ? c->g[nv - 1] : 0; /* edge-padded g */
    c->beta[i] = 0;
  }
  KR(rows_qk_finish)(c->q, nv, Dk, in->l2norm_in_kernel, 1, c->scale, c->num);
  KR(kchunk_transpose)(C, Dk, c->k, Dk, c->kT, C);
  if (in->l2norm_in_kernel && nv > 0) {
    kreal *restrict ss = c->G; /* scratch: G is computed below */
    const kreal *restrict k0 = c->kT;
    KSIMD for (int64_t i = 0; i < nv; i++) ss[i] = k0[i] * k0[i];
    for (int64_t d = 1; d < Dk; d++) {
      const kreal *restrict kd = c->kT + d * C;
      KSIMD for (int64_t i = 0; i < nv; i++) ss[i] = ss[i] + kd[i] * kd[i];
    }
    KSIMD for (int64_t i = 0; i < nv; i++) ss[i] = KC(1) / KSQRT(ss[i] + KC(1e-6));
    for (int64_t i = 0; i < nv; i++) {
      kreal *restrict ki = c->k + i * Dk;
      const kreal inv = ss[i];
      KSIMD for (int64_t d = 0; d < Dk; d++) ki[d] = ki[d] * inv;
    }
    for (int64_t d = 0; d < Dk; d++) {
      kreal *restrict kd = c->kT + d * C;
      KSIMD for (int64_t i = 0; i < nv; i++) kd[i] = kd[i] * ss[i];
    }
  }
  KROUND(c->num, KERN_RP_INPUT, c->k, nv * Dk);
  KROUND(c->num, KERN_RP_INPUT, c->kT, Dk * C);
  KROUND(c->num, KERN_RP_INPUT, c->v, nv * Dv);
  c->G[0] = c->g[0];
  for (int64_t i = 1; i < C; i++) c->G[i] = c->G[i - 1] + c->g[i];
  const kreal Gl = c->G[C - 1];
  for (int64_t i = 0; i < C; i++) {
    c->eG[i] = KEXPU(c->G[i]);
    c->eGl[i] = KEXPU(Gl - c->G[i]);
  }
  c->eGlast = KEXPU(Gl);
  for (int64_t i = 0; i < C; i++) {
    kreal *di = c->dec + i * C;
    const kreal Gi = c->G[i];
    for (int64_t j = 0; j < i; j++) di[j] = KEXPU(Gi - c->G[j]);
  }
  if (n == c->seam_chunk) { /* seam-decay: the carried state's decay taken as 1 */
    for (int64_t i = 0; i < C; i++) c->eG[i] = 1;
    c->eGlast = 1;
  }
  if (last_reset >= 0) KR(kchunk_reset_masks)(c);
}

/* A = (I + S)^-1 for the strictly lower triangular S (C x C) by forward
 * substitution: row i starts as e_i and for m = 0 .. i-1 ascending
 * A_i. = fma(-S_im, A_m., A_i.) on the columns j <= m.  Every element's
 * sequence of fmas is that one; for speed four rows are carried together:
 * rows i0 .. i0+3 take the updates by the finished rows m < i0 in one sweep
 * over m (A_m. loaded once for the four, four independent chains), then
 * the updates by each other inside the block, in order of m. */
KTMPL void KR(kchunk_solve)(int64_t C, const kreal *restrict S, kreal *restrict A) {
  for (int64_t i0 = 0; i0 < C; i0 += 4) {
    const int64_t rb = C - i0 < 4 ? C - i0 : 4;
    for (int64_t r = 0; r < rb; r++) {
      kreal *ar = A + (i0 + r) * C;
      for (int64_t j = 0; j < C; j++) ar[j] = 0;
      ar[i0 + r] = 1;
    }
    if (rb == 4) {
      kreal *restrict a0 = A + i0 * C, *restrict a1 = a0 + C, *restrict a2 = a1 + C,
                      *restrict a3 = a2 + C;
      const kreal *s0 = S + i0 * C, *s1 = s0 + C, *s2 = s1 + C, *s3 = s2 + C;
      for (int64_t m = 0; m < i0; m++) {
        const kreal n0 = -s0[m], n1 = -s1[m], n2 = -s2[m], n3 = -s3[m];
        const kreal *restrict am = A + m * C;
        KSIMD for (int64_t j = 0; j <= m; j++) {
          const kreal x = am[j];
          a0[j] = KFMA(n0, x, a0[j]);
          a1[j] = KFMA(n1, x, a1[j]);
          a2[j] = KFMA(n2, x, a2[j]);
          a3[j] = KFMA(n3, x, a3[j]);
        }
      }
    } else {
      for (int64_t r = 0; r < rb; r++) {
        kreal *restrict ar = A + (i0 + r) * C;
        const kreal *sr = S + (i0 + r) * C;
        for (int64_t m = 0; m < i0; m++) {
          const kreal ns = -sr[m];
          const kreal *restrict am = A + m * C;
          KSIMD for (int64_t j = 0; j <= m; j++) ar[j] = KFMA(ns, am[j], ar[j]);
        }
      }
    }
    for (int64_t m = i0; m < i0 + rb - 1; m++) { /* inside the block */
      const kreal *restrict am = A + m * C;
      for (int64_t i = m + 1; i < i0 + rb; i++) {
        kreal *restrict ai = A + i * C;
        const kreal ns = -S[i * C + m];
        KSIMD for (int64_t j = 0; j <= m; j++) ai[j] = KFMA(ns, am[j], ai[j]);
      }
    }
  }
}

/* View of split s from element `off` on: a row of a matrix split whole, or
 * a column block of a row split (the same pointer shift either way). */
KTMPL inline KSPLIT KR(kchunk_split_view)(const KSPLIT *s, int64_t off) {
  KSPLIT v = *s;
  if (v.x) v.x += off;
  for (int i = 0; i < 3; i++)
    if (v.part[i]) v.part[i] += off;
  return v;
}

/* A = (I + S)^-1 as XLA's TriangularSolveExpander on TPU (kern_solve_xla.h,
 * shared with KDA's chunked kernels): S (strictly lower, zeros above)
 * becomes L = I + S in place. */
KTMPL void KR(kchunk_solve_xla)(KR(kchunk) *c) {
  KR(kern_solve_xla)(c->C, c->S, c->A, &c->ssl, &c->ssx, c->srow, c->gws);
}

/* Row i of dst (C rows of D) = row i of src times t[i]: the chunk's
 * per-token scalings by beta, exp(G) and exp(G_last - G), one rounding an
 * element; dst may be src (in place). */
KTMPL inline void KR(kchunk_scale_rows)(kreal *dst, const kreal *src, const kreal *t, int64_t C, int64_t D) {
  for (int64_t i = 0; i < C; i++)
    KSIMD for (int64_t d = 0; d < D; d++) dst[i * D + d] = src[i * D + d] * t[i];
}

/* The decay mask on a C x C product M: below the diagonal times the decay
 * dec[i][j], zeros from column i + keep_diag on (S drops its diagonal,
 * attn keeps it). */
KTMPL inline void KR(kchunk_mask_decay)(kreal *M, const kreal *dec, int64_t C, int64_t keep_diag) {
  for (int64_t i = 0; i < C; i++) {
    kreal *r = M + i * C;
    KSIMD for (int64_t j = 0; j < i; j++) r[j] = r[j] * dec[i * C + j];
    for (int64_t j = i + keep_diag; j < C; j++) r[j] = 0;
  }
}

/* The WY factors U, W of the loaded chunk into P (and U's split when
 * split_u: the affine map's B_n reads it). */
KTMPL void KR(kchunk_wy)(KR(kchunk) *c, KR(kprep) *P, int split_u) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  KR(kchunk_scale_rows)(c->kb, c->k, c->beta, C, Dk);
  KROUND(c->num, KERN_RP_BETA_MUL, c->kb, C * Dk);
  KR(kchunk_split)(c, &c->skT, c->kT, C * Dk);
  KR(kchunk_split)(c, &c->sck, c->kb, C * Dk);
  KR(kchunk_mm)(c, C, C, Dk, &c->sck, Dk, 1, &c->skT, C, 1, c->S, C); /* kb K^T */
  KROUND(c->num, KERN_RP_KKT, c->S, C * C);
  KR(kchunk_mask_decay)(c->S, c->dec, C, 0);
  if (c->num->solve == KERN_SOLVE_XLA_EXPANDER)
    KR(kchunk_solve_xla)(c);
  else
    KR(kchunk_solve)(C, c->S, c->A);
  KR(kchunk_scale_rows)(c->vb, c->v, c->beta, C, Dv);
  KROUND(c->num, KERN_RP_BETA_MUL, c->vb, C * Dv);
  KR(kchunk_split)(c, &c->scc, c->A, C * C);
  KR(kchunk_split)(c, &c->scv, c->vb, C * Dv);
  KR(kchunk_mm)(c, C, Dv, C, &c->scc, C, 1, &c->scv, Dv, 1, P->U, Dv);
  KR(kchunk_scale_rows)(c->kb, c->kb, c->eG, C, Dk); /* kb becomes k_beta_g = k_beta * exp(G) */
  KR(kchunk_split)(c, &c->sck, c->kb, C * Dk);
  KR(kchunk_mm)(c, C, Dk, C, &c->scc, C, 1, &c->sck, Dk, 1, P->W, Dk);
  KROUND(c->num, KERN_RP_UW, P->U, C * Dv);
  KROUND(c->num, KERN_RP_UW, P->W, C * Dk);
  KR(kchunk_split)(c, &P->sW, P->W, C * Dk);
  if (split_u) KR(kchunk_split)(c, &P->sU, P->U, C * Dv);
  P->eGlast = c->eGlast;
}

/* Kt = diag(exp(G_last - G)) K (needed by the body and by the affine map). */
KTMPL void KR(kchunk_kt)(KR(kchunk) *c, KR(kprep) *P) {
  const int64_t C = c->C, Dk = c->Dk;
  KR(kchunk_scale_rows)(P->Kt, c->k, c->eGl, C, Dk);
  KR(kchunk_split)(c, &P->sKt, P->Kt, C * Dk);
}

/* The h-independent parts of the scan body: qg, the masked attn, Kt. */
KTMPL void KR(kchunk_prep)(KR(kchunk) *c, KR(kprep) *P) {
  const int64_t C = c->C, Dk = c->Dk;
  KR(kchunk_scale_rows)(P->qg, c->q, c->eG, C, Dk);
  KR(kchunk_split)(c, &c->sck, c->q, C * Dk);
  KR(kchunk_mm)(c, C, C, Dk, &c->sck, Dk, 1, &c->skT, C, 1, P->attn, C); /* Q K^T */
  KROUND(c->num, KERN_RP_QKT, P->attn, C * C);
  KR(kchunk_mask_decay)(P->attn, c->dec, C, 1);
  KR(kchunk_kt)(c, P);
  KR(kchunk_split)(c, &P->sqg, P->qg, C * Dk);
  KR(kchunk_split)(c, &P->sattn, P->attn, C * C);
}

/* Everything of chunk n that does not depend on h, into P. */
KTMPL void KR(kchunk_prep_all)(KR(kchunk) *c, int64_t n, KR(kprep) *P) {
  KR(kchunk_load)(c, n);
  KR(kchunk_wy)(c, P, 0);
  KR(kchunk_prep)(c, P);
}


/* The split s of the Dk x ld matrix x restricted to columns [c0, c1): the
 * parts of those elements, and the zero flags of the whole matrix (the OR of
 * every block's, through the team when there is one). */
KTMPL void KR(kchunk_split_cols)(KR(kchunk) *c, KSPLIT *s, const kreal *x, int64_t rows,
                                  int64_t ld, int64_t c0, int64_t c1, kern_team_sync *ts) {
  const kern_matmul mm = c->num->matmul;
  const int parts = kern_mm_parts(mm);
  unsigned nz = KR(kern_split_fill_cols)(s, mm, x, rows, ld, c0, c1);
  if (parts >= 2) nz = kern_team_or(ts, nz, (1u << parts) - 1u);
  s->nz = nz;
}


/* One step of the scan over chunks on the columns [c0, c1) of the state:
 * h holds those columns (Dk rows of c1 - c0, leading dimension ldh; the
 * whole state is h with ldh = Dv, [0, Dv)), updated in place; o of the
 * chunk into oin (those columns). */
KTMPL void KR(kchunk_body)(KR(kchunk) *c, const KR(kprep) *P, kreal *restrict h, int64_t ldh,
                            int64_t c0, int64_t c1, kern_team_sync *ts) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv, w = c1 - c0;
  KR(kchunk_prefetch)(c);
  KR(kchunk_split_cols)(c, &c->sh, h, Dk, ldh, 0, w, ts);
  if (w <= 0) { /* no columns: only the team's flag exchange */
    KR(kchunk_split_cols)(c, &c->svn, c->vnew, C, Dv, c0, c1, ts);
    return;
  }
  KR(kchunk_mm)(c, C, w, Dk, &P->sqg, Dk, 1, &c->sh, ldh, 1, c->oin + c0, Dv); /* o_inter = qg h */
  KR(kchunk_mm)(c, C, w, Dk, &P->sW, Dk, 1, &c->sh, ldh, 1, c->vnew + c0, Dv); /* v_prime = W h */
  for (int64_t i = 0; i < C; i++) {
    kreal *vn = c->vnew + i * Dv;
    const kreal *u = P->U + i * Dv;
    KSIMD for (int64_t x = c0; x < c1; x++) vn[x] = u[x] - vn[x];
  }
  KR(kchunk_split_cols)(c, &c->svn, c->vnew, C, Dv, c0, c1, ts);
  const KSPLIT svn = KR(kchunk_split_view)(&c->svn, c0);
  const kern_matmul mm = c->num->matmul;
  /* o = o_inter + attn v_new: the product, then the add (kern_mm_plus) */
  KR(kern_mm_plus)(mm, C, w, C, &P->sattn, C, 1, &svn, Dv, 1, c->oin + c0, Dv, c->oat + c0, Dv,
                   c->gws);
  /* h = h * eGlast + Kt^T v_new: the multiply in place (h is not read
   * again), then the product added */
  const kreal e = P->eGlast;
  for (int64_t r = 0; r < Dk; r++) {
    kreal *hr = h + r * ldh;
    KSIMD for (int64_t x = 0; x < w; x++) hr[x] = hr[x] * e;
  }
  KR(kern_mm_plus)(mm, Dk, w, C, &P->sKt, 1, Dk, &svn, Dv, 1, h, ldh, c->hn + c0, Dv, c->gws);
}

/* The rows t < t_end of chunk n's o (columns [c0, c1)) into out. */
KTMPL void KR(kchunk_store_o)(const KR(kchunk) *c, int64_t n, gdn_outputs *out, int64_t c0,
                               int64_t c1) {
  const int64_t C = c->C, Dv = c->Dv, T = c->t_end, t0 = c->t_base + n * C;
  if (out->oc.c) { /* coded o (kern_out.h, gdn_ocode.h): the same values, exactly */
    gdn_ocode_local loc;
    loc.n = 0; /* only the count: the entries are written before they are read */
    for (int64_t i = 0; i < C && t0 + i < T; i++) {
      const kreal *oi = c->oin + i * Dv;
      const size_t at = (size_t)(((c->b * out->shape.T + t0 + i) * out->shape.Hv + c->hv) * Dv);
      for (int64_t d = c0; d < c1; d++)
        gdn_ocode_put(&out->oc, at + (size_t)d, (float)KR(rows_out)(oi[d], c->out_bf16), &loc);
    }
    gdn_ocode_flush(&out->oc, &loc);
    return;
  }
  for (int64_t i = 0; i < C && t0 + i < T; i++) {
    const kreal *oi = c->oin + i * Dv;
    if (out->o32) { /* float32-held o (kern_out.h): the same values, exactly */
      float *of = out->o32 + ((c->b * out->shape.T + t0 + i) * out->shape.Hv + c->hv) * Dv;
      KSIMD for (int64_t d = c0; d < c1; d++) of[d] = (float)KR(rows_out)(oi[d], c->out_bf16);
      continue;
    }
    double *o = gdn_outputs_o(out, c->b, t0 + i, c->hv);
#if KERN_AVX && KERN_REAL == 32
    if (!c->out_bf16) {
      int64_t d = c0;
      for (; d < c1 && ((uintptr_t)(o + d) & 31u); d++) o[d] = (double)oi[d];
      for (; d + 4 <= c1; d += 4) _mm256_stream_pd(o + d, _mm256_cvtps_pd(_mm_loadu_ps(oi + d)));
      for (; d < c1; d++) o[d] = (double)oi[d];
      continue;
    }
#endif
    KSIMD for (int64_t d = c0; d < c1; d++) o[d] = KR(rows_out)(oi[d], c->out_bf16);
  }
#if KERN_AVX
  _mm_sfence(); /* streaming stores are weakly ordered: complete them here */
#endif
}

/* The stock scan over chunks first .. first+count-1 from the carry h
 * (updated in place), o rows stored, by one thread.  kern_scan and every
 * device's replay in kern_affine_prefix run exactly this (or, for a head
 * too few to keep the threads busy, kchunk_scan_team). */
KTMPL void KR(kchunk_scan)(KR(kchunk) *c, KR(kprep) *P, int64_t first, int64_t count, kreal *h,
                            gdn_outputs *out) {
  for (int64_t n = first; n < first + count; n++) {
    KR(kchunk_prep_all)(c, n, P);
    c->pf = n + 1 < first + count ? n + 1 : -1;
    KR(kchunk_body)(c, P, h, c->Dv, 0, c->Dv, NULL);
    KR(kchunk_store_o)(c, n, out, 0, c->Dv);
  }
}

/* The column block [*c0, *c1) of Dv thread tid of nt takes: whole panels of
 * 16 columns where possible (empty for the threads beyond Dv). */
KTMPL void KR(kchunk_team_cols)(int64_t Dv, int tid, int nt, int64_t *c0, int64_t *c1) {
  int64_t blk = (Dv + nt - 1) / nt;
  blk = (blk + 15) / 16 * 16;
  *c0 = (int64_t)tid * blk < Dv ? (int64_t)tid * blk : Dv;
  *c1 = *c0 + blk < Dv ? *c0 + blk : Dv;
}

/* kchunk_scan by a team of nt threads (called by every thread of the
 * current parallel region with its tid; h, the Dk x Dv state, is shared).
 * Each thread carries its column block of the state in its own buffer hb
 * (Dk x Dv elements; the block is stored with leading dimension c1 - c0),
 * copied from h at the start and back at the end: blocks of one shared
 * matrix would sit side by side in every row, where one core's adjacent-line
 * prefetches keep pulling in lines the other core is writing.  The chunks go
 * in groups of nt: thread j preps chunk j of the group into its slot
 * preps[2 j + (group & 1)], then every thread runs the group's bodies in
 * order on its column block and stores those columns of o.  One barrier per
 * group (the two slot sets alternate: a group's preps overwrite the slots
 * of the group before last, whose bodies every thread has finished), plus
 * the zero-flag exchanges of the bf16 pass modes (kern_team.h: a wait only
 * when a thread's own block cannot decide), plus one at the end. */
KTMPL void KR(kchunk_scan_team)(KR(kchunk) *c, KR(kprep) *preps, kern_team_sync *ts,
                                 int64_t first, int64_t count, kreal *h, kreal *hb,
                                 gdn_outputs *out) {
  const int tid = ts->tid, nt = ts->nt;
  const int64_t Dk = c->Dk, Dv = c->Dv;
  int64_t c0, c1;
  KR(kchunk_team_cols)(Dv, tid, nt, &c0, &c1);
  const int64_t w = c1 - c0;
  for (int64_t r = 0; r < Dk && w > 0; r++)
    memcpy(hb + r * w, h + r * Dv + c0, (size_t)w * sizeof *hb);
  for (int64_t g = 0; g * nt < count; g++) {
    const int64_t n0 = first + g * nt, m = count - g * nt < nt ? count - g * nt : nt;
    const int buf = (int)(g & 1);
    if (tid < m) KR(kchunk_prep_all)(c, n0 + tid, &preps[2 * tid + buf]);
    c->pf = n0 + nt + tid < first + count ? n0 + nt + tid : -1; /* this thread's next prep */
#pragma omp barrier
    for (int64_t j = 0; j < m; j++) {
      KR(kchunk_body)(c, &preps[2 * j + buf], hb, w, c0, c1, ts);
      if (c1 > c0) KR(kchunk_store_o)(c, n0 + j, out, c0, c1);
    }
  }
  for (int64_t r = 0; r < Dk && w > 0; r++)
    memcpy(h + r * Dv + c0, hb + r * w, (size_t)w * sizeof *hb);
#pragma omp barrier
}

/* The chunk's affine map h -> An h + Bn (after load, wy with split_u, kt). */
KTMPL void KR(kchunk_affine)(KR(kchunk) *c, const KR(kprep) *P, kreal *restrict An,
                              kreal *restrict Bn) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  KR(kchunk_prefetch)(c);
  KR(kchunk_mm)(c, Dk, Dk, C, &P->sKt, 1, Dk, &P->sW, Dk, 1, An, Dk); /* Kt^T W */
  for (int64_t r = 0; r < Dk; r++)
    KSIMD for (int64_t s = 0; s < Dk; s++)
        An[r * Dk + s] = (r == s ? P->eGlast : 0) - An[r * Dk + s];
  KR(kchunk_mm)(c, Dk, Dv, C, &P->sKt, 1, Dk, &P->sU, Dv, 1, Bn, Dv); /* Kt^T U */
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
