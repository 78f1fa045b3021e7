/* parity_audit: --audit AUDIT.json on the commands that write a results
 * document (--shape, sweep, check, report): the audit of gdn-parity-jax
 * (reports/report_audit.h) read before anything runs, embedded in the
 * results document, its verdict ANDed into the run's and printed. */
#ifndef PARITY_AUDIT_H
#define PARITY_AUDIT_H

#include <jansson.h>
#include <stdio.h>

#include "gdn_error.h"
#include "parity_output.h"

/* Refuses an output that would overwrite the audit, then reads and
 * validates it (report_audit_read).  *audit: a new reference. */
int parity_audit_load(const char *path, const parity_output_opts *oo, json_t **audit, gdn_error *e);
/* "audit: FAIL CHECK ...: REASON", one line per failing check of the
 * document's audit (nothing without one). */
void parity_audit_print_lines(FILE *f, const json_t *doc);
/* The verdict line's suffix ("; audit PASS (5 checks)"); nothing without. */
void parity_audit_print_suffix(FILE *f, const json_t *doc);

#endif
