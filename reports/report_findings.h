/* report_findings: cases[].finding, gathered for every report.
 *
 * A finding says what a case's numbers mean beyond pass/fail (the sweep
 * writes them: "range: ..." when the exact output lies below the format's
 * range, "stock algorithm: ..." when a band follows the stock chunked
 * algorithm's condition measure kappa_G, both joined by "; ").  A grid
 * repeats one finding over many cases (every device count of one input
 * and chunk size), so the reports list each distinct text once, in
 * document order, with how many cases carry it and the first one. */
#ifndef REPORT_FINDINGS_H
#define REPORT_FINDINGS_H

#include <stddef.h>

#include "report_buf.h"
#include "report_summary.h"

typedef struct report_finding {
  const char *text;     /* borrowed from the document */
  const char *first_id; /* the first case carrying it (borrowed; may be NULL) */
  size_t cases;         /* how many cases carry exactly this text */
} report_finding;

/* Distinct findings of s's cases into out[0..cap); returns how many there
 * are in all (more than cap: the rest are counted, not listed).  O(n cap). */
size_t report_findings_collect(const report_summary *s, report_finding *out, size_t cap);

/* "a finding about the stock algorithm", "a finding about the format's
 * range", "findings about the format's range and the stock algorithm", or
 * "a finding" for a text of neither kind. */
const char *report_finding_label(const char *text);

/* The reports show at most this many findings, then "... and N more". */
#define REPORT_FINDINGS_SHOWN 8

/* How one writer lists the findings: the list's opening, one item, the
 * line for the findings not shown (a printf format of their count, %zu),
 * and the closing. */
typedef struct report_findings_style {
  const char *open;
  void (*item)(report_buf *b, const report_finding *f);
  const char *more;
  const char *close;
} report_findings_style;

/* Each distinct finding of s once, at most REPORT_FINDINGS_SHOWN, in the
 * writer's style; nothing at all when no case has a finding. */
void report_findings_list(report_buf *b, const report_summary *s, const report_findings_style *st);

#endif
