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
 *
 * The layer prelude in bfloat16 (GDN_SYNTH_PRELUDE_BF16; ignores
 * GDN_SYNTH_QK_PRENORM and bf16_mask): the kernel's inputs as the real layer
 * hands them over, every tensor a bfloat16 value (bf16_mask = all five,
 * l2norm_in_kernel = 0).  The layer's activations are drawn as above and
 * rounded to bfloat16 (q, k, v rows; a, b per token and head; A_log =
 * log(A) and dt_bias = 1 per head) and kept in in->prelude (gdn_prelude.h,
 * which fixtures store and inputs_sha256 covers); gdn_prelude_apply computes
 * the kernel inputs from them, every jnp operation of the
 * prelude one float32 evaluation rounded to bfloat16 (round to nearest
 * even), in the layer's order:
 *   q, k   s = sum_i bf16(x_i x_i), summed in float32 left to right and
 *          rounded once (XLA accumulates a bfloat16 reduction in float32);
 *          r = bf16(rsqrt(bf16(s + bf16(1e-6)))); y_i = bf16(x_i r);
 *   beta   bf16(sigmoid(b));
 *   g      -bf16(bf16(exp(A_log)) * bf16(softplus(bf16(a + dt_bias))))
 *          (the negation exact).
 * Not modelled: XLA fusing several of these into one float32 computation
 * (fewer roundings), TPU's exp / rsqrt / log1p.  The oracle reads these
 * rounded values exactly: it is the exact recurrence of what the kernel
 * receives.
 *
 * Packed documents (gdn_synth_segments, after gdn_synth_generate; documents
 * >= 2): segment ids (gdn_inputs.seg) for up to
 * `documents` documents per batch row, ids 1, 2, ... in order, then a tail
 * of max(1, T/32) padding tokens (id 0) as a packed batch ends.  The
 * documents - 1 boundaries are drawn from the seed, per row, cycling
 * through three kinds: (0) on a device seam: round(T m / d) for d drawn
 * from {2, 3, 4, 8} and 1 <= m < d (a seam of token sharding whenever d
 * divides the device count and T); (1) on a chunk edge: a multiple of 64
 * (so of 16 and 32 too); (2) inside a chunk: not a multiple of 16.
 * Boundaries that coincide, fall at 0 or in the padding are dropped (fewer
 * documents).  packing is left GDN_PACKING_LEAK; the caller chooses.
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
  GDN_SYNTH_PRELUDE_BF16 = 1u << 3, /* the layer's bfloat16 prelude (below) */
};

typedef struct gdn_synth_opts {
  uint64_t seed;
  unsigned flags;     /* GDN_SYNTH_* */
  unsigned bf16_mask; /* GDN_T_* tensors to round to bfloat16 */
} gdn_synth_opts;

/* Gate spikes: g = `g` (e.g. -10, -40, -80) on every value head of token
 * b T + t when its uniform draw from `seed` (gdn_rng stream
 * GDN_SYNTH_SPIKE_STREAM, index b T + t) is below GDN_SYNTH_SPIKE_FRACTION,
 * written over in->g (drawn already).  `gdn-parity trust`'s spike regimes
 * (slow gates, then these spikes) and `gdn-fixture synth --spikes G`. */
#define GDN_SYNTH_SPIKE_STREAM 0x5317e5ull
#define GDN_SYNTH_SPIKE_FRACTION 0.05
void gdn_synth_spikes(gdn_inputs *in, float g, uint64_t seed);

/* Segment ids for `documents` packed documents per row (above), drawn from
 * `seed`, into in->seg (allocated here for in->shape; documents <= 1: none,
 * in->seg left NULL).  GDN_ERR_INPUT when documents > T. */
int gdn_synth_segments(gdn_inputs *in, uint64_t seed, int64_t documents, gdn_error *e);

/* `in` initialised; allocated and filled here. */
int gdn_synth_generate(gdn_inputs *in, const gdn_shape *s, const gdn_synth_opts *o, gdn_error *e);

/* The inputs of key heads [k0, k1) of shape s alone (a head group, for a
 * run streamed by head group): shape (B, T, k1 - k0, (k1 - k0) r, Dk, Dv)
 * with r = Hv / Hk (the value heads [k0 r, k1 r) that read those key heads),
 * every value -- q, k, v, g, beta, h0 and the prelude -- bit for bit the one
 * gdn_synth_generate(s) draws at the same position (each is drawn at its
 * index in the whole tensor).  Segment ids are per token, not per head:
 * gdn_synth_segments on the group's inputs gives the whole run's.
 * GDN_ERR_INPUT for an empty or out-of-range head range. */
int gdn_synth_generate_heads(gdn_inputs *in, const gdn_shape *s, int64_t k0, int64_t k1, const gdn_synth_opts *o,
                             gdn_error *e);

/* The settings the generation gives its inputs, without their values (a
 * fixture written a head group at a time): l2norm_in_kernel (0 with
 * GDN_SYNTH_QK_PRENORM), bf16_mask, no explicit scale.  Not the bfloat16
 * prelude's, which gdn_prelude_apply sets. */
void gdn_synth_settings(gdn_inputs *in, const gdn_synth_opts *o);

/* The generation's tensors, in the order fix_inputs_sha256 hashes them. */
enum { GDN_SYNTH_TQ, GDN_SYNTH_TK, GDN_SYNTH_TV, GDN_SYNTH_TG, GDN_SYNTH_TBETA, GDN_SYNTH_TH0, GDN_SYNTH_TN };

/* Tensor t's element count at shape s (0 for a t out of range). */
size_t gdn_synth_numel(const gdn_shape *s, int t);

/* Elements [start, start + n) of tensor t of gdn_synth_generate(s, o), in
 * its memory order, into x: bit for bit that range of the whole tensor, so a
 * whole run's inputs can be hashed (or written) a range at a time without
 * holding them.  With GDN_SYNTH_QK_PRENORM or the bfloat16 prelude the
 * ranges of q and k are whole rows (start and n multiples of Dk: a row is
 * normalised as one); under the prelude each value is the prelude's draw at
 * that index through its step of gdn_prelude_apply (g reads its head's
 * A_log and dt_bias).  GDN_ERR_INTERNAL for a range outside the tensor, or
 * h0 without GDN_SYNTH_H0. */
int gdn_synth_range(const gdn_shape *s, const gdn_synth_opts *o, int t, size_t start, size_t n, float *x,
                    gdn_error *e);

/* Elements [start, start + n) of the bfloat16 prelude's tensor i
 * (GDN_PRELUDE_*, gdn_prelude.h) as gdn_synth_generate(s, o) keeps it in
 * in->prelude, bit for bit.  GDN_ERR_INTERNAL without
 * GDN_SYNTH_PRELUDE_BF16 or for a range outside the tensor. */
int gdn_synth_prelude_range(const gdn_shape *s, const gdn_synth_opts *o, int i, size_t start, size_t n, float *x,
                            gdn_error *e);

#endif
