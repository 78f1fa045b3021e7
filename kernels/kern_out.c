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
  /* o as float32 when the caller reads both forms and the kernel rounds
   * its outputs to float32 or bfloat16 (each exact in float32). */
  const int f32 = out->f32_ok && dtype != GDN_DTYPE_F64;
  /* Buffers of the same sizes and form from the caller's previous call are
   * reused as they are (the kernel writes every element): no fresh pages
   * for the system to fault in and zero again, a tenth of a whole run's CPU
   * time when every case of a sweep allocated its 128 MiB o anew. */
  if ((f32 ? out->o32 != NULL : out->o != NULL) && out->ht &&
      gdn_shape_numel_v(&out->shape) == gdn_shape_numel_v(s) &&
      gdn_shape_numel_state(&out->shape) == gdn_shape_numel_state(s)) {
    out->shape = *s;
    out->dtype = dtype;
    return GDN_OK;
  }
  gdn_outputs_clear(out);
  size_t no, nh;
  if (gdn_mul_size(gdn_shape_numel_v(s), f32 ? sizeof(float) : sizeof(double), &no) ||
      gdn_mul_size(gdn_shape_numel_state(s), sizeof(double), &nh))
    no = nh = SIZE_MAX; /* refused below */
  void *o = gdn_malloc(no, "output o", e);
  if (f32)
    out->o32 = o;
  else
    out->o = o;
  if (!o || !(out->ht = gdn_malloc(nh, "output ht", e))) {
    gdn_outputs_clear(out);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  hint_huge(o, no);
  out->shape = *s;
  out->dtype = dtype;
  return GDN_OK;
}
