/* gdn_chgate: a per-channel gate, one log-decay per (b, t, value head, key
 * channel), as Kimi Delta Attention takes it: g of shape (B, T, Hv, Dk),
 * row-major, float32 (flash-linear-attention's layout; the rest of a KDA
 * call -- q, k, v, beta, h0, scale -- is a gdn_inputs, whose scalar g the
 * per-channel recurrence does not read).  Pair gdn_chgate_init with
 * gdn_chgate_clear.
 *
 * The synthetic draw follows Kimi Linear's gate (fla's naive_kda_gate):
 *   g[b,t,h,d] = -exp(A_log[h]) * softplus(x[b,t,h,d] + dt_bias[h,d]),
 *   x ~ N(0, 1);  A_log[h] = log(U(1, 16));
 *   dt_bias[h,d] = softplus^-1(dt),  dt log-uniform in [1e-4, 1] per channel,
 * so the channels of one head mix slow ones (dt ~ 1e-4: decays
 * exp(-A 1e-4), a memory of thousands of tokens) with fast ones (dt ~ 1:
 * forgetting within a token or two).  Each value is computed in binary64
 * and rounded once to float32; every value is a function of (seed, tensor,
 * index) only (gdn_rng.h), so any thread count draws the same gate.
 */
#ifndef GDN_CHGATE_H
#define GDN_CHGATE_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_shape.h"

typedef struct gdn_chgate {
  gdn_shape shape; /* of the call it gates (B, T, Hv, Dk used) */
  float *g;        /* (B, T, Hv, Dk), gdn_malloc'd, owned; NULL when empty */
} gdn_chgate;

void gdn_chgate_init(gdn_chgate *cg);
/* Zeroed gate for a validated shape; frees what cg held before. */
int gdn_chgate_alloc(gdn_chgate *cg, const gdn_shape *s, gdn_error *e);
void gdn_chgate_clear(gdn_chgate *cg);

/* Number of elements, B T Hv Dk (a validated shape: no overflow, since the
 * state tensor and q already bound these factors). */
static inline size_t gdn_chgate_numel(const gdn_shape *s) {
  return (size_t)(s->B * s->T * s->Hv * s->Dk);
}
/* The Dk log-decays of (b, t, hv) in a gate array laid out as above. */
static inline const float *gdn_chgate_row(const float *g, const gdn_shape *s, int64_t b, int64_t t,
                                          int64_t hv) {
  return g + ((b * s->T + t) * s->Hv + hv) * s->Dk;
}

/* Kimi Linear's synthetic gate (above) for in->shape, drawn from seed. */
int gdn_chgate_draw_kimi(gdn_chgate *cg, const gdn_shape *s, uint64_t seed, gdn_error *e);
/* Value heads [v0, v1) of that gate alone (a head group of a streamed run):
 * shape s with Hv = v1 - v0, every value bit for bit the whole draw's at
 * the same (b, t, head, channel). */
int gdn_chgate_draw_kimi_heads(gdn_chgate *cg, const gdn_shape *s, int64_t v0, int64_t v1, uint64_t seed,
                               gdn_error *e);

/* Every channel of (b, t, hv) set to in's scalar gate g[b, t, hv]: the
 * per-channel gate under which Kimi Delta Attention is Gated DeltaNet. */
int gdn_chgate_from_scalar(gdn_chgate *cg, const gdn_inputs *in, gdn_error *e);

#endif
