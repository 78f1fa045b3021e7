/* report_html: the HTML tolerance report (--report FILE.html).
 *
 * One self-contained UTF-8 file: inline CSS, plots as inline SVG
 * (report_plots), no external resource of any kind (a Content-Security-Policy
 * forbids fetching one), readable with scripts off.  One small inline script
 * makes the case table sortable, opens every plot before printing, and marks
 * <html data-script="ran"> when it ran; a first script records any page
 * error into <html data-script-errors="...">, which the browser test checks.
 *
 * Layout: verdict (word and colour), the deciding numbers of the worst case,
 * the environment (tool, commit, command, oracle, policy, dtypes, inputs with
 * shapes and hashes, timing), the comparison with today's upstream checks,
 * the case table (failing cases first), the plots.  Element ids for tests
 * and links: verdict, deciding, environment, inputs, upstream, case-table,
 * case-<document index>, plot-profile, plot-devices, plot-length,
 * plot-heatmap, plot-ulp; with an embedded audit (--audit, report_audit.h)
 * audit-headline in the verdict box and the section audit before the plots.
 * Deterministic: the same document gives the same bytes (nothing is taken
 * from the clock or the environment).
 */
#ifndef REPORT_HTML_H
#define REPORT_HTML_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

int report_html_render(const json_t *doc, report_buf *b, gdn_error *e);
/* Validates, renders, writes atomically (nothing is left on failure). */
int report_html_write(const json_t *doc, const char *path, gdn_error *e);

#endif
