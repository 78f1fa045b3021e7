/* oracle_dd_arith: double-word ("double-double") arithmetic for the dd tier.
 *
 * A double-word number is a pair (hi, lo) of binary64 numbers with
 * hi = RN(hi + lo) (so |lo| <= ulp(hi) / 2); its value is the exact sum
 * hi + lo, a number of at least 106 significant bits.  Every function below
 * is a fixed sequence of correctly rounded binary64 operations (+, -, *,
 * and fma() -- the build has -ffp-contract=off, so nothing else is fused),
 * hence gives the same bits scalar or vectorised, with or without hardware
 * FMA (glibc's fma is correctly rounded either way).
 *
 * u = 2^-53 is binary64's unit roundoff.  Bounds are relative errors of the
 * returned pair's value against the exact result, valid in the absence of
 * overflow and underflow (see "Range" below):
 *
 *   orc_dd_fast_two_sum(a, b)  Fast2Sum, Dekker 1971: s + t == a + b
 *                              exactly, s = RN(a + b), when a == 0 or
 *                              exponent(a) >= exponent(b) (|a| >= |b|
 *                              suffices).  3 flops.
 *   orc_dd_two_sum(a, b)       2Sum, Knuth (TAOCP 2, 4.2.2) / Moller 1965:
 *                              s + t == a + b exactly, s = RN(a + b), for
 *                              any a, b.  6 flops.
 *   orc_dd_two_prod(a, b)      Fast2Mult with an FMA: p = RN(ab),
 *                              t = RN(ab - p) == ab - p exactly, provided
 *                              e_a + e_b >= -1022 + 52 (the error term is
 *                              representable).  2 flops.
 *   orc_dd_add_d(x, y)         DWPlusFP, Joldes-Muller-Popescu 2017
 *                              (ACM TOMS 44(2), "Tight and rigorous error
 *                              bounds for basic building blocks of
 *                              double-word arithmetic", Algorithm 4):
 *                              error <= 2u^2.  10 flops.
 *   orc_dd_add(x, y)           AccurateDWPlusDW (ibid., Algorithm 6):
 *                              error <= 3u^2 / (1 - 4u) (the proof
 *                              completed and formalised by Muller and
 *                              Rideau, ACM TOMS 48(1) 2022).  20 flops.
 *                              (The "sloppy" Algorithm 5 has no relative
 *                              bound for operands of opposite signs and is
 *                              not used: our sums cancel.)
 *   orc_dd_mul_d(x, y)         DWTimesFP3 (ibid., Algorithm 9, with FMA):
 *                              error <= 2u^2.  6 flops.
 *   orc_dd_mul(x, y)           DWTimesDW3 (ibid., Algorithm 12, with
 *                              FMA): error <= (4u^2 + u^3/2) / (1 + u)^2
 *                              < 4u^2 (Muller-Rideau 2022, Theorem 2.8;
 *                              5u^2 in the 2017 paper).  9 flops.
 *
 * Every result is again a double-word number (each ends in Fast2Sum or
 * 2Sum).  Results with a zero operand are exact (zero, or the other
 * operand); negation is exact (both words negated).
 *
 * Range: the bounds assume no overflow and no underflow.  Underflow costs
 * accuracy, not correctness: below about 2^-969 two_prod's error term is
 * no longer exact, and lo parts below 2^-1022 are subnormal, so results of
 * that size carry an absolute error of order 2^-1074 instead of a relative
 * 2^-104.  Overflow gives infinities or NaNs, which the dd tier detects
 * and refuses (oracle.h).
 */
#ifndef ORACLE_DD_ARITH_H
#define ORACLE_DD_ARITH_H

#include <math.h>

typedef struct orc_dd {
  double hi, lo;
} orc_dd;

static inline orc_dd orc_dd_fast_two_sum(double a, double b) {
  double s = a + b;
  double z = s - a;
  return (orc_dd){s, b - z};
}

static inline orc_dd orc_dd_two_sum(double a, double b) {
  double s = a + b;
  double ap = s - b;
  double bp = s - ap;
  double da = a - ap;
  double db = b - bp;
  return (orc_dd){s, da + db};
}

static inline orc_dd orc_dd_two_prod(double a, double b) {
  double p = a * b;
  return (orc_dd){p, fma(a, b, -p)};
}

/* x + y, y a binary64 number (Algorithm 4). */
static inline orc_dd orc_dd_add_d(orc_dd x, double y) {
  orc_dd s = orc_dd_two_sum(x.hi, y);
  double v = x.lo + s.lo;
  return orc_dd_fast_two_sum(s.hi, v);
}

/* x + y (Algorithm 6). */
static inline orc_dd orc_dd_add(orc_dd x, orc_dd y) {
  orc_dd s = orc_dd_two_sum(x.hi, y.hi);
  orc_dd t = orc_dd_two_sum(x.lo, y.lo);
  double c = s.lo + t.hi;
  orc_dd v = orc_dd_fast_two_sum(s.hi, c);
  double w = t.lo + v.lo;
  return orc_dd_fast_two_sum(v.hi, w);
}

/* x * y, y a binary64 number (Algorithm 9). */
static inline orc_dd orc_dd_mul_d(orc_dd x, double y) {
  orc_dd c = orc_dd_two_prod(x.hi, y);
  double cl3 = fma(x.lo, y, c.lo);
  return orc_dd_fast_two_sum(c.hi, cl3);
}

/* x * y (Algorithm 12). */
static inline orc_dd orc_dd_mul(orc_dd x, orc_dd y) {
  orc_dd c = orc_dd_two_prod(x.hi, y.hi);
  double tl0 = x.lo * y.lo;
  double tl1 = fma(x.hi, y.lo, tl0);
  double cl2 = fma(x.lo, y.hi, tl1);
  double cl3 = c.lo + cl2;
  return orc_dd_fast_two_sum(c.hi, cl3);
}

static inline orc_dd orc_dd_neg(orc_dd x) { return (orc_dd){-x.hi, -x.lo}; }

#endif
