/* oracle_kda_vjp: the exact gradients of Kimi Delta Attention's token
 * recurrence (oracle_kda.h) in MPFR, the ground truth of its backward.
 *
 * The loss is gdn_grads.h's, L = sum(do .* o) + sum(dht .* ht); the
 * gradients are a gdn_chgrads.h set: dq, dk (B, T, Hk, Dk) summed over the
 * value heads of a key head (GQA), dv (B, T, Hv, Dv), dbeta (B, T, Hv),
 * dh0 (B, Hv, Dk, Dv) and dg per channel, (B, T, Hv, Dk).
 *
 * The sweep is oracle_vjp.h's (the GDN VJP) operation for operation, with
 * the decay per row of the state: with h' = Diag(a) h_{t-1}, a_i =
 * exp(g_ti) (rounded once per token), kv = h'^T K, delta = beta (v - kv),
 * h_t = h' + K delta^T, o_t = h_t^T Q and S the adjoint of h_t, token t
 * does per value head and column c (each product and sum rounded to p bits;
 * sums over i from i = 0, over columns c in order, over value heads in
 * order):
 *   S_ic += Q_i do_tc;   dQ_i += h_t,ic do_tc
 *   dd_c = sum_i K_i S_ic;   dK_i += S_ic delta_c
 *   dbeta += dd_c (v_tc - kv_c);   dv_tc = beta dd_c
 *   e_c = -(beta dd_c);  dK_i += h'_ic e_c;  S'_ic = S_ic + K_i e_c
 *   dg_i += S'_ic h'_ic                  (per channel i: a sum over columns)
 *   S_ic = a_i S'_ic                     (the adjoint of h_{t-1})
 * then dK, dQ through the preparation as oracle_vjp.h states.  With every
 * a_i equal (all channels of g the head's scalar), every operation but dg's
 * is the GDN VJP's on the same operands: dq, dk, dv, dbeta and dh0 equal
 * oracle_vjp's bit for bit, and sum_i dg_i is GDN's dg up to the rounding of
 * the two different sums (tested).
 *
 * Checkpoints every K tokens (cfg->checkpoint, 0 = ceil(sqrt(T))) as
 * oracle_vjp; memory per thread (ceil(T/K) + K + 2) G Dk Dv MPFR numbers.
 * Certificate as oracle_vjp_certified: the same sweep at P = check_prec (0:
 * p + 64) in lockstep, every gradient element compared (oracle.h's rule),
 * certified[] per tensor in gdn_grad_id order.  Inputs and gate are checked
 * as oracle_kda_run checks them (the token form; no packed documents), the
 * cotangents as oracle_vjp.  Items (b, key head) in parallel; bit-identical
 * for any thread count.  On any error `out` is left cleared.  Progress
 * (cfg->progress, both tiers): the reverse steps, T x the item's value heads
 * per (b, key head) item, as oracle_vjp counts them.
 */
#ifndef ORACLE_KDA_VJP_H
#define ORACLE_KDA_VJP_H

#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "oracle_part.h"
#include "oracle_vjp.h"

/* cert NULL: uncertified.  `out` initialised, allocated here (float64,
 * gdn_chgrads_alloc). */
int oracle_kda_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                   const oracle_vjp_config *cfg, gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e);

/* ------------------------------------------------------------------------
 * The double-double ("dd") tier of the KDA VJP, for long sequences: the
 * sweep above (operations, order, checkpoints) in double-word arithmetic,
 * as oracle_vjp.h's dd tier does it for GDN (the same arithmetic,
 * oracle_dd_arith.h; the same workspace and row loops; the same 128-bit
 * preparation rounded to double-word), with the decay per row: a_i =
 * exp(g_ti) at ORACLE_DD_PREP_PREC bits rounded to double-word, h'_ic =
 * h_ic a_i, S_ic = a_i S'_ic, and dg_i = sum_c S'_ic h'_ic per channel
 * (c ascending).  Each gradient is the hi word of its double-word value.
 * With every a_i of a head equal, every operation but dg's is the GDN dd
 * VJP's on the same operands: dq, dk, dv, dbeta and dh0 equal oracle_vjp_dd's
 * bit for bit (tested).
 *
 * Sums over columns, sample and certificate as oracle_vjp_dd: per item
 * (b, key head), sample_columns contiguous state columns from
 * oracle_dd_sample_start_in are also run by this file's MPFR sweep (on
 * those columns only) at sample_prec bits in lockstep, token by token, and
 * compared, the dd value held exactly, by oracle.h's rule capped at
 * ORACLE_DD_BITS: dv and dh0 on the sampled columns, and the sampled
 * columns' partial sums of dQ, dK (before the preparation's backward), dg
 * (each channel) and dbeta.  certified[] per tensor, certified_bits the
 * minimum, normwise_bits floor(log2(max|r| / max|x - r|)) over the sampled
 * elements, min over tensors.  Not covered: the other columns (the same
 * operations on their own data), the final main + sample additions and the
 * preparation's backward (~2^-100 relative).
 *
 * Range: binary64's; an exp(g) or a value overflowing it fails with
 * GDN_ERR_INPUT naming (b, key head, t).  Checks as oracle_kda_vjp (and the
 * configuration as oracle_vjp_dd's).  Memory per thread: the GDN dd VJP's
 * plus 3 G Dk double-words, and the sample's (ceil(T / K) + K + 2) G Dk ns
 * MPFR numbers.  Items in parallel; bit-identical for any thread count.
 * cert required; on error `out` cleared and `*cert` zeroed. */
int oracle_kda_vjp_dd(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                      const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e);

/* Testing hook (not thread-safe; set between runs), as
 * oracle_vjp_dd_test_plant: every later KDA dd run adds rel * hi to adjoint
 * element (0, col) of value head jj of item (b, kh) right after token t's
 * reverse step, until called with col < 0.  For the certificate's negative
 * control only. */
void oracle_kda_vjp_dd_test_plant(int64_t b, int64_t kh, int64_t jj, int64_t col, int64_t t, double rel);
/* oracle_kda_vjp certified, its certificate as a tally (oracle_part.h,
 * ORACLE_TALLY_VJP, cap cfg->prec, allocated here; read back by
 * oracle_tally_vjp_certificate): every work item is a (b, key head), so
 * the runs of key-head groups, merged, give the whole run's certificate
 * bit for bit. */
int oracle_kda_vjp_part(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const oracle_vjp_config *cfg, gdn_grads *out, oracle_tally *tally, gdn_error *e);
/* oracle_kda_vjp_dd with its certificate as a tally (ORACLE_TALLY_VJP_DD,
 * cap ORACLE_DD_BITS, allocated here; the six sampled accumulators, empty
 * with no sample; read back by oracle_tally_vjp_dd_certificate, whose
 * assembly is this tier's): key-head groups placed by cfg->head0 in a run
 * of cfg->whole_hv value heads sample the whole run's columns, so their
 * tallies merged give its certificate bit for bit.  On error the tally is
 * emptied, failed_head the failing item's b Hk + kh. */
int oracle_kda_vjp_dd_part(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_tally *tally, gdn_error *e);

#endif
