/* The README's table of unkillable mutants (parity_readme.h). */
#include "parity_readme.h"

#include <stdio.h>
#include <string.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm-extension_api.h>
#include <cmark-gfm.h>

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

static int is_header(span line) {
  span c[MAX_CELLS];
  return row_cells(line, c) == 2 && span_is(c[0], "mutant") && span_is(c[1], "why it cannot be killed");
}

/* The source line `ln` (1-based) of text. */
static span source_line(const char *text, int ln) {
  const char *p = text, *q = text;
  for (int i = 1; i <= ln && *p; i++) {
    span l = line_at(p, &q);
    if (i == ln) return l;
    p = q;
  }
  return (span){p, 0};
}

/* The plain text of a node's inline children (text, code, escapes
 * resolved), cut at n. */
static void node_text(cmark_node *node, char *out, size_t n) {
  size_t used = 0;
  out[0] = '\0';
  cmark_iter *it = cmark_iter_new(node);
  for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
    cmark_node *c = cmark_iter_get_node(it);
    const char *lit = ev == CMARK_EVENT_ENTER ? cmark_node_get_literal(c) : NULL;
    if (lit && used < n) used += (size_t)snprintf(out + used, n - used, "%s", lit);
  }
  cmark_iter_free(it);
}

static int type_is(cmark_node *n, const char *t) { return !strcmp(cmark_node_get_type_string(n), t); }

/* A table whose header row is "mutant | why it cannot be killed". */
static int unkillable_table(cmark_node *table) {
  cmark_node *hdr = cmark_node_first_child(table);
  if (!hdr || cmark_gfm_extensions_get_table_columns(table) != 2) return 0;
  char a[64], b[64];
  cmark_node *c0 = cmark_node_first_child(hdr), *c1 = c0 ? cmark_node_next(c0) : NULL;
  if (!c1) return 0;
  node_text(c0, a, sizeof a);
  node_text(c1, b, sizeof b);
  return !strcmp(a, "mutant") && !strcmp(b, "why it cannot be killed");
}

/* A table row's cell count as GFM splits its source line: on each '|' not
 * escaped by a backslash, the row's optional leading and trailing pipe
 * dropped (a trailing "\|" is an escaped pipe, part of the last cell). */
static int gfm_cells(span line) {
  span t = trim(line);
  if (t.n && t.p[0] == '|') t.p++, t.n--;
  if (t.n && t.p[t.n - 1] == '|' && !(t.n >= 2 && t.p[t.n - 2] == '\\')) t.n--;
  int n = 1;
  for (size_t i = 0; i < t.n; i++) {
    if (t.p[i] == '\\') i++;
    else if (t.p[i] == '|') n++;
  }
  return n;
}

/* One body row of the table: its cells from the parse tree, their count
 * from its source line (GFM pads or drops cells to the header's count). */
static int parse_row(cmark_node *row, const char *text, const char *name, parity_readme_unkillable *u, gdn_error *e) {
  const int ln = cmark_node_get_start_line(row);
  span line = source_line(text, ln);
  char shown[160];
  snprintf(shown, sizeof shown, "%.*s", (int)(line.n < 150 ? line.n : 150), line.p);
  int n = gfm_cells(line);
  if (n != 2)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s': a row of the table \"%s\" needs exactly 2 cells "
                         "(`mutant-name` | why it cannot be killed), not %d", name, ln, gdn_text_show(shown),
                         PARITY_README_HEADER, n);
  cmark_node *c0 = cmark_node_first_child(row), *c1 = c0 ? cmark_node_next(c0) : NULL;
  cmark_node *code = c0 ? cmark_node_first_child(c0) : NULL;
  const char *lit = code && cmark_node_get_type(code) == CMARK_NODE_CODE && !cmark_node_next(code)
                        ? cmark_node_get_literal(code) : NULL;
  if (!lit || !*lit || strlen(lit) > 94)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s': the first cell must be one mutant name in "
                         "backticks, such as `final-from-replay`", name, ln, gdn_text_show(shown));
  char m[96];
  snprintf(m, sizeof m, "%s", lit);
  kern_mutant id = KERN_MUTANT_NONE;
  gdn_error sub;
  gdn_error_init(&sub);
  if (kern_mutant_parse(m, &id, &sub) || id == KERN_MUTANT_NONE)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: '%s' is not a catalogued mutant (kernels/kern_mutant.c)%s",
                         name, ln, gdn_text_show(m), id == KERN_MUTANT_NONE && !sub.code ? ": none is the correct program" : "");
  if (u->line[id])
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' is listed twice (first at line %d); one row "
                         "per mutant", name, ln, m, u->line[id]);
  char why[8];
  node_text(c1, why, sizeof why);
  if (!trim((span){why, strlen(why)}).n)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' has no reason why it cannot be killed", name,
                         ln, m);
  if (kern_mutant_row_of(id)->killed_by_recommended)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: mutant '%s' is listed as unkillable, but grids/upstream-pr.json "
                         "kills it (kernels/kern_mutant.c): a mutant some grid of the project kills is not "
                         "unkillable; remove the row", name, ln, m);
  u->line[id] = ln;
  return GDN_OK;
}

/* A block of the section: the table (its rows), a second one (refused), or
 * a paragraph that starts with the header row but has no delimiter row (so
 * Markdown reads no table: refused, naming the line the delimiter belongs). */
static int section_block(cmark_node *b, const char *text, const char *name, parity_readme_unkillable *u,
                         gdn_error *e) {
  const int ln = cmark_node_get_start_line(b);
  if (type_is(b, "paragraph") && is_header(source_line(text, ln)))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: the table \"%s\" (line %d) needs its delimiter row "
                         "|---|---| next", name, ln + 1, PARITY_README_HEADER, ln);
  if (!type_is(b, "table") || !unkillable_table(b)) return GDN_OK;
  if (u->table_line)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s line %d: a second table \"%s\" (the first is at line %d); "
                         "keep one", name, ln, PARITY_README_HEADER, u->table_line);
  u->table_line = ln;
  for (cmark_node *r = cmark_node_next(cmark_node_first_child(b)); r; r = cmark_node_next(r)) {
    int rc = parse_row(r, text, name, u, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* The Markdown of text, as GitHub reads it (CommonMark with GFM tables). */
static cmark_node *parse_gfm(const char *text) {
  cmark_gfm_core_extensions_ensure_registered();
  cmark_parser *p = cmark_parser_new(CMARK_OPT_DEFAULT);
  cmark_syntax_extension *table = cmark_find_syntax_extension("table");
  if (!p || !table || !cmark_parser_attach_syntax_extension(p, table)) {
    if (p) cmark_parser_free(p);
    return NULL;
  }
  cmark_parser_feed(p, text, strlen(text));
  cmark_node *doc = cmark_parser_finish(p);
  cmark_parser_free(p);
  return doc;
}

int parity_readme_parse(const char *text, const char *name, parity_readme_unkillable *u, gdn_error *e) {
  memset(u, 0, sizeof *u);
  if (!text) return GDN_OK;
  if (!name) name = "the README";
  cmark_node *doc = parse_gfm(text);
  if (!doc) return gdn_error_set(e, GDN_ERR_NOMEM, "%s: the Markdown parser could not start (out of memory?)", name);
  const char *title = PARITY_README_SECTION + 3; /* the heading's text, after "## " */
  int in_section = 0, rc = GDN_OK;
  for (cmark_node *b = cmark_node_first_child(doc); b && !rc; b = cmark_node_next(b)) {
    if (cmark_node_get_type(b) == CMARK_NODE_HEADING && cmark_node_get_heading_level(b) <= 2) {
      if (in_section) break; /* the next section */
      char h[256];
      node_text(b, h, sizeof h);
      in_section = cmark_node_get_heading_level(b) == 2 && !strncmp(h, title, strlen(title));
    } else if (in_section) {
      rc = section_block(b, text, name, u, e);
    }
  }
  cmark_node_free(doc);
  return rc;
}
