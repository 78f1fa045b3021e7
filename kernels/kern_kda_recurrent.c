/* kern_kda_recurrent: Kimi Delta Attention's token loop (kern_kda.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern_gemm.h"
#include "kern_kda.h"
#include "kern_kda_frame.h"
#include "kern_mm.h"
#include "kern_num.h"

#define KERN_REAL 32
#include "kern_kda_recurrent_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_kda_recurrent_tmpl.h"
#undef KERN_REAL

int kern_kda_recurrent(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg,
                       kern_kda_mutant mutant, gdn_outputs *out, gdn_error *e) {
  kern_num num;
  int rc = kern_kda_begin_modes(in, gate, cfg, 0, 0, "kern_kda_recurrent", &num, out, e);
  if (rc) return rc;
  rc = num.dtype == GDN_DTYPE_F64 ? kda_rec_run_f64(in, gate, mutant, &num, out, e)
                                  : kda_rec_run_f32(in, gate, mutant, &num, out, e);
  return kern_kda_end(out, rc, e);
}
