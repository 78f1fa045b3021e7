/* kern_scan_vjp and kern_affine_prefix_vjp: checks, modes, the two
 * instantiations (kern_vjp.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_num.h"
#include "kern_size.h"
#include "kern_vjp.h"

void kern_vjp_shard(int64_t n_chunks, int64_t devices, int64_t r, int64_t *first, int64_t *n) {
  kern_affine_shard(n_chunks, devices, r, first, n);
}

#define KERN_REAL 32
#include "kern_vjp_drv_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_vjp_drv_tmpl.h"
#undef KERN_REAL

/* The modes the backward implements (kern_vjp.h), as a table. */
static int check_modes(const kern_config *cfg, int affine, const char *who, gdn_error *e) {
  if (cfg->dtype == GDN_DTYPE_BF16)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: compute dtype bfloat16 is not implemented for gradients (float32, float64)",
                         who);
  if (cfg->dtype == GDN_DTYPE_F32 && cfg->matmul != KERN_MATMUL_IEEE)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: matmul precision '%s' is not implemented for gradients (ieee only)", who,
                         kern_matmul_name(cfg->matmul));
  if (affine && cfg->devices > 1 && cfg->prefix != KERN_PREFIX_SEQUENTIAL)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: prefix '%s' is not implemented for gradients (sequential only)", who,
                         kern_prefix_name(cfg->prefix));
  if (cfg->broken_compose)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: broken_compose has no backward", who);
  return GDN_OK;
}

static int run(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
               gdn_grads *out, int affine, gdn_error *e) {
  const char *who = affine ? "kern_affine_prefix_vjp" : "kern_scan_vjp";
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "%s: gradients missing (NULL)", who);
  gdn_grads_clear(out);
  kern_num num;
  int rc = kern_num_setup(&num, in, cfg, who, 1, e);
  if (!rc) rc = check_modes(cfg, affine, who, e);
  if (!rc) rc = gdn_cotangents_check(ct, &in->shape, who, e);
  if (!rc && (rc = gdn_grads_alloc(out, &in->shape, num.dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, e)))
    gdn_error_prefix(e, "%s: ", who);
  const int64_t D = affine ? cfg->devices : 1;
  if (!rc) {
    rc = num.dtype == GDN_DTYPE_F64 ? vj_run_f64(in, ct, cfg, &num, D, out, e)
                                    : vj_run_f32(in, ct, cfg, &num, D, out, e);
    if (rc) gdn_error_prefix(e, "%s: ", who);
  }
  if (rc) gdn_grads_clear(out);
  return rc;
}

int kern_scan_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                  gdn_grads *out, gdn_error *e) {
  return run(in, ct, cfg, out, 0, e);
}

int kern_affine_prefix_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                           gdn_grads *out, gdn_error *e) {
  return run(in, ct, cfg, out, 1, e);
}
