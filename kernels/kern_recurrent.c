#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_forward.h"
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
  return kern_forward(in, cfg, out, "kern_recurrent", 0, recurrent_run_f32, recurrent_run_f64, e);
}
