/* parity_recur_mode_band: the band of a recurrence case (KDA's forward) in
 * the kernels' numerics mode, from its float32 band (parity_recur_sweep.h:
 * u (8 kappa_G + 64) for a per-channel gate) -- the modes GDN's built-in
 * policy (parity/judge/policy-builtin.json) bands the same way, each limit
 * checked against KDA's own errors, o and ht normwise against the oracle,
 * measured over seeds 1 to 5 at 1,256,2,64 and 1,512,2,128 (Hk 1, --h0,
 * Kimi's gates; token loop, chunked C = 64, affine-prefix D = 4: 30 cases
 * a mode; docs/numerics.md, "KDA numerics modes"):
 *   float32, ieee or highest   the float32 band itself: 6 bf16 passes keep
 *                              float32's products (highest 2.6e-7 to
 *                              2.2e-6, as ieee's 3.4e-7 to 2.2e-6)
 *   float32, high              max(2^-13 = 1.2e-4, float32 band): 3 passes
 *                              drop the lo x lo terms, ~16 bits a product
 *                              (measured 1.2e-5 to 4.5e-5: margin 2.7)
 *   float32, default           max(2^-6 = 1.6e-2, float32 band): every
 *                              operand of every product rounded to
 *                              bfloat16 (measured 2.2e-3 to 6.4e-3:
 *                              margin 2.4)
 *   bfloat16 (any matmul)      max(2^-6, float32 band): q, k, v, beta and
 *                              the scale rounded to bfloat16 (measured
 *                              2.7e-3 to 5.6e-3 with ieee products, to
 *                              6.8e-3 with default: margin 2.3)
 *   float64                    1e-13 (GDN's float64 band; measured 4.0e-16
 *                              to 1.8e-15)
 * Flush-to-zero does not move the band (the inputs and the states are
 * normal: the errors with --ftz were the same bits as without), nor does
 * the xla-expander solve (its errors 0.93x to 1.14x the substitution's on
 * the chunked and affine-prefix cases above, ieee and highest: 60 a solve;
 * docs/numerics.md).  These are
 * GDN's built-in limits (band-float32-high, band-float32-default,
 * band-bfloat16, band-float64), KDA's errors sitting under them by the
 * margins above. */
/* The backward's band (parity_recur_mode_band_grad; the gradients judged
 * normwise per tensor against the VJP oracle, parity_recur_grad.h) follows
 * the mode as GDN's gradient rules do (grad-band-float32-high,
 * grad-band-float32-default, grad-band-bfloat16), from the same float32
 * band as the forward's, each limit checked against KDA's own gradient
 * errors (docs/numerics.md, "KDA backward in the numerics modes": the six
 * gradients of the token loop's, the chunked and the affine-prefix's
 * backward, 1,128,2,32 Hk 1 with D 1 and 2, and 1,512,2,64, seeds 1 to 3):
 *   float32, ieee or highest   the float32 band
 *   float32, high              max(2^-13 = 1.2e-4, float32 band)
 *   float32, default           max(2^-5 = 3.1e-2, float32 band): the
 *                              backward is twice the forward's depth
 *   bfloat16 (any matmul)      max(2^-5, float32 band): the cotangents of
 *                              q, k, v, beta rounded at the casts'
 *                              transposes, the forward's roundings under
 *                              them
 *   float64                    1e-13
 * parity_recur_mode_band_reason says why, in a sentence (grad: the
 * backward's), or NULL where the band is the float32 band itself. */
#ifndef PARITY_RECUR_MODE_BAND_H
#define PARITY_RECUR_MODE_BAND_H

#include "gdn_dtype.h"
#include "kern_config.h"

double parity_recur_mode_band(gdn_dtype dtype, kern_matmul mm, double band_f32);
double parity_recur_mode_band_grad(gdn_dtype dtype, kern_matmul mm, double band_f32);
const char *parity_recur_mode_band_reason(gdn_dtype dtype, kern_matmul mm, int grad);

#endif
