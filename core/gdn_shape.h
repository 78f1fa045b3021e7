/* gdn_shape: the dimensions of one Gated DeltaNet kernel call.
 *
 * Layout is MaxText's (row-major):
 *   q, k    (B, T, Hk, Dk)        v, o   (B, T, Hv, Dv)
 *   g, beta (B, T, Hv)            h0, ht (B, Hv, Dk, Dv)
 * Value head j reads key head j / (Hv / Hk) (repeat-interleave).
 */
#ifndef GDN_SHAPE_H
#define GDN_SHAPE_H

#include <stdint.h>
#include <stddef.h>

#include "gdn_error.h"

typedef struct gdn_shape {
  int64_t B, T, Hk, Hv, Dk, Dv;
} gdn_shape;

/* Parses "B,T,H,D" (decimal, every field >= 1, no signs or spaces) into
 * Hk = Hv = H, Dk = Dv = D.  `what` names the option for the message. */
int gdn_shape_parse(gdn_shape *s, const char *str, const char *what, gdn_error *e);

/* Every dimension >= 1, Hv % Hk == 0, and every tensor's element count and
 * byte size fit in 64 bits. */
int gdn_shape_validate(const gdn_shape *s, gdn_error *e);

/* Bytes the inputs (float32 q, k, v, g, beta, optional h0) and one set of
 * float64 outputs (o, ht) take.  Fails with GDN_ERR_INPUT on overflow. */
int gdn_shape_bytes(const gdn_shape *s, int with_h0, uint64_t *input_bytes,
                    uint64_t *output_bytes, gdn_error *e);

/* Refuses, before anything is allocated, a shape whose inputs plus `n_outputs`
 * output sets exceed max_bytes (0 = no limit). */
int gdn_shape_check_limit(const gdn_shape *s, int with_h0, int n_outputs,
                          uint64_t max_bytes, gdn_error *e);

/* Element counts (call only on a validated shape). */
static inline size_t gdn_shape_numel_qk(const gdn_shape *s) {
  return (size_t)(s->B * s->T * s->Hk * s->Dk);
}
static inline size_t gdn_shape_numel_v(const gdn_shape *s) {
  return (size_t)(s->B * s->T * s->Hv * s->Dv);
}
static inline size_t gdn_shape_numel_gate(const gdn_shape *s) {
  return (size_t)(s->B * s->T * s->Hv);
}
static inline size_t gdn_shape_numel_state(const gdn_shape *s) {
  return (size_t)(s->B * s->Hv * s->Dk * s->Dv);
}
/* Number of chunks of size C after zero padding of T. */
static inline int64_t gdn_shape_chunks(const gdn_shape *s, int64_t C) {
  return (s->T + C - 1) / C;
}

/* "B1-T4096-Hk4-Hv4-Dk128-Dv128"-style label into buf. */
void gdn_shape_format(const gdn_shape *s, char *buf, size_t n);

#endif
