/* parity_kappa: the condition measure of the chunked algorithm's decays.
 *
 * The stock chunked scan (MaxText's jax_chunk_gated_delta_rule, modelled by
 * kern_scan) forms G = cumsum(g) inside each chunk of C tokens in float32
 * and takes every decay as exp(G_i - G_j) (and exp(G_i) for the state the
 * chunk starts from).  fl(G_i) carries an absolute error of about u |G_i|,
 * which the subtraction keeps while G_i - G_j itself is small: every decay
 * into token i gets a relative error of about u |G_i|, except the token's
 * own term (decay exactly 1).  With g = -80 on 5 % of tokens and slow gates
 * elsewhere |G| reaches 480 and the float32 scan lands at 247u (docs/tolerance.md,
 * finding (a)): the algorithm's own error, not a kernel defect.  The
 * policy's bands follow it through a rule's "kappa_g_u" (parity_policy.h).
 *
 * Per token i of a chunk (G as below, in binary64 from there on):
 *   s_i = sum_{j < i} exp(G_i - G_j) + exp(G_i)     (decay mass that carries the error;
 *                                                      s_0 = exp(G_0), s_i = exp(G_i - G_{i-1}) (s_{i-1} + 1))
 *   m_i = |G_i| s_i / (1 + s_i)                      (|G_i| times that mass's share)
 * and per tensor:
 *   o:  kappa = sqrt(mean of m_i^2 over b, t, h)    (rel_fro is normwise)
 *   ht: kappa = max over (b, h) of sum_j W_j m_j / sum_j W_j, W_j = exp(g_{j+1} + ... + g_{T-1})
 *       (the final state weighs token j by its decay to the end; accumulated
 *       forward as A <- exp(g_t) A + m_t, B <- exp(g_t) B + 1)
 * Fast-forgetting gates (the model's initial ones) give large |G| but small
 * s_i (a decay exp(g) with g around -4 is 0.02): kappa 10 to 16 for o, under
 * 10 for ht, so the constant bands stay; slow gates give |G| < 1.
 *
 * G is computed exactly as kern_chunk_tmpl.h forms it for float32 and
 * bfloat16 compute: chunks of C tokens from t = 0 (affine-prefix shards are
 * whole chunks, so they see the same chunks), g as stored (float32), 0 for
 * padding tokens (segment id 0), G_0 = g_0 and G_i = fl32(G_{i-1} + g_i)
 * left to right, each sum rounded to nearest float32.  (XLA's cumsum may
 * associate differently; the measure then moves by about C u relative.)
 * Everything after G is binary64 with libm's exp: a measure, not a bound,
 * good to a few digits.  Resets (packing = reset) zero decays across a
 * boundary; the measure ignores that (it can only overstate).  NaN in g
 * gives NaN (and every band that follows it then fails, as it must).
 * O(B T Hv), no allocation. */
#ifndef PARITY_KAPPA_H
#define PARITY_KAPPA_H

#include <stdint.h>

#include "gdn_inputs.h"
#include "parity_xsum.h"

typedef struct parity_kappa {
  double o, ht; /* 0 for T = 0; NaN for C < 1 or NaN gates */
} parity_kappa;

/* kappa of `in` with chunk size C. */
parity_kappa parity_kappa_g(const gdn_inputs *in, int64_t C);

/* The same accumulated over head groups (parity_stream.h): add each group's
 * inputs (any order, any split; accumulators may be merged), then the value
 * is parity_kappa_g's of the whole inputs bit for bit -- o's mean of
 * squares is summed exactly (parity_xsum.h), ht is a maximum. */
typedef struct parity_kappa_acc {
  parity_xsum sq;
  double ht;
  int64_t n;
  int bad; /* C < 1 */
} parity_kappa_acc;
void parity_kappa_acc_init(parity_kappa_acc *a);
void parity_kappa_acc_add(parity_kappa_acc *a, const gdn_inputs *in, int64_t C);
void parity_kappa_acc_merge(parity_kappa_acc *a, const parity_kappa_acc *b);
parity_kappa parity_kappa_acc_value(const parity_kappa_acc *a);

#endif
