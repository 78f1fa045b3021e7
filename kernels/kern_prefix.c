#include "kern_prefix.h"

#include <string.h>

#include "kern_gemm.h"

int kern_prefix_supported(kern_prefix schedule, gdn_error *e) {
  if (schedule == KERN_PREFIX_SEQUENTIAL) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--prefix %s: this exclusive-prefix schedule is not supported yet by "
                       "kern_affine_prefix (only sequential)",
                       kern_prefix_name(schedule));
}

size_t kern_prefix_work_elems(kern_prefix schedule, int64_t devices, int64_t dk, int64_t dv) {
  (void)schedule;
  (void)devices;
  return (size_t)(dk * dk + dk * dv);
}

#define KERN_REAL 32
#include "kern_prefix_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_prefix_tmpl.h"
#undef KERN_REAL
