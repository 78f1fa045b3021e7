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
 *
 * Packed documents: `seg` (B, T) holds segment ids, or is NULL (one
 * document, no padding).  Id 0 is padding: such a token is computed with
 * k = v = 0 and g = 0 (MaxText zeroes them before the kernel; q and beta are
 * used as given), so it leaves the state exactly as it was.  A *boundary* is
 * a token t > 0 whose id is nonzero and differs from token t-1's (so the
 * first token after a run of padding is one: packed batches pad only at the
 * end, and cu_seqlens has no padding).  `packing`
 * says what a boundary does: GDN_PACKING_LEAK (MaxText's kernel: nothing;
 * the state flows from one document into the next) or GDN_PACKING_RESET
 * (flash-linear-attention's cu_seqlens: the state is zero before the
 * boundary token's update, i.e. its decay exp(g_t) is replaced by 0; the
 * affine map of that step is (0, 0 + its own update)).  Every oracle tier
 * and kernel reads tokens through gdn_inputs_token_kind.
 */
#ifndef GDN_INPUTS_H
#define GDN_INPUTS_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_shape.h"

enum { GDN_PACKING_LEAK = 0, GDN_PACKING_RESET = 1 };

/* What token t of batch row b is (gdn_inputs_token_kind). */
enum { GDN_TOKEN_PLAIN = 0, GDN_TOKEN_PAD = 1, GDN_TOKEN_RESET = 2 };

enum {
  GDN_T_Q = 1u << 0,
  GDN_T_K = 1u << 1,
  GDN_T_V = 1u << 2,
  GDN_T_G = 1u << 3,
  GDN_T_BETA = 1u << 4,
};

struct gdn_prelude; /* gdn_prelude.h */

typedef struct gdn_inputs {
  gdn_shape shape;
  float *q, *k, *v, *g, *beta, *h0;
  int l2norm_in_kernel; /* 1: q and k are raw; kernels normalise x*rsqrt(sum x^2 + 1e-6) */
  int has_scale;
  double scale;
  unsigned bf16_mask; /* GDN_T_* bits of tensors that were stored as bfloat16 */
  int32_t *seg;       /* (B, T) segment ids (0 = padding), or NULL; gdn_malloc'd, owned */
  int packing;        /* GDN_PACKING_*: what a boundary of seg does */
  /* The layer's bfloat16 prelude these inputs were computed from
   * (gdn_prelude.h), or NULL; owned (gdn_inputs_clear frees it,
   * gdn_inputs_copy copies it).  Kernels and the oracle never read it: they
   * read q, k, v, g, beta, which gdn_prelude_verify ties to it. */
  struct gdn_prelude *prelude;
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
/* GDN_TOKEN_PAD for segment id 0; GDN_TOKEN_RESET for a boundary (t > 0,
 * nonzero id differing from t-1's) under GDN_PACKING_RESET; otherwise (and
 * always without seg) GDN_TOKEN_PLAIN. */
static inline int gdn_inputs_token_kind(const gdn_inputs *in, int64_t b, int64_t t) {
  if (!in->seg) return GDN_TOKEN_PLAIN;
  const int32_t *sg = in->seg + b * in->shape.T;
  if (sg[t] == 0) return GDN_TOKEN_PAD;
  if (in->packing == GDN_PACKING_RESET && t > 0 && sg[t] != sg[t - 1]) return GDN_TOKEN_RESET;
  return GDN_TOKEN_PLAIN;
}

/* "leak" or "reset". */
const char *gdn_packing_name(int packing);
int gdn_packing_parse(const char *s, int *out, gdn_error *e);

/* Allocates in->seg (zeroed: all padding until filled) for in->shape. */
int gdn_inputs_alloc_seg(gdn_inputs *in, gdn_error *e);

/* The key head value head hv reads. */
static inline int64_t gdn_inputs_key_head(const gdn_inputs *in, int64_t hv) {
  return hv / (in->shape.Hv / in->shape.Hk);
}

/* Checks values: all finite; beta in [0, 2]; segment ids >= 0.  The message names the tensor
 * and the first bad index (b, t, head, d).  A positive g is accepted
 * (count returned in *n_positive_g if non-NULL): the schema calls it a warning. */
int gdn_inputs_check_values(const gdn_inputs *in, int64_t *n_positive_g, gdn_error *e);

/* Moves *p into in->prelude (allocated here; *p left initialised); a
 * prelude already there is freed. */
int gdn_inputs_attach_prelude(gdn_inputs *in, struct gdn_prelude *p, gdn_error *e);

/* Deep copy, the prelude included (dst initialised, allocated here). */
int gdn_inputs_copy(gdn_inputs *dst, const gdn_inputs *src, gdn_error *e);

/* What travels with the tensors whenever inputs are copied or cut to other
 * columns (the same B and T): the normalisation and scale settings, the
 * bfloat16 mask, the packing, and the segment ids (dst->seg allocated here
 * when src has them; on failure dst is left for the caller to clear). */
int gdn_inputs_copy_settings(gdn_inputs *dst, const gdn_inputs *src, gdn_error *e);

#endif
