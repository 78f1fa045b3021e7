/* kern_avx: whether the chunked kernels' template (kern_chunk_tmpl.h) uses
 * AVX.  With AVX it transposes K with vector shuffles and writes o with
 * streaming stores (data movement only: the values are the same), so the
 * scan and the affine prefix, which both instantiate it, must agree on it:
 * one definition here, with the 8 x 8 transpose both use. */
#ifndef KERN_AVX_H
#define KERN_AVX_H

#if defined(__AVX__)
#include <immintrin.h>
#define KERN_AVX 1
#else
#define KERN_AVX 0
#endif

#if KERN_AVX
#include <stdint.h>

/* dst[q * ldd + r] = src[r * lds + q] for r, q < 8: an 8 x 8 block of
 * floats transposed with AVX shuffles (data movement only: every bit is
 * kept).  The chunk template's transpose of K (kern_chunk_tmpl.h) and
 * kern_gemm's pack of a row-major A into its panels are made of these. */
static inline void kern_tr8_f32(const float *restrict src, int64_t lds, float *restrict dst,
                                int64_t ldd) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds),
         r2 = _mm256_loadu_ps(src + 2 * lds), r3 = _mm256_loadu_ps(src + 3 * lds),
         r4 = _mm256_loadu_ps(src + 4 * lds), r5 = _mm256_loadu_ps(src + 5 * lds),
         r6 = _mm256_loadu_ps(src + 6 * lds), r7 = _mm256_loadu_ps(src + 7 * lds);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
         t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
         t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  r0 = _mm256_shuffle_ps(t0, t2, 0x44);
  r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  r2 = _mm256_shuffle_ps(t1, t3, 0x44);
  r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  r4 = _mm256_shuffle_ps(t4, t6, 0x44);
  r5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  r6 = _mm256_shuffle_ps(t5, t7, 0x44);
  r7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(r0, r4, 0x20));
  _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(r1, r5, 0x20));
  _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(r2, r6, 0x20));
  _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(r3, r7, 0x20));
  _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(r0, r4, 0x31));
  _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(r1, r5, 0x31));
  _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(r2, r6, 0x31));
  _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(r3, r7, 0x31));
}
#endif

#endif
