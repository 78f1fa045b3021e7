/* report_doc: the results document (docs/results-json.md) as the report
 * writers read it: validation of every field they rely on, and typed access.
 *
 * Writers take the document only, never the harness's structs.  Every writer
 * validates first, so a document that would make a report lie or crash (a
 * missing verdict, a deciding index out of range, a profile whose series are
 * shorter than its positions, a PASS over a failing check) is refused with a
 * GDN_ERR_INPUT whose message names the source and the field:
 *   "results.json: cases[3].tolerance.deciding: 7 is out of range (2 checks)".
 * Optional fields may be absent; when present they must have the documented
 * type.  Unknown fields are ignored (the harness may add more).
 */
#ifndef REPORT_DOC_H
#define REPORT_DOC_H

#include <jansson.h>

#include "gdn_error.h"

/* The schema this code reads; a newer "schema" is refused. */
#define REPORT_DOC_SCHEMA 2

/* `source` names the document in messages (a path, or "results document"). */
int report_doc_validate(const json_t *doc, const char *source, gdn_error *e);
/* What the types let through but a rebuilt verdict must not rest on
 * (report_doc_strict.c), checked on a saved document read back
 * (report_json_read), not on what the harness writes: tool is
 * "gdn-parity"; cases is not empty; a case without "error" has a non-empty
 * "impls"; no metric (impls.*.{o,ht}, affine_vs_scan.{o,ht}) is negative. */
int report_doc_validate_meaning(const json_t *doc, const char *source, gdn_error *e);

/* Typed access for validated documents; absent fields give NULL / dflt / 0. */
const char *report_doc_str(const json_t *obj, const char *key);
long long report_doc_int(const json_t *obj, const char *key, long long dflt);
int report_doc_bool(const json_t *obj, const char *key, int dflt);
/* Number or non-finite string at obj[key]: 1 and *out, else 0. */
int report_doc_num(const json_t *obj, const char *key, double *out);
/* That number as report_num_format writes it to `digits` significant
 * digits, in out (REPORT_NUM_CHARS bytes); NULL when obj has none, so an
 * optional figure is one test: if (report_doc_num_text(...)) printf(...). */
const char *report_doc_num_text(const json_t *obj, const char *key, int digits, char *out);

/* The planted mutant of a run (gdn-parity --mutant NAME, testing only):
 * the document's "planted_mutant", or (a document written before it) the
 * first case's "mutant"; NULL when the run had none.  Every view shows it
 * with REPORT_MUTANT_NOTE, so no verdict of a mutant reads as the correct
 * kernels'. */
const char *report_doc_planted_mutant(const json_t *doc);
#define REPORT_MUTANT_NOTE                                                                                     \
  "the affine-prefix kernel judged here carries this catalogued bug (--mutant, testing only; "              \
  "kernels/kern_mutant.h): FAIL means a check caught it, PASS that it survived"

/* The METRICS object of one comparison of a case: impl "scan",
 * "affine-prefix" (or any other key of impls) against the oracle, or
 * "affine_vs_scan"; tensor "o" or "ht".  NULL when absent. */
const json_t *report_doc_metrics(const json_t *c, const char *impl, const char *tensor);
int report_doc_metric(const json_t *c, const char *impl, const char *tensor, const char *field,
                      double *out);

/* inputs[c.input], or NULL. */
const json_t *report_doc_input(const json_t *doc, const json_t *c);
/* The deciding check of a case, or NULL when it has no checks. */
const json_t *report_doc_deciding(const json_t *c);

#endif
