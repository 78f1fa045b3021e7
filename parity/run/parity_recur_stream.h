/* parity_recur_stream: a recurrence row's sweep (parity_recur_sweep.h)
 * streamed by key-head group, planned against --max-bytes.
 *
 * q and k are shared by the Hv / Hk value heads of a key head, and every
 * value head's recurrence, oracle and kernels alike, reads its own heads'
 * inputs only, so a group is whole key heads [k0, k1) with their value
 * heads [k0 r, k1 r), r = Hv / Hk (parity_stream_group's groups).  Each
 * group draws its inputs and its gate bit for bit as the whole draw does
 * (gdn_synth_generate_heads, gdn_chgate_draw_kimi_heads), runs the oracle
 * (its certificate as a tally: oracle_kda_run_part, or with --oracle dd
 * oracle_kda_run_dd_part, the group's sample columns placed in the whole
 * run, so they are the whole run's) and every case's kernel,
 * and folds into the run's accumulators, exactly:
 *   - per case and tensor, max |x - r| with its worst index (the whole
 *     tensor's flat index; the least on a tie, as the whole scan keeps the
 *     first) and max |r|, hence err = max|x - r| / max|r| unchanged;
 *   - per case, kappa_G's per-channel sums and maxima (parity_kappa_ch_acc,
 *     added in the order of the value heads), so the worst channel, its
 *     value and the median are the whole run's;
 *   - the oracle's tallies (maxima), so its certificate is the whole run's.
 * The document is then assembled as the whole sweep assembles it: with
 * --reproducible the JSON is byte-identical to the unstreamed run's.
 * (The mutant gate-other-head reads the next value head's gate; a group's
 * kernels then run on the group extended by the next key head,
 * parity_recur_other_head.h, and their outputs are cut back to the group.)
 *
 * The plan (parity_stream_plan, described by parity_stream_describe) counts
 * per group: the inputs, the per-channel gate, three output sets (the
 * oracle's, a kernel's, a margin for the kernels' scratch), the MPFR
 * oracle's working set per thread, and with --grad three gradient sets of
 * the inputs and gate in binary64, the cotangents and the VJP oracle's
 * checkpoints per thread (at p and p + 64 bits); per run: the process's resident memory when the plan is made,
 * PARITY_STREAM_SLACK and PARITY_STREAM_THREAD per worker thread.  The
 * whole run when it fits; else the largest group that fits, evened out; a
 * budget under one key head's group is refused before any work, naming the
 * smallest --max-bytes that runs.  Under mpirun (several ranks) the groups
 * are dealt round robin (parity_stream_owner; a shape that fits whole in
 * groups of ceil(Hk / ranks) key heads): each rank runs its groups, rank 0
 * also adds every group's kappa_G (from the gate alone) in head order, and
 * the tallies and maxima are sent to every rank and merged.
 */
#ifndef PARITY_RECUR_STREAM_H
#define PARITY_RECUR_STREAM_H

#include <stdint.h>

#include <jansson.h>

#include "gdn_error.h"
#include "gdn_grads.h"
#include "oracle_part.h"
#include "parity_recur_sweep.h"
#include "parity_stream.h"

/* What one group of g key heads holds at once (with_grad: --grad's sets;
 * oracle_bits: the MPFR oracle's precision, 0 = 128), without the run's own
 * part (resident memory, slack, threads). */
int parity_recur_stream_bytes(const gdn_shape *whole, int64_t g, int h0, int with_grad, int oracle_bits,
                              uint64_t *bytes, gdn_error *e);

/* Plans o's run against max_bytes (0: none); force_group > 0 asks for that
 * many key heads per group (--group-heads; it must fit).  GDN_ERR_INPUT
 * when one key head is over the budget (the message names the smallest
 * --max-bytes that runs) or force_group is above Hk.  Under the mutant
 * gate-other-head a group is counted one key head larger. */
int parity_recur_stream_plan(const parity_recur_opts *o, int with_grad, uint64_t max_bytes, int64_t force_group,
                             parity_stream_plan *p, gdn_error *e);

/* A worst-error accumulator over groups: parity_recur_measure's fields with
 * `at` the whole tensor's index.  init to zero; fold a group's measurement
 * of a tensor laid out (outer, heads, inner) whose heads [v0, v0 + hg) of
 * whole_h it holds; finish sets err. */
void parity_recur_err_fold(parity_recur_err *acc, parity_recur_err g, int64_t v0, int64_t hg, int64_t whole_h,
                           size_t inner);
void parity_recur_err_finish(parity_recur_err *acc);

/* A group's certificate tally t folded into the run's (the first taken
 * whole, t left empty; later ones merged). */
int parity_recur_tally_take(oracle_tally *run, oracle_tally *t, gdn_error *e);

/* Several ranks: every rank's tally (an empty one of tier `tier`, cap
 * `cap` when it ran no group) and its n_err measurements m, sent to every
 * rank in turn (parity_dist_bcast) and merged into each rank's -- maxima,
 * exact in any order.  A rank's failure (failed nonzero) travels as a
 * flag: the run fails on every rank (the failing rank's message on its own
 * stderr).  One process: nothing moves. */
int parity_recur_dist_merge(oracle_tally *tally, int tier, int cap, parity_recur_err *m, size_t n_err, int failed,
                            gdn_error *e);

/* Group gradients x against ref (both of the group's shape, dg per
 * channel when pc) measured, each id in `present` folded into m[id] of
 * the whole shape w: dq, dk by key head from k0, the rest by value head
 * from k0 Hv / Hk. */
void parity_recur_grads_fold(parity_recur_err m[GDN_GRADS_N], const gdn_grads *x, const gdn_grads *ref,
                             const gdn_shape *w, int64_t k0, int pc, unsigned present);

/* The sweep of o by the plan p: parity_recur_sweep's document and verdict. */
int parity_recur_sweep_streamed(const parity_recur_opts *o, const parity_stream_plan *p, json_t **doc, int *pass,
                                gdn_error *e);

/* The backward (parity_recur_grad.h) of o by the plan p, its "grad"
 * attached to doc (the forward's document) as parity_recur_grad_attach
 * attaches it: the VJP oracle by group (oracle_kda_vjp_part's tallies; in
 * the dd tier -- --oracle dd, or auto's choice at the whole shape --
 * oracle_kda_vjp_dd_part's, each group's sample placed in the whole run),
 * cotangents by group (gdn_cotangents_synth_heads), dq and dk folded by
 * key head, dv, dg (per channel), dbeta and dh0 by value head. */
int parity_recur_grad_streamed(const parity_recur_opts *o, const parity_stream_plan *p, int vjp_mutant, json_t *doc,
                               int *pass, gdn_error *e);

#endif
