/* parity_recur_grid: `gdn-parity sweep` and `coverage` of a recurrence other
 * than gdn, over a grid of its own (grids/upstream-pr-kda.json).
 *
 * A recurrence grid is a JSON object
 *   {"name", "description", "recurrence": "kda",
 *    "entries": [{"shape": "B,T,H,D", "key_heads", "dv", "h0", "seed",
 *                 "chunk": [C, ...], "devices": [D, ...], "prefix": "NAME",
 *                 "shard": "tokens" | "chunks"}, ...]}
 * (every key of an entry but "shape" optional; parity_recur_opts_init's
 * defaults: chunk 64, devices 1, 2, 4, 8, seed 0, no h0, the sequential
 * prefix, token sharding; unknown keys
 * refused).  Each entry is one parity_recur_sweep (synthetic inputs, the
 * row's gate, its certified oracle, its kernels judged by the float32
 * band).
 *
 * sweep runs every entry unplanted: the document
 *   {"schema": "gdn-parity-recurrence-sweep", "version": 1, "recurrence",
 *    "grid", "entries": [the sweep document of each entry], "n_entries",
 *    "n_failed", "pass"}.
 * coverage runs every entry with each of the row's mutants planted (all,
 * or the names given) and asks whether some entry fails -- the mutant is
 * killed -- : the document
 *   {"schema": "gdn-parity-recurrence-coverage", "version": 1,
 *    "recurrence", "grid", "mutants": [{"name", "killed", "killed_by":
 *    [entry indices], "max_err": the largest case error over the grid}],
 *    "n_mutants", "n_killed", "pass": every mutant killed and the
 *    unplanted grid passing}.
 */
#ifndef PARITY_RECUR_GRID_H
#define PARITY_RECUR_GRID_H

#include <stdio.h>

#include <jansson.h>

#include "gdn_error.h"
#include "parity_recur_sweep.h"
#include "parity_recurrence.h"

typedef struct parity_recur_grid {
  char name[128];
  size_t n;
  parity_recur_opts *entries; /* each with rec, log NULL; gdn_malloc'd */
} parity_recur_grid;

void parity_recur_grid_init(parity_recur_grid *g);
void parity_recur_grid_clear(parity_recur_grid *g);
/* Reads and checks the grid at path for rec (its "recurrence" must be
 * rec's name). */
int parity_recur_grid_load(parity_recur_grid *g, const parity_recurrence *rec, const char *path, gdn_error *e);

/* sweep (mutants NULL) or coverage (mutants: a NULL-terminated list of the
 * row's mutant indices); *doc and *pass as above; log: a line per entry. */
int parity_recur_grid_run(const parity_recur_grid *g, const parity_recurrence *rec, const int *mutants, FILE *log,
                          json_t **doc, int *pass, gdn_error *e);

#endif
