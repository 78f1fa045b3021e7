/* parity_cli: the gdn-parity command line, callable in-process (tests use it).
 *
 * parity_cli_main parses argv, runs the command and writes its outputs.
 * Returns the exit status 0 (pass) or 1 (out of tolerance); on bad usage,
 * bad input or an internal error it sets `e` (exit 2 or 3 by its code) and
 * returns -1.  A run that judged cases writes its requested outputs (--json,
 * --report, --junit, --summary) whether it passed or failed.
 */
#ifndef PARITY_CLI_H
#define PARITY_CLI_H

#include <stdio.h>

#include "gdn_cli.h"
#include "gdn_error.h"

int parity_cli_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e);

/* `gdn-parity regen FILE.h5 [options]` (parity_regen_cli.c): a fixture's
 * /oracle, its head groups dealt over mpirun's ranks; 0 written, -1 with
 * `e` set. */
int parity_regen_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e);

/* The option table (for --help and for the test that compares them). */
const gdn_cli_opt *parity_cli_options(void);
void parity_cli_print_help(FILE *f);

#endif
