/* kern_kda_affine: Kimi Delta Attention's affine-prefix over D simulated
 * devices, every prefix schedule and shard mode (kern_kda.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern_expf.h"
#include "kern_gemm.h"
#include "kern_kda.h"
#include "kern_kda_frame.h"
#include "kern_num.h"

/* the chunked kernel's steps, shared by inclusion (its runner unused here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#define KERN_REAL 32
#include "kern_kda_chunk_tmpl.h"
#include "kern_kda_prefix_tmpl.h"
#include "kern_kda_affine_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_kda_chunk_tmpl.h"
#include "kern_kda_prefix_tmpl.h"
#include "kern_kda_affine_tmpl.h"
#undef KERN_REAL
#pragma GCC diagnostic pop

int kern_kda_affine(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, kern_kda_mutant mutant,
                    gdn_outputs *out, gdn_error *e) {
  kern_num num;
  int rc = kern_kda_begin_modes(in, gate, cfg, 1, 1, "kern_kda_affine", &num, out, e);
  if (rc) return rc;
  const int64_t T = in->shape.T, L = cfg->shard == KERN_SHARD_TOKENS ? T / cfg->devices : T;
  const int64_t C = cfg->chunk < L ? cfg->chunk : L;
  rc = num.dtype == GDN_DTYPE_F64 ? kda_affine_run_f64(in, gate, cfg, mutant, C, &num, out, e)
                                  : kda_affine_run_f32(in, gate, cfg, mutant, C, &num, out, e);
  return kern_kda_end(out, rc, e);
}
