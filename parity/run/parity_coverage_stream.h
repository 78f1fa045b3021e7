/* parity_coverage_stream: a coverage entry over --max-bytes, run streamed
 * by head group (parity_sweep_stream.h) instead of refused.
 *
 * An entry whose whole run fits the budget (its inputs, the reference, the
 * scan, the candidate and one mutant's output set: parity_budget with 4
 * output sets) runs whole, as before.  One that does not is planned by
 * head group against the same budget (parity_stream_plan_make, 4 output
 * sets of a group) and both its sweeps -- the correct kernels', then the
 * mutants' -- run streamed: each mutant row produced a group at a time into
 * scratch with the case's candidate, measured from scratch, judged with the
 * case (parity_sweep_stream.h), so each sweep's document is the whole
 * run's byte for byte, and so is the kill table read from it.  The price:
 * each sweep computes its own oracle (the whole entry computes it once),
 * and the scratch holds, per chunk size, every case's candidate and mutant
 * sets (parity_sweep_stream_scratch_bytes).
 */
#ifndef PARITY_COVERAGE_STREAM_H
#define PARITY_COVERAGE_STREAM_H

#include <stdint.h>

#include "gdn_error.h"
#include "parity_doc.h"
#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_stream.h"
#include "parity_sweep.h"

/* The entry's plan under max_bytes (0: no limit) for sweep options so
 * (group_heads > 0, --group-heads: that many key heads a group, as the
 * streamed plan of --shape takes it):
 * plan->n_groups 1 when the whole entry fits (a "grad" entry: with its
 * gradient sets, parity_stream_bytes), else the streamed plan (the group's
 * gradient sets counted).
 * GDN_ERR_INPUT, the whole run's refusal (parity_budget_check's words) and
 * what one key head would need, when not even one key head fits. */
int parity_coverage_entry_plan(const parity_synth_spec *sp, const parity_sweep_opts *so, uint64_t max_bytes,
                               int64_t group_heads, parity_stream_plan *plan, gdn_error *e);

/* One sweep of the entry's synthetic inputs streamed under plan into d
 * (the reference at tier / bits computed a group at a time; so->ct must be
 * NULL: with sp->grad the cotangents are drawn by group from the entry's
 * seed, as the whole entry draws them). */
int parity_coverage_sweep_streamed(parity_doc *d, const parity_synth_spec *sp, const parity_stream_plan *plan,
                                   parity_oracle_tier tier, int bits, const parity_sweep_opts *so, gdn_error *e);

#endif
