#include "kern_out.h"

#include <stdint.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "gdn_alloc.h"

/* Large outputs in transparent huge pages where the system offers them on
 * request (THP "madvise"): the kernel then takes one page fault per 2 MiB
 * instead of per 4 KiB as it first writes o (at T = 2^20 a 1 GiB o is 262144
 * faults, about a second of system time, otherwise).  Only a hint: ignored
 * where unsupported; the contents are unaffected. */
static void hint_huge(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t b = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
  if (e > b) (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

int kern_out_alloc(gdn_outputs *out, const gdn_shape *s, gdn_dtype dtype, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  /* Buffers of the same sizes from the caller's previous call are reused
   * as they are (the kernel writes every element): no fresh pages for the
   * system to fault in and zero again, a tenth of a whole run's CPU time
   * when every case of a sweep allocated its 128 MiB o anew. */
  if (out->o && out->ht && gdn_shape_numel_v(&out->shape) == gdn_shape_numel_v(s) &&
      gdn_shape_numel_state(&out->shape) == gdn_shape_numel_state(s)) {
    out->shape = *s;
    out->dtype = dtype;
    return GDN_OK;
  }
  gdn_outputs_clear(out);
  size_t no, nh;
  if (gdn_mul_size(gdn_shape_numel_v(s), sizeof(double), &no) ||
      gdn_mul_size(gdn_shape_numel_state(s), sizeof(double), &nh))
    no = nh = SIZE_MAX; /* refused below */
  if (!(out->o = gdn_malloc(no, "output o", e)) || !(out->ht = gdn_malloc(nh, "output ht", e))) {
    gdn_outputs_clear(out);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  hint_huge(out->o, no);
  out->shape = *s;
  out->dtype = dtype;
  return GDN_OK;
}
