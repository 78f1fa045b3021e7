/* Body of kern_gemm for one compute type (see kern_gemm.h, kern_real.h). */
#include "kern_real.h"

#define GEMM_MR 6
#define GEMM_NR KERN_NR
#define GEMM_KC 128
#define GEMM_NC 128 /* multiple of GEMM_NR for both types */
#define GEMM_MC 72  /* multiple of GEMM_MR */

size_t KR(kern_gemm_ws_elems)(void) {
  /* the packed B block, one zero-padded edge panel of B, PLUS's C block */
  return (size_t)GEMM_KC * GEMM_NC + (size_t)GEMM_KC * GEMM_NR + (size_t)GEMM_MC * GEMM_NC;
}

/* The mr x NR tile C[0..mr) x [0..nr) += / = A(mr x kc) . Bpanel(kc x NR).
 * ap[i * ars + p * acs] is A(i, p), read in place (row-major or transposed
 * A both give short sequential streams, so A is not packed);
 * bp[p * ldb + j] is B(p, j) for j < NR (columns
 * j >= nr are zero padding or belong to no output and are never stored).
 * `first`: start each sum from the product of p = 0 (SET on the first K
 * block); otherwise resume from C.  `plus` (with first): store C + sum
 * instead of the sum (PLUS within one K block).  Inlined with a constant mr
 * so the accumulators live in registers. */
static inline __attribute__((always_inline)) void KR(gemm_tile)(
    const int mr, int64_t kc, const kreal *restrict ap, int64_t ars, int64_t acs,
    const kreal *restrict bp, int64_t ldb, kreal *restrict c, int64_t ldc, int nr, int first,
    int plus) {
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
  if (plus) {
    if (nr == GEMM_NR) {
      _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) for (int j = 0; j < GEMM_NR; j++)
          c[i * ldc + j] = c[i * ldc + j] + acc[i][j];
    } else {
      for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) c[i * ldc + j] = c[i * ldc + j] + acc[i][j];
    }
  } else if (nr == GEMM_NR) {
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) for (int j = 0; j < GEMM_NR; j++)
        c[i * ldc + j] = acc[i][j];
  } else {
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nr; j++) c[i * ldc + j] = acc[i][j];
  }
}

static void KR(gemm_tile_any)(int mr, int64_t kc, const kreal *restrict ap, int64_t ars,
                              int64_t acs, const kreal *restrict bp, int64_t ldb,
                              kreal *restrict c, int64_t ldc, int nr, int first, int plus) {
  if (plus) {
    switch (mr) {
    case 6: KR(gemm_tile)(6, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    case 5: KR(gemm_tile)(5, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    case 4: KR(gemm_tile)(4, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    case 3: KR(gemm_tile)(3, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    case 2: KR(gemm_tile)(2, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    default: KR(gemm_tile)(1, kc, ap, ars, acs, bp, ldb, c, ldc, nr, 1, 1); break;
    }
    return;
  }
  switch (mr) {
  case 6: KR(gemm_tile)(6, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  case 5: KR(gemm_tile)(5, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  case 4: KR(gemm_tile)(4, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  case 3: KR(gemm_tile)(3, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  case 2: KR(gemm_tile)(2, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  default: KR(gemm_tile)(1, kc, ap, ars, acs, bp, ldb, c, ldc, nr, first, 0); break;
  }
}

/* B's kc x nc block at (pc, jc), ready for the micro-kernel: packed into
 * zero-padded NR-column panels when B's rows are not contiguous; else read
 * in place, with only a partial last panel copied (zero-padded) into `edge`.
 * Returns the number of columns read in place (0 when packed). */
static int64_t KR(gemm_pack_b)(const kreal *b, int64_t b_rs, int64_t b_cs, int64_t pc,
                               int64_t kc, int64_t jc, int64_t nc, kreal *bpack, kreal *edge) {
  if (b_cs != 1) {
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
    return 0;
  }
  int64_t n_full = nc / GEMM_NR * GEMM_NR;
  if (n_full < nc) {
    int64_t w = nc - n_full;
    for (int64_t p = 0; p < kc; p++) {
      const kreal *src = b + (pc + p) * b_rs + jc + n_full;
      for (int64_t j = 0; j < w; j++) edge[p * GEMM_NR + j] = src[j];
      for (int64_t j = w; j < GEMM_NR; j++) edge[p * GEMM_NR + j] = 0;
    }
  }
  return n_full;
}

/* The panel of columns jr .. jr+NR of the block prepared by gemm_pack_b. */
static inline const kreal *KR(gemm_panel)(const kreal *b, int64_t b_rs, int64_t b_cs, int64_t pc,
                                          int64_t kc, int64_t jc, int64_t jr, int64_t n_full,
                                          const kreal *bpack, const kreal *edge, int64_t *ldb) {
  if (b_cs != 1) {
    *ldb = GEMM_NR;
    return bpack + (jr / GEMM_NR) * kc * GEMM_NR;
  }
  if (jr < n_full) {
    *ldb = b_rs;
    return b + pc * b_rs + jc + jr;
  }
  *ldb = GEMM_NR;
  return edge;
}

/* One prepared B block times the rows ic .. ic+mc of A into C (ldc). */
static void KR(gemm_block)(int64_t mc, int64_t nc, int64_t kc, const kreal *a, int64_t a_rs,
                           int64_t a_cs, const kreal *b, int64_t b_rs, int64_t b_cs, int64_t pc,
                           int64_t jc, int64_t n_full, const kreal *bpack, const kreal *edge,
                           kreal *c, int64_t ldc, int first, int plus) {
  for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
    int nr = (int)(nc - jr < GEMM_NR ? nc - jr : GEMM_NR);
    int64_t ldb;
    const kreal *bp = KR(gemm_panel)(b, b_rs, b_cs, pc, kc, jc, jr, n_full, bpack, edge, &ldb);
    for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
      int mr = (int)(mc - ir < GEMM_MR ? mc - ir : GEMM_MR);
      KR(gemm_tile_any)(mr, kc, a + ir * a_rs + pc * a_cs, a_rs, a_cs, bp, ldb,
                        c + ir * ldc + jr, ldc, nr, first, plus);
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
  kreal *edge = bpack + (size_t)GEMM_KC * GEMM_NC;
  kreal *tblk = edge + (size_t)GEMM_KC * GEMM_NR;
  if (acc == KERN_GEMM_PLUS && k > GEMM_KC) {
    /* the running product d of an MC x NC block of C is kept in tblk across
     * the K blocks and added to C once complete; B is prepared again for
     * each row block (m / MC times) */
    for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
      int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
          int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
          int64_t n_full = KR(gemm_pack_b)(b, b_rs, b_cs, pc, kc, jc, nc, bpack, edge);
          KR(gemm_block)(mc, nc, kc, a + ic * a_rs, a_rs, a_cs, b, b_rs, b_cs, pc, jc, n_full,
                         bpack, edge, tblk, GEMM_NC, pc == 0, 0);
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
      int64_t n_full = KR(gemm_pack_b)(b, b_rs, b_cs, pc, kc, jc, nc, bpack, edge);
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        KR(gemm_block)(mc, nc, kc, a + ic * a_rs, a_rs, a_cs, b, b_rs, b_cs, pc, jc, n_full,
                       bpack, edge, c + ic * ldc + jc, ldc, first, plus);
      }
    }
  }
}

#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_KC
#undef GEMM_NC
#undef GEMM_MC
