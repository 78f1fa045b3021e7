/* report_buf: a growable byte buffer that every writer renders into before
 * the whole output is written atomically (gdn_atomic_write_all).
 *
 * Rendering a report is hundreds of small appends; checking each one would
 * bury the layout code, so an allocation failure is sticky: the first failure
 * records GDN_ERR_NOMEM in the buffer, every later append is a no-op, and the
 * writer checks once with report_buf_status before writing anything.
 * Memory goes through gdn_malloc, so tests can inject the failure.
 * Growth is geometric: n appends cost O(total bytes).
 */
#ifndef REPORT_BUF_H
#define REPORT_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "gdn_error.h"

typedef struct report_buf {
  char *data;   /* NUL-terminated when len > 0 or cap > 0 */
  size_t len;
  size_t cap;
  gdn_error err; /* code GDN_OK until an append failed */
} report_buf;

void report_buf_init(report_buf *b);
/* Frees the memory; leaves b empty and re-initialised (safe twice). */
void report_buf_clear(report_buf *b);

void report_buf_append(report_buf *b, const char *s, size_t n);
void report_buf_puts(report_buf *b, const char *s);
void report_buf_putc(report_buf *b, char c);
void report_buf_printf(report_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_buf_vprintf(report_buf *b, const char *fmt, va_list ap);

/* GDN_OK, or the sticky failure copied into e with `what` as context. */
int report_buf_status(const report_buf *b, const char *what, gdn_error *e);

/* The end of every report_*_write: when rendering succeeded (rc GDN_OK),
 * writes b atomically to path; an error that does not already name the file
 * (everything but the I/O layer's own) gets "writing PATH: " in front.
 * Frees b either way; returns the error code. */
int report_buf_write_file(report_buf *b, int rc, const char *path, gdn_error *e);

#endif
