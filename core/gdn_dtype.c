#include "gdn_dtype.h"

#include <math.h>
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

double gdn_dtype_ulp(gdn_dtype t, double r) {
  int p = gdn_dtype_precision(t), emin = gdn_dtype_emin(t);
  if (!isfinite(r)) return INFINITY;
  int e;
  if (r == 0.0) {
    e = emin;
  } else {
    int ex;
    frexp(r, &ex); /* |r| = m 2^ex, m in [0.5, 1): floor(log2|r|) = ex - 1 */
    e = ex - 1 < emin ? emin : ex - 1;
  }
  return ldexp(1.0, e - p + 1);
}

double gdn_dtype_ulp_distance(gdn_dtype t, double x, double r) {
  if (isnan(x) || isnan(r)) return INFINITY;
  if (x == r) return 0.0;
  if (!isfinite(x) || !isfinite(r)) return INFINITY;
  return fabs(x - r) / gdn_dtype_ulp(t, r);
}
