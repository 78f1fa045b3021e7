#include "report_plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "report_axis.h"
#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"
#include "report_svg.h"

#define PLOT_W 760.0
#define PLOT_H 340.0
#define MAX_SET 64
#define MAX_SERIES 12

/* Max that lets NaN win (see the header) and ignores "no value yet". */
static double agg_max(int *has, double acc, double v) {
  if (!*has) {
    *has = 1;
    return v;
  }
  if (isnan(acc) || isnan(v)) return NAN;
  return v > acc ? v : acc;
}

/* A sorted set of distinct finite values (device counts, sequence lengths). */
typedef struct vset {
  double v[MAX_SET];
  size_t n;
  size_t dropped;
} vset;

static void vset_add(vset *s, double x) {
  if (!isfinite(x)) return;
  size_t i = 0;
  while (i < s->n && s->v[i] < x) i++;
  if (i < s->n && s->v[i] == x) return;
  if (s->n == MAX_SET) {
    s->dropped++;
    return;
  }
  memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
  s->v[i] = x;
  s->n++;
}

static int vset_find(const vset *s, double x) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == x) return (int)i;
  return -1;
}

/* A named series over the points of a vset. */
typedef struct series {
  char name[160];
  double y[MAX_SET];
  int has[MAX_SET];
} series;

typedef struct series_set {
  series s[MAX_SERIES];
  size_t n, dropped;
} series_set;

static series *series_get(series_set *ss, const char *name) {
  for (size_t i = 0; i < ss->n; i++)
    if (!strcmp(ss->s[i].name, name)) return &ss->s[i];
  if (ss->n == MAX_SERIES) {
    ss->dropped++;
    return NULL;
  }
  series *s = &ss->s[ss->n++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  return s;
}

static void series_add(series *s, const vset *xs, double x, double y) {
  int k = s ? vset_find(xs, x) : -1;
  if (k < 0) return;
  s->y[k] = agg_max(&s->has[k], s->y[k], y);
}

/* Draws the present points of a series (absent points are skipped, not
 * drawn as gaps: "no case" is not "NaN"). */
static void draw_series(report_plot *p, const series *s, const vset *xs, int style) {
  double x[MAX_SET], y[MAX_SET];
  size_t n = 0;
  for (size_t i = 0; i < xs->n; i++)
    if (s->has[i]) x[n] = xs->v[i], y[n] = s->y[i], n++;
  report_plot_series(p, x, y, n, style, 1, s->name);
}

static void axis_add_series(report_axis *a, const series_set *ss) {
  for (size_t i = 0; i < ss->n; i++)
    for (size_t k = 0; k < MAX_SET; k++)
      if (ss->s[i].has[k]) report_axis_add1(a, ss->s[i].y[k]);
}

static void figure_begin(report_buf *b, const char *id, const char *heading) {
  report_buf_printf(b, "<figure class=\"plot-figure\" id=\"%s\">\n<h3>", id);
  report_escape_html_text_z(b, heading);
  report_buf_puts(b, "</h3>\n");
}

static void figure_end(report_buf *b) { report_buf_puts(b, "</figure>\n"); }

static void note(report_buf *b, const char *text) {
  report_buf_puts(b, "<p class=\"no-data\">");
  report_escape_html_text_z(b, text);
  report_buf_puts(b, "</p>\n");
}

static void caption_begin(report_buf *b) { report_buf_puts(b, "<figcaption>"); }
static void caption_end(report_buf *b) { report_buf_puts(b, "</figcaption>\n"); }

static void fmt(char out[REPORT_NUM_CHARS], double v) { report_num_format(out, v, 3); }

/* What "the error" of a case is in the summary plots. */
typedef struct metric_choice {
  int oracle; /* 1: impls.*.o.rel_fro against the oracle; 0: affine_vs_scan only */
} metric_choice;

static int case_combo(const json_t *c, char out[96]) {
  const char *dt = report_doc_str(c, "dtype"), *mm = report_doc_str(c, "matmul_precision");
  return snprintf(out, 96, "%s/%s", dt ? dt : "?", mm ? mm : "?");
}

/* Distinct dtype/matmul combinations: series are split by them when there is
 * more than one (a bfloat16 max would hide every float32 value). */
static size_t count_combos(const json_t *cases) {
  char seen[8][96];
  size_t n = 0;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    char k[96];
    case_combo(json_array_get(cases, i), k);
    size_t j = 0;
    while (j < n && strcmp(seen[j], k)) j++;
    if (j == n) {
      if (n == 8) return n + 1;
      snprintf(seen[n++], 96, "%s", k);
    }
  }
  return n;
}

static void series_name(char out[160], const char *base, const json_t *c, int split) {
  if (!split) {
    snprintf(out, 160, "%s", base);
    return;
  }
  char k[96];
  case_combo(c, k);
  snprintf(out, 160, "%s (%s)", base, k);
}

/* ------------------------------------------------------------ profiles */

static int worse(const report_case_view *x, const report_case_view *y) {
  if (x->pass != y->pass) return !x->pass;
  if (x->margin != y->margin) return x->margin > y->margin;
  return x->index < y->index;
}

typedef struct pgroup {
  long long input, chunk;
  size_t rep, ncases;
} pgroup;

static double *read_nums(const json_t *a, size_t n, gdn_error *e) {
  double *v = gdn_calloc(n ? n : 1, sizeof *v, "plot data", e);
  if (!v) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!report_num_get(json_array_get(a, i), &v[i])) v[i] = NAN;
  return v;
}

static void seam_table(report_buf *b, const json_t *seams) {
  size_t n = json_array_size(seams);
  if (!n) return;
  report_buf_puts(b, "<table class=\"seams\"><thead><tr><th>seam (device r)</th><th>t</th>"
                     "<th>first chunk</th><th>scan vs oracle</th><th>affine-prefix vs oracle</th>"
                     "<th>affine-prefix vs scan</th><th>state_rel</th><th>padding before</th></tr></thead><tbody>\n");
  size_t shown = n > 64 ? 64 : n;
  for (size_t i = 0; i < shown; i++) {
    const json_t *s = json_array_get(seams, i);
    report_buf_printf(b, "<tr><td>%lld</td><td>%lld</td><td>%lld</td>",
                      report_doc_int(s, "device", (long long)i + 1),
                      (long long)json_number_value(json_object_get(s, "t")),
                      report_doc_int(s, "chunk", -1));
    static const char *const keys[] = {"scan", "affine-prefix", "affine_vs_scan", "state_rel"};
    for (size_t k = 0; k < 4; k++) {
      double v;
      char t[REPORT_NUM_CHARS] = "\xE2\x80\x94"; /* an em dash: absent */
      if (report_doc_num(s, keys[k], &v)) fmt(t, v);
      report_buf_printf(b, "<td class=\"num%s\">%s</td>",
                        report_doc_num(s, keys[k], &v) && !isfinite(v) ? " nonfinite" : "", t);
    }
    report_buf_printf(b, "<td class=\"num\">%lld</td></tr>\n", report_doc_int(s, "pad_before", 0));
  }
  report_buf_puts(b, "</tbody></table>\n");
  if (shown < n) report_buf_printf(b, "<p class=\"no-data\">... and %zu more seams.</p>\n", n - shown);
}

/* The profile's series thinned to at most REPORT_PLOTS_MAX_POINTS points: x
 * (the centre of each run of `thin` blocks) and, per series present in pr,
 * the maximum over the run; the axes get every value drawn. */
/* The fourth series is the case's own subject (cases[].subject: the fixture
 * output the case judges, parity_case_subject.h), drawn first in the legend
 * since the case is about it; its key is its name. */
enum { PROFILE_NS = 4 };
static const char *const profile_keys[PROFILE_NS - 1] = {"scan", "affine-prefix", "affine_vs_scan"};
static const char *const profile_names[PROFILE_NS] = {"scan vs oracle", "affine-prefix vs oracle",
                                                      "affine-prefix vs scan"};

typedef struct {
  size_t n, thin, m; /* blocks, blocks per point, points */
  double *x, *ys[PROFILE_NS];
} profile_data;

static void profile_data_clear(profile_data *d) {
  gdn_free(d->x);
  for (size_t s = 0; s < PROFILE_NS; s++) gdn_free(d->ys[s]);
  memset(d, 0, sizeof *d);
}

static int profile_data_make(const json_t *pr, const char *subject, const double *t0, size_t n, long long block,
                             double T, profile_data *d, report_axis *ay, gdn_error *e) {
  memset(d, 0, sizeof *d);
  d->n = n;
  d->thin = (n + REPORT_PLOTS_MAX_POINTS - 1) / REPORT_PLOTS_MAX_POINTS;
  d->m = (n + d->thin - 1) / d->thin;
  size_t thin = d->thin, m = d->m;
  d->x = gdn_calloc(m, sizeof *d->x, "plot data", e);
  if (!d->x) return GDN_ERR_NOMEM;
  for (size_t j = 0; j < m; j++) {
    /* The centre of the run of blocks j*thin .. (j+1)*thin - 1. */
    size_t a = j * thin, z = (j + 1) * thin < n ? (j + 1) * thin : n;
    double end = t0[z - 1] + (double)block;
    if (T > 0 && end > T) end = T;
    d->x[j] = (t0[a] + end) / 2;
  }
  for (size_t s = 0; s < PROFILE_NS; s++) {
    const json_t *a = s < PROFILE_NS - 1 ? json_object_get(pr, profile_keys[s])
                      : subject        ? json_object_get(pr, subject)
                                       : NULL;
    if (!a) continue;
    double *v = read_nums(a, n, e);
    d->ys[s] = gdn_calloc(m, sizeof *d->ys[s], "plot data", e);
    if (!v || !d->ys[s]) {
      gdn_free(v);
      return GDN_ERR_NOMEM;
    }
    for (size_t j = 0; j < m; j++) {
      int has = 0;
      double acc = NAN;
      for (size_t i = j * thin; i < (j + 1) * thin && i < n; i++) acc = agg_max(&has, acc, v[i]);
      d->ys[s][j] = acc;
    }
    gdn_free(v);
    report_axis_add(ay, d->ys[s], m);
  }
  return GDN_OK;
}

/* The seams as vertical lines, each with a tooltip; returns how many follow
 * padding. */
static size_t profile_seam_lines(report_plot *p, const json_t *seams) {
  size_t ns = json_array_size(seams), n_padded = 0;
  for (size_t i = 0; i < ns; i++) {
    const json_t *s = json_array_get(seams, i);
    double t, v;
    report_doc_num(s, "t", &t);
    long long r = report_doc_int(s, "device", (long long)i + 1);
    char lab[32], tip[400], a1[REPORT_NUM_CHARS] = "-", a2[REPORT_NUM_CHARS] = "-",
                            a3[REPORT_NUM_CHARS] = "-", a4[REPORT_NUM_CHARS] = "-";
    if (report_doc_num(s, "scan", &v)) fmt(a1, v);
    if (report_doc_num(s, "affine-prefix", &v)) fmt(a2, v);
    if (report_doc_num(s, "affine_vs_scan", &v)) fmt(a3, v);
    if (report_doc_num(s, "state_rel", &v)) fmt(a4, v);
    long long pad = report_doc_int(s, "pad_before", 0);
    snprintf(lab, sizeof lab, "r=%lld", r);
    snprintf(tip, sizeof tip,
             "seam: device %lld starts at t = %.0f%s; first chunk after it: scan %s, affine-prefix "
             "%s, affine vs scan %s; state_rel %s",
             r, t, pad ? " after padding" : "", a1, a2, a3, a4);
    if (pad) {
      size_t l = strlen(tip);
      snprintf(tip + l, sizeof tip - l, "; device %lld ends in %lld padding token%s", r - 1, pad, pad == 1 ? "" : "s");
      n_padded++;
    }
    /* Past 16 seams the labels would overlap; the tooltips and the table
     * below still name each one. */
    if (pad) report_plot_vline_padded(p, t, ns <= 16 ? lab : NULL, tip);
    else report_plot_vline(p, t, ns <= 16 ? lab : NULL, tip);
  }
  return n_padded;
}

/* The caption under a profile: what is drawn, the oracle's scale, the seams,
 * thinning, floors and non-finite marks. */
static void profile_caption(const json_t *doc, const json_t *c, const json_t *pr, const char *tensor,
                            long long block, const profile_data *d, const report_axis *ay,
                            const report_plot *p, size_t ns, size_t n_padded, report_buf *b) {
  const int is_o = !strcmp(tensor, "o");
  const char *cid = report_doc_str(c, "id");
  caption_begin(b);
  const json_t *in = report_doc_input(doc, c);
  report_buf_puts(b, "Case <b>");
  report_escape_html_text_z(b, cid);
  report_buf_puts(b, "</b>");
  if (in) {
    report_buf_puts(b, ", input ");
    report_escape_html_text_z(b, report_doc_str(in, "name"));
  }
  report_buf_printf(b, ": max |error| of %s over each block of %lld positions (over b, h, d), "
                       "log scale.",
                    is_o ? "o" : tensor, block);
  if (!is_o)
    report_buf_puts(b, " The gradient (--grad) of both kernels' backward for the run's cotangents, "
                       "against the oracle's VJP.");
  const json_t *rma = json_object_get(pr, "ref_max_abs");
  if (json_array_size(rma)) {
    double lo = INFINITY, hi = -INFINITY, v;
    for (size_t i = 0; i < json_array_size(rma); i++)
      if (report_num_get(json_array_get(rma, i), &v) && isfinite(v)) lo = fmin(lo, v), hi = fmax(hi, v);
    if (lo <= hi) {
      char a1[REPORT_NUM_CHARS], a2[REPORT_NUM_CHARS];
      fmt(a1, lo);
      fmt(a2, hi);
      report_buf_printf(b, " For scale, max |%s| of the oracle per block ranges from %s to %s.",
                        is_o ? "o" : tensor, a1, a2);
    }
  }
  report_buf_puts(b, " Dashed vertical lines: shard seams, where device r starts from the prefix "
                     "state.");
  if (n_padded)
    report_buf_printf(b, " %zu of the %zu seams (orange, densely dashed) follow padding: with token "
                         "sharding and T/D not a multiple of C, device r - 1 pads its last chunk.",
                      n_padded, ns);
  if (d->thin > 1)
    report_buf_printf(b, " Thinned for size: each point is the max over %zu blocks (%zu blocks in "
                         "all).",
                      d->thin, d->n);
  if (ay->clamped) {
    char f[40];
    report_axis_format(ay, ay->floor, f);
    report_buf_printf(b, " Blocks with an error of exactly 0 are drawn at the floor %s "
                         "(hollow triangles).", f);
  }
  if (p->n_nonfinite_drawn)
    report_buf_puts(b, " Non-finite errors are marked on the top edge (x: not a number, "
                       "triangle: infinite).");
  caption_end(b);
}

/* One profile of case c: pr is cases[].profile (tensor "o", with the seam
 * table) or cases[].grad_profile.<tensor> (--grad: scan and affine-prefix
 * against the oracle's gradients, the same blocks and seams). */
static int profile_plot(const json_t *doc, const json_t *c, const json_t *pr, const char *tensor, size_t k,
                        report_buf *b, gdn_error *e) {
  const json_t *t0j = json_object_get(pr, "t0");
  size_t n = json_array_size(t0j);
  long long block = report_doc_int(pr, "block", 1);
  double T = (double)report_doc_int(json_object_get(c, "shape"), "T", 0);
  if (n == 0) {
    note(b, "The profile of this case is empty.");
    return GDN_OK;
  }
  /* ref_max_abs is not drawn: at O(1) it would squash the errors into the
   * bottom of the axis; the caption gives its range for scale. */
  double *t0 = read_nums(t0j, n, e);
  if (!t0) return GDN_ERR_NOMEM;
  report_axis ax, ay;
  report_axis_init(&ax, 0);
  report_axis_init(&ay, 1);
  profile_data d;
  const char *subject = report_doc_str(c, "subject");
  int rc = profile_data_make(pr, subject, t0, n, block, T, &d, &ay, e);
  if (rc) goto done;
  ax.tight = 1; /* the sequence is 0..T, nothing beyond */
  report_axis_add1(&ax, 0);
  report_axis_add1(&ax, T > 0 ? T : t0[n - 1] + (double)block);
  const json_t *seams = json_object_get(c, "seams");
  for (size_t i = 0; i < json_array_size(seams); i++) {
    double t;
    if (report_doc_num(json_array_get(seams, i), "t", &t)) report_axis_add1(&ax, t);
  }
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  char id[64], label[600], ylab[64];
  const int is_o = !strcmp(tensor, "o");
  if (is_o) snprintf(id, sizeof id, "svg-profile-%zu", k);
  else snprintf(id, sizeof id, "svg-profile-%zu-%.16s", k, tensor);
  snprintf(label, sizeof label, "Error of %.16s along the sequence, case %.400s", tensor, report_doc_str(c, "id"));
  snprintf(ylab, sizeof ylab, "max |error of %.16s| per block", tensor);
  report_plot p;
  report_plot_begin(&p, b, id, label, PLOT_W, PLOT_H, &ax, &ay, "position t (tokens)", ylab);
  size_t ns = json_array_size(seams), n_padded = profile_seam_lines(&p, seams);
  static const int styles[PROFILE_NS] = {0, 1, 2, 3};
  char sname[160];
  snprintf(sname, sizeof sname, "%.100s vs oracle", subject ? subject : "");
  if (d.ys[PROFILE_NS - 1]) report_plot_series(&p, d.x, d.ys[PROFILE_NS - 1], d.m, styles[3], d.m <= 40, sname);
  for (size_t s = 0; s + 1 < PROFILE_NS; s++)
    if (d.ys[s]) report_plot_series(&p, d.x, d.ys[s], d.m, styles[s], d.m <= 40, profile_names[s]);
  if (ns > n_padded) report_plot_legend(&p, 0, REPORT_LEGEND_SEAM, "shard seam r");
  if (n_padded) report_plot_legend(&p, 0, REPORT_LEGEND_SEAM_PADDED, "seam after padding");
  report_plot_end(&p);
  profile_caption(doc, c, pr, tensor, block, &d, &ay, &p, ns, n_padded, b);
  if (is_o) seam_table(b, seams);
done:
  gdn_free(t0);
  profile_data_clear(&d);
  return rc;
}

static int plot_profiles(const json_t *doc, const report_summary *s, report_buf *b, gdn_error *e) {
  figure_begin(b, "plot-profile", "Error along the sequence, with shard seams");
  pgroup *g = s->n ? gdn_calloc(s->n, sizeof *g, "profile groups", e) : NULL;
  if (s->n && !g) return GDN_ERR_NOMEM;
  size_t ng = 0;
  for (size_t i = 0; i < s->n; i++) {
    const json_t *c = s->cases[i].c;
    if (!json_object_get(c, "profile")) continue;
    long long in = report_doc_int(c, "input", -1), ch = report_doc_int(c, "chunk", 0);
    size_t k = 0;
    while (k < ng && !(g[k].input == in && g[k].chunk == ch)) k++;
    if (k == ng) {
      g[ng].input = in, g[ng].chunk = ch, g[ng].rep = i, g[ng].ncases = 0;
      ng++;
    }
    g[k].ncases++;
    if (worse(&s->cases[i], &s->cases[g[k].rep])) g[k].rep = i;
  }
  if (!ng) {
    note(b, "No case has a profile (cases[].profile): nothing to plot along the sequence.");
    figure_end(b);
    gdn_free(g);
    return GDN_OK;
  }
  /* Worst group first (insertion sort: a handful of groups). */
  for (size_t i = 1; i < ng; i++)
    for (size_t j = i; j > 0 && worse(&s->cases[g[j].rep], &s->cases[g[j - 1].rep]); j--) {
      pgroup t = g[j];
      g[j] = g[j - 1];
      g[j - 1] = t;
    }
  report_buf_printf(b, "<p class=\"plot-intro\">%zu distinct input/chunk combination%s; each plot "
                       "shows the worst case of its group. The worst is open; the others "
                       "unfold on click.</p>\n",
                    ng, ng == 1 ? "" : "s");
  int rc = GDN_OK;
  size_t shown = ng < REPORT_PLOTS_MAX_PROFILES ? ng : REPORT_PLOTS_MAX_PROFILES;
  for (size_t k = 0; k < shown && !rc; k++) {
    const report_case_view *v = &s->cases[g[k].rep];
    const json_t *in = report_doc_input(doc, v->c);
    report_buf_printf(b, "<details class=\"profile\" id=\"profile-%zu\"%s><summary>", k,
                      k == 0 ? " open" : "");
    report_buf_printf(b, "<span class=\"%s\">%s</span> ", v->pass ? "tag-pass" : "tag-fail",
                      v->pass ? "PASS" : "FAIL");
    if (in) report_escape_html_text_z(b, report_doc_str(in, "name"));
    else report_buf_puts(b, "(no input)");
    report_buf_printf(b, ", chunk %lld: worst of %zu case%s, ", g[k].chunk, g[k].ncases,
                      g[k].ncases == 1 ? "" : "s");
    report_escape_html_text_z(b, report_doc_str(v->c, "id"));
    report_buf_puts(b, "</summary>\n");
    rc = profile_plot(doc, v->c, json_object_get(v->c, "profile"), "o", k, b, e);
    /* --grad: each gradient with a token axis, the same seams. */
    static const char *const grads[] = {"dq", "dk", "dv", "dg", "dbeta"};
    const json_t *gp = json_object_get(v->c, "grad_profile");
    for (size_t j = 0; !rc && gp && j < sizeof grads / sizeof grads[0]; j++)
      if (json_object_get(gp, grads[j])) rc = profile_plot(doc, v->c, json_object_get(gp, grads[j]), grads[j], k, b, e);
    report_buf_puts(b, "</details>\n");
  }
  if (shown < ng)
    report_buf_printf(b, "<p class=\"no-data\">%zu more input/chunk groups are not plotted (the "
                         "case table has every case).</p>\n",
                      ng - shown);
  figure_end(b);
  gdn_free(g);
  return rc;
}

/* ------------------------------------------------------------ devices, T */

static int have_oracle_errors(const report_summary *s) {
  for (size_t i = 0; i < s->n; i++) {
    double v;
    if (report_doc_metric(s->cases[i].c, "affine-prefix", "o", "rel_fro", &v)) return 1;
  }
  return 0;
}

/* The start of the two line plots: the figure opened; whether errors
 * against the oracle exist (*oracle) and whether the series split by
 * input and chunk size (*split). */
static void line_plot_begin(const report_summary *s, report_buf *b, const char *id, const char *title, int *oracle,
                            int *split) {
  figure_begin(b, id, title);
  *oracle = have_oracle_errors(s);
  *split = count_combos(json_object_get(s->doc, "cases")) > 1;
}

static void plot_devices(const report_summary *s, report_buf *b) {
  int oracle, split;
  line_plot_begin(s, b, "plot-devices", "Error against device count, per prefix schedule", &oracle, &split);
  vset ds = {0};
  for (size_t i = 0; i < s->n; i++) vset_add(&ds, (double)report_doc_int(s->cases[i].c, "devices", 0));
  if (ds.n < 2) {
    char t[160];
    snprintf(t, sizeof t, "Every case runs on %.0f device%s: nothing to plot against the device "
                          "count.", ds.n ? ds.v[0] : 0, ds.n && ds.v[0] == 1 ? "" : "s");
    note(b, t);
    figure_end(b);
    return;
  }
  series_set ss = {0}, ref = {0};
  int has_ref[MAX_SERIES] = {0};
  double ref_y[MAX_SERIES];
  for (size_t i = 0; i < s->n; i++) {
    const json_t *c = s->cases[i].c;
    double d = (double)report_doc_int(c, "devices", 0), v;
    char name[160];
    const char *prefix = report_doc_str(c, "prefix");
    series_name(name, prefix ? prefix : "?", c, split);
    if (report_doc_metric(c, oracle ? "affine-prefix" : "affine_vs_scan", "o", "rel_fro", &v))
      series_add(series_get(&ss, name), &ds, d, v);
    /* the fixture's output a case judges (cases[].subject), on its own line */
    const char *subject = report_doc_str(c, "subject");
    if (oracle && subject && report_doc_metric(c, subject, "o", "rel_fro", &v)) {
      series_name(name, "fixture outputs judged", c, split);
      series_add(series_get(&ss, name), &ds, d, v);
    }
    if (oracle && report_doc_metric(c, "scan", "o", "rel_fro", &v)) {
      series_name(name, "scan (any D), max", c, split);
      series *r = series_get(&ref, name);
      if (r) {
        size_t k = (size_t)(r - ref.s);
        ref_y[k] = agg_max(&has_ref[k], ref_y[k], v);
      }
    }
  }
  report_axis ax, ay;
  report_axis_init(&ax, 1);
  report_axis_init(&ay, 1);
  report_axis_set_ticks(&ax, ds.v, ds.n);
  axis_add_series(&ay, &ss);
  for (size_t k = 0; k < ref.n; k++)
    if (has_ref[k]) report_axis_add1(&ay, ref_y[k]);
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  report_plot p;
  report_plot_begin(&p, b, "svg-devices", "Relative error of o against device count", PLOT_W,
                    PLOT_H, &ax, &ay, "devices D (log scale)",
                    oracle ? "rel_fro of o vs oracle" : "rel_fro of o, affine-prefix vs scan");
  for (size_t k = 0; k < ss.n; k++) draw_series(&p, &ss.s[k], &ds, (int)k + 1);
  for (size_t k = 0; k < ref.n; k++)
    if (has_ref[k]) report_plot_hline(&p, ref_y[k], (int)(REPORT_SVG_STYLES - 1 - k), ref.s[k].name);
  report_plot_end(&p);
  caption_begin(b);
  report_buf_printf(b, "%s, ||error||<sub>F</sub> / ||reference||<sub>F</sub> of o, log scales. "
                       "Each point is the max over the cases with that prefix schedule and device "
                       "count (over T, chunk, input%s).",
                    oracle ? "affine-prefix against the MPFR oracle"
                           : "affine-prefix against scan (no oracle in this run)",
                    split ? "" : ", dtype");
  if (oracle) report_buf_puts(b, " The scan's error does not depend on D: its max is the reference "
                                 "line.");
  if (ss.dropped || ds.dropped) report_buf_puts(b, " Some series or device counts were left out "
                                                   "(too many to draw).");
  caption_end(b);
  figure_end(b);
}

static void plot_length(const report_summary *s, report_buf *b) {
  int oracle, split;
  line_plot_begin(s, b, "plot-length", "Error against sequence length T", &oracle, &split);
  vset ts = {0};
  for (size_t i = 0; i < s->n; i++)
    vset_add(&ts, (double)report_doc_int(json_object_get(s->cases[i].c, "shape"), "T", 0));
  if (ts.n < 2) {
    char t[160];
    snprintf(t, sizeof t, "Every case has the same sequence length (T = %.0f): nothing to plot "
                          "against T.", ts.n ? ts.v[0] : 0);
    note(b, t);
    figure_end(b);
    return;
  }
  series_set ss = {0};
  for (size_t i = 0; i < s->n; i++) {
    const json_t *c = s->cases[i].c;
    double T = (double)report_doc_int(json_object_get(c, "shape"), "T", 0), v;
    char name[160];
    if (oracle) {
      series_name(name, "scan vs oracle", c, split);
      if (report_doc_metric(c, "scan", "o", "rel_fro", &v)) series_add(series_get(&ss, name), &ts, T, v);
      series_name(name, "affine-prefix vs oracle", c, split);
      if (report_doc_metric(c, "affine-prefix", "o", "rel_fro", &v))
        series_add(series_get(&ss, name), &ts, T, v);
    }
    series_name(name, "affine-prefix vs scan", c, split);
    if (report_doc_metric(c, "affine_vs_scan", "o", "rel_fro", &v))
      series_add(series_get(&ss, name), &ts, T, v);
  }
  report_axis ax, ay;
  report_axis_init(&ax, 1);
  report_axis_init(&ay, 1);
  report_axis_set_ticks(&ax, ts.v, ts.n);
  axis_add_series(&ay, &ss);
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  report_plot p;
  report_plot_begin(&p, b, "svg-length", "Relative error of o against sequence length", PLOT_W,
                    PLOT_H, &ax, &ay, "sequence length T (tokens, log scale)", "rel_fro of o");
  for (size_t k = 0; k < ss.n; k++) draw_series(&p, &ss.s[k], &ts, (int)k);
  report_plot_end(&p);
  caption_begin(b);
  report_buf_printf(b, "||error||<sub>F</sub> / ||reference||<sub>F</sub> of o, log scales. Each "
                       "point is the max over the cases with that T (over devices, prefix, chunk, "
                       "input%s).",
                    split ? "" : ", dtype");
  caption_end(b);
  figure_end(b);
}

/* ------------------------------------------------------------ heatmap */

/* Diverging colour for log2(ratio) in [-3, 3]: blue (affine-prefix more
 * accurate) through white (equal) to red (affine-prefix less accurate). */
static void ratio_color(double ratio, char out[8], int *dark) {
  double t = log2(ratio) / 3;
  if (t > 1) t = 1;
  if (t < -1) t = -1;
  double r, g, bl;
  if (t >= 0) r = 255 + t * (178 - 255), g = 255 + t * (24 - 255), bl = 255 + t * (43 - 255);
  else r = 255 - t * (33 - 255), g = 255 - t * (102 - 255), bl = 255 - t * (172 - 255);
  snprintf(out, 8, "#%02X%02X%02X", (unsigned)lround(r), (unsigned)lround(g), (unsigned)lround(bl));
  *dark = fabs(t) > 0.6;
}

/* One cell of the heatmap at (x, y), size cw x ch: its colour, tooltip and,
 * when it fits, its text.  has: a case fell in the cell; r: their max ratio. */
static void heatmap_cell(report_buf *b, double x, double y, double cw, double ch, int has, double r,
                         double D, double T) {
  char t[REPORT_NUM_CHARS], lab[64];
  report_buf_puts(b, "<g class=\"cell\"><rect stroke=\"#d0d7de\"");
  report_buf_puts(b, " x=\"");
  report_svg_num(b, x);
  report_buf_puts(b, "\" y=\"");
  report_svg_num(b, y);
  report_buf_puts(b, "\" width=\"");
  report_svg_num(b, cw - 1);
  report_buf_puts(b, "\" height=\"");
  report_svg_num(b, ch - 1);
  report_buf_putc(b, '"');
  const char *text;
  char tip[160];
  int dark = 0;
  if (!has) {
    report_buf_puts(b, " fill=\"#eeeeee\"");
    text = "\xE2\x80\x94";
    snprintf(tip, sizeof tip, "D = %.0f, T = %.0f: no case", D, T);
  } else if (isnan(r)) {
    report_buf_puts(b, " fill=\"#555555\"");
    dark = 1;
    text = "n/a";
    snprintf(tip, sizeof tip, "D = %.0f, T = %.0f: an error is not a number", D, T);
  } else if (isinf(r)) {
    report_buf_puts(b, " fill=\"#67001F\"");
    dark = 1;
    text = "\xE2\x88\x9E"; /* the scan is exact, affine-prefix is not */
    snprintf(tip, sizeof tip, "D = %.0f, T = %.0f: scan exact, affine-prefix not", D, T);
  } else {
    char col[8];
    ratio_color(r, col, &dark);
    report_buf_printf(b, " fill=\"%s\"", col);
    fmt(t, r);
    snprintf(lab, sizeof lab, "%s\xC3\x97", t); /* U+00D7 multiplication sign */
    text = lab;
    snprintf(tip, sizeof tip, "D = %.0f, T = %.0f: affine-prefix error / scan error = %s (max over cases)", D, T, t);
  }
  report_buf_puts(b, "><title>");
  report_escape_html_text_z(b, tip);
  report_buf_puts(b, "</title></rect>");
  if (ch >= 14 && cw >= 30)
    report_svg_text(b, x + cw / 2, y + ch / 2 + 4, "middle", dark ? "cell-dark" : "cell-text",
                    text);
  report_buf_puts(b, "</g>\n");
}

/* The colour bar right of the grid, ratio 1/8 .. 8 on a log2 scale. */
static void heatmap_colour_bar(report_buf *b, double bx, double by, double bh) {
  for (int k = 0; k < 24; k++) {
    double r = exp2(3 - 6.0 * (k + 0.5) / 24);
    char col[8];
    int dark;
    ratio_color(r, col, &dark);
    report_buf_puts(b, "<rect x=\"");
    report_svg_num(b, bx);
    report_buf_puts(b, "\" y=\"");
    report_svg_num(b, by + bh * k / 24.0);
    report_buf_puts(b, "\" width=\"16\" height=\"");
    report_svg_num(b, bh / 24.0 + 0.5);
    report_buf_printf(b, "\" fill=\"%s\"/>", col);
  }
  static const char *const bar_labels[] = {"\xE2\x89\xA5" "8\xC3\x97", "1\xC3\x97 (equal)",
                                           "\xE2\x89\xA4" "1/8\xC3\x97"};
  for (int k = 0; k < 3; k++)
    report_svg_text(b, bx + 22, by + bh * k / 2.0 + (k == 0 ? 10 : k == 2 ? -2 : 4), "start",
                    NULL, bar_labels[k]);
}

static int plot_heatmap(const report_summary *s, report_buf *b, gdn_error *e) {
  figure_begin(b, "plot-heatmap", "Affine-prefix / scan error ratio over devices and T");
  if (!have_oracle_errors(s)) {
    note(b, "No oracle errors in this run (--oracle none): the ratio of the two implementations' "
            "errors against the oracle cannot be formed.");
    figure_end(b);
    return GDN_OK;
  }
  vset ds = {0}, ts = {0};
  for (size_t i = 0; i < s->n; i++) {
    vset_add(&ds, (double)report_doc_int(s->cases[i].c, "devices", 0));
    vset_add(&ts, (double)report_doc_int(json_object_get(s->cases[i].c, "shape"), "T", 0));
  }
  /* 48 KiB: on the heap, so the writer is safe on small thread stacks. */
  double(*cell)[MAX_SET] = gdn_calloc(MAX_SET, sizeof *cell, "the heatmap", e);
  int(*has)[MAX_SET] = gdn_calloc(MAX_SET, sizeof *has, "the heatmap", e);
  if (!cell || !has) {
    gdn_free(cell);
    gdn_free(has);
    return GDN_ERR_NOMEM;
  }
  size_t filled = 0;
  for (size_t i = 0; i < s->n; i++) {
    const json_t *c = s->cases[i].c;
    double a, sc;
    /* the case's own subject where it has one (a fixture's output), else ours */
    const char *subject = report_doc_str(c, "subject");
    if (!report_doc_metric(c, subject ? subject : "affine-prefix", "o", "rel_fro", &a) ||
        !report_doc_metric(c, "scan", "o", "rel_fro", &sc))
      continue;
    int di = vset_find(&ds, (double)report_doc_int(c, "devices", 0));
    int ti = vset_find(&ts, (double)report_doc_int(json_object_get(c, "shape"), "T", 0));
    if (di < 0 || ti < 0) continue;
    /* Both exact: equally good.  Scan exact, affine not: infinitely worse. */
    double r = (a == 0 && sc == 0) ? 1 : a / sc;
    if (!has[ti][di]) filled++;
    cell[ti][di] = agg_max(&has[ti][di], cell[ti][di], r);
  }
  if (!filled) {
    note(b, "No case has both scan and affine-prefix errors against the oracle.");
    figure_end(b);
    gdn_free(cell);
    gdn_free(has);
    return GDN_OK;
  }
  double left = 110, top = 24, cw = 560.0 / (double)ds.n, ch = 240.0 / (double)ts.n;
  if (cw > 110) cw = 110;
  if (ch > 44) ch = 44;
  if (ch < 14) ch = 14;
  double gw = cw * (double)ds.n, gh = ch * (double)ts.n;
  double W = left + gw + 170, H = top + gh + 56;
  report_buf_puts(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot heatmap\" "
                     "id=\"svg-heatmap\" role=\"img\" viewBox=\"0 0 ");
  report_svg_num(b, W);
  report_buf_putc(b, ' ');
  report_svg_num(b, H);
  report_buf_puts(b, "\" aria-label=\"Ratio of affine-prefix to scan error over devices and "
                     "sequence length\"><title>affine-prefix / scan ratio of o rel_fro</title>\n");
  char lab[64];
  for (size_t ti = 0; ti < ts.n; ti++) {
    /* Largest T on top, as on a y axis. */
    double y = top + ch * (double)(ts.n - 1 - ti);
    snprintf(lab, sizeof lab, "T = %.0f", ts.v[ti]);
    report_svg_text(b, left - 8, y + ch / 2 + 4, "end", NULL, lab);
    for (size_t di = 0; di < ds.n; di++) {
      double x = left + cw * (double)di;
      heatmap_cell(b, x, y, cw, ch, has[ti][di], cell[ti][di], ds.v[di], ts.v[ti]);
    }
  }
  for (size_t di = 0; di < ds.n; di++) {
    snprintf(lab, sizeof lab, "%.0f", ds.v[di]);
    report_svg_text(b, left + cw * ((double)di + 0.5), top + gh + 16, "middle", NULL, lab);
  }
  report_svg_text(b, left + gw / 2, top + gh + 40, "middle", "axis-label", "devices D");
  heatmap_colour_bar(b, left + gw + 30, top, gh < 120 ? 120 : gh);
  report_buf_puts(b, "</svg>\n");
  caption_begin(b);
  report_buf_puts(b, "Each cell: rel_fro of o of the context-parallel output a case judges (the "
                     "fixture's output of that device count where the case has one, cases[].subject; "
                     "else affine-prefix) against the oracle divided by that of "
                     "the scan, max over the cases in the cell (prefix, chunk, input, dtype). Red: "
                     "the context-parallel form is less accurate than the stock scan; blue: more; "
                     "\xE2\x88\x9E: the scan is exact and affine-prefix is not; \xE2\x80\x94: no "
                     "case.");
  caption_end(b);
  figure_end(b);
  gdn_free(cell);
  gdn_free(has);
  return GDN_OK;
}

/* ------------------------------------------------------- localized block map */

static double num_or_inf(const json_t *v) {
  if (json_is_number(v)) return json_number_value(v);
  const char *t = json_string_value(v);
  return t && !strcmp(t, "inf") ? INFINITY : t ? NAN : 0;
}

/* The limit of the localized-block check of `subject` on o in case c (0: none). */
static double block_limit(const json_t *c, const char *subject) {
  const json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks"), *k;
  size_t i;
  json_array_foreach(checks, i, k) {
    const char *r = json_string_value(json_object_get(k, "rule")), *sj = json_string_value(json_object_get(k, "subject")),
               *tn = json_string_value(json_object_get(k, "tensor"));
    if (r && sj && tn && !strcmp(r, "localized-block") && !strcmp(sj, subject) && !strcmp(tn, "o"))
      return num_or_inf(json_object_get(k, "limit"));
  }
  return 0;
}

/* Largest value / limit of a case's block map (-1 without one). */
static double map_worst(const json_t *c) {
  const json_t *bm = json_object_get(c, "block_map"), *row, *v;
  const char *sj = json_string_value(json_object_get(bm, "subject"));
  double lim = sj ? block_limit(c, sj) : 0, w = -1;
  size_t i, j;
  if (!sj || !(lim > 0)) return -1;
  json_array_foreach(json_object_get(bm, "values"), i, row) json_array_foreach(row, j, v) {
    double q = num_or_inf(v) / lim;
    if (!(q <= w)) w = isnan(q) ? INFINITY : q;
  }
  return w;
}

static void map_cell(report_buf *b, double x, double y, double w, double h, double q, const char *tip) {
  char col[8];
  int dark;
  if (isfinite(q)) ratio_color(q, col, &dark);
  else snprintf(col, sizeof col, "#67001F");
  report_buf_puts(b, "<rect x=\"");
  report_svg_num(b, x);
  report_buf_puts(b, "\" y=\"");
  report_svg_num(b, y);
  report_buf_puts(b, "\" width=\"");
  report_svg_num(b, w);
  report_buf_puts(b, "\" height=\"");
  report_svg_num(b, h);
  report_buf_printf(b, "\" fill=\"%s\"><title>", col);
  report_escape_html_text_z(b, tip);
  report_buf_puts(b, "</title></rect>");
}

/* Block error over position and head for the case whose judged subject is
 * closest to (or furthest beyond) its localized-block limit; seams marked. */
static void plot_block_map(const report_summary *s, report_buf *b) {
  figure_begin(b, "plot-block-map", "Where the error sits: block error over position and head (worst case)");
  const json_t *c = NULL;
  double worst = -1;
  for (size_t i = 0; i < s->n; i++) {
    /* ties (an output judged in every case alike): the case with more
     * devices, whose seams the map can show */
    double w = map_worst(s->cases[i].c);
    if (w > worst || (c && w == worst && report_doc_int(s->cases[i].c, "devices", 0) > report_doc_int(c, "devices", 0)))
      worst = w, c = s->cases[i].c;
  }
  if (!c) {
    note(b, "No case has a block map (cases[].block_map needs an oracle and the localized-block rule).");
    figure_end(b);
    return;
  }
  const json_t *bm = json_object_get(c, "block_map"), *rows = json_object_get(bm, "values");
  const char *sj = json_string_value(json_object_get(bm, "subject"));
  double lim = block_limit(c, sj), tpb = (double)report_doc_int(bm, "tokens_per_bin", 1);
  size_t nh = json_array_size(rows), nb = json_array_size(json_array_get(rows, 0));
  double left = 70, top = 20, gw = 640, ch = nh > 32 ? 6 : 16, cw = gw / (double)(nb ? nb : 1);
  double gh = ch * (double)nh, W = left + gw + 20, H = top + gh + 44;
  report_buf_puts(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot blockmap\" id=\"svg-blockmap\" "
                     "role=\"img\" viewBox=\"0 0 ");
  report_svg_num(b, W);
  report_buf_putc(b, ' ');
  report_svg_num(b, H);
  report_buf_puts(b, "\" aria-label=\"Block error over position and head\">\n");
  char tip[200], lab[64], t[REPORT_NUM_CHARS];
  for (size_t h = 0; h < nh; h++) {
    const json_t *row = json_array_get(rows, h);
    if (nh <= 32 || h % 8 == 0) {
      snprintf(lab, sizeof lab, "head %zu", h);
      report_svg_text(b, left - 6, top + ch * ((double)h + 0.5) + 4, "end", NULL, lab);
    }
    for (size_t k = 0; k < nb; k++) {
      double v = num_or_inf(json_array_get(row, k));
      fmt(t, v);
      snprintf(tip, sizeof tip, "head %zu, t = %.0f..%.0f: block_rel %s", h, (double)k * tpb, (double)(k + 1) * tpb - 1, t);
      map_cell(b, left + cw * (double)k, top + ch * (double)h, cw + 0.05, ch - 0.5, v / lim, tip);
    }
  }
  const json_t *sm;
  size_t i;
  json_array_foreach(json_object_get(c, "seams"), i, sm) {
    double x = left + cw * (double)report_doc_int(sm, "t", 0) / tpb;
    report_buf_puts(b, "<line class=\"seam\" stroke=\"#000\" stroke-dasharray=\"3,2\" x1=\"");
    report_svg_num(b, x);
    report_buf_puts(b, "\" x2=\"");
    report_svg_num(b, x);
    report_buf_puts(b, "\" y1=\"");
    report_svg_num(b, top - 4);
    report_buf_puts(b, "\" y2=\"");
    report_svg_num(b, top + gh + 4);
    report_buf_puts(b, "\"/>");
  }
  report_svg_text(b, left + gw / 2, top + gh + 30, "middle", "axis-label", "position t (dashed: device seams)");
  report_buf_puts(b, "</svg>\n");
  caption_begin(b);
  report_buf_puts(b, "Case ");
  report_escape_html_text_z(b, json_string_value(json_object_get(c, "id")));
  report_buf_puts(b, ", subject ");
  report_escape_html_text_z(b, sj);
  fmt(t, lim);
  report_buf_printf(b, ": each cell is the worst block_rel (one head, one chunk of positions) in its bin of "
                       "%.0f tokens, coloured by its ratio to the localized-block limit %s (red: beyond it; "
                       "white: at it; blue: below).", tpb, t);
  caption_end(b);
  figure_end(b);
}

/* ------------------------------------------------------------ ULP histogram */

static int same_edges(const json_t *a, const json_t *b) { return json_equal((json_t *)a, (json_t *)b); }

/* The histogram's bin labels under the axis, thinned so that none overlaps
 * the next: every `every`-th bin, `every` from the longest label at 7 px a
 * character (the axis font) and a 10 px gap against the bin width bw. */
static void ulp_bin_labels(report_buf *b, const report_plot *p, const double *ev, size_t nb, double bw) {
  size_t longest = 0;
  for (size_t j = 0; j < nb; j++) {
    char lo[40];
    report_num_format(lo, ev[j], 4);
    size_t len = strlen(lo) + (j + 1 == nb); /* the last label's >= */
    if (len > longest) longest = len;
  }
  size_t every = (size_t)ceil(((double)longest * 7.0 + 10.0) / (bw > 0 ? bw : 1));
  if (every < 1) every = 1;
  for (size_t j = 0; j < nb; j += every) {
    char lo[40], lab[48];
    report_num_format(lo, ev[j], 4);
    snprintf(lab, sizeof lab, "%s%s", j + 1 == nb ? "\xE2\x89\xA5" : "", lo);
    report_svg_text(b, p->x0 + bw * ((double)j + 0.5), p->y1 + 18, "middle", NULL, lab);
  }
}

static int plot_ulp(const report_summary *s, report_buf *b, gdn_error *e) {
  figure_begin(b, "plot-ulp", "Histogram of ULP errors of o");
  const json_t *edges = NULL;
  size_t used = 0, skipped = 0;
  for (size_t i = 0; i < s->n && !edges; i++) {
    const json_t *h = json_object_get(s->cases[i].c, "ulp_histogram");
    if (h && json_array_size(json_object_get(h, "edges"))) edges = json_object_get(h, "edges");
  }
  if (!edges) {
    note(b, "No case has a ULP histogram (cases[].ulp_histogram).");
    figure_end(b);
    return GDN_OK;
  }
  size_t nb = json_array_size(edges);
  double *ev = read_nums(edges, nb, e);
  double *cnt = gdn_calloc(3 * nb, sizeof *cnt, "the histogram", e);
  if (!ev || !cnt) {
    gdn_free(ev);
    gdn_free(cnt);
    return GDN_ERR_NOMEM;
  }
  /* the third series: the fixture outputs the cases judge (cases[].subject,
   * each case's own under its name), summed like the others */
  static const char *const keys[] = {"scan", "affine-prefix", "outputs judged"};
  int has_series[3] = {0, 0, 0};
  for (size_t i = 0; i < s->n; i++) {
    const json_t *h = json_object_get(s->cases[i].c, "ulp_histogram");
    if (!h) continue;
    if (!same_edges(json_object_get(h, "edges"), edges)) {
      skipped++;
      continue;
    }
    used++;
    const char *subject = report_doc_str(s->cases[i].c, "subject");
    for (int k = 0; k < 3; k++) {
      const json_t *a = json_object_get(h, k < 2 ? keys[k] : subject ? subject : "");
      if (!a) continue;
      has_series[k] = 1;
      for (size_t j = 0; j < nb; j++) {
        double v;
        if (report_num_get(json_array_get(a, j), &v)) cnt[k * nb + j] += v;
      }
    }
  }
  report_axis ax, ay;
  report_axis_init(&ax, 0);
  report_axis_init(&ay, 1);
  report_axis_add1(&ax, 0);
  report_axis_add1(&ax, (double)nb);
  report_axis_set_ticks(&ax, NULL, 0);
  ax.explicit_ticks = 1; /* bins are labelled below, not ticked */
  /* Bars start at half the smallest count, so a bin of 1 is visible. */
  double minpos = INFINITY;
  for (size_t j = 0; j < 3 * nb; j++)
    if (cnt[j] > 0 && cnt[j] < minpos) minpos = cnt[j];
  if (isfinite(minpos)) report_axis_add1(&ay, minpos / 2);
  for (size_t j = 0; j < 3 * nb; j++)
    if (cnt[j] > 0) report_axis_add1(&ay, cnt[j]);
  report_axis_finish(&ax);
  ax.lo = 0, ax.hi = (double)nb;
  report_axis_finish(&ay);
  report_plot p;
  report_plot_begin(&p, b, "svg-ulp", "Histogram of ULP errors of o", PLOT_W, PLOT_H, &ax, &ay,
                    "|error of o| in ULP of the output dtype (bin lower edge)",
                    "elements (log scale)");
  double bw = (p.x1 - p.x0) / (double)nb;
  const int n_series = has_series[0] + has_series[1] + has_series[2];
  const double slot = 0.76 / (n_series ? n_series : 1); /* the bars of a bin share 76 % of it */
  int drawn = 0;
  for (int k = 0; k < 3; k++) {
    if (!has_series[k]) continue;
    report_buf_printf(b, "<g class=\"bars\" fill=\"%s\">", report_svg_color(k));
    for (size_t j = 0; j < nb; j++) {
      double c = cnt[k * nb + j];
      if (!(c > 0)) continue;
      double x = p.x0 + bw * (double)j + bw * (0.12 + slot * drawn), y = report_plot_py(&p, c);
      report_buf_puts(b, "<rect x=\"");
      report_svg_num(b, x);
      report_buf_puts(b, "\" y=\"");
      report_svg_num(b, y);
      report_buf_puts(b, "\" width=\"");
      report_svg_num(b, bw * slot * 0.95);
      report_buf_puts(b, "\" height=\"");
      report_svg_num(b, p.y1 - y);
      char v[REPORT_NUM_CHARS], lo[40];
      report_num_format(v, c, 6);
      report_num_format(lo, ev[j], 6);
      report_buf_printf(b, "\"><title>%s: %s elements with ULP error %s %s", keys[k], v,
                        j + 1 < nb ? "in [" : ">=", lo);
      if (j + 1 < nb) {
        char hi[40];
        report_num_format(hi, ev[j + 1], 6);
        report_buf_printf(b, ", %s)", hi);
      }
      report_buf_puts(b, "</title></rect>");
    }
    report_buf_puts(b, "</g>\n");
    drawn++;
  }
  ulp_bin_labels(b, &p, ev, nb, bw);
  static const char *const legend[] = {"scan vs oracle", "affine-prefix vs oracle",
                                       "judged output vs oracle"};
  for (int k = 0; k < 3; k++)
    if (has_series[k]) report_plot_legend(&p, k, REPORT_LEGEND_SWATCH, legend[k]);
  report_plot_end(&p);
  caption_begin(b);
  report_buf_printf(b, "Element counts of |error of o| / ulp(reference), summed over %zu case%s; "
                       "bin i holds edges[i] &lt;= ULP &lt; edges[i+1], the last bin is open above. "
                       "Empty bins have no bar.",
                    used, used == 1 ? "" : "s");
  if (skipped)
    report_buf_printf(b, " %zu case%s with different bin edges %s left out.", skipped,
                      skipped == 1 ? "" : "s", skipped == 1 ? "is" : "are");
  caption_end(b);
  figure_end(b);
  gdn_free(ev);
  gdn_free(cnt);
  return GDN_OK;
}

int report_plots_render(const json_t *doc, const report_summary *s, report_buf *b, gdn_error *e) {
  int rc = plot_profiles(doc, s, b, e);
  if (rc) return rc;
  plot_devices(s, b);
  plot_length(s, b);
  if ((rc = plot_heatmap(s, b, e))) return rc;
  plot_block_map(s, b);
  return plot_ulp(s, b, e);
}
