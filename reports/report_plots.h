/* report_plots: the figures of the HTML report, drawn from the document.
 *
 *   plot-profile  error of o along the sequence, shard seams marked: one plot
 *                 per distinct (input, chunk), each for the worst case of
 *                 that group; the worst group is open, the others are in
 *                 <details> (a selector that needs no script); a seam table
 *                 under each plot.  Profiles longer than REPORT_PLOTS_MAX_POINTS
 *                 blocks are thinned by taking the max over runs of blocks
 *                 (a max keeps the peaks a reviewer looks for).
 *   plot-devices  o rel_fro against device count, one series per prefix
 *                 schedule (and dtype, when several), the scan as reference.
 *   plot-length   o rel_fro against T for scan and affine-prefix.
 *   plot-heatmap  affine-prefix / scan ratio of o rel_fro over devices x T.
 *   plot-ulp      histogram of ULP errors of o, summed over the cases.
 * Aggregation over the parameters a plot does not show is the max (NaN wins:
 * a NaN anywhere is the worst news and must not be averaged away); the
 * caption says so.  A plot without data to show (one T, one device count,
 * no oracle) is replaced by a one-line note in the same <figure id>.
 */
#ifndef REPORT_PLOTS_H
#define REPORT_PLOTS_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"
#include "report_summary.h"

#define REPORT_PLOTS_MAX_POINTS 500
#define REPORT_PLOTS_MAX_PROFILES 24

int report_plots_render(const json_t *doc, const report_summary *s, report_buf *b, gdn_error *e);

#endif
