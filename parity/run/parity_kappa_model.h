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
 * The model takes eps_i independent, of size u_G |G_i| with a random sign,
 * and wants each element's variance Var_e = sum_i J_ei^2 (u_G |G_i|)^2.
 * It probes it with PARITY_MODEL_SAMPLES colours: probe k moves the tokens
 * i with (i mod C) mod SAMPLES = k, by eps_i = A u_G |G_i| z_i (z_i = +-1
 * seeded by the token's place: b, t, value head; A = PARITY_MODEL_AMP keeps
 * the move far above float64's and g's float32 rounding, and every
 * difference is divided by A again: first order), and
 *     s_G,e^2 = sum over probes of (J eps^(k))_e^2
 * which is Var_e up to the cross terms of tokens SAMPLES apart in one probe
 * (with fast gates, which make the G term large, decays over 8 tokens are
 * e^-30; with random signs their mean is 0).  Colouring matters: an element
 * of a fast-gated token depends on G_t - G_{t-1} alone, and random signs
 * on all tokens at once would give it 0 in half the draws.  Each element's
 * s^2 is then lifted toward its row's mean (the last axis: a token's vector
 * of one head, or a row of a state): s^2 = max(own, (own + row) / 2).
 * The tree probes: a tree-shaped cumsum (Blelloch's down-sweep, pairwise,
 * Hillis-Steele) rounds one partial sum that a whole subtree of tokens then
 * shares, so its G errors are correlated over blocks, and a state's sum over
 * many slow-gated tokens adds them coherently (the token probes, independent
 * per token, add them in quadrature: Blelloch with g = -10 spikes reached
 * 0.96 of the element rule on ht at T 1024, Dk 128).  For each block size
 * W = 2, 4, .. < C one probe moves every aligned block [s, s + W) of a chunk
 * (s past the chunk's start) by one shared eps_b = A u_G |G_{s-1}| z_b (the
 * prefix handed to the block), and its square adds to s_G,e^2 as a token
 * probe's does.
 * The arithmetic's own part: the float32 evaluation's rounding errors are
 * another correct implementation's only in their pattern, not in their
 * size, which follows each element's cancellation.  PARITY_MODEL_ARITH
 * samples of it: q, k, v moved by a few float32 steps (relative 2^-21,
 * seeded signs), the case's float32 scan minus the binary64 scan on the
 * same moved inputs (so the change of the problem cancels and only the
 * rounding remains, in another pattern each time: Monte Carlo arithmetic
 * by input perturbation); their mean square per element adds to s_e^2:
 *     s_e^2 = s_G,e^2 + s_arith,e^2
 * before the lift toward the row (above) is applied to the sum.
 * With cotangents the float64 backward of the scan (kern_scan_vjp) gives
 * the gradients' s the same way, and dg gets one part more, its own sums
 * in any order: dg_i = sum_{m >= i} dG_m inside a chunk, each dG_m a sum
 * of decay terms that cancel (with fast gates the state's decay terms of
 * a chunk's last tokens cancel to 1e-9 of their size, and an
 * implementation that masks the attention's decay after the exponential,
 * as JAX's and transformers' do, differentiates exp(G_m - G_m) = 1 on both
 * sides: two terms that cancel exactly, rounded apart first).  Sampling
 * our own arithmetic sees neither: our sums are in one order and our
 * kernel takes the diagonal decay as the constant 1 (jax.vjp of a correct
 * chunked function reached 43 of the model's sigmas on one dg token
 * without this part).  kern_scan_vjp_terms gives the root sum of squares
 * of those terms per token, r_i (kern_vjp_tmpl.h, vj_decay_terms), and
 *     s_dg,i^2 += (PARITY_MODEL_TERMS u_g r_i)^2
 * is the size of their rounding with independent errors in any order.
 * The underflow part: a correct float32 implementation may flush
 * subnormal results to zero (TPUs do, and XLA on the CPU), and where it
 * does not, a subnormal result keeps only an absolute precision.  Either
 * way a result below eta, the format's smallest normal (2^-126 for float32
 * and bfloat16, 2^-1022 for float64), may be off by up to eta whatever its
 * size: an absolute error that the relative parts above, and sampling our
 * own arithmetic, do not see where another order flushes other
 * intermediates (a gradient that flows through e^-80, dh0 of a sequence
 * whose first token's gate is -80, is about 100 eta, and the WY products
 * associated the other way flush 3.6 times the stock order's error there).
 * A chunked evaluation reduces each element over the C tokens of a chunk,
 * each token's term one intermediate that may flush, so with independent
 * signs every element gets
 *     s_eta,e^2 = C eta^2
 * added to s_e^2 before the lift toward the row.  The factors that multiply
 * a flushed intermediate afterwards (normalised q and k, beta, decays <= 1,
 * the cotangents) are taken as O(1).  Beside an element of normal size it
 * is nothing (8 eta = 9.4e-38 at C 64), so no planted error of today moves.
 * None in binary64 compute (eta^2 = 2^-2044 is below binary64's range, and
 * binary64 compute is not what the model is for).
 * Deterministic (fixed signs, float64 kernels deterministic for any
 * thread count); per value head, so a head group computes its heads' part exactly as the whole run does (head0:
 * the group's first value head in the whole tensor, for the signs).
 * Cost: 1 + PARITY_MODEL_SAMPLES + ceil(log2 C) - 1 + PARITY_MODEL_ARITH float64 scans and
 * PARITY_MODEL_ARITH scans in the case's numerics (and their backwards),
 * and up to 3 float64 scans more where chunks are padded
 * (parity_model_compute_layouts).
 */
#ifndef PARITY_KAPPA_MODEL_H
#define PARITY_KAPPA_MODEL_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "kern_config.h"
#include "parity_tensor.h"

#define PARITY_MODEL_SAMPLES 8
#define PARITY_MODEL_ARITH 4
#define PARITY_MODEL_AMP 16.0
/* dg's own sums (above): u r_i with r_i the root sum of squares of the
 * terms; jax.vjp's measured dg errors were 0.3 to 0.4 of it where it
 * dominates (docs/tolerance.md). */
#define PARITY_MODEL_TERMS 1.0

typedef struct parity_model {
  double *s[PARITY_T_N]; /* per element of each tensor row (its layout); NULL: not modelled */
  int64_t chunk;
  double u_g;
} parity_model;

void parity_model_init(parity_model *m);
void parity_model_clear(parity_model *m);

/* s of o and ht (and with ct non-NULL of the six gradients) for inputs in
 * with chunk size C, G's rounding u_g (2^-24 for float32 and bfloat16
 * compute), and with acfg non-NULL the arithmetic's part under those
 * numerics (acfg's dtype, matmul, ftz; one device, no mutant).  head0: the
 * first value head of in within the whole run. */
int parity_model_compute(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, double u_g,
                         const kern_config *acfg, int64_t head0, gdn_error *e);

/* The same with the device counts the case runs on (token sharding: each
 * device holds T / D tokens, chunked from its own start; NULL or 0: one
 * device): where a device's piece (or the sequence) is not a multiple of C
 * its last chunk is padded, and the chunk-end G_L that decays the state,
 * exp(G_L) and exp(G_L - G_i), is an implementation's own number there (a
 * tree cumsum's total, or a separate sum of g), rounded apart from the
 * last real token's G: its error, about u_g |G_L| with G_L the padded
 * chunk's sum of g, scales the state after that token independently.
 * Probed twice for the ends before the last token (alternate ends: the
 * state after t scaled by moving g_{t+1}) and once, exactly, for the last
 * token's (ht scaled; with ct the backward of dht scaled). */
int parity_model_compute_layouts(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C,
                                 double u_g, const kern_config *acfg, int64_t head0, const int64_t *devices,
                                 size_t n_devices, gdn_error *e);

/* The heap parity_model_compute holds at its peak beside the kernels'
 * scratch (binary64 kernels: at most twice the float32 scratch), and
 * whose s (a third) the sweep keeps for a chunk size: parity_budget. */
size_t parity_model_bytes(const gdn_shape *s, int grads);

/* eta of the underflow part: the smallest normal of the compute format
 * dt, 2^emin (gdn_dtype_emin). */
double parity_model_eta(gdn_dtype dt);

/* The sign z_i of sample k at (b, t, value head h): +1 or -1. */
double parity_model_sign(int k, int64_t b, int64_t t, int64_t h);

#endif
