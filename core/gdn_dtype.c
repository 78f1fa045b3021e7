#include "gdn_dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

const char *gdn_dtype_name(gdn_dtype t) {
  switch (t) {
  case GDN_DTYPE_F32: return "float32";
  case GDN_DTYPE_BF16: return "bfloat16";
  case GDN_DTYPE_F64: return "float64";
  }
  return "?";
}

int gdn_dtype_parse(const char *s, gdn_dtype *out, const char *what, gdn_error *e) {
  if (!what) what = "--dtype";
  if (s && (!strcmp(s, "float32") || !strcmp(s, "f32"))) *out = GDN_DTYPE_F32;
  else if (s && (!strcmp(s, "bfloat16") || !strcmp(s, "bf16"))) *out = GDN_DTYPE_BF16;
  else if (s && (!strcmp(s, "float64") || !strcmp(s, "f64"))) *out = GDN_DTYPE_F64;
  else
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s '%s': unknown dtype; expected float32, bfloat16 or float64", what,
                         s ? s : "");
  return GDN_OK;
}

int gdn_dtype_precision(gdn_dtype t) {
  return t == GDN_DTYPE_F64 ? 53 : t == GDN_DTYPE_BF16 ? 8 : 24;
}

int gdn_dtype_emin(gdn_dtype t) { return t == GDN_DTYPE_F64 ? -1022 : -126; }

double gdn_dtype_unit_roundoff(gdn_dtype t) { return ldexp(1.0, -gdn_dtype_precision(t)); }

/* k with ulp(r) = 2^k for finite r: floor(log2|r|) read from the binary64
 * exponent field (the metrics call this for every element; frexp and ldexp
 * cost a call each).  A zero or a subnormal double has a biased exponent of
 * 0 and lies below every dtype's emin, so it takes emin, as frexp would
 * have given it. */
static int ulp_exp(gdn_dtype t, double r) {
  int p = gdn_dtype_precision(t), emin = gdn_dtype_emin(t);
  uint64_t b;
  memcpy(&b, &r, sizeof b);
  int be = (int)((b >> 52) & 0x7ff);
  int e = be == 0 ? emin : be - 1023;
  return (e < emin ? emin : e) - p + 1;
}

/* 2^k for -1022 <= k <= 1023, exactly. */
static double pow2_normal(int k) {
  uint64_t u = (uint64_t)(k + 1023) << 52;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

double gdn_dtype_ulp(gdn_dtype t, double r) {
  if (!isfinite(r)) return INFINITY;
  int k = ulp_exp(t, r);
  return k < -1022 ? ldexp(1.0, k) : pow2_normal(k); /* binary64 subnormal ulp: ldexp */
}

double gdn_dtype_ulp_distance(gdn_dtype t, double x, double r) {
  if (isnan(x) || isnan(r)) return INFINITY;
  if (x == r) return 0.0;
  if (!isfinite(x) || !isfinite(r)) return INFINITY;
  int k = ulp_exp(t, r);
  /* |x - r| / 2^k: multiplying by 2^-k is the same correctly rounded value
   * (the exact quotient and product are equal) when 2^-k is a normal
   * double, i.e. k >= -1022 (k <= 1023 always); else divide. */
  return k >= -1022 ? fabs(x - r) * pow2_normal(-k) : fabs(x - r) / ldexp(1.0, k);
}
