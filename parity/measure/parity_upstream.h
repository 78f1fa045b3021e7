/* parity_upstream: what today's upstream tests would say about a case.
 *
 * Upstream compares a new implementation against a reference implementation
 * (there is no oracle upstream), so these are evaluated on the candidate
 * (affine-prefix) against the stock scan, over every tensor row of
 * parity_tensors together (all must pass):
 *   MaxText unit test      |x - r| <= 1e-6 + 1e-6 |r|          (assert_allclose)
 *   torch.testing float32  |x - r| <= 1e-5 + 1.3e-6 |r|        (assert_close defaults)
 *   torch.testing bfloat16 |x - r| <= 1e-5 + 1.6e-2 |r|
 *   flash-linear-attention ||x - r||_F / ||r||_F < 0.005        (RMS ratio, forward)
 * over o and ht, and with --grad (the gradient rows present), over the
 * gradients as upstream's backward tests hold them:
 *   MaxText gradients      |x - r| <= 1e-5 + 1e-4 |r|          (assert_allclose)
 *   flash-linear-attention gradients  RMS ratio < 0.008 for dq dk dv dh0,
 *                          < 0.02 for dg dbeta (worst figure / limit)
 * `worst_tensor` names the row with the largest figure (the first on ties).
 * An entry whose rows are absent has present = 0 and is not reported.
 */
#ifndef PARITY_UPSTREAM_H
#define PARITY_UPSTREAM_H

#include <stddef.h>

#include "parity_tensor.h"

#define PARITY_UPSTREAM_N 6
#define PARITY_UPSTREAM_AC 4 /* the allclose entries: their figures are maxima over elements */

typedef struct parity_upstream {
  const char *name;
  int present;  /* its tensor rows were measured (the gradient entries: --grad) */
  int pass;
  double worst; /* allclose: the largest |x-r|/(atol+rtol|r|); FLA: the larger RMS ratio */
  const char *worst_tensor; /* a parity_tensors name ("o", "ht") */
} parity_upstream;

/* The evaluation in two steps, for a run streamed by head group: the
 * allclose entries' figures (fig[i][t], each a maximum over the elements,
 * so the maximum of the groups' figures is the whole tensors'), then the
 * verdicts from them and the rel_fro of each row. */
void parity_upstream_figures(const parity_vals x[PARITY_T_N], const parity_vals r[PARITY_T_N],
                             const size_t n[PARITY_T_N], unsigned mask, double fig[PARITY_UPSTREAM_AC][PARITY_T_N]);
void parity_upstream_judge(const double fig[PARITY_UPSTREAM_AC][PARITY_T_N], const double rel_fro[PARITY_T_N],
                           unsigned mask, parity_upstream out[PARITY_UPSTREAM_N]);

/* Per tensor row t in `mask` (PARITY_TENSOR_* bits; rows outside it are
 * not read): x[t], r[t] with n[t] elements (r = the scan) and the rel_fro
 * between them. */
void parity_upstream_evaluate(const parity_vals x[PARITY_T_N], const parity_vals r[PARITY_T_N],
                              const size_t n[PARITY_T_N], const double rel_fro[PARITY_T_N],
                              unsigned mask, parity_upstream out[PARITY_UPSTREAM_N]);

#endif
