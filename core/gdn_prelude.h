/* gdn_prelude: the layer's bfloat16 prelude, the tensors it starts from and
 * the kernel inputs it computes from them (what upstream really runs).
 *
 * In the real layer q, k, v
 * arrive in bfloat16 and are L2-normalised in bfloat16; beta = sigmoid(b)
 * and g = -exp(A_log) * softplus(a + dt_bias) are computed in bfloat16 from
 * the layer's activations a, b (B, T, Hv) and parameters A_log, dt_bias
 * (Hv).  A gdn_prelude holds those seven tensors, every value a bfloat16
 * held exactly as its float32 (the fixture stores them as bfloat16:
 * docs/fixture-schema-v3.md).
 *
 * gdn_prelude_apply computes the kernel inputs.  Every jnp operation is one
 * float32 evaluation rounded to bfloat16 (gdn_bf16_round: nearest, ties to
 * even), in the layer's order:
 *   q, k   s = sum_i bf16(x_i x_i), summed in float32 left to right and
 *          rounded once (XLA accumulates a bfloat16 reduction in float32);
 *          r = bf16(1 / sqrtf(bf16(bf16(s) + bf16(1e-6)))); y_i = bf16(x_i r)
 *   v      as given
 *   beta   bf16(1 / (1 + expf(-b)))
 *   g      -bf16(bf16(expf(A_log)) * bf16(softplus(bf16(a + dt_bias)))),
 *          softplus(x) = x for x > 20, else log1pf(expf(x)); the negation is
 *          exact.
 * Exact in float32: x_i x_i (the product of two bfloat16 is exact in
 * float32), the negation, the widening of every bfloat16.  Rounded: each
 * float32 sum, libm's expf / log1pf / sqrtf (glibc's are correctly rounded
 * or within 1 ulp of float32, then rounded to bfloat16; a 1-ulp float32
 * difference changes the bfloat16 only on a near-tie).  Not modelled: XLA
 * fusing several steps into one float32 computation (fewer roundings),
 * TPU's own exp / rsqrt / log1p.  Deterministic: each output element depends
 * only on its own row of inputs; any thread count gives the same bits.
 */
#ifndef GDN_PRELUDE_H
#define GDN_PRELUDE_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_shape.h"

/* The seven tensors, in storage and hash order. */
enum {
  GDN_PRELUDE_Q = 0,
  GDN_PRELUDE_K,
  GDN_PRELUDE_V,
  GDN_PRELUDE_A,
  GDN_PRELUDE_B,
  GDN_PRELUDE_A_LOG,
  GDN_PRELUDE_DT_BIAS,
  GDN_PRELUDE_N
};

typedef struct gdn_prelude {
  gdn_shape shape;
  float *t[GDN_PRELUDE_N]; /* q, k (B,T,Hk,Dk); v (B,T,Hv,Dv); a, b (B,T,Hv); A_log, dt_bias (Hv) */
} gdn_prelude;

/* "q" "k" "v" "a" "b" "A_log" "dt_bias" (the dataset names). */
extern const char *const gdn_prelude_names[GDN_PRELUDE_N];

void gdn_prelude_init(gdn_prelude *p);
void gdn_prelude_clear(gdn_prelude *p);
/* Zeroed tensors for a validated shape. */
int gdn_prelude_alloc(gdn_prelude *p, const gdn_shape *s, gdn_error *e);
int gdn_prelude_copy(gdn_prelude *dst, const gdn_prelude *src, gdn_error *e);

/* Rank and dims of tensor i for shape s (dims has room for 4). */
int gdn_prelude_dims(const gdn_shape *s, int i, int64_t dims[4]);
size_t gdn_prelude_numel(const gdn_shape *s, int i);

/* Bytes the seven tensors of shape s take (float32 in memory); UINT64_MAX
 * on overflow.  Budgets add it for inputs that carry a prelude. */
uint64_t gdn_prelude_bytes(const gdn_shape *s);

/* Every value finite and a bfloat16 (x == bf16(x)); the message names the
 * tensor (`where` then "/<name>") and the first bad index. */
int gdn_prelude_check_values(const gdn_prelude *p, const char *where, gdn_error *e);

/* "(i0, i1, ...)" for flat index i of a row-major tensor of rank r with
 * dims (truncated to n bytes): the index in error messages. */
void gdn_prelude_format_index(char *buf, size_t n, const int64_t *dims, int r, size_t i);

#endif
