/* parity_case_subject: what a case of `gdn-parity check` is about.
 *
 * A fixture's output judged in a case (its own device count: parity_sweep's
 * case scope) that is not a stock scan -- the context-parallel run the case
 * exists for -- is the case's subject: the claims a report makes about the
 * case are about it, not about our kernels.  Its upstream checks are those
 * upstream's own test makes, the output against the stock output of the
 * same run: the fixture's output declaring implementation "scan" (devices
 * 1), else our scan.  Its o error along the sequence (max |x - ref| per
 * block, the profile's blocks) is recorded for the plots, and the results
 * name both (cases[].subject, cases[].upstream_against).
 *
 * Without such an output (a synthetic run, a fixture of stock outputs only)
 * nothing changes: the upstream checks, profile and histogram stay our
 * candidate's against our baseline.  When several outputs qualify, the one
 * failing worst (largest o rel_fro against the reference) is the subject. */
#ifndef PARITY_CASE_SUBJECT_H
#define PARITY_CASE_SUBJECT_H

#include "gdn_error.h"
#include "parity_sweep_ctx.h"

/* Sets r->subject, r->subject_against, r->subject_profile and, for a
 * subject, re-evaluates r->upstream on it.  After the case's metrics are
 * measured and scoped (r->subjects), before the results are written. */
int parity_case_subject_measure(const input_ctx *x, parity_case_result *r, gdn_error *e);

#endif
