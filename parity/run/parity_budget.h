/* parity_budget: the memory a run of the sweep needs, counted against
 * --max-bytes before anything is allocated.
 *
 * Counted: the inputs, n_outputs output sets (gdn_shape_check_limit), plus
 * the largest kernel scratch over every (chunk, devices, prefix) the sweep
 * will run (kern_scratch_bytes: it grows with the chunk size squared and
 * with the thread count, which kern_threads caps at the work available).
 * The kernels run one at a time, so the largest scratch, not the sum, is
 * what is live at once; the metrics' scratch (parity_metrics_scratch_bytes:
 * radix histograms, exact sums) runs between kernels and counts as one more
 * candidate for the largest.  Not counted: the oracle's own working set (MPFR
 * limbs per thread, bounded by its column blocks) and the metrics'
 * per-block profiles (a few doubles per chunk).
 */
#ifndef PARITY_BUDGET_H
#define PARITY_BUDGET_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_shape.h"
#include "parity_policy.h"
#include "parity_sweep.h"

/* GDN_ERR_INPUT naming the chunk size and the bytes when over max_bytes
 * (0: no limit). */
int parity_budget_check(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                        uint64_t max_bytes, gdn_error *e);

/* What the sweep holds per judged subject (a fixture's /outputs/<name>)
 * beside its data, an upper bound under policy p: its measurements twice
 * (the sweep's and the case's, parity_subject_result), its run and policy
 * view, and one check for every (rule, tensor) pair of p that may name it,
 * three times over (the case's check list doubles as it grows: the old
 * array and the new one are live at once).  The fixture loader counts it
 * per output (fix_load_opts.per_output_bytes), so that the peak obeys
 * --max-bytes whatever the number of outputs. */
uint64_t parity_budget_per_subject(const parity_policy *p);

/* The largest kernel scratch (kern_scratch_bytes) of any configuration the
 * sweep o runs on s. */
size_t parity_budget_scratch(const gdn_shape *s, const parity_sweep_opts *o);

#endif
