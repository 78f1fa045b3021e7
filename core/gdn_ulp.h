/* gdn_ulp: the ULP distance of gdn_dtype.h as a static inline function, for
 * the metrics' per-element loops (an out-of-line call per element cost a
 * tenth of a whole run).  gdn_dtype_ulp_distance is a wrapper of
 * gdn_ulp_distance, so both give the same value for every input, bit for bit.
 *
 * A format is (p, emin) (gdn_ulp_fmt_of): p significand bits, minimum normal
 * exponent emin; ulp(r) = 2^(max(floor(log2|r|), emin) - p + 1) as in
 * gdn_dtype.h.
 */
#ifndef GDN_ULP_H
#define GDN_ULP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct gdn_ulp_fmt {
  int p, emin;
} gdn_ulp_fmt;

/* k with ulp(r) = 2^k for finite r: floor(log2|r|) read from the binary64
 * exponent field.  A zero or a subnormal double has a biased exponent of 0
 * and lies below every format's emin (-126 or -1022), so it takes emin, as
 * frexp would have given it. */
static inline int gdn_ulp_exp(gdn_ulp_fmt f, double r) {
  uint64_t b;
  memcpy(&b, &r, sizeof b);
  int be = (int)((b >> 52) & 0x7ff);
  int e = be == 0 ? f.emin : be - 1023;
  return (e < f.emin ? f.emin : e) - f.p + 1;
}

/* 2^k for -1022 <= k <= 1023, exactly (built from the exponent field). */
static inline double gdn_ulp_pow2_normal(int k) {
  uint64_t u = (uint64_t)(k + 1023) << 52;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

/* |x - r| / ulp(r); +inf when x or r is NaN or exactly one of them is not
 * finite, 0 when x == r (equal infinities included).  Multiplying by 2^-k is
 * the same correctly rounded value as dividing by 2^k (the exact quotient and
 * product are equal) when 2^-k is a normal double, i.e. k >= -1022 (k <= 1023
 * always); below, divide.  Never NaN, never -0. */
static inline double gdn_ulp_distance(gdn_ulp_fmt f, double x, double r) {
  if (isnan(x) || isnan(r)) return INFINITY;
  if (x == r) return 0.0;
  if (!isfinite(x) || !isfinite(r)) return INFINITY;
  int k = gdn_ulp_exp(f, r);
  return k >= -1022 ? fabs(x - r) * gdn_ulp_pow2_normal(-k) : fabs(x - r) / ldexp(1.0, k);
}

#endif
