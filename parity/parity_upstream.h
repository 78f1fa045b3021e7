/* parity_upstream: what today's upstream tests would say about a case.
 *
 * Upstream compares a new implementation against a reference implementation
 * (there is no oracle upstream), so these are evaluated on affine-prefix
 * against the stock scan, for o and ht together (both must pass):
 *   MaxText unit test      |x - r| <= 1e-6 + 1e-6 |r|          (assert_allclose)
 *   torch.testing float32  |x - r| <= 1e-5 + 1.3e-6 |r|        (assert_close defaults)
 *   torch.testing bfloat16 |x - r| <= 1e-5 + 1.6e-2 |r|
 *   flash-linear-attention ||x - r||_F / ||r||_F < 0.005        (RMS ratio, forward)
 */
#ifndef PARITY_UPSTREAM_H
#define PARITY_UPSTREAM_H

#include <stddef.h>

#define PARITY_UPSTREAM_N 4

typedef struct parity_upstream {
  const char *name;
  int pass;
  double worst; /* allclose: the largest |x-r|/(atol+rtol|r|); FLA: the larger RMS ratio */
  const char *worst_tensor; /* "o" or "ht" */
} parity_upstream;

/* x_o, r_o: n_o elements; x_ht, r_ht: n_ht elements (r = the scan). */
void parity_upstream_evaluate(const double *x_o, const double *r_o, size_t n_o,
                              const double *x_ht, const double *r_ht, size_t n_ht,
                              double rel_fro_o, double rel_fro_ht,
                              parity_upstream out[PARITY_UPSTREAM_N]);

#endif
