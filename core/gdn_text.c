#include "gdn_text.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid; the
 * code point in *cp. */
static int utf8_len(const unsigned char *p, unsigned *cp) {
  if (p[0] < 0x80) return *cp = p[0], 1;
  int n = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 && p[0] < 0xE0 ? 2 : 0;
  if (!n || (p[0] >= 0xF5)) return 0;
  unsigned c = p[0] & (0x7F >> n);
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    c = (c << 6) | (p[i] & 0x3F);
  }
  /* overlong forms, surrogates and beyond U+10FFFF are not UTF-8 */
  if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF))
    return 0;
  *cp = c;
  return n;
}

char *gdn_text_escape(char *dst, size_t cap, const char *src) {
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)src;
  while (*p) {
    char piece[16];
    unsigned cp;
    int n = utf8_len(p, &cp);
    size_t len;
    if (n == 1 && cp == '\n') len = (size_t)snprintf(piece, sizeof piece, "\\n");
    else if (n == 1 && cp == '\r') len = (size_t)snprintf(piece, sizeof piece, "\\r");
    else if (n == 1 && cp == '\t') len = (size_t)snprintf(piece, sizeof piece, "\\t");
    else if (n == 0 || (n == 1 && (cp < 0x20 || cp == 0x7F))) len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", p[0]), n = 1;
    else if (n == 2 && cp >= 0x80 && cp <= 0x9F)
      len = (size_t)snprintf(piece, sizeof piece, "\\x%02x\\x%02x", p[0], p[1]);
    else memcpy(piece, p, (size_t)n), len = (size_t)n;
    if (o + len + 4 > cap) {
      /* room for "..." and the NUL is kept by the test above */
      memcpy(dst + o, "...", 4);
      return dst;
    }
    memcpy(dst + o, piece, len);
    o += len;
    p += n;
  }
  dst[o] = '\0';
  return dst;
}

const char *gdn_text_show(const char *src) {
  static _Thread_local char ring[8][1024];
  static _Thread_local unsigned k;
  char *b = ring[k++ % 8];
  return gdn_text_escape(b, sizeof ring[0], src ? src : "(null)");
}
