/* parity_stream_subject: what a case of a run streamed by head group
 * measures about a fixture's outputs (parity_stream_outputs.h) beyond their
 * metrics, as the whole run does:
 *   - the block map (case_block_map in parity_sweep.c): drawn for the
 *     judged subject, not the scan, whose o has the worst block_rel against
 *     the reference -- an output when one beats our candidate;
 *   - the case's subject (parity_case_subject.h): the output judged in its
 *     own case that is not a stock scan (the worst o rel_fro on ties), its
 *     metrics and upstream checks against the fixture's scan output
 *     (implementation "scan", one device) or else our scan, and its o
 *     profile against the reference.
 * Each read from scratch a group at a time, each rank its own groups:
 * maxima over the groups and the ranks, rows of heads from their owners
 * (parity_stream_merge_disjoint), and parity_mstream's two passes merged
 * over the ranks for the metrics, so every figure is the whole run's bit
 * for bit.  Collective under mpirun: every rank calls it for every case.
 */
#ifndef PARITY_STREAM_SUBJECT_H
#define PARITY_STREAM_SUBJECT_H

#include "parity_stream_outputs.h"

/* The subject whose o block map the case draws (over r->subjects, scoped by
 * parity_sweep_case_scope): an index, SIZE_MAX for none. */
size_t parity_stream_map_subject(const input_ctx *x, const parity_case_result *r);

/* After the scan's and the candidate's measurements of case r: its block
 * map when an output wins it, and its subject.  ref: the reference's
 * tensors; base: the scan's (base_present bits). */
int parity_stream_subject_measure(const parity_stream_outputs *so, const input_ctx *x, parity_case_result *r,
                                  const parity_spill_tensor *ref, const parity_spill_tensor *base,
                                  unsigned base_present, gdn_error *e);

#endif
