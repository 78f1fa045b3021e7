/* oracle_exp: exp of a binary32 number correctly rounded to an MPFR
 * precision p <= 128 -- the same value mpfr_exp gives (both are the one
 * correctly rounded result, round to nearest), about 4x faster than
 * mpfr_exp at 128 bits for the per-channel decays exp(g_ti) of KDA's
 * oracles (Dk of them per token).
 *
 * Method (Ziv's): for |g| <= 64, g = k 2^-25 + r with k = RN(g 2^25) and r
 * exact (|r| <= 2^-26; r = 0 whenever |g| >= 2^-2, a binary32 number there
 * being a multiple of 2^-25).  exp(k 2^-25) is the product of five table
 * entries at W = 192 bits (exp(q 2^-5), q in [-2048, 2048], and exp(d
 * 2^-(10 + 5 l)), d < 32, l = 0..3; each correctly rounded, built once);
 * exp(r) = 1 + r + t, t = r^2 (1/2 + r/6 + r^2/24 + r^3/120 + r^4/720) in
 * double-word arithmetic (oracle_dd_arith.h), |error| < 2^-150; the sum P
 * (1 + r + t) in MPFR at W.  Relative error of the approximation: < 2^-186
 * with r = 0 (nine roundings at 2^-192), < 2^-149 otherwise; it is rounded
 * to p bits when mpfr_can_round says the error (taken as 2^-183, 2^-144)
 * cannot change the rounding, else mpfr_exp runs (about one call in 2^15 at
 * p = 128).  |g| > 64, g = 0, a non-finite g and p > 128 go to mpfr_exp
 * directly.  Thread-safe (the table is built under pthread_once and only
 * read after); no allocation per call. */
#ifndef ORACLE_EXP_H
#define ORACLE_EXP_H

#include <mpfr.h>

/* a = RN_p(exp(g)), p = the precision of a. */
void orc_exp_flt(mpfr_ptr a, float g);

#endif
