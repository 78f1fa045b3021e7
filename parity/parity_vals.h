/* parity_vals: a tensor's values as the harness reads them, held either as
 * binary64 or as float32.
 *
 * A float32 kernel's outputs are float32 (or bfloat16) values, so holding
 * them as float32 halves their memory and loses nothing: every read converts
 * exactly to binary64 (every float32 is a binary64), so a metric computed
 * from a float32-held tensor is bit for bit the one computed from the same
 * values held as binary64.  Exactly one of d and f is set (both NULL: no
 * tensor).  Readers take values through parity_vals_at, never the fields.
 */
#ifndef PARITY_VALS_H
#define PARITY_VALS_H

#include <stddef.h>

#include "gdn_outputs.h"

typedef struct parity_vals {
  const double *d;
  const float *f;
} parity_vals;

static inline parity_vals parity_vals_f64(const double *d) { return (parity_vals){d, NULL}; }
static inline parity_vals parity_vals_f32(const float *f) { return (parity_vals){NULL, f}; }
static inline int parity_vals_has(parity_vals v) { return v.d || v.f; }
/* Element i as binary64 (exact). */
static inline double parity_vals_at(parity_vals v, size_t i) { return v.f ? (double)v.f[i] : v.d[i]; }
/* v advanced by i elements (a row's start). */
static inline parity_vals parity_vals_off(parity_vals v, size_t i) {
  return v.f ? parity_vals_f32(v.f + i) : parity_vals_f64(v.d ? v.d + i : NULL);
}
/* An output set's o, as it is held (gdn_outputs.o32 or .o). */
static inline parity_vals parity_vals_o(const gdn_outputs *x) {
  return x->o32 ? parity_vals_f32(x->o32) : parity_vals_f64(x->o);
}

#endif
