/* gdn_synth: synthetic inputs shaped like one Qwen 3.5 Gated DeltaNet layer.
 *
 * Drawn as the model computes them at initialisation, deterministically from
 * the seed (each element is a function of seed, tensor and flat index only):
 *   q, k    ~ N(0, 1), L2-normalised in the kernel (l2norm_in_kernel = 1), or
 *            normalised here in binary64 and rounded (GDN_SYNTH_QK_PRENORM)
 *   v       ~ N(0, 1)
 *   beta    = sigmoid(b),  b ~ N(0, 1)
 *   g       = -exp(A_log[h]) * softplus(a + dt_bias[h]),  a ~ N(0, 1),
 *            A_log[h] = log(U(0, 16)) and dt_bias[h] = 1 per value head, as
 *            Qwen3-Next / MaxText initialise them
 *            With GDN_SYNTH_SLOW_GATES, A[h] is log-uniform in [1e-4, 1e-1]
 *            instead: per-token decays of 0.9999..0.9, a memory of 10 to 10^4
 *            tokens, the long-memory heads of a trained model.  At
 *            initialisation most heads forget within a few tokens, so state
 *            carried across a device boundary barely matters; slow gates make
 *            the cross-device composition carry real weight.
 *   h0      ~ 0.1 N(0, 1) when requested
 * Each value is computed in binary64 and rounded once to float32 (or to
 * bfloat16 for the tensors in `bf16_mask`).
 */
#ifndef GDN_SYNTH_H
#define GDN_SYNTH_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_shape.h"

enum {
  GDN_SYNTH_H0 = 1u << 0,         /* draw an initial state */
  GDN_SYNTH_QK_PRENORM = 1u << 1, /* store normalised q, k; l2norm_in_kernel = 0 */
  GDN_SYNTH_SLOW_GATES = 1u << 2, /* long-memory decay rates (see above) */
};

typedef struct gdn_synth_opts {
  uint64_t seed;
  unsigned flags;     /* GDN_SYNTH_* */
  unsigned bf16_mask; /* GDN_T_* tensors to round to bfloat16 */
} gdn_synth_opts;

/* `in` initialised; allocated and filled here. */
int gdn_synth_generate(gdn_inputs *in, const gdn_shape *s, const gdn_synth_opts *o, gdn_error *e);

#endif
