/* kern_expf: expf over an array, vectorisable, giving glibc 2.36's expf
 * bit for bit where glibc runs its FMA variant (__expf_fma, x86-64 with
 * FMA: the machines the kernels are built for, -march=native).
 *
 * Why: the chunked KDA kernel takes one exp per (row pair, channel) inside
 * its diagonal sub-chunk blocks (kern_kda_chunk_tmpl.h), about 1000 per
 * token at Dk = 128; called one at a time through libm they were half of
 * the kernel's time.  Written as plain arithmetic over an array, gcc
 * vectorises the loop and the kernel keeps its bits.
 *
 * The method is glibc's (from Arm's optimized-routines; the numbers below
 * are its published table and polynomial, 2^(i/32) for i < 32 with the
 * exponent bits of i/32 taken out): in binary64,
 *   z  = x * 32/ln2,  k = z rounded to an integer (the 1.5 * 2^52 shift:
 *        kd = fma(32/ln2, x, shift) - shift, k the low bits of the sum)
 *   r  = fma(32/ln2, x, -kd)                  (exact-ish reduction, |r| <= 1/2)
 *   s  = 2^(k/32) from the table and k's high bits in the exponent
 *   y  = fma(fma(c0, r, c1), r^2, fma(c2, r, 1)) * s,  rounded once to float
 * every fma where __expf_fma has one (checked from its disassembly), every
 * other operation one rounding, -ffp-contract=off.  With AVX-512 (F and
 * VL) the array runs 8 lanes at a time in one 512-bit register (the same
 * binary64 operations, the table read by permutes instead of a gather),
 * then 4, then the scalar tail: the same bits whichever lane width; the 8
 * lanes answer the arguments below the underflow threshold (+0, as the
 * second pass would) in the vector, the fast decays' common case.  The fast path covers
 * -0x1.9d1d9ep6 <= x <= 0x1.62e42ep6 (about -103.28 .. 88.72), where glibc
 * takes the same path; every other x (NaN, +-inf, overflow, the underflow
 * band) is given to expf itself in a second scalar pass, so special values
 * and errno behave as libm's.  tests/kernels/test_kern_expf.c compares it
 * with expf on this machine (2^24 inputs spread over the fast range, and
 * the edges); an exhaustive comparison over all 2^32 floats was run once
 * when it was written (0 differences, glibc 2.36, Xeon with AVX-512). */
#ifndef KERN_EXPF_H
#define KERN_EXPF_H

#include <math.h>
#if (defined(__AVX2__) && defined(__FMA__)) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <stdint.h>

static const uint64_t kern_expf_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};



#if defined(__AVX2__) && defined(__FMA__)
/* The fast path on 4 lanes (any float gives a finite answer; outside the
 * fast range the lane is replaced by the second pass). */
static inline __m128 kern_expf_fast4(__m128 x) {
  const __m256d invln2n = _mm256_set1_pd(0x1.71547652b82fep+5), shift = _mm256_set1_pd(0x1.8p+52);
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d ks = _mm256_fmadd_pd(invln2n, xd, shift);
  const __m256d kd = _mm256_sub_pd(ks, shift);
  const __m256d r = _mm256_fmsub_pd(invln2n, xd, kd);
  const __m256i ki = _mm256_castpd_si256(ks);
  const __m256i tab = _mm256_i64gather_epi64((const long long *)kern_expf_tab, _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(tab, _mm256_slli_epi64(ki, 47)));
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(0x1.c6af84b912394p-20), _mm256_set1_pd(0x1.ebfce50fac4f3p-13));
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d y1 = _mm256_fmadd_pd(r, _mm256_set1_pd(0x1.62e42ff0c52d6p-6), _mm256_set1_pd(1.0));
  return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_fmadd_pd(z, r2, y1), s));
}
#endif

#if defined(__AVX512F__) && defined(__AVX512VL__)
/* The fast path on 8 lanes: the same binary64 operations as
 * kern_expf_fast4, in one 512-bit register; the table read by two
 * two-register permutes (entries 0-15, 16-31) and a blend on bit 4 of the
 * index, not a gather. */
static inline __m256 kern_expf_fast8(__m256 x) {
  const __m512d invln2n = _mm512_set1_pd(0x1.71547652b82fep+5), shift = _mm512_set1_pd(0x1.8p+52);
  const __m512d xd = _mm512_cvtps_pd(x);
  const __m512d ks = _mm512_fmadd_pd(invln2n, xd, shift);
  const __m512d kd = _mm512_sub_pd(ks, shift);
  const __m512d r = _mm512_fmsub_pd(invln2n, xd, kd);
  const __m512i ki = _mm512_castpd_si512(ks);
  const __m512i t0 = _mm512_loadu_si512(kern_expf_tab), t1 = _mm512_loadu_si512(kern_expf_tab + 8),
                t2 = _mm512_loadu_si512(kern_expf_tab + 16), t3 = _mm512_loadu_si512(kern_expf_tab + 24);
  const __m512i lo = _mm512_permutex2var_epi64(t0, ki, t1), hi = _mm512_permutex2var_epi64(t2, ki, t3);
  const __mmask8 up = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
  const __m512i tab = _mm512_mask_blend_epi64(up, lo, hi);
  const __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(tab, _mm512_slli_epi64(ki, 47)));
  const __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.c6af84b912394p-20), _mm512_set1_pd(0x1.ebfce50fac4f3p-13));
  const __m512d r2 = _mm512_mul_pd(r, r);
  const __m512d y1 = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.62e42ff0c52d6p-6), _mm512_set1_pd(1.0));
  return _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_fmadd_pd(z, r2, y1), s));
}
#endif

/* The lanes outside the fast range: libm's answer (+0 below its underflow
 * threshold, without the call). */
static inline float kern_expf_slow(float x) { return x < -0x1.9fe368p6f ? 0.0f : expf(x); }

/* y[i] = expf(x[i]) for i < n (y may be x). */
static inline void kern_expf_array(float *y, const float *x, int64_t n) {
  int64_t n4 = 0; /* the lanes the vector loops cover */
#if defined(__AVX512F__) && defined(__AVX512VL__)
  const int64_t n8 = n - n % 8;
  const __m256 lo8 = _mm256_set1_ps(-0x1.9d1d9ep6f), hi8 = _mm256_set1_ps(0x1.62e42ep6f),
               uf8 = _mm256_set1_ps(-0x1.9fe368p6f);
  for (; n4 < n8; n4 += 8) {
    const __m256 xv = _mm256_loadu_ps(x + n4);
    const __mmask8 in = _mm256_cmp_ps_mask(xv, lo8, _CMP_GE_OQ) & _mm256_cmp_ps_mask(xv, hi8, _CMP_LE_OQ);
    const __mmask8 zero = _mm256_cmp_ps_mask(xv, uf8, _CMP_LT_OQ); /* kern_expf_slow's +0 */
    const __m256 yv = _mm256_maskz_mov_ps(in, kern_expf_fast8(_mm256_maskz_mov_ps(in, xv)));
    if ((in | zero) == 0xff) { /* the fast lanes and the +0 ones: no call */
      _mm256_storeu_ps(y + n4, yv);
      continue;
    }
    float xs[8], ys[8];
    _mm256_storeu_ps(xs, xv);
    _mm256_storeu_ps(ys, yv);
    for (int l = 0; l < 8; l++) y[n4 + l] = in >> l & 1 ? ys[l] : kern_expf_slow(xs[l]);
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  const int64_t n4s = n4;
  n4 = n - n % 4;
  const __m128 lo = _mm_set1_ps(-0x1.9d1d9ep6f), hi = _mm_set1_ps(0x1.62e42ep6f);
  for (int64_t i = n4s; i < n4; i += 4) {
    const __m128 xv = _mm_loadu_ps(x + i);
    const __m128 in = _mm_and_ps(_mm_cmp_ps(xv, lo, _CMP_GE_OQ), _mm_cmp_ps(xv, hi, _CMP_LE_OQ));
    const int m = _mm_movemask_ps(in);
    const __m128 yv = kern_expf_fast4(_mm_and_ps(xv, in)); /* outside: exp(0), replaced below */
    if (m == 0xf) {
      _mm_storeu_ps(y + i, yv);
      continue;
    }
    float xs[4], ys[4];
    _mm_storeu_ps(xs, xv);
    _mm_storeu_ps(ys, yv);
    for (int l = 0; l < 4; l++) y[i + l] = m >> l & 1 ? ys[l] : kern_expf_slow(xs[l]);
  }
#endif
  for (int64_t j = n4; j < n; j++) y[j] = kern_expf_slow(x[j]); /* the tail: libm itself */
}

#endif
