#include "report_escape.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Decodes one UTF-8 character at s[0..n); returns its length (>= 1) and the
 * code point, or 0x110000 for an invalid sequence (length 1, so decoding
 * resynchronises at the next byte).  Overlong forms and surrogates are
 * invalid (RFC 3629). */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len;
  uint32_t v, min;
  if ((c & 0xE0) == 0xC0) len = 2, v = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) len = 3, v = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) len = 4, v = c & 0x07, min = 0x10000;
  else {
    *cp = 0x110000;
    return 1;
  }
  if (len > n) {
    *cp = 0x110000;
    return 1;
  }
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) {
      *cp = 0x110000;
      return 1;
    }
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
    *cp = 0x110000;
    return 1;
  }
  *cp = v;
  return len;
}

typedef enum { MODE_HTML_TEXT, MODE_HTML_ATTR, MODE_XML_TEXT, MODE_XML_ATTR, MODE_MD } mode_t_;

/* Characters a format cannot carry even escaped. */
static int forbidden(mode_t_ m, uint32_t cp) {
  if (cp == 0x110000 || cp == 0) return 1;
  if (cp == '\t' || cp == '\n' || cp == '\r') return 0;
  if (cp < 0x20) return 1;
  if (m == MODE_XML_TEXT || m == MODE_XML_ATTR)
    return (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF;
  /* HTML and Markdown: DEL and C1 controls are parse errors / invisible. */
  return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

static void escape(report_buf *b, mode_t_ m, const char *s, size_t n) {
  if (!s) return;
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0; /* run: start of pending verbatim bytes */
  while (i < n) {
    uint32_t cp;
    size_t len = utf8_next(u + i, n - i, &cp);
    const char *rep = NULL;
    if (forbidden(m, cp)) rep = REPLACEMENT;
    else {
      switch (cp) {
      case '&': rep = "&amp;"; break;
      case '<': rep = "&lt;"; break;
      case '>': rep = "&gt;"; break;
      case '"': rep = m == MODE_MD ? NULL : "&quot;"; break;
      case '\'': rep = m == MODE_MD ? NULL : "&#39;"; break;
      case '\n':
        rep = m == MODE_HTML_ATTR || m == MODE_XML_ATTR ? "&#10;" : m == MODE_MD ? " " : NULL;
        break;
      case '\r':
        rep = m == MODE_HTML_ATTR || m == MODE_XML_ATTR ? "&#13;" : m == MODE_MD ? " " : NULL;
        break;
      case '\t':
        rep = m == MODE_HTML_ATTR || m == MODE_XML_ATTR ? "&#9;" : m == MODE_MD ? " " : NULL;
        break;
      case '|': rep = m == MODE_MD ? "\\|" : NULL; break;
      case '\\': rep = m == MODE_MD ? "\\\\" : NULL; break;
      case '`': rep = m == MODE_MD ? "\\`" : NULL; break;
      case '*': rep = m == MODE_MD ? "\\*" : NULL; break;
      case '_': rep = m == MODE_MD ? "\\_" : NULL; break;
      case '[': rep = m == MODE_MD ? "\\[" : NULL; break;
      case ']': rep = m == MODE_MD ? "\\]" : NULL; break;
      case '~': rep = m == MODE_MD ? "\\~" : NULL; break;
      default: break;
      }
    }
    if (rep) {
      report_buf_append(b, s + run, i - run);
      report_buf_puts(b, rep);
      run = i + len;
    }
    i += len;
  }
  report_buf_append(b, s + run, n - run);
}

void report_escape_html_text(report_buf *b, const char *s, size_t n) {
  escape(b, MODE_HTML_TEXT, s, n);
}
void report_escape_html_attr(report_buf *b, const char *s, size_t n) {
  escape(b, MODE_HTML_ATTR, s, n);
}
void report_escape_xml_text(report_buf *b, const char *s, size_t n) {
  escape(b, MODE_XML_TEXT, s, n);
}
void report_escape_xml_attr(report_buf *b, const char *s, size_t n) {
  escape(b, MODE_XML_ATTR, s, n);
}
void report_escape_markdown_cell(report_buf *b, const char *s, size_t n) {
  escape(b, MODE_MD, s, n);
}

void report_escape_url_path(report_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; s && i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (keep) report_buf_putc(b, (char)c);
    else {
      char t[3] = {'%', hex[c >> 4], hex[c & 15]};
      report_buf_append(b, t, 3);
    }
  }
}

void report_escape_html_text_z(report_buf *b, const char *s) {
  if (s) report_escape_html_text(b, s, strlen(s));
}
void report_escape_html_attr_z(report_buf *b, const char *s) {
  if (s) report_escape_html_attr(b, s, strlen(s));
}
void report_escape_xml_text_z(report_buf *b, const char *s) {
  if (s) report_escape_xml_text(b, s, strlen(s));
}
void report_escape_xml_attr_z(report_buf *b, const char *s) {
  if (s) report_escape_xml_attr(b, s, strlen(s));
}
void report_escape_markdown_cell_z(report_buf *b, const char *s) {
  if (s) report_escape_markdown_cell(b, s, strlen(s));
}

void report_escape_fill(report_buf *b, report_escape_fn esc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char *p = fmt;
  for (const char *q; (q = strchr(p, '%'));) {
    report_buf_append(b, p, (size_t)(q - p));
    if (q[1] == 's') esc(b, va_arg(ap, const char *));
    else report_buf_putc(b, '%');
    p = q + (q[1] == 's' || q[1] == '%' ? 2 : 1);
  }
  report_buf_puts(b, p);
  va_end(ap);
}
