/* kern_kda_chunk_vjp: the backward of Kimi Delta Attention's chunked kernel
 * (kern_kda.h's kern_kda_chunk) and of its affine-prefix over D devices
 * (kern_kda_affine), float32 or float64, the gradients of kern_kda_vjp.h
 * (dq dk dv, dg per channel, dbeta, dh0).
 *
 * What it computes: per item (b, key head), the forward is run as the
 * chunked kernel runs it (kern_kda_chunk_tmpl.h's rows, sub-chunked A_kk,
 * solve, w, u, v_new and state update, the same roundings) and the state
 * before every chunk is stored (the chunk-boundary checkpoints); for the
 * affine-prefix, device r's start state is the forward's replayed one,
 * A_cum[r-1] h0 + B_cum[r-1] from the prefix of the devices' folds by
 * cfg->prefix, its pieces by cfg->shard (kern_kda_affine's, through
 * kern_kda_prefix_tmpl.h).  Then each chunk, last first, is taken
 * backwards TOKEN BY TOKEN from its checkpointed start state: the chunk's
 * per-token states are recomputed by the token loop's step
 * (kern_kda_vjp.h's), and its reverse step gives the gradients, with the
 * decays formed as the chunked forward forms its exponentials: from the
 * chunk's per-channel cumulative sum in F (G_0 = g_0, G_i = G_(i-1) + g_i,
 * restarting at each chunk), a_0 = e^(G_0) and a_i = e^(G_i - G_(i-1))
 * (subtract, exp), not e^(g_i).  (The chunkwise algebra -- the backward
 * through A_kk's sub-chunked products, the triangular solve and the
 * w/u/v_new GEMMs as the forward forms them -- is not implemented: the
 * gradients are the token-by-token ones of the chunk's map with those
 * decays, from the chunked forward's boundary states.)  The state's adjoint
 * (dh) is carried right to left across every chunk boundary and, for the
 * affine-prefix, every device boundary: device r's local backward (its
 * chunks from its replayed start state) starts from the adjoint the device
 * after it passed back, and hands its start state's adjoint to device r - 1
 * (the reverse prefix of the state cotangent, sequential); dh0 is the
 * adjoint before token 0.  dg of token t is d loss / d log a_t (log a_t =
 * g_t exactly).
 *
 * Chunk C = min(cfg->chunk, T) (kern_kda_chunk and chunk sharding) or
 * min(cfg->chunk, T / D) (token sharding, D = cfg->devices dividing T, each
 * device's chunk grid starting at its first token).  D = 1 of kern_kda_affine_vjp is
 * kern_kda_chunk_vjp bit for bit (tested).  Modes and refusals: the
 * forward's (kern_kda_frame.h: float32/float64, IEEE products, no packed
 * documents; every prefix schedule and shard mode).  Backward
 * mutants: kern_kda_vjp.h's (dg-value-axis; dh-seam-dropped zeroes dh at
 * each device seam of the affine-prefix).  Memory per thread:
 * O((chunks + C) Hv/Hk Dk Dv + C^2 + Dk^2).  Threads: items in parallel,
 * bit-identical for any thread count.
 */
#ifndef KERN_KDA_CHUNK_VJP_H
#define KERN_KDA_CHUNK_VJP_H

#include "kern_kda_vjp.h"

int kern_kda_chunk_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_config *cfg,
                       kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);
int kern_kda_affine_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);

#endif
