/* report_modes: the execution modes a case records beyond its prefix
 * schedule -- "shard" (tokens | chunks), "solve" (substitution |
 * xla-expander) and "packing" (leak | reset, packed documents only) -- and
 * which of them vary across a document's cases.  The reports state a mode
 * once when every case shares it and per case where it varies, so a table
 * never hides the one thing two rows differ in.  A case without a key
 * (older documents, packing without documents) counts as its own value,
 * "absent". */
#ifndef REPORT_MODES_H
#define REPORT_MODES_H

#include <jansson.h>

#include "report_buf.h"
#include "report_summary.h"

enum { REPORT_MODE_SHARD = 0, REPORT_MODE_SOLVE = 1, REPORT_MODE_PACKING = 2, REPORT_MODE_N = 3 };
extern const char *const report_mode_keys[REPORT_MODE_N]; /* "shard" "solve" "packing" */

/* Bit k set: the cases differ in report_mode_keys[k]. */
unsigned report_modes_varying(const report_summary *s);

/* Appends " · VALUE" for each key in `mask` that case c has, escaping each
 * value with `esc` (the caller's format: HTML text or a Markdown cell). */
void report_modes_append(report_buf *b, const json_t *c, unsigned mask,
                         void (*esc)(report_buf *b, const char *s));

/* Appends "shard tokens, solve substitution" for the keys NOT in `varying`
 * that the first case has (the modes every case shares); returns how many
 * it wrote. */
int report_modes_common(report_buf *b, const report_summary *s, unsigned varying,
                        void (*esc)(report_buf *b, const char *s));

#endif
