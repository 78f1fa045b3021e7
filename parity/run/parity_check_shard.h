/* parity_check_shard: how `gdn-parity check` shards a fixture (token
 * sharding, as upstream runs it).
 *
 * An output that declares `shard` (schema v2) was computed with that
 * split, so the seams and blocks that judge it, and the affine-prefix run it
 * is compared with, must use that split too.  The rule, as a table over
 * the set of modes the fixture's outputs declare and whether --shard was
 * given:
 *
 *   declared           --shard   runs (mode: outputs it judges; from)
 *   none               none      tokens: all            (default)
 *   none               X         X: all                 (option)
 *   {M}                none or M M: all                 (declared; an
 *                                                        undeclared output
 *                                                        is judged in M too)
 *   {M}                X != M    refused: --shard contradicts the outputs
 *   {tokens, chunks}   none      tokens: those declaring tokens and the
 *                                undeclared; chunks: those declaring chunks
 *   {tokens, chunks}   X         tokens and chunks as above, the undeclared
 *                                in X's run
 *
 * Each run is one sweep of the fixture: our kernels in that mode, and the
 * outputs it judges; every case records its mode ("shard") and where the
 * mode came from ("shard_from": declared, option, default).
 */
#ifndef PARITY_CHECK_SHARD_H
#define PARITY_CHECK_SHARD_H

#include <stddef.h>

#include "fix.h"
#include "gdn_error.h"
#include "kern_config.h"

typedef struct parity_shard_plan {
  int n;                   /* runs: 1 or 2 */
  kern_shard mode[2];
  const char *from[2];     /* "declared", "option", "default" (static strings) */
  unsigned char *run_of;   /* per output of the fixture: the run (0 or 1) that judges it; owned */
} parity_shard_plan;

void parity_shard_plan_init(parity_shard_plan *p);
void parity_shard_plan_clear(parity_shard_plan *p);

/* shard_given: --shard was on the command line, with value `opt`.
 * GDN_ERR_INPUT (naming the file `where`, the output and both modes) when
 * --shard contradicts the single mode the outputs declare, or an output
 * declares a mode outside tokens, chunks. */
int parity_shard_plan_make(const fix_fixture *fx, int shard_given, kern_shard opt, const char *where,
                           parity_shard_plan *p, gdn_error *e);

#endif
