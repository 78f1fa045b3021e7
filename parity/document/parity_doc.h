/* parity_doc: the results document of one run (docs/results-json.md).
 *
 * It collects inputs and cases as JSON, serialized by parity_json.c from
 * the result types, and the run-wide figures (oracle tier and certificates,
 * counts, timings).  parity_doc_finish puts the top-level keys in their
 * fixed order.  Owns `root` (init/clear).
 */
#ifndef PARITY_DOC_H
#define PARITY_DOC_H

#include <jansson.h>
#include <stddef.h>

#include "gdn_error.h"
#include "parity_oracle.h"
#include "parity_policy.h"
#include "parity_result.h"

typedef struct parity_doc {
  json_t *root, *inputs, *cases;
  size_t n_cases, n_failed;
  int have_oracle, min_certified, precision_bits, check_bits, min_guaranteed;
  int mixed_tiers; /* inputs were judged against different tiers */
  int64_t sampled_columns, total_columns;
  parity_oracle_tier tier;
  double t_start, t_oracle, t_kernels;
} parity_doc;

/* command: the command line as one string (for the report). */
int parity_doc_init(parity_doc *d, const char *command, const parity_policy *policy, gdn_error *e);
/* Sets pass, exit_status, oracle and (unless reproducible) created and timing. */
int parity_doc_finish(parity_doc *d, int reproducible, gdn_error *e);
void parity_doc_clear(parity_doc *d);
int parity_doc_pass(const parity_doc *d);
/* The judged outputs of a finished document whose verdict rests on o
 * alone (no final state: a MaxText-style function called without h0
 * returns none), comma-separated in first-seen order into buf (size n,
 * truncated there); how many there are (0: every judged output's ht was
 * judged, buf ""). */
size_t parity_doc_ht_unjudged(const json_t *root, char *buf, size_t n);

/* Appends the inputs entry and folds the reference's certificate into the
 * run's oracle summary.  Its index is the `input` of the cases that follow. */
int parity_doc_add_input(parity_doc *d, const parity_input_result *r, gdn_error *e);
/* Index the next input will get. */
int64_t parity_doc_next_input(const parity_doc *d);
/* Appends the case and counts it. */
int parity_doc_add_case(parity_doc *d, const parity_case_result *r, int reproducible, gdn_error *e);

/* A distributed sweep (parity_dist.h): each rank runs its grid entries into
 * a part document of its own; rank 0 merges the parts in entry order.
 * parity_doc_part_dump writes a part (its inputs, cases and run-wide
 * figures) as JSON text (malloc'd; free()); parity_doc_part_load reads one
 * into an initialised, empty doc.  Reals travel as jansson's shortest
 * round-trip text, so every value comes back bit-identical.
 * parity_doc_merge appends part's inputs, its cases (their "input" index
 * shifted past d's inputs) and folds its figures as if its inputs had been
 * added to d directly: the merged document equals a single-process run's. */
int parity_doc_part_dump(const parity_doc *part, char **text, gdn_error *e);
int parity_doc_part_load(parity_doc *part, const char *text, gdn_error *e);
int parity_doc_merge(parity_doc *d, const parity_doc *part, gdn_error *e);

#endif
