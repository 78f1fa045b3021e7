/* parity_recur_grad: the backward of one recurrence row judged against its
 * oracle's VJP (gdn-parity --recurrence NAME --grad).
 *
 * On the forward sweep's inputs (parity_recur_sweep.h: gdn_synth's q, k, v,
 * beta, h0 and the row's gate, from the same seed) the cotangents do and
 * dht are drawn as GDN's --grad draws them (gdn_cotangents_synth from the
 * seed: N(0, 1) rounded to float32, a function of (seed, tensor, index)).
 * The row's VJP oracle runs once, certified: MPFR at oracle_bits, checked
 * at oracle_bits + 64; or, with --oracle dd (or auto where
 * parity_oracle_resolve_grads picks dd: (1 + PARITY_ORACLE_VJP_COST) x the
 * MPFR cost over PARITY_ORACLE_AUTO_MPFR_MACS, as GDN's --grad), the row's
 * double-word VJP (oracle_vjp_dd, oracle_kda_vjp_dd) with
 * PARITY_ORACLE_DD_SAMPLE columns per head rechecked by the MPFR sweep at
 * oracle_bits.  Then each implemented kernel backward runs in
 * float32 with IEEE products, the forward sweep's cases: the token loop's
 * (for KDA kern_kda_vjp.h), then at each chunk size the chunked kernel's and
 * the affine-prefix's at each device count (kern_kda_chunk_vjp.h); a row
 * without a chunked backward runs the token loop's only and the document
 * says so (its "chunked_backward" string, absent otherwise).  Each
 * of dq, dk, dv, dg, dbeta, dh0 (dg of the gate's shape: per channel for
 * KDA) is measured normwise, err = max |x - r| / max |r|, and the case
 * passes when every err <= band: the forward's band for the same case
 * (parity_recur_case_band: a per-channel gate u (8 kappa_G + 64), the case
 * carrying "band" and "kappa_g" as the forward's; another gate the fixed
 * 2^-12).  Measured (docs/numerics.md): the token loop's backward 4u to
 * 25u (64u its band), the chunked kernel's and the affine-prefix's at most 0.92 u kappa_G
 * (seeds 1-4, Kimi gates scaled by 0.3 to 30), against ~1 for a dg summed
 * along the wrong axis.
 *
 * The result is the object the forward document gets as "grad":
 *   {"oracle": {"tier": "mpfr" | "dd", "precision_bits", "check_bits",
 *    "certified_bits", "certified": {"dq": bits, ...}; dd adds
 *    "normwise_bits", "sampled_columns", "total_columns"},
 *    "cotangents": {"seed", "dht": true}, "band", "vjp_mutant",
 *    "chunked_backward": "..." (a row without one only), "cases":
 *    [{"subject", "chunk", "devices" (null for the token loop), "band" and
 *    "kappa_g" (per-channel gates), "dq": {"err",
 *    "max_abs_err", "max_ref"}, "dk", "dv", "dg", "dbeta", "dh0", "pass"}],
 *    "n_cases", "n_failed", "pass"}
 * and the document's n_cases, n_failed and pass then count the backward
 * cases too.
 */
#ifndef PARITY_RECUR_GRAD_H
#define PARITY_RECUR_GRAD_H

#include <jansson.h>

#include "gdn_grads.h"
#include "parity_recur_sweep.h"

/* err[id] = the normwise error of x's tensor id against r's (dg per channel
 * when per_channel); 1 when every err <= band.  A NaN gives err = inf. */
int parity_recur_grad_judge(const gdn_grads *x, const gdn_grads *r, const gdn_shape *s, int per_channel, double band,
                            double err[GDN_GRADS_N]);

/* Runs the backward sweep of o->rec with backward mutant vjp_mutant (an
 * index into rec->vjp_mutants) and attaches "grad" to doc (the forward
 * sweep's document), updating its counts and *pass.  A row without a
 * backward: GDN_ERR_INPUT naming it. */
int parity_recur_grad_attach(const parity_recur_opts *o, int vjp_mutant, json_t *doc, int *pass, gdn_error *e);

/* The pieces of "grad", shared with the run streamed by key-head group
 * (parity_recur_stream.h): the head (no cases yet) from the VJP oracle's
 * certificate (MPFR's, or dd's); a case judged from its six measurements (gdn_grad_id
 * order; kj its "kappa_g", taken over; the log line); g attached to doc
 * (which takes it) with the counts and verdict updated. */
json_t *parity_recur_grad_head(const parity_recur_opts *o, int vjp_mutant, const oracle_vjp_certificate *mp,
                               const oracle_vjp_dd_certificate *dd); /* dd NULL: the MPFR tier's mp */
int parity_recur_grad_case_record(const parity_recur_opts *o, int64_t C, int64_t D,
                                  const parity_recur_err m[GDN_GRADS_N], double band, json_t *kj, json_t *cases,
                                  int *failed, gdn_error *e);
int parity_recur_grad_counts(json_t *doc, json_t *g, int gfailed, int *pass, gdn_error *e);

#endif
