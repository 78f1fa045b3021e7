#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_mm.h"
#include "kern_num.h"
#include "kern_out.h"

#define KERN_REAL 32
#include "kern_recurrent_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_recurrent_tmpl.h"
#undef KERN_REAL

/* The recurrence has no chunks or devices: only the shape and the numerics
 * are checked (a config tuned for the chunked kernels is valid here). */
int kern_recurrent(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e) {
  gdn_outputs_clear(out);
  kern_num num;
  int rc = kern_num_setup(&num, in, cfg, "kern_recurrent", 0, e);
  if (!rc) rc = kern_out_alloc_for(out, in, cfg, "kern_recurrent", e);
  if (!rc)
    rc = num.dtype == GDN_DTYPE_F64 ? recurrent_run_f64(in, &num, out, e)
                                    : recurrent_run_f32(in, &num, out, e);
  if (!rc) rc = kern_out_finish(out, e);
  if (rc) gdn_outputs_clear(out);
  return rc;
}
