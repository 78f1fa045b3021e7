/* parity_recur_mode_band (parity_recur_mode_band.h). */
#include "parity_recur_mode_band.h"

#include <math.h>

double parity_recur_mode_band(gdn_dtype dtype, kern_matmul mm, double band_f32) {
  if (dtype == GDN_DTYPE_F64) return 1e-13;
  if (dtype == GDN_DTYPE_BF16 || mm == KERN_MATMUL_DEFAULT) return fmax(0x1p-6, band_f32);
  if (mm == KERN_MATMUL_HIGH) return fmax(0x1p-13, band_f32);
  return band_f32;
}
