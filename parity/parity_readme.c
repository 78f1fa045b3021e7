/* The README's table of unkillable mutants (parity_readme.h). */
#include "parity_readme.h"

#include <stdio.h>
#include <string.h>

#include "gdn_text.h"

#define MAX_CELLS 8

typedef struct span {
  const char *p;
  size_t n;
} span;

/* The line at p (without its newline or a trailing \r), its end in *next. */
static span line_at(const char *p, const char **next) {
  const char *nl = strchr(p, '\n');
  size_t n = nl ? (size_t)(nl - p) : strlen(p);
  *next = nl ? nl + 1 : p + n;
  if (n && p[n - 1] == '\r') n--;
  return (span){p, n};
}

static span trim(span s) {
  while (s.n && (*s.p == ' ' || *s.p == '\t')) s.p++, s.n--;
  while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t')) s.n--;
  return s;
}

static int span_is(span s, const char *z) { return s.n == strlen(z) && !memcmp(s.p, z, s.n); }

/* A table row's cells, trimmed: the line must start and end with '|'; an
 * escaped \| is part of a cell.  Returns the cell count, -1 when the line is
 * not a row, MAX_CELLS + 1 when it has more cells than kept. */
static int row_cells(span line, span *cell) {
  span t = trim(line);
  if (t.n < 2 || t.p[0] != '|' || t.p[t.n - 1] != '|' || (t.n >= 3 && t.p[t.n - 2] == '\\')) return -1;
  int n = 0;
  const char *start = t.p + 1, *end = t.p + t.n - 1;
  for (const char *q = start; q <= end; q++) {
    if (q < end && (*q != '|' || q[-1] == '\\')) continue;
    if (n == MAX_CELLS) return MAX_CELLS + 1;
    cell[n++] = trim((span){start, (size_t)(q - start)});
    start = q + 1;
  }
  return n;
}

static int is_delimiter(span c) {
  size_t i = 0, dashes = 0;
  if (i < c.n && c.p[i] == ':') i++;
  while (i < c.n && c.p[i] == '-') i++, dashes++;
  if (i < c.n && c.p[i] == ':') i++;
  return dashes > 0 && i == c.n;
}

static int is_header(span line) {
  span c[MAX_CELLS];
  return row_cells(line, c) == 2 && span_is(c[0], "mutant") && span_is(c[1], "why it cannot be killed");
}

/* One row of the table, at line `ln`. */
static int parse_row(span line, int ln, const char *name, parity_readme_unkillable *u, gdn_error *e) {
  span c[MAX_CELLS];
  char shown[160];
  snprintf(shown, sizeof shown, "%.*s", (int)(line.n < 150 ? line.n : 150), line.p);
  int n = row_cells(line, c);
  if (n != 2)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s': a row of the table \"%s\" needs exactly 2 cells "
                         "(`mutant-name` | why it cannot be killed), not %d", name, ln, gdn_text_show(shown),
                         PARITY_README_HEADER, n > MAX_CELLS ? MAX_CELLS + 1 : n);
  if (c[0].n < 3 || c[0].n > 97 || c[0].p[0] != '`' || c[0].p[c[0].n - 1] != '`' ||
      memchr(c[0].p + 1, '`', c[0].n - 2))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s': the first cell must be one mutant name in "
                         "backticks, such as `final-from-replay`", name, ln, gdn_text_show(shown));
  char m[96];
  snprintf(m, sizeof m, "%.*s", (int)c[0].n - 2, c[0].p + 1);
  kern_mutant id = KERN_MUTANT_NONE;
  gdn_error sub;
  gdn_error_init(&sub);
  if (kern_mutant_parse(m, &id, &sub) || id == KERN_MUTANT_NONE)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s' is not a catalogued mutant (kernels/kern_mutant.c)%s",
                         name, ln, gdn_text_show(m), id == KERN_MUTANT_NONE && !sub.code ? ": none is the correct program" : "");
  if (u->line[id])
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' is listed twice (first at line %d); one row "
                         "per mutant", name, ln, m, u->line[id]);
  if (!c[1].n)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' has no reason why it cannot be killed", name,
                         ln, m);
  if (kern_mutant_row_of(id)->killed_by_recommended)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' is listed as unkillable, but grids/upstream-pr.json "
                         "kills it (kernels/kern_mutant.c): a mutant some grid of the project kills is not "
                         "unkillable; remove the row", name, ln, m);
  u->line[id] = ln;
  return GDN_OK;
}

/* The table starting at the header line `ln` (p: the line after it);
 * returns the first line after the table in *next and its number in *ln. */
static int parse_table(const char **p, int *ln, const char *name, parity_readme_unkillable *u, gdn_error *e) {
  const char *q;
  span line = line_at(*p, &q);
  span c[MAX_CELLS];
  int n = row_cells(line, c);
  if (n != 2 || !is_delimiter(c[0]) || !is_delimiter(c[1]))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: the table \"%s\" (line %d) needs its delimiter row "
                         "|---|---| next", name, *ln + 1, PARITY_README_HEADER, *ln);
  *p = q, ++*ln;
  for (;;) {
    if (!**p) return GDN_OK;
    line = line_at(*p, &q);
    span t = trim(line);
    if (!t.n || t.p[0] != '|') return GDN_OK; /* the first line that is no row ends the table */
    ++*ln;
    int rc = parse_row(line, *ln, name, u, e);
    if (rc) return rc;
    *p = q;
  }
}

int parity_readme_parse(const char *text, const char *name, parity_readme_unkillable *u, gdn_error *e) {
  memset(u, 0, sizeof *u);
  if (!text) return GDN_OK;
  if (!name) name = "the README";
  int ln = 0, in_section = 0;
  for (const char *p = text; *p;) {
    const char *q;
    span line = line_at(p, &q);
    ln++;
    if (line.n >= 3 && !memcmp(line.p, "## ", 3)) {
      size_t sl = strlen(PARITY_README_SECTION);
      if (in_section) break; /* the next section */
      in_section = line.n >= sl && !memcmp(line.p, PARITY_README_SECTION, sl);
    } else if (in_section && is_header(line)) {
      if (u->table_line)
        return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: a second table \"%s\" (the first is at line %d); "
                             "keep one", name, ln, PARITY_README_HEADER, u->table_line);
      u->table_line = ln;
      p = q;
      int rc = parse_table(&p, &ln, name, u, e);
      if (rc) return rc;
      continue;
    }
    p = q;
  }
  return GDN_OK;
}
