#include "report_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_escape.h"

/* Okabe & Ito's palette; black last. */
static const char *const COLORS[REPORT_SVG_STYLES] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                      "#E69F00", "#56B4E9", "#000000"};
static const char *const DASHES[REPORT_SVG_STYLES] = {"", "6 3", "2 2", "8 3 2 3", "4 4", "1 3",
                                                      "10 4"};

const char *report_svg_color(int style) {
  if (style < 0) style = -style;
  return COLORS[style % REPORT_SVG_STYLES];
}

void report_svg_num(report_buf *b, double v) {
  if (!isfinite(v)) v = 0;
  /* Avoid "-0.0". */
  if (v > -0.05 && v < 0.05) v = 0;
  report_buf_printf(b, "%.1f", v);
}

static void attr_num(report_buf *b, const char *name, double v) {
  report_buf_printf(b, " %s=\"", name);
  report_svg_num(b, v);
  report_buf_putc(b, '"');
}

/* A grid line or a tick: <line x1 x2 y1 y2/> (attributes in this order). */
static void line_el(report_buf *b, double x1, double x2, double y1, double y2) {
  report_buf_puts(b, "<line");
  attr_num(b, "x1", x1);
  attr_num(b, "x2", x2);
  attr_num(b, "y1", y1);
  attr_num(b, "y2", y2);
  report_buf_puts(b, "/>");
}

void report_svg_text(report_buf *b, double x, double y, const char *anchor, const char *cls,
                     const char *text) {
  report_buf_puts(b, "<text");
  attr_num(b, "x", x);
  attr_num(b, "y", y);
  if (anchor) report_buf_printf(b, " text-anchor=\"%s\"", anchor);
  if (cls) report_buf_printf(b, " class=\"%s\"", cls);
  report_buf_putc(b, '>');
  report_escape_html_text_z(b, text);
  report_buf_puts(b, "</text>");
}

double report_plot_px(const report_plot *p, double x) {
  double f = report_axis_frac(p->x, x);
  return isfinite(f) ? p->x0 + f * (p->x1 - p->x0) : NAN;
}

double report_plot_py(const report_plot *p, double y) {
  double f = report_axis_frac(p->y, y);
  return isfinite(f) ? p->y1 - f * (p->y1 - p->y0) : NAN;
}

/* Legend column to the right of the plot area. */
#define LEGEND_W 190.0

void report_plot_begin(report_plot *p, report_buf *b, const char *id, const char *label, double w,
                       double h, const report_axis *x, const report_axis *y, const char *xlabel,
                       const char *ylabel) {
  memset(p, 0, sizeof *p);
  p->b = b;
  p->w = w;
  p->h = h;
  p->x = x;
  p->y = y;
  p->x0 = 74;
  p->x1 = w - LEGEND_W;
  p->y0 = 16;
  p->y1 = h - 46;
  report_buf_puts(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" role=\"img\"");
  if (id) {
    report_buf_puts(b, " id=\"");
    report_escape_html_attr_z(b, id);
    report_buf_putc(b, '"');
  }
  report_buf_puts(b, " viewBox=\"0 0 ");
  report_svg_num(b, w);
  report_buf_putc(b, ' ');
  report_svg_num(b, h);
  report_buf_puts(b, "\" preserveAspectRatio=\"xMidYMid meet\" aria-label=\"");
  report_escape_html_attr_z(b, label);
  report_buf_puts(b, "\"><title>");
  report_escape_html_text_z(b, label);
  report_buf_puts(b, "</title>\n");
  /* Grid and ticks. */
  char t[40];
  report_buf_puts(b, "<g class=\"grid\">");
  for (size_t i = 0; i < x->n_ticks; i++) {
    double px = report_plot_px(p, x->ticks[i]);
    line_el(b, px, px, p->y0, p->y1);
  }
  for (size_t i = 0; i < y->n_ticks; i++) {
    double py = report_plot_py(p, y->ticks[i]);
    line_el(b, p->x0, p->x1, py, py);
  }
  report_buf_puts(b, "</g>\n<rect class=\"frame\"");
  attr_num(b, "x", p->x0);
  attr_num(b, "y", p->y0);
  attr_num(b, "width", p->x1 - p->x0);
  attr_num(b, "height", p->y1 - p->y0);
  report_buf_puts(b, "/>\n<g class=\"ticks\">");
  for (size_t i = 0; i < x->n_ticks; i++) {
    double px = report_plot_px(p, x->ticks[i]);
    line_el(b, px, px, p->y1, p->y1 + 5);
    report_axis_format(x, x->ticks[i], t);
    report_svg_text(b, px, p->y1 + 18, "middle", NULL, t);
  }
  for (size_t i = 0; i < y->n_ticks; i++) {
    double py = report_plot_py(p, y->ticks[i]);
    line_el(b, p->x0 - 5, p->x0, py, py);
    report_axis_format(y, y->ticks[i], t);
    report_svg_text(b, p->x0 - 8, py + 4, "end", NULL, t);
  }
  report_buf_puts(b, "</g>\n");
  report_svg_text(b, (p->x0 + p->x1) / 2, h - 8, "middle", "axis-label", xlabel);
  double cy = (p->y0 + p->y1) / 2;
  report_buf_puts(b, "<text class=\"axis-label\" text-anchor=\"middle\" transform=\"translate(16 ");
  report_svg_num(b, cy);
  report_buf_puts(b, ") rotate(-90)\">");
  report_escape_html_text_z(b, ylabel);
  report_buf_puts(b, "</text>\n");
  if (y->log && y->clamped) {
    char f[40];
    report_axis_format(y, y->floor, f);
    char note[96];
    snprintf(note, sizeof note, "values <= 0 drawn at %s", f);
    /* Under the axis, right-aligned: clear of the clamped markers. */
    report_svg_text(b, p->x1, h - 8, "end", "floor-note", note);
  }
}

static void style_attrs(report_buf *b, int style) {
  report_buf_printf(b, " stroke=\"%s\"", report_svg_color(style));
  const char *d = DASHES[(style < 0 ? -style : style) % REPORT_SVG_STYLES];
  if (d[0]) report_buf_printf(b, " stroke-dasharray=\"%s\"", d);
}

/* Marker shapes by style: circle, square, diamond, up-triangle, ... */
static void marker(report_buf *b, double x, double y, int style, const char *title) {
  int m = (style < 0 ? -style : style) % 4;
  const char *c = report_svg_color(style);
  switch (m) {
  case 0:
    report_buf_puts(b, "<circle");
    attr_num(b, "cx", x);
    attr_num(b, "cy", y);
    report_buf_puts(b, " r=\"3\"");
    break;
  case 1:
    report_buf_puts(b, "<rect");
    attr_num(b, "x", x - 3);
    attr_num(b, "y", y - 3);
    report_buf_puts(b, " width=\"6\" height=\"6\"");
    break;
  default:
    report_buf_puts(b, "<path d=\"M");
    report_svg_num(b, x);
    report_buf_putc(b, ' ');
    report_svg_num(b, y - 4);
    if (m == 2) {
      report_buf_puts(b, " l4 4 l-4 4 l-4 -4 z\"");
    } else {
      report_buf_puts(b, " l4 7 l-8 0 z\"");
    }
    break;
  }
  report_buf_printf(b, " fill=\"%s\" class=\"marker\"", c);
  if (title) {
    report_buf_puts(b, "><title>");
    report_escape_html_text_z(b, title);
    report_buf_puts(b, "</title></");
    report_buf_puts(b, m == 0 ? "circle>" : m == 1 ? "rect>" : "path>");
  } else {
    report_buf_puts(b, "/>");
  }
}

static void nonfinite_marker(report_plot *p, double px, double v, int style, const char *name) {
  report_buf *b = p->b;
  char title[160];
  const char *what = isnan(v) ? "not a number" : v > 0 ? "+\xE2\x88\x9E" : "-\xE2\x88\x9E";
  snprintf(title, sizeof title, "%s: %s", name ? name : "value", what);
  double y = p->y0 + 1;
  report_buf_printf(b, "<path class=\"nonfinite\" stroke=\"%s\" d=\"", report_svg_color(style));
  if (isnan(v)) { /* a cross just under the top edge */
    report_buf_puts(b, "M");
    report_svg_num(b, px - 4);
    report_buf_putc(b, ' ');
    report_svg_num(b, y);
    report_buf_puts(b, " l8 8 m0 -8 l-8 8\"");
  } else { /* an arrowhead pointing off the axis */
    report_buf_puts(b, "M");
    report_svg_num(b, px - 4);
    report_buf_putc(b, ' ');
    report_svg_num(b, y + 8);
    report_buf_puts(b, " l4 -8 l4 8 z\"");
    report_buf_printf(b, " fill=\"%s\"", report_svg_color(style));
  }
  report_buf_puts(b, "><title>");
  report_escape_html_text_z(b, title);
  report_buf_puts(b, "</title></path>");
  p->n_nonfinite_drawn++;
}

static void clamped_marker(report_plot *p, double px, double py, int style, const char *name) {
  report_buf *b = p->b;
  report_buf_printf(b, "<path class=\"clamped\" fill=\"none\" stroke=\"%s\" d=\"M",
                    report_svg_color(style));
  report_svg_num(b, px - 4);
  report_buf_putc(b, ' ');
  report_svg_num(b, py - 7);
  report_buf_puts(b, " l8 0 l-4 7 z\"><title>");
  report_escape_html_text_z(b, name ? name : "value");
  report_buf_puts(b, ": 0 (at the floor)</title></path>");
}

static void legend_entry(report_plot *p, int style, report_legend_kind kind, const char *name) {
  report_buf *b = p->b;
  double lx = p->x1 + 14, ly = p->y0 + 8 + 18.0 * (double)p->n_legend;
  int grey_dashed = kind == REPORT_LEGEND_SEAM, padded = kind == REPORT_LEGEND_SEAM_PADDED;
  if (kind == REPORT_LEGEND_SWATCH) {
    report_buf_puts(b, "<rect");
    attr_num(b, "x", lx + 6);
    attr_num(b, "y", ly - 6);
    report_buf_printf(b, " width=\"14\" height=\"12\" fill=\"%s\"/>", report_svg_color(style));
  } else {
    report_buf_puts(b, "<line");
    attr_num(b, "x1", lx);
    attr_num(b, "x2", lx + 26);
    attr_num(b, "y1", ly);
    attr_num(b, "y2", ly);
    if (grey_dashed) report_buf_puts(b, " stroke=\"#777\" stroke-dasharray=\"3 3\"");
    else if (padded) report_buf_puts(b, " stroke=\"#bc4c00\" stroke-dasharray=\"2 2\"");
    else style_attrs(b, style);
    report_buf_puts(b, " class=\"series\"/>");
  }
  if (kind == REPORT_LEGEND_LINE) marker(b, lx + 13, ly, style, NULL);
  /* Long names are cut for the layout; the tooltip keeps the whole. */
  char cut[40];
  size_t n = strlen(name);
  if (n > 26) {
    size_t k = 24;
    while (k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80) k--; /* UTF-8 boundary */
    memcpy(cut, name, k);
    memcpy(cut + k, "\xE2\x80\xA6", 4);
  }
  report_buf_puts(b, "<text class=\"legend\"");
  attr_num(b, "x", lx + 32);
  attr_num(b, "y", ly + 4);
  report_buf_putc(b, '>');
  report_escape_html_text_z(b, n > 26 ? cut : name);
  if (n > 26) {
    report_buf_puts(b, "<title>");
    report_escape_html_text_z(b, name);
    report_buf_puts(b, "</title>");
  }
  report_buf_puts(b, "</text>\n");
  p->n_legend++;
}

void report_plot_legend(report_plot *p, int style, report_legend_kind kind, const char *name) {
  legend_entry(p, style, kind, name);
}

void report_plot_series(report_plot *p, const double *x, const double *y, size_t n, int style,
                        int markers, const char *name) {
  report_buf *b = p->b;
  report_buf_puts(b, "<g class=\"series\"");
  style_attrs(b, style);
  report_buf_puts(b, " fill=\"none\">");
  /* Polylines, broken at every non-finite value. */
  size_t i = 0;
  while (i < n) {
    while (i < n && !(isfinite(x[i]) && isfinite(y[i]))) i++;
    size_t j = i;
    while (j < n && isfinite(x[j]) && isfinite(y[j])) j++;
    if (j - i >= 2) {
      report_buf_puts(b, "<polyline points=\"");
      for (size_t k = i; k < j; k++) {
        if (k > i) report_buf_putc(b, ' ');
        report_svg_num(b, report_plot_px(p, x[k]));
        report_buf_putc(b, ',');
        report_svg_num(b, report_plot_py(p, y[k]));
      }
      report_buf_puts(b, "\"/>");
    }
    i = j;
  }
  report_buf_puts(b, "</g>\n<g class=\"points\">");
  for (size_t k = 0; k < n; k++) {
    if (!isfinite(x[k])) continue;
    double px = report_plot_px(p, x[k]);
    if (!isfinite(y[k])) {
      nonfinite_marker(p, px, y[k], style, name);
      continue;
    }
    double py = report_plot_py(p, y[k]);
    if (p->y->log && y[k] <= 0) {
      clamped_marker(p, px, py, style, name);
      continue;
    }
    int isolated = (k == 0 || !isfinite(y[k - 1])) && (k + 1 == n || !isfinite(y[k + 1]));
    if (markers || isolated) {
      char title[200], v[40];
      report_axis_format(p->y, y[k], v);
      snprintf(title, sizeof title, "%s: %s", name ? name : "value", v);
      marker(b, px, py, style, title);
    }
  }
  report_buf_puts(b, "</g>\n");
  if (name) legend_entry(p, style, REPORT_LEGEND_LINE, name);
}

void report_plot_hline(report_plot *p, double y, int style, const char *name) {
  if (!isfinite(y)) return;
  report_buf *b = p->b;
  double py = report_plot_py(p, y);
  report_buf_puts(b, "<line class=\"series ref\"");
  attr_num(b, "x1", p->x0);
  attr_num(b, "x2", p->x1);
  attr_num(b, "y1", py);
  attr_num(b, "y2", py);
  style_attrs(b, style);
  report_buf_puts(b, "/>\n");
  if (name) legend_entry(p, style, REPORT_LEGEND_LINE, name);
}

static void vline(report_plot *p, double x, const char *label, const char *tooltip, int padded) {
  double px = report_plot_px(p, x);
  if (!isfinite(px)) return;
  report_buf *b = p->b;
  report_buf_puts(b, padded ? "<g class=\"seam padded\"><line" : "<g class=\"seam\"><line");
  attr_num(b, "x1", px);
  attr_num(b, "x2", px);
  attr_num(b, "y1", p->y0);
  attr_num(b, "y2", p->y1);
  report_buf_puts(b, "/>");
  if (label) report_svg_text(b, px + 2, p->y0 + 20, "start", "seam-label", label);
  if (tooltip) {
    report_buf_puts(b, "<title>");
    report_escape_html_text_z(b, tooltip);
    report_buf_puts(b, "</title>");
  }
  report_buf_puts(b, "</g>\n");
}

void report_plot_vline(report_plot *p, double x, const char *label, const char *tooltip) {
  vline(p, x, label, tooltip, 0);
}

void report_plot_vline_padded(report_plot *p, double x, const char *label, const char *tooltip) {
  vline(p, x, label, tooltip, 1);
}

void report_plot_end(report_plot *p) { report_buf_puts(p->b, "</svg>\n"); }
