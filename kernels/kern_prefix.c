#include "kern_prefix.h"

#include <string.h>

#include "kern_gemm.h"
#include "kern_mm.h"
#include "kern_size.h"

int kern_prefix_supported(kern_prefix schedule, gdn_error *e) {
  if (schedule == KERN_PREFIX_SEQUENTIAL || schedule == KERN_PREFIX_ASSOCIATIVE_SCAN ||
      schedule == KERN_PREFIX_HILLIS_STEELE)
    return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--prefix %d: unknown exclusive-prefix schedule; expected sequential, "
                       "associative-scan or hillis-steele",
                       (int)schedule);
}

#define KERN_REAL 32
#include "kern_prefix_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_prefix_tmpl.h"
#undef KERN_REAL
