/* parity_recur_check_cli: `gdn-parity check FILE...` when a fixture names a
 * recurrence other than gdn (root attribute recurrence, fix_kda.h).
 *
 * parity_recur_check_dispatch peeks at every fixture the command names
 * (arguments and --fixture): when none is such a fixture and --recurrence
 * is absent or gdn, *handled = 0 and GDN's check runs unchanged.
 * Otherwise *handled = 1 and this runs: every file must be of one
 * recurrence, and of --recurrence's when it is given (a GDN fixture under
 * --recurrence kda, or the reverse, is refused naming the file and its
 * g's rank); each is loaded (fix_kda_load) and judged by
 * parity_recur_check (by key-head group when --group-heads is given or the
 * whole check is over --max-bytes: parity_recur_check_stream.h).  Options
 * beyond the supported list are refused by
 * name (exit 2).  Returns 0 (every file passes), 1 (one fails) or -1 with e set.
 */
#ifndef PARITY_RECUR_CHECK_CLI_H
#define PARITY_RECUR_CHECK_CLI_H

#include <stdio.h>

#include "gdn_cli.h"
#include "gdn_error.h"

int parity_recur_check_dispatch(const gdn_cli_opt *table, const gdn_cli_args *a, FILE *out, int *handled,
                                gdn_error *e);

#endif
