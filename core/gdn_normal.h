/* gdn_normal: the synthetic normals of gdn_rng_normal_k, many at a time,
 * bit for bit the same values, without a C-library call per element.
 *
 * gdn_rng_normal_k computes z = sqrt(-2 log u1) * cos(2 pi u2) in binary64
 * with glibc's log and cos, and every tensor stores rnd(sd * z) (float32,
 * then bfloat16 for a bfloat16 tensor).  Here log and cos are polynomials
 * (below) that vectorise; the rest (the uniforms, -2 L, sqrt, the products,
 * the roundings) is the same operations in the same order.  The fast value
 * x_f = sd * z_f differs from the C library's x_g by at most
 *   |x_f - x_g| <= 2^-45 |x_f| + 2^-44                      (derivation below)
 * so when every real number within E = 2^-40 |x_f| + 2^-40 of x_f rounds to
 * the same float32 -- float(x_f - E) == float(x_f + E), rounding being
 * monotonic -- that float32 is float(x_g) and is stored.  Otherwise (near a
 * float32 rounding boundary, or |x_f| small enough that float32's spacing
 * nears E: about 2 in 10^4 of the draws, nearly all |x_f| < 2^-10) the
 * element is drawn again with gdn_rng_normal_k itself.  So the
 * stored bits are exactly gdn_rng_normal_k's on every machine, and depend on
 * the C library exactly as before (only where its result decides a float32
 * rounding, which is where the fallback calls it).
 *
 * Derivation.  L_f = gdn_normal_log(u1): relative error under 2^-50 (the
 * series' remainder under 2^-55, its roundings about 3 * 2^-53, the
 * reassembly e ln2 + log m at most doubling it for e = -1);
 * glibc's log within 1 ULP (2^-52 relative; 2 ULP assumed).  -2 L is exact
 * and sqrt halves a relative error and adds 2^-53: R_f and R_g are within
 * 2^-50 of r = sqrt(-2 ln u1) <= sqrt(2 * 54 ln 2) < 9, relatively.
 * C_f = gdn_normal_cos(x) of the same binary64 x = 2 pi u2 (the product is
 * the same operation on both sides): absolute error under 2^-49 (the
 * Cody-Waite reduction by multiples of pi/2 about 2^-53, the Taylor
 * remainders under 2^-58, Horner's roundings a few 2^-53); glibc's cos
 * within 1 ULP (2^-53 absolute).  Then
 *   |R_f C_f - R_g C_g| <= |R_f - R_g| |C_f| + R_g |C_f - C_g|
 *                       <= 2^-49 |R_f C_f| (1 + 2^-48) + 9 (2^-49 + 2^-53),
 * and the two roundings of z and of sd z (sd <= 1) add 2^-52 |x| each:
 * |x_f - x_g| <= 2^-45 |x_f| + 2^-44 with room.  E is 16 times that or
 * more, so the roundings of x_f -+ E themselves (2^-53 |x_f|) cannot break
 * the bracket.
 * tests/core/test_normal.c checks the two functions against glibc's on
 * every binade of u1 and on the whole circle, and the fill against
 * gdn_rng_normal_k element for element.
 *
 * Only +, -, *, / and sqrt (IEEE, correctly rounded) and conversions: the
 * build's -ffp-contract=off keeps every product and sum rounded once as
 * written, so the fast values themselves are machine-independent too. */
#ifndef GDN_NORMAL_H
#define GDN_NORMAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* log(u) for a normal, positive, finite binary64 u (the uniforms are in
 * [2^-54, 1)): u = 2^e m with m in [sqrt(1/2), sqrt(2)), log m =
 * 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series through
 * s^19 (remainder < s^21 / 21 / (1 - s^2), under 2^-55 of log m);
 * e ln 2 split as fdlibm splits it (ln2_hi times |e| < 2^11 is exact). */
static inline double gdn_normal_log(double u) {
  uint64_t b;
  memcpy(&b, &u, sizeof b);
  int64_t e = (int64_t)(b >> 52) - 1023;
  b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
  double m;
  memcpy(&m, &b, sizeof m);
  const int big = m > 1.4142135623730951;
  m = big ? 0.5 * m : m; /* exact */
  e = big ? e + 1 : e;
  const double s = (m - 1.0) / (m + 1.0), w = s * s; /* m - 1 exact (Sterbenz) */
  double p = 1.0 / 19;
  p = 1.0 / 17 + w * p;
  p = 1.0 / 15 + w * p;
  p = 1.0 / 13 + w * p;
  p = 1.0 / 11 + w * p;
  p = 1.0 / 9 + w * p;
  p = 1.0 / 7 + w * p;
  p = 1.0 / 5 + w * p;
  p = 1.0 / 3 + w * p;
  const double lm = 2.0 * s + 2.0 * s * (w * p);
  const double ed = (double)e;
  return ed * 6.93147180369123816490e-01 + (ed * 1.90821492927058770002e-10 + lm);
}

/* cos(x) for 0 <= x < 7: x = k pi/2 + r, k = round(2 x / pi) in 0..4, r by
 * Cody-Waite with fdlibm's 33-bit pi/2 parts (k pio2_1 exact), |r| <=
 * pi/4 + 2^-40; cos r and sin r by their Taylor series through r^16 and
 * r^17 (remainders under 2^-58); the quadrant picks +-cos r or +-sin r. */
static inline double gdn_normal_cos(double x) {
  const double kd = (double)(int)(x * 0.63661977236758134308 + 0.5);
  const int k = (int)kd;
  const double r = (x - kd * 1.57079632673412561417e+00) - kd * 6.07710050650619224932e-11;
  const double w = r * r;
  double c = 1.0 / 20922789888000.0;   /* 1/16! */
  c = -1.0 / 87178291200.0 + w * c;    /* 1/14! */
  c = 1.0 / 479001600.0 + w * c;       /* 1/12! */
  c = -1.0 / 3628800.0 + w * c;        /* 1/10! */
  c = 1.0 / 40320.0 + w * c;           /* 1/8! */
  c = -1.0 / 720.0 + w * c;
  c = 1.0 / 24.0 + w * c;
  c = -0.5 + w * c;
  c = 1.0 + w * c;
  double s = 1.0 / 355687428096000.0;  /* 1/17! */
  s = -1.0 / 1307674368000.0 + w * s;  /* 1/15! */
  s = 1.0 / 6227020800.0 + w * s;      /* 1/13! */
  s = -1.0 / 39916800.0 + w * s;       /* 1/11! */
  s = 1.0 / 362880.0 + w * s;          /* 1/9! */
  s = -1.0 / 5040.0 + w * s;
  s = 1.0 / 120.0 + w * s;
  s = -1.0 / 6.0 + w * s;
  s = r + r * (w * s);
  const int q = k & 3;
  const double v = (q & 1) ? s : c;
  return (q == 1 || q == 2) ? -v : v;
}

/* Whether every real within 2^-40 |x| + 2^-40 of x rounds to the same
 * float32 (that float32 then being (float)x): the fill's certainty test. */
static inline int gdn_normal_sure(double x) {
  const double room = 0x1p-40 * (x < 0 ? -x : x) + 0x1p-40;
  return (float)(x - room) == (float)(x + room);
}

/* dst[i] = rnd(sd * gdn_rng_normal_k(key, first + i)) for i < n, bit for
 * bit (rnd: float32, then bfloat16 when bf16), 0 < sd <= 1.  n <=
 * GDN_NORMAL_BATCH.  Returns how many elements took the C library's path. */
#define GDN_NORMAL_BATCH 256
size_t gdn_normal_fill(float *dst, size_t n, uint64_t key, uint64_t first, double sd, int bf16);

#endif
