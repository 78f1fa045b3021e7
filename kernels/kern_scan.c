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

#include "kern_avx.h"

#define KERN_REAL 32
#include "kern_scan_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_scan_tmpl.h"
#undef KERN_REAL

int kern_threads(const gdn_shape *s) {
  const int64_t heads = s->B * s->Hv;
  return gdn_threads_for(heads > s->Dv ? heads : s->Dv);
}

size_t kern_scan_scratch(const gdn_shape *s, const kern_config *cfg) {
  kern_num num;
  if (kern_num_init(&num, cfg, "kern_scan", NULL)) return SIZE_MAX;
  const int nt = kern_threads(s);
  return num.dtype == GDN_DTYPE_F64 ? scan_scratch_f64(s, cfg->chunk, num.matmul, nt)
                                    : scan_scratch_f32(s, cfg->chunk, num.matmul, nt);
}

int kern_scan(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e) {
  return kern_forward(in, cfg, out, "kern_scan", 1, scan_run_f32, scan_run_f64, e);
}
