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
 * for any thread count.  On any error `out` is left cleared.
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

/* oracle_kda_vjp certified, its certificate as a tally (oracle_part.h,
 * ORACLE_TALLY_VJP, cap cfg->prec, allocated here; read back by
 * oracle_tally_vjp_certificate): every work item is a (b, key head), so
 * the runs of key-head groups, merged, give the whole run's certificate
 * bit for bit. */
int oracle_kda_vjp_part(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const oracle_vjp_config *cfg, gdn_grads *out, oracle_tally *tally, gdn_error *e);

#endif
