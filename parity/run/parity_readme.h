/* parity_readme: which mutants the README explains as unkillable
 * (`gdn-parity coverage --readme`).
 *
 * The README is read as GitHub renders it: CommonMark with GFM tables
 * (cmark-gfm), so a code fence, an indented code block or an HTML comment
 * holds no heading and no table, a UTF-8 byte order mark is not text, and
 * "\|" is a pipe inside a cell.  An explanation is tied to exactly one
 * mutant, explicitly: a GFM table in the README's section "## What a test
 * must cover first" (a level-2 heading with that text, to the next heading
 * of level 1 or 2) whose header row is
 *
 *     | mutant | why it cannot be killed |
 *
 * followed by a delimiter row (|---|---|) and one row per mutant:
 *
 *     | `final-from-replay` | equals the correct program in exact arithmetic ... |
 *
 * Only that table is read: prose elsewhere ("X cannot be killed") explains
 * nothing, so a paragraph that names a killable mutant beside the phrase
 * no longer excuses it.  Refused (GDN_ERR_INPUT, naming the README and the
 * line): a row without exactly two cells (counted on its source line as GFM
 * splits it: GFM itself pads or drops cells to the header's count), a first
 * cell that is not one
 * mutant name in backticks, a name not in the catalogue (kern_mutant.c) or
 * "none", a mutant listed twice, an empty reason, a second such table, and
 * a mutant the catalogue marks as killed by the recommended grid
 * (kern_mutant_row.killed_by_recommended: some grid of the project kills
 * it, so it is not unkillable), and a paragraph of the section that starts
 * with the header row but has no delimiter row (Markdown reads no table
 * there).  A README without the section or the table explains nothing (not
 * an error).
 */
#ifndef PARITY_README_H
#define PARITY_README_H

#include "gdn_error.h"
#include "kern_mutant.h"

#define PARITY_README_SECTION "## What a test must cover first"
#define PARITY_README_HEADER "| mutant | why it cannot be killed |"

typedef struct parity_readme_unkillable {
  int line[KERN_MUTANT_COUNT]; /* 1-based line of the mutant's row; 0: not listed */
  int table_line;              /* the header row's line; 0: no table */
} parity_readme_unkillable;

/* Parses `text` (the README named `name`, for messages) into *u; text NULL
 * gives an empty set.  GDN_ERR_INPUT as above. */
int parity_readme_parse(const char *text, const char *name, parity_readme_unkillable *u, gdn_error *e);

#endif
