/* kern_vjp: the backward pass of the float kernels -- what reverse-mode
 * autodiff of the stock chunked scan and of the affine-prefix form computes,
 * derived by hand, in the compute dtype (gdn_grads.h: the loss, the
 * cotangents, the gradients and their shapes).
 *
 *   kern_scan_vjp            the backward of kern_scan: the forward scan is
 *                            recomputed storing the state entering every
 *                            chunk (what JAX's lax.scan keeps as its
 *                            residual), then the chunks are taken backwards,
 *                            each chunk's forward recomputed from the inputs
 *                            (kern_vjp_tmpl.h lists every step and rounding).
 *   kern_affine_prefix_vjp   the backward of kern_affine_prefix over
 *                            cfg->devices simulated devices, each holding
 *                            kern_affine_piece's piece in cfg->shard's mode
 *                            (tokens: T/D tokens chunked per device, padding
 *                            at every seam; chunks: array_split), the prefix
 *                            schedule cfg->prefix.
 *                            The forward is recomputed: every device's fold
 *                            (A_loc, B_loc), then the inclusive prefix by the
 *                            schedule's own compositions x[l] = x[l] o x[e]
 *                            in its order (read from kern_prefix_inclusive's
 *                            trace, so the pairing is the forward's), each
 *                            overwritten pair kept in an undo log; every
 *                            device's incoming state h_in = A_cum[r-1] h0 +
 *                            B_cum[r-1] (h0 for r = 0).  Backwards: each
 *                            device's replay is taken back from a zero
 *                            adjoint at its end (its carry is not an output:
 *                            the next device starts from the prefix) to the
 *                            adjoint dh_in of h_in; dht enters dA_cum[D-1] =
 *                            dht h0^T, dB_cum[D-1] = dht, dh0 =
 *                            A_cum[D-1]^T dht; then for r = D-1 .. 1
 *                            dA_cum[r-1] += dh_in h0^T, dB_cum[r-1] +=
 *                            dh_in, dh0 += A_cum[r-1]^T dh_in; dh0 +=
 *                            dh_in[0].  The prefix is taken back operation by
 *                            operation in reverse, undoing each: with (A',
 *                            B') = (A_l A_e, A_l B_e + B_l), dA_e += A_l^T
 *                            dA', dB_e += A_l^T dB', dA_l = dA' A_e^T + dB'
 *                            B_e^T, dB_l = dB' -- the reverse prefix of the
 *                            adjoint maps A^T, in the schedule's pairing
 *                            (for SEQUENTIAL, dA_loc[r] = dA_cum[r]
 *                            A_cum[r-1]^T + dB_cum[r] B_cum[r-1]^T).  Then,
 *                            from the last device to the first, the fold is
 *                            recomputed storing the
 *                            accumulated pair before each chunk, as
 *                            jax.checkpoint on compose_local does, and
 *                            taken backwards: with (A', B') = (A_n A, A_n B
 *                            + B_n), dA_n = dA' A^T + dB' B^T, dB_n = dB',
 *                            dA = A_n^T dA', dB = A_n^T dB'.  A chunk's two
 *                            uses (the replay's body and the fold's map) add
 *                            their adjoints of U, W, Kt, exp(G_last) before
 *                            one backward of the chunk's preparation (the
 *                            chunk quantities are computed once and used
 *                            twice, as in MaxText's gdn_cp).  The final state
 *                            is A_cum[D-1] h0 + B_cum[D-1]: dht enters there.
 *                            D = 1 is kern_scan_vjp (the unsharded path).
 *
 * What is and is not JAX's arithmetic: the structure is reverse mode's (each
 * primitive's transpose, the residuals lax.scan keeps, the fold recomputed
 * under jax.checkpoint, cotangents of a value used twice added), in the
 * compute dtype and matmul mode, so the error is of the size autodiff's
 * is.  The order in which JAX adds cotangents and its transpose of
 * solve_triangular (a second triangular solve, where this uses -A^T dA A^T
 * with the explicit inverse the forward formed) are not reproduced bit for
 * bit: a JAX gradient is judged against the oracle with the same rules,
 * not compared bitwise with these.
 *
 * Grouped heads: q and k of a key head are read by Hv / Hk value heads; their
 * gradients (with respect to the prepared rows) are summed over those value
 * heads in order, in F, then taken back through the preparation once per
 * token (kern_vjp_tmpl.h, vj_rows_back).  Every product is kern_mm in the
 * config's matmul mode (JAX's transposed dots keep the forward dot's
 * precision).
 *
 * Modes: compute dtype float32, bfloat16 or float64, every matmul mode
 * (float64 ignores it), ftz as configured, every prefix schedule.  Not
 * implemented (refused with GDN_ERR_INPUT naming the mode): a forward
 * mutant (kern_mutant.h; the backward rows, grad-seam-stopped, are honoured
 * by kern_affine_prefix_vjp: no dh_in of a device r >= 1 enters the prefix;
 * kern_scan_vjp ignores them).  Gradients are float32 values (dtype FLOAT32) for float32
 * and bfloat16 compute, float64 for float64.
 *
 * Compute dtype bfloat16: what JAX's reverse mode of the bfloat16 forward
 * (kern_num.h's rounding points) computes, with XLA's TPU arithmetic: the
 * cotangent of a bfloat16 value is a bfloat16 value; a bfloat16 op's
 * transpose is computed in float32 and rounded once to bfloat16 (a dot of
 * two bfloat16 operands accumulates in float32, kern_mm's single pass); the
 * transpose of a cast bfloat16 -> float32 (the promotions where a bfloat16
 * value meets a float32 one) rounds the float32 cotangent to bfloat16; the
 * transpose of a cast float32 -> bfloat16 is exact; cotangents of a value
 * used twice are added in bfloat16 (rn(a + b), in the order below).  rn is
 * round to nearest even (gdn_bf16_round).  The recomputed forward rounds
 * at kern_num.h's points (KERN_RP_*: q, k after the norm, v, beta, the
 * scale and q scale, k beta, v beta, KK = (k beta) K^T, QK = q K^T, U, W),
 * so U, W, attn and the map are the forward's values.  The backward's
 * rounding points, per chunk (kern_vjp_tmpl.h's names; everything else --
 * the adjoint state dh, dattn, dqg, dKt, dA, dS, the decays, dG, dg, the
 * fold, the prefix and their adjoints -- is float32, as g and the state
 * are):
 *   dU      each use's cotangent (body: dvnew; map: Kt dB_n) rounded, the
 *           uses added in bfloat16: dU = rn(dU + rn(use)) -- as jax.grad
 *           does for a bfloat16 value promoted at two uses (checked, jax
 *           0.10.2 jitted on XLA CPU: rn(rn(c1) + rn(c2)) on every element).
 *           This costs the affine form accuracy the scan (one use)
 *           keeps: dbeta 2.57x the scan's error at Dk = 128 with the
 *           initial gates, where dht reaches the last chunk's U through the
 *           fold (docs/gradients.md)
 *   dW      likewise (body: -dvnew h^T; map: -Kt dA_n)
 *   dQK     rn(dattn .* dec below, dattn on the diagonal): QK's cotangent
 *   dKK     rn(dS .* dec): KK's cotangent (its .astype(float32) taken back)
 *   dvb     rn(A^T dU)                 (A vb.astype(f32) taken back)
 *   dkb     rn(dkbg .* eG), then dkb = rn(dkb + rn(dKK K))
 *   dq      rn(dQK K), then dq = rn(dq + rn(dqg .* eG)); per value head
 *           then rn(dq * scale) (q scale is a bfloat16 multiply) before the
 *           heads are summed in float32 (GQA's repeat is of the float32
 *           inputs, before the cast)
 *   dk      rn(dQK^T q), += rn(dKt .* eGl), += rn(dKK^T kb), += rn(dkb .*
 *           beta), each += in bfloat16
 *   dv      rn(dvb .* beta)
 *   dbeta   rn(rn(sum_d rn(dvb_d v_d)) + rn(sum_d rn(dkb_d k_d))): each
 *           product rounded (the bfloat16 multiply's transpose), the sum
 *           over the broadcast row in float32 (d ascending), rounded once
 * Then the casts' transposes (exact) and the L2 norm's backward in float32
 * (the norm is in the input dtype, before the cast).  dO and dht are float32
 * (o and the state are float32).  Not reproduced: JAX's order of adding
 * cotangents and whether XLA fuses a convert pair away; the error is of
 * bfloat16 size either way, and a JAX gradient is judged against the
 * oracle, not bitwise against these.
 *
 * Threads: items are (b, key head), each computing its value heads in order;
 * every value is computed by the same operations whatever the thread count:
 * bit-identical for any thread count.
 *
 * Memory besides `out`, per thread (items run one per thread): the chunk
 * scratch O(C^2 + C (Dk + Dv)), kern_gemm's workspace, and
 *   scan    N (Dk Dv) states, N = ceil(T / C) -- the lax.scan residual
 *   affine  m (Dk Dv) replay states and m (Dk^2 + Dk Dv) fold pairs for the
 *           device being taken backwards (m its chunk count), 6 D (Dk^2 +
 *           Dk Dv) for the folds, the prefix and their adjoints, 2 D Dk Dv
 *           for the incoming states and their adjoints, and the undo log,
 *           one pair per composition of the schedule (D - 1 sequential,
 *           < 2D associative scan, D log2 D Hillis-Steele).
 * Everything in F.  Errors: GDN_ERR_INPUT for a bad shape, config, mode or
 * cotangent; GDN_ERR_NOMEM when an allocation fails.  On any error `out` is
 * left cleared.
 */
#ifndef KERN_VJP_H
#define KERN_VJP_H

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "kern_config.h"

int kern_scan_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                  gdn_grads *out, gdn_error *e);
int kern_affine_prefix_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                           gdn_grads *out, gdn_error *e);

/* kern_scan_vjp, and with dg_terms non-NULL (B x T x Hv doubles, the
 * caller's) dg's componentwise size beside dg: for each token and value
 * head the root sum of squares of every term dg's sums add (the decays'
 * and the cumsum's transposes, with the attention's diagonal decays that
 * other implementations differentiate; kern_vjp_tmpl.h, vj_decay_terms),
 * so that a rounding of those sums in any order with independent errors
 * errs by about u dg_terms.  The gradients' bits are kern_scan_vjp's. */
int kern_scan_vjp_terms(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                        gdn_grads *out, double *dg_terms, gdn_error *e);

#endif
