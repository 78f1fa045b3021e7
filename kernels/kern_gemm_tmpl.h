/* Body of kern_gemm for one compute type (see kern_gemm.h, kern_real.h).
 *
 * Every path below performs, for each output element, exactly the sequence
 * of kern_gemm.h (a multiply for the first product, one fused multiply-add
 * per further p, for PLUS one add), so the vector widths and the portable
 * fallback give the same bits: a vector lane is one output element. */
#include "kern_real.h"

#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_KC
#undef GEMM_NC
#undef GEMM_MC
#undef GV
#undef GV_W
#undef GV_LOAD
#undef GV_STORE
#undef GV_BCAST
#undef GV_FMA
#undef GV_MUL
#undef GV_ADD

#if KERN_GEMM_ISA == 512 /* AVX-512F: 8 x (2 x 16 floats | 2 x 8 doubles) */
#define GEMM_MR 8
#if KERN_REAL == 32
#define GV __m512
#define GV_W 16
#define GV_LOAD _mm512_loadu_ps
#define GV_STORE _mm512_storeu_ps
#define GV_BCAST(p) _mm512_set1_ps(*(p))
#define GV_FMA _mm512_fmadd_ps
#define GV_MUL _mm512_mul_ps
#define GV_ADD _mm512_add_ps
#else
#define GV __m512d
#define GV_W 8
#define GV_LOAD _mm512_loadu_pd
#define GV_STORE _mm512_storeu_pd
#define GV_BCAST(p) _mm512_set1_pd(*(p))
#define GV_FMA _mm512_fmadd_pd
#define GV_MUL _mm512_mul_pd
#define GV_ADD _mm512_add_pd
#endif
#define GEMM_NR (2 * GV_W)
#define GEMM_MC 128
#elif KERN_GEMM_ISA == 256 /* AVX2 + FMA: 6 x (2 x 8 floats | 2 x 4 doubles) */
#define GEMM_MR 6
#if KERN_REAL == 32
#define GV __m256
#define GV_W 8
#define GV_LOAD _mm256_loadu_ps
#define GV_STORE _mm256_storeu_ps
#define GV_BCAST _mm256_broadcast_ss
#define GV_FMA _mm256_fmadd_ps
#define GV_MUL _mm256_mul_ps
#define GV_ADD _mm256_add_ps
#else
#define GV __m256d
#define GV_W 4
#define GV_LOAD _mm256_loadu_pd
#define GV_STORE _mm256_storeu_pd
#define GV_BCAST _mm256_broadcast_sd
#define GV_FMA _mm256_fmadd_pd
#define GV_MUL _mm256_mul_pd
#define GV_ADD _mm256_add_pd
#endif
#define GEMM_NR (2 * GV_W)
#define GEMM_MC 132
#else /* portable C, vectorised by gcc where it can */
#define GEMM_MR 6
#define GEMM_NR (KERN_REAL == 32 ? 16 : 8)
#define GEMM_MC 132
#endif
#define GEMM_KC 128 /* the K block: part of the contract's resume points, never change */
#define GEMM_NC 128 /* a multiple of GEMM_NR */

size_t KR(kern_gemm_ws_elems)(void) {
  /* the packed B block, the packed A block, PLUS's C block */
  return (size_t)GEMM_KC * GEMM_NC + (size_t)GEMM_MC * GEMM_KC + (size_t)GEMM_MC * GEMM_NC;
}

/* The tile C[0..mr) x [0..nr) (ldc) from the packed panels
 *   ap[p * MR + i] = A(i, p),  bp[p * NR + j] = B(p, j),  p < kc,
 * both zero-padded to MR rows / NR columns (padded rows and columns are
 * computed and never stored).  `first`: each sum starts from the product of
 * p = 0; otherwise it resumes from C.  `plus` (with first): store C + sum.
 * Inlined with constant first / plus so the accumulators live in registers. */
#if KERN_GEMM_ISA
static inline __attribute__((always_inline)) void KR(gemm_tile)(
    int64_t kc, const kreal *restrict ap, const kreal *restrict bp, kreal *restrict c,
    int64_t ldc, int mr, int nr, int first, int plus) {
  GV acc0[GEMM_MR], acc1[GEMM_MR];
  int64_t p0 = 0;
  if (first) {
    const GV b0 = GV_LOAD(bp), b1 = GV_LOAD(bp + GV_W);
    _Pragma("GCC unroll 8") for (int i = 0; i < GEMM_MR; i++) {
      const GV a = GV_BCAST(ap + i);
      acc0[i] = GV_MUL(a, b0);
      acc1[i] = GV_MUL(a, b1);
    }
    p0 = 1;
  } else {
    kreal tmp[GEMM_NR];
    _Pragma("GCC unroll 8") for (int i = 0; i < GEMM_MR; i++) {
      const kreal *ci = c + i * ldc;
      if (i < mr && nr == GEMM_NR) {
        acc0[i] = GV_LOAD(ci);
        acc1[i] = GV_LOAD(ci + GV_W);
      } else {
        for (int j = 0; j < GEMM_NR; j++) tmp[j] = (i < mr && j < nr) ? ci[j] : 0;
        acc0[i] = GV_LOAD(tmp);
        acc1[i] = GV_LOAD(tmp + GV_W);
      }
    }
  }
  const kreal *restrict b = bp + p0 * GEMM_NR;
  const kreal *restrict a = ap + p0 * GEMM_MR;
  _Pragma("GCC unroll 4") for (int64_t p = p0; p < kc; p++) {
    const GV b0 = GV_LOAD(b), b1 = GV_LOAD(b + GV_W);
    _Pragma("GCC unroll 8") for (int i = 0; i < GEMM_MR; i++) {
      const GV ai = GV_BCAST(a + i);
      acc0[i] = GV_FMA(ai, b0, acc0[i]);
      acc1[i] = GV_FMA(ai, b1, acc1[i]);
    }
    b += GEMM_NR;
    a += GEMM_MR;
  }
  kreal tmp[GEMM_NR];
  _Pragma("GCC unroll 8") for (int i = 0; i < GEMM_MR; i++) {
    if (i >= mr) break;
    kreal *ci = c + i * ldc;
    if (nr == GEMM_NR) {
      GV r0 = acc0[i], r1 = acc1[i];
      if (plus) {
        r0 = GV_ADD(GV_LOAD(ci), r0);
        r1 = GV_ADD(GV_LOAD(ci + GV_W), r1);
      }
      GV_STORE(ci, r0);
      GV_STORE(ci + GV_W, r1);
    } else {
      GV_STORE(tmp, acc0[i]);
      GV_STORE(tmp + GV_W, acc1[i]);
      for (int j = 0; j < nr; j++) ci[j] = plus ? ci[j] + tmp[j] : tmp[j];
    }
  }
}
#else
static inline __attribute__((always_inline)) void KR(gemm_tile)(
    int64_t kc, const kreal *restrict ap, const kreal *restrict bp, kreal *restrict c,
    int64_t ldc, int mr, int nr, int first, int plus) {
  kreal acc[GEMM_MR][GEMM_NR];
  int64_t p0 = 0;
  if (first) {
    for (int i = 0; i < GEMM_MR; i++)
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = ap[i] * bp[j];
    p0 = 1;
  } else {
    for (int i = 0; i < GEMM_MR; i++)
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = (i < mr && j < nr) ? c[i * ldc + j] : 0;
  }
  for (int64_t p = p0; p < kc; p++) {
    const kreal *restrict b = bp + p * GEMM_NR;
    const kreal *restrict a = ap + p * GEMM_MR;
    _Pragma("GCC unroll 8") for (int i = 0; i < GEMM_MR; i++) {
      kreal ai = a[i];
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = KFMA(ai, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) c[i * ldc + j] = plus ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}
#endif

static void KR(gemm_tile_any)(int64_t kc, const kreal *restrict ap, const kreal *restrict bp,
                              kreal *restrict c, int64_t ldc, int mr, int nr, int first,
                              int plus) {
  if (first && plus)
    KR(gemm_tile)(kc, ap, bp, c, ldc, mr, nr, 1, 1);
  else if (first)
    KR(gemm_tile)(kc, ap, bp, c, ldc, mr, nr, 1, 0);
  else
    KR(gemm_tile)(kc, ap, bp, c, ldc, mr, nr, 0, 0);
}

/* The kc x wn block of X at (pc, w0), X(p, j) = x[p * p_rs + j * j_rs], into
 * zero-padded panels of width pw: panel q holds dst[q kc pw + p pw + j] =
 * X(pc + p, w0 + q pw + j).  B's block is X = B (panels of NR columns); A's
 * is X = A^T (panels of MR rows).  Pure data movement, read along whichever
 * index is contiguous. */
static inline __attribute__((always_inline)) void KR(gemm_pack)(
    const kreal *x, int64_t p_rs, int64_t j_rs, int64_t pc, int64_t kc, int64_t w0, int64_t wn,
    int64_t pw, kreal *restrict pack) {
  for (int64_t jp = 0; jp < wn; jp += pw) {
    kreal *restrict dst = pack + (jp / pw) * kc * pw;
    const int64_t w = wn - jp < pw ? wn - jp : pw;
    const kreal *x0 = x + pc * p_rs + (w0 + jp) * j_rs;
    if (j_rs == 1 && w == pw) { /* whole panel rows: pw is a constant once inlined */
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = 0; j < pw; j++) dst[p * pw + j] = x0[p * p_rs + j];
    } else if (j_rs == 1) {
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = 0; j < w; j++) dst[p * pw + j] = x0[p * p_rs + j];
    } else if (p_rs == 1) {
      int64_t j0 = 0;
#if KERN_GEMM_ISA && KERN_REAL == 32
      /* eight rows of X^T at a time, in 8 x 8 transposed blocks */
      for (; j0 + 8 <= w; j0 += 8) {
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) kern_tr8_f32(x0 + j0 * j_rs + p, j_rs, dst + p * pw + j0, pw);
        for (; p < kc; p++)
          for (int64_t j = j0; j < j0 + 8; j++) dst[p * pw + j] = x0[j * j_rs + p];
      }
#endif
      for (int64_t j = j0; j < w; j++)
        for (int64_t p = 0; p < kc; p++) dst[p * pw + j] = x0[j * j_rs + p];
    } else {
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = 0; j < w; j++) dst[p * pw + j] = x0[p * p_rs + j * j_rs];
    }
    if (w < pw)
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = w; j < pw; j++) dst[p * pw + j] = 0;
  }
}
/* The packed blocks' product into the mc x nc block of C (ldc). */
static void KR(gemm_block)(int64_t mc, int64_t nc, int64_t kc, const kreal *apack,
                           const kreal *bpack, kreal *c, int64_t ldc, int first, int plus) {
  for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
    int nr = (int)(nc - jr < GEMM_NR ? nc - jr : GEMM_NR);
    const kreal *bp = bpack + (jr / GEMM_NR) * kc * GEMM_NR;
    for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
      int mr = (int)(mc - ir < GEMM_MR ? mc - ir : GEMM_MR);
      KR(gemm_tile_any)(kc, apack + (ir / GEMM_MR) * kc * GEMM_MR, bp, c + ir * ldc + jr, ldc,
                        mr, nr, first, plus);
    }
  }
}

void KR(kern_gemm)(kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, const kreal *a,
                   int64_t a_rs, int64_t a_cs, const kreal *b, int64_t b_rs, int64_t b_cs,
                   kreal *c, int64_t ldc, kreal *ws) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (acc == KERN_GEMM_SET)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0;
    return;
  }
  kreal *bpack = ws;
  kreal *apack = bpack + (size_t)GEMM_KC * GEMM_NC;
  kreal *tblk = apack + (size_t)GEMM_MC * GEMM_KC;
  if (acc == KERN_GEMM_PLUS && k > GEMM_KC) {
    /* the running product d of an MC x NC block of C is kept in tblk across
     * the K blocks and added to C once complete; B is packed again for each
     * row block (m / MC times) */
    for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
      int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
          int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
          KR(gemm_pack)(b, b_rs, b_cs, pc, kc, jc, nc, GEMM_NR, bpack);
          KR(gemm_pack)(a, a_cs, a_rs, pc, kc, ic, mc, GEMM_MR, apack); /* A^T */
          KR(gemm_block)(mc, nc, kc, apack, bpack, tblk, GEMM_NC, pc == 0, 0);
        }
        for (int64_t i = 0; i < mc; i++) {
          kreal *ci = c + (ic + i) * ldc + jc;
          const kreal *ti = tblk + i * GEMM_NC;
          KSIMD for (int64_t j = 0; j < nc; j++) ci[j] = ci[j] + ti[j];
        }
      }
    }
    return;
  }
  /* SET, ADD, and PLUS within one K block */
  const int plus = acc == KERN_GEMM_PLUS;
  for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
    int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
    for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
      int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
      int first = (acc != KERN_GEMM_ADD && pc == 0);
      KR(gemm_pack)(b, b_rs, b_cs, pc, kc, jc, nc, GEMM_NR, bpack);
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        KR(gemm_pack)(a, a_cs, a_rs, pc, kc, ic, mc, GEMM_MR, apack); /* A^T */
        KR(gemm_block)(mc, nc, kc, apack, bpack, c + ic * ldc + jc, ldc, first, plus);
      }
    }
  }
}
