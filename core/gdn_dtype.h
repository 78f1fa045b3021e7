/* gdn_dtype: the floating-point formats the toolkit reasons about, their unit
 * roundoff, and distances in units in the last place (ULP).
 *
 * ULP convention (MPFR's): for a format with p significand bits and minimum
 * normal exponent emin, ulp(x) = 2^(max(floor(log2|x|), emin) - p + 1), and
 * ulp(0) = 2^(emin - p + 1), the smallest subnormal.  The distance of a
 * computed value x from a reference r is |x - r| / ulp(r), with r the exact
 * (high-precision) reference, so a correctly rounded x is at most 0.5 ULP away.
 */
#ifndef GDN_DTYPE_H
#define GDN_DTYPE_H

#include "gdn_error.h"
#include "gdn_ulp.h"

typedef enum gdn_dtype {
  GDN_DTYPE_F32 = 0,
  GDN_DTYPE_BF16 = 1,
  GDN_DTYPE_F64 = 2,
} gdn_dtype;

const char *gdn_dtype_name(gdn_dtype t); /* "float32", "bfloat16", "float64" */
/* Accepts float32|bfloat16|float64 (and f32, bf16, f64). */
int gdn_dtype_parse(const char *s, gdn_dtype *out, const char *what, gdn_error *e);

int gdn_dtype_precision(gdn_dtype t);       /* significand bits p: 24, 8, 53 */
int gdn_dtype_emin(gdn_dtype t);            /* -126, -126, -1022 */
double gdn_dtype_unit_roundoff(gdn_dtype t); /* u = 2^-p: 2^-24, 2^-8, 2^-53 */

double gdn_dtype_ulp(gdn_dtype t, double r);
/* t's (p, emin) for the inline gdn_ulp_distance (gdn_ulp.h). */
gdn_ulp_fmt gdn_dtype_ulp_fmt(gdn_dtype t);
/* |x - r| / ulp(r); +inf when x is not finite and r is, 0 when both are equal
 * (including equal infinities), NaN-safe: NaN anywhere gives +inf.  It wraps
 * the inline gdn_ulp_distance(gdn_dtype_ulp_fmt(t), x, r) (gdn_ulp.h). */
double gdn_dtype_ulp_distance(gdn_dtype t, double x, double r);

#endif
