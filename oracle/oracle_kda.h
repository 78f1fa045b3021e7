/* oracle_kda: Kimi Delta Attention's recurrence in MPFR, its ground truth.
 *
 * Per batch b, value head j (key head kh = j / (Hv / Hk), whose q and k the
 * Hv / Hk value heads of kh share), token t:
 *   S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,
 *   o_t = S_t^T (scale q_t),
 * g_t the Dk log-decays of (b, t, j) (gdn_chgate.h: g of shape
 * (B, T, Hv, Dk)), one per key channel, i.e. per row of the Dk x Dv state.
 *
 * The steps and roundings are the GDN token form's (oracle.h, the same
 * per-token preparation of q and k, the same orders of summation), with the
 * decay per row: per column c of S,
 *   a_i = exp(g_ti) (rounded once per token, shared by the columns);
 *   h_ic = h_ic * a_i; kv = dot(h_:c, K);  delta = beta_t (v_tc - kv);
 *   h_ic = h_ic + K_i delta;  o_tc = dot(h_:c, Q).
 * With every a_i equal to one a (every channel's g the head's scalar g),
 * each operation is the GDN token form's operation on the same operands, so
 * o and ht equal oracle_run's bit for bit (tested).
 *
 * The certificate is the GDN oracle's (oracle.h, oracle_run_certified): the
 * same recurrence run at p and at P > p in lockstep, every element of o and
 * ht compared, the minimum agreement in bits over each tensor.
 *
 * Supported: the token form (cfg->form must be ORACLE_FORM_TOKEN), h0,
 * GQA/GVA (Hk < Hv), in-kernel L2 norm, a given scale.  Refused with
 * GDN_ERR_INPUT: the chunked form, packed documents (segment ids), a gate
 * with a non-finite value or a shape other than the inputs'.  Threads:
 * OpenMP over (b, j, block of columns) items; bit-identical results for any
 * thread count.  Memory: O(Dk x columns) MPFR numbers per thread, whatever
 * T.  Time: the GDN token form's plus Dk exp per token and item.
 * Progress (cfg->progress, oracle.h): every head's token-columns, as the
 * GDN token form counts them (a part's run counts its whole inputs, which
 * are its group's heads).
 */
#ifndef ORACLE_KDA_H
#define ORACLE_KDA_H

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "oracle.h"
#include "oracle_part.h"

/* o and ht of the KDA recurrence of (in, gate) at cfg->prec bits, rounded
 * to binary64, into out (initialised; allocated here, float64).  cert:
 * NULL for an uncertified run; else the run is also made at check_prec
 * (oracle_config) and *cert filled.  On any error out is left cleared (and
 * *cert zeroed). */
int oracle_kda_run(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg,
                   gdn_outputs *out, oracle_certificate *cert, gdn_error *e);

/* oracle_kda_run certified, its certificate as a tally (oracle_part.h,
 * ORACLE_TALLY_MPFR, cap cfg->prec, allocated here): every work item lies
 * in one value head, so the runs of head groups that together hold every
 * head once give, merged (oracle_tally_merge) and read back
 * (oracle_tally_certificate), the whole run's certificate bit for bit --
 * the reference of a KDA run streamed by key-head group. */
int oracle_kda_run_part(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_outputs *out,
                        oracle_tally *tally, gdn_error *e);

/* The double-word tier (oracle/oracle_kda_dd.c states its operations): the
 * same steps in double-word arithmetic (~106 bits), K, Q and exp(g) the
 * MPFR preparation at 128 bits rounded to double-word, with the GDN dd
 * tier's sampled certificate (oracle_dd_config: sample_prec,
 * sample_columns, and the placement head0, whole_hv; column_block is not
 * used; progress counts Dv double-word columns and the sampled ones as
 * oracle.h says, every head's):
 * sample_columns columns of each (b, j) run by the MPFR token form in
 * lockstep and compared element by element, capped at ORACLE_DD_BITS.  Not
 * computed: the guaranteed running bound (guaranteed_* 0, bound_violations
 * -1).  A value leaving binary64's range fails with GDN_ERR_INPUT naming
 * (b, head, t).  Checks, refusals and threads as oracle_kda_run; cert is
 * required. */
int oracle_kda_run_dd(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg,
                      gdn_outputs *out, oracle_dd_certificate *cert, gdn_error *e);

/* oracle_kda_run_dd with its certificate as a tally (oracle_part.h,
 * ORACLE_TALLY_DD, cap ORACLE_DD_BITS, allocated here): the sample's
 * accumulators of o and ht; the bound's empty; v[0] -1.  Groups of value
 * heads, each placed by cfg->head0 in a run of cfg->whole_hv heads, give
 * the whole run's sample columns, and their tallies merged
 * (oracle_tally_merge), read back by oracle_kda_tally_dd_certificate, the
 * whole run's certificate bit for bit.  On error out is cleared, the tally
 * emptied, failed_head the failing head's b Hv + j (in this run's shape). */
int oracle_kda_run_dd_part(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg,
                           gdn_outputs *out, oracle_tally *tally, gdn_error *e);
/* oracle_kda_run_dd's certificate from a merged tally (s the whole run's
 * shape): oracle_tally_dd_certificate's, its guaranteed fields 0 and
 * bound_violations -1, as the KDA dd tier computes no running bound. */
int oracle_kda_tally_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_dd_config *cfg,
                                    oracle_dd_certificate *cert, gdn_error *e);

#endif
