/* report_json: the results document on disk (--json FILE, and
 * `gdn-parity report results.json -o report.html`).
 */
#ifndef REPORT_JSON_H
#define REPORT_JSON_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

/* Validates doc (report_doc_validate), then writes it atomically: indent 2,
 * numbers with 17 significant digits (so every double reads back exactly),
 * UTF-8, a final newline, and keys in the fixed order of docs/results-json.md
 * whatever order the harness inserted them in; keys the schema does not name
 * follow the named ones in byte order of their names (so the same document
 * always gives the same bytes).  Non-finite numbers are already strings in
 * the document ("inf", "-inf", "nan"): jansson cannot hold them as reals. */
int report_json_write(const json_t *doc, const char *path, gdn_error *e);

/* The same bytes into b (for tests and for the writers that embed it). */
int report_json_render(const json_t *doc, report_buf *b, gdn_error *e);

/* Loads and validates a saved document.  On success *doc is a new
 * reference (json_decref it).  A missing file, invalid JSON (with line and
 * column) or a missing / ill-typed field is GDN_ERR_INPUT naming the file
 * and the field; *doc is then NULL. */
int report_json_read(const char *path, json_t **doc, gdn_error *e);

#endif
