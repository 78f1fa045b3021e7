/* The audit's plots (inline SVG through report_svg / report_axis):
 *   plot-audit-collectives-<pass>  bytes per device against T, one series
 *       per collective group (kind|op_name|source) and D, from the fits'
 *       points, log scales: a growing line is the sequence moving;
 *   plot-audit-memory  backward temp bytes per token against D from
 *       memory_at_scale, the stock function as a reference line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_axis.h"
#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"
#include "report_svg.h"

#define PLOT_W 760.0
#define MAX_SERIES 14
#define MAX_POINTS 32

typedef struct aseries {
  char name[96];
  double x[MAX_POINTS], y[MAX_POINTS];
  size_t n;
} aseries;

/* The collective groups of one plot: a legend names "G1", a table under
 * the plot says what G1 is (the keys are too long for a legend). */
typedef struct agroups {
  const char *key[MAX_SERIES]; /* "kind|op_name|source", borrowed */
  size_t n;
} agroups;

static size_t group_of(agroups *g, const char *key) {
  for (size_t i = 0; i < g->n; i++)
    if (!strcmp(g->key[i], key)) return i;
  g->key[g->n] = key;
  return g->n++;
}

static double plot_height(size_t n_series) {
  double h = 70.0 + 18.0 * (double)n_series;
  return h > 340.0 ? h : 340.0;
}

static int is_collective_fit(const json_t *f, const char *pass) {
  const char *fig = report_doc_str(f, "figure"), *p = report_doc_str(f, "pass"), *h = report_doc_str(f, "heads");
  return fig && !strncmp(fig, "collective:", 11) && p && !strcmp(p, pass) && (!h || !strcmp(h, "audited"));
}

static int grows(const json_t *pts) {
  double first = 0, last = 0;
  size_t n = json_array_size(pts);
  if (n < 2) return 0;
  report_num_get(json_array_get(json_array_get(pts, 0), 1), &first);
  report_num_get(json_array_get(json_array_get(pts, n - 1), 1), &last);
  return last > first;
}

/* "D=4 G1 all-gather": the device count, the group, its kind. */
static void series_from_fit(aseries *s, const json_t *f, agroups *g) {
  const char *key = report_doc_str(f, "figure") + 11, *bar = strchr(key, '|');
  snprintf(s->name, sizeof s->name, "D=%lld G%zu %.*s", report_doc_int(f, "devices", 0), group_of(g, key) + 1,
           bar ? (int)(bar - key) : 40, key);
  const json_t *pts = json_object_get(f, "points");
  s->n = 0;
  for (size_t i = 0; i < json_array_size(pts) && s->n < MAX_POINTS; i++) {
    const json_t *pt = json_array_get(pts, i);
    s->x[s->n] = (double)json_integer_value(json_array_get(pt, 0));
    report_num_get(json_array_get(pt, 1), &s->y[s->n]);
    s->n++;
  }
}

/* Growing groups first (they are the news), then the rest in order. */
static size_t collect_collectives(const json_t *a, const char *pass, aseries *ss, agroups *g, size_t *dropped) {
  const json_t *fits = json_object_get(a, "fits");
  size_t n = 0;
  *dropped = 0;
  for (int part = 0; part < 2; part++)
    for (size_t i = 0; i < json_array_size(fits); i++) {
      const json_t *f = json_array_get(fits, i);
      if (!is_collective_fit(f, pass) || grows(json_object_get(f, "points")) != (part == 0)) continue;
      if (n == MAX_SERIES) (*dropped)++;
      else series_from_fit(&ss[n++], f, g);
    }
  return n;
}

static void axes_for(report_axis *ax, report_axis *ay, const json_t *a, const aseries *ss, size_t n) {
  report_axis_init(ax, 1);
  report_axis_init(ay, 1);
  const json_t *lens = json_object_get(a, "lengths");
  double t[REPORT_AXIS_MAX_TICKS];
  size_t nt = 0;
  for (size_t i = 0; i < json_array_size(lens) && nt < REPORT_AXIS_MAX_TICKS; i++)
    t[nt++] = (double)json_integer_value(json_array_get(lens, i));
  if (nt) report_axis_set_ticks(ax, t, nt);
  for (size_t i = 0; i < n; i++) {
    report_axis_add(ax, ss[i].x, ss[i].n);
    report_axis_add(ay, ss[i].y, ss[i].n);
  }
  report_axis_finish(ax);
  report_axis_finish(ay);
}

/* G1 = kind, op_name, source (escaped: user source paths and op names). */
static void groups_table(report_buf *b, const agroups *g) {
  report_buf_puts(b, "<table class=\"grid-table audit-groups\"><thead><tr><th>group</th><th>kind</th><th>op_name</th>"
                     "<th>source</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < g->n; i++) {
    const char *k = g->key[i], *b1 = strchr(k, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
    report_buf_printf(b, "<tr><td>G%zu</td><td>", i + 1);
    report_escape_html_text(b, k, b1 ? (size_t)(b1 - k) : strlen(k));
    report_buf_puts(b, "</td><td><code class=\"op-name\">");
    if (b1) report_escape_html_text(b, b1 + 1, b2 ? (size_t)(b2 - b1 - 1) : strlen(b1 + 1));
    report_buf_puts(b, "</code></td><td><code class=\"op-source\">");
    if (b2) report_escape_html_text_z(b, b2 + 1);
    report_buf_puts(b, "</code></td></tr>\n");
  }
  report_buf_puts(b, "</tbody></table>\n");
}

static void plot_collectives(report_buf *b, const json_t *a, const char *pass) {
  aseries ss[MAX_SERIES];
  agroups g = {{NULL}, 0};
  size_t dropped, n = collect_collectives(a, pass, ss, &g, &dropped);
  report_buf_printf(b, "<figure class=\"plot-figure\" id=\"plot-audit-collectives-%s\">\n<h3>Collective bytes "
                       "against T, %s</h3>\n", pass, pass);
  if (!n) {
    report_buf_puts(b, "<p class=\"no-data\">No collective was fitted in this pass (no collectives, or one "
                       "length only).</p>\n</figure>\n");
    return;
  }
  report_axis ax, ay;
  axes_for(&ax, &ay, a, ss, n);
  report_plot p;
  char id[64], label[96];
  snprintf(id, sizeof id, "svg-audit-collectives-%s", pass);
  snprintf(label, sizeof label, "Bytes per device of each collective group against T (%s)", pass);
  report_plot_begin(&p, b, id, label, PLOT_W, plot_height(n), &ax, &ay, "global sequence length T (tokens, log scale)",
                    "bytes per device (log scale)");
  for (size_t i = 0; i < n; i++) report_plot_series(&p, ss[i].x, ss[i].y, ss[i].n, (int)i, 1, ss[i].name);
  report_plot_end(&p);
  groups_table(b, &g);
  report_buf_puts(b, "<figcaption>The context-parallel function's collectives, one series per group (kind, "
                     "op_name, source) and device count: bytes of the group's instances summed, times their "
                     "executions. A flat line is the affine state exchange; a line that rises with T is the "
                     "sequence moving between devices.");
  if (dropped) report_buf_printf(b, " %zu more groups (flat ones) are in the tables below.", dropped);
  report_buf_puts(b, "</figcaption>\n</figure>\n");
}

/* cp rows: per local and per global token against D; stock as a line. */
static void plot_memory(report_buf *b, const json_t *a) {
  const json_t *rows = json_object_get(json_object_get(a, "memory_at_scale"), "rows");
  aseries ss[2] = {{"cp per local token", {0}, {0}, 0}, {"cp per global token", {0}, {0}, 0}};
  double stock = NAN, d[MAX_POINTS];
  for (size_t i = 0; i < json_array_size(rows); i++) {
    const json_t *r = json_array_get(rows, i);
    const char *f = report_doc_str(r, "function");
    double local = NAN, global = NAN;
    report_doc_num(r, "temp_bytes_per_local_token", &local);
    report_doc_num(r, "temp_bytes_per_token", &global);
    if (f && !strcmp(f, "stock")) stock = local;
    else if (ss[0].n < MAX_POINTS) {
      d[ss[0].n] = ss[1].x[ss[1].n] = ss[0].x[ss[0].n] = (double)report_doc_int(r, "devices", 0);
      ss[0].y[ss[0].n++] = local;
      ss[1].y[ss[1].n++] = global;
    }
  }
  report_buf_puts(b, "<figure class=\"plot-figure\" id=\"plot-audit-memory\">\n<h3>Backward temp bytes per token</h3>\n");
  if (!ss[0].n) {
    report_buf_puts(b, "<p class=\"no-data\">No memory-at-scale rows for the context-parallel function.</p>\n"
                       "</figure>\n");
    return;
  }
  report_axis ax, ay;
  report_axis_init(&ax, 1);
  report_axis_init(&ay, 1);
  report_axis_set_ticks(&ax, d, ss[0].n);
  for (int i = 0; i < 2; i++) report_axis_add(&ay, ss[i].y, ss[i].n);
  if (isfinite(stock)) report_axis_add1(&ay, stock);
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  report_plot p;
  report_plot_begin(&p, b, "svg-audit-memory", "Backward temp bytes per device per token against device count",
                    PLOT_W, 340.0, &ax, &ay, "devices D (log scale)", "bytes per token per device (log scale)");
  for (int i = 0; i < 2; i++) report_plot_series(&p, ss[i].x, ss[i].y, ss[i].n, i, 1, ss[i].name);
  if (isfinite(stock)) report_plot_hline(&p, stock, 2, "stock per token");
  report_plot_end(&p);
  report_buf_puts(b, "<figcaption>The slope b of the fit temp_bytes = a + b&middot;T per device, per global token "
                     "and times D per token a device holds (the figure --max-residual-bytes-per-token limits). "
                     "A correct context-parallel function keeps the per-local-token figure near the stock "
                     "function's; residuals kept without jax.checkpoint multiply it.</figcaption>\n</figure>\n");
}

void report_audit_plots(report_buf *b, const json_t *a) {
  report_buf_puts(b, "<h3>Plots</h3>\n");
  plot_collectives(b, a, "forward");
  plot_collectives(b, a, "backward");
  plot_memory(b, a);
}
