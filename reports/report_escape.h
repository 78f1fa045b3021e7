/* report_escape: the only way a string from the results document reaches an
 * output.  Case ids, fixture names and paths are user data and may contain
 * <, &, quotes, pipes, control characters or any UTF-8.
 *
 * Every function appends the escaped form of s[0..n) to b.  Input is decoded
 * as UTF-8; an invalid byte sequence, a NUL or a character the target format
 * cannot carry (C0/C1 controls other than tab and newline; for XML everything
 * outside XML 1.0's Char production) becomes U+FFFD, so the output is always
 * well-formed UTF-8 and the reader sees that something was replaced.
 * Non-ASCII text is kept as UTF-8 (all outputs declare UTF-8).
 */
#ifndef REPORT_ESCAPE_H
#define REPORT_ESCAPE_H

#include <stddef.h>

#include "report_buf.h"

/* HTML element content: & < > (and quotes, harmless) as entities. */
void report_escape_html_text(report_buf *b, const char *s, size_t n);
/* A double- or single-quoted HTML attribute value: also " ' and newline/tab as
 * character references, so attribute normalisation cannot change the value. */
void report_escape_html_attr(report_buf *b, const char *s, size_t n);
/* XML 1.0 text and attribute values: & < > " ' as entities; tab, newline and
 * CR as character references in attributes (kept literally in text). */
void report_escape_xml_text(report_buf *b, const char *s, size_t n);
void report_escape_xml_attr(report_buf *b, const char *s, size_t n);
/* One cell of a GitHub-flavoured Markdown table: | and the inline-markup
 * characters \ ` * _ [ ] ~ are backslash-escaped, < > & become entities
 * (GitHub renders inline HTML), and line breaks become spaces (a newline
 * would end the table row). */
void report_escape_markdown_cell(report_buf *b, const char *s, size_t n);
/* A relative URL in a Markdown link: percent-encodes everything except
 * unreserved characters and '/', so spaces and parentheses cannot end the
 * link early. */
void report_escape_url_path(report_buf *b, const char *s, size_t n);

/* Convenience: NUL-terminated s (NULL appends nothing). */
void report_escape_html_text_z(report_buf *b, const char *s);
void report_escape_html_attr_z(report_buf *b, const char *s);
void report_escape_xml_text_z(report_buf *b, const char *s);
void report_escape_xml_attr_z(report_buf *b, const char *s);
void report_escape_markdown_cell_z(report_buf *b, const char *s);

/* One of the above (or a writer's own: a dash for NULL, a cut cell) as a
 * value: appends the escaped form of NUL-terminated s, or its stand-in for
 * NULL. */
typedef void (*report_escape_fn)(report_buf *b, const char *s);

/* Appends fmt with each "%s" replaced by the next string argument as esc
 * writes it (NULL arguments go to esc as they are), "%%" by "%"; no other
 * directive (a lone '%' is kept).  So a line of markup with document
 * strings in it reads as the output it writes, not as an alternation of
 * literal appends and escaped ones. */
void report_escape_fill(report_buf *b, report_escape_fn esc, const char *fmt, ...);

#endif
