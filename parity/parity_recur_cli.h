/* parity_recur_cli: gdn-parity --recurrence NAME for a recurrence other than
 * gdn (parity_recurrence.h): the options that recurrence supports so far,
 * the sweep of parity_recur_sweep.h, its JSON document and verdict.  What
 * it does not support yet is refused (GDN_ERR_INPUT, exit 2) naming the
 * option and the recurrence; docs/errors.md lists them. */
#ifndef PARITY_RECUR_CLI_H
#define PARITY_RECUR_CLI_H

#include <stdio.h>

#include "gdn_cli.h"
#include "gdn_error.h"
#include "parity_recurrence.h"

/* table/a: the parsed command line; command_is_run: the default command
 * (--shape).  Returns 0 (pass), 1 (fail) or -1 with e set. */
int parity_recur_cli_main(const parity_recurrence *rec, const gdn_cli_opt *table, const gdn_cli_args *a,
                          int command_is_run, FILE *out, gdn_error *e);

#endif
