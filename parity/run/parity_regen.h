/* parity_regen: a fixture's /oracle regenerated with its head groups
 * dealt over mpirun's ranks (gdn-parity regen).
 *
 * fixtures/fix_regen.c does the work and knows no MPI: it takes a
 * fix_regen_deal table, and this module fills one with parity_dist's
 * point-to-point and broadcast (parity_dist.h).  Group g goes to rank
 * g mod N, rank 0 writes the file; the file is the one-process streamed
 * regen's with the same groups, byte for byte (fix_regen.h).  One process
 * (or built without MPI): opts->deal stays NULL, and regen is exactly
 * gdn-fixture regen's. */
#ifndef PARITY_REGEN_H
#define PARITY_REGEN_H

#include "fix_regen.h"
#include "gdn_error.h"

/* fix_regen with opts' deal set to this run's ranks when there are several
 * (the table lives for the call).  *shared (may be NULL) is set to 1 when
 * the error returned is one every rank returns (rank 0's, broadcast), so
 * that rank 0 alone reports it. */
int parity_regen_run(const char *path, const fix_regen_opts *opts, fix_oracle *result, int *shared, gdn_error *e);

#endif
