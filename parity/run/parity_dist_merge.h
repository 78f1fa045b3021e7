/* parity_dist_merge: a state measured in parts over the ranks, merged.
 *
 * A run streamed by head group under mpirun measures each group on the
 * rank that computed it (parity_sweep_stream.h); what the ranks found is
 * merged here.  Each rank packs its part; every rank receives every other
 * rank's and merges them in rank order, so every rank holds the same
 * merged state (the floors pass B needs, the median's bucket).  The merges
 * are exact (exact sums, integer counts, maxima with their least index), so
 * the merged state is the one-process state bit for bit.
 *
 * Collective: every rank calls the same functions in the same order.  A
 * rank's failure travels in the exchange: `status` non-zero on any rank
 * makes every rank return the lowest failing rank's error, its message
 * prefixed with that rank; so does a part a rank fails to merge (after
 * every part has gone round).  One process: nothing moves; status returns as
 * it came (with *e as the caller left it).
 * Communication: per call, 16 bytes and each rank's part to every rank
 * (broadcasts in rank order).
 */
#ifndef PARITY_DIST_MERGE_H
#define PARITY_DIST_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"

/* merge(ctx, rank, part, n, e): fold rank `rank`'s part into this rank's
 * state; called for every other rank, in rank order. */
typedef int (*parity_dist_merge_fn)(void *ctx, int rank, const void *part, size_t n, gdn_error *e);

int parity_dist_allmerge(int status, const void *mine, size_t n, parity_dist_merge_fn merge, void *ctx, gdn_error *e);

/* v[0..n) over the ranks, in place: summed (integer counts), the least, and
 * the greatest (a NaN is never taken, as the streamed run's maxima over
 * groups skip it). */
int parity_dist_sum_i64(int status, int64_t *v, size_t n, gdn_error *e);
int parity_dist_min_f64(int status, double *v, size_t n, gdn_error *e);
int parity_dist_max_f64(int status, double *v, size_t n, gdn_error *e);

#endif
