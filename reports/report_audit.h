/* report_audit: the audit document of gdn-parity-jax (schema
 * "gdn-parity-audit" version 1, docs/audit-json.md of the front end) in the
 * results document and its reports.
 *
 * `gdn-parity check|sweep|--shape ... --audit AUDIT.json` and `gdn-parity
 * report RESULTS.json --audit AUDIT.json` read the audit, embed it under the
 * results document's "audit" key (so `gdn-parity report RESULTS.json` alone
 * renders it again) and AND its verdict into the run's: an audit FAIL makes
 * the run FAIL (exit 1) however the cases did.
 *
 * Every string of the audit (op names, user source paths) is user data: it
 * reaches an output only through report_escape.  The renderers assume a
 * validated audit (report_audit_validate).
 *
 *   report_audit_doc.c    reading, validation, embedding, accessors
 *   report_audit_html.c   the HTML section (tables) and its headline line
 *   report_audit_plots.c  the HTML section's plots (inline SVG)
 *   report_audit_programs.c  the HTML tables of each compiled program
 *   report_audit_text.c   Markdown paragraph, JUnit testsuite, console lines
 */
#ifndef REPORT_AUDIT_H
#define REPORT_AUDIT_H

#include <jansson.h>
#include <stddef.h>

#include "gdn_error.h"
#include "report_buf.h"

#define REPORT_AUDIT_SCHEMA "gdn-parity-audit"
#define REPORT_AUDIT_VERSION 1
/* An audit larger than this is not one gdn-parity-jax wrote. */
#define REPORT_AUDIT_MAX_BYTES (64L * 1024 * 1024)

/* Reads path: a regular file (a FIFO, a device or a folder is refused
 * without blocking on it), at most REPORT_AUDIT_MAX_BYTES, JSON without
 * duplicate keys, validated.  *audit: a new reference, NULL on error
 * (GDN_ERR_INPUT naming the file and the field). */
int report_audit_read(const char *path, json_t **audit, gdn_error *e);

/* The fields the reports use, with their types; the verdict consistent
 * with the checks and exit_status.  prefix: the path of the audit in
 * messages ("" for a file of its own, "audit" inside a results document);
 * source: the file. */
int report_audit_validate(const json_t *audit, const char *source, const char *prefix, gdn_error *e);

/* Sets doc["audit"] (a reference to audit is taken), then doc's "pass" to
 * the AND of its cases' and the audit's verdict and "exit_status" to 0 or 1
 * to match.  audit must be validated. */
int report_audit_embed(json_t *doc, json_t *audit, gdn_error *e);

/* doc["audit"] or NULL. */
const json_t *report_audit_of(const json_t *doc);
int report_audit_pass(const json_t *audit);
/* Checks in total and failing. */
void report_audit_counts(const json_t *audit, size_t *n, size_t *n_fail);
/* Where every renderer starts: doc's audit with its counts, or NULL
 * (render nothing) when doc has none. */
const json_t *report_audit_counted(const json_t *doc, size_t *n, size_t *n_fail);
/* "collective-grows-with-T cp backward D=4" (the check and where). */
void report_audit_check_where(const json_t *check, char *out, size_t n);
/* A check FAILs unless its verdict is "PASS" (absent counts as failed). */
int report_audit_check_failed(const json_t *check);
/* Every output names failing checks the same way (where, then reason):
 * calls emit for the first max failing checks in order (max 0: all) and
 * returns how many it called it for. */
typedef void report_audit_failure_fn(report_buf *b, const char *where, const char *reason);
size_t report_audit_each_failure(report_buf *b, const json_t *audit, size_t max, report_audit_failure_fn *emit);

/* HTML: the headline line under the verdict (id audit-headline) and the
 * section (id audit).  Both no-ops without an audit. */
void report_audit_html_headline(report_buf *b, const json_t *doc);
void report_audit_html_section(report_buf *b, const json_t *doc);
/* The section's figures: plot-audit-collectives-<pass>, plot-audit-memory. */
void report_audit_plots(report_buf *b, const json_t *audit);
/* Per program group (function, pass, D, heads): its memory and cost per T
 * and its collectives (report_audit_programs.c). */
void report_audit_programs(report_buf *b, const json_t *audit);
/* Work per token from the programs' HLO (loops' trip counts), the overhead
 * over the stock function, where the work is, what was not judged
 * (report_audit_work.c). */
void report_audit_work(report_buf *b, const json_t *audit);
/* Cells shared by the HTML tables: a number (integers exact, reals to 4
 * digits, null as a dash) and "f32[1,1024,2,16]" (escaped). */
void report_audit_html_num(report_buf *b, const json_t *j);
void report_audit_html_shape(report_buf *b, const json_t *op);

/* Markdown: the audit paragraph and its failing checks (bounded). */
void report_audit_markdown(report_buf *b, const json_t *doc);
/* JUnit: <testsuite name="gdn-parity.audit"> with one testcase per check. */
void report_audit_junit(report_buf *b, const json_t *doc);
/* Console: one "audit: FAIL CHECK FUNCTION PASS D=d: REASON" line per
 * failing check, then nothing for a PASS. */
void report_audit_text_lines(report_buf *b, const json_t *audit);
/* The verdict line's suffix: "; audit PASS (5 checks)" or "; audit FAIL
 * (1 of 5 checks: collective-grows-with-T cp backward D=4)"; "" without. */
void report_audit_text_verdict(report_buf *b, const json_t *doc);

#endif
