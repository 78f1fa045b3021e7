/* parity_coverage: which grid case kills which catalogued mutant
 * (`gdn-parity coverage`: the mutant catalogue and the smallest grid that
 * kills it).
 *
 * A coverage "case" is one grid entry (one synthetic input set with its
 * chunk sizes, device counts and prefixes): that is the unit a pull request
 * copies into its own grid.  For each entry, in grid order:
 *   1. the inputs and the reference (the --oracle tier), once; for an
 *      entry with "grad" also the cotangents (the entry's seed) and the
 *      reference's VJP, and both sweeps below run the backward too: the
 *      backward-only rows (grad-seam-stopped) can be killed only there,
 *      a forward row gives no gradients and is judged on o and ht;
 *   2. the plain sweep: the correct kernels only (scan, affine-prefix),
 *      judged by the policy.  Its wall time plus the inputs' and the
 *      oracle's is the entry's own time: what running it as a test costs;
 *   3. the same sweep with one mutant subject row per selected mutant
 *      (parity_subject_mutant): each judged on its own by the affine-prefix
 *      rules.  A mutant is killed by the entry when one of its checks fails
 *      in one of the entry's sweep cases; the killer reported is its failing
 *      check with the largest value / limit (the earliest on ties).
 * The correct kernels must pass every case, or the kill matrix means
 * nothing: the document then says so and fails.
 *
 * Then the mutants no entry kills (and whether the README's table says why
 * they cannot be killed: parity_readme.h), the mutants that table calls
 * unkillable but some entry kills (contradictions: the run fails) and a small set of entries killing every killable
 * mutant, by greedy set cover (parity_coverage_cover: not proven minimal).
 *
 * The document (docs/coverage-json.md, "schema": "gdn-parity-coverage",
 * "version": 1) is deterministic: with `reproducible` it has no timings or
 * timestamp and the same run gives the same bytes.  Verdict: pass when the
 * correct kernels pass everywhere, every selected mutant is killed or
 * listed in the README's table, and no listed mutant is killed.
 */
#ifndef PARITY_COVERAGE_H
#define PARITY_COVERAGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gdn_error.h"
#include "kern_mutant.h"
#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_policy.h"
#include "parity_progress.h"
#include "parity_readme.h"

typedef struct parity_coverage_opts {
  const parity_grid *grid;
  const char *grid_name;   /* recorded as given */
  const char *command;     /* the command line (recorded), or NULL */
  kern_mutant mutants[KERN_MUTANT_COUNT]; /* selected, catalogue order, no NONE */
  size_t n_mutants;
  const parity_policy *policy;
  parity_oracle_tier tier;
  int oracle_bits;
  int reproducible;        /* no timings, no timestamp */
  const char *readme_name; /* where unkillable came from, for the record */
  const parity_readme_unkillable *unkillable; /* the README's table, or NULL: "is it explained" is unknown */
  parity_progress *progress; /* NULL: none */
  uint64_t max_bytes;      /* 0: every entry whole; else an entry over it streams (parity_coverage_stream.h) */
  int64_t group_heads;     /* > 0: every entry streamed by this many key heads a group; 0: by max_bytes */
} parity_coverage_opts;

/* "all" or NAME,NAME,...: every catalogued mutant but none, or those named,
 * in catalogue order.  An unknown name is GDN_ERR_INPUT naming it and
 * listing the valid names; "none" is refused (it is the correct program,
 * always run), so is a name given twice and "all" inside a list (it stands
 * alone). */
int parity_coverage_parse_mutants(const char *s, kern_mutant *out, size_t *n, gdn_error *e);

/* Greedy set cover.  kills[i * n_mut + j] != 0: case i kills mutant j.
 * While some mutant that any case kills is not yet killed by the picked
 * cases, picks the case killing the most of those; ties go to the lowest
 * case index (so the answer depends on the matrix only, never on timings).
 * Writes the picked case indices in pick order to picked (room for n_cases)
 * and returns how many.  Greedy: within a factor H(n_mut) of the smallest
 * cover, not proven minimal. */
size_t parity_coverage_cover(const unsigned char *kills, size_t n_cases, size_t n_mut, size_t *picked);

/* Runs the grid (see above) into a new document *doc (json_decref it).
 * Errors (bad entry, out of memory) leave *doc NULL. */
int parity_coverage_run(const parity_coverage_opts *o, json_t **doc, gdn_error *e);

/* The text log of a document: the cases, the kill matrix, the survivors,
 * the cover and the verdict line. */
void parity_coverage_log(FILE *f, const json_t *doc);

#endif
