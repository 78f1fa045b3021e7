/* parity_vals: a tensor's values as the harness reads them, held as
 * binary64, as float32, or as codes against the reference (gdn_ocode.h).
 *
 * A float32 kernel's outputs are float32 (or bfloat16) values, so holding
 * them as float32 halves their memory and loses nothing: every read converts
 * exactly to binary64 (every float32 is a binary64), so a metric computed
 * from a float32-held tensor is bit for bit the one computed from the same
 * values held as binary64.  A coded tensor decodes exactly to its float32
 * values, so the same holds for it.  At most one of d, f and c is set
 * (none: no tensor); c's elements are c's off, off + 1, ...  Readers take
 * values through parity_vals_at (or read d and f directly where c is
 * NULL).
 */
#ifndef PARITY_VALS_H
#define PARITY_VALS_H

#include <stddef.h>

#include "gdn_ocode.h"
#include "gdn_outputs.h"

typedef struct parity_vals {
  const double *d;
  const float *f;
  const gdn_ocode *c;
  size_t off;
} parity_vals;

static inline parity_vals parity_vals_f64(const double *d) { return (parity_vals){d, NULL, NULL, 0}; }
static inline parity_vals parity_vals_f32(const float *f) { return (parity_vals){NULL, f, NULL, 0}; }
static inline parity_vals parity_vals_coded(const gdn_ocode *c) { return (parity_vals){NULL, NULL, c, 0}; }
static inline int parity_vals_has(parity_vals v) { return v.d || v.f || v.c; }
/* Element i as binary64 (exact). */
static inline double parity_vals_at(parity_vals v, size_t i) {
  return v.f ? (double)v.f[i] : v.d ? v.d[i] : (double)gdn_ocode_value(v.c, v.off + i);
}
/* v advanced by i elements (a row's start). */
static inline parity_vals parity_vals_off(parity_vals v, size_t i) {
  if (v.c) return (parity_vals){NULL, NULL, v.c, v.off + i};
  return v.f ? parity_vals_f32(v.f + i) : parity_vals_f64(v.d ? v.d + i : NULL);
}
/* An output set's o, as it is held (gdn_outputs.oc, .o32 or .o). */
static inline parity_vals parity_vals_o(const gdn_outputs *x) {
  if (x->oc.c) return parity_vals_coded(&x->oc);
  return x->o32 ? parity_vals_f32(x->o32) : parity_vals_f64(x->o);
}

#endif
