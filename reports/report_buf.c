#include "report_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_atomic.h"

void report_buf_init(report_buf *b) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  gdn_error_init(&b->err);
}

void report_buf_clear(report_buf *b) {
  gdn_free(b->data);
  report_buf_init(b);
}

/* Room for `extra` more bytes plus the terminating NUL. */
static int reserve(report_buf *b, size_t extra) {
  if (b->err.code) return 0;
  if (extra > SIZE_MAX - b->len - 1) {
    gdn_error_set(&b->err, GDN_ERR_NOMEM, "output larger than the address space");
    return 0;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = gdn_malloc(cap, "a report buffer", &b->err);
  if (!p) return 0;
  if (b->len) memcpy(p, b->data, b->len);
  p[b->len] = '\0';
  gdn_free(b->data);
  b->data = p;
  b->cap = cap;
  return 1;
}

void report_buf_append(report_buf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void report_buf_puts(report_buf *b, const char *s) { report_buf_append(b, s, strlen(s)); }

void report_buf_putc(report_buf *b, char c) { report_buf_append(b, &c, 1); }

void report_buf_vprintf(report_buf *b, const char *fmt, va_list ap) {
  if (b->err.code) return;
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    gdn_error_set(&b->err, GDN_ERR_INTERNAL, "bad format string in a report writer");
    return;
  }
  if ((size_t)n < sizeof small) {
    report_buf_append(b, small, (size_t)n);
    return;
  }
  if (!reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void report_buf_printf(report_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

int report_buf_status(const report_buf *b, const char *what, gdn_error *e) {
  if (!b->err.code) return GDN_OK;
  gdn_error_set(e, b->err.code, "%s: %s", what, b->err.msg);
  return b->err.code;
}

int report_buf_write_file(report_buf *b, int rc, const char *path, gdn_error *e) {
  if (!rc) rc = gdn_atomic_write_all(path, b->data, b->len, e);
  if (rc && rc != GDN_ERR_IO) gdn_error_prefix(e, "writing %s: ", path);
  report_buf_clear(b);
  return rc;
}
