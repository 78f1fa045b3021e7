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

static gdn_ulp_fmt fmt_of(gdn_dtype t) {
  return (gdn_ulp_fmt){gdn_dtype_precision(t), gdn_dtype_emin(t)};
}

gdn_ulp_fmt gdn_dtype_ulp_fmt(gdn_dtype t) { return fmt_of(t); }

double gdn_dtype_ulp(gdn_dtype t, double r) {
  if (!isfinite(r)) return INFINITY;
  int k = gdn_ulp_exp(fmt_of(t), r);
  return k < -1022 ? ldexp(1.0, k) : gdn_ulp_pow2_normal(k); /* binary64 subnormal ulp: ldexp */
}

/* The inline form's wrapper (gdn_ulp.h), for callers outside hot loops. */
double gdn_dtype_ulp_distance(gdn_dtype t, double x, double r) { return gdn_ulp_distance(fmt_of(t), x, r); }
