/* gdn_text: untrusted strings made safe to print -- the one escaping
 * function for terminals and logs (HTML and XML have reports/report_escape).
 *
 * Strings from a fixture (attributes, group names), a JSON document or the
 * command line may hold newlines (a fake "PASS" line in a log), carriage
 * returns, ANSI escape sequences (ESC ... : terminal control) or bytes that
 * are not UTF-8.  gdn_text_escape writes them as C-style escapes: \n \r \t
 * and \xHH for every other C0 control byte, DEL, the C1 controls
 * (U+0080..U+009F, as UTF-8 or as a stray byte 0x9B CSI) and every byte of
 * an invalid UTF-8 sequence.  A backslash is written as itself: the output
 * is for reading, not for parsing back.  Valid printable UTF-8 passes
 * unchanged.  So the escaped text is one line with no control bytes.
 */
#ifndef GDN_TEXT_H
#define GDN_TEXT_H

#include <stddef.h>

/* Escapes src into dst (capacity cap >= 4, NUL-terminated); truncates at a
 * character boundary, ending "..." when src did not fit.  Returns dst. */
char *gdn_text_escape(char *dst, size_t cap, const char *src);

/* gdn_text_escape into one of 8 rotating per-thread buffers of 1024 bytes,
 * for use as printf arguments ("%s", gdn_text_show(name)); NULL shows as
 * "(null)".  Valid until 8 more calls on the same thread. */
const char *gdn_text_show(const char *src);

#endif
