#include "kern_num.h"

#include "kern_gemm.h"

int kern_num_init(kern_num *num, const kern_config *cfg, const char *who, gdn_error *e) {
  num->dtype = cfg->dtype;
  num->matmul = cfg->matmul;
  num->ftz = cfg->ftz;
  num->round_mask = 0;
  if (cfg->dtype != GDN_DTYPE_F32 && cfg->dtype != GDN_DTYPE_F64)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: --dtype %s is not supported yet by the float kernels (float32 and "
                         "float64 are)",
                         who, gdn_dtype_name(cfg->dtype));
  if (cfg->ftz)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: flush-to-zero (ftz) is not supported yet by the float kernels", who);
  int rc = kern_gemm_supported(cfg->matmul, cfg->dtype, e);
  if (rc) {
    gdn_error_prefix(e, "%s: ", who);
    return rc;
  }
  if (cfg->dtype == GDN_DTYPE_F64) num->matmul = KERN_MATMUL_IEEE;
  return GDN_OK;
}

int kern_num_setup(kern_num *num, const gdn_inputs *in, const kern_config *cfg, const char *who,
                   int chunked, gdn_error *e) {
  int rc = gdn_shape_validate(&in->shape, e);
  if (!rc && chunked) rc = kern_config_validate(cfg, &in->shape, e);
  if (rc) {
    gdn_error_prefix(e, "%s: ", who);
    return rc;
  }
  return kern_num_init(num, cfg, who, e);
}
