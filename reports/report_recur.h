/* report_recur: the reports of a recurrence document -- what
 * `gdn-parity --recurrence NAME` (a row of the recurrences' table other than
 * gdn: parity/run/parity_recur_sweep.h, its "grad" parity_recur_grad.h),
 * `sweep` / `coverage --recurrence NAME` (parity_recur_grid.h) and `check`
 * of such a fixture (parity_recur_check.h; several files: a JSON array of
 * their documents) write -- as HTML, JUnit XML and Markdown, built from the
 * document alone as the GDN reports are (report_html.h, report_junit.h,
 * report_markdown.h), every document string through report_escape.
 *
 * The schemas read: "gdn-parity-recurrence" (a forward sweep, with its
 * backward under "grad"), "gdn-parity-recurrence-check" (or an array of
 * them), "gdn-parity-recurrence-sweep" (its "entries" are forward
 * documents) and "gdn-parity-recurrence-coverage", version 1 each.  A
 * "section" is one forward or check document (a sweep has one per entry);
 * a "row" one case of a section, forward ("cases") or backward
 * ("grad"."cases").  A row's outputs are o and ht (forward) or dq dk dv dg
 * dbeta dh0 (backward), each judged by err <= band: the case's "band" (else
 * the section's, or its "grad"'s), "band_ht" for ht where a check case has
 * one; an output that is null (ht not stored by a fixture) is not judged.
 *
 * Every view says what the document says: the recurrence and its gate
 * shape, the oracle tier and its certificate, why the numerics mode moved
 * the band (where it did: "band_reason"), each case's subject, chunk
 * and devices, its outputs' errors against their band, kappa_G's worst
 * channel (per-channel gates), the verdict, and on a failing run, first,
 * the failing output whose err / band is largest.  Deterministic: the same
 * document gives the same bytes, so `gdn-parity report RECUR.json` rebuilds
 * the run's own files byte for byte.
 */
#ifndef REPORT_RECUR_H
#define REPORT_RECUR_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

/* Whether doc is a recurrence document (its "schema" one of the four above,
 * or a non-empty array whose first element's is the check's). */
int report_recur_is(const json_t *doc);

/* Every field the writers walk, with its type; and what a rebuilt verdict
 * rests on: a case whose "pass" is true has no output over its band, a
 * section's "n_failed" counts its failing rows and its "pass" is
 * n_failed == 0, a sweep's and a coverage's counts and verdict agree with
 * their entries and mutants.  Else GDN_ERR_INPUT naming source and the
 * field: "KDA.json: entries[1].cases[3].o.err: missing or not a number". */
int report_recur_validate(const json_t *doc, const char *source, gdn_error *e);

/* The document's verdict (an array: every element's). */
int report_recur_pass(const json_t *doc);

/* One case of a section, as the writers walk them (report_recur_each). */
typedef struct report_recur_row {
  const json_t *sec;  /* the forward or check document */
  const json_t *c;    /* the case */
  int backward;       /* 1: a case of sec's "grad" */
  long long sec_index; /* the entry (sweep) or the file (array of checks); -1: the document itself */
  size_t index;       /* in its cases array */
} report_recur_row;

#define REPORT_RECUR_MAX_OUTPUTS 6
/* The row's output names (o ht, or the six gradients); returns how many. */
int report_recur_outputs(const report_recur_row *r, const char *names[REPORT_RECUR_MAX_OUTPUTS]);
/* Output name of r: 1 with *err and *band when judged, 0 when not (null or
 * absent). */
int report_recur_output(const report_recur_row *r, const char *name, double *err, double *band);
/* "kda-chunk C=64 D=2" (with "backward" after it, and "entry N: " or
 * "FILE: " in front where the document has several sections); NUL-terminated
 * within n. */
void report_recur_row_label(const report_recur_row *r, char *buf, size_t n);

/* Calls fn on every row in document order: each section's forward cases,
 * then its backward ones. */
typedef void (*report_recur_row_fn)(const report_recur_row *r, void *ctx);
void report_recur_each(const json_t *doc, report_recur_row_fn fn, void *ctx);

/* The deciding failure: of the failing rows' outputs over their band, the
 * one with the largest err / band (the first on a tie).  0 when none fails. */
typedef struct report_recur_worst {
  report_recur_row row;
  const char *output;
  double err, band;
} report_recur_worst;
int report_recur_find_worst(const json_t *doc, report_recur_worst *w);
/* "kda-chunk C=64: o err 0.41 > band 1.2e-5 (3.4e+04x the band)". */
void report_recur_worst_text(const report_recur_worst *w, char *buf, size_t n);

/* The first section (the document, a sweep's first entry, the first file),
 * whose recurrence, gate shape and oracle the header shows; NULL for a
 * coverage document. */
const json_t *report_recur_first_section(const json_t *doc);
/* The schema's kind in words: "forward sweep" ("forward and backward
 * sweep" with a "grad"), "check", "grid sweep", "coverage". */
const char *report_recur_kind(const json_t *doc);
/* The gate's shape in words ("g of shape (B, T, Hv, Dk): one gate per key
 * channel" for head-token-channel). */
const char *report_recur_gate_words(const char *gate_shape);

/* Texts every view shows, NUL-terminated within n: the section's shape
 * ("B=1 T=64 Hk=1 Hv=2 Dk=16 Dv=16"), its oracle and certificate ("mpfr at
 * 128 bits, checked at 192, certified 120 bits"; dd: the sampled columns and
 * normwise bits; a fixture's stored /oracle: its spot check), the backward's
 * oracle ("grad"."oracle", with the bits certified per gradient; "" when
 * none), and a case's kappa_G ("kappa_G 47.3 on channel 5 (median channel
 * 12.1)"; "" when the case has none). */
void report_recur_shape_text(const json_t *sec, char *buf, size_t n);
void report_recur_oracle_text(const json_t *sec, char *buf, size_t n);
void report_recur_grad_oracle_text(const json_t *sec, char *buf, size_t n);
void report_recur_kappa_text(const json_t *c, char *buf, size_t n);
/* Why the numerics mode moved the section's band (its "band_reason", or
 * with backward its "grad"'s), NULL where the mode left float32's band:
 * every view prints it beside the band. */
const char *report_recur_band_reason(const json_t *sec, int backward);
/* The mutant planted in a forward document ("mutant", or "grad"."vjp_mutant"
 * other than "none"), NULL when none. */
const char *report_recur_mutant(const json_t *doc);
#define REPORT_RECUR_MUTANT_NOTE                                                                               \
  "the kernels judged here carry this catalogued bug (--mutant, testing only): FAIL means the band caught it, " \
  "PASS that it survived"

/* The JSON itself: indent 2, keys sorted (the bytes gdn-parity has always
 * written for these documents, no final newline). */
int report_recur_json_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_recur_html_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_recur_junit_render(const json_t *doc, report_buf *b, gdn_error *e);
/* html_relpath: the HTML report relative to the summary's folder, or NULL. */
int report_recur_markdown_render(const json_t *doc, const char *html_relpath, report_buf *b, gdn_error *e);

/* Each path NULL: not written.  The JSON is rendered first and read back,
 * and the reports are rendered from what was read back, so they are the
 * bytes `gdn-parity report` rebuilds from the saved file (the JSON itself is
 * written unvalidated; each report validates the document first).  Each file is
 * written with gdn_atomic_write_all: inside the caller's gdn_atomic_set
 * (parity_output_write_all) a failure leaves every destination as it was. */
int report_recur_write_all(const json_t *doc, const char *json, const char *html, const char *junit, const char *md,
                           const char *md_link, gdn_error *e);

#endif
