/* kern_kda_recurrent_vjp: the backward of KDA's token loop (kern_kda_vjp.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern_kda_frame.h"
#include "kern_gemm.h"
#include "kern_kda_vjp.h"
#include "kern_mm.h"
#include "kern_num.h"

#define KERN_REAL 32
#include "kern_kda_vjp_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_kda_vjp_tmpl.h"
#undef KERN_REAL

static const char *const vjp_mutant_names[KERN_KDA_VJP_MUTANT_COUNT] = {"none", "dg-value-axis",
                                                                           "dh-seam-dropped"};

const char *kern_kda_vjp_mutant_name(kern_kda_vjp_mutant m) {
  return (int)m >= 0 && m < KERN_KDA_VJP_MUTANT_COUNT ? vjp_mutant_names[m] : NULL;
}

int kern_kda_recurrent_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e) {
  static const char who[] = "kern_kda_recurrent_vjp";
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "%s: gradients missing (NULL)", who);
  gdn_grads_clear(out);
  if ((int)mutant < 0 || mutant >= KERN_KDA_VJP_MUTANT_COUNT)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: backward mutant %d is not known", who, (int)mutant);
  /* the forward's checks and numerics (kern_kda_begin_modes allocates outputs the
   * backward does not use: dropped at once) */
  kern_num num;
  gdn_outputs tmp;
  gdn_outputs_init(&tmp);
  int rc = kern_kda_begin_modes(in, gate, cfg, 0, 0, who, &num, &tmp, e);
  gdn_outputs_clear(&tmp);
  if (rc) return rc;
  if ((rc = gdn_cotangents_check(ct, &in->shape, who, e))) return rc;
  const int f64 = num.dtype == GDN_DTYPE_F64;
  if ((rc = gdn_chgrads_alloc(out, &in->shape, f64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, e))) return rc;
  rc = f64 ? kv_run_f64(in, gate, ct, &num, mutant, out, e) : kv_run_f32(in, gate, ct, &num, mutant, out, e);
  if (rc) gdn_grads_clear(out);
  return rc;
}
