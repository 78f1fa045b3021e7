/* parity_recur_grid_cli: `gdn-parity sweep --recurrence NAME --grid G` and
 * `gdn-parity coverage --recurrence NAME [--grid G] [--mutants ...]` for a
 * recurrence other than gdn (parity_recur_grid.h).  Options beyond
 * --recurrence --grid --mutants --json --threads --quiet --verbose
 * --reproducible are refused by name (exit 2).  coverage's grid defaults to
 * grids/upstream-pr-<name>.json.  Returns 0 (pass), 1 (fail: an entry
 * fails, or a mutant survives) or -1 with e set. */
#ifndef PARITY_RECUR_GRID_CLI_H
#define PARITY_RECUR_GRID_CLI_H

#include <stdio.h>

#include "gdn_cli.h"
#include "gdn_error.h"
#include "parity_recurrence.h"

int parity_recur_grid_main(const parity_recurrence *rec, const gdn_cli_opt *table, const gdn_cli_args *a,
                           int coverage, FILE *out, gdn_error *e);

#endif
