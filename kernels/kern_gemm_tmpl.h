/* Body of kern_gemm for one compute type (see kern_gemm.h, kern_real.h). */
#include "kern_real.h"

#define GEMM_MR 6
#define GEMM_NR KERN_NR
#define GEMM_KC 128
#define GEMM_NC 128 /* multiple of GEMM_NR for both types */
#define GEMM_MC 72  /* multiple of GEMM_MR */

size_t KR(kern_gemm_ws_elems)(kern_matmul mode) {
  (void)mode;
  /* the packed B block, one zero-padded edge panel of B */
  return (size_t)GEMM_KC * GEMM_NC + (size_t)GEMM_KC * GEMM_NR;
}

/* The mr x NR tile C[0..mr) x [0..nr) += / = A(mr x kc) . Bpanel(kc x NR).
 * ap[i * ars + p * acs] is A(i, p), read in place (row-major or transposed
 * A both give short sequential streams, so A is not packed);
 * bp[p * ldb + j] is B(p, j) for j < NR (columns
 * j >= nr are zero padding or belong to no output and are never stored).
 * `first`: start each sum from the product of p = 0 (SET on the first K
 * block); otherwise resume from C.  Inlined with a constant mr so the
 * accumulators live in registers. */
static inline __attribute__((always_inline)) void KR(gemm_tile)(
    const int mr, int64_t kc, const kreal *restrict ap, int64_t ars, int64_t acs,
    const kreal *restrict bp, int64_t ldb, kreal *restrict c, int64_t ldc, int nr, int first) {
  kreal acc[GEMM_MR][GEMM_NR];
  int64_t p0 = 0;
  if (first) {
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
      kreal a = ap[i * ars];
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = a * bp[j];
    }
    p0 = 1;
  } else if (nr == GEMM_NR) {
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) for (int j = 0; j < GEMM_NR; j++)
        acc[i][j] = c[i * ldc + j];
  } else {
    for (int i = 0; i < mr; i++) {
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = 0;
      for (int j = 0; j < nr; j++) acc[i][j] = c[i * ldc + j];
    }
  }
  for (int64_t p = p0; p < kc; p++) {
    const kreal *restrict b = bp + p * ldb;
    const kreal *restrict a = ap + p * acs;
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
      kreal ai = a[i * ars];
      for (int j = 0; j < GEMM_NR; j++) acc[i][j] = KFMA(ai, b[j], acc[i][j]);
    }
  }
  if (nr == GEMM_NR) {
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) for (int j = 0; j < GEMM_NR; j++)
        c[i * ldc + j] = acc[i][j];
  } else {
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nr; j++) c[i * ldc + j] = acc[i][j];
  }
}

static void KR(gemm_tile_any)(int mr, int64_t kc, const kreal *restrict ap, int64_t ars,
                              int64_t acs, const kreal *restrict bp, int64_t ldb,
                              kreal *restrict c, int64_t ldc, int nr, int first) {
  switch (mr) {
  case 6: KR(gemm_tile)(6, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  case 5: KR(gemm_tile)(5, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  case 4: KR(gemm_tile)(4, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  case 3: KR(gemm_tile)(3, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  case 2: KR(gemm_tile)(2, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  default: KR(gemm_tile)(1, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first); break;
  }
}

void KR(kern_gemm)(kern_matmul mode, kern_gemm_acc acc, int64_t m, int64_t n, int64_t k,
                   const kreal *a, int64_t a_rs, int64_t a_cs, const kreal *b, int64_t b_rs,
                   int64_t b_cs, kreal *c, int64_t ldc, kreal *ws) {
  if (m <= 0 || n <= 0) return;
#if KERN_REAL == 32
  if (mode != KERN_MATMUL_IEEE) { /* contract violation: see kern_gemm.h */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = NAN;
    return;
  }
#else
  (void)mode; /* float64: always IEEE */
#endif
  if (k <= 0) {
    if (acc == KERN_GEMM_SET)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0;
    return;
  }
  kreal *bpack = ws;
  kreal *edge = bpack + (size_t)GEMM_KC * GEMM_NC;
  const int direct = (b_cs == 1); /* rows of B contiguous: the micro-kernel reads B in place */
  for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
    int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
    for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
      int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
      int first = (acc == KERN_GEMM_SET && pc == 0);
      int64_t n_full = direct ? nc / GEMM_NR * GEMM_NR : 0;
      if (!direct) {
        /* pack the kc x nc block of B into NR-column panels, zero-padded */
        for (int64_t jp = 0; jp < nc; jp += GEMM_NR) {
          kreal *dst = bpack + (jp / GEMM_NR) * kc * GEMM_NR;
          int64_t w = nc - jp < GEMM_NR ? nc - jp : GEMM_NR;
          if (b_rs == 1) { /* B = X^T: read X's rows (contiguous in p) */
            for (int64_t j = 0; j < w; j++) {
              const kreal *src = b + pc + (jc + jp + j) * b_cs;
              for (int64_t p = 0; p < kc; p++) dst[p * GEMM_NR + j] = src[p];
            }
            for (int64_t p = 0; p < kc; p++)
              for (int64_t j = w; j < GEMM_NR; j++) dst[p * GEMM_NR + j] = 0;
          } else {
            for (int64_t p = 0; p < kc; p++) {
              const kreal *src = b + (pc + p) * b_rs + (jc + jp) * b_cs;
              for (int64_t j = 0; j < w; j++) dst[p * GEMM_NR + j] = src[j * b_cs];
              for (int64_t j = w; j < GEMM_NR; j++) dst[p * GEMM_NR + j] = 0;
            }
          }
        }
      } else if (n_full < nc) {
        /* the last, partial panel of a directly-read B, zero-padded */
        int64_t w = nc - n_full;
        for (int64_t p = 0; p < kc; p++) {
          const kreal *src = b + (pc + p) * b_rs + jc + n_full;
          for (int64_t j = 0; j < w; j++) edge[p * GEMM_NR + j] = src[j];
          for (int64_t j = w; j < GEMM_NR; j++) edge[p * GEMM_NR + j] = 0;
        }
      }
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
          int nr = (int)(nc - jr < GEMM_NR ? nc - jr : GEMM_NR);
          const kreal *bp;
          int64_t ldb;
          if (!direct) {
            bp = bpack + (jr / GEMM_NR) * kc * GEMM_NR;
            ldb = GEMM_NR;
          } else if (jr < n_full) {
            bp = b + pc * b_rs + jc + jr;
            ldb = b_rs;
          } else {
            bp = edge;
            ldb = GEMM_NR;
          }
          for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
            int mr = (int)(mc - ir < GEMM_MR ? mc - ir : GEMM_MR);
            KR(gemm_tile_any)(mr, kc, a + (ic + ir) * a_rs + pc * a_cs, a_rs, a_cs, bp, ldb,
                              c + (ic + ir) * ldc + jc + jr, ldc, nr, first);
          }
        }
      }
    }
  }
}

#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_KC
#undef GEMM_NC
#undef GEMM_MC
