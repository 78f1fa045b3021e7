/* parity_recur_mode_band (parity_recur_mode_band.h). */
#include "parity_recur_mode_band.h"

#include <math.h>

double parity_recur_mode_band(gdn_dtype dtype, kern_matmul mm, double band_f32) {
  if (dtype == GDN_DTYPE_F64) return 1e-13;
  if (dtype == GDN_DTYPE_BF16 || mm == KERN_MATMUL_DEFAULT) return fmax(0x1p-6, band_f32);
  if (mm == KERN_MATMUL_HIGH) return fmax(0x1p-13, band_f32);
  return band_f32;
}

double parity_recur_mode_band_grad(gdn_dtype dtype, kern_matmul mm, double band_f32) {
  if (dtype == GDN_DTYPE_F64) return 1e-13;
  if (dtype == GDN_DTYPE_BF16 || mm == KERN_MATMUL_DEFAULT) return fmax(0x1p-5, band_f32);
  if (mm == KERN_MATMUL_HIGH) return fmax(0x1p-13, band_f32);
  return band_f32;
}

const char *parity_recur_mode_band_reason(gdn_dtype dtype, kern_matmul mm, int grad) {
  if (dtype == GDN_DTYPE_F64)
    return "float64 compute: 1e-13, GDN's float64 band (the same algorithms in binary64 measure 1e-16 to 2e-15)";
  if (dtype == GDN_DTYPE_BF16)
    return grad ? "bfloat16 compute: the forward's rounding points (q, k, v, beta and the scale in bfloat16) and "
                  "their cotangents rounded to bfloat16 at the casts' transposes; u = 2^-8, limit 8u = 2^-5 (the "
                  "backward twice the forward's depth, as GDN's grad-band-bfloat16), or the float32 band if larger"
                : "bfloat16 compute: q, k, v, beta and the scale rounded to bfloat16; u = 2^-8, limit 4u = 2^-6 "
                  "(GDN's band-bfloat16), or the float32 band if larger";
  if (mm == KERN_MATMUL_DEFAULT)
    return grad ? "float32 with 1-pass bf16 matmuls (default): every operand of every product of the backward "
                  "rounded to bfloat16; limit 2^-5 (GDN's grad-band-float32-default), or the float32 band if larger"
                : "float32 with 1-pass bf16 matmuls (default): every operand of every product rounded to "
                  "bfloat16; limit 2^-6 (GDN's band-float32-default), or the float32 band if larger";
  if (mm == KERN_MATMUL_HIGH)
    return grad ? "float32 with 3-pass bf16 matmuls (high): each product of the backward keeps about 16 bits; "
                  "limit 2^-13 (GDN's grad-band-float32-high), or the float32 band if larger"
                : "float32 with 3-pass bf16 matmuls (high): each product keeps about 16 bits; limit 2^-13 "
                  "(GDN's band-float32-high), or the float32 band if larger";
  return NULL;
}
