/* report_summary: what every report says first, computed once from a
 * validated document, so the HTML, JUnit and Markdown outputs cannot
 * disagree about the verdict, the worst case or the order of the cases.
 *
 * Rules (documented in docs/results-json.md, "How reports read it"):
 * - margin of a case = value / limit of its deciding check (NaN or an
 *   infinite value counts as +inf: it is as bad as it gets; limit 0 gives
 *   0 for value 0, +inf otherwise).
 * - worst case: among failing cases (pass false) the largest margin, else the
 *   largest margin over all cases (the one closest to its limit); ties go to
 *   the earlier case.  Cases without checks rank below cases with checks.
 * - display order: failing cases by decreasing margin, then passing cases in
 *   document order.
 * - upstream: per distinct upstream check name (first appearance order), how
 *   often it passes, and how often it passes where we fail ("would have
 *   missed") or fails where we pass ("stricter").
 * - external outputs: every impls entry that carries its own "pass" (a
 *   fixture's /outputs/<name>), with its failing count and its worst case
 *   by the same rule applied to its own deciding check.
 * Memory: O(number of cases + number of external outputs).
 */
#ifndef REPORT_SUMMARY_H
#define REPORT_SUMMARY_H

#include <jansson.h>
#include <stddef.h>

#include "gdn_error.h"

#define REPORT_SUMMARY_MAX_UPSTREAM 16

typedef struct report_case_view {
  const json_t *c;        /* the case (borrowed from the document) */
  size_t index;           /* position in the document's cases */
  int pass;               /* the case's own verdict */
  const char *error;      /* cases[].error, or NULL */
  const json_t *deciding; /* the deciding check, or NULL when there are none */
  double value, limit;    /* of the deciding check (NaN without one) */
  double margin;          /* value / limit, see above; -inf without a check */
  int upstream_n;         /* upstream checks listed for the case */
  int upstream_pass;      /* how many of them pass */
} report_case_view;

typedef struct report_upstream_stat {
  const char *name; /* borrowed */
  size_t cases, pass, missed, stricter;
} report_upstream_stat;

/* A judged subject other than the kernels (an impls entry with its own
 * "pass": a fixture's /outputs/<name>), over every case that lists it. */
typedef struct report_external_stat {
  const char *name;       /* borrowed */
  size_t cases, fail;
  size_t worst;           /* index into cases of its worst case (failing first,
                             then the largest margin, earliest on ties) */
  const json_t *deciding; /* its deciding check there, or NULL (no checks) */
  double value, limit, margin;
} report_external_stat;

typedef struct report_summary {
  const json_t *doc;
  int pass;               /* the document's verdict */
  size_t n, n_fail, n_error;
  size_t n_missed;        /* failing cases where some upstream check passes */
  report_case_view *cases; /* document order */
  size_t *order;          /* display order (indices into cases) */
  size_t worst;           /* index into cases; SIZE_MAX when there are no cases */
  size_t n_upstream;
  report_upstream_stat upstream[REPORT_SUMMARY_MAX_UPSTREAM];
  size_t upstream_dropped; /* distinct names beyond the cap */
  report_external_stat *externals; /* first-appearance order */
  size_t n_externals;
  unsigned modes;          /* report_modes_varying, set by the renderers that use it */
} report_summary;

void report_summary_init(report_summary *s);
void report_summary_clear(report_summary *s);
/* doc must be validated (report_doc_validate). */
int report_summary_build(const json_t *doc, report_summary *s, gdn_error *e);
/* The start of every results renderer: validates doc as a results
 * document, then initialises and builds s (report_summary_clear after
 * success; nothing to clear after a failure). */
int report_summary_load(const json_t *doc, report_summary *s, gdn_error *e);

/* The deciding check of subject `name` in case c: its first failing
 * check, else its largest margin (earliest on ties); NULL without checks. */
const json_t *report_summary_subject_deciding(const json_t *c, const char *name);

/* The margin rule above, for one value/limit pair. */
double report_summary_margin(double value, double limit);

#endif
