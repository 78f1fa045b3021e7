/* parity_stream_merge: a streamed run's measurement dealt over the ranks.
 *
 * Under mpirun, group g of a run streamed by head group
 * (parity_sweep_stream.h) is computed by rank g mod N, which keeps it in
 * its own scratch and measures it there; the ranks' parts are merged
 * (parity_dist_merge.h), every rank ending with the same state:
 *   - each pair's metrics (parity_mstream, the error model's
 *     parity_model_acc) after pass A -- so every rank has the floors and
 *     the median's bucket before pass B -- and after pass B; the median's
 *     extra rounds, when it needs them, sum the ranks' counts
 *     (parity_stream_group_net);
 *   - a case's other findings: the seams' o errors, the o and gradient
 *     profiles and the upstream figures (maxima), the block map (each
 *     group's rows from its owner).
 * Every merge is exact, so the results document is the one-process run's,
 * byte for byte (--reproducible), for any number of ranks.  One process:
 * nothing moves.  Collective, as parity_dist_merge.h: a rank's failure
 * (status) ends the call on every rank with that rank's error.
 */
#ifndef PARITY_STREAM_MERGE_H
#define PARITY_STREAM_MERGE_H

#include "parity_kappa.h"
#include "parity_metrics.h"
#include "parity_result.h"

/* Whether this rank holds (computed, keeps, measures) group g. */
int parity_stream_holds(int64_t g);

/* src's holds, sum_i64 and min_f64 for the groups dealt over the ranks
 * (every field NULL in one process: every group is here). */
void parity_stream_group_net(parity_group_src *src);

/* A pair's state after pass A (pass_b 0) or B: every rank's merged into
 * every rank's (MA NULL: no error model). */
int parity_stream_merge_pair(int status, parity_mstream *M, parity_model_acc *MA, int pass_b, gdn_error *e);

/* Group g's values added to every pair of a measurement, in pass A
 * (pass_b 0) or B: the caller's visit. */
typedef int (*parity_stream_visit)(void *ctx, int64_t g, int pass_b, gdn_error *e);

/* The two passes of n pairs' streamed metrics over a run's n_groups head
 * groups, as every streamed measurement runs them: in each pass, visit
 * for each group this rank holds (parity_stream_holds), then every pair
 * (M[i], and MA[i] when MA and it are not NULL) merged over the ranks
 * (parity_stream_merge_pair); after pass A each pair takes its floors
 * (parity_mstream_between, parity_model_acc_between).  status: an earlier
 * failure, carried into the merges so every rank ends alike; *secs (NULL:
 * not kept) gains the visits' seconds.  Finishing the pairs is the
 * caller's. */
int parity_stream_passes(int status, int64_t n_groups, parity_stream_visit visit, void *ctx,
                         parity_mstream *const *M, parity_model_acc *const *MA, size_t n, double *secs, gdn_error *e);

/* A case's seams' o errors, o profiles (candidate, cand_vs_base),
 * gradient profiles (grad_profile.mask's rows) and n_fig upstream figures
 * (maxima over the ranks, as over the groups), and its block map (each
 * entry from the one rank whose groups hold it; the others' are +0). */
int parity_stream_merge_case(int status, parity_case_result *r, double *fig, size_t n_fig, gdn_error *e);

/* v[0..n), each value computed by one rank (the rows of its groups) and
 * +0 on the others: every rank's v made the owners' values, bit for bit
 * (NaN and infinities included). */
int parity_stream_merge_disjoint(int status, double *v, size_t n, gdn_error *e);

/* kappa_G's sums of n chunk sizes, each rank's groups', merged (exact). */
int parity_stream_merge_kappa(int status, parity_kappa_acc *a, size_t n, gdn_error *e);

/* Rank 0's log line at --verbose: each rank's seconds measuring its
 * groups, its groups, its process's CPU seconds so far, and rank 0's share
 * of the measuring seconds, e.g. "measurement dealt over 2 ranks: rank 0
 * 3.10 s measuring (2 of 4 groups), 40.2 CPU s in all, rank 1 ...; rank
 * 0's share 0.510".  *share (may be NULL): rank 0's seconds over the
 * ranks' sum (1 in one process).  Collective. */
int parity_stream_measure_report(double secs, int64_t groups, int64_t n_groups, char *line, size_t n, double *share,
                                 gdn_error *e);

#endif
