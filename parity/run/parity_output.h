/* parity_output: writing the results document and the reports rendered from
 * it.  Every file is written to a temporary and renamed (gdn_atomic).
 * Destinations are checked before any work starts, so a typo in a folder
 * name fails in a second, not after the sweep. */
#ifndef PARITY_OUTPUT_H
#define PARITY_OUTPUT_H

#include <jansson.h>

#include "gdn_error.h"

typedef struct parity_output_opts {
  const char *json, *report, *junit, *summary; /* NULL: not requested */
  int reproducible;
} parity_output_opts;

/* Each requested path's folder exists and is writable, and no two requested
 * outputs are the same path. */
int parity_output_check_paths(const parity_output_opts *o, gdn_error *e);
int parity_output_write_all(const parity_output_opts *o, const json_t *doc, gdn_error *e);

#endif
