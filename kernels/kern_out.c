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

/* How o is held (gdn_outputs.h). */
typedef enum { FORM_F64, FORM_F32, FORM_CODED } o_form;

static o_form form_for(const gdn_outputs *out, gdn_dtype dtype) {
  /* Codes for float32 values only: a bfloat16-rounded o lies up to 2^15
   * float32 steps from the reference, nearly every element an exception. */
  if (out->code_base && dtype == GDN_DTYPE_F32) return FORM_CODED;
  /* o as float32 when the caller reads both forms and the kernel rounds
   * its outputs to float32 or bfloat16 (each exact in float32). */
  return out->f32_ok && dtype != GDN_DTYPE_F64 ? FORM_F32 : FORM_F64;
}

static int holds(const gdn_outputs *out, o_form f) {
  return f == FORM_CODED ? out->oc.c != NULL : f == FORM_F32 ? out->o32 != NULL : out->o != NULL;
}

/* o in form f for n elements (out cleared before). */
static int alloc_o(gdn_outputs *out, o_form f, size_t n, gdn_error *e) {
  if (f == FORM_CODED) {
    int rc = gdn_ocode_alloc(&out->oc, n, out->code_base, e);
    if (!rc) hint_huge(out->oc.c, n);
    return rc;
  }
  size_t no;
  if (gdn_mul_size(n, f == FORM_F32 ? sizeof(float) : sizeof(double), &no)) no = SIZE_MAX; /* refused below */
  void *o = gdn_malloc(no, "output o", e);
  if (!o) return e ? e->code : GDN_ERR_NOMEM;
  if (f == FORM_F32) out->o32 = o;
  else out->o = o;
  hint_huge(o, no);
  return GDN_OK;
}

int kern_out_alloc(gdn_outputs *out, const gdn_shape *s, gdn_dtype dtype, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  const o_form f = form_for(out, dtype);
  /* Buffers of the same sizes and form from the caller's previous call are
   * reused as they are (the kernel writes every element): no fresh pages
   * for the system to fault in and zero again, a tenth of a whole run's CPU
   * time when every case of a sweep allocated its 128 MiB o anew. */
  if (holds(out, f) && out->ht && gdn_shape_numel_v(&out->shape) == gdn_shape_numel_v(s) &&
      gdn_shape_numel_state(&out->shape) == gdn_shape_numel_state(s)) {
    if (f == FORM_CODED) gdn_ocode_restart(&out->oc, out->code_base);
    out->shape = *s;
    out->dtype = dtype;
    return GDN_OK;
  }
  gdn_outputs_clear(out);
  size_t nh;
  if (gdn_mul_size(gdn_shape_numel_state(s), sizeof(double), &nh)) nh = SIZE_MAX; /* refused below */
  if ((rc = alloc_o(out, f, gdn_shape_numel_v(s), e)) || !(out->ht = gdn_malloc(nh, "output ht", e))) {
    gdn_outputs_clear(out);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  out->shape = *s;
  out->dtype = dtype;
  return GDN_OK;
}

int kern_out_finish(gdn_outputs *out, gdn_error *e) { return gdn_ocode_finish(&out->oc, e); }

int kern_out_alloc_for(gdn_outputs *out, const gdn_inputs *in, const kern_config *cfg, const char *who,
                       gdn_error *e) {
  int rc = kern_out_alloc(out, &in->shape, kern_output_dtype(cfg, in->bf16_mask), e);
  if (rc) gdn_error_prefix(e, "%s: ", who);
  return rc;
}
