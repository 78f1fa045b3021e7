/* parity_log: the console table, written from the result types only.
 *
 * One block per input set (its shape, numerics, reference), a header per
 * chunk size, and per case: first each judged subject (a fixture's
 * /outputs/<name>: its own errors, verdict and deciding check), then the
 * kernels' row (scan, affine-prefix, their difference) with the case's
 * verdict and deciding check.  verbosity 2 adds every check and the
 * upstream verdicts.
 */
#ifndef PARITY_LOG_H
#define PARITY_LOG_H

#include <stdio.h>

#include "kern_config.h"
#include "parity_result.h"

/* ftz: in force; ftz_auto: chosen automatically (the bf16 modes). */
void parity_log_input(FILE *f, const parity_input_result *r, gdn_dtype dtype, kern_matmul matmul, int ftz,
                      int ftz_auto);
/* skipped: default device counts were dropped for this chunk size. */
/* tokens_T: T under --shard tokens (default device counts must divide it),
 * 0 under --shard chunks. */
/* The banner of a run with a planted mutant (--mutant); nothing for none. */
void parity_log_mutant(FILE *f, kern_mutant m);
void parity_log_chunk(FILE *f, int64_t chunk, int64_t n_chunks, int64_t tokens_T, int skipped, int has_ref);
void parity_log_case(FILE *f, const parity_case_result *r, int verbosity);

/* " value/limit R" and where the error model judged check k, the deciding
 * item's standard errors and multiple of its model bound, into buf. */
void parity_log_sureness(char *buf, size_t n, const parity_check *k);

#endif
