/* Checks on SVG text shared by the plot and HTML tests: every coordinate a
 * browser would read is a finite number, and no "nan"/"inf" leaked into the
 * markup (a NaN coordinate makes a browser drop the element silently). */
#ifndef SVG_CHECK_H
#define SVG_CHECK_H

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Attributes whose values are numbers or number lists. */
static inline int svg_numeric_attr(const char *name, size_t n) {
  static const char *const names[] = {"x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r",
                                      "width", "height", "points", "d", "viewBox",
                                      "transform", "stroke-dasharray"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strlen(names[i]) == n && !strncmp(names[i], name, n)) return 1;
  return 0;
}

/* 0 when every numeric attribute value in s[0..len) parses as finite
 * numbers (path letters, commas and "translate(...)/rotate(...)" words are
 * skipped); else the offset + 1 of the first bad value. */
static inline size_t svg_bad_coordinate(const char *s, size_t len) {
  const char *end = s + len;
  for (const char *p = s; p < end; p++) {
    if (*p != '=' || p + 1 >= end || p[1] != '"') continue;
    const char *ne = p, *nb = p;
    while (nb > s && (isalnum((unsigned char)nb[-1]) || nb[-1] == '-')) nb--;
    if (!svg_numeric_attr(nb, (size_t)(ne - nb))) continue;
    const char *v = p + 2, *ve = memchr(v, '"', (size_t)(end - v));
    if (!ve) return (size_t)(p - s) + 1;
    for (const char *q = v; q < ve;) {
      if (isalpha((unsigned char)*q) || *q == ',' || *q == ' ' || *q == '(' || *q == ')') {
        /* A word: a path command, or translate/rotate; "nan"/"inf" are not
         * words we accept. */
        if (!strncasecmp(q, "nan", 3) || !strncasecmp(q, "inf", 3)) return (size_t)(q - s) + 1;
        q++;
        continue;
      }
      char *stop;
      double x = strtod(q, &stop);
      if (stop == q || !isfinite(x)) return (size_t)(q - s) + 1;
      q = stop;
    }
    p = ve;
  }
  return 0;
}

static inline int svg_contains_ci(const char *s, size_t len, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= len; i++)
    if (!strncasecmp(s + i, needle, k)) return 1;
  return 0;
}

static inline int svg_has_nan_text(const char *s, size_t len) {
  return svg_contains_ci(s, len, "nan");
}

#endif
