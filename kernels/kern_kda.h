/* kern_kda: the float implementations of Kimi Delta Attention under test.
 *
 * The recurrence (oracle/oracle_kda.h states it; these never read the
 * oracle) takes a gdn_inputs (q, k, v, beta, h0, scale, L2 norm) and a
 * per-channel gate (gdn_chgate.h, g of shape (B, T, Hv, Dk)):
 *   S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,
 *   o_t = S_t^T (scale q_t).
 *
 *   kern_kda_recurrent  the token loop (flash-linear-attention's
 *                       naive_recurrent_kda): per token S = S * exp(g_t)
 *                       along the key axis (rows), kv = k^T S, delta =
 *                       beta (v - kv), S = S + k delta^T, o = (scale q)^T S;
 *                       the steps, kernels and roundings of kern_recurrent
 *                       (kern_recurrent_tmpl.h) with the decay per row, so
 *                       with every channel's g equal to the head's scalar g
 *                       it equals kern_recurrent bit for bit (tested).
 *   kern_kda_chunk      the chunked algorithm (naive_chunk_kda and fla's
 *                       chunked kernels), chunk C = cfg->chunk (64 by
 *                       default), T zero-padded to whole chunks: within a
 *                       chunk G = the per-channel cumulative sum of g (in
 *                       F, left to right); the intra-chunk products
 *                       A_kk[i,j] = beta_i sum_d k_i[d] k_j[d] e^(G_i[d] - G_j[d])
 *                       and P[i,j] = sum_d q_i[d] k_j[d] e^(G_i[d] - G_j[d])
 *                       formed by sub-chunks of KERN_KDA_SUB = 16 rows as
 *                       fla's Triton kernels form them: for rows i of
 *                       sub-chunk I and j of an earlier sub-chunk J, against
 *                       the reference row r = I's first row,
 *                       (x_i e^(G_i - G_r)) . (k_j e^(G_r - G_j)), every
 *                       exponent <= 0 (the exponentials stay in (0, 1]);
 *                       inside a sub-chunk each element with its own
 *                       e^(G_i[d] - G_j[d]).  Then (I + A_kk)^-1 by
 *                       cfg->solve -- forward substitution (fla's), or
 *                       XLA's TriangularSolveExpander (kern_solve_xla.h,
 *                       GDN's function) on the chunk's whole n x n matrix:
 *                       the sub-chunks only form A_kk's entries, and a JAX
 *                       port calling solve_triangular on the chunk's block
 *                       hands the expander that matrix (C <= 128: one
 *                       diagonal block; the last chunk's n rows solve as
 *                       the chunk padded to C would) --, the columns
 *                       scaled by beta (fla's order, one product each,
 *                       after the solve with right-hand side I as
 *                       MaxText's GDN solves), w = A (e^G k), u = A v, and per chunk
 *                       v_new = u - w S, o = (q e^G) S + P v_new,
 *                       S = e^(G_last) S (per row) + (k e^(G_last - G))^T v_new.
 *   kern_kda_affine     context parallelism over D = cfg->devices simulated
 *                       devices, as kern_affine_prefix for GDN (kern.h),
 *                       its pieces GDN's (kern_affine_piece, cfg->shard):
 *                       tokens, device r holds [r T/D, (r+1) T/D) (D
 *                       divides T), chunked from its own first token; or
 *                       chunks, whole chunks of the unsharded grid by
 *                       array_split (D <= the chunk count).  It folds its
 *                       chunks into
 *                       S_out = A_r S_in + B_r, per chunk
 *                         A_n = Diag(e^G_last) - (k e^(G_last - G))^T W,
 *                         B_n = (k e^(G_last - G))^T U
 *                       (the map stays affine in the state: only A_n's
 *                       diagonal differs from GDN's scalar e^G_last I); the
 *                       inclusive prefix of the D pairs is taken by
 *                       cfg->prefix with GDN's schedules and composition
 *                       (kern_prefix_inclusive, kern_affine_apply: IEEE
 *                       products; kern_kda_prefix_tmpl.h), device r >= 1
 *                       replays its chunks from A_cum[r-1] h0 + B_cum[r-1]
 *                       with kern_kda_chunk's body, and ht is
 *                       A_cum[D-1] h0 + B_cum[D-1].  D = 1 is
 *                       kern_kda_chunk bit for bit in either shard mode;
 *                       the sequential schedule computes what the inline
 *                       sequential composition computed before the
 *                       schedules (the same bits, measured).
 *
 * Numerics (kern_num.h): compute dtype float32, bfloat16 or float64, the
 * matrix products in cfg->matmul.  IEEE (plain fused multiply-adds, left
 * to right over the inner dimension) is what these kernels computed before
 * the modes, bit for bit.  The pass modes (default, high, highest,
 * kern_mm.h) take every product the kernels make as a matmul through GDN's
 * kern_mm: the token loop's k^T h, k delta^T and q^T h (as kern_recurrent);
 * the chunked kernel's products (kda_gemm: the blocks of earlier
 * sub-chunks of A_kk and P, w, u, w S, (q e^G) S, P v_new, the state
 * update, the folds) -- inside a diagonal sub-chunk the per-element decays
 * e^(G_i[d] - G_j[d]) leave no matmul, and those sums stay float32; the
 * affine-prefix composes in the mode (kern_prefix.h).  bfloat16 compute is
 * the float32 kernels with kern_num's input rounding points (KERN_RP_INPUT,
 * KERN_RP_Q_SCALE: q, k, v, beta and the scale in bfloat16); g, G, the
 * decays, the solve and the state stay float32 (KDA has no MaxText form to
 * take further rounding points from).  FTZ as kern_num.h.  The backwards
 * (kern_kda_vjp.h, kern_kda_chunk_vjp.h) take every mode (their Modes).
 * The solve (cfg->solve) changes only the chunked forward's (I + A_kk)^-1:
 * the token loop has none and ignores it, as GDN's kern_recurrent does, and
 * the backwards re-form the chunk by substitution under either, as GDN's
 * kern_scan_vjp does (its recomputed forward is the substitution's; a JAX
 * gradient is judged against the oracle, not compared bitwise).
 * Packed documents (segment ids) are refused.  o is rounded once to the
 * output dtype (kern_output_dtype).  Results are bit-identical for any
 * thread count (the B x Hv heads are independent items).
 *
 * Mutants (testing only: the bugs a KDA port makes, to show the harness
 * catches them; "both" = the token loop and the chunked kernels):
 *   gate-value-axis      exp(g_t) along the value axis of the state
 *                        (columns: S = S Diag(exp(g_t)), channel d of the
 *                        gate on column d mod Dk) instead of the key axis;
 *                        the token loop per token, the chunked kernels on
 *                        the state carried between chunks
 *   gate-after-update    the token loop decays the state after the delta
 *                        update instead of before it (kv read from the
 *                        undecayed state)
 *   gate-other-head      value head hv reads the gate of value head
 *                        (hv + 1) mod Hv (both; nothing changes at Hv = 1)
 *   cumsum-across-chunks the chunked kernels' per-channel cumulative sum G
 *                        carried from one chunk into the next instead of
 *                        restarting at each chunk (within a device's piece)
 *   subchunk-off-by-one  the chunked kernels' blocks of earlier sub-chunks
 *                        one row short: row r - 1 of A_kk and P (the last
 *                        row before a sub-chunk) left out
 */
#ifndef KERN_KDA_H
#define KERN_KDA_H

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"

#define KERN_KDA_SUB 16

typedef enum kern_kda_mutant {
  KERN_KDA_MUTANT_NONE = 0,
  KERN_KDA_MUTANT_GATE_VALUE_AXIS = 1,
  KERN_KDA_MUTANT_GATE_AFTER_UPDATE = 2,
  KERN_KDA_MUTANT_GATE_OTHER_HEAD = 3,
  KERN_KDA_MUTANT_CUMSUM_ACROSS_CHUNKS = 4,
  KERN_KDA_MUTANT_SUBCHUNK_OFF_BY_ONE = 5,
  KERN_KDA_MUTANT_COUNT
} kern_kda_mutant;

/* "none", "gate-value-axis", ... (above); NULL out of range.  (The
 * harness's names are the recurrence table's, parity_recurrence.c, in the
 * same order.) */
const char *kern_kda_mutant_name(kern_kda_mutant m);

int kern_kda_recurrent(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg,
                       kern_kda_mutant mutant, gdn_outputs *out, gdn_error *e);
int kern_kda_chunk(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg,
                   kern_kda_mutant mutant, gdn_outputs *out, gdn_error *e);
int kern_kda_affine(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg,
                    kern_kda_mutant mutant, gdn_outputs *out, gdn_error *e);

#endif
