/* Runs gdn-parity's command line in this process (test helper, header-only).
 * cli_run.h runs the built program as a child; this calls parity_cli_main
 * directly, so a test can set tables and hooks first and count allocations. */
#ifndef CLI_INPROC_H
#define CLI_INPROC_H

#include <stdio.h>

#include "gdn_error.h"
#include "parity_cli.h"

/* av is NULL-terminated.  The console output goes to /dev/null; the status
 * parity_cli_main returns comes back (negative for an error, described in
 * *e, which this initialises). */
static inline int cli_inproc(char **av, gdn_error *e) {
  int ac = 0;
  while (av[ac]) ac++;
  gdn_error_init(e);
  FILE *devnull = fopen("/dev/null", "w");
  int st = parity_cli_main(ac, av, devnull, devnull, e);
  fclose(devnull);
  return st;
}

#endif
