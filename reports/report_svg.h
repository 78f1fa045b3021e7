/* report_svg: inline SVG plots drawn by our own code (no scripts, no
 * external resources), for the HTML report.
 *
 * A plot is a viewBox of w x h user units with the plot area inset by fixed
 * margins, axes from report_axis, tick labels, axis labels (with units: the
 * caller passes them), a legend column on the right, and series drawn as
 * polylines.  Guarantees: every coordinate written is finite (printed with
 * one decimal, C locale), so the SVG never contains "nan" or "inf"; a
 * non-finite y value breaks the line and is drawn as a marker on the top edge
 * (x for NaN, a triangle for +-infinity) with a tooltip; a value clamped to a
 * log axis' floor is drawn as a hollow down-triangle; an isolated point (a
 * single value, or one between gaps) still gets a visible marker.
 * Series are told apart by colour (Okabe-Ito, safe for colour-blind
 * readers), dash pattern and marker, so a grey-scale print still works.
 * Text from the document is escaped (report_escape).
 */
#ifndef REPORT_SVG_H
#define REPORT_SVG_H

#include <stddef.h>

#include "report_axis.h"
#include "report_buf.h"

#define REPORT_SVG_STYLES 7

typedef struct report_plot {
  report_buf *b;
  double w, h;
  double x0, x1, y0, y1; /* plot area: left, right, top, bottom */
  const report_axis *x, *y;
  size_t n_legend;
  size_t n_nonfinite_drawn;
} report_plot;

/* Opens <svg id=... viewBox=...> with a <title> (label), frame, grid, ticks
 * and axis labels.  id and label are escaped. */
void report_plot_begin(report_plot *p, report_buf *b, const char *id, const char *label, double w,
                       double h, const report_axis *x, const report_axis *y, const char *xlabel,
                       const char *ylabel);
/* Data to user units; NaN for a non-finite value. */
double report_plot_px(const report_plot *p, double x);
double report_plot_py(const report_plot *p, double y);
/* A line through (x[i], y[i]) in style (0..REPORT_SVG_STYLES-1, wraps), with
 * a legend entry `name` (NULL: none).  markers: 1 draws a marker at every
 * point (few points), 0 only where a point would otherwise be invisible. */
void report_plot_series(report_plot *p, const double *x, const double *y, size_t n, int style,
                        int markers, const char *name);
/* A horizontal reference line at y with a legend entry. */
void report_plot_hline(report_plot *p, double y, int style, const char *name);
/* A vertical marker (a shard seam) at x, labelled at the top, with a
 * tooltip. */
void report_plot_vline(report_plot *p, double x, const char *label, const char *tooltip);
/* The same for a seam with padding before it (--shard tokens, T/D not a
 * multiple of C): class "seam padded", drawn orange and denser. */
void report_plot_vline_padded(report_plot *p, double x, const char *label, const char *tooltip);
/* A legend entry without a series: a line in a style, the grey dashed line
 * of the seam markers (orange for padded seams), or a filled swatch (bars). */
typedef enum {
  REPORT_LEGEND_LINE,
  REPORT_LEGEND_SEAM,
  REPORT_LEGEND_SWATCH,
  REPORT_LEGEND_SEAM_PADDED,
} report_legend_kind;
void report_plot_legend(report_plot *p, int style, report_legend_kind kind, const char *name);
void report_plot_end(report_plot *p);

/* Primitives, also used by the heatmap and histogram. */
void report_svg_num(report_buf *b, double v);     /* finite, "%.1f"; non-finite -> 0 */
void report_svg_text(report_buf *b, double x, double y, const char *anchor, const char *cls,
                     const char *text);           /* text escaped */
const char *report_svg_color(int style);

#endif
