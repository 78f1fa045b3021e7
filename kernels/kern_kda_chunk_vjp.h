/* kern_kda_chunk_vjp: the backward of Kimi Delta Attention's chunked kernel
 * (kern_kda.h's kern_kda_chunk) and of its affine-prefix over D devices
 * (kern_kda_affine), float32 or float64, the gradients of kern_kda_vjp.h
 * (dq dk dv, dg per channel, dbeta, dh0), in two forms with the same frame.
 *
 * The frame: per item (b, key head), the forward is run as the chunked
 * kernel runs it (kern_kda_chunk_tmpl.h's rows, sub-chunked A_kk, solve, w,
 * u, v_new and state update, the same roundings; the solve by substitution
 * whatever cfg->solve, as GDN's kern_vjp re-forms its chunks) and the state before
 * every chunk is stored (the chunk-boundary checkpoints); for the
 * affine-prefix, device r's start state is the forward's replayed one,
 * A_cum[r-1] h0 + B_cum[r-1] from the prefix of the devices' folds by
 * cfg->prefix, its pieces by cfg->shard (kern_kda_affine's, through
 * kern_kda_prefix_tmpl.h).  Then each chunk, last first, is taken
 * backwards from its checkpointed start state, the state's adjoint (dh)
 * carried right to left across every chunk boundary and, for the
 * affine-prefix, every device boundary: device r's local backward starts
 * from the adjoint the device after it passed back and hands its start
 * state's adjoint to device r - 1 (the reverse prefix of the state
 * cotangent, sequential); dh0 is the adjoint before token 0.
 *
 * kern_kda_chunk_vjp_algebra / kern_kda_affine_vjp_algebra (the subjects'
 * backward, parity_recurrence.c): each chunk by the chunkwise algebra
 * (kern_kda_chunk_bwd_tmpl.h), the VJP of the chunk's WY form -- through
 * o = (q e^G) S0 + P v_new, S1 = Diag(e^(G_last)) S0 + (k e^(G_last -
 * G))^T v_new, v_new = A v - A (k e^G) S0, A = (I + L)^-1 Diag(beta) and the
 * per-pair, per-channel decays of L and P -- with the chunk's products as
 * kern_gemm products; dg of token t is the reverse cumulative sum, over the
 * chunk's rows from t on, of the per-channel gradient of G.
 *
 * kern_kda_chunk_vjp / kern_kda_affine_vjp (the token-by-token form, kept
 * as the reference the chunkwise one is measured against): the chunk's
 * per-token states are recomputed by the token loop's step
 * (kern_kda_vjp.h's) and its reverse step gives the gradients, with the
 * decays formed as the chunked forward forms its exponentials: from the
 * chunk's per-channel cumulative sum in F (G_0 = g_0, G_i = G_(i-1) + g_i,
 * restarting at each chunk), a_0 = e^(G_0) and a_i = e^(G_i - G_(i-1))
 * (subtract, exp), not e^(g_i); dg of token t is d loss / d log a_t
 * (log a_t = g_t exactly).  The two forms compute the same gradients
 * (float64: both within 2e-15 of the VJP oracle) with other roundings.
 *
 * Chunk C = min(cfg->chunk, T) (kern_kda_chunk and chunk sharding) or
 * min(cfg->chunk, T / D) (token sharding, D = cfg->devices dividing T, each
 * device's chunk grid starting at its first token).  D = 1 of kern_kda_affine_vjp is
 * kern_kda_chunk_vjp bit for bit (tested).  Modes and refusals: the
 * forward's (kern_kda_frame.h: every compute dtype, matmul mode and ftz,
 * no packed documents; every prefix schedule and shard mode).  Numerics as
 * kern_kda_vjp.h's Modes: the recomputed forward is the forward's (its
 * products, the folds and the prefix in the mode, kda_gemm); the token
 * form's reverse step is kern_kda_vjp.h's; the chunkwise form takes every
 * product (kern_kda_chunk_bwd_tmpl.h) and, in a pass mode, the solve's
 * transpose T^T dT T^T as kda_gemm products in the mode, and K and P by
 * the forward's sub-chunks: each block against earlier sub-chunks (a
 * product in the forward) by its transposed products in the mode, the
 * diagonal sub-chunks (no matmul in the forward) pair by pair in F;
 * bfloat16 rounds the cotangents of v, beta (per token and
 * value head) and of k, q (per value head, q times the scale and rounded
 * again, before the heads are summed in float32).  Float32 ieee and
 * float64 are the bits they were before the modes.  Backward
 * mutants: kern_kda_vjp.h's (dg-value-axis; dh-seam-dropped zeroes dh at
 * each device seam of the affine-prefix; in the chunkwise form
 * dg-value-axis sums the state decay's gradient, S0 . dS1, along the value
 * axis).  Memory per thread: O((chunks + C) Hv/Hk Dk Dv + C^2 + C (Dk + Dv)
 * + Dk^2).  Time per chunk and value head, chunkwise: O(C (Dk + Dv) Dk + C^2
 * (Dk + Dv) + C^3) with C (C + 1) / 2 Dk exps; token by token: O(C Dk Dv)
 * per token, twice (recompute and reverse).  Threads: items in parallel,
 * bit-identical for any thread count.
 */
#ifndef KERN_KDA_CHUNK_VJP_H
#define KERN_KDA_CHUNK_VJP_H

#include "kern_kda_vjp.h"

int kern_kda_chunk_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_config *cfg,
                       kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);
int kern_kda_affine_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);

/* The same gradients with each chunk taken backwards by the chunkwise
 * algebra (kern_kda_chunk_bwd_tmpl.h: the VJP of the chunk's WY form, the
 * triangular solve and the per-channel decays, dg the reverse cumulative sum
 * of the chunk's per-channel dG) instead of token by token: the same
 * checkpoints, carries, modes, refusals and mutants (dg-value-axis sums the
 * state decay's gradient along the value axis).  Other bits than the token
 * form's: the gradients agree within rounding. */
int kern_kda_chunk_vjp_algebra(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                               const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);
int kern_kda_affine_vjp_algebra(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                                const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);

#endif
