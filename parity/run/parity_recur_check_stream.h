/* parity_recur_check_stream: `gdn-parity check` of a KDA fixture read by
 * key-head group (fix_kda_load_group), when asked (--group-heads N) or when
 * the whole check is over --max-bytes.
 *
 * Decided before the groups run, as the whole check decides it: the whole
 * file's inputs_sha256 and problem_sha256 by blocks (fix_kda_hashes) give a
 * stored /oracle's freshness; when it is fresh, a first pass reads each
 * group's /oracle, applies fix_oracle_check's limits and folds the spot
 * check's maxima (parity_recur_spot_fold: the same columns, exact over the
 * groups), so the stored /oracle is trusted, or recomputed with the same
 * note, exactly as the whole check decides.  The second pass reads each
 * group again: its reference (the stored /oracle's heads, or the MPFR
 * oracle's by oracle_kda_run_part, its certificate a tally merged over the
 * groups), every kernel case and every /outputs/<name> measured and folded
 * as the streamed sweep folds them (parity_recur_err_fold: max |x - r| with
 * the whole tensor's least worst index, max |r|; kappa_G per channel summed
 * in value-head order, parity_kappa_ch_acc).  With /cotangents and an
 * output's gradients, each group's cotangents and stored gradients too:
 * the VJP oracle on the group (oracle_kda_vjp_part, its certificate a
 * tally merged over the groups) and each gradient folded
 * (parity_recur_grads_fold; dq, dk by key head), each output's band that
 * of its forward case, and the file's grad_problem_sha256 hashed by blocks
 * (fix_kda_grad_problem_sha256).  The document is assembled by
 * the whole check's own functions: with --reproducible its JSON is the
 * whole check's byte for byte.
 *
 * The plan, per group of g key heads: the inputs and per-channel gate, the
 * file's output sets and /oracle (binary64), with /cotangents them
 * (float32) and every output's gradients (binary64), three output sets
 * (reference, a kernel's, its scratch) and the MPFR oracle's working set,
 * the VJP's with /cotangents (parity_recur_stream_bytes), and per run the process's resident memory,
 * PARITY_STREAM_SLACK and PARITY_STREAM_THREAD per thread.  The whole
 * check when it fits and no --group-heads is given (*streamed = 0: the
 * caller reads the file whole); else the largest group that fits, evened
 * out.  Refused before any work (GDN_ERR_INPUT): one key head over
 * --max-bytes (the message names the smallest --max-bytes that runs), a
 * --group-heads above Hk or whose groups are over --max-bytes.
 *
 * Under mpirun the check always streams, its groups dealt (group i on rank
 * i mod N; one group of the whole is split into ceil(Hk / N) key heads a
 * group): each rank runs the first pass whole, computes and measures the
 * groups it owns, rank 0 reads every group for kappa_G, and the tallies
 * and measurements are merged on every rank (parity_recur_dist_merge);
 * rank 0 alone assembles the document (the others return *doc NULL with
 * *streamed 1).  Probed as the whole
 * check is (fix_isolate.h): a child reads the hashes' blocks and every
 * group first, and only a file it read cleanly is read in this process. */
#ifndef PARITY_RECUR_CHECK_STREAM_H
#define PARITY_RECUR_CHECK_STREAM_H

#include <stdint.h>

#include <jansson.h>

#include "gdn_error.h"
#include "parity_recur_check.h"

/* The check of the KDA fixture at path by key-head group (group_heads 0:
 * only when the whole check is over max_bytes).  *streamed 0: nothing done
 * (the whole check fits); else *doc and *pass as parity_recur_check's. */
int parity_recur_check_streamed(const parity_recur_check_opts *o, const char *path, uint64_t max_bytes,
                                int64_t group_heads, int *streamed, json_t **doc, int *pass, gdn_error *e);

#endif
