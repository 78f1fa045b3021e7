/* Body of kern_mm for one compute type (see kern_mm.h, kern_real.h). */
#include "kern_real.h"

#undef KSPLIT
#define KSPLIT KR(kern_split)

size_t KR(kern_split_elems)(kern_matmul mode, size_t n) {
#if KERN_REAL == 32
  const size_t per_line = 64 / sizeof(kreal), np = (size_t)kern_mm_parts(mode);
  if (n > SIZE_MAX / 4 - per_line) return SIZE_MAX; /* refused by the allocator */
  return np * ((n + per_line - 1) / per_line * per_line);
#else
  (void)mode;
  (void)n;
  return 0;
#endif
}

void KR(kern_split_bind)(KSPLIT *s, kern_matmul mode, kreal *mem, size_t n) {
  s->x = NULL;
  s->part[0] = s->part[1] = s->part[2] = NULL;
  s->n = n;
  s->nz = 1u;
#if KERN_REAL == 32
  const size_t per_line = 64 / sizeof(kreal), stride = (n + per_line - 1) / per_line * per_line;
  for (int i = 0; i < kern_mm_parts(mode); i++) s->part[i] = mem + (size_t)i * stride;
#else
  (void)mode;
  (void)mem;
#endif
}

void KR(kern_split_fill)(KSPLIT *s, kern_matmul mode, const kreal *x, size_t n) {
  s->x = x;
  s->nz = 1u;
#if KERN_REAL == 32
  float *restrict p0 = s->part[0], *restrict p1 = s->part[1], *restrict p2 = s->part[2];
  switch (mode) {
  case KERN_MATMUL_DEFAULT:
    KSIMD for (size_t i = 0; i < n; i++) p0[i] = bf16_rn(x[i]);
    break;
  case KERN_MATMUL_HIGH: {
    uint32_t any1 = 0;
    KSIMD for (size_t i = 0; i < n; i++) {
      float h = bf16_trunc(x[i]), l = bf16_rn(x[i] - h);
      p0[i] = h;
      p1[i] = l;
    }
    for (size_t i = 0; i < n; i++) any1 |= gdn_f32_bits(p1[i]) & 0x7fffffffu;
    s->nz |= any1 ? 2u : 0u;
    break;
  }
  case KERN_MATMUL_HIGHEST: {
    uint32_t any1 = 0, any2 = 0;
    KSIMD for (size_t i = 0; i < n; i++) {
      float h = bf16_trunc(x[i]), r = x[i] - h, m = bf16_trunc(r), l = bf16_rn(r - m);
      p0[i] = h;
      p1[i] = m;
      p2[i] = l;
    }
    for (size_t i = 0; i < n; i++) {
      any1 |= gdn_f32_bits(p1[i]) & 0x7fffffffu;
      any2 |= gdn_f32_bits(p2[i]) & 0x7fffffffu;
    }
    s->nz |= (any1 ? 2u : 0u) | (any2 ? 4u : 0u);
    break;
  }
  default: break;
  }
#else
  (void)mode;
  (void)n;
#endif
}

unsigned KR(kern_split_fill_cols)(KSPLIT *s, kern_matmul mode, const kreal *x, int64_t rows,
                                  int64_t ld, int64_t c0, int64_t c1) {
  s->x = x;
  unsigned nz = 1u;
#if KERN_REAL == 32
  uint32_t any1 = 0, any2 = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *restrict xr = x + r * ld;
    /* (a part the mode does not have is NULL: no offset applied to it) */
    float *restrict p0 = s->part[0] ? s->part[0] + r * ld : NULL;
    float *restrict p1 = s->part[1] ? s->part[1] + r * ld : NULL;
    float *restrict p2 = s->part[2] ? s->part[2] + r * ld : NULL;
    switch (mode) {
    case KERN_MATMUL_DEFAULT:
      KSIMD for (int64_t i = c0; i < c1; i++) p0[i] = bf16_rn(xr[i]);
      break;
    case KERN_MATMUL_HIGH:
      KSIMD for (int64_t i = c0; i < c1; i++) {
        float h = bf16_trunc(xr[i]), l = bf16_rn(xr[i] - h);
        p0[i] = h;
        p1[i] = l;
      }
      for (int64_t i = c0; i < c1; i++) any1 |= gdn_f32_bits(p1[i]) & 0x7fffffffu;
      break;
    case KERN_MATMUL_HIGHEST:
      KSIMD for (int64_t i = c0; i < c1; i++) {
        float h = bf16_trunc(xr[i]), rr = xr[i] - h, m = bf16_trunc(rr), l = bf16_rn(rr - m);
        p0[i] = h;
        p1[i] = m;
        p2[i] = l;
      }
      for (int64_t i = c0; i < c1; i++) {
        any1 |= gdn_f32_bits(p1[i]) & 0x7fffffffu;
        any2 |= gdn_f32_bits(p2[i]) & 0x7fffffffu;
      }
      break;
    default: return nz;
    }
  }
  nz |= (any1 ? 2u : 0u) | (any2 ? 4u : 0u);
#else
  (void)mode;
  (void)rows;
  (void)ld;
  (void)c0;
  (void)c1;
#endif
  return nz;
}

#if KERN_REAL == 32
/* XLA's ReplaceNaNWithZeros: select(inf >= |c|, c, 0). */
static void KR(mm_nan0)(int64_t m, int64_t n, kreal *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++) {
    kreal *ci = c + i * ldc;
    KSIMD for (int64_t j = 0; j < n; j++) ci[j] = ci[j] == ci[j] ? ci[j] : 0.0f;
  }
}
#endif

void KR(kern_mm)(kern_matmul mode, int64_t m, int64_t n, int64_t k, const KSPLIT *a, int64_t a_rs,
                 int64_t a_cs, const KSPLIT *b, int64_t b_rs, int64_t b_cs, kreal *c,
                 int64_t ldc, kreal *ws) {
#if KERN_REAL == 32
  /* the low passes of each mode in XLA's summation order: (A part, B part) */
  static const int8_t low3[2][2] = {{1, 0}, {0, 1}};                         /* lh, hl */
  static const int8_t low6[5][2] = {{1, 1}, {0, 2}, {2, 0}, {0, 1}, {1, 0}}; /* mm hl lh hm mh */
  const int8_t(*low)[2] = NULL;
  int nlow = 0;
  switch (mode) {
  case KERN_MATMUL_DEFAULT:
    kern_gemm_f32(KERN_GEMM_SET, m, n, k, a->part[0], a_rs, a_cs, b->part[0], b_rs, b_cs, c, ldc,
                  ws);
    return;
  case KERN_MATMUL_HIGH:
    low = low3;
    nlow = 2;
    break;
  case KERN_MATMUL_HIGHEST:
    low = low6;
    nlow = 5;
    break;
  default:
    kern_gemm_f32(KERN_GEMM_SET, m, n, k, a->x, a_rs, a_cs, b->x, b_rs, b_cs, c, ldc, ws);
    return;
  }
  int any = 0;
  for (int p = 0; p < nlow; p++) {
    const int ia = low[p][0], ib = low[p][1];
    if (!((a->nz >> ia) & 1u) || !((b->nz >> ib) & 1u)) continue; /* a zero part: kern_mm.h */
    kern_gemm_f32(any ? KERN_GEMM_PLUS : KERN_GEMM_SET, m, n, k, a->part[ia], a_rs, a_cs,
                  b->part[ib], b_rs, b_cs, c, ldc, ws);
    any = 1;
  }
  if (any) KR(mm_nan0)(m, n, c, ldc);
  kern_gemm_f32(any ? KERN_GEMM_PLUS : KERN_GEMM_SET, m, n, k, a->part[0], a_rs, a_cs, b->part[0],
                b_rs, b_cs, c, ldc, ws);
#else
  (void)mode;
  kern_gemm_f64(KERN_GEMM_SET, m, n, k, a->x, a_rs, a_cs, b->x, b_rs, b_cs, c, ldc, ws);
#endif
}

void KR(kern_mm_plus)(kern_matmul mode, int64_t m, int64_t n, int64_t k, const KSPLIT *a,
                      int64_t a_rs, int64_t a_cs, const KSPLIT *b, int64_t b_rs, int64_t b_cs,
                      kreal *c, int64_t ldc, kreal *tmp, int64_t ldt, kreal *ws) {
#if KERN_REAL == 32
  if (mode != KERN_MATMUL_IEEE) {
    KR(kern_mm)(mode, m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, tmp, ldt, ws);
    for (int64_t i = 0; i < m; i++) {
      kreal *ci = c + i * ldc;
      const kreal *ti = tmp + i * ldt;
      KSIMD for (int64_t j = 0; j < n; j++) ci[j] = ci[j] + ti[j];
    }
    return;
  }
#else
  (void)mode;
  (void)tmp;
  (void)ldt;
#endif
  KR(kern_gemm)(KERN_GEMM_PLUS, m, n, k, a->x, a_rs, a_cs, b->x, b_rs, b_cs, c, ldc, ws);
}
