/* gdn_outputs: what one implementation produced for one call, owned.
 *
 * o (B, T, Hv, Dv) and ht (B, Hv, Dk, Dv), held as binary64 whatever the
 * producer's dtype (every float32 and bfloat16 value is exact in binary64);
 * `dtype` records the format the producer rounded its outputs to, which is
 * the unit of its ULP errors.  Pair gdn_outputs_init with gdn_outputs_clear.
 *
 * Compact o: a producer whose o values are float32 or bfloat16 may hold o
 * as float32 instead (o32 set, o NULL), half the memory (1 GiB less at
 * T = 2^20, Dv = 128) with the same values; only a caller that reads o
 * through both fields asks for it (`f32_ok`, which kern_out_alloc honours;
 * gdn_outputs_alloc never makes o32).  ht is always binary64 (small).
 *
 * Coded o: a float32 o may be held as one-byte codes against the
 * reference's o instead (oc, gdn_ocode.h: exact, a quarter of o32's
 * memory), when the caller asks for it (`code_base`, the reference's o, of
 * the same shape; kern_out_alloc honours it for float32 outputs).  Then o
 * and o32 are NULL.  Readers take o through parity_vals_o, which knows all
 * three forms.
 */
#ifndef GDN_OUTPUTS_H
#define GDN_OUTPUTS_H

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_ocode.h"
#include "gdn_shape.h"

typedef struct gdn_outputs {
  gdn_shape shape;
  gdn_dtype dtype; /* of o; ht is float32 for float32/bfloat16 kernels */
  double *o, *ht;
  float *o32;  /* o held as float32 (then o is NULL); see above */
  gdn_ocode oc; /* o held as codes against code_base (then o and o32 NULL) */
  int f32_ok;  /* request to the producer: o may be held as o32 (kept by clear) */
  const double *code_base; /* request: o may be held as codes against these values (kept by clear) */
} gdn_outputs;

void gdn_outputs_init(gdn_outputs *out);
/* Zeroed o and ht for a validated shape; frees what `out` held before. */
int gdn_outputs_alloc(gdn_outputs *out, const gdn_shape *s, gdn_dtype dtype, gdn_error *e);
/* Frees o, o32, the codes and ht; keeps the f32_ok and code_base requests. */
void gdn_outputs_clear(gdn_outputs *out);

static inline double *gdn_outputs_o(gdn_outputs *out, int64_t b, int64_t t, int64_t hv) {
  const gdn_shape *s = &out->shape;
  return out->o + ((b * s->T + t) * s->Hv + hv) * s->Dv;
}
static inline double *gdn_outputs_ht(gdn_outputs *out, int64_t b, int64_t hv) {
  const gdn_shape *s = &out->shape;
  return out->ht + (b * s->Hv + hv) * s->Dk * s->Dv;
}

#endif
