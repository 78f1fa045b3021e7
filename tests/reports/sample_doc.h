/* sample_doc: results documents for the tests of reports/, built without the
 * harness (the writers take the document only).
 *
 * sample_doc_realistic: what a real run looks like: three inputs (synthetic
 * T = 1024 and 4096, and a fixture of T = 4096 whose name and path need
 * escaping), devices 1, 2, 4, 8, prefixes sequential, associative-scan,
 * hillis-steele (one prefix for D = 1): 30 cases.  Exactly one fails (the
 * fixture on 8 devices with Hillis-Steele: its affine-prefix error crosses
 * the limit after the seams while MaxText's 1e-6 check still passes it).
 * Profiles with seams (all-zero affine-vs-scan errors before the first
 * seam), ULP histograms with an empty bin, upstream verdicts, per-case
 * seconds, timing.  All numbers come from closed-form expressions:
 * deterministic.
 *
 * sample_doc_many: n cases (profiles only when with_profiles), the first
 * n_fail failing (by 1.5 + i % 7 times the limit),
 * for size and truncation tests.
 */
#ifndef SAMPLE_DOC_H
#define SAMPLE_DOC_H

#include <jansson.h>
#include <stddef.h>

json_t *sample_doc_realistic(void);
json_t *sample_doc_many(size_t n, size_t n_fail, int with_profiles);

/* Recomputes cases[].pass and the top-level pass / exit_status from the
 * checks, after a test changed them. */
void sample_doc_refresh_verdict(json_t *doc);
/* The realistic document's failing case judging a dump's output, which is
 * the case's subject (cases[].subject, as `check --fixture` writes it). */
void sample_doc_add_subject(json_t *doc);

#endif
