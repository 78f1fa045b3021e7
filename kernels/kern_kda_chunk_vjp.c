/* kern_kda_chunk_vjp, kern_kda_affine_vjp: the backward of KDA's chunked
 * kernel and affine-prefix (kern_kda_chunk_vjp.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern_expf.h"
#include "kern_gemm.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"
#include "kern_kda_frame.h"
#include "kern_num.h"

/* the forward's chunk steps and the token loop's reverse step, shared by
 * inclusion (their runners unused here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#define KERN_REAL 32
#include "kern_kda_chunk_tmpl.h"
#include "kern_kda_prefix_tmpl.h"
#include "kern_kda_vjp_tmpl.h"
#include "kern_kda_chunk_bwd_tmpl.h"
#include "kern_kda_chunk_vjp_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_kda_chunk_tmpl.h"
#include "kern_kda_prefix_tmpl.h"
#include "kern_kda_vjp_tmpl.h"
#include "kern_kda_chunk_bwd_tmpl.h"
#include "kern_kda_chunk_vjp_tmpl.h"
#undef KERN_REAL
#pragma GCC diagnostic pop

static int chunk_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_config *cfg,
                     kern_kda_vjp_mutant mutant, int affine, int algebra, gdn_grads *out, const char *who,
                     gdn_error *e) {
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "%s: gradients missing (NULL)", who);
  gdn_grads_clear(out);
  if ((int)mutant < 0 || mutant >= KERN_KDA_VJP_MUTANT_COUNT)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: backward mutant %d is not known", who, (int)mutant);
  kern_num num;
  gdn_outputs tmp;
  gdn_outputs_init(&tmp);
  int rc = kern_kda_begin_modes(in, gate, cfg, 1, affine, who, &num, &tmp, e);
  gdn_outputs_clear(&tmp);
  if (rc) return rc;
  if ((rc = gdn_cotangents_check(ct, &in->shape, who, e))) return rc;
  kern_config pc = *cfg; /* the prefix's devices, schedule and shard (one device: the chunked kernel) */
  if (!affine) pc.devices = 1;
  const int64_t D = pc.shard == KERN_SHARD_CHUNKS ? 1 : pc.devices, L = in->shape.T / D;
  if (D < 1 || L * D != in->shape.T)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: %lld devices do not divide T = %lld", who, (long long)D,
                         (long long)in->shape.T);
  const int64_t C = cfg->chunk < L ? cfg->chunk : L;
  const int f64 = num.dtype == GDN_DTYPE_F64;
  if ((rc = gdn_chgrads_alloc(out, &in->shape, f64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, e))) return rc;
  rc = f64 ? kcb_run_f64(in, gate, ct, &num, C, &pc, algebra, mutant, out, who, e)
           : kcb_run_f32(in, gate, ct, &num, C, &pc, algebra, mutant, out, who, e);
  if (rc) gdn_grads_clear(out);
  return rc;
}

int kern_kda_chunk_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_config *cfg,
                       kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  return chunk_vjp(in, gate, ct, cfg, mutant, 0, 0, out, "kern_kda_chunk_vjp", e);
}

int kern_kda_chunk_vjp_algebra(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                               const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  return chunk_vjp(in, gate, ct, cfg, mutant, 0, 1, out, "kern_kda_chunk_vjp_algebra", e);
}

int kern_kda_affine_vjp_algebra(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                                const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  return chunk_vjp(in, gate, ct, cfg, mutant, 1, 1, out, "kern_kda_affine_vjp_algebra", e);
}

int kern_kda_affine_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  return chunk_vjp(in, gate, ct, cfg, mutant, 1, 0, out, "kern_kda_affine_vjp", e);
}
