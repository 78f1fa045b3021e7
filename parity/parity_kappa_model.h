/* parity_kappa_model: the per-element error scale of a correct float32
 * chunked evaluation, from the dominant error source the kappa_G finding
 * names (parity_kappa.h, docs/tolerance.md "The error model").
 *
 * A correct chunked implementation computes G, the cumulative sum of g
 * inside each chunk, in float32; in whatever order it sums (sequential,
 * pairwise, Hillis-Steele, Blelloch), fl(G_i) = G_i + eps_i with |eps_i|
 * about u |G_i|, and every decay exp(G_i - G_j) keeps that error.  To first
 * order the outputs move by J eps (J: the chunked function's derivative
 * with respect to G).  In exact arithmetic the chunked function depends on
 * g only through G, so a perturbation eps of G is a perturbation of g
 * (delta g_i = eps_i - eps_{i-1} inside a chunk, eps_{-1} = 0): J eps is
 * the float64 scan's output on the perturbed gates minus its output on g.
 *
 * The model draws eps_i = A u_G |G_i| z_i with z_i = +-1 (seeded by the
 * token's place: b, t, value head; A = PARITY_MODEL_AMP keeps the
 * perturbation far above float64's and g's float32 rounding, and every
 * difference is divided by A again: first order), PARITY_MODEL_SAMPLES
 * times, and sets per element
 *     s_e^2 = (mean over samples of (J eps)_e^2 + the same over e's row) / 2
 * an estimate of the variance of element e's error if each G_i were off by
 * an independent +-u|G_i| (the row, the last axis: a token's vector of one
 * head, or a row of a state; shrinking toward it keeps an element whose few
 * draws happen to be small from getting a scale far below its own).  So s_e follows each element's own sensitivity:
 * large where o is a cancellation of strongly decayed terms, tiny with
 * slow gates (|G| < 1).  Rows and blocks pool it as sqrt(sum s_e^2).
 * With cotangents the float64 backward of the scan (kern_scan_vjp) gives
 * the gradients' s the same way.  Deterministic (fixed signs, float64
 * kernels deterministic for any thread count); per value head, so a head
 * group computes its heads' part exactly as the whole run does (head0:
 * the group's first value head in the whole tensor, for the signs).
 * Cost: 1 + PARITY_MODEL_SAMPLES float64 scans (and backwards).
 */
#ifndef PARITY_KAPPA_MODEL_H
#define PARITY_KAPPA_MODEL_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "parity_tensor.h"

#define PARITY_MODEL_SAMPLES 8
#define PARITY_MODEL_AMP 16.0

typedef struct parity_model {
  double *s[PARITY_T_N]; /* per element of each tensor row (its layout); NULL: not modelled */
  int64_t chunk;
  double u_g;
} parity_model;

void parity_model_init(parity_model *m);
void parity_model_clear(parity_model *m);

/* s of o and ht (and with ct non-NULL of the six gradients) for inputs in
 * with chunk size C, G's rounding u_g (2^-24 for float32 and bfloat16
 * compute).  head0: the first value head of in within the whole run. */
int parity_model_compute(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, double u_g,
                         int64_t head0, gdn_error *e);

/* The sign z_i of sample k at (b, t, value head h): +1 or -1. */
double parity_model_sign(int k, int64_t b, int64_t t, int64_t h);

#endif
