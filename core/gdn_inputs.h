/* gdn_inputs: the inputs of one Gated DeltaNet kernel call, owned.
 *
 * Tensors are stored as float32 (bfloat16 inputs are held as their exact
 * float32 values; `bf16_mask` remembers which were bfloat16 so outputs can be
 * cast back to the input dtype as MaxText does).  h0 == NULL means a zero
 * initial state.  Pair every gdn_inputs_init with gdn_inputs_clear.
 *
 * Scale: when has_scale is 0 the query scale is Dk^-1/2 -- exact in the
 * oracle, rounded by each kernel as its upstream counterpart rounds it.  When
 * 1, `scale` (a binary64) is used as given.
 */
#ifndef GDN_INPUTS_H
#define GDN_INPUTS_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_shape.h"

enum {
  GDN_T_Q = 1u << 0,
  GDN_T_K = 1u << 1,
  GDN_T_V = 1u << 2,
  GDN_T_G = 1u << 3,
  GDN_T_BETA = 1u << 4,
};

typedef struct gdn_inputs {
  gdn_shape shape;
  float *q, *k, *v, *g, *beta, *h0;
  int l2norm_in_kernel; /* 1: q and k are raw; kernels normalise x*rsqrt(sum x^2 + 1e-6) */
  int has_scale;
  double scale;
  unsigned bf16_mask; /* GDN_T_* bits of tensors that were stored as bfloat16 */
} gdn_inputs;

void gdn_inputs_init(gdn_inputs *in);
/* Allocates zeroed tensors for a validated shape (h0 too when with_h0). */
int gdn_inputs_alloc(gdn_inputs *in, const gdn_shape *s, int with_h0, gdn_error *e);
void gdn_inputs_clear(gdn_inputs *in);

/* Pointers to one token's rows.  b, t, heads are in range by contract. */
static inline const float *gdn_inputs_q(const gdn_inputs *in, int64_t b, int64_t t, int64_t hk) {
  const gdn_shape *s = &in->shape;
  return in->q + ((b * s->T + t) * s->Hk + hk) * s->Dk;
}
static inline const float *gdn_inputs_k(const gdn_inputs *in, int64_t b, int64_t t, int64_t hk) {
  const gdn_shape *s = &in->shape;
  return in->k + ((b * s->T + t) * s->Hk + hk) * s->Dk;
}
static inline const float *gdn_inputs_v(const gdn_inputs *in, int64_t b, int64_t t, int64_t hv) {
  const gdn_shape *s = &in->shape;
  return in->v + ((b * s->T + t) * s->Hv + hv) * s->Dv;
}
static inline float gdn_inputs_g(const gdn_inputs *in, int64_t b, int64_t t, int64_t hv) {
  const gdn_shape *s = &in->shape;
  return in->g[(b * s->T + t) * s->Hv + hv];
}
static inline float gdn_inputs_beta(const gdn_inputs *in, int64_t b, int64_t t, int64_t hv) {
  const gdn_shape *s = &in->shape;
  return in->beta[(b * s->T + t) * s->Hv + hv];
}
/* h0 block (Dk x Dv, row-major) of (b, hv), or NULL for zeros. */
static inline const float *gdn_inputs_h0(const gdn_inputs *in, int64_t b, int64_t hv) {
  const gdn_shape *s = &in->shape;
  return in->h0 ? in->h0 + (b * s->Hv + hv) * s->Dk * s->Dv : 0;
}
/* The key head value head hv reads. */
static inline int64_t gdn_inputs_key_head(const gdn_inputs *in, int64_t hv) {
  return hv / (in->shape.Hv / in->shape.Hk);
}

/* Checks values: all finite; beta in [0, 2].  The message names the tensor
 * and the first bad index (b, t, head, d).  A positive g is accepted
 * (count returned in *n_positive_g if non-NULL): the schema calls it a warning. */
int gdn_inputs_check_values(const gdn_inputs *in, int64_t *n_positive_g, gdn_error *e);

/* Deep copy (dst initialised, allocated here). */
int gdn_inputs_copy(gdn_inputs *dst, const gdn_inputs *src, gdn_error *e);

#endif
