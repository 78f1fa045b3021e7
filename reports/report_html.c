#include "report_html.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_findings.h"
#include "report_escape.h"
#include "report_modes.h"
#include "report_num.h"
#include "report_plots.h"
#include "report_summary.h"

static const char CSS[] =
    ":root{color-scheme:light;--pass:#1a7f37;--fail:#b42318;--warn:#9a6700;--bg-fail:#fde8e7;"
    "--bg-pass:#e6f4ea;--line:#d0d7de;--muted:#57606a}\n"
    "*{box-sizing:border-box}\n"
    "body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\",sans-serif;"
    "color:#1f2328;background:#fff;margin:0 auto;max-width:1560px;padding:0 20px 40px}\n"
    "code,.mono{font-family:ui-monospace,\"DejaVu Sans Mono\",Menlo,Consolas,monospace;"
    "font-size:.9em}\n"
    "a{color:#0550ae}\n"
    "h1{font-size:15px;font-weight:600;color:var(--muted);margin:14px 0 0}\n"
    "h2{font-size:18px;border-bottom:1px solid var(--line);padding-bottom:4px;margin:28px 0 10px}\n"
    "h3{font-size:15px;margin:18px 0 6px}\n"
    ".verdict{display:flex;gap:28px;align-items:center;padding:18px 24px;margin:10px 0 16px;"
    "border-radius:8px;border:4px solid}\n"
    ".verdict-pass{background:var(--bg-pass);border-color:var(--pass)}\n"
    ".verdict-fail{background:var(--bg-fail);border-color:var(--fail)}\n"
    ".verdict-word{font-size:60px;font-weight:800;letter-spacing:3px;line-height:1;"
    "white-space:nowrap}\n"
    ".verdict-pass .verdict-word{color:var(--pass)}.verdict-fail .verdict-word{color:var(--fail)}\n"
    ".verdict p{margin:4px 0}.verdict .count{font-size:18px;font-weight:600}\n"
    "#deciding b.val{font-size:16px}\n"
    ".missed-note{background:#fff3cd;border-left:4px solid var(--warn);padding:4px 8px}\n"
    "table{border-collapse:collapse}\n"
    ".kv th{text-align:left;vertical-align:top;padding:3px 14px 3px 0;color:var(--muted);"
    "font-weight:600;white-space:nowrap}\n"
    ".kv td{padding:3px 0;overflow-wrap:anywhere}\n"
    ".grid-table th,.grid-table td{border:1px solid var(--line);padding:3px 6px;"
    "vertical-align:top}\n"
    ".grid-table thead th{background:#f6f8fa}\n"
    ".table-wrap{overflow-x:auto;max-width:100%}\n"
    "#case-table{font-size:11.5px}#case-table td,#case-table th{padding:2px 4px}\n"
    "#case-table td.check{min-width:8.5em}\n"
    "#case-table td.id .input{display:block;font-family:system-ui,\"DejaVu Sans\",sans-serif;"
    "color:var(--muted);font-size:.92em}\n"
    "#case-table thead{position:sticky;top:0;z-index:1}\n"
    "#case-table thead tr:first-child th{white-space:nowrap}\n"
    /* The case table fits a 1,400-pixel window: the upstream column wraps
     * its line and pills instead of widening the table. */
    "#case-table td.up{min-width:6.5em}.pills{white-space:nowrap}#case-table .pills{white-space:normal}\n"
    "#case-table td.id{font-family:ui-monospace,\"DejaVu Sans Mono\",monospace;font-size:.95em;"
    "overflow-wrap:anywhere;min-width:12em}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.na{color:#8c959f;text-align:center}\n"
    "tr.fail td{background:var(--bg-fail)}\n"
    "tr.fail td:first-child{box-shadow:inset 5px 0 0 var(--fail)}\n"
    ".tag-pass{color:var(--pass);font-weight:700}.tag-fail{color:var(--fail);font-weight:700}\n"
    ".tag-error{color:#fff;background:var(--fail);font-weight:700;padding:0 3px}\n"
    "td.nonfinite{color:#fff;background:#8b0000 !important;font-weight:700}\n"
    "td.over{color:var(--fail);font-weight:700}\n"
    "td.missed{background:#fff3cd !important;box-shadow:inset 0 0 0 2px var(--warn)}\n"
    ".reason{display:block;color:var(--muted);font-size:.92em;max-width:26em;white-space:normal}\n"
    ".upill{display:inline-block;padding:0 3px;margin:1px;border-radius:3px;font-size:.9em;"
    "border:1px solid;white-space:nowrap}\n"
    ".up-pass{border-color:var(--pass);color:var(--pass)}.up-fail{border-color:var(--fail);"
    "color:var(--fail)}\n"
    "button.sort{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer;"
    "color:inherit}\n"
    "button.sort::after{content:\" \\2195\";color:#8c959f}\n"
    "th[aria-sort=ascending] button.sort::after{content:\" \\2191\";color:inherit}\n"
    "th[aria-sort=descending] button.sort::after{content:\" \\2193\";color:inherit}\n"
    "figure.plot-figure{margin:18px 0 28px}\n"
    "figcaption{color:var(--muted);font-size:12.5px;max-width:1000px}\n"
    "svg.plot{width:100%;max-width:1000px;height:auto;display:block;"
    "font:12px system-ui,\"DejaVu Sans\",sans-serif}\n"
    "svg .grid line{stroke:#eaeef2}svg .frame{fill:none;stroke:#57606a}"
    "svg .ticks line{stroke:#57606a}\n"
    "svg .series{fill:none;stroke-width:1.8}svg .ref{stroke-width:1.4}\n"
    "svg .seam line{stroke:#6e7781;stroke-dasharray:4 3}"
    "svg .seam.padded line{stroke:#bc4c00;stroke-dasharray:2 2}svg .seam-label{font-size:10px;"
    "fill:#57606a}\n"
    "svg .axis-label{font-weight:600}svg .legend{font-size:11.5px}\n"
    "svg .floor-note{font-size:10px;fill:#8c959f}svg .cell-text{font-size:11px}"
    "svg .cell-dark{font-size:11px;fill:#fff}\n"
    ".no-data{color:var(--muted);font-style:italic}\n"
    "details.profile{margin:6px 0}details.profile>summary{cursor:pointer;font-weight:600}\n"
    "table.seams{font-size:11.5px;margin:4px 0 10px}table.seams td,table.seams th{border:1px solid"
    " var(--line);padding:1px 6px}\n"
    "footer{margin-top:36px;color:var(--muted);font-size:12px}\n"
    "@page{size:A4 landscape;margin:10mm}\n"
    "@media print{body{max-width:none;padding:0;font-size:10px}"
    "#case-table thead{position:static}.table-wrap{overflow:visible}"
    "#case-table{font-size:6.5px;width:100%}#case-table td,#case-table th{padding:1px 2px;"
    "white-space:normal}#case-table td.id{min-width:0}#case-table td.check{min-width:0}"
    ".verdict-word{font-size:40px}"
    ".verdict,tr.fail td,td.nonfinite,td.missed,.missed-note,svg{-webkit-print-color-adjust:exact;"
    "print-color-adjust:exact}"
    "figure.plot-figure,details.profile,tr{break-inside:avoid}"
    "svg.plot{max-width:100%}button.sort::after{content:none}a{color:inherit;"
    "text-decoration:none}}\n";

/* Records page errors before anything else runs, so the browser test sees
 * an error in any later script. */
static const char ERROR_TRAP[] =
    "window.__gdnErrors=[];window.onerror=function(m,s,l,c){window.__gdnErrors.push(String(m)+"
    "' (line '+l+':'+c+')');document.documentElement.setAttribute('data-script-errors',"
    "window.__gdnErrors.join(' | '));};";

/* Sorting: every header of the last header row with data-sort gets a button;
 * numbers sort by data-v (NaN as the worst, +inf), ties keep the original
 * order (failing first).  Before printing, every <details> opens. */
static const char SCRIPT[] =
    "(function(){\n"
    "var t=document.getElementById('case-table');\n"
    "if(t&&t.tHead&&t.tBodies.length){\n"
    "var hr=t.tHead.rows[t.tHead.rows.length-1],body=t.tBodies[0];\n"
    "var key=function(r,col,kind){var c=r.cells[col];if(!c)return kind==='num'?-Infinity:'';"
    "var v=c.getAttribute('data-v');if(v===null)v=c.textContent;"
    "if(kind!=='num')return v.toLowerCase();if(v==='nan'||v==='inf')return Infinity;"
    "if(v==='-inf')return -Infinity;var x=parseFloat(v);return isNaN(x)?-Infinity:x;};\n"
    "Array.prototype.forEach.call(hr.cells,function(th,col){\n"
    "var kind=th.getAttribute('data-sort');if(!kind)return;\n"
    "var b=document.createElement('button');b.type='button';b.className='sort';"
    "b.title='sort by this column';\n"
    "while(th.firstChild)b.appendChild(th.firstChild);th.appendChild(b);"
    "th.setAttribute('aria-sort','none');\n"
    "b.addEventListener('click',function(){\n"
    "var dir=th.getAttribute('aria-sort')==='descending'?'ascending':'descending';\n"
    "Array.prototype.forEach.call(hr.cells,function(h){if(h.hasAttribute('aria-sort'))"
    "h.setAttribute('aria-sort','none');});\n"
    "th.setAttribute('aria-sort',dir);\n"
    "var rows=Array.prototype.slice.call(body.rows);\n"
    "rows.sort(function(p,q){var x=key(p,col,kind),y=key(q,col,kind);"
    "var c=x<y?-1:x>y?1:0;if(dir==='descending')c=-c;"
    "return c||(+p.getAttribute('data-i'))-(+q.getAttribute('data-i'));});\n"
    "rows.forEach(function(r){body.appendChild(r);});});});\n"
    "var h=document.getElementById('sort-hint');if(h)h.hidden=false;}\n"
    "window.addEventListener('beforeprint',function(){Array.prototype.forEach.call("
    "document.querySelectorAll('details'),function(d){d.open=true;});});\n"
    "document.documentElement.setAttribute('data-script','ran');\n"
    "})();\n";

static void fmt3(char out[REPORT_NUM_CHARS], double v) { report_num_format(out, v, 3); }

static void esc(report_buf *b, const char *s) { report_escape_html_text_z(b, s); }

/* data-v for sorting: enough digits to order distinct values. */
static void data_v(report_buf *b, double v) {
  char t[REPORT_NUM_CHARS];
  if (isfinite(v)) snprintf(t, sizeof t, "%.9g", v);
  else report_num_format(t, v, 3); /* "nan", "inf", "-inf" */
  report_buf_printf(b, " data-v=\"%s\"", t);
}

static void td_value(report_buf *b, int present, double v, const char *extra_class) {
  if (!present) {
    report_buf_puts(b, "<td class=\"num na\" data-v=\"\">\xE2\x80\x94</td>");
    return;
  }
  char t[REPORT_NUM_CHARS];
  fmt3(t, v);
  report_buf_printf(b, "<td class=\"num%s%s%s\"", isfinite(v) ? "" : " nonfinite",
                    extra_class ? " " : "", extra_class ? extra_class : "");
  data_v(b, v);
  report_buf_printf(b, ">%s</td>", t);
}

static void td_metric(report_buf *b, const json_t *c, const char *impl, const char *tensor,
                      const char *field) {
  double v;
  int has = report_doc_metric(c, impl, tensor, field, &v);
  td_value(b, has, v, NULL);
}

/* ------------------------------------------------------------ counting */

#define MAX_DISTINCT 32

typedef struct distinct {
  const char *name[MAX_DISTINCT];
  size_t count[MAX_DISTINCT];
  size_t n, more;
} distinct;

static void distinct_add(distinct *d, const char *s) {
  if (!s) return;
  for (size_t i = 0; i < d->n; i++)
    if (!strcmp(d->name[i], s)) {
      d->count[i]++;
      return;
    }
  if (d->n == MAX_DISTINCT) {
    d->more++;
    return;
  }
  d->name[d->n] = s;
  d->count[d->n++] = 1;
}

static void distinct_print(report_buf *b, const distinct *d, size_t total) {
  if (!d->n) {
    report_buf_puts(b, "\xE2\x80\x94");
    return;
  }
  for (size_t i = 0; i < d->n; i++) {
    if (i) report_buf_puts(b, ", ");
    report_buf_puts(b, "<code>");
    esc(b, d->name[i]);
    report_buf_puts(b, "</code>");
    if (d->n > 1 || d->count[i] != total)
      report_buf_printf(b, " (%zu case%s)", d->count[i], d->count[i] == 1 ? "" : "s");
  }
  if (d->more) report_buf_printf(b, ", and %zu more", d->more);
}

/* Distinct integers of a case field, printed ascending. */
static void int_values(report_buf *b, const json_t *cases, const char *obj, const char *key) {
  long long v[MAX_DISTINCT];
  size_t n = 0, more = 0;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    const json_t *o = obj ? json_object_get(c, obj) : c;
    long long x = report_doc_int(o, key, -1);
    if (x < 0) continue;
    size_t k = 0;
    while (k < n && v[k] < x) k++;
    if (k < n && v[k] == x) continue;
    if (n == MAX_DISTINCT) {
      more++;
      continue;
    }
    memmove(v + k + 1, v + k, (n - k) * sizeof *v);
    v[k] = x;
    n++;
  }
  if (!n) report_buf_puts(b, "\xE2\x80\x94");
  for (size_t k = 0; k < n; k++) report_buf_printf(b, "%s%lld", k ? ", " : "", v[k]);
  if (more) report_buf_puts(b, ", ...");
}

/* ------------------------------------------------------------ sections */

static void deciding_sentence(report_buf *b, const report_summary *s) {
  report_buf_puts(b, "<p id=\"deciding\">");
  if (s->worst == SIZE_MAX) {
    report_buf_puts(b, "The document has no cases.</p>\n");
    return;
  }
  const report_case_view *w = &s->cases[s->worst];
  report_buf_puts(b, s->n_fail ? "Deciding check of the worst case " : "Closest to its limit: case ");
  report_buf_printf(b, "<a href=\"#case-%zu\"><code>", w->index);
  esc(b, report_doc_str(w->c, "id"));
  report_buf_puts(b, "</code></a>");
  if (w->error) {
    report_buf_puts(b, ": <b>the case could not be evaluated</b>: ");
    esc(b, w->error);
  }
  if (w->deciding) {
    char v[REPORT_NUM_CHARS], l[REPORT_NUM_CHARS], m[REPORT_NUM_CHARS];
    report_num_format(v, w->value, 4);
    report_num_format(l, w->limit, 4);
    report_num_format(m, w->margin, 3);
    int pass = json_is_true(json_object_get(w->deciding, "pass"));
    report_buf_puts(b, ": <b>");
    esc(b, report_doc_str(w->deciding, "name"));
    report_buf_puts(b, "</b>, <code>");
    esc(b, report_doc_str(w->deciding, "metric"));
    report_buf_printf(b, "</code> = <b class=\"val\">%s</b> %s limit <b class=\"val\">%s</b> "
                         "(%s\xC3\x97 the limit: <span class=\"%s\">%s</span>)",
                      v, pass ? "within" : "over the", l, m, pass ? "tag-pass" : "tag-fail",
                      pass ? "pass" : "fail");
    double fr;
    if (report_doc_num(w->deciding, "factor_reached", &fr)) {
      char f[REPORT_NUM_CHARS];
      report_num_format(f, fr, 3);
      report_buf_printf(b, ", factor reached %s", f);
    }
    const char *reason = report_doc_str(w->deciding, "reason");
    if (reason) {
      report_buf_puts(b, ". Limit: ");
      esc(b, reason);
    }
  } else if (!w->error) {
    report_buf_puts(b, ": no tolerance checks");
  }
  report_buf_puts(b, ".</p>\n");
}

static void finding_item(report_buf *b, const report_finding *f) {
  report_escape_fill(b, esc, "<li><b>%s</b> (", report_finding_label(f->text));
  report_buf_printf(b, "%zu case%s, first <code>", f->cases, f->cases == 1 ? "" : "s");
  report_escape_fill(b, esc, "%s</code>): %s</li>\n", f->first_id ? f->first_id : "?", f->text);
}

/* What the numbers mean beyond pass/fail: each distinct cases[].finding
 * once (report_findings.h), under the verdict. */
static void findings_section(report_buf *b, const report_summary *s) {
  static const report_findings_style html = {
      "<section id=\"findings\">\n<h2>Findings</h2>\n<ul>\n", finding_item,
      "<li>... and %zu more distinct findings (cases[].finding).</li>\n", "</ul>\n</section>\n"};
  report_findings_list(b, s, &html);
}

static void verdict(report_buf *b, const report_summary *s) {
  report_buf_printf(b, "<header id=\"verdict\" class=\"verdict verdict-%s\" role=\"status\">\n",
                    s->pass ? "pass" : "fail");
  report_buf_printf(b, "<div class=\"verdict-word\"><span aria-hidden=\"true\">%s</span> %s</div>\n",
                    s->pass ? "\xE2\x9C\x93" : "\xE2\x9C\x97", s->pass ? "PASS" : "FAIL");
  report_buf_puts(b, "<div class=\"verdict-text\">\n<p class=\"count\">");
  if (s->n == 0) report_buf_puts(b, "No cases were run.");
  else if (s->pass || !s->n_fail) /* a FAIL of the audit alone: its own line below */
    report_buf_printf(b, "All %zu case%s within tolerance.", s->n, s->n == 1 ? "" : "s");
  else
    report_buf_printf(b, "%zu of %zu case%s out of tolerance%s.", s->n_fail, s->n,
                      s->n == 1 ? "" : "s", s->n_error ? " or not evaluated" : "");
  long long ex = report_doc_int(s->doc, "exit_status", -1);
  if (ex >= 0) report_buf_printf(b, " Exit status %lld.", ex);
  report_buf_puts(b, "</p>\n");
  const char *pm = report_doc_planted_mutant(s->doc);
  if (pm) {
    report_buf_puts(b, "<p class=\"planted-mutant\" id=\"planted-mutant\"><b>Planted mutant ");
    esc(b, pm);
    report_buf_printf(b, " %s</b>: %s.</p>\n", s->pass ? "survived" : "killed", REPORT_MUTANT_NOTE);
  }
  deciding_sentence(b, s);
  if (s->n_missed)
    report_buf_printf(b, "<p class=\"missed-note\">At least one of today's upstream checks "
                         "would have <b>passed %zu of the %zu failing case%s</b> (see "
                         "<a href=\"#upstream\">the comparison</a>).</p>\n",
                      s->n_missed, s->n_fail, s->n_fail == 1 ? "" : "s");
  report_audit_html_headline(b, s->doc);
  report_buf_puts(b, "</div>\n</header>\n");
}

static void kv_row_begin(report_buf *b, const char *name) {
  report_buf_printf(b, "<tr><th scope=\"row\">%s</th><td>", name);
}
static void kv_row_end(report_buf *b) { report_buf_puts(b, "</td></tr>\n"); }

static void shape_text(report_buf *b, const json_t *sh) {
  static const char *const dims[] = {"B", "T", "Hk", "Hv", "Dk", "Dv"};
  if (!sh) {
    report_buf_puts(b, "\xE2\x80\x94");
    return;
  }
  for (size_t i = 0; i < 6; i++)
    report_buf_printf(b, "%s%s=%lld", i ? " " : "", dims[i], report_doc_int(sh, dims[i], 0));
}

/* Sharding, triangular solve and packing over the cases (report_modes.h). */
static void modes_row(report_buf *b, const report_summary *s) {
  kv_row_begin(b, "Shard \xC2\xB7 solve \xC2\xB7 packing");
  for (int k = 0; k < REPORT_MODE_N; k++) {
    distinct d = {0};
    for (size_t i = 0; i < s->n; i++) distinct_add(&d, report_doc_str(s->cases[i].c, report_mode_keys[k]));
    report_buf_printf(b, "%s%s ", k ? "; " : "", report_mode_keys[k]);
    distinct_print(b, &d, s->n);
  }
  kv_row_end(b);
}

/* The tool, its command line and the document's date. */
static void tool_rows(report_buf *b, const json_t *doc) {
  kv_row_begin(b, "Tool");
  esc(b, report_doc_str(doc, "tool"));
  report_buf_puts(b, " ");
  esc(b, report_doc_str(doc, "version"));
  const char *git = report_doc_str(doc, "git_commit");
  report_buf_puts(b, ", git commit <code>");
  esc(b, git ? git : "unknown");
  report_buf_printf(b, "</code>, results schema %lld", report_doc_int(doc, "schema", 1));
  kv_row_end(b);
  const char *cmd = report_doc_str(doc, "command");
  kv_row_begin(b, "Command");
  if (cmd) {
    report_buf_puts(b, "<code>");
    esc(b, cmd);
    report_buf_puts(b, "</code>");
  } else report_buf_puts(b, "\xE2\x80\x94");
  kv_row_end(b);
  const char *created = report_doc_str(doc, "created");
  if (created) {
    kv_row_begin(b, "Created");
    esc(b, created);
    kv_row_end(b);
  }
}

/* Which oracle judged, at what precision, and how far it is certified. */
static void oracle_row(report_buf *b, const json_t *doc) {
  kv_row_begin(b, "Oracle");
  const json_t *o = json_object_get(doc, "oracle");
  if (!o) report_buf_puts(b, "<b>none</b> (--oracle none): affine-prefix is judged against the "
                             "scan only; no errors against an exact reference");
  else {
    const char *tier = report_doc_str(o, "tier"), *form = report_doc_str(o, "form");
    report_escape_fill(b, esc, "tier <code>%s</code>", tier ? tier : "?");
    if (form) report_escape_fill(b, esc, ", form <code>%s</code>", form);
    long long pb = report_doc_int(o, "precision_bits", -1), cb = report_doc_int(o, "check_bits", -1);
    if (pb > 0) report_buf_printf(b, ", working precision %lld bits", pb);
    if (cb > 0) report_buf_printf(b, ", self-check at %lld bits", cb);
    char t[REPORT_NUM_CHARS];
    if (report_doc_num_text(o, "certified_bits", 4, t))
      report_buf_printf(b, ", <b>certified bits %s</b> (min over the inputs)", t);
    /* A sampled certificate (the dd tier) says how much of the state it
     * covers and what the proven bound gives everywhere else. */
    long long sc = report_doc_int(o, "sampled_columns", -1), tc = report_doc_int(o, "total_columns", -1);
    if (sc >= 0 && tc > 0 && sc < tc)
      report_buf_printf(b, ", certified on %lld of %lld state columns (a sample checked against MPFR)",
                        sc, tc);
    long long gb = report_doc_int(o, "guaranteed_bits", -1);
    if (gb >= 0) report_buf_printf(b, "; every column within a proven %lld bits (running error bound)", gb);
  }
  kv_row_end(b);
}

static void policy_row(report_buf *b, const json_t *doc) {
  kv_row_begin(b, "Policy");
  const json_t *pol = json_object_get(doc, "policy");
  if (!pol) report_buf_puts(b, "\xE2\x80\x94");
  else {
    report_buf_puts(b, "<code>");
    esc(b, report_doc_str(pol, "name") ? report_doc_str(pol, "name") : "?");
    report_buf_puts(b, "</code>");
    if (report_doc_str(pol, "source")) {
      report_buf_puts(b, " from ");
      esc(b, report_doc_str(pol, "source"));
    }
    if (report_doc_str(pol, "sha256")) {
      report_buf_puts(b, ", sha256 <code>");
      esc(b, report_doc_str(pol, "sha256"));
      report_buf_puts(b, "</code>");
    }
  }
  kv_row_end(b);
}

/* The numerics modes the cases ran in, each as the distinct values seen. */
static void numerics_rows(report_buf *b, const report_summary *s, const json_t *cases) {
  distinct dt = {0}, mm = {0}, od = {0}, pf = {0};
  size_t ftz = 0;
  for (size_t i = 0; i < s->n; i++) {
    const json_t *c = s->cases[i].c;
    distinct_add(&dt, report_doc_str(c, "dtype"));
    distinct_add(&mm, report_doc_str(c, "matmul_precision"));
    distinct_add(&od, report_doc_str(c, "output_dtype"));
    distinct_add(&pf, report_doc_str(c, "prefix"));
    ftz += report_doc_bool(c, "ftz", 0);
  }
  kv_row_begin(b, "Kernel dtype");
  distinct_print(b, &dt, s->n);
  if (od.n) {
    report_buf_puts(b, "; output dtype ");
    distinct_print(b, &od, s->n);
  }
  report_buf_printf(b, "; subnormals flushed to zero in %zu case%s", ftz, ftz == 1 ? "" : "s");
  kv_row_end(b);
  kv_row_begin(b, "Matmul precision");
  distinct_print(b, &mm, s->n);
  kv_row_end(b);
  kv_row_begin(b, "Prefix schedules");
  distinct_print(b, &pf, s->n);
  kv_row_end(b);
  modes_row(b, s);
  kv_row_begin(b, "Devices");
  int_values(b, cases, NULL, "devices");
  kv_row_end(b);
  kv_row_begin(b, "Chunk sizes");
  int_values(b, cases, NULL, "chunk");
  kv_row_end(b);
  kv_row_begin(b, "Sequence lengths T");
  int_values(b, cases, "shape", "T");
  kv_row_end(b);
}

static void timing_row(report_buf *b, const json_t *doc) {
  const json_t *tm = json_object_get(doc, "timing");
  if (tm) {
    kv_row_begin(b, "Timing");
    const json_t *secs = json_object_get(tm, "seconds");
    const char *k;
    const json_t *v;
    int first = 1;
    json_object_foreach((json_t *)secs, k, v) {
      double x;
      char t[REPORT_NUM_CHARS];
      if (!report_num_get(v, &x)) continue;
      report_num_format(t, x, 4);
      report_buf_puts(b, first ? "" : ", ");
      esc(b, k);
      report_buf_printf(b, " %s s", t);
      first = 0;
    }
    long long th = report_doc_int(tm, "threads", -1);
    if (th >= 0) report_buf_printf(b, "%s%lld thread%s", first ? "" : "; ", th, th == 1 ? "" : "s");
    kv_row_end(b);
  }
}

static void inputs_table(report_buf *b, const json_t *doc) {
  const json_t *inputs = json_object_get(doc, "inputs");
  report_buf_puts(b, "<h3>Inputs</h3>\n");
  if (!json_array_size(inputs)) {
    report_buf_puts(b, "<p class=\"no-data\">The document lists no inputs.</p>\n");
  } else {
    report_buf_puts(b, "<div class=\"table-wrap\"><table id=\"inputs\" class=\"grid-table\"><thead>"
                       "<tr><th>#</th><th>name</th><th>source</th><th>path</th><th>shape</th>"
                       "<th>inputs sha256</th><th>oracle certified bits</th><th>options</th>"
                       "</tr></thead><tbody>\n");
    for (size_t i = 0; i < json_array_size(inputs); i++) {
      const json_t *in = json_array_get(inputs, i);
      report_buf_printf(b, "<tr><td>%zu</td><td>", i);
      esc(b, report_doc_str(in, "name"));
      report_buf_puts(b, "</td><td>");
      esc(b, report_doc_str(in, "source") ? report_doc_str(in, "source") : "\xE2\x80\x94");
      report_buf_puts(b, "</td><td><code>");
      esc(b, report_doc_str(in, "path") ? report_doc_str(in, "path") : "");
      report_buf_puts(b, "</code></td><td class=\"mono\">");
      shape_text(b, json_object_get(in, "shape"));
      report_buf_puts(b, "</td><td class=\"mono\" style=\"overflow-wrap:anywhere\">");
      esc(b, report_doc_str(in, "sha256") ? report_doc_str(in, "sha256") : "\xE2\x80\x94");
      report_buf_puts(b, "</td>");
      double cb = 0;
      int has_cb = report_doc_num(in, "oracle_certified_bits", &cb);
      td_value(b, has_cb, cb, NULL);
      report_buf_puts(b, "<td>");
      int l2 = report_doc_bool(in, "l2norm_in_kernel", -1), h0 = report_doc_bool(in, "h0", -1);
      if (l2 >= 0) report_buf_printf(b, "L2 norm in kernel: %s; ", l2 ? "yes" : "no");
      if (h0 >= 0) report_buf_printf(b, "initial state h0: %s; ", h0 ? "yes" : "no");
      const json_t *bf = json_object_get(in, "bf16_inputs");
      report_buf_puts(b, "bfloat16 inputs: ");
      if (!json_array_size(bf)) report_buf_puts(b, "none");
      for (size_t k = 0; k < json_array_size(bf); k++) {
        if (k) report_buf_puts(b, ", ");
        esc(b, json_string_value(json_array_get(bf, k)) ? json_string_value(json_array_get(bf, k))
                                                        : "?");
      }
      report_buf_puts(b, "</td></tr>\n");
    }
    report_buf_puts(b, "</tbody></table></div>\n");
  }
}

static void environment(report_buf *b, const report_summary *s) {
  const json_t *doc = s->doc, *cases = json_object_get(doc, "cases");
  report_buf_puts(b, "<section id=\"environment\">\n<h2>Environment</h2>\n<table class=\"kv\">\n");
  tool_rows(b, doc);
  oracle_row(b, doc);
  policy_row(b, doc);
  numerics_rows(b, s, cases);
  timing_row(b, doc);
  report_buf_puts(b, "</table>\n");
  inputs_table(b, doc);
  report_buf_puts(b, "</section>\n");
}

static void upstream_section(report_buf *b, const report_summary *s) {
  report_buf_puts(b, "<section id=\"upstream\">\n<h2>Compared with today's upstream checks</h2>\n");
  if (!s->n_upstream) {
    report_buf_puts(b, "<p class=\"no-data\">The document carries no upstream verdicts "
                       "(cases[].upstream).</p>\n</section>\n");
    return;
  }
  report_buf_puts(b, "<p>What the tolerances used upstream today would have said about the same "
                     "numbers (MaxText's unit test, torch.testing defaults, "
                     "flash-linear-attention's RMS ratio), applied as upstream's own test applies "
                     "them: in a case that judges a fixture output, to that output against the "
                     "stock output of the same run (the case's <em>judged</em> columns); elsewhere "
                     "to affine-prefix against the scan. <b>Would have missed</b>: the upstream "
                     "check passes a case that this gate fails.</p>\n"
                     "<table class=\"grid-table\" id=\"upstream-table\"><thead><tr><th>key</th>"
                     "<th>upstream check</th><th>cases judged</th><th>upstream passes</th>"
                     "<th>would have missed (upstream pass, ours fail)</th>"
                     "<th>stricter (upstream fail, ours pass)</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < s->n_upstream; i++) {
    const report_upstream_stat *u = &s->upstream[i];
    report_buf_printf(b, "<tr><td>U%zu</td><td>", i + 1);
    esc(b, u->name);
    report_buf_printf(b, "</td><td class=\"num\">%zu</td><td class=\"num\">%zu</td>"
                         "<td class=\"num%s\">%zu</td><td class=\"num\">%zu</td></tr>\n",
                      u->cases, u->pass, u->missed ? " missed" : "", u->missed, u->stricter);
  }
  report_buf_puts(b, "</tbody></table>\n");
  if (s->upstream_dropped)
    report_buf_printf(b, "<p class=\"no-data\">%zu verdicts of further upstream checks are not "
                         "tabulated.</p>\n", s->upstream_dropped);
  report_buf_puts(b, "</section>\n");
}

static int upstream_index(const report_summary *s, const char *name) {
  for (size_t i = 0; i < s->n_upstream; i++)
    if (!strcmp(s->upstream[i].name, name)) return (int)i;
  return -1;
}

static int has_other_impls(const report_summary *s) {
  for (size_t i = 0; i < s->n; i++) {
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(s->cases[i].c, "impls"), k, v) {
      if (strcmp(k, "scan") && strcmp(k, "affine-prefix")) return 1;
    }
  }
  return 0;
}

/* Optional columns: fixture outputs when any case has them (under the case
 * id, case_outputs_span); dtype when the
 * cases differ in it (otherwise the environment states it once). */
typedef struct columns {
  int other, dtype;
  unsigned modes; /* report_modes_varying: shown per case in the prefix column */
} columns;

static void dtype_text(report_buf *b, const json_t *c) {
  esc(b, report_doc_str(c, "dtype"));
  report_buf_puts(b, " \xC2\xB7 ");
  esc(b, report_doc_str(c, "matmul_precision"));
  if (report_doc_bool(c, "ftz", 0)) report_buf_puts(b, " \xC2\xB7 ftz");
}

static int dtypes_differ(const report_summary *s) {
  report_buf a, x;
  report_buf_init(&a);
  report_buf_init(&x);
  int differ = 0;
  for (size_t i = 0; i < s->n && !differ; i++) {
    report_buf *t = i ? &x : &a;
    t->len = 0;
    dtype_text(t, s->cases[i].c);
    differ = i && (a.len != x.len || memcmp(a.data, x.data, a.len));
  }
  /* On allocation failure show the column: never hide information. */
  if (a.err.code || x.err.code) differ = 1;
  report_buf_clear(&a);
  report_buf_clear(&x);
  return differ;
}

/* Other implementations judged in the case (fixture outputs, mutants): their
 * verdict and o rel_fro, under the case id (a column of their own made the
 * table wider than a page). */
static void case_outputs_span(report_buf *b, const json_t *c) {
  const char *k;
  const json_t *im;
  int any = 0;
  json_object_foreach(json_object_get(c, "impls"), k, im) {
    if (!strcmp(k, "scan") || !strcmp(k, "affine-prefix")) continue;
    int p = report_doc_bool(im, "pass", 1);
    double rf;
    char t[REPORT_NUM_CHARS] = "\xE2\x80\x94";
    if (report_doc_metric(c, k, "o", "rel_fro", &rf)) fmt3(t, rf);
    report_buf_printf(b, "%s<span class=\"%s\">%s</span> ", any ? "<br>" : "<span class=\"input outputs\">output ",
                      p ? "tag-pass" : "tag-fail", p ? "\xE2\x9C\x93" : "\xE2\x9C\x97");
    esc(b, k);
    report_buf_printf(b, " (o rel_fro %s", t);
    /* parity_packing.h: with packed documents, the semantics o matches */
    const char *pm = report_doc_str(json_object_get(im, "attrs"), "packing_matched");
    if (pm) {
      report_buf_puts(b, "; packing: ");
      esc(b, pm);
    }
    report_buf_puts(b, ")");
    any = 1;
  }
  if (any) report_buf_puts(b, "</span>");
}

/* The row's identity: rank, verdict, id (and input name), T, C, D, prefix
 * and modes, dtype. */
static void case_cells_id(report_buf *b, const report_summary *s, size_t rank, const columns *cols) {
  const report_case_view *v = &s->cases[s->order[rank]];
  const json_t *c = v->c, *sh = json_object_get(c, "shape");
  report_buf_printf(b, "<tr id=\"case-%zu\" data-i=\"%zu\"%s>", v->index, rank,
                    v->pass ? "" : " class=\"fail\"");
  report_buf_printf(b, "<td class=\"num\" data-v=\"%zu\">%zu</td>", rank + 1, rank + 1);
  if (v->error)
    report_buf_puts(b, "<td data-v=\"0\"><span class=\"tag-error\">ERROR</span></td>");
  else
    report_buf_printf(b, "<td data-v=\"%d\"><span class=\"%s\">%s</span></td>", v->pass ? 1 : 0,
                      v->pass ? "tag-pass" : "tag-fail", v->pass ? "PASS" : "FAIL");
  /* The input's name under the id rather than in a column of its own: the
   * table must fit a page. */
  report_buf_puts(b, "<td class=\"id\">");
  esc(b, report_doc_str(c, "id"));
  const json_t *in = report_doc_input(s->doc, c);
  if (in) {
    report_buf_puts(b, "<span class=\"input\">input: ");
    esc(b, report_doc_str(in, "name"));
    report_buf_puts(b, "</span>");
  }
  const char *subject = report_doc_str(c, "subject");
  if (subject) { /* the judged columns are this output's */
    report_buf_puts(b, "<span class=\"input subject\">judged: <b>");
    esc(b, subject);
    report_buf_puts(b, "</b>");
    if (report_doc_str(c, "upstream_against")) {
      report_buf_puts(b, " (vs ");
      esc(b, report_doc_str(c, "upstream_against"));
      report_buf_puts(b, ")");
    }
    report_buf_puts(b, "</span>");
  }
  if (cols->other) case_outputs_span(b, c);
  report_buf_printf(b, "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>"
                       "<td class=\"num\">%lld</td><td>",
                    report_doc_int(sh, "T", 0), report_doc_int(c, "chunk", 0),
                    report_doc_int(c, "devices", 0));
  esc(b, report_doc_str(c, "prefix"));
  report_modes_append(b, c, cols->modes, esc);
  report_buf_puts(b, "</td>");
  if (cols->dtype) {
    report_buf_puts(b, "<td>");
    dtype_text(b, c);
    report_buf_puts(b, "</td>");
  }
}

/* Each implementation's rel_fro and median ULP on o and ht: the scan's, then
 * the judged one's -- the fixture output the case is about (cases[].subject)
 * against the oracle and against the stock output upstream compares it with,
 * or without one affine-prefix against the oracle and against the scan. */
static void case_cells_metrics(report_buf *b, const json_t *c) {
  const char *subject = report_doc_str(c, "subject");
  const char *const impls[] = {"scan", subject ? subject : "affine-prefix",
                               subject ? "subject_vs_against" : "affine_vs_scan"};
  for (size_t k = 0; k < 3; k++) {
    td_metric(b, c, impls[k], "o", "rel_fro");
    /* The median, not the max: the max ULP error is dominated by elements
     * whose reference is near zero (cancellation), where ULPs explode while
     * the absolute error is tiny; it stays in the JSON and the tooltips. */
    td_metric(b, c, impls[k], "o", "median_ulp");
    td_metric(b, c, impls[k], "ht", "rel_fro");
    td_metric(b, c, impls[k], "ht", "median_ulp");
  }
}

/* The deciding check, its value, limit and margin (or the error). */
static void case_cells_deciding(report_buf *b, const report_case_view *v) {
  if (v->deciding) {
    int pass = json_is_true(json_object_get(v->deciding, "pass"));
    const char *reason = report_doc_str(v->deciding, "reason");
    /* The reason is spelled out where the check failed; on passing rows it
     * is a tooltip, so hundreds of rows stay one line each. */
    report_buf_puts(b, "<td class=\"check\"");
    if (reason && pass) {
      report_buf_puts(b, " title=\"limit: ");
      report_escape_html_attr_z(b, reason);
      report_buf_putc(b, '"');
    }
    report_buf_putc(b, '>');
    esc(b, report_doc_str(v->deciding, "name"));
    report_buf_puts(b, " <code>");
    esc(b, report_doc_str(v->deciding, "metric"));
    report_buf_puts(b, "</code>");
    const char *rule = report_doc_str(v->deciding, "rule");
    if (reason && !pass && rule) { /* the rule's reason once, under the table */
      report_buf_puts(b, "<span class=\"reason\">limit: rule <a href=\"#limit-");
      report_escape_html_attr_z(b, rule);
      report_buf_puts(b, "\">");
      esc(b, rule);
      report_buf_puts(b, "</a> (below the table)</span>");
    } else if (reason && !pass) {
      report_buf_puts(b, "<span class=\"reason\">limit: ");
      esc(b, reason);
      report_buf_puts(b, "</span>");
    }
    if (v->error) {
      report_buf_puts(b, "<span class=\"reason\">error: ");
      esc(b, v->error);
      report_buf_puts(b, "</span>");
    }
    report_buf_puts(b, "</td>");
    td_value(b, 1, v->value, pass ? NULL : "over");
    td_value(b, 1, v->limit, NULL);
    td_value(b, 1, v->margin, pass ? NULL : "over");
  } else {
    report_buf_puts(b, "<td>");
    if (v->error) {
      report_buf_puts(b, "<span class=\"tag-error\">error</span> ");
      esc(b, v->error);
    } else report_buf_puts(b, "no checks");
    report_buf_puts(b, "</td>");
    td_value(b, 0, 0, NULL);
    td_value(b, 0, 0, NULL);
    td_value(b, 0, 0, NULL);
  }
}

/* Upstream: the headline is what a reader must not miss. */
static void case_cell_upstream(report_buf *b, const report_summary *s, const report_case_view *v) {
  const json_t *c = v->c;
  const json_t *up = json_object_get(c, "upstream");
  if (!v->upstream_n) {
    report_buf_puts(b, "<td class=\"na\" data-v=\"-1\">\xE2\x80\x94</td>");
  } else {
    int all = v->upstream_pass == v->upstream_n, none = v->upstream_pass == 0;
    int missed = !v->pass && v->upstream_pass > 0;
    int code = missed ? 3 : (v->pass && !all) ? 2 : !v->pass ? 1 : 0;
    report_buf_printf(b, "<td class=\"up%s\" data-v=\"%d\">", missed ? " missed" : "", code);
    char up_word[32];
    if (all) snprintf(up_word, sizeof up_word, "pass");
    else if (none) snprintf(up_word, sizeof up_word, "fail");
    else snprintf(up_word, sizeof up_word, "%d/%d pass", v->upstream_pass, v->upstream_n);
    report_buf_printf(b, "%supstream: %s / ours: %s%s<br><span class=\"pills\">",
                      missed ? "<b>" : "", up_word, v->pass ? "pass" : "fail",
                      missed ? "</b>" : "");
    for (size_t k = 0; k < json_array_size(up); k++) {
      const json_t *u = json_array_get(up, k);
      int p = json_is_true(json_object_get(u, "pass"));
      int ui = upstream_index(s, report_doc_str(u, "name"));
      report_buf_printf(b, "<span class=\"upill %s\" title=\"", p ? "up-pass" : "up-fail");
      report_escape_html_attr_z(b, report_doc_str(u, "name"));
      if (report_doc_str(u, "detail")) {
        report_buf_puts(b, ": ");
        report_escape_html_attr_z(b, report_doc_str(u, "detail"));
      }
      if (ui >= 0) report_buf_printf(b, "\">U%d%s</span>", ui + 1, p ? "\xE2\x9C\x93" : "\xE2\x9C\x97");
      else report_buf_printf(b, "\">U?%s</span>", p ? "\xE2\x9C\x93" : "\xE2\x9C\x97");
    }
    report_buf_puts(b, "</span></td>");
  }
}

static void case_row(report_buf *b, const report_summary *s, size_t rank, const columns *cols) {
  const report_case_view *v = &s->cases[s->order[rank]];
  case_cells_id(b, s, rank, cols);
  case_cells_metrics(b, v->c);
  case_cells_deciding(b, v);
  case_cell_upstream(b, s, v);
  report_buf_puts(b, "</tr>\n");
}

/* The reasons of the rules that decided a failing case, each once (the
 * rows link here instead of repeating the paragraph). */
static void limits_list(report_buf *b, const report_summary *s) {
  distinct seen = {0};
  for (size_t i = 0; i < s->n; i++) {
    const report_case_view *v = &s->cases[i];
    const char *rule = v->deciding ? report_doc_str(v->deciding, "rule") : NULL;
    const char *reason = v->deciding ? report_doc_str(v->deciding, "reason") : NULL;
    if (!rule || !reason || json_is_true(json_object_get(v->deciding, "pass"))) continue;
    size_t k = 0;
    while (k < seen.n && strcmp(seen.name[k], rule)) k++;
    if (k < seen.n || seen.n == MAX_DISTINCT) continue;
    if (!seen.n) report_buf_puts(b, "<dl id=\"limits\" class=\"limits\">\n");
    seen.name[seen.n++] = rule;
    report_buf_puts(b, "<dt id=\"limit-");
    report_escape_html_attr_z(b, rule);
    report_buf_puts(b, "\">rule ");
    esc(b, rule);
    report_buf_puts(b, "</dt><dd>");
    esc(b, reason);
    report_buf_puts(b, "</dd>\n");
  }
  if (seen.n) report_buf_puts(b, "</dl>\n");
}

static void case_table(report_buf *b, const report_summary *s) {
  report_buf_puts(b, "<section id=\"cases\">\n<h2>Cases</h2>\n");
  if (!s->n) {
    report_buf_puts(b, "<p class=\"no-data\">No cases.</p>\n<table id=\"case-table\"></table>\n"
                       "</section>\n");
    return;
  }
  columns cols = {has_other_impls(s), dtypes_differ(s), report_modes_varying(s)};
  report_buf_printf(b, "<p>%zu case%s, failing cases first (worst first), then the passing ones "
                       "in run order. Errors: rel_fro = ||x &minus; ref||<sub>F</sub> / "
                       "||ref||<sub>F</sub>; median ULP: the median over elements of |x &minus; ref| / "
                       "ulp(ref) in units of the output dtype (the max, dominated by references "
                       "near zero, is in the JSON). Judged: the fixture output a case is about "
                       "(named under its id) against the oracle and against the stock output "
                       "upstream's own test compares it with; in a case without one, affine-prefix "
                       "against the oracle and against the scan. T: sequence length, C: chunk, "
                       "D: devices.",
                    s->n, s->n == 1 ? "" : "s");
  if (!cols.dtype) {
    report_buf_puts(b, " Every case: ");
    dtype_text(b, s->cases[0].c);
    report_buf_putc(b, '.');
  }
  report_buf_puts(b, " Modes every case shares: ");
  if (!report_modes_common(b, s, cols.modes, esc)) report_buf_puts(b, "none recorded");
  report_buf_putc(b, '.');
  if (cols.modes) report_buf_puts(b, " The prefix column adds, per case, the modes the cases differ in.");
  report_buf_puts(b, " <span id=\"sort-hint\" hidden>Click a column header to sort.</span></p>\n");
  report_buf_printf(b, "<div class=\"table-wrap\"><table id=\"case-table\" class=\"grid-table\">"
                       "<thead>\n<tr><th colspan=\"%d\">case</th>", cols.dtype ? 8 : 7);
  report_buf_puts(b, "<th colspan=\"4\">scan vs oracle</th>"
                     "<th colspan=\"4\">judged vs oracle</th>"
                     "<th colspan=\"4\">judged vs scan</th>"
                     "<th colspan=\"4\">deciding check</th><th>upstream</th>");
  report_buf_puts(b, "</tr>\n<tr><th data-sort=\"num\">#</th><th data-sort=\"num\">verdict</th>"
                     "<th data-sort=\"text\">case id, input</th>"
                     "<th data-sort=\"num\">T</th><th data-sort=\"num\">C</th>"
                     "<th data-sort=\"num\">D</th><th data-sort=\"text\">prefix</th>");
  if (cols.dtype) report_buf_puts(b, "<th data-sort=\"text\">dtype \xC2\xB7 matmul</th>");
  for (int k = 0; k < 3; k++)
    report_buf_puts(b, "<th data-sort=\"num\">o rel_fro</th><th data-sort=\"num\">o median ULP</th>"
                       "<th data-sort=\"num\">ht rel_fro</th><th data-sort=\"num\">ht median ULP</th>");
  report_buf_puts(b, "<th data-sort=\"text\">check</th><th data-sort=\"num\">value</th>"
                     "<th data-sort=\"num\">limit</th><th data-sort=\"num\">value / limit</th>"
                     "<th data-sort=\"num\">upstream vs ours</th>");
  report_buf_puts(b, "</tr>\n</thead>\n<tbody>\n");
  for (size_t r = 0; r < s->n; r++) case_row(b, s, r, &cols);
  report_buf_puts(b, "</tbody></table></div>\n");
  limits_list(b, s);
  report_buf_puts(b, "</section>\n");
}

/* --grad: the gradient tensors of every case (present only when some case
 * has them: a forward-only report is unchanged).  rel_fro against the
 * oracle's VJP for scan and affine-prefix, and affine-prefix's worst
 * per-token error (row_rel) over dq, dk, dv. */
static void grad_table(report_buf *b, const report_summary *s) {
  static const char *const g[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  size_t any = 0;
  double v;
  for (size_t r = 0; r < s->n; r++) any += report_doc_metric(s->cases[r].c, "affine-prefix", "dk", "rel_fro", &v);
  if (!any) return;
  report_buf_puts(b, "<section id=\"gradients\">\n<h2>Gradients</h2>\n<p>With --grad: the backward of both "
                     "kernels for the run's cotangents (do, dht drawn from the seed) against the "
                     "oracle's VJP, rel_fro per gradient tensor (scan / affine-prefix), and "
                     "affine-prefix's worst per-token error (row_rel) over dq, dk, dv. The error of "
                     "each gradient along the sequence is plotted with the o profile.</p>\n"
                     "<div class=\"table-wrap\"><table id=\"grad-table\" class=\"grid-table\"><thead><tr>"
                     "<th>#</th><th>case id</th>");
  for (size_t k = 0; k < 6; k++) report_buf_printf(b, "<th>%s scan</th><th>%s affine</th>", g[k], g[k]);
  report_buf_puts(b, "<th>per-token</th></tr></thead>\n<tbody>\n");
  for (size_t r = 0; r < s->n; r++) {
    const json_t *c = s->cases[r].c;
    if (!report_doc_metric(c, "affine-prefix", "dk", "rel_fro", &v)) continue;
    report_buf_printf(b, "<tr><td class=\"num\">%zu</td><td>", r + 1);
    esc(b, report_doc_str(c, "id"));
    report_buf_puts(b, "</td>");
    for (size_t k = 0; k < 6; k++) {
      td_metric(b, c, "scan", g[k], "rel_fro");
      td_metric(b, c, "affine-prefix", g[k], "rel_fro");
    }
    double w = 0, x;
    int has = 0;
    for (size_t k = 0; k < 3; k++)
      if (report_doc_metric(c, "affine-prefix", g[k], "row_rel", &x)) w = has++ ? fmax(w, x) : x;
    td_value(b, has, w, NULL);
    report_buf_puts(b, "</tr>\n");
  }
  report_buf_puts(b, "</tbody></table></div>\n</section>\n");
}

/* A fixture output's row of the stored-gradients table: rel_fro of each
 * gradient, its worst per-token error over dq dk dv, and its verdict. */
static void stored_grad_row(report_buf *b, size_t r, const json_t *c, const char *name, const json_t *imp) {
  static const char *const g[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  report_buf_printf(b, "<tr><td class=\"num\">%zu</td><td>", r + 1);
  esc(b, report_doc_str(c, "id"));
  report_buf_puts(b, "</td><td>");
  esc(b, name);
  report_buf_puts(b, "</td>");
  for (size_t k = 0; k < 6; k++) td_metric(b, c, name, g[k], "rel_fro");
  double w = 0, x;
  int has = 0;
  for (size_t k = 0; k < 3; k++)
    if (report_doc_metric(c, name, g[k], "row_rel", &x)) w = has++ ? fmax(w, x) : x;
  td_value(b, has, w, NULL);
  const json_t *p = json_object_get(imp, "pass");
  report_buf_printf(b, "<td>%s</td></tr>\n", !json_is_boolean(p) ? "\xE2\x80\x94" : json_is_true(p) ? "pass" : "FAIL");
}

/* Schema v3 fixtures: the gradients stored with a fixture's outputs
 * (external subjects), judged against the oracle's VJP for the fixture's
 * cotangents.  Present only when some output has them. */
static void stored_grad_table(report_buf *b, const report_summary *s) {
  size_t any = 0;
  double v;
  for (size_t r = 0; r < s->n; r++) {
    const char *name;
    json_t *imp;
    json_object_foreach(json_object_get(s->cases[r].c, "impls"), name, imp)
      if (strcmp(name, "scan") && strcmp(name, "affine-prefix")) any += report_doc_metric(s->cases[r].c, name, "dk", "rel_fro", &v);
  }
  if (!any) return;
  report_buf_puts(b, "<section id=\"stored-gradients\">\n<h2>Stored gradients (fixture outputs)</h2>\n<p>The "
                     "gradients a fixture's outputs carry (schema v3: /outputs/NAME/grads, e.g. jax.vjp of the "
                     "stock or the context-parallel function) against the oracle's VJP for the fixture's "
                     "/cotangents: rel_fro per gradient, the worst per-token error (row_rel) over dq, dk, dv, "
                     "and the output's verdict in the case (the gradient rules hold it to our stock scan's own "
                     "gradient error).</p>\n<div class=\"table-wrap\"><table id=\"stored-grad-table\" "
                     "class=\"grid-table\"><thead><tr><th>#</th><th>case id</th><th>output</th><th>dq</th>"
                     "<th>dk</th><th>dv</th><th>dg</th><th>dbeta</th><th>dh0</th><th>per-token</th>"
                     "<th>verdict</th></tr></thead>\n<tbody>\n");
  for (size_t r = 0; r < s->n; r++) {
    const json_t *c = s->cases[r].c;
    const char *name;
    json_t *imp;
    json_object_foreach(json_object_get(c, "impls"), name, imp)
      if (strcmp(name, "scan") && strcmp(name, "affine-prefix") && report_doc_metric(c, name, "dk", "rel_fro", &v))
        stored_grad_row(b, r, c, name, imp);
  }
  report_buf_puts(b, "</tbody></table></div>\n</section>\n");
}

int report_html_render(const json_t *doc, report_buf *b, gdn_error *e) {
  report_summary s;
  int rc = report_summary_load(doc, &s, e);
  if (rc) return rc;
  report_buf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\" data-verdict=\"%s\">\n<head>\n"
                       "<meta charset=\"utf-8\">\n", s.pass ? "pass" : "fail");
  /* Self-contained by construction: the page may not fetch anything. */
  report_buf_puts(b, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"generator\" content=\"");
  report_escape_html_attr_z(b, report_doc_str(doc, "tool"));
  report_buf_putc(b, ' ');
  report_escape_html_attr_z(b, report_doc_str(doc, "version"));
  report_buf_printf(b, "\">\n<title>%s \xE2\x80\x94 ", s.pass ? "PASS" : "FAIL");
  esc(b, report_doc_str(doc, "tool"));
  if (s.pass || !s.n_fail) report_buf_printf(b, ": %zu case%s within tolerance", s.n, s.n == 1 ? "" : "s");
  else report_buf_printf(b, ": %zu of %zu cases out of tolerance", s.n_fail, s.n);
  if (report_audit_of(doc)) report_buf_printf(b, "; audit %s", report_audit_pass(report_audit_of(doc)) ? "PASS" : "FAIL");
  report_buf_printf(b, "</title>\n<script>%s</script>\n<style>\n%s</style>\n</head>\n<body>\n",
                    ERROR_TRAP, CSS);
  report_buf_puts(b, "<h1>");
  esc(b, report_doc_str(doc, "tool"));
  report_buf_puts(b, " parity report: context-parallel (affine-prefix) Gated DeltaNet against the "
                     "sequential scan and the oracle</h1>\n");
  verdict(b, &s);
  report_buf_puts(b, "<main>\n");
  findings_section(b, &s);
  environment(b, &s);
  upstream_section(b, &s);
  case_table(b, &s);
  grad_table(b, &s);
  stored_grad_table(b, &s);
  report_audit_html_section(b, doc);
  report_buf_puts(b, "<section id=\"plots\">\n<h2>Plots</h2>\n");
  rc = report_plots_render(doc, &s, b, e);
  report_buf_puts(b, "</section>\n</main>\n<footer>Rendered from the results document by ");
  esc(b, report_doc_str(doc, "tool"));
  report_buf_putc(b, ' ');
  esc(b, report_doc_str(doc, "version"));
  report_buf_printf(b, ". Self-contained: no network, readable without scripts (the one script "
                       "sorts the table).</footer>\n<script>\n%s</script>\n</body>\n</html>\n",
                    SCRIPT);
  report_summary_clear(&s);
  if (rc) return rc;
  return report_buf_status(b, "rendering the HTML report", e);
}

int report_html_write(const json_t *doc, const char *path, gdn_error *e) {
  report_buf b;
  report_buf_init(&b);
  return report_buf_write_file(&b, report_html_render(doc, &b, e), path, e);
}
