/* report_markdown: the Markdown summary (--summary FILE.md) for a CI job
 * summary (GitHub's $GITHUB_STEP_SUMMARY, which refuses more than 1 MiB).
 *
 * Verdict, the deciding numbers of the worst case, a link to the HTML report
 * when its relative path is given, what the upstream checks would have said,
 * then a table of the failing cases and a table of the rest.  Rows stop
 * before the file would pass REPORT_MARKDOWN_MAX_BYTES, with a line
 * "... and N more cases (see the report)."; so the file stays under 1 MiB
 * however many cases there are.  Cells are escaped (pipes, markup, HTML).
 * With an embedded audit (--audit, report_audit.h): its paragraph and
 * failing checks after the verdict lines.
 */
#ifndef REPORT_MARKDOWN_H
#define REPORT_MARKDOWN_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

/* A margin below GitHub's 1 MiB limit for the closing lines. */
#define REPORT_MARKDOWN_MAX_BYTES (1024 * 1024 - 16 * 1024)

/* html_relpath: the HTML report relative to the summary's folder, or NULL. */
int report_markdown_render(const json_t *doc, const char *html_relpath, report_buf *b,
                           gdn_error *e);
int report_markdown_write(const json_t *doc, const char *path, const char *html_relpath,
                          gdn_error *e);

#endif
