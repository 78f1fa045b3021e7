/* report_coverage: the writers of a coverage document (gdn-parity
 * coverage; docs/coverage-json.md): the JSON itself, an HTML page with the
 * kill matrix, a Markdown summary and JUnit XML in which every surviving
 * mutant is a failing testcase (and so is a grid case the correct kernels
 * fail).  Each render validates the document's schema name and version
 * first; every string from the document goes through report_escape.
 * report_coverage_write_all writes the requested files as one gdn_atomic
 * set: a failure leaves every destination as it was. */
#ifndef REPORT_COVERAGE_H
#define REPORT_COVERAGE_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

/* "schema" is "gdn-parity-coverage" and "version" 1, with the arrays every
 * writer walks ("mutants", "cases" with their "kills", "survivors") and
 * "cover"; else GDN_ERR_INPUT naming the field. */
int report_coverage_validate(const json_t *doc, gdn_error *e);

/* Indent 2, keys in the document's order, reals with 17 significant digits, a final newline. */
int report_coverage_json_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_coverage_html_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_coverage_markdown_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_coverage_junit_render(const json_t *doc, report_buf *b, gdn_error *e);

/* Each path NULL: not written. */
int report_coverage_write_all(const json_t *doc, const char *json, const char *html, const char *junit,
                              const char *markdown, gdn_error *e);

#endif
