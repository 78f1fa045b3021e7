#include "kern_gemm.h"

#include <math.h>

int kern_gemm_supported(kern_matmul mode, gdn_dtype dtype, gdn_error *e) {
  if (dtype == GDN_DTYPE_F64 || mode == KERN_MATMUL_IEEE) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--matmul-precision %s: the bfloat16 multi-pass matmul modes are not "
                       "supported yet by the %s kernels (only ieee)",
                       kern_matmul_name(mode), gdn_dtype_name(dtype));
}

#define KERN_REAL 32
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
