/* The reformulations (kern_reform.h): one plain float32 chunked forward with
 * a choice point per row, and the rows that reuse a project kernel
 * (token-loop, float64). */
#include "kern_reform.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_config.h"
#include "kern_vjp.h"

static const kern_reform_row rows[KERN_REFORM_COUNT] = {
    {KERN_REFORM_PLAIN, "plain", "the stock order, unchanged (the control: bit-identical to the float32 IEEE scan)", 0},
    {KERN_REFORM_SOLVE_DOT, "solve-dot",
     "the in-chunk inverse by triangular solve in inner-product form: A_ij = -(sum_{m=j}^{i-1} S_im A_mj), "
     "multiply then add, instead of fma forward substitution row by row", 0},
    {KERN_REFORM_SOLVE_RHS, "solve-rhs",
     "no inverse: U and W by forward substitution on their right-hand sides (U_i = vb_i - sum_{m<i} S_im U_m)", 0},
    {KERN_REFORM_WY_ASSOC, "wy-assoc",
     "the WY products associated the other way: (A diag(beta)) V and ((A diag(beta)) diag(exp G)) K", 0},
    {KERN_REFORM_KKT_BETA_AFTER, "kkt-beta-after", "S = diag(beta) (K K^T) instead of (beta K) K^T", 0},
    {KERN_REFORM_DECAY_SPLIT, "decay-split",
     "exp(G_i - G_j) as exp(G_i) exp(-G_j) where -G_j <= 80 (and exp(G_last - G_i) likewise)", 0},
    {KERN_REFORM_CUMSUM_PAIRWISE, "cumsum-pairwise", "the gates' in-chunk cumulative sum by pairwise summation", 0},
    {KERN_REFORM_CUMSUM_HILLIS_STEELE, "cumsum-hillis-steele",
     "the gates' in-chunk cumulative sum as a Hillis-Steele parallel prefix (log-depth, as XLA's or torch's "
     "cumsum may evaluate it)", 0},
    {KERN_REFORM_CUMSUM_BLELLOCH, "cumsum-blelloch",
     "the gates' in-chunk cumulative sum as a Blelloch (work-efficient) parallel prefix", 0},
    {KERN_REFORM_GEMM_BLOCKED, "gemm-blocked",
     "every product's inner sum in blocks of 8, the blocks' sums added left to right", 0},
    {KERN_REFORM_TOKEN_LOOP, "token-loop", "the token recurrence, no chunks (kern_recurrent)", 0},
    {KERN_REFORM_FLOAT64, "float64", "the stock scan in float64, rounded to float32 once (and its backward)", 1},
};

const kern_reform_row *kern_reform_row_of(kern_reform r) {
  return (unsigned)r < KERN_REFORM_COUNT ? &rows[r] : &rows[0];
}

const char *kern_reform_name(kern_reform r) { return kern_reform_row_of(r)->name; }

int kern_reform_parse(const char *s, kern_reform *out, gdn_error *e) {
  if (!s) s = "";
  for (int i = 0; i < KERN_REFORM_COUNT; i++)
    if (strcmp(s, rows[i].name) == 0) {
      *out = (kern_reform)i;
      return GDN_OK;
    }
  char names[1024] = "";
  for (int i = 0; i < KERN_REFORM_COUNT; i++) {
    strncat(names, rows[i].name, sizeof names - strlen(names) - 3);
    if (i + 1 < KERN_REFORM_COUNT) strncat(names, ", ", sizeof names - strlen(names) - 1);
  }
  return gdn_error_set(e, GDN_ERR_INPUT, "unknown reformulation '%s' (one of: %s)", s, names);
}

/* ---- the plain chunked forward ---- */

/* One thread's scratch for one chunk. */
typedef struct rchunk {
  int64_t C, Dk, Dv;
  int64_t t_base, t_end; /* the piece: chunk n holds tokens t_base + n C + i, pads from t_end on */
  kern_reform r;
  float *q, *k, *v, *g, *beta, *G, *eG, *eGl, *tmp; /* C x Dk, C x Dk, C x Dv, then C each (tmp: 2C) */
  float *dec, *S, *A;                               /* C x C */
  float *kb, *vb, *U, *W, *qg, *Kt, *attn;          /* attn C x C; the others C x Dk or C x Dv */
  float *vnew, *oin, *hn;                           /* C x Dv, C x Dv, Dk x Dv */
  float *fold;                                      /* the fold's scratch (rchunk_floats), D > 1 */
  float eGlast;
} rchunk;

/* One inner product of n terms, element p of a at a[p * as], of b at
 * b[p * bs]: kern_gemm's order (the first product, then fma ascending), or
 * gemm-blocked's (fma chains over blocks of 8, the chains added). */
static float rdot(const rchunk *c, int64_t n, const float *a, int64_t as, const float *b, int64_t bs) {
  if (n <= 0) return 0.0f;
  if (c->r != KERN_REFORM_GEMM_BLOCKED) {
    float s = a[0] * b[0];
    for (int64_t p = 1; p < n; p++) s = fmaf(a[p * as], b[p * bs], s);
    return s;
  }
  float tot = 0.0f;
  for (int64_t p0 = 0; p0 < n; p0 += 8) {
    const int64_t p1 = p0 + 8 < n ? p0 + 8 : n;
    float s = a[p0 * as] * b[p0 * bs];
    for (int64_t p = p0 + 1; p < p1; p++) s = fmaf(a[p * as], b[p * bs], s);
    tot = p0 ? tot + s : s;
  }
  return tot;
}

/* G = the in-chunk cumulative sum of g, in the row's order. */
static float pairwise(const float *g, int64_t n) {
  if (n == 1) return g[0];
  const int64_t h = n / 2;
  return pairwise(g, h) + pairwise(g + h, n - h);
}

static void rchunk_cumsum(rchunk *c) {
  const int64_t C = c->C;
  float *G = c->G;
  const float *g = c->g;
  if (c->r == KERN_REFORM_CUMSUM_PAIRWISE) {
    for (int64_t i = 0; i < C; i++) G[i] = pairwise(g, i + 1);
  } else if (c->r == KERN_REFORM_CUMSUM_HILLIS_STEELE) {
    memcpy(G, g, (size_t)C * sizeof *G);
    for (int64_t s = 1; s < C; s *= 2) /* descending i: every read is the previous round's value */
      for (int64_t i = C - 1; i >= s; i--) G[i] = G[i - s] + G[i];
  } else if (c->r == KERN_REFORM_CUMSUM_BLELLOCH) {
    int64_t n = 1;
    while (n < C) n *= 2;
    float *x = c->tmp; /* 2C >= n */
    for (int64_t i = 0; i < n; i++) x[i] = i < C ? g[i] : 0.0f;
    for (int64_t d = 1; d < n; d *= 2) /* up-sweep */
      for (int64_t i = 2 * d - 1; i < n; i += 2 * d) x[i] = x[i - d] + x[i];
    x[n - 1] = 0.0f;
    for (int64_t d = n / 2; d >= 1; d /= 2) /* down-sweep: exclusive sums */
      for (int64_t i = 2 * d - 1; i < n; i += 2 * d) {
        const float t = x[i - d];
        x[i - d] = x[i];
        x[i] = t + x[i];
      }
    for (int64_t i = 0; i < C; i++) G[i] = x[i] + g[i];
  } else {
    G[0] = g[0];
    for (int64_t i = 1; i < C; i++) G[i] = G[i - 1] + g[i];
  }
}

/* exp with the stock kernel's underflow shortcut (kern_chunk_tmpl.h's
 * kexpu: the same +0 expf returns there). */
static inline float rexp(float x) { return x < -0x1.9fe368p6f ? 0.0f : expf(x); }

/* exp(a - b), or decay-split's exp(a) exp(-b) where -b <= 80. */
static inline float rdecay(const rchunk *c, float a, float b) {
  if (c->r == KERN_REFORM_DECAY_SPLIT && -b <= 80.0f) return rexp(a) * rexp(-b);
  return rexp(a - b);
}

/* G and every decay of the chunk. */
static void rchunk_gates(rchunk *c) {
  const int64_t C = c->C;
  rchunk_cumsum(c);
  const float Gl = c->G[C - 1];
  for (int64_t i = 0; i < C; i++) {
    c->eG[i] = rexp(c->G[i]);
    c->eGl[i] = rdecay(c, Gl, c->G[i]);
    for (int64_t j = 0; j < C; j++) c->dec[i * C + j] = j < i ? rdecay(c, c->G[i], c->G[j]) : 0.0f;
  }
  c->eGlast = rexp(Gl);
}

/* Loads chunk n of head (b, hv) as kern_rows_tmpl.h prepares it (zero pads
 * past T). */
static void rchunk_load(rchunk *c, const gdn_inputs *in, int64_t b, int64_t hv, int64_t n, float scale) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv, hk = gdn_inputs_key_head(in, hv);
  for (int64_t i = 0; i < C; i++) {
    const int64_t t = c->t_base + n * C + i;
    float *q = c->q + i * Dk, *k = c->k + i * Dk, *v = c->v + i * Dv;
    if (t >= c->t_end) {
      memset(q, 0, (size_t)Dk * sizeof *q);
      memset(k, 0, (size_t)Dk * sizeof *k);
      memset(v, 0, (size_t)Dv * sizeof *v);
      c->g[i] = c->beta[i] = 0.0f;
      continue;
    }
    memcpy(q, gdn_inputs_q(in, b, t, hk), (size_t)Dk * sizeof *q);
    memcpy(k, gdn_inputs_k(in, b, t, hk), (size_t)Dk * sizeof *k);
    memcpy(v, gdn_inputs_v(in, b, t, hv), (size_t)Dv * sizeof *v);
    for (int w = 0; w < 2 && in->l2norm_in_kernel; w++) {
      float *y = w ? k : q, ss = y[0] * y[0];
      for (int64_t d = 1; d < Dk; d++) ss = ss + y[d] * y[d];
      const float inv = 1.0f / sqrtf(ss + 1e-6f);
      for (int64_t d = 0; d < Dk; d++) y[d] = y[d] * inv;
    }
    for (int64_t d = 0; d < Dk; d++) q[d] = q[d] * scale;
    c->g[i] = gdn_inputs_g(in, b, t, hv);
    c->beta[i] = gdn_inputs_beta(in, b, t, hv);
  }
}

/* S: strictly lower, (beta K) K^T (or beta (K K^T)) times the decays. */
static void rchunk_kkt(rchunk *c) {
  const int64_t C = c->C, Dk = c->Dk;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dk; d++) c->kb[i * Dk + d] = c->k[i * Dk + d] * c->beta[i];
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++) {
      float s = 0.0f;
      if (j < i) {
        s = c->r == KERN_REFORM_KKT_BETA_AFTER ? c->beta[i] * rdot(c, Dk, c->k + i * Dk, 1, c->k + j * Dk, 1)
                                                : rdot(c, Dk, c->kb + i * Dk, 1, c->k + j * Dk, 1);
        s = s * c->dec[i * C + j];
      }
      c->S[i * C + j] = s;
    }
}

/* A = (I + S)^-1: fma forward substitution (the stock order) or solve-dot's
 * inner products. */
static void rchunk_inverse(rchunk *c) {
  const int64_t C = c->C;
  float *A = c->A;
  const float *S = c->S;
  memset(A, 0, (size_t)(C * C) * sizeof *A);
  for (int64_t i = 0; i < C; i++) {
    float *ai = A + i * C;
    ai[i] = 1.0f;
    if (c->r == KERN_REFORM_SOLVE_DOT) {
      for (int64_t j = 0; j < i; j++) {
        float s = 0.0f;
        for (int64_t m = j; m < i; m++) s = m == j ? S[i * C + m] * A[m * C + j] : s + S[i * C + m] * A[m * C + j];
        ai[j] = -s;
      }
      continue;
    }
    for (int64_t m = 0; m < i; m++) {
      const float ns = -S[i * C + m];
      for (int64_t j = 0; j <= m; j++) ai[j] = fmaf(ns, A[m * C + j], ai[j]);
    }
  }
}

/* X (C x D) = (I + S)^-1 R by forward substitution on R (solve-rhs). */
static void rchunk_subst(const rchunk *c, const float *R, float *X, int64_t D) {
  const int64_t C = c->C;
  for (int64_t i = 0; i < C; i++) {
    float *xi = X + i * D;
    memcpy(xi, R + i * D, (size_t)D * sizeof *xi);
    for (int64_t m = 0; m < i; m++) {
      const float ns = -c->S[i * C + m];
      for (int64_t d = 0; d < D; d++) xi[d] = fmaf(ns, X[m * D + d], xi[d]);
    }
  }
}

/* Y (C x D) = M R, M C x C, R C x D (row-major). */
static void rchunk_mm_cc(const rchunk *c, const float *M, const float *R, float *Y, int64_t D) {
  const int64_t C = c->C;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < D; d++) Y[i * D + d] = rdot(c, C, M + i * C, 1, R + d, D);
}

/* U and W (the WY factors). */
static void rchunk_wy(rchunk *c) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dv; d++) c->vb[i * Dv + d] = c->v[i * Dv + d] * c->beta[i];
  if (c->r == KERN_REFORM_WY_ASSOC) { /* Ab = A diag(beta); U = Ab V; W = (Ab diag(eG)) K */
    float *Ab = c->S; /* S is not read again */
    for (int64_t i = 0; i < C; i++)
      for (int64_t j = 0; j < C; j++) Ab[i * C + j] = c->A[i * C + j] * c->beta[j];
    rchunk_mm_cc(c, Ab, c->v, c->U, Dv);
    for (int64_t i = 0; i < C; i++)
      for (int64_t j = 0; j < C; j++) Ab[i * C + j] = Ab[i * C + j] * c->eG[j];
    rchunk_mm_cc(c, Ab, c->k, c->W, Dk);
    return;
  }
  for (int64_t i = 0; i < C; i++) /* kb becomes k beta exp(G) */
    for (int64_t d = 0; d < Dk; d++) c->kb[i * Dk + d] = c->kb[i * Dk + d] * c->eG[i];
  if (c->r == KERN_REFORM_SOLVE_RHS) {
    rchunk_subst(c, c->vb, c->U, Dv);
    rchunk_subst(c, c->kb, c->W, Dk);
    return;
  }
  rchunk_mm_cc(c, c->A, c->vb, c->U, Dv);
  rchunk_mm_cc(c, c->A, c->kb, c->W, Dk);
}

/* qg, the masked attn, Kt. */
static void rchunk_prep(rchunk *c) {
  const int64_t C = c->C, Dk = c->Dk;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dk; d++) {
      c->qg[i * Dk + d] = c->q[i * Dk + d] * c->eG[i];
      c->Kt[i * Dk + d] = c->k[i * Dk + d] * c->eGl[i];
    }
  for (int64_t i = 0; i < C; i++)
    for (int64_t j = 0; j < C; j++) {
      float a = 0.0f;
      if (j <= i) {
        a = rdot(c, Dk, c->q + i * Dk, 1, c->k + j * Dk, 1);
        if (j < i) a = a * c->dec[i * C + j];
      }
      c->attn[i * C + j] = a;
    }
}

/* The body: o of the chunk into oin, h (Dk x Dv) updated. */
static void rchunk_body(rchunk *c, float *h) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv;
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dv; d++) {
      c->oin[i * Dv + d] = rdot(c, Dk, c->qg + i * Dk, 1, h + d, Dv);
      c->vnew[i * Dv + d] = c->U[i * Dv + d] - rdot(c, Dk, c->W + i * Dk, 1, h + d, Dv);
    }
  for (int64_t i = 0; i < C; i++)
    for (int64_t d = 0; d < Dv; d++) /* attn is zero above the diagonal: the stock sum runs over all C */
      c->oin[i * Dv + d] = c->oin[i * Dv + d] + rdot(c, C, c->attn + i * C, 1, c->vnew + d, Dv);
  for (int64_t r = 0; r < Dk; r++)
    for (int64_t d = 0; d < Dv; d++) c->hn[r * Dv + d] = rdot(c, C, c->Kt + r, Dk, c->vnew + d, Dv);
  for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h[x] * c->eGlast + c->hn[x];
}

/* Floats one thread needs: the state h, rchunk_bind's buffers, then the
 * fold's (D > 1): A_n, B_n, two temporaries, the carry, and each device's
 * composed map (M_r, Bc_r). */
static size_t rchunk_floats(int64_t C, int64_t Dk, int64_t Dv, int64_t D) {
  const int64_t kk = Dk * Dk, kv = Dk * Dv;
  const int64_t fold = D > 1 ? 2 * kk + 3 * kv + D * (kk + kv) : 0;
  return (size_t)(kv + C * (6 * Dk + 5 * Dv) + kv + 4 * C * C + 9 * C + fold);
}

static void rchunk_bind(rchunk *c, float *p, int64_t C, int64_t Dk, int64_t Dv, kern_reform r) {
  c->C = C, c->Dk = Dk, c->Dv = Dv, c->r = r;
  float **ck[] = {&c->q, &c->k, &c->kb, &c->W, &c->qg, &c->Kt};
  for (size_t i = 0; i < 6; i++) *ck[i] = p, p += C * Dk;
  float **cv[] = {&c->v, &c->vb, &c->U, &c->vnew, &c->oin};
  for (size_t i = 0; i < 5; i++) *cv[i] = p, p += C * Dv;
  c->hn = p, p += Dk * Dv;
  float **cc[] = {&c->dec, &c->S, &c->A, &c->attn};
  for (size_t i = 0; i < 4; i++) *cc[i] = p, p += C * C;
  float **c1[] = {&c->g, &c->beta, &c->G, &c->eG, &c->eGl, &c->tmp};
  for (size_t i = 0; i < 6; i++) *c1[i] = p, p += i == 5 ? 4 * C : C; /* tmp: Blelloch's power of two < 2C */
  c->fold = p;
}

/* Everything of chunk n of the piece that does not depend on the state. */
static void rchunk_prepare(rchunk *c, const gdn_inputs *in, int64_t b, int64_t hv, int64_t n, float scale) {
  rchunk_load(c, in, b, hv, n, scale);
  rchunk_gates(c);
  rchunk_kkt(c);
  if (c->r != KERN_REFORM_SOLVE_RHS) rchunk_inverse(c);
  rchunk_wy(c);
  rchunk_prep(c);
}

static float rscale(const gdn_inputs *in) {
  return in->has_scale ? (float)in->scale : 1.0f / sqrtf((float)in->shape.Dk);
}

/* The piece's chunks from the state h (updated), o of its tokens stored. */
static void rchunk_run(rchunk *c, const gdn_inputs *in, int64_t b, int64_t hv, float *h, gdn_outputs *out) {
  const int64_t C = c->C, Dv = c->Dv;
  for (int64_t n = 0; c->t_base + n * C < c->t_end; n++) {
    rchunk_prepare(c, in, b, hv, n, rscale(in));
    rchunk_body(c, h);
    for (int64_t i = 0; i < C && c->t_base + n * C + i < c->t_end; i++) {
      double *o = gdn_outputs_o(out, b, c->t_base + n * C + i, hv);
      for (int64_t d = 0; d < Dv; d++) o[d] = c->oin[i * Dv + d];
    }
  }
}

/* Y (Dk x D) = An X (+ Bn when given): An Dk x Dk, X Dk x D, rdot's order. */
static void rchunk_apply(const rchunk *c, const float *An, const float *X, const float *Bn, float *Y, int64_t D) {
  const int64_t Dk = c->Dk;
  for (int64_t r = 0; r < Dk; r++)
    for (int64_t d = 0; d < D; d++) {
      const float y = rdot(c, Dk, An + r * Dk, 1, X + d, D);
      Y[r * D + d] = Bn ? y + Bn[r * D + d] : y;
    }
}

/* The piece's affine map h -> M h + Bc: each chunk's A_n = eGlast I -
 * Kt^T W and B_n = Kt^T U (products, then the subtraction from the
 * diagonal), composed as M = A_n M, Bc = A_n Bc + B_n, chunk after chunk. */
static void rchunk_fold(rchunk *c, const gdn_inputs *in, int64_t b, int64_t hv, float *M, float *Bc) {
  const int64_t C = c->C, Dk = c->Dk, Dv = c->Dv, kk = Dk * Dk, kv = Dk * Dv;
  float *An = c->fold, *Bn = An + kk, *tM = Bn + kv, *tB = tM + kk;
  for (int64_t x = 0; x < kk; x++) M[x] = x % (Dk + 1) == 0 ? 1.0f : 0.0f;
  memset(Bc, 0, (size_t)kv * sizeof *Bc);
  for (int64_t n = 0; c->t_base + n * C < c->t_end; n++) {
    rchunk_prepare(c, in, b, hv, n, rscale(in));
    for (int64_t r = 0; r < Dk; r++) {
      for (int64_t s = 0; s < Dk; s++)
        An[r * Dk + s] = (r == s ? c->eGlast : 0.0f) - rdot(c, C, c->Kt + r, Dk, c->W + s, Dk);
      for (int64_t d = 0; d < Dv; d++) Bn[r * Dv + d] = rdot(c, C, c->Kt + r, Dk, c->U + d, Dv);
    }
    rchunk_apply(c, An, M, NULL, tM, Dk);
    rchunk_apply(c, An, Bc, Bn, tB, Dv);
    memcpy(M, tM, (size_t)kk * sizeof *M);
    memcpy(Bc, tB, (size_t)kv * sizeof *Bc);
  }
}

/* One head (b, hv) on D devices (token sharding: device r holds tokens
 * [r T/D, (r+1) T/D), chunked from its own start): D = 1 is the scan; else
 * each device's map folded, the carries by the sequential prefix carry_0 =
 * h0, carry_{r+1} = M_r carry_r + Bc_r, each device's piece replayed from
 * its carry, ht the composition M_{D-1} carry_{D-1} + Bc_{D-1}.  The state
 * is float32 in h (Dk x Dv). */
static void rchunk_head(rchunk *c, const gdn_inputs *in, int64_t b, int64_t hv, int64_t D, float *h,
                        gdn_outputs *out) {
  const int64_t Dk = c->Dk, Dv = c->Dv, T = in->shape.T, kk = Dk * Dk, kv = Dk * Dv;
  const float *h0 = gdn_inputs_h0(in, b, hv);
  float *carry = c->fold + 2 * kk + 2 * kv, *maps = carry + kv, *ht32 = h;
  for (int64_t x = 0; x < kv; x++) h[x] = h0 ? h0[x] : 0.0f;
  if (D > 1) {
    for (int64_t r = 0; r < D; r++) {
      c->t_base = r * (T / D), c->t_end = (r + 1) * (T / D);
      rchunk_fold(c, in, b, hv, maps + r * (kk + kv), maps + r * (kk + kv) + kk);
    }
    memcpy(carry, h, (size_t)kv * sizeof *carry);
    for (int64_t r = 0; r < D; r++) {
      c->t_base = r * (T / D), c->t_end = (r + 1) * (T / D);
      memcpy(h, carry, (size_t)kv * sizeof *h);
      rchunk_run(c, in, b, hv, h, out);
      const float *M = maps + r * (kk + kv);
      rchunk_apply(c, M, carry, M + kk, c->fold, Dv); /* A_n's room is free now */
      memcpy(carry, c->fold, (size_t)kv * sizeof *carry);
    }
    ht32 = carry;
  } else {
    c->t_base = 0, c->t_end = T;
    rchunk_run(c, in, b, hv, h, out);
  }
  double *ht = gdn_outputs_ht(out, b, hv);
  for (int64_t x = 0; x < kv; x++) ht[x] = ht32[x];
}

static int reform_chunked(const gdn_inputs *in, int64_t C, int64_t D, kern_reform r, gdn_outputs *out,
                          gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t heads = s->B * s->Hv;
  const int nt = gdn_threads_for(heads);
  const size_t per = rchunk_floats(C, s->Dk, s->Dv, D);
  float *mem = gdn_calloc((size_t)nt, per * sizeof(float), "reformulation scratch", e);
  if (!mem) return e->code;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t bh = 0; bh < heads; bh++) {
    float *p = mem + (size_t)omp_get_thread_num() * per;
    rchunk c;
    rchunk_bind(&c, p + s->Dk * s->Dv, C, s->Dk, s->Dv, r);
    rchunk_head(&c, in, bh / s->Hv, bh % s->Hv, D, p, out);
  }
  gdn_free(mem);
  return GDN_OK;
}

/* A kernel's outputs rounded to float32 (float64's last step). */
static void round_outputs(gdn_outputs *out) {
  const gdn_shape *s = &out->shape;
  const size_t no = (size_t)(s->B * s->T * s->Hv * s->Dv), nh = (size_t)(s->B * s->Hv * s->Dk * s->Dv);
  for (size_t i = 0; i < no; i++) out->o[i] = (float)out->o[i];
  for (size_t i = 0; i < nh; i++) out->ht[i] = (float)out->ht[i];
  out->dtype = GDN_DTYPE_F32;
}

int kern_reform_forward(const gdn_inputs *in, int64_t C, int64_t D, kern_reform r, gdn_outputs *out,
                        gdn_error *e) {
  if ((unsigned)r >= KERN_REFORM_COUNT) return gdn_error_set(e, GDN_ERR_INPUT, "reformulation %d out of range", (int)r);
  if (in->seg)
    return gdn_error_set(e, GDN_ERR_INPUT, "reformulation %s: packed documents (segment ids) are not supported",
                         kern_reform_name(r));
  if (C < 1) return gdn_error_set(e, GDN_ERR_INPUT, "reformulation %s: chunk %lld < 1", kern_reform_name(r), (long long)C);
  if (D < 1 || in->shape.T % D)
    return gdn_error_set(e, GDN_ERR_INPUT, "reformulation %s: %lld devices do not divide T = %lld (token sharding)",
                         kern_reform_name(r), (long long)D, (long long)in->shape.T);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.chunk = C;
  out->f32_ok = 0;
  out->code_base = NULL;
  int rc;
  if (r == KERN_REFORM_TOKEN_LOOP) {
    rc = kern_recurrent(in, &cfg, out, e);
  } else if (r == KERN_REFORM_FLOAT64) {
    cfg.dtype = GDN_DTYPE_F64;
    cfg.devices = D;
    rc = D > 1 ? kern_affine_prefix(in, &cfg, out, e) : kern_scan(in, &cfg, out, e);
    if (!rc) round_outputs(out);
  } else {
    rc = gdn_outputs_alloc(out, &in->shape, GDN_DTYPE_F32, e);
    if (!rc) rc = reform_chunked(in, C, D, r, out, e);
  }
  if (rc) gdn_outputs_clear(out);
  return rc;
}

int kern_reform_vjp(const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, kern_reform r, gdn_grads *g,
                    gdn_error *e) {
  if (!kern_reform_row_of(r)->has_vjp || (unsigned)r >= KERN_REFORM_COUNT)
    return gdn_error_set(e, GDN_ERR_INPUT, "reformulation %s has no backward", kern_reform_name(r));
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F64;
  cfg.chunk = C;
  int rc = kern_scan_vjp(in, ct, &cfg, g, e);
  if (rc) return rc;
  for (int t = 0; t < GDN_GRADS_N; t++) {
    double *x = gdn_grads_tensor(g, (gdn_grad_id)t);
    const size_t n = x ? gdn_grads_numel(&g->shape, (gdn_grad_id)t) : 0;
    for (size_t i = 0; i < n; i++) x[i] = (float)x[i];
  }
  g->dtype = GDN_DTYPE_F32;
  return GDN_OK;
}
